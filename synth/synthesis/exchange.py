"""All-to-all(v) synthesis by phases (issue 24): Prisacari20's OPT and LAT generalized to any network,
with Fan24's radix for small messages.

Under synth's cost model (synth.pricing.alphabeta) a step costs alpha x (the most messages one port
starts) + beta x (its busiest channel's bytes over bandwidth). A direct exchange (every block sent
once, from its source to its destination) split into phases is never cheaper than the same blocks
in one phase routed as well: the busiest channel of the whole demand carries at most the sum of
the phases' busiest loads, and a port that starts m messages in one step starts at least m over
the phases. So the bandwidth end of the front is one phase, routed at the least contention: the
path-selection program (synth.routing.path_selection, bytes objective) over every node pair with
its bytes, which ends at or near the ceiling of the multicommodity-flow LP bound lambda*
(synth.measure.lp_bound). lambda* bounds every schedule, forwarding ones included: a forwarded
block's hops form a walk from its source to its destination, a routing of its demand, so the
channels' loads summed over the steps are at least a fractional routing's. (Prisacari20's phases
matter where the model does not look: incast and buffers, issue 25's simulation.)

The latency end is forwarding: TuNA (Fan24), radix r from 2 up, whose K = ceil(log_r P) rounds
start fewer messages per port and move every block up to K times; routed along the same pair
paths. The front keeps the points that no other beats in both alpha terms and busiest bytes; per
message size the least time is chosen (a schedule per size band).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.measure.cuts import SWEEP_ROUTERS, sweep_cut_of
from synth.measure.forests import ForestRouting, check_memory, router_demand, spread
from synth.pricing.bounds import flow_bound, node_demand
from synth.routing.path_selection import route_phase_paths
from synth.routing.paths_options import PathsOptions, PathsReport
from synth.synthesis.symmetry import moved_channels, translation_group
from synth.synthesis.transfers import MAX_PAIRS, TransferGraph, pairs_graph, routes_label
from synth.topology.paths import Paths

ROUTER = "paths (one phase of every node pair, synth.synthesis.exchange)"
TRANSLATED = "translated (terminal 0's paths balanced over the channel orbits, synth.synthesis.exchange)"
FORESTS = "forests (every pair along shortest-path trees spread over the channels, synth.measure.forests)"
MAX_RADICES = 24  # TuNA radices tried: every one up to this many, else spread geometrically
SCALE_RADICES = 12  # and along forests (above MAX_PAIRS rank pairs), where each takes seconds
# node pairs up to which the program routes them (64 nodes: 4,032 pairs in 30 s; the candidates' tables grow with
# the square of the pairs)
PROGRAM_PAIRS = 8192
MAX_MULTISETS = 16  # minimal multisets of channel orbits kept per destination (a torus: 2 per half-way dimension)


@dataclass(frozen=True)
class ExchangeRouting:
    """Every rank pair along its path (the program's, or a router's), and the least busiest load of
    any schedule that this knows."""

    graph: TransferGraph
    lp: float  # a lower bound on lambda*: blocks (alltoallv: bytes) over bandwidth on the busiest channel
    lp_why: str  # where it comes from: the LP, or the best sweep cut
    granule: int  # 1: the router-to-router channels have bandwidth 1, loads of whole blocks are whole; 0: they differ
    report: PathsReport | None = None  # the program's, where it routed the pairs
    options: PathsOptions | None = None  # the program's options, where it routed the pairs
    forests: ForestRouting | None = None  # above MAX_PAIRS: the pairs along forests, no path listed (graph has no pairs)

    def bound(self, floor: float) -> float:
        """The least busiest load, summed over the steps, of a schedule that moves every block whole
        along one path: lambda* rounded up to whole blocks (alltoallv: bytes) where the
        router-to-router channels have bandwidth 1 (their loads are then whole blocks), or `floor`,
        the terminal links'. A schedule that splits blocks (MD, DO) is bounded by lambda* itself."""
        return max(rounded(self.lp, self.granule), floor)

    @property
    def num_pairs(self) -> int:
        """The rank pairs routed: the graph's, or every ordered pair where forests route them."""
        ranks = self.graph.ranks
        return ranks * (ranks - 1) if self.forests is not None else self.graph.num_pairs

    def as_dict(self) -> dict:
        forests = {} if self.forests is None else {"forests": {
            "forests": self.forests.forests, "spreading_steps": self.forests.steps,
            "lambda_lower": self.forests.lower, "lambda_upper": self.forests.upper}}
        return {**({"program": self.report.as_dict()} if self.report is not None else {}), **forests,
                "flow_bound": self.lp, "flow_bound_why": self.lp_why}


