"""The layered router of dragonflies (`synth route dragonfly:... --router layered`): Prisacari20 ch.3's
per-layer synthesis on the dragonfly hierarchy of Prisacari20 ch.4 (switch, group, system).

Path space. A message between two groups takes a group route: directly from its group S into the
destination's group D, or through one intermediate group I (Valiant at the group level, Prisacari20
ch.5), over one global link of the bundle between each two consecutive groups (with `groups=G`
a bundle has several). Inside every group it visits, the message goes from where it is (its
source router, or the router where its global link lands) to where it must be (the router of its
next global link, or its destination router): a local segment, over the local link between the
two or through one other router of the group (two local hops). A message within one group is one
such segment. Paths therefore have at most two global hops and at most three local segments.

Layers, per phase:
1. system layer: every inter-group message chooses its group route and global links. Under a
   target T it meets set bounds in the spirit of eq. 3.6 (a set of messages that has to pass a
   set of links puts at most T on each):
   - every global channel carries at most T messages;
   - every router x starts at most deg(x) T local segments and ends at most deg(x) T (deg(x):
     its local links), the fixed segments of messages within groups counted. A segment leaves
     and enters its routers over local links whatever the group layer makes of it, so these
     bounds look ahead to the group layer the way 3.8's lambda > 0 conditions look ahead to
     higher layers: every routing of the path space with contention T meets them.
   Under these hard bounds the model minimizes the excess over T of the busiest local channel
   when every segment takes its local link: what the group layer will have to absorb with
   detours (0: nothing). When the model is infeasible at T, no routing of the path space reaches
   T (a proof, also when a fixed load alone exceeds a bound); targets rise from the LP bound over
   all paths (synth.measure.lp_bound).
   The search starts from a routing that needs no group layer: the system layer's routes with
   every segment on its local link, greedy, then a descent and neighbourhoods on the busiest
   channels (synth.routing.path_selection's machinery over these candidates). Its contention is
   the first upper bound; targets are tried below it only.
2. group layer: with the system layer's routes fixed, the local segments of every group are
   known and the groups are independent problems. A group whose local links would carry more
   than T chooses, per segment, the local link or a two-hop detour to minimize its busiest local
   channel (one model per such group); detours that the optimum does not need are undone.
3. combination: the phase's contention is the largest of the global channels (at most T), each
   group's local optimum and the terminal links. When every group reaches T the phase is at T,
   the least target the system layer could not rule out: optimal over the path space (proven by
   the solver's infeasibility proofs below T, or by the LP bound when T equals it). When a group
   cannot absorb the excess (the layers disagree: the system layer's bounds are necessary, not
   sufficient), the next target is tried, and the status reports the gap. Measured against
   `paths` (tests/bench/bench_paths.py): where the optimum needs detours inside intermediate
   groups chosen together with the global links, the whole program of `paths` can be lower.
Every model is in the project's one problem form (synth.solve.problem), so every backend solves
it; targets, orders and CP-SAT's deterministic time make reruns identical.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.measure.lp_bound import lp_bound
from synth.routing.candidates import Candidates
from synth.routing.minimal import router_view
from synth.routing.path_selection import Improver, SelectionState, descend, grouped_by_channel, route_each_phase
from synth.routing.paths_options import PathsOptions, PathsReport
from synth.topology.paths import Paths
from synth.routing.registry import DIRECT, SOLVER_OPTIONS, VIA_GROUP, FileSchema, RouterOptions, RouterSpec
from synth.solve import ProblemBuilder, check_solver, solve
from synth.solve.problem import INFEASIBLE, OPTIMAL, TIMEOUT

MAX_ROUTES = 256  # group routes per pair of groups (bundles multiply them; the direct ones come first)
DEFAULT_BUDGET = 20.0  # solver seconds per phase without --time-limit
LP_TIME_LIMIT = 120.0
METHOD = "dragonfly-layers"
MAX_REFINEMENTS = 3  # system-layer reruns at one target after the group layer failed there


@dataclass(frozen=True)
class DragonflyLayeredOptions:
    solver: str = "cpsat"
    time_limit: float | None = None  # solver seconds per phase
    threads: int = 1
    glpk_options: tuple[str, ...] | None = None
    method: str = METHOD  # recorded, so that a file says which layered router wrote it

    def __post_init__(self) -> None:
        check_solver(self.solver)
        if self.method != METHOD:
            raise SynthError(f"unknown layered method '{self.method}' on a dragonfly (known: {METHOD})")

    @property
    def budget(self) -> float:
        return self.time_limit if self.time_limit is not None else DEFAULT_BUDGET

    def describe(self) -> dict:
        return {"method": self.method, "solver": self.solver, "time_limit": self.time_limit,
                "threads": self.threads}


@dataclass
class DragonflyLayeredReport:
    """How a phase was routed; `as_dict` is what the routes file records (no timings)."""

    messages: int = 0  # inter-group messages the system layer routes
    choices: int = 0  # message-route pairs of the system layer
    lp_bound: int = 0  # the LP bound over all paths: no routing at all does better
    system_bound: int = 0  # the least target the system layer did not rule out
    target: int = 0  # the target of the routing kept
    targets: int = 0  # targets tried
    group_models: int = 0  # group-layer models solved
    detours: int = 0  # local segments on two hops
    timeouts: int = 0
    proven_by: str | None = None
    solver_seconds: float = 0.0

    def progress_text(self) -> str:
        return (f"{self.messages:,} inter-group messages, {self.choices:,} choices, target {self.target} "
                f"(system bound {self.system_bound}, LP {self.lp_bound}), {self.group_models} group models, "
                f"{self.detours} detours" + (f", {self.timeouts} solver timeouts" if self.timeouts else ""))

    def as_dict(self) -> dict:
        return {"messages": self.messages, "choices": self.choices, "lp_bound": self.lp_bound,
                "system_bound": self.system_bound, "target": self.target, "targets": self.targets,
                "group_models": self.group_models, "detours": self.detours,
                "timeouts": self.timeouts, **({"proven_by": self.proven_by} if self.proven_by else {})}


class DragonflyLayout:
    """The two levels of a dragonfly from its network arrays alone (a degraded network too): global
    channels in bundles per ordered pair of groups, local channels per pair of routers of a group."""

    def __init__(self, topology):
        self.view = view = router_view(topology)
        network = topology.network()
        self.groups = np.asarray(topology.router_groups(), dtype=np.int64)
        self.num_groups = int(self.groups.max()) + 1
        self.num_channels = network.num_channels
        n = network.num_terminals
        links = np.flatnonzero((network.channel_src >= n) & (network.channel_dst >= n))
        self.tail = np.full(network.num_channels, -1, dtype=np.int64)
        self.head = np.full(network.num_channels, -1, dtype=np.int64)
        self.tail[links], self.head[links] = network.channel_src[links] - n, network.channel_dst[links] - n
        g = self.groups
        crossing = links[g[self.tail[links]] != g[self.head[links]]]
        key = g[self.tail[crossing]] * self.num_groups + g[self.head[crossing]]
        order = np.lexsort((crossing, key))
        self.bundle_channels = crossing[order]
        self.bundle_ptr = np.searchsorted(key[order], np.arange(self.num_groups ** 2 + 1))
        local = links[g[self.tail[links]] == g[self.head[links]]]
        routers = len(g)
        self.rank = np.zeros(routers, dtype=np.int64)  # a router's index within its group
        members = np.argsort(g, kind="stable")
        self.rank[members] = np.arange(routers) - np.searchsorted(g[members], g[members])
        self.width = int(self.rank.max(initial=0)) + 1
        self.members = np.full((self.num_groups, self.width), -1, dtype=np.int64)
        self.members[g[members], self.rank[members]] = members
        # local[group, i, j]: the lowest-numbered channel from router i to router j of the group, or -1
        self.local = np.full((self.num_groups, self.width, self.width), -1, dtype=np.int64)
        for channel in local[::-1].tolist():  # descending: the lowest id is written last
            u, v = self.tail[channel], self.head[channel]
            self.local[g[u], self.rank[u], self.rank[v]] = channel
        self.degree = np.bincount(self.tail[local], minlength=routers)
        # joined[group, i, j]: routers i and j of the group are joined by a local link or a two-hop detour
        direct = self.local >= 0
        self.joined = direct | np.einsum("gik,gkj->gij", direct.astype(np.int64), direct.astype(np.int64)) > 0

    def can_join(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Whether local segments u -> v (same group; -1: no segment) can be routed in their group."""
        present = u >= 0
        uu, vv = np.maximum(u, 0), np.maximum(v, 0)
        return ~present | self.joined[self.groups[uu], self.rank[uu], self.rank[vv]]

    def bundle(self, x: int, y: int) -> np.ndarray:
        k = x * self.num_groups + y
        return self.bundle_channels[self.bundle_ptr[k] : self.bundle_ptr[k + 1]]

    def routes(self, s: int, d: int) -> np.ndarray:
        """(routes, 2) global channels of the group routes from group s to group d: the direct
        ones (second column -1), then through every other group in increasing order; at most
        MAX_ROUTES."""
        rows = [np.stack([self.bundle(s, d), np.full(len(self.bundle(s, d)), -1)], axis=1)]
        for i in range(self.num_groups):
            if i in (s, d):
                continue
            first, second = self.bundle(s, i), self.bundle(i, d)
            if len(first) and len(second):
                rows.append(np.stack(np.meshgrid(first, second, indexing="ij"), axis=-1).reshape(-1, 2))
        return np.concatenate(rows).astype(np.int64)[:MAX_ROUTES]


