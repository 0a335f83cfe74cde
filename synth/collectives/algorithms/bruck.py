"""Bruck: ceil(log2 P) steps of distance 2^k, any P (Bruck et al. 1997).

Allgather: in step k rank r sends the min(2^k, P - 2^k) blocks it has gathered, r, r + 1, ...,
to rank r - 2^k (it receives those of r + 2^k).
All-to-all: the block from s to d travels the offset o = d - s mod P in powers of two, bit k of o
in step k; after steps 0..k-1 it sits at s + (o mod 2^k). In step k every rank r forwards, as one
message to r + 2^k, every block it holds whose offset has bit k set."""

from __future__ import annotations

import numpy as np

from synth.collectives.algorithms import Algorithm, Request
from synth.collectives.schedule import BlockRuns


def _allgather(request: Request, builder):
    """As runs (a transfer's blocks r .. r + count - 1 mod P: one run, or two where they wrap), not
    lists: 16,384 ranks send 2.7 x 10^8 blocks in 229,376 transfers."""
    p = request.ranks
    r = np.arange(p, dtype=np.int64)
    src, dst, ptr, first, count = [], [], [np.zeros(1, dtype=np.int64)], [], []
    k, runs = 1, 0
    while k < p:
        total = min(k, p - k)
        head = np.minimum(total, p - r)  # r .. P - 1, then 0 .. total - head - 1 where it wraps
        tail = total - head
        per = 1 + (tail > 0)
        order = np.repeat(np.arange(p), per)  # each transfer's runs in order: its head, then its tail
        second = np.zeros(len(order), dtype=bool)
        second[np.cumsum(per) - 1] = per == 2
        first.append(np.where(second, 0, r[order]))
        count.append(np.where(second, tail[order], head[order]))
        ptr.append(runs + np.cumsum(per))
        runs += int(per.sum())
        src.append(r)
        dst.append((r - k) % p)
        k *= 2
    steps = len(src)
    runs = BlockRuns(np.concatenate(ptr), np.concatenate(first or [r[:0]]), np.ones(runs, dtype=np.int64),
                     np.concatenate(count or [r[:0]]))
    return builder.build_runs(np.arange(steps + 1, dtype=np.int64) * p, np.concatenate(src or [r[:0]]),
                              np.concatenate(dst or [r[:0]]), np.zeros(steps * p, dtype=np.int8), runs)


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
    if request.collective == "allgather":
        return _allgather(request, builder)
    _alltoall(request, builder)
    return builder.build()


def _block_sends(request: Request) -> int:
    p = request.ranks
    if request.collective == "allgather":
        return p * (p - 1)
    return p * sum(bin(o).count("1") for o in range(p))


ALGORITHM = Algorithm("bruck", ("allgather", "alltoall", "alltoallv"), "ceil(log2 P) steps of distance 2^k, any P",
                      generate, block_sends=_block_sends,
                      transfers=lambda request: request.ranks * max(0, (request.ranks - 1).bit_length()))