def exchange_schedule(name: str, topology, ranks_per_node: int, matrix, algorithm: str, radix, block_bytes: int):
    from synth.collectives.algorithms import ALGORITHMS, Request, grid_shape

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


def route_exchange(topology, ranks_per_node: int, sizes: np.ndarray | None, time_limit: float, solver: str,
                   router: str | None = None, say=lambda text: None, routes: dict | None = None) -> ExchangeRouting:
    """The path of every node pair when all of them send at once: translation-invariant where the
    network has translations (an alltoall, one rank per node: translated_paths), else chosen by the
    path-selection program (bytes over bandwidth) up to PROGRAM_PAIRS node pairs, else (or with
    `router`) the router's, or (`routes`) a routes file's; the transfer graph of every rank pair along them; the LP bound up to LP_PAIRS (its
    certified lower end where it runs out of time), and the sweep cut bound. `time_limit`: wall-clock
    seconds for the path-selection program, the run's whole budget (synth.solve.budget)."""
    network = topology.network()
    n, q = network.num_terminals, ranks_per_node
    pairs = n * (n - 1) * q * q + n * q * (q - 1)
    if pairs > MAX_PAIRS:
        if routes is not None or router is not None:
            raise SynthError(f"{topology.spec}: an all-to-all of {n * q:,} ranks joins {pairs:,} rank pairs, more than "
                             f"the {MAX_PAIRS:,} a synthesis routes by --router or --routes (without them: forests)")
        return forest_exchange(topology, q, sizes, time_limit, say)
    a, b, weights = node_demand(network, q, sizes)
    report, options = None, None
    lp, why = flow_bound(network, q, sizes, say, lp_seconds=time_limit)  # the LP too within the command's limit
    granule = 1 if unit_router_links(network) else 0
    paths, name = None, router
    if routes is not None:  # the fabric's own paths: neither translated nor chosen
        from synth.pricing.schedule_cost import paths_from_routes

        paths, name, router = paths_from_routes(routes, topology, a, b), routes_label(routes), routes_label(routes)
    if router is None and sizes is None and q == 1:  # tori, HyperX: a translation-invariant routing
        paths, name = translated_paths(topology, say), TRANSLATED
    if router is None and len(a) <= PROGRAM_PAIRS and (
            paths is None or _busiest(network, paths, weights) > rounded(lp, granule) * (1 + 1e-9)):
        # (an even ring's half-way pairs all turn one way when translated: the program splits them)
        say(f"routing {len(a):,} node pairs as one phase (path-selection program)")
        options = PathsOptions(candidates="all", solver=solver, time_limit=time_limit, objective="bytes",
                               wall_clock=True)  # the run's budget (synth.solve.budget), all of it
        chosen, report = route_phase_paths(topology, a, b, options, seed=0, weights=weights)
        say(f"routed: {report.progress_text()}")
        if paths is None or _busiest(network, chosen, weights) < _busiest(network, paths, weights):
            paths, name = chosen, ROUTER
        else:
            report = None
    if paths is None:
        name = router or topology.default_router
        say(f"routing {len(a):,} node pairs by {name}" + ("" if len(a) <= PROGRAM_PAIRS else
            f" (more than the {PROGRAM_PAIRS:,} the program takes)"))
        graph = pairs_graph(topology, q, "all", (a, b), name)
    else:
        graph = pairs_graph(topology, q, "all", (a, b), name, node_paths=paths)
    return ExchangeRouting(graph, lp, why, granule, report, options if report is not None else None)