@dataclass
class _System:
    """The system layer's choices: per (message, route) pair its global channels and local segments."""

    item: np.ndarray  # (pairs,) message index
    k: np.ndarray  # (pairs,) route index of the message
    first: np.ndarray  # (messages,) first pair of every message
    globals_: np.ndarray  # (pairs, 2) global channels, -1 padded
    segments: np.ndarray  # (pairs, 3, 2) local segments (from router, to router), -1 where none

    def chosen(self, choice: np.ndarray) -> np.ndarray:
        return self.first + choice


def _segment(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(n, 2) segments u -> v, (-1, -1) where u == v (nothing to cross)."""
    same = u == v
    return np.stack([np.where(same, -1, u), np.where(same, -1, v)], axis=1)


def _system(layout: DragonflyLayout, a: np.ndarray, b: np.ndarray) -> _System:
    g = layout.groups
    ga, gb = g[a], g[b]
    tables = {}
    keys = np.unique(ga * layout.num_groups + gb)
    for key in keys.tolist():
        tables[key] = layout.routes(key // layout.num_groups, key % layout.num_groups)
    counts = np.array([len(tables[key]) for key in (ga * layout.num_groups + gb).tolist()], dtype=np.int64)
    item = np.repeat(np.arange(len(a)), counts)
    stacked = np.concatenate([tables[key] for key in (ga * layout.num_groups + gb).tolist()]) \
        if len(a) else np.zeros((0, 2), dtype=np.int64)
    c1, c2 = stacked[:, 0], stacked[:, 1]
    via = c2 >= 0
    last = np.where(via, c2, c1)
    seg_source = _segment(a[item], layout.tail[c1])
    seg_middle = np.where(via[:, None], _segment(layout.head[c1], layout.tail[np.maximum(c2, 0)]), -1)
    seg_dest = _segment(layout.head[last], b[item])
    segments = np.stack([seg_source, seg_middle, seg_dest], axis=1)
    # On a degraded network a route whose local segment has neither a link nor a two-hop detour is
    # not in the path space: dropped here, so that no layer can choose it.
    usable = np.ones(len(item), dtype=bool)
    for s in range(3):
        usable &= layout.can_join(segments[:, s, 0], segments[:, s, 1])
    counts = np.bincount(item[usable], minlength=len(a))
    if (counts == 0).any():
        m = int(np.argmax(counts == 0))
        names = layout.view.router_names
        raise SynthError(f"--router layered: routers {names[int(a[m])]} and {names[int(b[m])]} are not joined by a "
                         f"path of its space (at most two global hops, at most two local hops per group) on this "
                         f"network; route it with paths or minimal")
    item, stacked, segments = item[usable], stacked[usable], segments[usable]
    first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    k = np.arange(len(item)) - first[item]
    return _System(item, k, first, stacked, segments)


def _group_rows(keys: np.ndarray, rows: np.ndarray, size: int):
    """CSR of `rows` grouped by `keys` (0..size-1): (ptr, rows in key order)."""
    order = np.argsort(keys, kind="stable")
    return np.searchsorted(keys[order], np.arange(size + 1)), rows[order]


class _SystemModel:
    """The system layer's model at a target T (the one problem form): hard set bounds, and the
    local excess left to the group layer minimized."""

    def __init__(self, layout: DragonflyLayout, system: _System, fixed_out: np.ndarray, fixed_in: np.ndarray,
                 fixed_local: np.ndarray):
        self.layout, self.system = layout, system
        self.fixed_out, self.fixed_in, self.fixed_local = fixed_out, fixed_in, fixed_local
        pairs = np.arange(len(system.item))
        g_rows = np.concatenate([pairs, pairs])
        g_keys = system.globals_.T.ravel()
        keep = g_keys >= 0
        self.global_groups = _group_rows(g_keys[keep], g_rows[keep], layout.num_channels)
        seg = system.segments.reshape(-1, 2)
        seg_pair = np.repeat(pairs, 3)
        present = seg[:, 0] >= 0
        routers = len(layout.groups)
        self.out_groups = _group_rows(seg[present, 0], seg_pair[present], routers)
        self.in_groups = _group_rows(seg[present, 1], seg_pair[present], routers)
        u, v = seg[present, 0], seg[present, 1]
        direct = layout.local[layout.groups[u], layout.rank[u], layout.rank[v]]
        self.has_direct = bool((direct >= 0).all())
        self.local_groups = _group_rows(np.maximum(direct, 0), seg_pair[present], layout.num_channels)
        self.counts = np.bincount(system.item, minlength=len(system.first)) if len(system.item) else np.zeros(0, np.int64)

    def build(self, target: int, hint: np.ndarray | None = None, slack: np.ndarray | None = None):
        """The model at `target`, or None when a fixed load already exceeds it (infeasible). Its
        objective: the least excess over `target` of any local channel when every segment takes
        its local link (what the group layer's detours then have to absorb; 0: none needed).
        `slack` (per group) lowers the segment bounds of the group's routers: room kept for the
        group layer's detours where it failed (then the bounds are no longer necessary conditions,
        and an infeasible model proves nothing)."""
        builder = ProblemBuilder(self.counts)
        system = self.system
        room = self.layout.degree * target - (0 if slack is None else slack[self.layout.groups])
        limits = [(self.global_groups, np.full(self.layout.num_channels, target)),
                  (self.out_groups, room - self.fixed_out),
                  (self.in_groups, room - self.fixed_in)]
        for (ptr, rows), upper in limits:
            if (upper < 0).any():
                return None
            sizes = np.diff(ptr)
            for key in np.flatnonzero(sizes > upper).tolist():
                chosen = rows[ptr[key] : ptr[key + 1]]
                if len(np.unique(system.item[chosen])) > upper[key]:
                    builder.add(system.item[chosen], system.k[chosen], upper=int(upper[key]))
        if not self.has_direct:
            return builder.build()
        ptr, rows = self.local_groups
        excess = target - self.fixed_local
        for channel in np.flatnonzero(np.diff(ptr)).tolist():
            chosen = rows[ptr[channel] : ptr[channel + 1]]
            builder.add(system.item[chosen], system.k[chosen], upper=int(excess[channel]), capped=True)
        problem = builder.build()
        z = 0 if hint is None else problem.objective(hint)
        problem.z_upper = max(z, int(np.maximum(-excess, 0).max(initial=0)) + len(self.counts))
        return problem


def _direct_candidates(layout: DragonflyLayout, system: _System, a: np.ndarray, b: np.ndarray) -> Candidates:
    """The system layer's routes with every local segment on its local link, as path-selection
    candidates (one 'pair' per message): rows of five router channels, -1 where nothing is crossed."""
    seg = system.segments
    u, v = np.maximum(seg[:, :, 0], 0), np.maximum(seg[:, :, 1], 0)
    local = np.where(seg[:, :, 0] >= 0, layout.local[layout.groups[u], layout.rank[u], layout.rank[v]], -1)
    hops = np.stack([local[:, 0], system.globals_[:, 0], local[:, 1], system.globals_[:, 1], local[:, 2]], axis=1)
    ptr = np.append(system.first, len(system.item)).astype(np.int64)
    return Candidates(a, b, ptr, hops)


def _greedy(state: SelectionState) -> np.ndarray:
    """Every message in turn on the candidate whose busiest channel is least loaded so far (ties:
    the first): a start for the descent."""
    load = np.append(state.floor_load, 0)
    choice = np.zeros(len(state.pair), dtype=np.int64)
    hops = state.c.hops
    for message in range(len(state.pair)):
        lo = state.first_row[message]
        rows = hops[lo : lo + state.count[message]]
        k = int(np.argmin(load[rows].max(axis=1)))  # (-1 entries read the appended 0)
        choice[message] = k
        used = rows[k][rows[k] >= 0]
        load[used] += 1
    return choice


def _group_layer(layout: DragonflyLayout, seg: np.ndarray, target: int, options: DragonflyLayeredOptions,
                 report: DragonflyLayeredReport, budget: float) -> tuple[np.ndarray, int, set[int]]:
    """Local router hops (n, 2) for segments seg (n, 2) (-1 rows: none): the local link, or a
    detour; the busiest local channel; the groups left above `target`. Groups are independent
    problems."""
    hops = np.full((len(seg), 2), -1, dtype=np.int64)
    present = np.flatnonzero(seg[:, 0] >= 0)
    u, v = seg[present, 0], seg[present, 1]
    group = layout.groups[u]
    direct = layout.local[group, layout.rank[u], layout.rank[v]]
    hops[present, 0] = direct
    worst, failed = 0, set()
    for gi in np.unique(group).tolist():
        rows = present[group == gi]
        loads = np.bincount(hops[rows, 0][hops[rows, 0] >= 0], minlength=layout.num_channels)
        if (hops[rows, 0] >= 0).all() and loads.max(initial=0) <= target:
            worst = max(worst, int(loads.max(initial=0)))
            continue
        started = time.perf_counter()
        chosen, top = _route_group(layout, gi, seg[rows], target, options, report, max(budget, 0.05))
        budget -= time.perf_counter() - started
        hops[rows] = chosen
        worst = max(worst, top)
        if top > target:
            failed.add(gi)
    return hops, worst, failed


def _route_group(layout: DragonflyLayout, gi: int, seg: np.ndarray, target: int, options, report, budget):
    """One group's local segments: per segment the local link or a two-hop detour through another
    router of the group, minimizing the busiest local channel; then detours the optimum does not
    need are undone (in segment order)."""
    local = layout.local[gi]
    ru, rv = layout.rank[seg[:, 0]], layout.rank[seg[:, 1]]
    members = np.flatnonzero(layout.members[gi] >= 0)
    options_per = []
    for i, j in zip(ru.tolist(), rv.tolist()):
        rows = [(local[i, j], -1)] if local[i, j] >= 0 else []
        rows += [(local[i, w], local[w, j]) for w in members.tolist() if w not in (i, j) and local[i, w] >= 0
                 and local[w, j] >= 0]
        if not rows:
            raise SynthError(f"routers {layout.view.router_name(int(layout.members[gi, i]))} and "
                             f"{layout.view.router_name(int(layout.members[gi, j]))} of group {gi} are not joined by "
                             f"one or two local links")
        options_per.append(np.array(rows, dtype=np.int64))
    counts = np.array([len(r) for r in options_per], dtype=np.int64)
    table = np.concatenate(options_per)
    item = np.repeat(np.arange(len(seg)), counts)
    k = np.arange(len(table)) - np.repeat(np.cumsum(counts) - counts, counts)
    builder = ProblemBuilder(counts)
    for _, items, ks in grouped_by_channel(table, item, k):
        builder.add(items, ks, upper=0, capped=True)
    first = np.cumsum(counts) - counts
    hint = np.zeros(len(seg), dtype=np.int64)  # the local links (first candidate) where there is one
    hinted = table[first].ravel()
    hint_max = int(np.bincount(hinted[hinted >= 0], minlength=layout.num_channels).max(initial=0))
    result = solve(builder.build(z_upper=hint_max), options.solver, budget, options.threads,
                   hint=hint if options.solver == "cpsat" else None, glpk_options=options.glpk_options)
    report.group_models += 1
    report.solver_seconds += result.seconds
    report.timeouts += int(result.status == TIMEOUT)
    choice = result.choice if result.solved else hint
    chosen_rows = table[first + choice]
    loads = np.bincount(chosen_rows[chosen_rows >= 0], minlength=layout.num_channels)
    top = max(int(loads.max(initial=0)), target)
    for s in np.flatnonzero(chosen_rows[:, 1] >= 0).tolist():  # undo detours the maximum does not need
        direct = table[first[s]]
        if direct[1] < 0 and loads[direct[0]] + 1 <= top:
            loads[chosen_rows[s]] -= 1
            loads[direct[0]] += 1
            chosen_rows[s] = direct
    return chosen_rows, int(loads.max(initial=0))


def route_phase_layered(topology, src: np.ndarray, dst: np.ndarray, options: DragonflyLayeredOptions,
                        seed: int = 0) -> tuple[Paths, DragonflyLayeredReport]:
    layout = DragonflyLayout(topology)
    view, network = layout.view, topology.network()
    report = DragonflyLayeredReport()
    a, b = view.terminal_router[src], view.terminal_router[dst]
    moving = src != dst
    terminal = np.concatenate([view.injection[src[moving]], view.ejection[dst[moving]]])
    floor = int(np.bincount(terminal, minlength=network.num_channels).max(initial=0))
    g = layout.groups
    inter = np.flatnonzero(moving & (g[a] != g[b]))
    intra = np.flatnonzero(moving & (g[a] == g[b]) & (a != b))
    report.messages = len(inter)
    cut = ~layout.can_join(a[intra], b[intra])
    if cut.any():
        names = view.router_names
        raise SynthError(f"--router layered: routers {names[int(a[intra][cut][0])]} and {names[int(b[intra][cut][0])]} "
                         f"of one group are not joined by one or two local links on this network; route it with paths "
                         f"or minimal")
    system = _system(layout, a[inter], b[inter])
    report.choices = len(system.item)
    routers = len(g)
    fixed_out = np.bincount(a[intra], minlength=routers)
    fixed_in = np.bincount(b[intra], minlength=routers)
    intra_direct = layout.local[g[a[intra]], layout.rank[a[intra]], layout.rank[b[intra]]]
    fixed_local = np.bincount(intra_direct[intra_direct >= 0], minlength=layout.num_channels)
    model = _SystemModel(layout, system, fixed_out, fixed_in, fixed_local)

    global_lp = lp_bound(network, src, dst, time_limit=LP_TIME_LIMIT)
    report.lp_bound = global_lp.bound
    target = max(floor, global_lp.bound, 1 if moving.any() else 0)
    report.system_bound = target  # the least target not ruled out: by the LP bound, then by the system layer
    intra_seg = np.stack([a[intra], b[intra]], axis=1)
    best, spent = None, 0.0

    def evaluate(choice: np.ndarray, at: int):
        """The whole phase for the system layer's `choice`: the group layer at target `at`."""
        nonlocal best, spent
        rows = system.chosen(choice)
        seg = np.concatenate([system.segments[rows].reshape(-1, 2), intra_seg])
        started = time.perf_counter()
        hops, local_max, failed = _group_layer(layout, seg, at, options, report, max(options.budget - spent, 0.05))
        spent += time.perf_counter() - started  # (the group layer's models share the phase's budget)
        used = system.globals_[rows]
        global_max = int(np.bincount(used[used >= 0], minlength=layout.num_channels).max(initial=0))
        achieved = max(floor, global_max, local_max)
        if best is None or achieved < best[0]:
            best = (achieved, at, choice, hops)
        return achieved, failed

    hint = np.zeros(len(inter), dtype=np.int64)
    upper = None
    if model.has_direct:
        # A start that already meets every bound: the system layer's routes with the local links
        # as they are (the strict form), greedy, then a descent and neighbourhoods on the busiest
        # channels (synth.routing.path_selection's machinery over these candidates).
        floor_load = np.bincount(terminal, minlength=network.num_channels) + fixed_local
        state = SelectionState(_direct_candidates(layout, system, a[inter], b[inter]), np.arange(len(inter)), floor_load)
        state.set(_greedy(state))
        report.moves = descend(state, target)
        if state.maximum > target:
            improver_report = PathsReport()
            improver = Improver(state, PathsOptions(solver=options.solver, time_limit=options.budget / 2,
                                                     threads=options.threads, glpk_options=options.glpk_options),
                                 improver_report, seed)
            improver.neighbourhoods(target)
            report.neighbourhoods, report.timeouts = improver_report.neighbourhoods, improver_report.timeouts
            spent += improver_report.solver_seconds
        hint, upper = state.choice, state.maximum
        evaluate(hint, upper)
    proven_below = True  # every target below `target` was ruled out
    slack = np.zeros(layout.num_groups, dtype=np.int64)  # per group: room kept for the group layer's detours
    most = int(moving.sum())  # no routing puts more messages than there are on one channel
    while upper is None or target < upper:
        if spent >= options.budget or target > most:  # out of time (or, degenerate, of targets): the best so far
            if best is None:
                evaluate(hint, target)
            break
        report.targets += 1
        problem = model.build(target, hint, slack)
        result = _solve_system(problem, options, hint, max(options.budget - spent, 0.05), report) \
            if problem is not None else None
        spent += result.seconds if result is not None else 0.0
        if result is None or result.status == INFEASIBLE:
            # Without slack no routing of the path space reaches the target (a proof); with slack the
            # target was feasible for the system layer and only the combination failed (no proof).
            proven_below &= not slack.any()
            if proven_below:
                report.system_bound = target + 1
            target, slack = target + 1, np.zeros_like(slack)
            continue
        if not result.solved:  # unknown at this target: the best routing so far, the gap reported
            proven_below = False
            if best is None:
                evaluate(hint, target)
            break
        achieved, failed = evaluate(result.choice, target)
        if achieved <= target:
            break
        # The layers disagree: the system layer is asked again at the same target, the routers of
        # the groups that failed keeping room for one more detour per local link; after
        # MAX_REFINEMENTS rounds the next target.
        hint = result.choice
        slack[sorted(failed)] += 1
        if slack.max() > MAX_REFINEMENTS:  # (this target was not ruled out: no proof below the next)
            proven_below = False
            target, slack = target + 1, np.zeros_like(slack)
    achieved, report.target, choice, hops = best
    report.detours = int((hops[:, 1] >= 0).sum())
    if achieved > floor:  # (at the terminal links' load the phase's own lower bound says it)
        if achieved <= report.lp_bound:
            report.proven_by = "lp"
        elif achieved <= report.system_bound:  # the system layer ruled out every smaller target
            report.proven_by = options.solver
    return _assemble(view, src, dst, inter, intra, system, choice, hops, moving), report


def _solve_system(problem, options, hint, budget, report):
    result = solve(problem, options.solver, budget, options.threads,
                   hint=hint if options.solver == "cpsat" and hint is not None and len(hint) else None,
                   glpk_options=options.glpk_options)
    report.solver_seconds += result.seconds
    report.timeouts += int(result.status == TIMEOUT)
    return result


def _assemble(view, src, dst, inter, intra, system: _System, choice, hops, moving) -> Paths:
    """Injection, the router hops in travel order, ejection. `hops` holds two local hops per
    segment: three segments per inter-group message (in `inter` order), then one per intra-group
    message."""
    rows = np.full((len(src), 10), -1, dtype=np.int64)
    rows[moving, 0] = view.injection[src[moving]]
    rows[moving, 9] = view.ejection[dst[moving]]
    if len(inter):
        local = hops[: 3 * len(inter)].reshape(len(inter), 3, 2)
        glob = system.globals_[system.chosen(choice)]
        rows[inter, 1:3], rows[inter, 3] = local[:, 0], glob[:, 0]
        rows[inter, 4:6], rows[inter, 6] = local[:, 1], glob[:, 1]
        rows[inter, 7:9] = local[:, 2]
    if len(intra):
        rows[intra, 1:3] = hops[3 * len(inter) :]
    return Paths.from_padded(rows)


class DragonflyLayeredRouter:
    """Router interface of synth.workflow: one phase at a time (one task per phase)."""

    expensive = True

    def __init__(self, options: DragonflyLayeredOptions):
        self.options = options
        if options.solver == "cpsat":
            import ortools.sat.python.cp_model  # noqa: F401  (OR-Tools loaded once here, not in every forked worker)

    def __call__(self, topology, src, dst, phase=None, occurrence=None, seed=0):
        return route_each_phase(route_phase_layered, self.options, topology, src, dst, phase, seed)


def _options(options: RouterOptions) -> DragonflyLayeredOptions:
    return DragonflyLayeredOptions(solver=options.solver, time_limit=options.time_limit, threads=options.threads,
                                   glpk_options=options.glpk_options)


def _label(options: RouterOptions, seed: int) -> str:
    o = _options(options)
    budget = f"{o.time_limit:g} s" if o.time_limit else f"{o.budget:g} s (default)"
    return f"layered (system layer: global links; group layer: local hops; solver {o.solver}, budget {budget} per phase)"


ROUTER = (
    RouterSpec("layered", DIRECT, "synthesized by layers ([Prisacari20] ch.3 on ch.4's hierarchy): the system layer "
               "chooses every message's global links (direct or through one intermediate group), the group layer its "
               "local hops (the local link or a two-hop detour)", lambda options: DragonflyLayeredRouter(_options(options)),
               key="layered-dragonfly", policy=VIA_GROUP, needs="groups", takes=SOLVER_OPTIONS, minimizes_messages=True,
               synthesis=_options, label=_label, proves=True, lp_proof_key="lp_bound", records_lp_bound=True,
               file_schema=FileSchema(
                   synthesis=("method", "solver", "time_limit", "threads"), synthesis_str=("method", "solver"),
                   counts=("messages", "choices", "lp_bound", "system_bound", "target", "targets", "group_models",
                           "detours", "timeouts"),
                   strings=("proven_by",)),
               report={"layered": ("synth layered", "flow")}, report_default=True, order=90),
)
