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
from synth.collectives.schedule import COPY, REDUCE, BlockRuns


def _aligned_runs(groups: list[np.ndarray], first: np.ndarray, distance: int):
    """Per member, the blocks of the `distance` groups from first[j] on (aligned): one run per
    member as a 2-D array where the groups are 0..core-1's equal consecutive runs (one block per rank:
    the 2.7 x 10^8 block sends of a 16,384-rank allgather without a Python list per transfer), else
    one array per member."""
    size = len(groups[0])
    if all(len(g) == size and int(g[0]) == i * size and (size == 1 or (np.diff(g) == 1).all())
           for i, g in enumerate(groups)):
        return (first * size)[:, None] + np.arange(distance * size)[None, :]
    return [np.concatenate(groups[f:f + distance]) for f in first.tolist()]


def add_halving(builder, members: np.ndarray, groups: list[np.ndarray]) -> None:
    """Reduce-scatter among `members` (a power of two of them): member j ends with groups[j]."""
    core = len(members)
    j = np.arange(core)
    distance = core // 2
    while distance >= 1:
        partner = j ^ distance
        # the partner's half: owners agreeing with it from `distance` up, `distance` aligned groups
        builder.add_step(members[j], members[partner], _aligned_runs(groups, partner & ~(distance - 1), distance), REDUCE)
        distance //= 2


def add_doubling(builder, members: np.ndarray, groups: list[np.ndarray]) -> None:
    """Allgather among `members`: member j starts with groups[j] and ends with all of them."""
    core = len(members)
    j = np.arange(core)
    distance = 1
    while distance < core:
        # what member j has collected: the aligned run of `distance` groups
        builder.add_step(members[j], members[j ^ distance], _aligned_runs(groups, j & ~(distance - 1), distance), COPY)
        distance *= 2


def generate_rd_b(request: Request):
    """Every transfer's blocks are one aligned run (rank j's `distance` neighbours' blocks), so the
    schedule is built as runs: a 16,384-rank allgather's 2.7 x 10^8 block sends in 229,376 runs."""
    builder = request.builder("rd-b")
    p = request.ranks
    j = np.arange(p, dtype=np.int64)
    distances = []
    if request.collective in ("reduce-scatter", "allreduce"):  # halving: the partner's half
        distances += [(d, REDUCE) for d in (p >> k for k in range(1, p.bit_length())) if d]
    if request.collective in ("allgather", "allreduce"):  # doubling: what member j has collected
        distances += [(1 << k, COPY) for k in range(p.bit_length() - 1)]
    src, dst, op, first, count = [], [], [], [], []
    for distance, kind in distances:
        partner = j ^ distance
        src.append(j)
        dst.append(partner)
        op.append(np.full(p, kind, dtype=np.int8))
        first.append((partner if kind == REDUCE else j) & ~(distance - 1))
        count.append(np.full(p, distance, dtype=np.int64))
    steps = len(distances)
    runs = BlockRuns(np.arange(steps * p + 1, dtype=np.int64), np.concatenate(first or [j[:0]]),
                     np.ones(steps * p, dtype=np.int64), np.concatenate(count or [j[:0]]))
    return builder.build_runs(np.arange(steps + 1, dtype=np.int64) * p, np.concatenate(src or [j[:0]]),
                              np.concatenate(dst or [j[:0]]), np.concatenate(op or [np.zeros(0, np.int8)]), runs)


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
