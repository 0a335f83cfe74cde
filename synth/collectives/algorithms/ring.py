"""Ring: P - 1 steps around a ring (allgather, reduce-scatter; allreduce is both).

Reduce-scatter: in step k the rank at ring position j reduces the block of the rank at position
j - k - 1 into position j + 1, so that every block, started by the rank after its owner, has
passed every other rank when it reaches its owner in step P - 2. Allgather: in step k position j
forwards the block of position j - k, the one it received last.

On a 2D torus with two edge-disjoint Hamiltonian cycles (synth.collectives.algorithms.hamiltonian; DeSensi24's
RING) the allreduce runs four rings at once, each cycle in both directions, every one on its part of
the vector (blocks c P .. c P + P - 1 of part c): all four ports of a node are busy, 2(P - 1)
steps (DeSensi24 Table 2: Psi 1, Xi 1). Elsewhere it is one ring in rank order."""

from __future__ import annotations

import numpy as np

from synth.collectives.algorithms import Algorithm, Request
from synth.collectives.algorithms.hamiltonian import hamiltonian_cycles
from synth.collectives.schedule import COPY, REDUCE


def _rings(request: Request) -> list[np.ndarray]:
    """The ring orders (ranks by position): the torus's four directed Hamiltonian cycles for an
    allreduce where they exist, else the ranks in order."""
    cycles = hamiltonian_cycles(request.dims) if request.collective == "allreduce" else None
    if cycles is None:
        return [np.arange(request.ranks)]
    return [cycles[0], cycles[0][::-1], cycles[1], cycles[1][::-1]]


def _steps(orders: list[np.ndarray], p: int, shift: int, op: int):
    """Per step k: every ring's position j sends the block of position j - k - shift to j + 1."""
    for k in range(p - 1):
        src = np.concatenate(orders)
        dst = np.concatenate([np.roll(order, -1) for order in orders])
        blocks = np.concatenate([part * p + np.roll(order, k + shift) for part, order in enumerate(orders)])
        yield src, dst, blocks[:, None], op


def generate(request: Request):
    p = request.ranks
    builder = request.builder("ring")
    orders = _rings(request)
    if request.collective in ("reduce-scatter", "allreduce"):
        for step in _steps(orders, p, 1, REDUCE):
            builder.add_step(*step)
    if request.collective in ("allgather", "allreduce"):
        for step in _steps(orders, p, 0, COPY):
            builder.add_step(*step)
    return builder.build()


def _blocks(request: Request) -> int:
    return len(_rings(request)) * request.ranks


def refusal(request: Request) -> str | None:
    if request.collective == "allreduce" and request.blocks != _blocks(request):
        return f"ring allreduce splits the vector into {_blocks(request)} blocks here (a block per rank and ring), not {request.blocks}"
    return None


def _transfers(request: Request) -> int:
    """Every ring position sends once per step, P - 1 steps per phase."""
    phases = 2 if request.collective == "allreduce" else 1
    return phases * (request.ranks - 1) * request.ranks * len(_rings(request))


ALGORITHM = Algorithm("ring", ("allgather", "reduce-scatter", "allreduce"), "P - 1 steps around a ring (allreduce on a 2D "
                      "torus: four rings on two edge-disjoint Hamiltonian cycles)", generate, refusal, _blocks,
                      transfers=_transfers)
