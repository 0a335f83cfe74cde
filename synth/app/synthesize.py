"""`synth synthesize COLLECTIVE --network SPEC`: a step schedule made by optimization (synth.synthesis),
verified by the symbolic replay and priced by synth's cost model next to its lower bounds.

The exact method (synth.synthesis.exact): the least steps of one round each, proven, and the
Pareto front of steps against total rounds above it; per message size the front point of least
time under the cost model (alpha per message a port starts, beta per byte on the busiest channel).
A size range gives a schedule per size band (consecutive sizes that pick the same point).

The generated algorithms of the collective (synth.pricing.compare.candidates, priced along the same
router) are one more part, a whole alternative to the synthesized ones: per size the least time of
either is taken, so a synthesized schedule is never slower than what synth already generates, and
the record names which point it is ("generated: ring", ...) with its own status against the bounds.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from synth.collectives.schedule import Schedule, collective
from synth.collectives.verify import verify
from synth.core.errors import SynthError
from synth.pricing.compare import REFERENCE_BYTES
from synth.pricing.schedule_cost import map_schedule, transfer_paths as routed_paths
from synth.synthesis.bounds import BandwidthBound, StepBound, TimeBound, bandwidth_bound, step_bound, time_bound
from synth.synthesis.exact import (FrontPoint, LoadClasses, SpreadProblem, delivery, delivery_rounds,
                                   integer_bandwidth, one_round_steps, rounds_lower_bound, spread_schedule,
                                   synthesize_spread)
from synth.pricing.alphabeta import node_ports
from synth.synthesis.dissemination import abelian_regular, dissemination_points
from synth.synthesis.layers import (Combination, Leaders, Stage, layer_sizes, pareto_program, pipelined, rotated,
                                    stage_deliveries, uniform)
from synth.synthesis.relay import RelayTrees, distinct_node_pairs, group_neighbours, rank_groups
from synth.synthesis.scatter_allgather import SCATTERS, chain_deliveries, pipelined_deliveries
from synth.synthesis.striped_trees import striped_trees
from synth.synthesis.torus_trees import torus_trees
from synth.synthesis.tree_packing import pack_trees, packed_deliveries, pipelined_trees, tree_depths
from synth.synthesis.exchange import EXCHANGES, ExchangeRouting, node_demand, pareto, radices, route_exchange
from synth.synthesis.symmetry import Symmetry, network_symmetry, translate
from synth.synthesis.transfers import REACHES, pairs_graph, terminal_routers, transfer_graph
from synth.topology.paths import Paths

SYNTHESIZED = ("allgather", "reduce-scatter", "allreduce", "broadcast", "reduce", *EXCHANGES)
METHODS = ("auto", "exact", "symmetric", "trees")
MAX_EXACT_RANKS = 64  # the whole program: P (P - 1) deliveries per chunk
MAX_SYMMETRIC_RANKS = 4096  # the representatives' program, or their balanced trees where the program is too large
GENERATED_PAIRS = "the algorithm's own"  # a generated point's transfers: the pairs its algorithm joins
MAX_LAYERED_RANKS = 2048  # the per-layer points' stages are priced over every rank pair's path
LAYERED = ("allgather", "reduce-scatter")  # the halves the per-layer program makes (an allreduce: both)
MAX_TREE_DELIVERIES = 4_000_000  # the balanced trees' deliveries, P (P - 1) x chunks, made one by one (minutes)
MAX_RELAY_DELIVERIES = 1 << 24  # above, the relay trees alone (arrays): 4,096 ranks' blocks (Slim Fly q = 13: 3,380)
MAX_EVERY_PAIRS = 1 << 22  # the straight, relay and per-layer points' pairs: no program, arrays of them (2,048 ranks)
LAYERED_PIECES = (2, 4, 8)  # the pipelined per-layer points' pieces (each within MAX_TREE_DELIVERIES)
SCATTER_PIECES = (1, 4, 16, 64)  # the scatter-then-allgather broadcast's pipelined pieces
CHAIN_PIECES = (64, 256, 1024, 4096)  # the pipelined chains' pieces
PACKED_TREES = 64  # trees of a packing at most (M: blocks a round, one on each tree)
PACKING_WORK = 25_000_000  # trees x transfer pairs x ranks of one packing (the (3,6,3) dragonfly's 8 trees: 12 s)
PACKING_RESTARTS = 8  # tries of a packing at most, until one meets the cut bound,
RESTART_WORK = 20_000_000  # while the tries' trees x transfer pairs x ranks stay within this
PACKED_ROUNDS = tuple(1 << i for i in range(2, 11))  # the packed trees' rounds, pipelined: 4 to 1,024
STRIPES = (2, 3, 4, 8)  # the striped trees' stripes (a rank's children, the messages it starts a step)


@dataclass(frozen=True)
class SynthesisPlan:
    collective: str
    topology: object
    graph: object  # synth.synthesis.transfers.TransferGraph
    root: int
    chunks: int  # blocks per rank (allgather, reduce-scatter, allreduce) or in all (broadcast, reduce)
    step_bound: StepBound
    time_bound: TimeBound
    symmetry: Symmetry | None = None  # translations: the representatives' schedule is designed, then translated
    exchange: ExchangeRouting | None = None  # alltoall(v): the pairs' paths with every block in one phase
    sizes: np.ndarray | None = None  # alltoallv: the P^2 block sizes
    trees_only: bool = False  # no program: the balanced trees (networks without translations above MAX_EXACT_RANKS)
    relay_only: bool = False  # above MAX_TREE_DELIVERIES: the relay trees in their place (synth.synthesis.relay)
    routes: dict | None = None  # a routes file (synth-routes/2) whose paths every transfer takes, in place of a router

    @property
    def method(self) -> str:
        if self.exchange is not None:
            return ("phases: every block in one phase along paths chosen for all pairs at once, or forwarding (TuNA's "
                    "radix-r rounds, the generated algorithms) along them or the family's, per size the least time "
                    "(synth.synthesis.exchange)")
        if self.relay_only:
            return ("trees: relay trees through every group of ranks, direct (two steps) and gathered (three), over "
                    "the pairs they take, and every block straight where every pair fits (synth.synthesis.relay; "
                    f"above {MAX_TREE_DELIVERIES:,} deliveries no balanced trees are made)")
        if self.symmetry is None and self.trees_only:
            return ("trees: breadth-first spreading trees of every rank's blocks with their loads balanced, over the "
                    "transfers and over every pair, and relay trees through every group (synth.synthesis.exact."
                    "balanced_trees, synth.synthesis.relay)")
        if self.symmetry is None:
            return "exact: time-expanded integer program (synth.synthesis.exact)"
        return (f"symmetric: time-expanded integer program of {len(self.symmetry.representatives)} representative "
                f"rank(s), translated by {self.symmetry.order} automorphisms (synth.synthesis.symmetry)")


@dataclass
class Part:
    """One spreading half (an allreduce has two): its front and its schedules."""

    collective: str  # allgather | reduce-scatter | broadcast | reduce
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
    fixed: bool = False  # priced at its own block sizes (alltoallv), not per message size

    def schedule(self, k: int) -> Schedule:
        return self.makers[k]()

    def blocks_of(self, k: int) -> int:
        return self.point_blocks[k] if self.point_blocks else self.blocks

    def best(self, size: int, alpha: float, bandwidth_bits: float) -> tuple[int, float]:
        """The front point of least time at message size `size` (-1 and inf: none was found)."""
        def scale(k: int) -> float:  # a point's blocks at this size, rounded up to whole bytes
            return 1.0 if self.fixed else math.ceil(size / self.blocks_of(k)) / REFERENCE_BYTES
        times = [m.time(alpha, bandwidth_bits, scale(k)) if m is not None else math.inf
                 for k, m in enumerate(self.priced)]
        if not times or min(times) == math.inf:
            return -1, math.inf
        best = int(np.argmin(times))
        return best, times[best]


@dataclass(frozen=True)
class Band:
    sizes: list[int]
    points: tuple[int, ...]  # per part, the front point chosen
    schedule: Schedule  # verified, with its synthesis record


def plan_synthesis(collective_name: str, topology, *, ranks_per_node: int = 1, root: int = 0, chunks: int | None = None,
                   reach: str | None = None, router: str | None = None, method: str = "auto", sizes=None,
                   time_limit: float = 60.0, solver: str = "cpsat", say=lambda text: None,
                   check_only: bool = False, routes: dict | None = None) -> SynthesisPlan | None:
    """What to synthesize, with the transfers and the bounds (an all-to-all(v)'s pairs are routed
    here, by the path-selection program within `time_limit`, unless `router` is given; with
    `check_only` its options are checked and None returned, before that long part)."""
    info = collective(collective_name)
    if info.name not in SYNTHESIZED:
        raise SynthError(f"synth synthesize makes {', '.join(SYNTHESIZED)}, not {info.name} (yet)")
    if method not in METHODS:
        raise SynthError(f"--method {method}: expected one of {', '.join(METHODS)}")
    if (sizes is None) != (info.name != "alltoallv"):
        raise SynthError("alltoallv needs its block sizes (--sizes)" if sizes is None else
                         f"--sizes gives an alltoallv's block sizes, not {info.name}'s")
    if routes is not None and router is not None:
        raise SynthError("--routes and --router: the transfers take one or the other")
    if routes is not None and routes["topology"]["spec"] != topology.spec:
        raise SynthError(f"the routes file is for {routes['topology']['spec']}, not {topology.spec}")
    if info.name in EXCHANGES:
        return _plan_exchange(info.name, topology, ranks_per_node, root, chunks, reach, router, method, sizes,
                              time_limit, solver, say, check_only, routes)
    network = topology.network()
    ranks = network.num_terminals * ranks_per_node
    symmetric = (method in ("auto", "symmetric") and info.name not in ("broadcast", "reduce")
                 and topology.translations() is not None)
    if method == "symmetric" and not symmetric:
        raise SynthError(f"--method symmetric: {topology.spec} has no translations synth knows"
                         if info.name not in ("broadcast", "reduce") else
                         f"--method symmetric: a {info.name} has one root, no translation maps it to itself")
    if ranks > (MAX_SYMMETRIC_RANKS if symmetric else MAX_EXACT_RANKS if method == "exact" else ranks):
        raise SynthError(f"{topology.spec} has {ranks} ranks: the {'symmetric' if symmetric else 'exact'} method "
                         f"takes up to {MAX_SYMMETRIC_RANKS if symmetric else MAX_EXACT_RANKS}")
    if info.rooted and not 0 <= root < ranks:
        raise SynthError(f"--root {root} is not a rank of {topology.spec} (0..{ranks - 1})")
    if not info.rooted and root != 0:
        raise SynthError(f"{info.name} has no root")
    if not symmetric and (method == "trees" or ranks > MAX_EXACT_RANKS):  # before any pair is routed
        _check_tree_size(info.name, topology, ranks_per_node, chunks)
    if reach is None:  # neighbours where they join every rank, else every pair
        graph = transfer_graph(topology, ranks_per_node, "neighbours", router, routes=routes)
        if (graph.distances() < 0).any():
            graph = transfer_graph(topology, ranks_per_node, "all", router, routes=routes)
    else:
        if reach not in REACHES:
            raise SynthError(f"--transfers {reach}: expected one of {', '.join(REACHES)}")
        graph = transfer_graph(topology, ranks_per_node, reach, router, routes=routes)
    symmetry = network_symmetry(topology, graph) if symmetric else None
    if method == "symmetric" and symmetry is None:
        raise SynthError(f"--method symmetric: the {graph.reach} transfers of {topology.spec} routed by {graph.router} "
                         "are not translation-invariant")
    # without translations: the program up to MAX_EXACT_RANKS, the balanced trees alone above (or when asked)
    trees_only = symmetry is None and (method == "trees" or ranks > MAX_EXACT_RANKS)
    relay_only = trees_only and not _check_tree_size(info.name, topology, ranks_per_node, chunks)
    # The cut bound's sinks: one terminal per orbit suffices (the translations move every cut onto one of them)
    terminals = None if symmetry is None else symmetry.representatives // ranks_per_node
    bound = time_bound(info.name, network, ranks_per_node, root, terminals)
    if chunks is None:
        chunks = 1 if symmetry is None else _least_whole_chunks(
            bound.bandwidth if info.name != "allreduce" else
            bandwidth_bound("allgather", network, ranks_per_node, root, terminals), network, ranks)
    return SynthesisPlan(info.name, topology, graph, root, chunks, step_bound(info.name, graph, root), bound, symmetry,
                         trees_only=trees_only, relay_only=relay_only, routes=routes)


def _check_tree_size(name: str, topology, ranks_per_node: int, chunks: int | None) -> bool:
    """The trees method's size guard: whether its balanced trees (made delivery by delivery)
    fit; above, the relay trees (arrays) take their place up to MAX_RELAY_DELIVERIES, where the
    ranks come in groups (one line and exit 2 beyond, or without groups)."""
    ranks = topology.network().num_terminals * ranks_per_node
    blocks = (chunks or 1) * (ranks if name in ("allgather", "reduce-scatter", "allreduce") else 1)
    deliveries = blocks * (ranks - 1)
    if deliveries <= MAX_TREE_DELIVERIES:
        return True
    head = f"{topology.spec} has {ranks} ranks: {deliveries:,} deliveries (blocks x (ranks - 1))"
    if rank_groups(topology, ranks_per_node) is None:
        raise SynthError(f"{head}: above {MAX_TREE_DELIVERIES:,} the trees method takes relay trees, which need "
                         "ranks in groups (a dragonfly's groups, or several ranks a router)")
    if deliveries > MAX_RELAY_DELIVERIES:
        raise SynthError(f"{head}; the trees method takes up to {MAX_RELAY_DELIVERIES:,}")
    return False


def _plan_exchange(name: str, topology, ranks_per_node: int, root: int, chunks, reach, router, method: str, sizes,
                   time_limit: float, solver: str, say, check_only: bool = False,
                   routes: dict | None = None) -> SynthesisPlan | None:
    """An all-to-all(v): its pairs routed with every block at once, and the bounds of any schedule
    (synth.synthesis.exchange)."""
    from synth.collectives.sizes import parse_sizes as parse_block_sizes

    if method in ("symmetric", "trees"):
        raise SynthError(f"--method {method}: an {name} is synthesized by phases (--method auto)")
    if chunks is not None:
        raise SynthError(f"--chunks: an {name} moves every block whole (it has P^2 of them)")
    if reach == "neighbours":
        raise SynthError(f"--transfers neighbours: an {name} sends every block to its destination (--transfers all)")
    if root != 0:
        raise SynthError(f"{name} has no root")
    network = topology.network()
    ranks = network.num_terminals * ranks_per_node
    if ranks < 2:
        raise SynthError(f"{topology.spec} has one rank: nothing to exchange")
    matrix = None if sizes is None else (parse_block_sizes(sizes, ranks) if isinstance(sizes, str) else np.asarray(sizes))
    if matrix is not None:
        if matrix.size != ranks * ranks:
            raise SynthError(f"an alltoallv of {ranks} ranks has {ranks * ranks} block sizes, not {matrix.size}")
        if matrix.dtype.kind not in "iu" or (matrix < 0).any():
            raise SynthError("an alltoallv's block sizes are whole numbers of bytes, none negative")
        matrix = matrix.reshape(-1)
        if not (matrix.reshape(ranks, ranks) * ~np.eye(ranks, dtype=bool)).any():
            raise SynthError("every block between two ranks of this alltoallv is empty: nothing to exchange")
    if check_only:
        return None
    routing = route_exchange(topology, ranks_per_node, matrix, time_limit, solver, router, say=say, routes=routes)
    one_phase = _exchange_schedule(name, topology, ranks_per_node, matrix, "spread-out", None, REFERENCE_BYTES)
    floor = map_schedule(one_phase, topology, paths=transfer_paths(routing.graph, one_phase)).bound
    if matrix is None:  # lambda* in blocks, not rounded up: a schedule may split its blocks (MD, DO) over paths
        per_byte = max(routing.lp, floor.busiest_bytes / REFERENCE_BYTES) / ranks  # a rank's message is P blocks
    else:
        per_byte = max(routing.lp, floor.busiest_bytes) / exchange_message_bytes(matrix, ranks)
    why = (f"{routing.lp_why or 'no flow bound'} (>= {routing.lp:.6g} {'blocks' if matrix is None else 'B'} "
           f"over bandwidth) or {floor.why_bytes}")
    bound = TimeBound(floor.messages, BandwidthBound(per_byte, why))
    steps = StepBound(1, "every pair is joined by one transfer: a direct exchange takes one step")
    return SynthesisPlan(name, topology, routing.graph, 0, 1, steps, bound, exchange=routing, sizes=matrix,
                         routes=routes)


def exchange_message_bytes(matrix: np.ndarray, ranks: int) -> int:
    """An alltoallv's message size as the size bands show it: the bytes a rank sends, on average."""
    return max(1, int(np.asarray(matrix, dtype=np.int64).sum()) // ranks)


def _exchange_schedule(name: str, topology, ranks_per_node: int, matrix, algorithm: str, radix, block_bytes: int):
    from synth.collectives.algorithms import ALGORITHMS, Request, grid_shape, load_all

    load_all()
    ranks = topology.network().num_terminals * ranks_per_node
    request = Request(name, ranks, ranks * ranks, block_bytes, topology.spec, 0, grid_shape(topology, ranks_per_node),
                      radix, ranks_per_node=ranks_per_node, sizes=matrix)
    refusal = ALGORITHMS[algorithm].refusal(request)
    if refusal is not None:
        return None
    try:
        schedule = ALGORITHMS[algorithm].generate(request)
    except SynthError:  # a generator that does not take this network after all
        return None
    if algorithm == "tuna" and matrix is None and schedule.size_exchange is not None:
        # every block's size is known to all: TuNA's rounds need no size exchange (Bruck's radix-r index algorithm)
        schedule = dataclasses.replace(schedule, size_exchange=None)
    return schedule


def _exchange_part(plan: SynthesisPlan, say) -> Part:
    """The front of an all-to-all(v): one phase, TuNA's radices and the generated algorithms, each
    along the plan's pair paths and the family's; the points no other beats in both alpha terms and
    busiest bytes."""
    from synth.collectives.algorithms import ALGORITHMS, load_all

    load_all()
    ranks_per_node = plan.graph.ranks_per_node
    graphs = [plan.graph]
    if plan.routes is None and plan.graph.router != plan.topology.default_router:
        # the family's paths too: forwarding steps may prefer them (not where a routes file gives the fabric's)
        a, b, _ = node_demand(plan.topology.network(), ranks_per_node, None)
        graphs.append(pairs_graph(plan.topology, ranks_per_node, "all", (a, b), plan.topology.default_router))
    found = []
    unit = 1.0 if plan.sizes is not None else float(REFERENCE_BYTES)  # loads in bytes (alltoallv) or blocks
    forwarding = "tuna" if plan.sizes is not None else "radix-r bruck"  # TuNA's rounds; uniform: no size exchange
    # the generated algorithms of the collective too (Kautz-C's two steps on K(d,2), ...): the front is the best
    # of what synth can make, each point saying what it is
    generated = [(f"{name} (generated)", name, None) for name, algorithm in ALGORITHMS.items()
                 if plan.collective in algorithm.collectives and name not in ("spread-out", "tuna")]
    for label, algorithm, radix in [("one phase", "spread-out", None),
                                    *((f"{forwarding} r={r}", "tuna", r) for r in radices(plan.graph.ranks)),
                                    *generated]:
        schedule = _exchange_schedule(plan.collective, plan.topology, ranks_per_node, plan.sizes, algorithm, radix,
                                      REFERENCE_BYTES)
        if schedule is None:
            continue
        for graph in graphs:
            mapped = map_schedule(schedule, plan.topology, paths=transfer_paths(graph, schedule))
            busiest = float(mapped.channel_bytes.sum() + mapped.size_bytes.sum()) / unit
            alphas = int(mapped.port_messages.sum() + mapped.size_port_messages.sum())
            whole = schedule.blocks == plan.graph.ranks ** 2  # every block moved whole (no parts), along one path
            found.append((label, algorithm, radix, schedule.num_steps, busiest, alphas, mapped, graph, whole))
        del schedule
    say(f"{plan.collective}: {len(found)} schedules priced along the pairs' paths")
    keep = pareto([(f[5], f[4]) for f in found])
    part = Part(plan.collective, 1, "optimal", [], None, "not on the front", blocks=plan.graph.ranks, whole=True,
                fixed=plan.sizes is not None)
    # a point is optimal when its busiest load meets the least of its kind: a schedule of whole blocks, each on one
    # path (lambda* rounded up to whole blocks), or any schedule (lambda*); the gap is always to any schedule's bound
    message = exchange_message_bytes(plan.sizes, plan.graph.ranks) if plan.sizes is not None else plan.graph.ranks
    least_any = plan.time_bound.bandwidth.per_byte * message
    for i in keep:
        label, algorithm, radix, steps, busiest, _, mapped, graph, whole = found[i]
        least = plan.exchange.bound(least_any) if whole else least_any
        optimal = busiest <= least * (1 + 1e-9)
        status = "optimal" if optimal else "feasible"
        among = "schedules moving whole blocks" if whole else "any schedule"
        part.front.append(FrontPoint(steps, round(busiest, 6), status, 0.0, label, method=label,
                                     graph=None if graph is plan.graph else graph, among=among))

        def make(block_bytes: int = REFERENCE_BYTES, algorithm=algorithm, radix=radix) -> Schedule:
            made = _exchange_schedule(plan.collective, plan.topology, ranks_per_node, plan.sizes, algorithm, radix,
                                      block_bytes)
            return dataclasses.replace(made, algorithm="synthesized")
        part.makers.append(make)
        part.priced.append(mapped)
        part.routing.append(functools.partial(transfer_paths, graph))
    return part


def _least_whole_chunks(bandwidth, network, ranks: int) -> int:
    """Symmetric synthesis' default chunks: the fewest (up to a rank's ports) that make the cut bound
    a whole number of rounds, what the trees need to meet it (a torus: (P - 1) / 2L blocks, so 2L
    chunks; a HyperX often 1 or 2; more blocks than needed only round each up to whole bytes);
    the exact method keeps one (its program grows with the blocks)."""
    ratio = float(network.channel_bandwidth[0]) / float(integer_bandwidth(network)[0])
    rounds = bandwidth.per_byte * ratio * ranks  # the bound in rounds of one chunk per rank
    ports = node_ports(network)
    for chunks in range(1, ports + 1):
        if abs(rounds * chunks - round(rounds * chunks)) <= 1e-9 * max(1.0, rounds * chunks):
            return chunks
    return ports


def synthesize_parts(plan: SynthesisPlan, time_limit: float, solver: str = "cpsat", say=lambda text: None,
                     generated=None) -> list[Part]:
    """The spreading halves of the collective, each synthesized (an allreduce: a reduce-scatter,
    then an allgather, each with half the time), and the generated algorithms as one whole part
    (`generated`: synth.pricing.compare's candidates along the plan's router, when already made)."""
    if plan.exchange is not None:
        return [_exchange_part(plan, say)]
    rooted = plan.collective in ("broadcast", "reduce")  # half the time for the scatter's allgather
    parts = _spreading_parts(plan, time_limit / 2 if rooted else time_limit, solver, say)
    if rooted:
        scattered = _scatter_allgather_part(plan, time_limit / 2, solver, say)
        parts += [scattered] if scattered is not None else []
    whole = _generated_part(plan, generated, say)
    return parts + ([whole] if whole is not None else [])


def _scatter_allgather_part(plan: SynthesisPlan, time_limit: float, solver: str, say) -> Part | None:
    """A broadcast as a scatter (binomial or straight) then the synthesized allgather's points, in
    1, 4, 16 or 64 pieces pipelined (synth.synthesis.scatter_allgather); a reduce the same backwards: a whole
    alternative, its points the ones no other beats in both message starts and busiest bytes per
    byte of message, each feasible unless it meets the bounds of any schedule."""
    from synth.collectives.algorithms import grid_shape
    from synth.collectives.algorithms.hamiltonian import hamiltonian_cycles

    q = plan.graph.ranks_per_node
    p = plan.graph.ranks
    network = plan.topology.network()
    ratio = float(network.channel_bandwidth[0]) / float(integer_bandwidth(network)[0])
    router = None if plan.routes else plan.graph.router
    found = []

    def priced(label: str, blocks: int, make, graph=None) -> None:
        """`graph`: the transfer graph whose pairs the point uses, priced along its paths (the paths
        its trees were packed on); else every transfer routed by the plan's router or routes file."""
        schedule = make(REFERENCE_BYTES)
        try:
            mapped = (map_schedule(schedule, plan.topology, paths=transfer_paths(graph, schedule)) if graph is not None
                      else map_schedule(schedule, plan.topology, router, routes=plan.routes))
        except SynthError as exc:  # a routes file without a pair the point needs: the other points stand
            say(f"{plan.collective}: {label}: left out: {exc}")
            return
        reach = graph.reach if graph is not None else "the scatter's and the allgather's"
        paths = (functools.partial(transfer_paths, graph) if graph is not None
                 else _router_paths(plan.topology, router, plan.routes))
        found.append((label, blocks, make, mapped, reach, paths))

    allgather = None
    try:
        if p * (p - 1) * min(SCATTER_PIECES) <= MAX_TREE_DELIVERIES:  # else none is made (one chunk: planned alike)
            allgather_plan = plan_synthesis("allgather", plan.topology, ranks_per_node=q, router=router,
                                            time_limit=time_limit, solver=solver, routes=plan.routes)
            if p * allgather_plan.chunks * (p - 1) * min(SCATTER_PIECES) <= MAX_TREE_DELIVERIES:
                (allgather,) = _spreading_parts(allgather_plan, time_limit, solver,
                                                lambda t: say(f"scatter, then {t}"))
    except SynthError as exc:  # the allgather's limits: the chains stand
        say(f"{plan.collective}: no scatter-then-allgather points: {exc}")
    for k, point in enumerate(allgather.front if allgather is not None else []):
        if allgather.makers[k] is None:
            continue
        for pieces, scatter in itertools.product(SCATTER_PIECES, SCATTERS):
            blocks = allgather.blocks_of(k) * pieces
            if blocks * (p - 1) > MAX_TREE_DELIVERIES:
                continue
            deliveries = functools.partial(_scatter_then_allgather, p, plan.root, allgather.blocks_of(k),
                                           allgather.makers[k], pieces, scatter)
            priced(f"{scatter} scatter, then allgather {point.method}, {pieces} piece(s) pipelined", blocks,
                   functools.partial(_broadcast_of, plan, deliveries, blocks))
    # the pipelined chains, for the largest messages: a 2D grid's four directed Hamiltonian cycles, else rank order
    cycles = hamiltonian_cycles(grid_shape(plan.topology, q))
    orders = [cycles[0], cycles[0][::-1], cycles[1], cycles[1][::-1]] if cycles is not None else [np.arange(p)]
    what = ("pipelined chains along the grid's four directed Hamiltonian cycles" if cycles is not None else
            "pipelined chain of the ranks in order")
    for pieces in CHAIN_PIECES:
        if pieces * (p - 1) <= MAX_TREE_DELIVERIES:
            priced(f"{what} from the root, {pieces} pieces", pieces, functools.partial(
                _broadcast_of, plan, functools.partial(chain_deliveries, orders, plan.root, pieces), pieces))
    _packed_trees(plan, say, priced)
    _striped(plan, say, priced)
    _torus(plan, say, priced)
    if not found:
        return None
    kept = pareto([(float(m.port_messages.sum()), float(m.channel_bytes.sum()) / blocks)
                   for _, blocks, _, m, _, _ in found])
    part = Part(plan.collective, None, "not synthesized", [], None, "not on the front", blocks=found[0][1], whole=True)
    bound = plan.time_bound
    for i in kept:
        label, blocks, make, mapped, reach, paths = found[i]
        busiest = float(mapped.channel_bytes.sum())
        at_bound = (mapped.messages <= bound.messages
                    and busiest <= bound.bandwidth.per_byte * blocks * REFERENCE_BYTES * (1 + 1e-9))
        rounds = round(busiest / (blocks * REFERENCE_BYTES) * plan.chunks * ratio, 6)
        if plan.collective == "reduce":  # the broadcast run backwards
            label = label.replace(" scatter, then allgather ", " gather after reduce-scatter ").replace(
                " from the root,", " to the root,")
        part.front.append(FrontPoint(mapped.steps, rounds, "optimal" if at_bound else "feasible", 0.0, None,
                                     method=label, reach=reach))
        part.makers.append(make)
        part.priced.append(mapped)
        part.routing.append(paths)
        part.point_blocks.append(blocks)
    say(f"{plan.collective}: {len(found)} scatter, chain and packed-tree points priced, {len(kept)} kept")
    return part


def _packed_trees(plan: SynthesisPlan, say, priced) -> None:
    """The broadcast by M packed spanning trees (synth.synthesis.tree_packing), M the least
    max-flow from the root in units of the slowest channel (Edmonds' count of arc-disjoint trees
    where every channel is alike) times 1, 2, 4, ... up to the second at the cut bound, PACKED_TREES
    and PACKING_WORK, each pipelined over PACKED_ROUNDS rounds and priced along the transfers' paths
    it was packed on."""
    network = plan.topology.network()
    bandwidth = network.channel_bandwidth.astype(np.float64)
    graph = plan.graph
    if plan.collective == "reduce":  # trees into the root: each pair's arc turned round, its path the pair's own
        graph = dataclasses.replace(graph, src=graph.dst, dst=graph.src)
    cut = bandwidth_bound(plan.collective, network, graph.ranks_per_node, plan.root).per_byte
    p = graph.ranks
    trees, met = max(1, round(1.0 / (cut * float(bandwidth.min())))), 0
    while trees <= PACKED_TREES and trees * graph.num_pairs * p <= PACKING_WORK:
        restarts = max(1, min(PACKING_RESTARTS, RESTART_WORK // (trees * graph.num_pairs * p)))
        packing = pack_trees(graph, bandwidth, plan.root, trees, cut, restarts)
        depth = int(packing.depth.max())
        say(f"{plan.collective}: {trees} packed trees: {packing.per_byte / cut - 1:.1%} above the cut bound, "
            f"{depth} deep")
        for rounds in PACKED_ROUNDS:
            if rounds * trees * (p - 1) <= MAX_TREE_DELIVERIES:
                blocks = rounds * trees
                priced(f"{trees} packed spanning trees ({depth} deep, {packing.per_byte / cut - 1:.1%} above the "
                       f"cut bound), {rounds} rounds pipelined", blocks, functools.partial(
                           _broadcast_of, plan, functools.partial(packed_deliveries, graph, packing, rounds), blocks),
                       plan.graph)
        met += packing.per_byte <= cut * (1 + 1e-9)
        if met == 2:  # at the cut bound twice: more trees deepen the pipeline and start more messages
            break
        trees *= 2


def _striped(plan: SynthesisPlan, say, priced) -> None:
    """The broadcast by striped trees (synth.synthesis.striped_trees) where ranks come in groups:
    2, 3, 4 or 8 stripes, each pipelined over PACKED_ROUNDS rounds, priced along the trees' own
    pairs (routed for them: reach `trees`)."""
    q, p = plan.graph.ranks_per_node, plan.graph.ranks
    groups = rank_groups(plan.topology, q)
    if groups is None:
        return
    groups = np.unique(groups, return_inverse=True)[1]
    neighbours = group_neighbours(plan.topology, q, groups)
    routers = np.repeat(terminal_routers(plan.topology.network()), q)
    for stripes in (f for f in STRIPES if f < p):
        try:
            parent = striped_trees(groups, plan.root, stripes, neighbours, routers)
        except SynthError as exc:  # the other points stand
            say(f"{plan.collective}: no {stripes} striped trees: {exc}")
            continue
        depth = tree_depths(parent)
        child = np.broadcast_to(np.arange(p), parent.shape)[parent >= 0]
        a, b = parent[parent >= 0] // q, child // q
        if plan.collective == "reduce":  # the partials flow from child to parent
            a, b = b, a
        try:
            graph = pairs_graph(plan.topology, q, "trees", distinct_node_pairs(a, b),
                                None if plan.routes else plan.graph.router, routes=plan.routes)
        except SynthError as exc:
            say(f"{plan.collective}: no striped trees: {exc}")
            return
        say(f"{plan.collective}: {stripes} striped trees, {int(depth.max())} deep, {graph.num_pairs:,} pairs")
        _pipelined(plan, f"{stripes} striped trees ({int(depth.max())} deep)", parent, depth, graph, priced)


def _torus(plan: SynthesisPlan, say, priced) -> None:
    """The broadcast by a 2D torus's four arc-disjoint spanning trees (synth.synthesis.torus_trees),
    pipelined over PACKED_ROUNDS rounds, priced along the plan's transfers (neighbours)."""
    from synth.collectives.algorithms import grid_shape

    dims = grid_shape(plan.topology, plan.graph.ranks_per_node)
    if len(dims) != 2 or min(dims) < 3:
        return
    parent = torus_trees(dims, plan.root)
    depth = tree_depths(parent)
    grid = "torus" if plan.topology.spec.startswith("torus") else "grid"  # HyperX: valid trees, its cut not met
    say(f"{plan.collective}: the 2D {grid}'s four arc-disjoint trees, {int(depth.max())} deep")
    _pipelined(plan, f"four arc-disjoint trees of the 2D {grid} ({int(depth.max())} deep)", parent, depth, plan.graph,
               priced)


def _pipelined(plan: SynthesisPlan, label: str, parent: np.ndarray, depth: np.ndarray, graph, priced) -> None:
    """The trees of `parent` (a reduce: into the root) pipelined over each of PACKED_ROUNDS rounds
    whose deliveries the relay trees' arrays take, priced along `graph`'s pairs."""
    trees, p = parent.shape
    for rounds in PACKED_ROUNDS:
        if rounds * trees * (p - 1) <= MAX_RELAY_DELIVERIES:
            blocks = rounds * trees
            priced(f"{label}, {rounds} rounds pipelined", blocks, functools.partial(
                _broadcast_of, plan, functools.partial(pipelined_trees, parent, depth, rounds), blocks), graph)


def _scatter_then_allgather(ranks: int, root: int, allgather_blocks: int, make_allgather, pieces: int, scatter: str):
    return pipelined_deliveries(ranks, root, allgather_blocks, make_allgather().explicit(), pieces, scatter)


def _broadcast_of(plan: SynthesisPlan, deliveries, blocks: int, block_bytes: int) -> Schedule:
    """The broadcast (reduce: run backwards) of `deliveries()` ((step, sender, receiver, block) and
    the steps) over `blocks` blocks, one transfer per rank pair and step."""
    from synth.collectives.schedule import COPY, REDUCE, ScheduleBuilder

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


def _generated_part(plan: SynthesisPlan, generated, say) -> Part | None:
    """The generated algorithms of the collective (with the plan's Q ranks a node and root; a
    reduce-scatter's also the allgathers run backwards), each a front point priced as
    `synth compare` prices it: optimal where it meets the time bound of any schedule (its message
    starts and its busiest bytes both at their bounds), else feasible."""
    from synth.pricing.compare import candidates

    if generated is not None and not len(generated):  # () asks for none
        return None
    if generated is None:
        try:
            generated, _ = candidates(plan.collective, plan.topology, plan.topology.default_router if plan.routes
                                      else plan.graph.router, plan.root, plan.graph.ranks_per_node, plan.routes)
        except SynthError:
            return None
    generated = [c for c in generated if c.make is not None]
    if plan.collective == "reduce-scatter":
        generated = generated + _reversed_allgathers(plan)
    if not generated:
        return None
    network = plan.topology.network()
    ratio = float(network.channel_bandwidth[0]) / float(integer_bandwidth(network)[0])
    # rounds in the synthesized points' blocks (a rank's message in `chunks`, or the root's in all), to compare
    unit = plan.chunks * (1 if plan.collective in ("broadcast", "reduce") else plan.graph.ranks)
    part = Part(plan.collective, None, "not synthesized", [], None, "not on the front", blocks=generated[0].blocks,
                whole=True)
    bound = plan.time_bound
    paths = _router_paths(plan.topology, None if plan.routes else plan.graph.router, plan.routes)
    for candidate in generated:
        mapped = candidate.mapped
        busiest = float(mapped.channel_bytes.sum())  # bytes over bandwidth, at REFERENCE_BYTES per block
        at_bound = (mapped.messages <= bound.messages
                    and busiest <= bound.bandwidth.per_byte * candidate.blocks * REFERENCE_BYTES * (1 + 1e-9))
        rounds = round(busiest / (candidate.blocks * REFERENCE_BYTES) * unit * ratio, 6)
        part.front.append(FrontPoint(mapped.steps, rounds, "optimal" if at_bound else "feasible", 0.0, candidate.label,
                                     method=f"generated: {candidate.label}", reach=GENERATED_PAIRS))
        part.makers.append(_relabelled(candidate.make))
        part.priced.append(mapped)
        part.routing.append(paths)  # each transfer as candidates() priced it: routed step by step
        part.point_blocks.append(candidate.blocks)
    say(f"{plan.collective}: {len(generated)} generated algorithms priced along {plan.graph.router}'s paths")
    return part


def _reversed_allgathers(plan: SynthesisPlan) -> list:
    """The generated allgathers run backwards as reduce-scatters (a rank's partial of a block goes
    back along the edge the block came by, after its own receivers' partials arrived): valid where
    every rank receives every block once, which the verifier decides; a reduce-scatter has fewer
    generators of its own (Bruck's dissemination reversed takes log P steps on any P)."""
    from synth.pricing.compare import Candidate, candidates

    try:
        found, _ = candidates("allgather", plan.topology, plan.topology.default_router if plan.routes
                              else plan.graph.router, 0, plan.graph.ranks_per_node, plan.routes)
    except SynthError:
        return []
    out = []
    for candidate in found:
        if candidate.make is None:
            continue
        make = functools.partial(_time_reversed, candidate.make)
        schedule = make(REFERENCE_BYTES)
        if not verify(schedule).ok:
            continue
        out.append(Candidate(f"{candidate.label} reversed", candidate.blocks,
                             map_schedule(schedule, plan.topology, None if plan.routes else plan.graph.router,
                                          routes=plan.routes), make))
    return out


def _time_reversed(make, block_bytes: int) -> Schedule:
    """An allgather's schedule made at `block_bytes`, its steps backwards, every transfer turned
    around and reducing: a reduce-scatter where every rank received every block once."""
    from synth.collectives.schedule import REDUCE, ScheduleBuilder

    forward = make(block_bytes).explicit()
    builder = ScheduleBuilder("reduce-scatter", forward.algorithm, forward.spec, forward.ranks, forward.blocks,
                              forward.block_bytes, ranks_per_node=forward.ranks_per_node)
    for src, dst, blocks, _ in reversed(list(_steps(forward))):
        builder.add_step(dst, src, blocks, REDUCE)
    return builder.build()


def _steps(schedule: Schedule):
    """Per step of a schedule with its blocks listed: (src, dst, (counts, ids), op)."""
    for s in range(schedule.num_steps):
        t = slice(schedule.step_ptr[s], schedule.step_ptr[s + 1])
        counts = np.diff(schedule.block_ptr[t.start:t.stop + 1])
        ids = schedule.block_ids[schedule.block_ptr[t.start]:schedule.block_ptr[t.stop]]
        yield schedule.src[t], schedule.dst[t], (counts, ids), schedule.op[t]


def _relabelled(make):
    def made(block_bytes: int) -> Schedule:
        return dataclasses.replace(make(block_bytes), algorithm="synthesized")
    return made


def _spreading_parts(plan: SynthesisPlan, time_limit: float, solver: str, say) -> list[Part]:
    halves = ["reduce-scatter", "allgather"] if plan.collective == "allreduce" else [plan.collective]
    parts = []
    every_pair = None  # the trees method's graph of every pair, made once for both halves
    for half in halves:
        reverse = half in ("reduce-scatter", "reduce")
        p = plan.graph.ranks
        symmetry = plan.symmetry if half in ("allgather", "reduce-scatter") else None
        if half in ("allgather", "reduce-scatter"):
            sources = np.arange(p * plan.chunks) % p  # block b starts at rank b mod P (synth.collectives.schedule)
        else:
            sources = np.full(plan.chunks, plan.root, dtype=np.int64)
        # The program's blocks: every block, or (symmetric) the representatives' (block k: chunk k // orbits)
        designed = sources if symmetry is None else np.tile(symmetry.representatives, plan.chunks)
        # every delivery as arrays (hundreds of megabytes at thousands of ranks): made where a point needs them
        spread = None if plan.relay_only and plan.graph.reach != "all" else SpreadProblem.of(designed, p)
        least = step_bound(half, plan.graph, plan.root).steps
        network = plan.topology.network()
        per_byte = (plan.time_bound.bandwidth if half == plan.collective  # computed once (max-flows)
                    else bandwidth_bound(half, network, plan.graph.ranks_per_node, plan.root,
                                         None if symmetry is None else symmetry.representatives // plan.graph.ranks_per_node)
                    ).per_byte
        # The bound in the program's units: z_s >= count_c / coef_c, and coef_c = bandwidth_c x (coef / bandwidth),
        # the same ratio for every channel.
        ratio = float(network.channel_bandwidth[0]) / float(integer_bandwidth(network)[0])
        rounds_bound = rounds_lower_bound(per_byte * ratio, len(sources))
        say(f"{half}: {len(designed) * (p - 1):,} deliveries, at least {least} steps and {rounds_bound} rounds")
        if spread is None:  # thousands of ranks: the relay trees below, no trees made delivery by delivery
            front = []
        elif plan.trees_only and plan.graph.reach == "all":  # breadth-first trees over every pair: straight sends
            front = [_direct_point(spread, plan.graph, network, reverse, rounds_bound)]
            say(f"{half}: 1 step over every pair: {front[0].rounds} rounds")
        else:
            front = synthesize_spread(spread, delivery(plan.graph, reverse), plan.graph, network, least,
                                      time_limit=time_limit / len(halves), solver=solver, rounds_bound=rounds_bound,
                                      symmetry=symmetry, program=not plan.trees_only, say=lambda t: say(f"{half}: {t}"))
        if symmetry is not None:
            front = [_status_for_any_schedule(point, rounds_bound) for point in front]
        # A schedule of `least` steps (the step bound) proves the least steps, whatever its rounds.
        solved = bool(front) and front[0].rounds is not None
        one_round = one_round_steps(front)
        if symmetry is not None and abelian_regular(symmetry, plan.graph.ranks_per_node):
            # the latency end: fewer steps than the transfer graph's diameter, over longer paths
            try:
                extra = dissemination_points(symmetry, plan.topology, plan.graph.router, plan.chunks, reverse,
                                             node_ports(network, plan.graph.ranks_per_node), routes=plan.routes,
                                             say=lambda t: say(f"{half}: {t}"))
            except SynthError as exc:  # a routes file without the longer paths dissemination takes
                say(f"{half}: no dissemination points: {exc}")
                extra = []
            front = sorted(front + [e for e in extra if e.steps < front[0].steps], key=lambda f: f.steps)
        if plan.trees_only:
            every_pair = every_pair or _every_pair_graph(plan, say)
            extra = []
            if every_pair is not None and plan.graph.reach != "all":
                # the bandwidth end where the core has room: every rank's blocks straight to every rank, one step
                extra.append(_direct_point(spread or SpreadProblem.of(designed, p), every_pair, network, reverse,
                                           rounds_bound))
                say(f"{half}: 1 step over every pair: {extra[-1].rounds} rounds")
            # between the two: two or three steps through a relay per group
            relays = _relay_points(plan, sources, every_pair, network, reverse, rounds_bound,
                                   lambda t: say(f"{half}: {t}"))
            if plan.relay_only and not relays:
                raise SynthError(f"{plan.topology.spec}: no relay trees over the transfers (the routes file lacks "
                                 "pairs they take?), and no balanced trees at this size")
            # every one: per size the point of least time is taken, which steps and rounds alone do not tell
            front = sorted(front + extra + relays, key=lambda f: f.steps)
            if spread is None:  # no point uses the plan's transfers: their step bound is not shown reached
                solved = False
        sizes = layer_sizes(plan.topology, plan.graph.ranks_per_node, p) if half in LAYERED else None
        if sizes is not None and p <= MAX_LAYERED_RANKS:
            every_pair = every_pair or _every_pair_graph(plan, say)
            if every_pair is not None:
                layered = _layered_points(plan, sizes, every_pair, network, reverse, per_byte,
                                          lambda t: say(f"{half}: {t}"))
                say(f"{half}: per layer ({' x '.join(map(str, sizes))}): " + "; ".join(
                    f"{f.steps} steps, {f.rounds} rounds" for f in layered))
                front = sorted(front + layered, key=lambda f: f.steps)
        part = Part(half, least if solved else None, "optimal" if solved else front[0].status if front else "timeout",
                    front, *one_round, blocks=len(sources))
        if any(point.blocks for point in front):  # per-layer points with every block split in shares
            part.point_blocks = [point.blocks or len(sources) for point in front]
        for point in front:
            if point.choice is None:
                part.makers.append(None)
                part.priced.append(None)
                part.routing.append(None)
                continue
            # the program's and the balanced trees' points are the representatives' (translated when made)
            maker = _maker(plan, half, point, point.blocks or len(sources), reverse,
                           symmetry if point.method in ("program", "trees") else None, designed)
            graph = point.graph or plan.graph
            schedule = maker()
            part.makers.append(maker)
            part.priced.append(map_schedule(schedule, plan.topology, paths=transfer_paths(graph, schedule)))
            part.routing.append(functools.partial(transfer_paths, graph))
            del schedule
        parts.append(part)
    return parts


def _relay_points(plan: SynthesisPlan, sources: np.ndarray, every_pair, network, reverse: bool, rounds_bound: int,
                  say) -> list[FrontPoint]:
    """The direct and the gathered relay trees (synth.synthesis.relay) as front points, over every
    pair where that graph was made, else over the pairs they take (routed here: at thousands of
    ranks every pair is too many); none where the ranks have no groups or the routes file lacks
    a pair."""
    q = plan.graph.ranks_per_node
    groups = rank_groups(plan.topology, q)
    if groups is None:
        return []
    points = []
    for make in (RelayTrees.direct, RelayTrees.gathered):
        trees = make(sources, groups)
        if trees is None:
            return []
        graph = every_pair
        if graph is None:
            try:
                graph = pairs_graph(plan.topology, q, "relay", trees.node_pairs(q, reverse),
                                    None if plan.routes else plan.graph.router, routes=plan.routes)
            except SynthError as exc:
                say(f"no {trees.method}: {exc}")
                continue
        points.append(trees.point(graph, network, reverse, rounds_bound, functools.partial(make, sources, groups)))
        del trees
        say(f"{points[-1].steps} steps through {points[-1].method} ({len(np.unique(groups))} groups, "
            f"{graph.num_pairs:,} pairs): {points[-1].rounds} rounds")
    return points


def _every_pair_graph(plan: SynthesisPlan, say):
    if plan.graph.reach == "all":
        return plan.graph
    try:
        return transfer_graph(plan.topology, plan.graph.ranks_per_node, "all",
                              None if plan.routes else plan.graph.router, routes=plan.routes, limit=MAX_EVERY_PAIRS)
    except SynthError as exc:  # too many pairs, or a routes file without them: the plan's transfers stand alone
        say(f"no straight or per-layer points over every pair (relay trees take their own pairs): {exc}")
        return None


def _direct_point(spread: SpreadProblem, graph, network, reverse: bool, rounds_bound: int) -> FrontPoint:
    """Every block straight from its source to every rank in one step (reversed: every partial to
    the block's owner), over `graph`'s pairs (every pair): its rounds are the busiest channel's
    blocks. Made with arrays: each delivery has one sender, its block's source."""
    source = spread.sources[spread.item_block]
    a, b = (spread.item_rank, source) if reverse else (source, spread.item_rank)
    pair = graph.pair_index(a, b)
    step = np.zeros(len(pair), dtype=np.int64)
    rounds = delivery_rounds(graph, LoadClasses.channels(integer_bandwidth(network)), step, pair, 1)
    return FrontPoint(1, rounds, "optimal" if rounds <= rounds_bound else "feasible", 0.0,
                      (step, pair, spread.item_block.copy(), spread.item_rank.copy()), method="straight", graph=graph)


def _layered_points(plan: SynthesisPlan, sizes: tuple[int, ...], graph, network, reverse: bool,
                    per_byte: float, say) -> list[FrontPoint]:
    """The per-layer program's Pareto front (synth.synthesis.layers) as front points over `graph`
    (every pair): each stage priced once along its pairs' paths, forward or (reduce-scatter)
    reversed; then each point's blocks split between rotations of its order and in pipelined
    pieces, each priced whole, and of them all the points no other beats in both alpha terms and
    busiest bytes (a message's, whatever the split)."""
    p = graph.ranks
    classes = LoadClasses.channels(integer_bandwidth(network))
    ratio = float(network.channel_bandwidth[0]) / float(integer_bandwidth(network)[0])

    def choice(step, sender, receiver, block):
        a, b = (receiver, sender) if reverse else (sender, receiver)
        return step, graph.pair_index(a, b), block, receiver

    def priced(deliveries, blocks: int, steps: int):
        schedule = spread_schedule("allgather", graph, plan.topology.spec, blocks, REFERENCE_BYTES, deliveries, steps,
                                   reverse, None)
        return map_schedule(schedule, plan.topology, paths=transfer_paths(graph, schedule))

    def cost(stage: Stage):
        mapped = priced(choice(*stage_deliveries(sizes, stage, (), plan.chunks, 0)), p * plan.chunks, len(stage.steps))
        return float(mapped.port_messages.sum()), float(mapped.channel_bytes.sum())

    sequential = pareto_program(sizes, cost)
    found = [(c, 1, c.alphas, c.betas) for c in sequential]  # (combination, shares, alpha terms, betas a plan block)
    splits = [pipelined(c, k) for c in sequential for k in LAYERED_PIECES]
    for base in sequential + uniform(sizes, memory_layer=plan.graph.ranks_per_node > 1):
        splits += [rotated(base, sizes, leading, both_ways) for leading in range(2, len(sizes) + 1)
                   for both_ways in (False, True)]
    for split in splits:
        if split is None or p * (p - 1) * plan.chunks * split.shares > MAX_TREE_DELIVERIES:
            continue
        mapped = priced(choice(*split.deliveries(sizes, plan.chunks)), p * plan.chunks * split.shares, split.steps)
        found.append((split, split.shares, float(mapped.port_messages.sum()),
                      float(mapped.channel_bytes.sum()) / split.shares))
    if plan.graph.ranks_per_node > 1:  # the node's ranks gathered to a leader: one message a node's port per step
        q = plan.graph.ranks_per_node

        def leader_cost(stage: Stage):  # the stage among the leaders (the gather and broadcast: the same for all)
            alone = Leaders(Combination((stage,), 0.0, 0.0), q)
            mapped = priced(choice(*alone.network_deliveries(sizes, plan.chunks, 0)), p * plan.chunks, len(stage.steps))
            return float(mapped.port_messages.sum()), float(mapped.channel_bytes.sum())

        among = pareto_program(sizes[1:], leader_cost)
        for network in among + [rotated(c, sizes[1:], leading, both_ways) for c in among + uniform(sizes[1:], False)
                                for leading in range(2, len(sizes)) for both_ways in (False, True)]:
            if network is None or p * (p - 1) * plan.chunks * network.shares > MAX_TREE_DELIVERIES:
                continue
            # run backwards (a reduce-scatter), the direct gather is the leader scattering Q - 1 copies at one port
            whole = Leaders(network, q, "binomial" if reverse else "direct")
            blocks = p * plan.chunks * whole.shares
            mapped = priced(choice(*whole.deliveries(sizes, plan.chunks)), blocks, whole.steps)
            found.append((whole, whole.shares, float(mapped.port_messages.sum()),
                          float(mapped.channel_bytes.sum()) / whole.shares))
    kept = pareto([(alphas, betas) for _, _, alphas, betas in found])
    say(f"per layer: {len(sequential)} orders and choices on the front, {len(found) - len(sequential)} splits and "
        f"leader points priced, {sum(not isinstance(found[i][0], Combination) for i in kept)} of them kept")
    points = []
    for i in kept:
        combination, shares, _, _ = found[i]
        blocks = p * plan.chunks * shares
        made = choice(*combination.deliveries(sizes, plan.chunks))
        rounds = delivery_rounds(graph, classes, made[0], made[1], combination.steps)
        optimal = rounds <= rounds_lower_bound(per_byte * ratio, blocks)
        points.append(FrontPoint(combination.steps, rounds if shares == 1 else round(rounds / shares, 6),
                                 "optimal" if optimal else "feasible", 0.0, made, method=combination.label(sizes),
                                 graph=graph, blocks=blocks if shares > 1 else 0))
    return points


def _maker(plan: SynthesisPlan, half: str, point: FrontPoint, blocks: int, reverse: bool, symmetry, designed):
    """The function making a point's schedule: its deliveries (made when needed where lazy;
    translated to every rank where designed for representatives) as transfers per step."""
    def make() -> Schedule:
        deliveries = point.choice() if callable(point.choice) else point.choice
        if symmetry is not None:
            deliveries = translate(symmetry, plan.graph, deliveries, designed)
        return spread_schedule(half, point.graph or plan.graph, plan.topology.spec, blocks, REFERENCE_BYTES,
                               deliveries, point.steps, reverse, plan.root if half in ("broadcast", "reduce") else None)
    return make


def _status_for_any_schedule(point: FrontPoint, rounds_bound: int) -> FrontPoint:
    """A symmetric front point's status for any schedule (the program's "optimal" is among
    translation-invariant ones: optimal outright only where the rounds meet the bandwidth bound;
    the steps it proves least are the step bound). Its deliveries are translated when made."""
    if point.choice is None:
        return point
    status = point.status
    if status == "optimal" and point.rounds > rounds_bound:
        status = "feasible"
    return dataclasses.replace(point, status=status, invariant_status=point.status)


def transfer_paths(graph, schedule: Schedule):
    """The paths of a schedule's transfers between nodes, in order: each its pair's in the graph."""
    keys = graph.dst * graph.ranks + graph.src  # the pairs are sorted by (dst, src)
    found = np.searchsorted(keys, schedule.dst * graph.ranks + schedule.src)
    q = graph.ranks_per_node
    across = (schedule.src // q) != (schedule.dst // q)
    return graph.paths.select(found[across])


def _router_paths(topology, router: str | None, routes: dict | None):
    """How a point priced by map_schedule(schedule, topology, router, routes=routes) was routed:
    a function giving those paths (each step's transfers as one phase) of a schedule."""
    router = router or topology.default_router  # never the schedule's recorded paths: these are the router's
    return functools.partial(_routed, topology, router, routes)


def _routed(topology, router: str, routes: dict | None, schedule: Schedule):
    return routed_paths(schedule, topology, router, routes=routes)


def choose(parts: list[Part], size: int, alpha: float, bandwidth_bits: float) -> tuple[tuple[int, ...], float]:
    """Per part, the front point of least time at message size `size` (-1: the part is not used),
    and the total time: the synthesized parts together (an allreduce's two halves) or one whole
    part (the generated algorithms), whichever takes less; the synthesized ones on a tie."""
    best = [part.best(size, alpha, bandwidth_bits) for part in parts]
    halves = [i for i, part in enumerate(parts) if not part.whole]
    options = []
    if halves and all(best[i][1] < math.inf for i in halves):
        options.append((sum(best[i][1] for i in halves), halves))
    options += [(best[i][1], [i]) for i, part in enumerate(parts) if part.whole and best[i][1] < math.inf]
    if not options:
        missing = [part.collective for part, (_, time) in zip(parts, best) if time == math.inf]
        raise SynthError(f"no {missing[0]} schedule was found in the time given (--time-limit)")
    total, used = min(options, key=lambda option: option[0])
    return tuple(best[i][0] if i in used else -1 for i in range(len(parts))), total


def bands(plan: SynthesisPlan, parts: list[Part], sizes: list[int], alpha: float, bandwidth_bits: float) -> list[Band]:
    """Consecutive sizes that choose the same points, each with its schedule (verified, recorded)."""
    out: list[Band] = []
    groups: list[tuple[tuple[int, ...], list[int]]] = []
    for size in sizes:
        points, _ = choose(parts, size, alpha, bandwidth_bits)
        if groups and groups[-1][0] == points:
            groups[-1][1].append(size)
        else:
            groups.append((points, [size]))
    for points, members in groups:
        schedule = _joined(plan, parts, points, members[0])
        report = verify(schedule)
        if not report.ok:  # a bug of the synthesis, never written
            raise AssertionError(f"the synthesized {plan.collective} schedule is wrong: {report.violation}")
        schedule.synthesis = record(plan, parts, points, members, alpha, bandwidth_bits)
        out.append(Band(members, points, schedule))
    return out


def _joined(plan: SynthesisPlan, parts: list[Part], points: tuple[int, ...], size: int) -> Schedule:
    """The schedule of the chosen points at `size` (an allreduce: the reduce-scatter's steps, then
    the allgather's)."""
    from synth.collectives.schedule import ScheduleBuilder

    whole = [(part, k) for part, k in zip(parts, points) if k >= 0 and part.whole]
    if whole:  # an all-to-all's or a generated algorithm's, made again at the size's blocks (size exchanges kept)
        part, k = whole[0]
        made = part.makers[k](-(-size // part.blocks_of(k)))
        return dataclasses.replace(made, paths=part.routing[k](made))  # the paths it was priced on
    used = [(part, k) for part, k in zip(parts, points) if k >= 0]
    chosen = [part.schedule(k) for part, k in used]
    # each half along the paths it was priced on, the halves' transfers in order
    paths = Paths.concatenate([part.routing[k](schedule) for (part, k), schedule in zip(used, chosen)])
    # halves with blocks split in different shares: each block of a half split further, to their least common
    # multiple (block b's pieces b + j x blocks: the same rank's, as block b mod ranks is rank b's)
    blocks = math.lcm(*(schedule.blocks for schedule in chosen))
    per_block = -(-size // blocks)
    root = plan.root if collective(plan.collective).rooted else None
    builder = ScheduleBuilder(plan.collective, "synthesized", plan.topology.spec, plan.graph.ranks, blocks, per_block,
                              root=root, ranks_per_node=plan.graph.ranks_per_node)
    for schedule in chosen:
        split = blocks // schedule.blocks
        pieces = np.arange(split, dtype=np.int64) * schedule.blocks
        for src, dst, (counts, ids), op in _steps(schedule):
            builder.add_step(src, dst, (counts * split, (ids[:, None] + pieces[None, :]).ravel()), op)
    return dataclasses.replace(builder.build(), paths=paths)


def at_least(seconds: float, bound: float) -> float:
    """A time that meets its bound is the bound: the two are the same terms summed in another order,
    and may differ in the last bits; a time below the bound by more is a bug, and stays visible."""
    return bound if bound * (1 - 1e-9) <= seconds < bound else seconds


def record(plan: SynthesisPlan, parts: list[Part], points: tuple[int, ...], sizes: list[int], alpha: float,
           bandwidth_bits: float) -> dict:
    """What the file says of its synthesis: method, bounds, the front, the cost and gap per size,
    and an honest status (optimal only where every chosen point's rounds are proven least for its
    steps and the steps least; the gap is to the time bound of any schedule)."""
    used = [(part, k) for part, k in zip(parts, points) if k >= 0]
    statuses = [part.front[k].status for part, k in used]
    status = "optimal" if all(s == "optimal" for s in statuses) else \
        "feasible" if all(s in ("optimal", "feasible") for s in statuses) else "timeout"
    per_size = []
    for size in sizes:
        bound = plan.time_bound.seconds(size, alpha, bandwidth_bits)
        seconds = at_least(choose(parts, size, alpha, bandwidth_bits)[1], bound)
        per_size.append({"bytes": size, "seconds": seconds, "bound_seconds": bound,
                         "gap": (seconds - bound) / bound if bound > 0 else 0.0})
    return {
        "method": plan.method,
        "transfers": plan.graph.reach,
        "router": plan.graph.router,
        "chunks": plan.chunks,
        "status": status,
        "parts": [{"collective": part.collective, "least_steps": part.least_steps, "least_steps_status": part.least_status,
                   "one_round_steps": part.one_round, "one_round_status": part.one_round_status,
                   "steps": part.front[k].steps, "rounds": part.front[k].rounds, "status": part.front[k].status,
                   "method": part.front[k].method,
                   "transfers": part.front[k].reach or (part.front[k].graph or plan.graph).reach,
                   "router": (part.front[k].graph or plan.graph).router,
                   **({"optimal_among": part.front[k].among} if part.front[k].among else {}),
                   "front": [{"steps": f.steps, "rounds": f.rounds, "status": f.status, "method": f.method,
                              "router": (f.graph or plan.graph).router,
                              **({"invariant_status": f.invariant_status} if f.invariant_status else {})}
                             for f in part.front]}
                  for part, k in used],
        "bounds": {"steps": plan.step_bound.steps, "steps_why": plan.step_bound.why,
                   "messages": plan.time_bound.messages,
                   "busiest_bytes_per_byte": plan.time_bound.bandwidth.per_byte,
                   "bandwidth_why": plan.time_bound.bandwidth.why},
        "cost_model": {"alpha": alpha, "bandwidth_bits": bandwidth_bits},
        "sizes": per_size,
        **({"routing": plan.exchange.as_dict()} if plan.exchange is not None else {}),
    }


@dataclass
class SynthesizedCandidate:
    """The synthesized schedule as a column of `synth compare`: at each size the front points of
    least time (a schedule per size band), priced as the generated algorithms are."""

    plan: SynthesisPlan
    parts: list[Part]
    label: str = "synthesized"

    def time(self, size: int, alpha: float, bandwidth_bits: float) -> float:
        return at_least(choose(self.parts, size, alpha, bandwidth_bits)[1], self.bound(size, alpha, bandwidth_bits))

    def bound(self, size: int, alpha: float, bandwidth_bits: float) -> float:
        """The time bound of any schedule (the cut bound's bandwidth term: at least the others')."""
        return self.plan.time_bound.seconds(size, alpha, bandwidth_bits)


def compare_with_synthesis(comparison, topology, alpha: float, bandwidth_bits: float, time_limit: float,
                           say=lambda text: None):
    """`comparison` (synth.pricing.compare.Comparison) with the synthesized schedule as one more
    column and the cut bound in the bounds; where synthesis does not apply, one more "left out" line."""
    try:
        # an exchange's pairs are routed by its synthesis (the program), the others' by the comparison's router
        router = None if comparison.collective in EXCHANGES else comparison.router
        plan = plan_synthesis(comparison.collective, topology, router=router, time_limit=time_limit, say=say)
        # the comparison's algorithms are the generated part (priced along the same router), not made again
        parts = synthesize_parts(plan, time_limit, say=say, generated=comparison.candidates)
        candidate = SynthesizedCandidate(plan, parts)
        times = np.array([[candidate.time(n, alpha, bandwidth_bits)] for n in comparison.sizes])
    except SynthError as exc:
        return dataclasses.replace(comparison, skipped=[*comparison.skipped, f"synthesized: {exc}"])
    bounds = np.maximum(comparison.bounds, [candidate.bound(n, alpha, bandwidth_bits) for n in comparison.sizes])
    return dataclasses.replace(comparison, candidates=[*comparison.candidates, candidate],
                               times=np.hstack([comparison.times, times]), bounds=bounds)
