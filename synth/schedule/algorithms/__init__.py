"""Schedule generators, one module per algorithm, registered in ALGORITHMS by name.

An algorithm lists the collectives it generates; `generate(request)` returns a Schedule, and
`refusal(request)` says in one line why it does not apply (None when it does)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from synth.core.registry import Registry
from synth.schedule.schedule import Schedule, ScheduleBuilder, collective


@dataclass(frozen=True)
class Request:
    """What a generator gets: the collective, the ranks, the root, the blocks and their bytes."""

    collective: str
    ranks: int
    blocks: int
    block_bytes: int
    spec: str
    root: int = 0
    dims: tuple[int, ...] = ()  # the ranks as a grid (torus or HyperX with one rank per router), dimension 0 first
    radix: int | None = None  # TuNA's r
    batch: int | None = None  # hierarchical TuNA: messages (or rounds) per step
    ranks_per_node: int = 1  # Q ranks per node (terminal), rank r on node r // Q
    sizes: np.ndarray | None = None  # alltoallv: the P^2 block sizes, block s P + d from s to d
    peer: int | None = None  # p2p: the destination (the root is the source)

    def builder(self, algorithm: str, parts: np.ndarray | None = None) -> ScheduleBuilder:
        """A builder for this request's blocks, or with `parts` (fractions summing to 1) for every
        block split into len(parts) parts: part k of block b is block k B + b."""
        root = self.root if collective(self.collective).rooted else None
        sizes = self.block_sizes()
        if parts is not None:
            first = [np.floor(sizes * f).astype(np.int64) for f in parts[:-1]]
            sizes = np.concatenate(first + [sizes - sum(first)]) if first else sizes
        return ScheduleBuilder(self.collective, algorithm, self.spec, self.ranks, len(sizes), sizes, root,
                               self.ranks_per_node, self.peer)

    def block_sizes(self) -> np.ndarray:
        return np.full(self.blocks, self.block_bytes, dtype=np.int64) if self.sizes is None else np.asarray(self.sizes, dtype=np.int64)


@dataclass(frozen=True)
class Algorithm:
    name: str
    collectives: tuple[str, ...]
    summary: str
    generate: Callable[[Request], Schedule]
    refusal: Callable[[Request], str | None] = lambda request: None
    default_blocks: Callable[[Request], int] | None = None  # of a freely split message, when not one per rank
    block_sends: Callable[[Request], int] | None = None  # how many the schedule will have, for the size guard


# Block sends of one schedule: 8 bytes each, several arrays of them in the replay (measured: about
# 100 bytes per block send at the peak).
MAX_BLOCK_SENDS = 1 << 27


def expected_block_sends(algorithm: Algorithm, request: Request) -> int:
    """The algorithm's own count where it gives one, else a lower bound for any schedule."""
    return algorithm.block_sends(request) if algorithm.block_sends is not None else minimum_block_sends(request)


def too_large(algorithm: Algorithm, request: Request) -> str | None:
    """Why the schedule would not fit memory (checked before it is made), or None."""
    expected = expected_block_sends(algorithm, request)
    if expected <= MAX_BLOCK_SENDS:
        return None
    return (f"{algorithm.name} {request.collective} on {request.ranks:,} ranks would send {expected:,} blocks, more than "
            f"the {MAX_BLOCK_SENDS:,} synth keeps in memory")


def minimum_block_sends(request: Request) -> int:
    """A lower bound on any schedule's block sends: every block must leave its first holder."""
    p, b = request.ranks, request.blocks
    if request.collective in ("scatter", "gather"):
        return b - b // p
    if request.collective in ("alltoall", "alltoallv"):
        return b - b // p
    return b * (p - 1)


ALGORITHMS: Registry[Algorithm] = Registry("schedule algorithm")


def register(algorithm: Algorithm) -> Algorithm:
    return ALGORITHMS.register(algorithm.name, algorithm)


def power_of_two_only(name: str) -> Callable[[Request], str | None]:
    def refusal(request: Request) -> str | None:
        p = request.ranks
        return None if p & (p - 1) == 0 else f"{name} needs a power-of-two number of ranks, not {p}"
    return refusal


def load_all() -> None:
    """Import every generator module (each registers itself)."""
    from synth.schedule.algorithms import (binomial, bruck, bucket, halving_doubling, pairwise, recursive_doubling, ring,  # noqa: F401
                                           kautz, multipath, multitree, phased, spread_out, swing, tuna, twodfc)


def grid_shape(topology) -> tuple[int, ...]:
    """The ranks as a grid: a torus's or HyperX's router sizes with one terminal per router, else ()."""
    from synth.topology.grid import RouterGrid

    return tuple(topology.sizes) if isinstance(topology, RouterGrid) and topology.p == 1 else ()
