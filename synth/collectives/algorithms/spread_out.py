"""Spread-out all-to-all: every rank sends each of its P - 1 blocks straight to its destination,
all in one multi-port step."""

from __future__ import annotations

import numpy as np

from synth.collectives.algorithms import Algorithm, Request, one_transfer_per_block


def generate(request: Request):
    p = request.ranks
    s, d = np.divmod(np.arange(p * p), p)
    moving = s != d
    builder = request.builder("spread-out")
    builder.add_step(s[moving], d[moving], (s * p + d)[moving][:, None])
    return builder.build()


ALGORITHM = Algorithm("spread-out", ("alltoall", "alltoallv"), "one step: every block straight to its destination",
                      generate, transfers=one_transfer_per_block, direct=True)
