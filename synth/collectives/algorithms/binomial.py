"""Binomial trees rooted at the root (relative rank v = r - root mod P), ceil(log2 P) steps.

Broadcast: in step k every v < 2^k sends all blocks to v + 2^k. Reduce: the mirror image, in
step j every v with lowest set bit j reduces all blocks into v - 2^j. Scatter: top down, in the
step of distance 2^k every v that is a multiple of 2^(k+1) sends to v + 2^k the blocks of the
ranks v + 2^k ... v + 2^(k+1) - 1. Gather: the mirror image of scatter."""

from __future__ import annotations

import numpy as np

from synth.collectives.algorithms import Algorithm, Request
from synth.collectives.schedule import COPY, REDUCE


def _levels(p: int) -> int:
    return max(0, (p - 1).bit_length())


def generate(request: Request):
    p, root = request.ranks, request.root
    absolute = lambda v: (np.asarray(v) + root) % p  # noqa: E731
    builder = request.builder("binomial")
    v = np.arange(p)
    every = np.arange(request.blocks)
    name = request.collective
    if name == "broadcast":
        for k in range(_levels(p)):
            senders = v[(v < (1 << k)) & (v + (1 << k) < p)]
            builder.add_step(absolute(senders), absolute(senders + (1 << k)), np.tile(every, (len(senders), 1)))
    elif name == "reduce":
        for j in range(_levels(p)):
            senders = v[(v % (1 << (j + 1))) == (1 << j)]
            builder.add_step(absolute(senders), absolute(senders - (1 << j)), np.tile(every, (len(senders), 1)), REDUCE)
    elif name in ("scatter", "gather"):
        steps = []
        for k in range(_levels(p)):
            parents = v[(v % (1 << (k + 1)) == 0) & (v + (1 << k) < p)]
            children = parents + (1 << k)
            subtrees = [absolute(np.arange(c, min(c + (1 << k), p))) for c in children.tolist()]
            steps.append((absolute(parents), absolute(children), subtrees))
        if name == "scatter":
            for parents, children, subtrees in reversed(steps):
                builder.add_step(parents, children, subtrees, COPY)
        else:
            for parents, children, subtrees in steps:
                builder.add_step(children, parents, subtrees, COPY)
    return builder.build()


ALGORITHM = Algorithm("binomial", ("broadcast", "reduce", "scatter", "gather"), "binomial tree from the root, "
                      "ceil(log2 P) steps", generate, transfers=lambda request: request.ranks - 1)
