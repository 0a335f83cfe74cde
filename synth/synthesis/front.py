"""What the synthesis methods hand the portfolio, and what they are given.

- `Part`: one front of priced points: a spreading half (an allreduce has two, a reduce-scatter
  then an allgather) or a whole alternative (the rooted constructions, the generated algorithms,
  an all-to-all's phases), each point with the function that makes its schedule and its
  MappedSchedule at REFERENCE_BYTES per block;
- `Candidate` (synth.pricing.compare's, the one priced-schedule type of compare and synthesis): a
  whole method's candidate, a schedule already priced on the network;
- `Context` (one synthesis) and `HalfContext` (one half of it): the plan, the budget, the bounds in
  the program's units and the graphs the methods share, made once.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from synth.collectives.schedule import COPY, REDUCE, Schedule, ScheduleBuilder
from synth.core.errors import SynthError
from synth.pricing.alphabeta import FREE, NodeCosts
from synth.pricing.compare import REFERENCE_BYTES, Candidate
from synth.pricing.schedule_cost import map_schedule
from synth.synthesis import limits
from synth.pricing.bounds import bandwidth_bound, step_bound
from synth.synthesis.claims import meets_time_bound
from synth.measure.cuts import integer_bandwidth
from synth.synthesis.exact import FrontPoint, SpreadProblem, rounds_lower_bound, spread_schedule
from synth.synthesis.symmetry import translate
from synth.synthesis.transfers import transfer_graph, transfer_paths


@dataclass
class Part:
    """One front: a spreading half (an allreduce has two) or a whole alternative, its points and
    their schedules."""

    collective: str  # allgather | reduce-scatter | broadcast | reduce (a half), or the collective (whole)
    least_steps: int | None  # the step bound, when the program found a schedule of that many steps
    least_status: str
    front: list[FrontPoint]
    one_round: int | None  # the least steps of one round each
    one_round_status: str
    blocks: int = 1  # blocks of every schedule of the part
    whole: bool = False  # an alternative to the other parts together (the generated algorithms, an all-to-all)
    point_blocks: list = field(default_factory=list)  # per front point its blocks, where they differ (generated)
    # per front point: a function making its schedule (made again when chosen: schedules of thousands of ranks are
    # gigabytes, so only the chosen ones are kept), and its MappedSchedule at REFERENCE_BYTES per block
    makers: list = field(default_factory=list)
    priced: list = field(default_factory=list)
    # per front point: a function giving the paths its schedule was priced on (Paths of its transfers between
    # nodes, in order), which its file records (Schedule.paths)
    routing: list = field(default_factory=list)
    # priced at its own block sizes (an alltoallv's matrix), a message of this many bytes (a rank's mean send):
    # at another size n its blocks scale by n / fixed_bytes (compare prices a matrix at several sizes)
    fixed_bytes: int | None = None
    per_byte: float | None = None  # the bandwidth bound of any schedule of the part's collective, per byte
    pool: str = ""  # a whole part: the pool of methods whose points it holds (synth.synthesis.methods)
    rounds_bound: int = 0  # a half: the cut bound in rounds of its blocks, rounded up (whole blocks)
    # an exchange: every schedule priced, on the front or not (label, MappedSchedule), to show what the front beat
    alternatives: list = field(default_factory=list)

    def schedule(self, k: int) -> Schedule:
        return self.makers[k]()

    def blocks_of(self, k: int) -> int:
        return self.point_blocks[k] if self.point_blocks else self.blocks

    def best(self, size: int, alpha: float, bandwidth_bits: float, node: NodeCosts = FREE) -> tuple[int, float]:
        """The front point of least time at message size `size` (-1 and inf: none was found), under
        the cost model with what a node adds (`node`)."""
        def scale(k: int) -> float:  # a point's blocks at this size, rounded up to whole bytes (a matrix: in proportion)
            if self.fixed_bytes is not None:
                return size / self.fixed_bytes
            return math.ceil(size / self.blocks_of(k)) / REFERENCE_BYTES
        times = [m.time(alpha, bandwidth_bits, scale(k), node) if m is not None else math.inf
                 for k, m in enumerate(self.priced)]
        if not times or min(times) == math.inf:
            return -1, math.inf
        best = int(np.argmin(times))
        return best, times[best]


@dataclass
class Context:
    """One synthesis: the plan, its budget and what its methods share (made at most once)."""

    plan: object  # synth.synthesis.plan.SynthesisPlan
    time_limit: float
    solver: str = "cpsat"
    say: Callable[[str], None] = lambda text: None
    generated: object = None  # synth.pricing.compare's candidates along the plan's router, when already made
    methods: tuple[str, ...] | None = None  # the registered methods to run (None: every one that applies)
    spreading_parts: Callable | None = None  # the portfolio's halves of another plan (scatter, then allgather)
    ledger: object = None  # synth.solve.budget.Budget the whole methods' programs are charged to (their leftover: the halves')
    _every_pair: object = dataclasses.field(default=None, repr=False)
    _every_pair_made: bool = dataclasses.field(default=False, repr=False)

    @property
    def network(self):
        return self.plan.topology.network()

    @property
    def router(self) -> str | None:
        """The router the methods' own pairs take: none where a routes file gives the paths."""
        return None if self.plan.routes else self.plan.graph.router

    def every_pair(self):
        """The transfer graph of every rank pair (the plan's when it is one), or None where it is too
        large or the routes file lacks a pair: the straight, relay and per-layer points share it."""
        plan = self.plan
        if plan.graph.reach == "all":
            return plan.graph
        if not self._every_pair_made:
            self._every_pair_made = True
            try:
                self._every_pair = transfer_graph(plan.topology, plan.graph.ranks_per_node, "all", self.router,
                                                  routes=plan.routes, limit=limits.MAX_EVERY_PAIRS)
            except SynthError as exc:  # too many pairs, or a routes file without them: the plan's transfers alone
                self.say("no straight or per-layer points over every pair (relay trees take their own pairs): "
                         f"{exc}")
        return self._every_pair


