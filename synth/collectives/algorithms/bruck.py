"""Bruck: ceil(log2 P) steps of distance 2^k, any P (Bruck et al. 1997).

Allgather: in step k rank r sends the min(2^k, P - 2^k) blocks it has gathered, r, r + 1, ...,
to rank r - 2^k (it receives those of r + 2^k).
All-to-all: the block from s to d travels the offset o = d - s mod P in powers of two, bit k of o
in step k; after steps 0..k-1 it sits at s + (o mod 2^k). In step k every rank r forwards, as one
message to r + 2^k, every block it holds whose offset has bit k set."""

from __future__ import annotations

import numpy as np

from synth.collectives.algorithms import Algorithm, Request


def _allgather(request: Request, builder) -> None:
    p = request.ranks
    r = np.arange(p)
    k = 1
    while k < p:
        count = min(k, p - k)
        builder.add_step(r, (r - k) % p, (r[:, None] + np.arange(count)[None, :]) % p)
        k *= 2


def _alltoall(request: Request, builder) -> None:
    p = request.ranks
    r = np.arange(p)
    offsets = np.arange(p)
    k = 0
    while (1 << k) < p:
        o = offsets[(offsets >> k) & 1 == 1]
        s = (r[:, None] - (o & ((1 << k) - 1))[None, :]) % p  # the source of the block each rank holds
        d = (s + o[None, :]) % p
        builder.add_step(r, (r + (1 << k)) % p, s * p + d)
        k += 1


def generate(request: Request):
    builder = request.builder("bruck")
    (_allgather if request.collective == "allgather" else _alltoall)(request, builder)
    return builder.build()


def _block_sends(request: Request) -> int:
    p = request.ranks
    if request.collective == "allgather":
        return p * (p - 1)
    return p * sum(bin(o).count("1") for o in range(p))


ALGORITHM = Algorithm("bruck", ("allgather", "alltoall", "alltoallv"), "ceil(log2 P) steps of distance 2^k, any P",
                      generate, block_sends=_block_sends,
                      transfers=lambda request: request.ranks * max(0, (request.ranks - 1).bit_length()))
