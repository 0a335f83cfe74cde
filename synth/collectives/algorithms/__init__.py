"""Schedule generators, one module per algorithm, registered in ALGORITHMS by name.

An algorithm lists the collectives it generates; `generate(request)` returns a Schedule, and
`refusal(request)` says in one line why it does not apply (None when it does)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from synth.core import memory
from synth.core.registry import Registry
from synth.collectives.schedule import Schedule, ScheduleBuilder, collective


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
        if self.sizes is None:
            return np.full(self.blocks, self.block_bytes, dtype=np.int64)
        return np.asarray(self.sizes)  # in their own integer type (an alltoallv's P^2 of them: no copy)


@dataclass(frozen=True)
class Algorithm:
    name: str
    collectives: tuple[str, ...]
    summary: str
    generate: Callable[[Request], Schedule]
    refusal: Callable[[Request], str | None] = lambda request: None
    default_blocks: Callable[[Request], int] | None = None  # of a freely split message, when not one per rank
    block_sends: Callable[[Request], int] | None = None  # how many the schedule will have, for the size guard
    transfers: Callable[[Request], int] | None = None  # likewise its transfers, where known
    runs: bool = False  # generates its blocks as runs (BlockRuns), not lists
    options: tuple[str, ...] = ()  # the Request fields of its own it takes (radix, batch): refused for the others
    # an exchange sending every block once, straight from its source to its destination (in one step or several):
    # along the same paths never cheaper than the one phase (synth.synthesis.exchange), which synthesis at scale uses
    direct: bool = False
    # the ranks up to which its generator takes seconds (None: any, linear in its transfers); synthesis along
    # forests (thousands of ranks) leaves it out above them (MULTITREE's greedy trees: minutes at 4,096)
    quick_ranks: int | None = None


# Memory of one schedule from generation to pricing (measured with tests/bench/bench_schedules.py
# and a review: 9-11 bytes per block send, its id and its transfer in the replay's grouping; per
# block its size, the grouping's offsets and the parsed sizes; per transfer its routed path and the
# per-hop arrays of the pricing, about 1-2 KiB on paths of 20-30 hops).
BYTES_PER_BLOCK_SEND = 12
BYTES_PER_BLOCK = 24
# Blocks as runs (BlockRuns): the runs count with the transfers, the replay groups at most
# verify.GROUP_BLOCKS blocks at a time, and a block costs its size (8 bytes at most).
RUN_BYTES_PER_BLOCK = 8
BYTES_PER_TRANSFER = 256
BYTES_PER_HOP = 40
BASE_BYTES = 512 << 20
MAX_TRANSFERS = (1 << 31) - 1  # the replay keeps transfer numbers in int32


def expected_block_sends(algorithm: Algorithm, request: Request) -> int:
    """The algorithm's own count where it gives one, else a lower bound for any schedule."""
    return algorithm.block_sends(request) if algorithm.block_sends is not None else minimum_block_sends(request)


def one_transfer_per_block(request: Request) -> int:
    """The transfers of an all-to-all whose every moving block is a transfer of its own."""
    return request.ranks * (request.ranks - 1)


def memory_needed(block_sends: int, blocks: int, transfers: int = 0, runs: bool = False, hops: int = 0) -> int:
    if runs:
        return BASE_BYTES + RUN_BYTES_PER_BLOCK * blocks + BYTES_PER_TRANSFER * transfers + BYTES_PER_HOP * hops
    return (BASE_BYTES + BYTES_PER_BLOCK_SEND * block_sends + BYTES_PER_BLOCK * blocks + BYTES_PER_TRANSFER * transfers
            + BYTES_PER_HOP * hops)


def too_large(algorithm: Algorithm, request: Request, block_sends: int | None = None, transfers: int = 0,
              hops: int = 0) -> str | None:
    """Why the schedule would not fit the memory this process may use (synth.core.memory), or
    None: checked before it is made (from the block sends and transfers the algorithm says), and
    once made, before its replay and pricing (with its `block_sends`, `transfers` and the channel
    `hops` its routed transfers will take, synth.pricing.path_hops)."""
    sends = expected_block_sends(algorithm, request) if block_sends is None else block_sends
    if block_sends is None and algorithm.transfers is not None:
        transfers = algorithm.transfers(request)
    need, budget = memory_needed(sends, request.blocks, transfers, algorithm.runs, hops), memory.budget()
    if need <= budget.bytes and transfers <= MAX_TRANSFERS:
        return None
    moved = f"{sends:,} blocks" + (f" in {transfers:,} transfers" if transfers else "") + \
        (f" over {hops:,} channel hops" if hops else "")
    return (f"{algorithm.name} {request.collective} on {request.ranks:,} ranks would send {moved}, which needs about "
            f"{memory.gib(need)}; synth plans with {budget} here"
            + ("" if transfers <= MAX_TRANSFERS else f" and at most {MAX_TRANSFERS:,} transfers"))


def sends_every_pair(algorithm: Algorithm) -> bool:
    """Whether the algorithm's transfers are one per ordered pair of ranks (their routes' hops are
    then known before the schedule is made: synth.pricing.path_hops.all_pairs_hops)."""
    return algorithm.transfers is one_transfer_per_block


def minimum_block_sends(request: Request) -> int:
    """A lower bound on any schedule's block sends: every block must leave its first holder."""
    p, b = request.ranks, request.blocks
    if request.collective in ("scatter", "gather", "alltoall", "alltoallv"):
        return b - b // p
    return b * (p - 1)


# Each algorithm (or family of them) is one module of this package that declares `ALGORITHM = Algorithm(...)` (or a
# tuple of them), found on first use.
ALGORITHMS: Registry[Algorithm] = Registry("schedule algorithm", __name__, "ALGORITHM")


def power_of_two_only(name: str) -> Callable[[Request], str | None]:
    def refusal(request: Request) -> str | None:
        p = request.ranks
        return None if p & (p - 1) == 0 else f"{name} needs a power-of-two number of ranks, not {p}"
    return refusal


def refuse_options(algorithm: Algorithm, given: dict[str, object]) -> None:
    """An option (`given`: name -> value, None when not given) the algorithm does not take is a
    mistake to say: one line naming the algorithms that take it."""
    from synth.core.errors import SynthError

    for option, value in given.items():
        if value is not None and option not in algorithm.options:
            takers = [name for name, a in ALGORITHMS.items() if option in a.options]
            raise SynthError(f"--{option} applies to {', '.join(takers)}, not to {algorithm.name}")


def grid_shape(topology, ranks_per_node: int = 1) -> tuple[int, ...]:
    """The ranks as a grid: a torus's or HyperX's router sizes with one terminal per router and one
    rank per terminal, else () (several ranks a router are no longer the router grid)."""
    from synth.topology.grid import RouterGrid

    return (tuple(topology.sizes) if isinstance(topology, RouterGrid) and topology.p == 1 and ranks_per_node == 1
            else ())