@dataclass
class HalfContext:
    """One spreading half of a synthesis (an allreduce's reduce-scatter or allgather, or the
    collective itself): its blocks, bounds in the program's units and the program's problem."""

    context: Context
    half: str
    time_limit: float  # the program's share
    reverse: bool  # reduce-scatter, reduce: the spreading time-reversed
    sources: np.ndarray  # per block, its source rank (block b at rank b mod P; rooted: the root)
    designed: np.ndarray  # the program's blocks' sources: every block, or (symmetric) the representatives'
    symmetry: object  # the plan's translations where the half has them (never for rooted halves)
    spread: SpreadProblem | None  # every delivery as arrays, None where none is made (the relay trees alone)
    least: int  # the step bound with the plan's transfers
    per_byte: float  # the bandwidth bound of any schedule of the half, per byte
    rounds_bound: int  # that bound in rounds of the program's blocks
    ledger: object = None  # synth.solve.budget.Budget of the halves, charged with what this half's programs spend

    @property
    def plan(self):
        return self.context.plan

    @property
    def network(self):
        return self.context.network

    def say(self, text: str) -> None:
        self.context.say(f"{self.half}: {text}")

    @staticmethod
    def of(context: Context, half: str, time_limit: float) -> "HalfContext":
        plan = context.plan
        p = plan.graph.ranks
        reverse = half in ("reduce-scatter", "reduce")
        symmetry = plan.symmetry if half in ("allgather", "reduce-scatter") else None
        if half in ("allgather", "reduce-scatter"):
            sources = np.arange(p * plan.chunks) % p  # block b starts at rank b mod P (synth.collectives.schedule)
        else:
            sources = np.full(plan.chunks, plan.root, dtype=np.int64)
        # The program's blocks: every block, or (symmetric) the representatives' (block k: chunk k // orbits)
        designed = sources if symmetry is None else np.tile(symmetry.representatives, plan.chunks)
        # every delivery as arrays (hundreds of megabytes at thousands of ranks): made where a point needs them
        spread = None if plan.relay_only and plan.graph.reach != "all" else SpreadProblem.of(designed, p)
        network = context.network
        q = plan.graph.ranks_per_node
        per_byte = (plan.time_bound.bandwidth if half == plan.collective  # computed once (max-flows)
                    else bandwidth_bound(half, network, q, plan.root,
                                         None if symmetry is None else symmetry.representatives // q)).per_byte
        # The bound in the program's units: z_s >= count_c / coef_c, and coef_c = bandwidth_c x (coef / bandwidth),
        # the same ratio for every channel.
        ratio = float(network.channel_bandwidth[0]) / float(integer_bandwidth(network)[0])
        return HalfContext(context, half, time_limit, reverse, sources, designed, symmetry, spread,
                           step_bound(half, plan.graph, plan.root).steps, per_byte,
                           rounds_lower_bound(per_byte * ratio, len(sources)))


def point_maker(plan, half: str, point: FrontPoint, blocks: int, reverse: bool, symmetry, designed):
    """The function making a half point's schedule: its deliveries (made when needed where lazy;
    translated to every rank where designed for representatives) as transfers per step."""
    def make() -> Schedule:
        deliveries = point.choice() if callable(point.choice) else point.choice
        if symmetry is not None:
            deliveries = translate(symmetry, plan.graph, deliveries, designed)
        return spread_schedule(half, point.graph or plan.graph, plan.topology.spec, blocks, REFERENCE_BYTES,
                               deliveries, point.steps, reverse, plan.root if half in ("broadcast", "reduce") else None)
    return make


def rooted_schedule(plan, deliveries, blocks: int, block_bytes: int) -> Schedule:
    """The broadcast (reduce: run backwards) of `deliveries()` ((step, sender, receiver, block) and
    the steps) over `blocks` blocks, one transfer per rank pair and step."""
    p = plan.graph.ranks
    (step, sender, receiver, block), steps = deliveries()
    order = np.lexsort((block, receiver, sender, step))
    step, sender, receiver, block = step[order], sender[order], receiver[order], block[order]
    reverse = plan.collective == "reduce"
    builder = ScheduleBuilder(plan.collective, "synthesized", plan.topology.spec, p, blocks, block_bytes, root=plan.root,
                              ranks_per_node=plan.graph.ranks_per_node)
    bounds = np.searchsorted(step, np.arange(steps + 1))
    for s in (reversed(range(steps)) if reverse else range(steps)):
        lo, hi = bounds[s], bounds[s + 1]
        pair = sender[lo:hi] * p + receiver[lo:hi]
        first = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]]) if hi > lo else np.zeros(0, dtype=np.int64)
        counts = np.diff(np.r_[first, hi - lo])
        src, dst = sender[lo:hi][first], receiver[lo:hi][first]
        if reverse:  # a partial goes back along the edge the block came by
            src, dst = dst, src
        builder.add_step(src, dst, (counts, block[lo:hi]), REDUCE if reverse else COPY)
    return builder.build()


