"""Recursive halving and doubling: bandwidth-optimal recursive doubling (`rd-b`) and Rabenseifner's
allreduce (`rabenseifner`), one block per rank.

Reduce-scatter by recursive halving (power-of-two P): in step k (distance P/2, P/4, ..., 1) rank r
reduces into r XOR distance the blocks of the half the partner keeps: the blocks whose owner
agrees with the partner on the bits at and above the distance (and with r above it). Allgather by
recursive doubling: the mirror image, distance 1, 2, ..., P/2, each rank sending the blocks it has
collected. rd-b allreduce is the two; 2 log2 P steps (DeSensi24 Table 2: REC.DOUB.(B), Lambda 2).

rabenseifner: the same allreduce on any P: with P' the largest power of two below P and m = P - P',
ranks 2i + 1 < 2m first reduce everything into 2i (the usual folding), the P' remaining ranks run
halving and doubling on P' groups of blocks (group j: the blocks of the ranks folded into member
j), and at the end ranks 2i copy the result to 2i + 1."""

from __future__ import annotations

import numpy as np

from synth.collectives.algorithms import Algorithm, Request, power_of_two_only
from synth.collectives.algorithms.recursive_doubling import fold_in, fold_out, folded_transfers
from synth.collectives.schedule import COPY, REDUCE


def add_halving(builder, members: np.ndarray, groups: list[np.ndarray]) -> None:
    """Reduce-scatter among `members` (a power of two of them): member j ends with groups[j]."""
    core = len(members)
    j = np.arange(core)
    distance = core // 2
    while distance >= 1:
        partner = j ^ distance
        keep = [np.concatenate([groups[g] for g in range(core) if (g & ~(distance - 1)) == (q & ~(distance - 1))])
                for q in partner.tolist()]  # the partner's half: owners agreeing with it from `distance` up
        builder.add_step(members[j], members[partner], keep, REDUCE)
        distance //= 2


def add_doubling(builder, members: np.ndarray, groups: list[np.ndarray]) -> None:
    """Allgather among `members`: member j starts with groups[j] and ends with all of them."""
    core = len(members)
    j = np.arange(core)
    distance = 1
    while distance < core:
        held = [np.concatenate([groups[g] for g in range(core) if (g & ~(distance - 1)) == (i & ~(distance - 1))])
                for i in j.tolist()]  # what member i has collected: the aligned run of `distance` groups
        builder.add_step(members[j], members[j ^ distance], held, COPY)
        distance *= 2


def generate_rd_b(request: Request):
    builder = request.builder("rd-b")
    members = np.arange(request.ranks)
    groups = [np.array([i]) for i in range(request.ranks)]
    if request.collective in ("reduce-scatter", "allreduce"):
        add_halving(builder, members, groups)
    if request.collective in ("allgather", "allreduce"):
        add_doubling(builder, members, groups)
    return builder.build()


def generate_rabenseifner(request: Request):
    p = request.ranks
    builder = request.builder("rabenseifner")
    every = np.arange(request.blocks)
    members = fold_in(builder, p, every)
    groups = np.array_split(every, len(members))
    add_halving(builder, members, groups)
    add_doubling(builder, members, groups)
    fold_out(builder, p, every)
    return builder.build()


def _one_block_per_rank(name: str):
    def refusal(request: Request) -> str | None:
        if request.collective == "allreduce" and request.blocks != request.ranks:
            return f"{name} allreduce splits the vector into one block per rank ({request.ranks}), not {request.blocks}"
        return power_of_two_only(name)(request)
    return refusal


def _rabenseifner_refusal(request: Request) -> str | None:
    core = 1 << (request.ranks.bit_length() - 1)
    if request.blocks < core:
        return f"rabenseifner needs at least {core} blocks on {request.ranks} ranks (one per halving group), not {request.blocks}"
    return None


ALGORITHM = (
    Algorithm("rd-b", ("reduce-scatter", "allgather", "allreduce"), "recursive halving (reduce-scatter) and "
              "doubling (allgather), power-of-two P, 2 log2 P steps for allreduce", generate_rd_b,
              _one_block_per_rank("rd-b"), lambda request: request.ranks,
              transfers=lambda request: folded_transfers(request.ranks, 2 if request.collective == "allreduce" else 1)),
    Algorithm("rabenseifner", ("allreduce",), "Rabenseifner: recursive halving then doubling, any P (folding)",
              generate_rabenseifner, _rabenseifner_refusal, lambda request: request.ranks,
              transfers=lambda request: folded_transfers(request.ranks, 2)),
)
