"""Ring: P - 1 steps around the ring r -> r + 1 (allgather, reduce-scatter; allreduce is both).

Reduce-scatter: in step k rank r reduces block (r - k - 1) mod P into rank r + 1, so that block c,
started by rank c + 1, has passed every other rank when it reaches rank c in step P - 2.
Allgather: in step k rank r forwards block (r - k) mod P, the one it received last."""

from __future__ import annotations

import numpy as np

from synth.schedule.algorithms import Algorithm, Request, register
from synth.schedule.schedule import COPY, REDUCE


def add_reduce_scatter(builder, p: int) -> None:
    r = np.arange(p)
    for k in range(p - 1):
        builder.add_step(r, (r + 1) % p, ((r - k - 1) % p)[:, None], REDUCE)


def add_allgather(builder, p: int) -> None:
    r = np.arange(p)
    for k in range(p - 1):
        builder.add_step(r, (r + 1) % p, ((r - k) % p)[:, None], COPY)


def generate(request: Request):
    builder = request.builder("ring")
    if request.collective in ("reduce-scatter", "allreduce"):
        add_reduce_scatter(builder, request.ranks)
    if request.collective in ("allgather", "allreduce"):
        add_allgather(builder, request.ranks)
    return builder.build()


def refusal(request: Request) -> str | None:
    if request.collective == "allreduce" and request.blocks != request.ranks:
        return f"ring allreduce splits the message into one block per rank ({request.ranks}), not {request.blocks}"
    return None


register(Algorithm("ring", ("allgather", "reduce-scatter", "allreduce"), "P - 1 steps around a ring (per step one "
                   "block per rank)", generate, refusal, lambda request: request.ranks))