def rooted_maker(plan, deliveries, blocks: int):
    """`rooted_schedule` of these deliveries as a function of the block size."""
    return functools.partial(rooted_schedule, plan, deliveries, blocks)


def schedule_steps(schedule: Schedule):
    """Per step of a schedule with its blocks listed: (src, dst, (counts, ids), op)."""
    for s in range(schedule.num_steps):
        t = slice(schedule.step_ptr[s], schedule.step_ptr[s + 1])
        counts = np.diff(schedule.block_ptr[t.start:t.stop + 1])
        ids = schedule.block_ids[schedule.block_ptr[t.start]:schedule.block_ptr[t.stop]]
        yield schedule.src[t], schedule.dst[t], (counts, ids), schedule.op[t]


def relabelled(make):
    """`make` with its schedules named `synthesized` (a generated algorithm chosen by synthesis)."""
    def made(block_bytes: int) -> Schedule:
        return dataclasses.replace(make(block_bytes), algorithm="synthesized")
    return made


def priced_whole(context: Context, label: str, blocks: int, make, graph=None,
                 reach: str = "the scatter's and the allgather's", routing=None) -> Candidate | None:
    """A whole schedule made at REFERENCE_BYTES per block and priced: along `routing`'s paths (a
    function of the schedule: its transfers' paths between nodes, in order), else `graph`'s pair
    paths (the pairs it was made on), else every transfer routed by the plan's router or routes
    file; None (said) where a routes file lacks a pair it needs."""
    plan = context.plan
    schedule = make(REFERENCE_BYTES)
    if routing is None:
        routing = (functools.partial(transfer_paths, graph) if graph is not None
                   else router_paths(plan.topology, context.router, plan.routes))
    try:
        mapped = map_schedule(schedule, plan.topology, paths=routing(schedule))
    except SynthError as exc:  # a routes file without a pair the point needs: the other points stand
        context.say(f"{plan.collective}: {label}: left out: {exc}")
        return None
    return Candidate(label, blocks, mapped, make, graph.reach if graph is not None else reach, routing=routing)