def forest_exchange(topology, ranks_per_node: int, sizes: np.ndarray | None, time_limit: float,
                    say=lambda text: None) -> ExchangeRouting:
    """Every rank pair along forests (synth.measure.forests): an exchange too large to list its
    pairs' paths (above MAX_PAIRS). Spreading starts from the translated forest where the network
    has translations, for `time_limit` seconds of wall clock at most; the bound is the larger of its
    certified lambda* lower end and the sweep cut."""
    network = topology.network()
    q = ranks_per_node
    check_memory(network)
    demand = router_demand(network, q, sizes)
    first = translated_forest(topology) if q == 1 else None
    say(f"routing {network.num_terminals * q:,} ranks' pairs along forests (spreading within {time_limit:g} s)")
    forests = spread(network, demand, time_limit, say, first=first)
    cut, cut_why = sweep_cut_of(network, demand, eigenvectors=network.num_nodes - network.num_terminals <= SWEEP_ROUTERS)
    lp, why = forests.lower, (f"the multicommodity-flow LP's certified lower end after {forests.steps} spreading steps "
                              f"(lambda* <= {forests.upper:.6g})")
    if cut > lp * (1 + 1e-9):
        lp, why = cut, cut_why
    granule = 1 if unit_router_links(network) else 0
    empty = np.zeros(0, dtype=np.int64)
    graph = TransferGraph(network.num_terminals * q, q, "all", empty, empty,
                          Paths(np.zeros(1, dtype=np.int64), empty), empty, FORESTS)
    return ExchangeRouting(graph, lp, why, granule, forests=forests)


def _busiest(network, paths: Paths, weights: np.ndarray) -> float:
    """The busiest router-to-router channel's load over bandwidth, every node pair's path weighed."""
    n = network.num_terminals
    load = np.bincount(paths.channels, weights=np.repeat(weights, paths.lengths()).astype(np.float64),
                       minlength=network.num_channels) / network.channel_bandwidth
    between = (network.channel_src >= n) & (network.channel_dst >= n)
    return float(load[between].max(initial=0.0))


def _translations(topology):
    """The network's translation group (synth.synthesis.symmetry.translation_group), the network and
    its channels between routers; None where it has no such translations."""
    group = translation_group(topology)
    if group is None:
        return None
    network = topology.network()
    n = network.num_terminals
    return group, network, np.flatnonzero((network.channel_src >= n) & (network.channel_dst >= n))


