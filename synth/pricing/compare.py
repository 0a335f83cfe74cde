"""Every algorithm of a collective on a network, priced over message sizes (synth compare, and the
reports' collectives section).

Every applicable schedule is generated, verified and routed once, with blocks of REFERENCE_BYTES;
at a message size n its blocks are n / blocks bytes (rounded up), so its cost is steps x alpha +
beta x (the busiest channels' bytes scaled by that ratio), plus TuNA's size exchanges (8 bytes per
block, not scaled). Ranges `A..B` step by powers of two; a list `A,B,C` is taken as given.
TuNA is compared at radix 2, ceil(sqrt(P)) and P - 1.

An alltoallv's schedules are made once, with the block sizes of its matrix (`--sizes`); its message
size is a rank's mean send (the matrix's bytes over P, rounded down: what synthesis' size band shows,
synth.pricing.bounds.exchange_message_bytes), m. At a message size n every block is scaled by n / m,
in proportion and not rounded to whole bytes: the model is linear in bytes, so the matrix's shape
(which pairs are hot, by how much) is kept exactly and the bound (the flow LP's and injection's,
linear in the blocks alike) is the bound of the same scaled matrix. At n = m (the default) it is the
matrix as given.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from synth.core.errors import SynthError
from synth.core.sizes import parse_sizes, size_text
from synth.pricing.alphabeta import FREE, NodeCosts, beta_of
from synth.pricing.bounds import exchange_message_bytes
from synth.pricing.path_hops import all_pairs_hops, mapped_hops
from synth.pricing.schedule_cost import MappedSchedule, map_schedule
from synth.collectives.algorithms import ALGORITHMS, Request, grid_shape, sends_every_pair, too_large
from synth.collectives.schedule import collective
from synth.collectives.verify import expected_blocks, verify

REFERENCE_BYTES = 1 << 20
DEFAULT_SIZES = "32B..512MiB"  # compare's message sizes unless given (an alltoallv's: its matrix's own)


@dataclass
class Candidate:
    """A schedule priced on a network: `compare`'s columns and synthesis' whole candidates alike
    (synth.synthesis.front: a method's schedule, the pool judging it sets its front point)."""

    label: str
    blocks: int  # blocks a message is split into
    mapped: MappedSchedule
    # the schedule again with blocks of the given bytes (synthesis keeps the one it chooses)
    make: Callable[[int], object] | None = field(default=None, repr=False, compare=False)
    reach: str = ""  # synthesis: the pairs its transfers join, in words
    point: object = field(default=None, repr=False, compare=False)  # synthesis: its front point, where judged
    source: str = ""  # synthesis: the registered method that made it
    # synthesis: schedule -> the Paths it was priced on (its transfers between nodes, in order), which its file records
    routing: Callable | None = field(default=None, repr=False, compare=False)
    # made with its own block sizes (an alltoallv's matrix), a message of this many bytes (a rank's mean send)
    matrix_bytes: int | None = None

    def scale(self, size: int) -> float:
        """What its schedule's block bytes are multiplied by at message size `size`: blocks of
        REFERENCE_BYTES to size / blocks rounded up to whole bytes, or a matrix's in proportion (module
        docstring)."""
        if self.matrix_bytes is not None:
            return size / self.matrix_bytes
        return math.ceil(size / self.blocks) / REFERENCE_BYTES

    def time(self, size: int, alpha: float, bandwidth_bits: float, node: NodeCosts = FREE) -> float:
        """The model's estimate at message size `size`."""
        return self.mapped.time(alpha, bandwidth_bits, self.scale(size), node)

    def bound(self, size: int, alpha: float, bandwidth_bits: float, node: NodeCosts = FREE) -> float:
        """The model's lower bound for any schedule of a message of exactly `size` bytes (a matrix:
        scaled to it)."""
        bound = self.mapped.bound
        if not node.free or self.matrix_bytes is not None:  # per byte of its vector (a matrix's: of matrix_bytes)
            return bound.seconds(size, alpha, bandwidth_bits, node)
        return alpha * bound.messages + beta_of(bandwidth_bits) * bound.bandwidth.busiest * size / (self.blocks * REFERENCE_BYTES)


def candidates(name: str, topology, router: str, root: int = 0, ranks_per_node: int = 1,
               routes: dict | None = None, peer: int | None = None,
               matrix: np.ndarray | None = None) -> tuple[list[Candidate], list[str]]:
    """Every applicable algorithm's schedule, routed (by `router`, or along a routes file's paths);
    and one line per algorithm left out (a rooted collective's with its `root`, Q ranks a node, a
    routes file: synthesis prices them, `compare` does not). An alltoallv's are made with its
    `matrix` (synth.collectives.sizes.exchange_matrix)."""
    info = collective(name)
    if (matrix is None) != (name != "alltoallv"):
        raise SynthError("alltoallv needs its block sizes (--sizes)" if matrix is None else
                         f"--sizes gives an alltoallv's block sizes, not {name}'s")
    ranks = topology.network().num_terminals * ranks_per_node
    matrix_bytes = None if matrix is None else exchange_message_bytes(matrix, ranks)
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
                              ranks_per_node=ranks_per_node, peer=peer)
            if blocks is None:
                blocks = algorithm.default_blocks(natural) if algorithm.default_blocks is not None else ranks
            request = Request(name, ranks, blocks, REFERENCE_BYTES, topology.spec, root, dims, radix,
                              ranks_per_node=ranks_per_node, peer=peer, sizes=matrix)
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
                                 functools.partial(_regenerate, algorithm, request), matrix_bytes=matrix_bytes))
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


