"""The path-selection router (`--router paths`): every flow chooses one of its candidate paths
(synth.routing.candidates) so that the busiest channel carries as few messages as possible.

The integer program, per phase: x[f, k] = 1 when flow f takes its candidate k, one per flow;
every router-to-router channel c bounds the flows whose chosen path crosses it by z; minimize z.
It is written in the project's one problem form (synth.solve.problem: items choose one candidate,
capped groups), so every backend (cpsat, cbc, highs, glpk) solves it. Terminal links carry the
same messages whatever is chosen: their busiest one is a floor under z.

Phases are independent (one task each). Within a phase:
1. bound: the LP bound over all paths (synth.measure.lp_bound) and the load-spreading stage of the same
   LP priced over the candidate list instead of by Dijkstra; with the busiest terminal link they
   give the candidate bound, which no choice of candidates beats. Where the routing found ends
   above it, the candidates' LP runs to the end (column generation) and may raise it;
2. start: the LP's fractional routing rounded per router pair (largest remainders), and the paths of
   the minimal, Valiant and UGAL routers where they are candidates (a loop cut out); the best one;
3. descent: flows on the busiest channels move to a candidate whose busiest channel stays below
   the maximum, while any does;
4. improvement: small instances (at most EXACT_CHOICES flow-candidate pairs) are solved whole by
   the chosen solver, started from the descent's routing: optimal means proven. Larger ones use
   large-neighbourhood search: one busiest channel at a time, the flows through it and through
   the channels they could move to are freed (at most LNS_FLOWS) and a feasibility model (in the
   same form) asks for a routing of them that takes that channel below the maximum without raising
   any other channel to it. A channel the model cannot clear is skipped for this maximum.
With the bytes objective (PathsOptions.objective, `--load-unit bytes`) every count above is the
bytes of the flows instead (items weigh their bytes in the problem form, divided by their greatest
common divisor), the LP bounds are on bytes, and terminal links hold bytes over their bandwidth.
With a lane budget (PathsOptions.lanes, `route --vls N` when the routes need more lanes) the
candidates are only those that one of N lane orders admits (synth.routing.lane_orders), so every
phase's routes, routed apart, fit N deadlock-free lanes together; the bounds are then over them.
The status is honest: optimal when the maximum equals the candidate bound or a solver proved it;
otherwise the gap to the candidate bound is reported, and `timeout` when a solver call ran out of
time. Every step is deterministic (seeded order, CP-SAT's deterministic time), so reruns agree.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from synth.measure.loads import bytes_over_bandwidth, weighted_counts
from synth.measure.lp_bound import byte_granule, lp_bound, solve_congestion_lp
from synth.routing.candidates import Candidates, build_candidates, without_loops
from synth.routing.consistent_direct import ConsistentPathsRouter
from synth.routing.lane_orders import within_lanes
from synth.routing.minimal import RouterView, minimal, router_view
from synth.routing.oblivious import mix64
from synth.routing.paths_options import PathsOptions, PathsReport, paths_options
from synth.topology.paths import Paths
from synth.routing.registry import DIRECT, SOLVER_OPTIONS, VIA_ONE, FileSchema, RouterOptions, RouterSpec
from synth.routing.ugal import ugal
from synth.routing.valiant import valiant
from synth.solve import ProblemBuilder, solve
from synth.solve.budget import Budget, capped, clock_deadline, work_of
from synth.solve.problem import OPTIMAL, TIMEOUT

EXACT_CHOICES = 20_000  # flow-candidate pairs up to which a phase is solved whole (a proof within seconds)
LNS_FLOWS = 120  # flows freed per neighbourhood
LNS_CALL_LIMIT = 0.5  # deterministic seconds per neighbourhood model
LP_TIME_LIMIT = 120.0  # wall-clock guard of the candidate LP (it finishes in about a second at 1,000 routers)
MAX_DESCENT_MOVES = 200_000


class CandidatePricer:
    """The candidate paths as the path space of synth.measure.lp_bound's LP: the cheapest candidate of
    every pair under channel lengths (one gather and sum over all candidates)."""

    hop_slack = 0.0

    def __init__(self, network, candidates: Candidates):
        n = network.num_terminals
        self.channels = np.flatnonzero((network.channel_src >= n) & (network.channel_dst >= n))
        local = np.full(network.num_channels + 1, -1, dtype=np.int64)
        local[self.channels] = np.arange(len(self.channels))
        self.hops = local[candidates.hops]  # -1 stays -1 (the extra last entry)
        self.bandwidth = network.channel_bandwidth[self.channels].astype(float)
        self.pair_ptr = candidates.pair_ptr
        self.owner = np.repeat(np.arange(candidates.num_pairs), candidates.counts)
        self.visits = np.zeros(len(self.hops), dtype=np.int64)  # per row: load-spreading steps that routed along it
        self.steps = 0

    def shortest(self, length: np.ndarray, sources=None, a=None, b=None):
        cost = np.append(length, 0.0)[self.hops].sum(axis=1)
        best = np.minimum.reduceat(cost, self.pair_ptr[:-1])
        first = np.flatnonzero(cost <= best[self.owner])
        _, position = np.unique(self.owner[first], return_index=True)
        row = first[position]  # the lowest row attaining each pair's minimum (every pair has rows)

        def paths(chosen: np.ndarray) -> list[np.ndarray]:
            if len(chosen) == len(row):  # every pair along its cheapest candidate: a load-spreading step
                self.visits[row] += 1
                self.steps += 1
            return [self.hops[r][self.hops[r] >= 0] for r in row[chosen].tolist()]

        return best, paths


class SelectionState:
    """A choice of candidate per crossing flow and the channel loads it gives. A flow weighs 1, or
    its bytes (`weight`)."""

    def __init__(self, candidates: Candidates, pair: np.ndarray, floor_load: np.ndarray, weight: np.ndarray | None = None):
        self.c, self.pair, self.floor_load = candidates, pair, floor_load
        self.weighted = weight is not None
        self.weight = np.ones(len(pair), dtype=np.int64) if weight is None else np.asarray(weight, dtype=np.int64)
        self.first_row = candidates.pair_ptr[pair]
        self.count = candidates.counts[pair]
        self.set(np.zeros(len(pair), dtype=np.int64))

    def set(self, choice: np.ndarray) -> None:
        self.choice = np.asarray(choice, dtype=np.int64).copy()
        self.load = self.loads_of(self.choice)

    def loads_of(self, choice: np.ndarray) -> np.ndarray:
        hops = self.c.hops[self.first_row + choice]
        used = hops >= 0
        if not self.weighted:
            return self.floor_load + np.bincount(hops[used], minlength=len(self.floor_load))
        weights = np.broadcast_to(self.weight[:, None], hops.shape)[used]
        return self.floor_load + weighted_counts(hops[used], weights, len(self.floor_load))

    def problem_weights(self, flows: np.ndarray) -> tuple[np.ndarray | None, int]:
        """The weights of `flows` for a model (None unweighted) and the unit they were divided by
        (their greatest common divisor: smaller coefficients, the same optimum)."""
        if not self.weighted:
            return None, 1
        unit = byte_granule(self.weight[flows])
        return self.weight[flows] // unit, unit

    @property
    def maximum(self) -> int:
        return int(self.load.max(initial=0))

    def path(self, flow: int, k: int | None = None) -> np.ndarray:
        row = self.c.hops[self.first_row[flow] + (self.choice[flow] if k is None else k)]
        return row[row >= 0]

    def move(self, flow: int, k: int) -> None:
        weight = self.weight[flow]
        self.load[self.path(flow)] -= weight
        self.choice[flow] = k
        self.load[self.path(flow)] += weight

    def crossing(self, channels: np.ndarray) -> np.ndarray:
        """Flows whose chosen path crosses any of `channels`."""
        hops = self.c.hops[self.first_row + self.choice]
        return np.flatnonzero(np.isin(hops, channels).any(axis=1))


def _row_keys(owner: np.ndarray, hops: np.ndarray) -> np.ndarray:
    key = mix64(owner.astype(np.uint64) + np.uint64(1))
    for column in hops.T:
        key = mix64(key ^ (column + 2).astype(np.uint64))
    return key


def _as_candidates(view: RouterView, candidates: Candidates, pair: np.ndarray, paths: Paths) -> np.ndarray:
    """Per crossing flow, the candidate index of its path in `paths` (a loop cut out), -1 when the
    path is not among its candidates."""
    width = candidates.hops.shape[1]
    inner = paths.lengths() - 2  # router hops between injection and ejection
    fits = inner <= width
    padded = np.full((len(pair), width), -1, dtype=np.int64)
    for k in range(width):  # the router hops of every path, flows at a time
        has = fits & (inner > k)
        padded[has, k] = paths.channels[paths.offsets[:-1][has] + 1 + k]
    tails = np.full((len(pair), width + 1), -1, dtype=np.int64)
    heads = np.where(padded >= 0, view.head[np.maximum(padded, 0)], -1)
    tails[:, 0] = candidates.a[pair]
    tails[:, 1:] = heads
    padded = without_loops(tails, padded)
    owner = np.repeat(np.arange(candidates.num_pairs), candidates.counts)
    keys = _row_keys(owner, candidates.hops)
    order = np.argsort(keys, kind="stable")
    wanted = _row_keys(pair, padded)
    position = np.minimum(np.searchsorted(keys[order], wanted), len(order) - 1)
    row = order[position]
    hit = fits & (keys[row] == wanted) & (owner[row] == pair) & (candidates.hops[row] == padded).all(axis=1)
    return np.where(hit, row - candidates.pair_ptr[pair], -1)


def _rounded(pricer: CandidatePricer, candidates: Candidates, pair: np.ndarray) -> np.ndarray:
    """The fractional routing of load spreading (every pair's demand over the rows it was routed
    along, in proportion to the steps) rounded: per pair, whole flows by largest remainders (ties to
    the lower row), the pair's flows taking the rows' shares in order."""
    if not pricer.visits.any():  # no spreading ran (nothing to carry): every flow on its first candidate
        return np.zeros(len(pair), dtype=np.int64)
    demand = np.bincount(pair, minlength=candidates.num_pairs)
    rows = np.flatnonzero(pricer.visits)
    owner = pricer.owner[rows]
    exact = demand[owner] * pricer.visits[rows] / max(pricer.steps, 1)
    share = np.floor(exact + 1e-9).astype(np.int64)
    remainder = exact - share
    missing = demand - np.bincount(owner, weights=share, minlength=candidates.num_pairs).astype(np.int64)
    order = np.lexsort((rows, -remainder, owner))
    rank = np.arange(len(order)) - np.searchsorted(owner[order], owner[order])
    share[order] += rank < missing[owner[order]]
    slots = np.repeat(rows, share)  # rows in order, so grouped by pair
    flows_by_pair = np.lexsort((np.arange(len(pair)), pair))
    choice = np.zeros(len(pair), dtype=np.int64)
    choice[flows_by_pair] = slots - candidates.pair_ptr[pair[flows_by_pair]]
    return choice


def descend(state: SelectionState, bound: int) -> int:
    """Move flows off the busiest channels while a move keeps their new path below the maximum."""
    moves = 0
    while moves < MAX_DESCENT_MOVES:
        top = state.maximum
        if top <= bound:
            break
        hot = np.flatnonzero(state.load == top)
        moved = False
        for flow in state.crossing(hot).tolist():
            own, weight = state.path(flow), int(state.weight[flow])
            if not weight or not (state.load[own] == top).any():
                continue  # weighs nothing, or already moved off by an earlier move's effect
            rows = state.c.hops[state.first_row[flow] : state.first_row[flow] + state.count[flow]]
            extended = np.append(state.load, 0)
            values = extended[rows] - weight * np.isin(rows, own)
            worst = np.where(rows >= 0, values, 0).max(axis=1) + weight
            k = int(np.argmin(worst))
            if worst[k] < top:
                state.move(flow, k)
                moves += 1
                moved = True
        if not moved:
            break
    return moves


def _enumerated(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(item, k) for every k < counts[item], items in order."""
    item = np.repeat(np.arange(len(counts)), counts)
    return item, np.arange(len(item)) - np.repeat(np.cumsum(counts) - counts, counts)


