"""The LP bound of any network: minimum-congestion multicommodity flow, relaxed and certified.

No routing, however chosen, puts fewer messages on its busiest router-to-router channel than
the optimum lambda* of the fractional problem (one commodity per router pair (a, b) with
messages between them, d_ab of them)

    minimize lambda  subject to  sum over the paths P of (a, b) of x_P = d_ab   for every pair,
                                 sum over the paths P through c of x_P <= bandwidth(c) * lambda
                                                                            for every channel c,  x >= 0.

Messages are whole, so some channel of bandwidth 1 carries at least ceil(lambda*) of them: that
integer is the bound (a tolerance absorbs the solvers' rounding). With per-message `weights` (bytes,
for path selection's bytes objective) d_ab is the pair's bytes. Every channel's load is then a
multiple of g, the greatest common divisor of the messages' bytes: the LP runs in units of g and
the bound is g ceil(lambda*/g) bytes (with equal messages of s bytes: s times the message bound).
Byte counts are large numbers, so this bound is taken from the certified lower end of the bracket
with a relative tolerance as well: it may be a unit below g ceil(lambda*/g), never above. Terminal links are left out:
their load is fixed by the workload (synth.measure.contention_bounds gives it). This is the certificate the
path-selection synthesizer is measured against.

Every step brackets lambda* between two certified numbers:
- lower: for any channel lengths y >= 0, lambda* >= sum over pairs of d_ab dist_y(a, b) / sum over
  channels of bandwidth(c) y_c (weak LP duality; every path of (a, b) is at least dist_y(a, b) long);
- upper: the maximum utilization of any fractional routing of the demand.
Two stages tighten the bracket, each stopping as soon as ceil(lower) = ceil(upper), when the
integer bound is known (status "rounded"; "optimal" when lower meets upper):
1. load spreading (multiplicative weights, fictitious play): route every pair along its shortest
   path under lengths that grow exponentially with the average flow's utilization; the average
   flow is the upper bound, the lengths give the lower one. Cheap (one Dijkstra per source router
   per step), and on random permutations it settles the integer within a second.
2. column generation (Ford and Fulkerson's): a restricted master LP over every path stage 1
   visited (HiGHS's interior point method through scipy: the master is degenerate, simplex crawls),
   priced by Dijkstra with the capacity rows' duals as lengths; a pair whose shortest path is
   shorter than its demand row's dual enters. With no such path the master's value is lambda*.
`exact=True` runs stage 2 to the end for lambda* itself. A time limit stops either stage with
status "gap": the bound is then ceil(lower), valid but possibly below ceil(lambda*).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from synth.core.errors import SynthError
from synth.core.interrupt import native

TOLERANCE = 1e-6  # on lambda*, when rounding it up to whole messages
RELATIVE_TOLERANCE = 1e-10  # and relative to it, on weighed demand (bytes; float sums of large numbers)
CONVERGED = 1e-9  # relative gap between the master's value and the dual bound at which the LP is solved
NUDGE = 1e-9  # added to every length so that Dijkstra sees zero-length channels (corrected in the bound)
MAX_ROUNDS = 1000
SPREAD_STEPS = 100  # load-spreading steps (stage 1) at most
SHARPNESS = 8.0  # how strongly its channel lengths grow with utilization
MAX_PAIRS = 1 << 22  # router pairs with messages: each is a demand row and at least one column
MAX_DISTANCES = 1 << 27  # source routers x routers: Dijkstra's distance and predecessor matrices, 12 B per cell


LP_TIME_LIMIT = 600.0  # seconds per phase, by default (`synth bounds --lp`)


@dataclass(frozen=True)
class LpBound:
    lower: float  # certified: lower <= lambda* <= upper
    upper: float
    bound: int  # the integer bound on messages per channel: ceil(lower), = ceil(lambda*) unless status is "gap"
    status: str  # "optimal" (lower = upper = lambda*), "rounded" (ceil(lambda*) known) or "gap" (out of time)
    steps: int = 0  # load-spreading steps
    rounds: int = 0  # column-generation rounds

    @property
    def value(self) -> float:
        """lambda* when the status is "optimal"; otherwise its certified lower bound."""
        return self.lower


class _RouterGraph:
    """The router links of a network, for pricing: per ordered router pair the cheapest of its
    parallel channels, and the paths Dijkstra finds as channel ids."""

    def __init__(self, network):
        n = network.num_terminals
        self.routers = network.num_nodes - n
        self.channels = np.flatnonzero((network.channel_src >= n) & (network.channel_dst >= n))
        self.tail = network.channel_src[self.channels] - n
        self.head = network.channel_dst[self.channels] - n
        self.bandwidth = network.channel_bandwidth[self.channels].astype(float)
        key = self.tail * self.routers + self.head
        self.pair_keys, self.pair_of = np.unique(key, return_inverse=True)

    @property
    def hop_slack(self) -> float:
        """How much NUDGE a shortest path's distance can carry (at most routers - 1 hops)."""
        return NUDGE * max(self.routers - 1, 1)

    def cheapest(self, length: np.ndarray) -> tuple[csr_matrix, np.ndarray]:
        """The graph of per-pair minimum lengths (plus NUDGE) and, per router pair, the channel
        index (into self.channels) that attains it (the lowest index on a tie)."""
        order = np.lexsort((np.arange(len(length)), length, self.pair_of))
        first = np.ones(len(order), dtype=bool)
        first[1:] = self.pair_of[order[1:]] != self.pair_of[order[:-1]]
        best = order[first]  # one channel per pair, in pair_keys order
        graph = csr_matrix((length[best] + NUDGE, (self.pair_keys // self.routers, self.pair_keys % self.routers)),
                           shape=(self.routers, self.routers))
        return graph, best

    def shortest(self, length: np.ndarray, sources: np.ndarray, a: np.ndarray, b: np.ndarray):
        """Dijkstra from every source router under `length`: the distance of every pair (a, b)
        (with NUDGE per hop) and a function giving the channel path of chosen pairs."""
        graph, best = self.cheapest(length)
        distance, predecessor = dijkstra(graph, directed=True, indices=sources, return_predecessors=True)
        row = np.searchsorted(sources, a)

        def paths(chosen: np.ndarray) -> list[np.ndarray]:
            at, hops = b[chosen].copy(), []
            while (at != a[chosen]).any():  # walk back to the source, all pairs at once
                back = predecessor[row[chosen], at]
                moving = at != a[chosen]
                hop = np.where(moving, back * self.routers + at, -1)
                hops.append(np.where(moving, best[np.searchsorted(self.pair_keys, np.maximum(hop, 0))], -1))
                at = np.where(moving, back, at)
            stacked = np.asarray(hops[::-1]).T if hops else np.zeros((len(chosen), 0), dtype=np.int64)
            return [p[p >= 0] for p in stacked]

        return distance[row, b], paths


def _router_pairs(network, src, dst, weights=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (source router, destination router, messages or their weight) of every pair of distinct routers."""
    n = network.num_terminals
    injection = np.flatnonzero(network.channel_src < n)
    if len(injection) != n or (network.channel_dst[injection] < n).any():
        raise SynthError(f"{network.spec}: the LP bound needs every terminal attached to one router by one link")
    to_router = np.full(n, -1, dtype=np.int64)
    to_router[network.channel_src[injection]] = network.channel_dst[injection] - n
    a, b = to_router[np.asarray(src)], to_router[np.asarray(dst)]
    moving = a != b
    routers = network.num_nodes - n
    keys, pair = np.unique(a[moving] * routers + b[moving], return_inverse=True)
    weights = None if weights is None else np.asarray(weights, dtype=np.float64)[moving]
    demand = np.bincount(pair.ravel(), weights=weights, minlength=len(keys)).astype(float)
    return keys // routers, keys % routers, demand


class _Master:
    """The restricted master LP: variables lambda and one flow per path column; rows the channels'
    capacities (sum of the paths through c - bandwidth(c) lambda <= 0) and the pairs' demands.
    Solved from scratch each round by HiGHS's interior point method through scipy (the master is
    degenerate: simplex crawls; and highspy cannot share a process with OR-Tools, which links its
    own HiGHS, see synth.solve)."""

    def __init__(self, bandwidth: np.ndarray, demand: np.ndarray):
        self.bandwidth, self.demand = bandwidth, demand
        self.pairs: list[np.ndarray] = []
        self.paths: list[np.ndarray] = []

    def add_paths(self, pairs: np.ndarray, paths: list[np.ndarray]) -> None:
        self.pairs.append(np.asarray(pairs, dtype=np.int64))
        self.paths.extend(paths)

    def solve(self, deadline: float) -> tuple[float, np.ndarray, np.ndarray] | None:
        """The master's value, the channel lengths y >= 0 and the pairs' duals pi (None: out of time)."""
        c, k, columns = len(self.bandwidth), len(self.demand), len(self.paths)
        lengths = np.fromiter((len(p) for p in self.paths), dtype=np.int64, count=columns)
        through = np.concatenate(self.paths) if columns else np.zeros(0, dtype=np.int64)
        owner = np.repeat(np.arange(1, columns + 1), lengths)  # column 0 is lambda
        capacity = csr_matrix((np.concatenate([np.ones(len(through)), -self.bandwidth]),
                               (np.concatenate([through, np.arange(c)]), np.concatenate([owner, np.zeros(c, dtype=np.int64)]))),
                              shape=(c, columns + 1))
        demand_rows = csr_matrix((np.ones(columns), (np.concatenate(self.pairs), np.arange(1, columns + 1))),
                                 shape=(k, columns + 1))
        cost = np.zeros(columns + 1)
        cost[0] = 1.0
        # HiGHS offers no way to stop it from outside: under `native`, an interrupt leaves it to
        # its time limit in a daemon thread and the run ends at once (synth.core.interrupt).
        result = native(lambda: linprog(cost, A_ub=capacity, b_ub=np.zeros(c), A_eq=demand_rows, b_eq=self.demand,
                                        bounds=(0, None), method="highs-ipm",
                                        options={"time_limit": max(1.0, deadline - time.monotonic())}))
        if result.status == 1:  # iteration or time limit
            return None
        if result.status != 0:
            raise SynthError(f"the LP bound's master problem was not solved: {result.message}")
        return float(result.fun), np.maximum(-result.ineqlin.marginals, 0.0), result.eqlin.marginals


def _dual_bound(graph, demand, length, distance) -> float:
    """The weak-duality bound sum d dist_y / sum b y of channel lengths y (0 for y = 0). The
    distances may carry up to graph.hop_slack of NUDGE."""
    weight = float(graph.bandwidth @ length)
    return float(demand @ np.maximum(distance - graph.hop_slack, 0.0)) / weight if weight > 0 else 0.0


def _integer(value: float, weighed: bool = False) -> int:
    """ceil(value), a tolerance below (relative too for weighed demand: large numbers)."""
    return int(math.ceil(value - TOLERANCE - (RELATIVE_TOLERANCE * abs(value) if weighed else 0.0)))


class _Bracket:
    """lower <= lambda* <= upper, tightened step by step, with what settles the integer bound."""

    def __init__(self, exact: bool, deadline: float, weighed: bool = False):
        self.lower, self.upper, self.exact, self.deadline, self.weighed = 0.0, math.inf, exact, deadline, weighed

    def tighten(self, lower: float | None = None, upper: float | None = None) -> None:
        self.lower = max(self.lower, lower) if lower is not None else self.lower
        self.upper = min(self.upper, upper) if upper is not None else self.upper

    @property
    def solved(self) -> bool:
        return self.upper - self.lower <= CONVERGED * max(1.0, self.upper)

    @property
    def settled(self) -> bool:
        return self.solved or (not self.exact and _integer(self.lower, self.weighed) == _integer(self.upper, self.weighed))

    @property
    def out_of_time(self) -> bool:
        return time.monotonic() > self.deadline


class _Columns:
    """The paths handed to the master, each (pair, channels) once."""

    def __init__(self, master):
        self.master, self.seen = master, set()

    def add(self, pairs: np.ndarray, paths: list[np.ndarray]) -> int:
        fresh = [(k, p) for k, p in zip(pairs.tolist(), paths) if (k, p.tobytes()) not in self.seen]
        self.seen.update((k, p.tobytes()) for k, p in fresh)
        if fresh:
            self.master.add_paths(np.array([k for k, _ in fresh]), [p for _, p in fresh])
        return len(fresh)


def _spread(graph, pairs, demand, first: list[np.ndarray], bracket: _Bracket, columns: _Columns) -> int:
    """Stage 1 (load spreading): route every pair along its shortest path under lengths
    exp(SHARPNESS (u / max u - 1)) of the average flow's utilization u, from the minimal paths on,
    handing every path it visits to the master. Returns the steps taken."""
    sources, a, b = pairs
    everyone = np.arange(len(a))
    flow = np.zeros(len(graph.channels))
    found = first
    for step in range(1, SPREAD_STEPS + 1):
        flow += np.bincount(np.concatenate(found), weights=np.repeat(demand, [len(p) for p in found]), minlength=len(flow))
        utilization = flow / step / graph.bandwidth
        bracket.tighten(upper=float(utilization.max()))
        length = np.exp(SHARPNESS * (utilization / utilization.max() - 1.0))
        distance, paths = graph.shortest(length, sources, a, b)
        bracket.tighten(lower=_dual_bound(graph, demand, length, distance))
        if bracket.settled or bracket.out_of_time:
            return step
        found = paths(everyone)
        columns.add(everyone, found)
    return SPREAD_STEPS


def _generate(graph, pairs, demand, master, bracket: _Bracket, columns: _Columns) -> int:
    """Stage 2 (column generation) from the paths stage 1 visited. Returns the rounds taken."""
    sources, a, b = pairs
    for rounds in range(1, MAX_ROUNDS + 1):
        solution = master.solve(bracket.deadline)
        if solution is None:
            return rounds
        value, length, pi = solution
        bracket.tighten(upper=value)
        distance, paths = graph.shortest(length, sources, a, b)
        bracket.tighten(lower=_dual_bound(graph, demand, length, distance))
        improving = np.flatnonzero(distance < pi - CONVERGED * max(1.0, value))
        if not len(improving):  # the master's optimum is the full problem's
            bracket.tighten(lower=value)
        if bracket.settled or bracket.out_of_time:
            return rounds
        if not columns.add(improving, paths(improving)):  # only paths it has: the duals misprice by rounding
            bracket.tighten(lower=value)
            return rounds
    return MAX_ROUNDS


def lp_bound(network, src: np.ndarray, dst: np.ndarray, exact: bool = False, time_limit: float = 600.0,
             weights: np.ndarray | None = None) -> LpBound:
    """The LP bound of one flow set (one phase) on a direct network (terminals on one router each):
    ceil(lambda*) with lambda* bracketed, or with `exact` lambda* itself (status "optimal"). With
    `weights` (a whole number of bytes per message) the demand and the bound are in bytes."""
    a, b, demand = _router_pairs(network, src, dst, weights)
    if not len(a):
        return LpBound(0.0, 0.0, 0, "optimal")
    if len(a) > MAX_PAIRS:
        raise SynthError(f"the LP bound would have {len(a):,} router pairs, more than the {MAX_PAIRS:,} it handles")
    graph = _RouterGraph(network)
    pairs = (np.unique(a), a, b)
    if len(pairs[0]) * graph.routers > MAX_DISTANCES:
        raise SynthError(f"the LP bound would keep {len(pairs[0]):,} x {graph.routers:,} router distances, more than the "
                         f"{MAX_DISTANCES:,} that fit this machine's memory")
    distance, _ = graph.shortest(np.zeros(len(graph.channels)), *pairs)  # minimal paths (NUDGE per hop)
    if np.isinf(distance).any():
        i = int(np.argmax(np.isinf(distance)))
        raise SynthError(f"{network.spec}: router {a[i]} cannot reach router {b[i]}")
    return solve_congestion_lp(graph, pairs, demand, exact, time_limit, granule=None if weights is None else byte_granule(weights))


def byte_granule(weights) -> int:
    """The greatest common divisor of the messages' bytes (1 when none or all are empty): every
    channel's load in bytes is a multiple of it."""
    return max(1, int(np.gcd.reduce(np.asarray(weights, dtype=np.int64)))) if len(weights) else 1


def solve_congestion_lp(graph, pairs, demand: np.ndarray, exact: bool = False, time_limit: float = 600.0,
                        spread_only: bool = False, granule: int | None = None) -> LpBound:
    """Both stages on any path space: `graph` prices paths (shortest(length, sources, a, b) gives
    every pair's cheapest path length and its channels; `channels`, `bandwidth`, `hop_slack`), so
    the path-selection router (synth.routing.path_selection) runs the same LP over its candidates.
    `spread_only` stops after stage 1 (the bracket it reached, status "gap" unless settled).
    A `granule` g says the demand is weighed (bytes, every load a multiple of g): the LP runs on
    demand / g and the result is stated in bytes, the integer bound g ceil(lambda*/g) from the
    bracket's certified lower end."""
    if not (np.asarray(demand) > 0).any():  # nothing to carry (every message empty): no channel is loaded
        return LpBound(0.0, 0.0, 0, "optimal")
    weighed = granule is not None
    unit = float(granule) if weighed else 1.0
    demand = demand / unit
    bracket = _Bracket(exact, time.monotonic() + time_limit, weighed)
    distance, paths = graph.shortest(np.zeros(len(graph.channels)), *pairs)
    master = _Master(graph.bandwidth, demand)
    columns = _Columns(master)
    first = paths(np.arange(len(pairs[1])))
    columns.add(np.arange(len(pairs[1])), first)
    steps = _spread(graph, pairs, demand, first, bracket, columns)
    done = bracket.settled or bracket.out_of_time or spread_only
    rounds = 0 if done else _generate(graph, pairs, demand, master, bracket, columns)
    if bracket.solved:  # lower and upper agree within CONVERGED, far inside TOLERANCE: lambda* is the master's value
        value = bracket.lower if weighed else bracket.upper
        return LpBound(bracket.upper * unit, bracket.upper * unit, _integer(value, weighed) * int(unit), "optimal", steps, rounds)
    status = "rounded" if bracket.settled else "gap"
    return LpBound(bracket.lower * unit, bracket.upper * unit, _integer(bracket.lower, weighed) * int(unit), status, steps, rounds)
