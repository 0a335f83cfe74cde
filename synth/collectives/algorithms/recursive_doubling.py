"""Recursive doubling, latency variant (`rd-l`): allreduce in log2 P steps, in step k rank r
exchanges all its partial blocks with rank r XOR 2^k and both reduce (every message the whole
vector). Any P: with P' the largest power of two below P and m = P - P', ranks 2i + 1 < 2m first
reduce everything into rank 2i, the P' remaining ranks run recursive doubling, and at the end
ranks 2i copy the result back to 2i + 1 (the usual folding; two extra steps).

Allgather by recursive doubling (power-of-two P): in step k rank r sends the 2^k blocks of its
aligned group to r XOR 2^k."""

from __future__ import annotations

import numpy as np

from synth.collectives.algorithms import Algorithm, Request, power_of_two_only
from synth.collectives.schedule import COPY, REDUCE


def fold_in(builder, p: int, every: np.ndarray) -> np.ndarray:
    """Any P onto a power of two: ranks 2i + 1 (i < P - P') reduce everything into 2i. Returns the P'
    participants: 2i for i < P - P', then every rank from 2 (P - P') on."""
    extra = p - (1 << (p.bit_length() - 1))
    folded = np.arange(extra)
    if extra:
        builder.add_step(2 * folded + 1, 2 * folded, np.tile(every, (extra, 1)), REDUCE)
    return np.concatenate([2 * folded, np.arange(2 * extra, p)])


def fold_out(builder, p: int, every: np.ndarray) -> None:
    """The mirror image of fold_in: ranks 2i copy the result to 2i + 1."""
    extra = p - (1 << (p.bit_length() - 1))
    folded = np.arange(extra)
    if extra:
        builder.add_step(2 * folded, 2 * folded + 1, np.tile(every, (extra, 1)), COPY)


def _allreduce(request: Request, builder) -> None:
    p, b = request.ranks, request.blocks
    every = np.arange(b)
    members = fold_in(builder, p, every)
    core = len(members)
    position = np.arange(core)
    k = 1
    while k < core:
        partner = position ^ k
        builder.add_step(members[position], members[partner], np.tile(every, (core, 1)), REDUCE)
        k *= 2
    fold_out(builder, p, every)


def _allgather(request: Request, builder) -> None:
    p = request.ranks
    r = np.arange(p)
    k = 1
    while k < p:
        base = r & ~(k - 1)  # the aligned group of 2^k blocks rank r holds
        builder.add_step(r, r ^ k, base[:, None] + np.arange(k)[None, :])
        k *= 2


def generate(request: Request):
    builder = request.builder("rd-l")
    (_allreduce if request.collective == "allreduce" else _allgather)(request, builder)
    return builder.build()


def refusal(request: Request) -> str | None:
    if request.collective == "allgather":
        return power_of_two_only("recursive-doubling allgather")(request)
    return None


def folded_transfers(p: int, exchanges: int) -> int:
    """Transfers of `exchanges` recursive exchanges among the P' = 2^floor(log2 P) folded ranks (each
    rank sends once per step, log2 P' steps) and the fold in and out (P - P' each)."""
    core = 1 << (p.bit_length() - 1)
    return 2 * (p - core) + exchanges * core * (core.bit_length() - 1)


def _block_sends(request: Request) -> int:
    """An allreduce's messages are all whole vectors (every block, every transfer: 3.8 x 10^9 block
    sends at 16,512 ranks, which the guard must see before they are made); an allgather's step k
    sends 2^k blocks a rank: P (P - 1) in all."""
    if request.collective == "allreduce":
        return folded_transfers(request.ranks, 1) * request.blocks
    return request.ranks * (request.ranks - 1)


ALGORITHM = Algorithm("rd-l", ("allreduce", "allgather"), "recursive doubling, latency variant: log2 P steps of whole "
                      "vectors (any P for allreduce, by folding)", generate, refusal,
                      transfers=lambda request: folded_transfers(request.ranks, 1), block_sends=_block_sends)