# Two times closer than this (relative) rank alike: SimGrid's arithmetic is not the model's to the last digit, and
# the replay of a contention-free schedule under CM02 agrees with alpha-beta to about 1e-12.
RANK_TIE = 1e-6
MODEL_TIE = 1e-12  # the model's times: equal but for the last bits of their floating-point sums


def sticky_best(times: np.ndarray, tie: float) -> np.ndarray:
    """Per row, a column within `tie` (relative) of the row's least time: the previous row's choice
    where it is one of them, else the first."""
    fastest = times <= times.min(axis=1, keepdims=True) * (1 + tie)
    best = fastest.argmax(axis=1)
    for i in range(1, len(best)):
        if fastest[i, best[i - 1]]:
            best[i] = best[i - 1]
    return best


@dataclass(frozen=True)
class Simulated:
    """The candidates' simulated times (synth compare --simulate, synth.app.compare): each schedule
    replayed on SimGrid bulk-synchronously, alone on the idle network, at every message size."""

    model: str  # SimGrid's network model (LV08, CM02, IB)
    times: np.ndarray  # (sizes, candidates) seconds; NaN: not simulated (the synthesized schedule)
    notes: tuple[str, ...] = ()  # what was not simulated, and why

    @property
    def columns(self) -> np.ndarray:
        """The candidates simulated (indices)."""
        return np.flatnonzero(~np.isnan(self.times).any(axis=0))


@dataclass(frozen=True)
class RankedFirst:
    """A size where SimGrid's fastest algorithm is not alpha-beta's (each prefers its own strictly)."""

    size: int
    simulated: str  # SimGrid's first
    model: str  # alpha-beta's first
    simulated_factor: float  # the model's first over SimGrid's first, simulated (> 1)
    model_factor: float  # SimGrid's first over the model's first, by alpha-beta (> 1)

    def text(self) -> str:
        return (f"at {size_text(self.size)} SimGrid ranks {self.simulated} first, alpha-beta {self.model}: "
                f"{self.simulated} is {self.simulated_factor:.3g}x faster than {self.model} simulated, "
                f"{self.model} {self.model_factor:.3g}x faster than {self.simulated} by alpha-beta")


@dataclass(frozen=True)
class Reordered:
    """Consecutive sizes where the two orders of the algorithms are the same two, and differ; with
    the pair they disagree on most (the product of both factors) and at which size."""

    sizes: list[int]
    model_order: str  # "a < b = c": '=' joins times within RANK_TIE
    simulated_order: str
    swap: tuple[str, str, float, float, int]  # (faster simulated, faster by alpha-beta, both factors, at size)

    def text(self) -> str:
        first, last = size_text(self.sizes[0]), size_text(self.sizes[-1])
        at = first if len(self.sizes) == 1 else f"{first}..{last}"
        a, b, simulated, model, size = self.swap
        return (f"order at {at}: alpha-beta {self.model_order}; SimGrid {self.simulated_order} (most: {a} is "
                f"{simulated:.3g}x faster than {b} simulated, {b} {model:.3g}x faster than {a} by alpha-beta"
                + (f", at {size_text(size)}" if len(self.sizes) > 1 else "") + ")")


