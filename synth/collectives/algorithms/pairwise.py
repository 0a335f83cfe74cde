"""Pairwise exchange all-to-all: P - 1 steps; in step k (1..P-1) rank r sends its block for rank
r + k mod P (one message per rank and step, every rank receiving one)."""

from __future__ import annotations

import numpy as np

from synth.collectives.algorithms import Algorithm, Request, one_transfer_per_block


def generate(request: Request):
    p = request.ranks
    r = np.arange(p)
    builder = request.builder("pairwise")
    for k in range(1, p):
        d = (r + k) % p
        builder.add_step(r, d, (r * p + d)[:, None])
    return builder.build()


ALGORITHM = Algorithm("pairwise", ("alltoall", "alltoallv"), "P - 1 steps, step k to rank r + k", generate,
                      transfers=one_transfer_per_block, direct=True)