def translated_paths(topology, say=lambda text: None) -> Paths | None:
    """Every node pair's path (in node_demand's order) of a translation-invariant routing: where the
    network's translations act freely and transitively on its terminals (tori, HyperX), the paths
    from terminal 0 are chosen and every pair (s, t) takes the image of 0's path to g^-1(t) under
    the translation g moving 0 to s. Its loads follow from 0's paths alone: a channel of orbit O
    carries |G| / |O| times the crossings of O by them (orbit-stabilizer), so the choice is small.

    A minimal path in a Cayley graph of an abelian group is any ordering of its multiset of letters
    (the channel orbits it crosses), so the candidates of a destination are its minimal multisets
    (found breadth-first, at most MAX_MULTISETS each), each laid out as a path in orbit order; a
    greedy choice in decreasing order of destinations' distance, then moves off the busiest orbit
    while one lowers it. None where there are no such translations."""
    found = _translations(topology)
    if found is None:
        return None
    (nodes, channel_class, class_size), network, between = found
    n = network.num_terminals
    src, dst = network.channel_src, network.channel_dst
    classes = len(class_size)
    repeat = len(nodes) / class_size  # a crossing of orbit O by 0's paths loads each channel of O this often
    # routers breadth-first from terminal 0's router, each with its minimal multisets of orbits (count vectors)
    injection = np.flatnonzero(src < n)
    first = {int(src[c]): int(c) for c in injection[::-1]}
    start = int(dst[first[0]])
    out: dict[int, list[int]] = {}
    for c in between.tolist():
        out.setdefault(int(src[c]), []).append(c)
    multisets = {start: [np.zeros(classes, dtype=np.int64)]}
    frontier = [start]
    while frontier:
        grown: dict[int, list[np.ndarray]] = {}
        for r in frontier:
            for c in out.get(r, []):
                t = int(dst[c])
                if t in multisets:
                    continue
                options = grown.setdefault(t, [])
                for m in multisets[r]:
                    m = m.copy()
                    m[channel_class[c]] += 1
                    if len(options) < MAX_MULTISETS and not any(np.array_equal(m, o) for o in options):
                        options.append(m)
        multisets.update(grown)
        frontier = list(grown)
    if len(multisets) != network.num_nodes - n:
        return None
    router_of = dst[np.array([first[t] for t in range(n)])]
    items = [multisets[int(router_of[t])] for t in range(1, n)]  # per terminal t != 0: its router's candidates
    load = np.zeros(classes)
    chosen = [0] * len(items)
    for i in sorted(range(len(items)), key=lambda i: (-int(items[i][0].sum()), i)):
        # greedy, farthest first: the candidate keeping the busiest orbit lowest, then the squares
        best = min(range(len(items[i])), key=lambda k: (float(np.max(load + repeat * items[i][k])),
                                                        float(((load + repeat * items[i][k]) ** 2).sum()), k))
        chosen[i] = best
        load += repeat * items[i][best]
    improved = True
    while improved:  # move an item so that the busiest orbits get fewer or lower, while one does
        improved = False
        top = load.max()
        for i in range(len(items)):
            here = items[i][chosen[i]]
            for k, other in enumerate(items[i]):
                trial = load + repeat * (other - here)
                lower = trial.max() < top - 1e-9 or (
                    trial.max() <= top + 1e-9 and (trial >= top - 1e-9).sum() < (load >= top - 1e-9).sum())
                if k != chosen[i] and lower:
                    load, chosen[i], improved = trial, k, True
                    break
            if improved:
                break
    say(f"translated routing: busiest orbit {load.max():g} messages")
    by_class = {(int(src[c]), int(channel_class[c])): c for c in between.tolist()}
    rows = []
    for t in range(1, n):
        path, r = [first[0]], start
        for cls, count in enumerate(items[t - 1][chosen[t - 1]].tolist()):
            for _ in range(count):
                c = by_class[(r, cls)]
                path.append(c)
                r = int(dst[c])
        path.append(int(np.flatnonzero(dst == t)[0]))  # its ejection link
        rows.append(path)
    base = Paths(np.concatenate([[0], np.cumsum([len(p) for p in rows])]).astype(np.int64),
                 np.array([c for p in rows for c in p], dtype=np.int64))
    # pair (s, t) = (g(0), g(u)): g the element moving 0 to s, u = g^-1(t)
    element = np.empty(n, dtype=np.int64)
    element[nodes[:, 0]] = np.arange(n)
    moved = moved_channels(network, nodes, base.channels)  # (|G|, channels of 0's paths)
    a, b, _ = node_demand(network, 1, None)
    g = element[a]
    u = np.argsort(nodes[:, :n], axis=1)[g, b]
    lengths = base.lengths()[u - 1]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    index = np.repeat(base.offsets[u - 1] - offsets[:-1], lengths) + np.arange(offsets[-1])
    return Paths(offsets, moved[np.repeat(g, lengths), index])