def _order_text(labels: list[str], times: np.ndarray) -> str:
    """Fastest first; times within RANK_TIE of their group's fastest are one group, joined by '='
    and listed in the candidates' order (SimGrid's last digits do not reorder equals)."""
    groups: list[list[int]] = []
    for j in np.argsort(times, kind="stable").tolist():
        if groups and times[j] <= times[groups[-1][0]] * (1 + RANK_TIE):
            groups[-1].append(j)
        else:
            groups.append([j])
    return " < ".join(" = ".join(labels[j] for j in sorted(group)) for group in groups)


@dataclass
class Comparison:
    collective: str
    sizes: list[int]
    candidates: list[Candidate]
    times: np.ndarray  # (sizes, candidates) seconds
    skipped: list[str]
    bounds: np.ndarray  # (sizes,) seconds: no schedule of the collective costs less (synth.pricing.bounds)
    router: str  # the routes the transfers took
    simulated: Simulated | None = None  # --simulate: the candidates' times on SimGrid
    ranks_per_node: int = 1
    root: int = 0  # a rooted collective's root (p2p: the source)
    peer: int | None = None  # p2p: the destination
    matrix: np.ndarray | None = field(default=None, repr=False)  # an alltoallv's block sizes, flat (P^2)

    @property
    def best_index(self) -> np.ndarray:
        """Per size, the index into candidates of the fastest: of equal times (to MODEL_TIE), the one
        fastest at the size before where it is among them, else the first; so a crossover is a change
        of the fastest, never a step between equal times."""
        return sticky_best(self.times, MODEL_TIE)

    @property
    def best(self) -> list[str]:
        """Per size, the label of the candidate of least time (an algorithm's name, or ``synthesized``)."""
        return [self.candidates[j].label for j in self.best_index.tolist()]

    def crossovers(self) -> list[tuple[int, str, str]]:
        """(size, best before, best from there on) wherever the best algorithm changes."""
        best = self.best
        return [(self.sizes[i], best[i - 1], best[i]) for i in range(1, len(self.sizes)) if best[i] != best[i - 1]]

    def crossover_text(self) -> str:
        """The crossovers as a line: "a -> b at 4KiB; ...", or the algorithm best at every size."""
        changes = self.crossovers()
        if not changes:
            return f"none: {self.best[0]} is best at every size"
        return "; ".join(f"{a} -> {b} at {size_text(n)}" for n, a, b in changes)

    # --simulate: SimGrid's times next to the model's, among the candidates simulated

    @property
    def simulated_best(self) -> np.ndarray:
        """Per size, the candidate SimGrid finds fastest (an index into candidates): of those within
        RANK_TIE of the least time (SimGrid's last digits do not pick among equals) the one fastest
        at the size before where it is among them, else the first."""
        return sticky_best(np.where(np.isnan(self.simulated.times), np.inf, self.simulated.times), RANK_TIE)

    def simulated_crossover_text(self) -> str:
        best, labels = self.simulated_best, [c.label for c in self.candidates]
        changes = [(self.sizes[i], labels[best[i - 1]], labels[best[i]]) for i in range(1, len(self.sizes))
                   if best[i] != best[i - 1]]
        if not changes:
            return f"none: {labels[best[0]]} is fastest at every size"
        return "; ".join(f"{a} -> {b} at {size_text(n)}" for n, a, b in changes)

    def ranking_differences(self) -> tuple[list[RankedFirst], list[Reordered]]:
        """Where SimGrid ranks the simulated candidates otherwise than alpha-beta: the sizes where
        its fastest is another (each strictly prefers its own, by more than RANK_TIE), and the runs
        of sizes where the orders differ (a pair ranked strictly one way by one and strictly the
        other way by the other)."""
        columns = self.simulated.columns
        labels = [self.candidates[j].label for j in columns]
        firsts, orders = [], []
        for i, n in enumerate(self.sizes):
            model, simulated = self.times[i, columns], self.simulated.times[i, columns]
            a, s = int(model.argmin()), int(simulated.argmin())
            if model[s] > model[a] * (1 + RANK_TIE) and simulated[a] > simulated[s] * (1 + RANK_TIE):
                firsts.append(RankedFirst(n, labels[s], labels[a], simulated[a] / simulated[s], model[s] / model[a]))
            # pairs (j, k): alpha-beta strictly prefers j, SimGrid strictly prefers k
            prefers = model[:, None] * (1 + RANK_TIE) < model[None, :]
            disagree = prefers & (simulated[None, :] * (1 + RANK_TIE) < simulated[:, None])
            if not disagree.any():
                continue
            j, k = np.unravel_index(np.argmax(np.where(disagree, simulated[:, None] / simulated[None, :]
                                                        * model[None, :] / model[:, None], 0.0)), disagree.shape)
            swap = (labels[k], labels[j], float(simulated[j] / simulated[k]), float(model[k] / model[j]), n)
            texts = (_order_text(labels, model), _order_text(labels, simulated))
            last = orders[-1] if orders else None
            if last is not None and last.sizes[-1] == self.sizes[i - 1] \
                    and (last.model_order, last.simulated_order) == texts:
                more = swap if swap[2] * swap[3] > last.swap[2] * last.swap[3] else last.swap
                orders[-1] = Reordered([*last.sizes, n], *texts, more)
            else:
                orders.append(Reordered([n], *texts, swap))
        return firsts, orders

    def ranking_summary(self) -> str:
        """One line: at how many sizes SimGrid ranks the simulated candidates otherwise."""
        firsts, orders = self.ranking_differences()
        differ = len({n for o in orders for n in o.sizes})
        what = "the simulated algorithms" if len(self.simulated.columns) < len(self.candidates) else "the algorithms"
        if not differ:
            return f"SimGrid ({self.simulated.model}) ranks {what} as alpha-beta does at every size"
        return (f"SimGrid ({self.simulated.model}) ranks {what} otherwise than alpha-beta at {differ} of "
                f"{len(self.sizes)} sizes; its fastest is another at {len(firsts)}")

    def ranking_lines(self) -> list[str]:
        """The summary, then a line per size where the fastest differs, then a line per run of
        sizes where the orders differ."""
        firsts, orders = self.ranking_differences()
        return [self.ranking_summary(), *(f.text() for f in firsts), *(o.text() for o in orders)]


