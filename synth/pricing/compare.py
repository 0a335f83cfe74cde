"""Every algorithm of a collective on a network, priced over message sizes (synth compare, and the
reports' collectives section).

Every applicable schedule is generated, verified and routed once, with blocks of REFERENCE_BYTES;
at a message size n its blocks are n / blocks bytes (rounded up), so its cost is steps x alpha +
beta x (the busiest channels' bytes scaled by that ratio), plus TuNA's size exchanges (8 bytes per
block, not scaled). Ranges `A..B` step by powers of two; a list `A,B,C` is taken as given.
TuNA is compared at radix 2, ceil(sqrt(P)) and P - 1.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from synth.core.errors import SynthError
from synth.core.validate import show
from synth.pricing.alphabeta import beta_of
from synth.pricing.path_hops import all_pairs_hops, mapped_hops
from synth.pricing.schedule_cost import MappedSchedule, map_schedule
from synth.collectives.algorithms import ALGORITHMS, Request, grid_shape, load_all, sends_every_pair, too_large
from synth.collectives.schedule import collective
from synth.collectives.verify import expected_blocks, verify

REFERENCE_BYTES = 1 << 20
UNITS = {"B": 1, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}
MAX_SIZES = 64
MAX_SIZE = 1 << 40


def parse_size(text: str) -> int:
    # [0-9], not \d: a regex's \d matches any Unicode digit ('٣٢', '３２'), which int() would take
    match = re.fullmatch(r"\s*([0-9]+)\s*([A-Za-z]*)\s*", text, flags=re.ASCII)
    unit = match.group(2).upper() if match else None
    if not match or unit not in UNITS and unit != "":
        raise SynthError(f"message size {show(text)}: expected a number with a unit B, KiB, MiB, GiB or TiB")
    digits = match.group(1).lstrip("0")
    value = int(digits[:16] or "0") * UNITS.get(unit or "B")  # 16 digits are beyond 1 TiB in any unit
    if not 1 <= value <= MAX_SIZE or len(digits) > 16:
        raise SynthError(f"message size {show(text)} must be between 1 B and 1 TiB")
    return value


def parse_sizes(text: str) -> list[int]:
    if ".." in text:
        low, high = (parse_size(t) for t in text.split("..", 1))
        if high < low:
            raise SynthError(f"--bytes {show(text)} runs backwards")
        sizes = [low << k for k in range(0, 64) if low << k <= high]
    else:
        sizes = [parse_size(t) for t in text.split(",")]
    if len(sizes) > MAX_SIZES:
        raise SynthError(f"--bytes {show(text)} gives {len(sizes)} sizes, more than {MAX_SIZES}")
    return sizes


@dataclass
class Candidate:
    label: str
    blocks: int  # blocks a message is split into
    mapped: MappedSchedule
    # the schedule again with blocks of the given bytes (synthesis keeps the one it chooses)
    make: Callable[[int], object] | None = field(default=None, repr=False, compare=False)

    def time(self, size: int, alpha: float, bandwidth_bits: float) -> float:
        """The model's estimate at message size `size` (its blocks rounded up to whole bytes)."""
        return self.mapped.time(alpha, bandwidth_bits, math.ceil(size / self.blocks) / REFERENCE_BYTES)

    def bound(self, size: int, alpha: float, bandwidth_bits: float) -> float:
        """The model's lower bound for any schedule of a message of exactly `size` bytes."""
        bound = self.mapped.bound
        return alpha * bound.messages + beta_of(bandwidth_bits) * bound.busiest_bytes * size / (self.blocks * REFERENCE_BYTES)