def grouped_by_channel(hops: np.ndarray, item: np.ndarray, k: np.ndarray):
    """(channel, items, candidates) for every channel the rows `hops` (one per (item, k)) cross."""
    entry = np.repeat(np.arange(len(item)), hops.shape[1])
    channel = hops.ravel()
    used = channel >= 0
    channel, entry = channel[used], entry[used]
    order = np.argsort(channel, kind="stable")
    channel, entry = channel[order], entry[order]
    starts = np.flatnonzero(np.concatenate([[True], channel[1:] != channel[:-1]]))
    for lo, hi in zip(starts.tolist(), np.append(starts[1:], len(channel)).tolist()):
        yield int(channel[lo]), item[entry[lo:hi]], k[entry[lo:hi]]


def whole_phase_problem(state: SelectionState):
    """The path-selection program of a phase in the one problem form: item f (a flow between
    different routers) chooses among its candidates; per router channel a capped group, count <=
    floor + z with floor the busiest terminal link's load; z minimized. Its optimum plus the floor
    is the least maximum contention over the candidates. Weighted (bytes), items weigh their bytes
    over the unit of State.problem_weights, and so do floor and z."""
    weight, unit = state.problem_weights(np.arange(len(state.pair)))
    floor = int(state.floor_load.max(initial=0)) // unit
    builder = ProblemBuilder(state.count, weight=weight)
    item, k = _enumerated(state.count)
    for _, items, ks in grouped_by_channel(state.c.hops[state.first_row[item] + k], item, k):
        builder.add(items, ks, upper=floor, capped=True)
    problem = builder.build()
    return replace(problem, z_upper=problem.objective(state.choice))