def translated_forest(topology) -> tuple[np.ndarray, np.ndarray] | None:
    """A shortest-path forest (synth.measure.forests: parents and channels into every router, per
    source router) that is one tree moved by the network's translations, where it has them (tori,
    HyperX); else None. The tree from terminal 0's router is grown leaves first: every router, in
    decreasing distance, enters by the tight channel of the orbit its subtree loads least so far.
    Moved to every source, a tree's crossings of an orbit load each of its channels alike
    (orbit-stabilizer, as translated_paths), so the orbits' balance is the routing's (the greedy's:
    on the 64 x 64 torus's uniform exchange 2.8% above lambda*, which spreading then lowers)."""
    from synth.measure.forests import terminal_links

    found = _translations(topology)
    if found is None:
        return None
    (nodes, channel_class, _), network, between = found
    n = network.num_terminals
    router_of, _, _ = terminal_links(network)
    r = network.num_nodes - n
    src, dst = network.channel_src, network.channel_dst
    tail, head = src[between] - n, dst[between] - n
    root = int(router_of[0])
    depth = np.full(r, -1, dtype=np.int64)
    depth[root], frontier = 0, [root]
    out: dict[int, list[int]] = {}
    for c, t in zip(between.tolist(), tail.tolist()):
        out.setdefault(t, []).append(c)
    while frontier:
        grown = []
        for u in frontier:
            for c in out.get(u, []):
                v = int(dst[c]) - n
                if depth[v] < 0:
                    depth[v] = depth[u] + 1
                    grown.append(v)
        frontier = grown
    if (depth < 0).any():
        return None
    entering: dict[int, list[int]] = {}
    for c, t, h in zip(between.tolist(), tail.tolist(), head.tolist()):
        if depth[t] == depth[h] - 1:
            entering.setdefault(h, []).append(c)
    per_router = np.bincount(router_of, minlength=r).astype(np.float64)
    subtree = per_router.copy()  # the terminals below each router so far: its channel's load, per source terminal
    crossing = np.zeros(int(channel_class.max()) + 1)
    parent0 = np.full(r, -1, dtype=np.int64)
    into0 = np.full(r, -1, dtype=np.int64)
    for v in sorted(range(r), key=lambda v: (-int(depth[v]), v)):
        if v == root:
            continue
        c = min(entering[v], key=lambda c: (crossing[channel_class[c]], c))
        crossing[channel_class[c]] += subtree[v]
        parent0[v], into0[v] = int(src[c]) - n, c
        subtree[parent0[v]] += subtree[v]
    # the element moving the root to each router s (terminal 0 to a terminal of s), and the tree moved by it
    element = np.full(r, -1, dtype=np.int64)
    images = router_of[nodes[:, 0]]
    element[images[::-1]] = np.arange(len(nodes))[::-1]
    if (element < 0).any():
        return None
    g = nodes[element]  # (r, nodes): per source router its element's node map
    others = np.flatnonzero(np.arange(r) != root)
    moved = moved_channels(network, g, into0[others])  # (r, r - 1)
    parent = np.full((r, r), -1, dtype=np.int16)
    into = np.full((r, r), -1, dtype=np.int32)
    rows = np.arange(r)[:, None]
    targets = g[:, n + others] - n
    parent[rows, targets] = g[:, n + parent0[others]] - n
    into[rows, targets] = moved
    return parent, into


def unit_router_links(network) -> bool:
    """Whether every router-to-router channel has bandwidth 1 (its loads are then whole messages)."""
    n = network.num_terminals
    between = (network.channel_src >= n) & (network.channel_dst >= n)
    return bool((network.channel_bandwidth[between] == 1).all())


def rounded(value: float, granule: int) -> float:
    """`value` rounded up to a multiple of `granule` (0: as it is)."""
    return granule * math.ceil(value / granule - 1e-9) if granule else value


def radices(ranks: int, most: int = MAX_RADICES) -> list[int]:
    """TuNA's radices to try: 2..P-1, or `most` of them spread geometrically."""
    if ranks - 2 <= most:
        return list(range(2, ranks))
    picks = np.unique(np.round(np.geomspace(2, ranks - 1, most)).astype(np.int64))
    return [int(r) for r in picks]


def pareto(points: list[tuple[float, float]]) -> list[int]:
    """The indices of points (alpha terms, busiest bytes) that no other beats in both (ties: the
    first), ordered by alpha terms."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1], i))
    kept, least = [], math.inf
    for i in order:
        if points[i][1] < least:
            kept.append(i)
            least = points[i][1]
    return kept
