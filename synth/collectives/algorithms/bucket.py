"""Bucket allreduce (DeSensi24's baseline; the multi-dimensional ring): on a d_0 x ... x d_{D-1} grid,
a ring reduce-scatter along every dimension in turn, then ring allgathers in the reverse order,
sum_k 2 (d_k - 1) steps (252 on 64x64). 2D instances run at once on their own part of the vector
(blocks c P .. c P + P - 1 of part c, block c P + i ending at rank i after the reduce-scatter):
instance (k, direction) starts at dimension k and sends to the +1 or -1 neighbour, so every port
of a torus node is busy (DeSensi24 Table 2: BUCKET, Psi 1, Xi 1). Any other network is one ring of P.

Along dimension k, with the dimensions before it in the instance's order fixed (the rank's own
coordinates there) and those after it free, the blocks form d_k groups by their owner's
coordinate g on k. Reduce-scatter step t: the rank at coordinate x reduces group x - s(t + 1)
into its neighbour x + s (s the direction); allgather step t: it copies group x - s t."""

from __future__ import annotations

from math import prod

import numpy as np

from synth.collectives.algorithms import Algorithm, Request
from synth.collectives.algorithms.swing import grid, parts_blocks
from synth.collectives.schedule import COPY, REDUCE


def _owners(dims, stride, coords, order: list[int], i: int, group: np.ndarray) -> np.ndarray:
    """Per rank, the owners of its group: dimensions order[:i] at the rank's coordinates, order[i] at
    `group` (per rank), the rest free. Shape (P, blocks per group)."""
    fixed = sum(coords[k] * stride[k] for k in order[:i]) + group * stride[order[i]]
    free = np.zeros(1, dtype=np.int64)
    for k in order[i + 1:]:
        free = (free[:, None] + np.arange(dims[k])[None, :] * stride[k]).ravel()
    return fixed[:, None] + free[None, :]


def generate(request: Request):
    dims = grid(request)
    p = request.ranks
    stride = np.cumprod((1,) + dims[:-1])
    ranks = np.arange(p)
    coords = [(ranks // stride[k]) % dims[k] for k in range(len(dims))]
    instances = [(k, s) for s in (1, -1) for k in range(len(dims))]
    orders = [[(k + j) % len(dims) for j in range(len(dims))] for k, _ in instances]
    builder = request.builder("bucket")
    per_instance = []
    for part, ((k, sign), order) in enumerate(zip(instances, orders)):
        steps = []
        for phase, walk in ((REDUCE, range(len(order))), (COPY, range(len(order) - 1, -1, -1))):
            for i in walk:
                dim = order[i]
                x = coords[dim]
                neighbour = ranks + (((x + sign) % dims[dim]) - x) * stride[dim]
                for t in range(dims[dim] - 1):
                    group = (x - sign * (t + 1)) % dims[dim] if phase == REDUCE else (x - sign * t) % dims[dim]
                    steps.append((neighbour, part * p + _owners(dims, stride, coords, order, i, group), phase))
        per_instance.append(steps)
    # the instances' steps side by side (with unequal sizes one may reduce while another copies)
    for s in range(max(len(steps) for steps in per_instance)):
        here = [steps[s] for steps in per_instance if s < len(steps)]
        builder.add_step(np.tile(ranks, len(here)), np.concatenate([dst for dst, _, _ in here]),
                         [row for _, blocks, _ in here for row in blocks],
                         np.concatenate([np.full(p, op, dtype=np.int8) for _, _, op in here]))
    return builder.build()


def rank0_deliveries(dims: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """The bucket allreduce's deliveries of rank 0's blocks (block c P of every part c), as an orbit
    schedule lists them (synth.collectives.orbit: the translations move them onto every rank's):
    (step, src, dst, chunk = the part, op), in step order, and the steps. Derived from `generate`:
    in the reduce-scatter along dimension order[i], block 0's group is sent at step t by the ranks
    at coordinate s (t + 1) on it, 0 on order[:i] and any on order[i + 1:]; in the allgather by
    those at s t. Tested against `generate` (the same loads and cost)."""
    p = prod(dims)
    stride = np.cumprod((1,) + tuple(dims[:-1])).astype(np.int64)
    instances = [(k, sign) for sign in (1, -1) for k in range(len(dims))]
    per_phase = [d - 1 for d in dims]
    reduce_steps = sum(per_phase)
    out = []
    for part, (k, sign) in enumerate(instances):
        order = [(k + j) % len(dims) for j in range(len(dims))]
        start = {REDUCE: 0, COPY: reduce_steps}
        for phase, walk in ((REDUCE, range(len(order))), (COPY, range(len(order) - 1, -1, -1))):
            for i in walk:
                dim = order[i]
                free = np.zeros(1, dtype=np.int64)  # the ranks at 0 on order[:i], any coordinate on order[i + 1:]
                for other in order[i + 1:]:
                    free = (free[:, None] + np.arange(dims[other])[None, :] * stride[other]).ravel()
                for t in range(dims[dim] - 1):
                    x = (sign * (t + 1) if phase == REDUCE else sign * t) % dims[dim]
                    src = free + x * stride[dim]
                    dst = free + ((x + sign) % dims[dim]) * stride[dim]
                    out.append((np.full(len(free), start[phase] + t, dtype=np.int64), src, dst,
                                np.full(len(free), part, dtype=np.int64), np.full(len(free), phase, dtype=np.int64)))
                start[phase] += dims[dim] - 1
    step, src, dst, chunk, op = (np.concatenate(a) for a in zip(*out))
    order = np.argsort(step, kind="stable")
    assert int(src.max(initial=0)) < p
    return step[order], src[order], dst[order], chunk[order], op[order], 2 * reduce_steps


def refusal(request: Request) -> str | None:
    if request.blocks != parts_blocks(request):
        return f"bucket splits the vector into 2D parts of one block per rank: {parts_blocks(request)} blocks, not {request.blocks}"
    if prod(grid(request)) != request.ranks:
        return "bucket needs the ranks as a grid"
    return None


def _transfers(request: Request) -> int:
    """For the size guard: every rank sends once per step in each of the 2D instances, 2 (d_k - 1)
    steps per dimension."""
    dims = grid(request)
    return request.ranks * 2 * sum(d - 1 for d in dims) * 2 * len(dims)


ALGORITHM = Algorithm("bucket", ("allreduce",), "bucket (multi-dimensional ring): ring reduce-scatters along every "
                      "dimension, then ring allgathers, 2D instances", generate, refusal, parts_blocks, transfers=_transfers)