class Improver:
    def __init__(self, state: SelectionState, options: PathsOptions, report: PathsReport, seed: int):
        self.state, self.options, self.report = state, options, report
        self.rng = np.random.default_rng(seed)
        self.deadline = None  # the clock's end of the neighbourhoods (wall_clock)

    def _solve(self, problem, time_limit: float, hint=None, share=None):
        o = self.options
        result = solve(problem, o.solver, time_limit, o.threads, hint, o.glpk_options, share=share)
        self.report.solver_seconds += result.seconds
        self.report.timeouts += int(result.status == TIMEOUT)
        return result

    def exact(self) -> None:
        """The whole phase as one model, started from the current routing (with `wall_clock`, the
        whole budget is its one share)."""
        s = self.state
        share = Budget(self.options.budget).share() if self.options.wall_clock else None
        result = self._solve(whole_phase_problem(s), self.options.budget, hint=s.choice, share=share)
        self.report.clock_ended = share is not None and share.clock_ended()
        self.report.exact = result.status
        if result.solved and int(s.loads_of(result.choice).max(initial=0)) <= s.maximum:
            s.set(result.choice)
        if result.status == OPTIMAL:
            self.report.proven_by = self.options.solver

    def neighbourhoods(self, bound: int) -> None:
        """Clear the busiest channels one at a time (see the module docstring)."""
        s = self.state
        wall = self.options.wall_clock  # the budget's work in calls of LNS_CALL_LIMIT each, the clock its cap
        calls = max(1, math.ceil((work_of(self.options.budget) if wall else self.options.budget) / LNS_CALL_LIMIT))
        self.deadline = clock_deadline(self.options.budget) if wall else None
        stuck: set[int] = set()
        while calls > 0 and s.maximum > bound:
            if wall and time.perf_counter() >= self.deadline:  # a slow machine: the clock, not the work, ends it
                self.report.clock_ended = True
                break
            top = s.maximum
            hot = [c for c in np.flatnonzero(s.load == top).tolist() if c not in stuck]
            if not hot:
                break
            target = hot[int(self.rng.integers(len(hot)))]
            calls -= 1
            self.report.neighbourhoods += 1
            if not self._clear(target, top):
                stuck.add(target)
            elif s.maximum < top:
                stuck.clear()

    def _clear(self, target: int, top: int) -> bool:
        s = self.state
        freed = s.crossing(np.array([target]))
        if not len(freed) or len(freed) > LNS_FLOWS:  # (a channel at the maximum by fixed load alone has no flow to move)
            return False
        # the channels the freed flows could move to that one of them would take to the maximum:
        # their flows are freed too (a random sample when there are more than LNS_FLOWS in all)
        rows = np.concatenate([s.c.hops[s.first_row[f] : s.first_row[f] + s.count[f]].ravel() for f in freed.tolist()])
        near = np.unique(rows[rows >= 0])
        near = near[(s.load[near] >= top - max(1, int(s.weight[freed].max()))) & (near != target)]
        others = s.crossing(near) if len(near) else np.zeros(0, dtype=np.int64)
        others = np.setdiff1d(others, freed)
        room = LNS_FLOWS - len(freed)
        if len(others) > room:
            others = np.sort(self.rng.choice(others, room, replace=False))
        freed = np.concatenate([freed, others])
        fixed = s.load.copy()
        for f in freed.tolist():
            fixed[s.path(f)] -= s.weight[f]
        cap = np.where(s.load == top, top, top - 1) - fixed  # room per channel for the freed flows
        cap[target] = top - 1 - fixed[target]
        # per freed flow the candidates that fit alone
        allowed_item, allowed_k = [], []
        for i, f in enumerate(freed.tolist()):
            rows = s.c.hops[s.first_row[f] : s.first_row[f] + s.count[f]]
            fits = np.where(rows >= 0, np.append(cap, 0)[rows] >= s.weight[f], True).all(axis=1)
            ks = np.flatnonzero(fits)
            if not len(ks):
                return False
            allowed_item.append(np.full(len(ks), i))
            allowed_k.append(ks)
        item, k = np.concatenate(allowed_item), np.concatenate(allowed_k)
        local_count = np.bincount(item, minlength=len(freed))
        local_k = _enumerated(local_count)[1]
        weight, unit = s.problem_weights(freed)
        builder = ProblemBuilder(local_count, weight=weight)
        for c, items, ks in grouped_by_channel(s.c.hops[s.first_row[freed[item]] + k], item, local_k):
            if s.weight[freed[items]].sum() > cap[c]:
                builder.add(items, ks, upper=int(cap[c]) // unit)
        share = capped(LNS_CALL_LIMIT, self.deadline) if self.options.wall_clock else None
        result = self._solve(builder.build(), LNS_CALL_LIMIT, share=share)
        self.report.clock_ended |= share is not None and share.clock_ended()
        if not result.solved:
            return False
        for i, f in enumerate(freed.tolist()):
            s.move(f, int(k[item == i][result.choice[i]]))
        return True


def route_phase_paths(topology, src: np.ndarray, dst: np.ndarray, options: PathsOptions, seed: int = 0,
                      weights: np.ndarray | None = None) -> tuple[Paths, PathsReport]:
    """One phase; with `weights` (bytes per flow, the bytes objective) loads and bounds are in bytes."""
    view = router_view(topology)
    network = topology.network()
    report = PathsReport()
    a, b = view.terminal_router[src], view.terminal_router[dst]
    moving = src != dst
    crossing = np.flatnonzero(moving & (a != b))
    terminal = np.concatenate([view.injection[src[moving]], view.ejection[dst[moving]]])
    if weights is None:
        floor_load = np.bincount(terminal, minlength=network.num_channels)
    else:
        weights = np.asarray(weights, dtype=np.int64)
        terminal_bytes = weighted_counts(terminal, np.tile(weights[moving], 2), network.num_channels)
        floor_load = bytes_over_bandwidth(terminal_bytes, network.channel_bandwidth)
    base = minimal(topology, src, dst)
    if not len(crossing):
        report.candidate_bound = report.start_contention = int(floor_load.max(initial=0))
        report.start = "minimal"
        return base, report
    candidates = build_candidates(topology, a[crossing], b[crossing], options.candidates)
    if options.lanes is not None:
        candidates = within_lanes(topology, candidates, options.lanes)
    routers = len(view.distance)
    pair = np.searchsorted(candidates.a * routers + candidates.b, a[crossing] * routers + b[crossing])
    flow_weight = None if weights is None else weights[crossing]
    state = SelectionState(candidates, pair, floor_load, flow_weight)
    report.choices = int(state.count.sum())

    global_lp = lp_bound(network, src, dst, time_limit=LP_TIME_LIMIT, weights=weights)
    pricer = CandidatePricer(network, candidates)
    demand = np.bincount(pair, weights=flow_weight, minlength=candidates.num_pairs).astype(float)
    granule = None if flow_weight is None else byte_granule(flow_weight)
    spread = solve_congestion_lp(pricer, (np.unique(candidates.a), candidates.a, candidates.b), demand,
                                 time_limit=LP_TIME_LIMIT, spread_only=True, granule=granule)
    bound = max(int(floor_load.max(initial=0)), global_lp.bound, spread.bound)
    report.lp_bound, report.candidate_bound, report.lp_status = global_lp.bound, bound, spread.status

    starts = {"lp-rounding": _rounded(pricer, candidates, pair)}
    for name, router in (("minimal", minimal), ("valiant", valiant), ("ugal", ugal)):
        mapped = _as_candidates(view, candidates, pair, router(topology, src[crossing], dst[crossing], seed=seed))
        starts[name] = mapped if (mapped >= 0).all() else None
    best = None
    for name, choice in starts.items():
        if choice is None:
            continue
        top = int(state.loads_of(choice).max(initial=0))
        if best is None or top < best[0]:
            best = (top, name, choice)
    if best is None:  # every start incomplete: the first candidate of every flow
        best = (int(state.loads_of(state.choice).max(initial=0)), "first", state.choice)
    report.start_contention, report.start = best[0], best[1]
    state.set(best[2])
    report.moves = descend(state, bound)
    if state.maximum > bound:
        improver = Improver(state, options, report, seed)
        if report.choices <= EXACT_CHOICES:
            improver.exact()
        else:
            improver.neighbourhoods(bound)
    if state.maximum > bound and report.proven_by is None:
        # not proven yet: the full LP over the candidates (column generation) may raise the bound
        full = solve_congestion_lp(CandidatePricer(network, candidates), (np.unique(candidates.a), candidates.a, candidates.b),
                                   demand, time_limit=LP_TIME_LIMIT, granule=granule)
        bound = max(bound, full.bound)
        report.candidate_bound, report.lp_status = bound, full.status
    if state.maximum <= bound and report.proven_by is None:
        report.proven_by = "lp"
    return _assemble(view, src, dst, crossing, state, base), report


def _assemble(view: RouterView, src, dst, crossing, state: SelectionState, base: Paths) -> Paths:
    """Injection, the chosen router hops, ejection for crossing flows; the minimal path otherwise."""
    width = state.c.hops.shape[1]
    rows = np.full((len(src), width + 2), -1, dtype=np.int64)
    lengths = base.lengths()
    has = lengths > 0
    rows[has, 0] = base.channels[base.offsets[:-1][has]]
    # flows within one router: injection and ejection only
    rows[has, width + 1] = base.channels[base.offsets[1:][has] - 1]
    rows[crossing, 1 : width + 1] = state.c.hops[state.first_row + state.choice]
    return Paths.from_padded(rows)


class PathSelectionRouter:
    """Router interface of synth.workflow: one phase at a time (one task per phase)."""

    expensive = True

    def __init__(self, options: PathsOptions):
        self.options = options
        # synth.workflow hands such a router every flow's bytes (`size`)
        self.weighs_bytes = options.objective == "bytes"
        if options.solver == "cpsat":
            import ortools.sat.python.cp_model  # noqa: F401  (OR-Tools loaded once here, not in every forked worker)

    def __call__(self, topology, src, dst, phase=None, occurrence=None, seed=0, size=None):
        return route_each_phase(route_phase_paths, self.options, topology, src, dst, phase, seed, size)


def route_each_phase(route_phase, options, topology, src, dst, phase, seed: int, weights=None):
    """(Paths in flow order, {phase: report}) of `route_phase(topology, src, dst, options, seed)`
    run phase by phase, the flows of a phase in one fixed order (the same flows: the same routes).
    With per-flow `weights`, each phase's are handed on as `weights=`."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    phase = np.zeros(len(src), dtype=np.int64) if phase is None else np.asarray(phase, dtype=np.int64)
    reports, routed = {}, []
    order = np.lexsort((dst, src, phase))
    for p in np.unique(phase).tolist():
        idx = order[phase[order] == p]
        weighed = {} if weights is None else {"weights": np.asarray(weights)[idx]}
        paths, reports[p] = route_phase(topology, src[idx], dst[idx], options, seed * 1_000_003 + p, **weighed)
        routed.append((idx, paths))
    return _in_flow_order(len(src), routed), reports


def _in_flow_order(count: int, routed: list[tuple[np.ndarray, Paths]]) -> Paths:
    if not routed:
        return Paths(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64))
    flows = np.concatenate([idx for idx, _ in routed])
    together = Paths.concatenate([paths for _, paths in routed])
    position = np.empty(count, dtype=np.int64)
    position[flows] = np.arange(count)
    return together.select(position)


def _build(options: RouterOptions):
    o = paths_options(options)
    return ConsistentPathsRouter(o) if o.consistency == "destination" else PathSelectionRouter(o)


def _label(options: RouterOptions, seed: int) -> str:
    o = paths_options(options)
    budget = f"{o.time_limit:g} s" if o.time_limit else f"{o.budget:g} s (default)"
    if o.consistency == "destination":
        return "paths (destination-consistent: one minimal next hop per router and destination, greedy)"
    return f"paths ({o.candidates} candidates, minimizing {o.objective}, solver {o.solver}, budget {budget} per phase)"


ROUTER = (
    RouterSpec("paths", DIRECT, "synthesized: per flow one of its candidate paths (--candidates minimal|valiant|all) so "
               "that the busiest channel carries the fewest messages (an integer program per phase; minimal paths only "
               "with --candidates minimal)", _build, policy=VIA_ONE, takes=("candidates", "consistency") + SOLVER_OPTIONS,
               synthesis=paths_options, synthesis_type=PathsOptions, label=_label, proves=True,
               lp_proof_key="candidate_bound", records_lp_bound=True, minimal_candidates=True,
               within_lanes=lambda options, lanes: PathSelectionRouter(replace(options, lanes=lanes)),
               file_schema=FileSchema(
                   synthesis=("candidates", "solver", "consistency", "time_limit", "threads"),
                   synthesis_str=("candidates", "solver", "consistency"),
                   counts=("choices", "candidate_bound", "start_contention", "moves", "neighbourhoods",
                           "timeouts"),
                   strings=("lp_status", "start", "exact", "proven_by"), required=("lp_status", "start"),
                   synthesis_optional=("lanes",), optional_counts=("lp_bound",)),  # lanes: the --vls budget routed within
               report={"paths": ("synth paths", "flow")}, report_default=True,
               elsewhere="on an xgft the path-selection program over every minimal path is --router monolithic (and "
                         "--router layered its decomposition)", order=80),
)