def router_paths(topology, router: str | None, routes: dict | None):
    """How map_schedule(schedule, topology, router, routes=routes) routes a schedule (each step's
    transfers as one phase), as a function of the schedule: what its file records."""
    return functools.partial(_routed, topology, router or topology.default_router, routes)


def _routed(topology, router: str, routes: dict | None, schedule: Schedule):
    from synth.pricing.schedule_cost import transfer_paths as routed_paths

    return routed_paths(schedule, topology, router, routes=routes)


def pipelined_candidates(context: Context, label: str, parent: np.ndarray, depth: np.ndarray, graph) -> list[Candidate]:
    """The rooted trees of `parent` (a reduce: into the root) pipelined over each of
    limits.PACKED_ROUNDS rounds whose deliveries the relay trees' arrays take, priced along `graph`'s
    pairs (synth.synthesis.tree_packing.pipelined_trees)."""
    from synth.synthesis.tree_packing import pipelined_trees

    trees, p = parent.shape
    found = []
    for rounds in limits.PACKED_ROUNDS:
        if rounds * trees * (p - 1) <= limits.MAX_RELAY_DELIVERIES:
            blocks = rounds * trees
            found.append(priced_whole(context, f"{label}, {rounds} rounds pipelined", blocks, rooted_maker(
                context.plan, functools.partial(pipelined_trees, parent, depth, rounds), blocks), graph))
    return [c for c in found if c is not None]


def for_reduce(plan, label: str) -> str:
    """A broadcast construction's label for the reduce it makes run backwards."""
    if plan.collective != "reduce":
        return label
    return label.replace(" scatter, then allgather ", " gather after reduce-scatter ").replace(" from the root,",
                                                                                              " to the root,")


def judged(plan, candidate: Candidate, method: str, reach: str) -> FrontPoint:
    """A whole candidate's front point: its rounds in the synthesized points' blocks (a rank's
    message in `chunks`, or the root's in all), optimal where it meets the time bound of any
    schedule (its message starts and its busiest bytes both at their bounds), else feasible."""
    network = plan.topology.network()
    ratio = float(network.channel_bandwidth[0]) / float(integer_bandwidth(network)[0])
    unit = plan.chunks * (1 if plan.collective in ("broadcast", "reduce") else plan.graph.ranks)
    mapped = candidate.mapped
    busiest = float(mapped.channel_bytes.sum())  # bytes over bandwidth, at REFERENCE_BYTES per block
    rounds = round(busiest / (candidate.blocks * REFERENCE_BYTES) * unit * ratio, 6)
    at_bound = meets_time_bound(plan, mapped, candidate.blocks)
    return FrontPoint(mapped.steps, rounds, "optimal" if at_bound else "feasible", 0.0, None, method=method,
                      reach=reach)