def compare(name: str, topology, sizes: list[int] | None, router: str | None, alpha: float, bandwidth_bits: float,
            node: NodeCosts = FREE, ranks_per_node: int = 1, root: int = 0, peer: int | None = None,
            block_sizes=None) -> Comparison:
    """Every algorithm of `name` on `topology` (Q = `ranks_per_node` ranks a terminal) priced at
    every message size, with the bound (`router` None: the family's default router; `node`: what a
    node adds to the model, synth.pricing.alphabeta); a rooted collective's from `root`, p2p's from
    `root` to `peer`; an alltoallv's with `block_sizes` (a --sizes spec or P^2 numbers) scaled to
    each size (module docstring; `sizes` None: the matrix's own, DEFAULT_SIZES for the others)."""
    from synth.collectives.sizes import exchange_matrix

    info = collective(name)
    ranks = topology.network().num_terminals * ranks_per_node
    if (block_sizes is None) != (name != "alltoallv"):
        raise SynthError("alltoallv needs its block sizes (--sizes)" if block_sizes is None else
                         f"--sizes gives an alltoallv's block sizes, not {name}'s")
    matrix = None if block_sizes is None else exchange_matrix(block_sizes, ranks)
    if sizes is None:
        sizes = [exchange_message_bytes(matrix, ranks)] if matrix is not None else parse_sizes(DEFAULT_SIZES)
    if info.rooted and not 0 <= root < ranks:
        raise SynthError(f"--root {root} is not a rank of {topology.spec} (0..{ranks - 1})")
    if not info.rooted and root != 0:
        raise SynthError(f"{name} has no root")
    if (peer is not None) != (name == "p2p"):
        raise SynthError("p2p needs --peer Q (the destination; --root is the source)" if name == "p2p"
                         else f"--peer applies to p2p, not to {name}")
    if peer is not None and not 0 <= peer < ranks:
        raise SynthError(f"--peer {peer} is not a rank of {topology.spec} (0..{ranks - 1})")
    router = router or topology.default_router
    found, skipped = candidates(name, topology, router, root, ranks_per_node=ranks_per_node, peer=peer, matrix=matrix)
    if not found:
        raise SynthError(f"no algorithm generates {name} on {topology.spec}: " + "; ".join(skipped))
    times = np.array([[c.time(n, alpha, bandwidth_bits, node) for c in found] for n in sizes])
    bounds = np.array([max(c.bound(n, alpha, bandwidth_bits, node) for c in found) for n in sizes])
    return Comparison(name, sizes, found, times, skipped, bounds, router, ranks_per_node=ranks_per_node, root=root,
                      peer=peer, matrix=matrix)