def candidates(name: str, topology, router: str, root: int = 0, ranks_per_node: int = 1,
               routes: dict | None = None) -> tuple[list[Candidate], list[str]]:
    """Every applicable algorithm's schedule, routed (by `router`, or along a routes file's paths);
    and one line per algorithm left out (a rooted collective's with its `root`, Q ranks a node, a
    routes file: synthesis prices them, `compare` does not)."""
    load_all()
    info = collective(name)
    if name == "alltoallv":
        raise SynthError(f"synth compare prices the unrooted collectives with equal blocks, not {name}")
    ranks = topology.network().num_terminals * ranks_per_node
    if routes is None:
        _router_applies(topology, router, topology.network().num_terminals)
    dims = grid_shape(topology, ranks_per_node)
    out, skipped, every_pair = [], [], None
    for algorithm_name, algorithm in ALGORITHMS.items():
        if name not in algorithm.collectives:
            continue
        radices = [2, math.ceil(math.sqrt(ranks)), max(2, ranks - 1)] if algorithm_name == "tuna" else [None]
        for radix in dict.fromkeys(radices):
            blocks = expected_blocks(name, ranks)
            natural = Request(name, ranks, ranks, REFERENCE_BYTES, topology.spec, root, dims, radix,
                              ranks_per_node=ranks_per_node)
            if blocks is None:
                blocks = algorithm.default_blocks(natural) if algorithm.default_blocks is not None else ranks
            request = Request(name, ranks, blocks, REFERENCE_BYTES, topology.spec, root, dims, radix,
                              ranks_per_node=ranks_per_node)
            refusal = algorithm.refusal(request) or too_large(algorithm, request)
            if refusal is None and routes is None and sends_every_pair(algorithm):  # hops known before it is made
                every_pair = all_pairs_hops(topology, router, ranks_per_node) if every_pair is None else every_pair
                refusal = too_large(algorithm, request, hops=every_pair)
            label = algorithm_name if radix is None else f"{algorithm_name} r={radix}"
            if refusal is not None:
                skipped.append(f"{label}: {refusal}")
                continue
            schedule = algorithm.generate(request)
            refusal = too_large(algorithm, request, schedule.num_block_sends, schedule.num_transfers,
                                mapped_hops(schedule, topology, router, routes))  # with its routes and pricing
            if refusal is not None:
                skipped.append(f"{label}: {refusal}")
                continue
            report = verify(schedule)
            if not report.ok:
                raise AssertionError(f"{label} generated a wrong schedule: {report.violation}")
            split = ranks if info.blocks == "P^2" else blocks
            out.append(Candidate(label, split, map_schedule(schedule, topology, router, routes=routes),
                                 functools.partial(_regenerate, algorithm, request)))
    return out, skipped


def _regenerate(algorithm, request: Request, block_bytes: int):
    return algorithm.generate(dataclasses.replace(request, block_bytes=block_bytes))


def _router_applies(topology, router: str, ranks: int) -> None:
    """One flow through the router before any schedule is made: a router that cannot route this
    network (too many routers for its tables, a family it does not take) is one line now, not
    after every algorithm's schedule was generated."""
    from synth.routing.registry import make_router

    if ranks < 2:
        return
    one = np.zeros(1, dtype=np.int64)
    make_router(router, topology)(topology, one, one + 1, phase=one, occurrence=one, seed=0)


def size_text(n: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor and n % factor == 0:
            return f"{n // factor}{unit}"
    return f"{n}B"


@dataclass
class Comparison:
    collective: str
    sizes: list[int]
    candidates: list[Candidate]
    times: np.ndarray  # (sizes, candidates) seconds
    skipped: list[str]
    bounds: np.ndarray  # (sizes,) seconds: no schedule of the collective costs less (synth.pricing.collective_bound)
    router: str  # the routes the transfers took

    @property
    def best(self) -> np.ndarray:
        return self.times.argmin(axis=1)

    def crossovers(self) -> list[tuple[int, str, str]]:
        """(size, best before, best from there on) wherever the best algorithm changes."""
        best = self.best
        return [(self.sizes[i], self.candidates[best[i - 1]].label, self.candidates[best[i]].label)
                for i in range(1, len(self.sizes)) if best[i] != best[i - 1]]

    def crossover_text(self) -> str:
        """The crossovers as a line: "a -> b at 4KiB; ...", or the algorithm best at every size."""
        changes = self.crossovers()
        if not changes:
            return f"none: {self.candidates[self.best[0]].label} is best at every size"
        return "; ".join(f"{a} -> {b} at {size_text(n)}" for n, a, b in changes)


def compare(name: str, topology, sizes: list[int], router: str | None, alpha: float, bandwidth_bits: float) -> Comparison:
    """Every algorithm of `name` on `topology` priced at every message size, with the bound (`router`
    None: the family's default router)."""
    if collective(name).rooted or name == "alltoallv":
        raise SynthError(f"synth compare prices the unrooted collectives with equal blocks, not {name}")
    router = router or topology.default_router
    found, skipped = candidates(name, topology, router)
    if not found:
        raise SynthError(f"no algorithm generates {name} on {topology.spec}: " + "; ".join(skipped))
    times = np.array([[c.time(n, alpha, bandwidth_bits) for c in found] for n in sizes])
    bounds = np.array([max(c.bound(n, alpha, bandwidth_bits) for c in found) for n in sizes])
    return Comparison(name, sizes, found, times, skipped, bounds, router)
