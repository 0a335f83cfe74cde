"""Virtual lanes that make routes deadlock-free: each path gets a lane so that, lane by lane, the
channel dependency graph (synth.routing.dependencies) of the paths on it is acyclic.

Two heuristics, and the assignment of fewer lanes is kept (`assign_lanes`; each count is an upper bound on the
least number needed, not a proof of it):
- layered, DFSSSP's own rule (Domke, Hoefler and Nagel, IPDPS 2011): every path starts on lane 0; while the
  paths of lane l have a dependency cycle, the edge of that cycle which the fewest of them induce is broken by
  moving exactly those paths up to lane l + 1; then lane l + 1 gets the same treatment;
- first fit: paths one by one, longest first, each on the lowest lane whose dependency graph stays acyclic with
  it, kept acyclic under insertions by an incremental topological order (Pearce and Kelly, ACM JEA 2006).

Paths are given flat, every phase of a routes file together: a fabric's tables hold all of them.
"""

from __future__ import annotations

import numpy as np

from synth.core.errors import SynthError
from synth.routing.dependencies import DependencyGraph, dependencies, find_cycle

MAX_VLS = 15  # InfiniBand's data virtual lanes: VL0..VL14 (VL15 carries subnet management)
COMMON_DATA_VLS = 8  # what switches commonly run (ibsim's ports: VL0-7)


class TooManyLanes(SynthError):
    """The lane heuristics need more lanes than they were given."""


def lane_cycle(channels: np.ndarray, lengths: np.ndarray, lanes: np.ndarray, num_channels: int,
               lane: int) -> list[int] | None:
    """A dependency cycle among the paths on `lane`, or None."""
    on = lanes == lane
    graph = DependencyGraph(num_channels)
    graph.add_paths(channels[np.repeat(on, lengths)], lengths[on])
    return graph.cycle()


def assign_lanes(channels: np.ndarray, lengths: np.ndarray, num_channels: int, max_lanes: int) -> np.ndarray:
    """A lane per path: the fewer lanes of the first-fit and the layered heuristics (first fit on a tie); refuses
    when both would need more than `max_lanes`. So the count is never above what DFSSSP's layering needs for the
    same paths."""
    fitted = first_fit_lanes(channels, lengths, num_channels, max_lanes)
    # layering must do better to count; below two lanes it cannot (one lane: the whole graph acyclic, and then
    # first fit has one too)
    budget = max_lanes if fitted is None else int(fitted.max(initial=0))
    layered = None
    if budget > 1:
        try:
            layered = layered_lanes(channels, lengths, num_channels, budget)
        except TooManyLanes:
            pass
    if layered is not None and (fitted is None or layered.max(initial=0) < fitted.max(initial=0)):
        return layered
    if fitted is None:
        raise TooManyLanes(f"the routes need more than {max_lanes} virtual lanes with either heuristic (first fit, "
                           f"layered)")
    return fitted


def first_fit_lanes(channels: np.ndarray, lengths: np.ndarray, num_channels: int, max_lanes: int) -> np.ndarray | None:
    """Each path, longest first (ties: in their order), on the lowest lane whose dependency graph stays acyclic
    with its dependencies; None when a path fits on none of `max_lanes` lanes."""
    channels, lengths = np.asarray(channels, dtype=np.int64), np.asarray(lengths, dtype=np.int64)
    _check_simple(channels, lengths, num_channels)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    flat = channels.tolist()
    lanes = np.full(len(lengths), -1, dtype=np.int64)
    graphs: list[_AcyclicGraph] = []
    for p in np.argsort(-lengths, kind="stable").tolist():
        path = flat[starts[p]: starts[p] + lengths[p]]
        edges = list(zip(path, path[1:]))
        for lane in range(max_lanes):
            if lane == len(graphs):
                graphs.append(_AcyclicGraph())
            if graphs[lane].add_all(edges):
                lanes[p] = lane
                break
        else:
            return None
    return lanes


class _AcyclicGraph:
    """A directed graph kept acyclic under edge insertions, with a topological order maintained incrementally
    (Pearce and Kelly's algorithm: only the nodes between an inserted edge's ends in the order are reordered)."""

    def __init__(self):
        self.out: dict[int, set[int]] = {}
        self.into: dict[int, set[int]] = {}
        self.order: dict[int, int] = {}  # node -> its position in a topological order

    def _node(self, v: int) -> None:
        if v not in self.order:
            self.order[v] = len(self.order)
            self.out[v], self.into[v] = set(), set()

    def add_all(self, edges: list[tuple[int, int]]) -> bool:
        """Insert the edges, or none of them (False) if together they would close a cycle."""
        added = []
        for a, b in edges:
            if b in self.out.get(a, ()):
                continue
            if not self._insert(a, b):
                for x, y in added:
                    self.out[x].discard(y)
                    self.into[y].discard(x)
                return False
            added.append((a, b))
        return True

    def _insert(self, a: int, b: int) -> bool:
        self._node(a)
        self._node(b)
        lower, upper = self.order[b], self.order[a]
        if lower > upper:  # already in order
            self.out[a].add(b)
            self.into[b].add(a)
            return True
        forward, stack, seen = [], [b], {b}  # what b reaches within the affected region
        while stack:
            v = stack.pop()
            forward.append(v)
            for w in self.out[v]:
                if w == a:
                    return False  # b reaches a: a -> b would close a cycle
                if w not in seen and self.order[w] < upper:
                    seen.add(w)
                    stack.append(w)
        backward, stack, back_seen = [], [a], {a}  # what reaches a within the region
        while stack:
            v = stack.pop()
            backward.append(v)
            for w in self.into[v]:
                if w not in back_seen and self.order[w] > lower:
                    back_seen.add(w)
                    stack.append(w)
        # the region's positions, reused: everything reaching a first, then everything b reaches
        moved = sorted(backward, key=self.order.__getitem__) + sorted(forward, key=self.order.__getitem__)
        slots = sorted(self.order[v] for v in moved)
        for v, slot in zip(moved, slots):
            self.order[v] = slot
        self.out[a].add(b)
        self.into[b].add(a)
        return True


def _check_simple(channels: np.ndarray, lengths: np.ndarray, num_channels: int) -> None:
    """A path through one channel twice depends on itself: no lane can help (one line)."""
    path_of = np.repeat(np.arange(len(lengths)), lengths)
    pairs = np.unique(path_of * num_channels + channels, return_counts=True)
    if (pairs[1] > 1).any():
        path, channel = divmod(int(pairs[0][np.argmax(pairs[1] > 1)]), num_channels)
        raise SynthError(f"path {path} crosses channel {channel} twice, so its own channel dependencies form a cycle "
                         f"that no virtual lane assignment can break")


def layered_lanes(channels: np.ndarray, lengths: np.ndarray, num_channels: int, max_lanes: int) -> np.ndarray:
    """A lane per path by DFSSSP's layering; refuses when more than `max_lanes` would be needed."""
    channels, lengths = np.asarray(channels, dtype=np.int64), np.asarray(lengths, dtype=np.int64)
    _check_simple(channels, lengths, num_channels)
    keys, owner = dependencies(channels, lengths, num_channels)
    # One graph of the distinct dependencies, kept with per-edge counts of the current lane's paths:
    # moving paths up only lowers counts, so no lane graph is rebuilt from the paths per cycle.
    edge_keys, edge_of = np.unique(keys, return_inverse=True)
    tail, head = edge_keys // num_channels, edge_keys % num_channels
    by_edge = np.argsort(edge_of, kind="stable")  # dependency entries grouped by edge
    edge_ptr = np.searchsorted(edge_of[by_edge], np.arange(len(edge_keys) + 1))
    by_path = np.argsort(owner, kind="stable")  # dependency entries grouped by path
    path_ptr = np.searchsorted(owner[by_path], np.arange(len(lengths) + 1))
    lanes = np.zeros(len(lengths), dtype=np.int64)
    lane = 0
    while (lanes == lane).any():
        count = np.bincount(edge_of[lanes[owner] == lane], minlength=len(edge_keys))
        while (cycle := find_cycle(tail[count > 0], head[count > 0], num_channels)) is not None:
            cycle_edges = np.searchsorted(edge_keys, [a * num_channels + b for a, b in zip(cycle, cycle[1:] + cycle[:1])])
            cheapest = int(cycle_edges[np.argmin(count[cycle_edges])])  # the cheapest edge of the cycle to break
            entries = by_edge[edge_ptr[cheapest] : edge_ptr[cheapest + 1]]
            movers = np.unique(owner[entries][lanes[owner[entries]] == lane])
            lanes[movers] = lane + 1
            moved = np.concatenate([by_path[path_ptr[p] : path_ptr[p + 1]] for p in movers.tolist()])
            count -= np.bincount(edge_of[moved], minlength=len(edge_keys))
        lane += 1
        if lane >= max_lanes and (lanes == lane).any():
            raise TooManyLanes(f"the routes need more than {max_lanes} virtual lanes with this assignment (the layered "
                               f"heuristic)")
    return lanes


MAX_EXACT_PATHS = 50_000  # a literal per path and lane, per dependency and lane, a position per channel and lane


def exact_lanes(channels: np.ndarray, lengths: np.ndarray, num_channels: int, max_lanes: int,
                time_limit: float = 60.0) -> tuple[np.ndarray, bool]:
    """The least number of lanes, by CP-SAT. The heuristics give an upper bound H; then for K = H - 1, H - 2, ...
    a model puts every path on one of K lanes: a dependency is on a lane when one of its paths is, and every lane
    has a position for each channel that strictly increases along its dependencies (an order exists exactly when
    the lane is acyclic). The longest path is put on lane 0 (the lanes are interchangeable). The first K proven
    infeasible makes K + 1 the minimum; K = 1 is decided by the dependency graph's own acyclicity. Returns the
    lanes and whether the count is proven least (False: CP-SAT ran out of time on a smaller count, so the count
    is an upper bound). `time_limit` applies to each K."""
    from ortools.sat.python import cp_model

    from synth.solve.cpsat import configure, run_solver

    channels, lengths = np.asarray(channels, dtype=np.int64), np.asarray(lengths, dtype=np.int64)
    if len(lengths) > MAX_EXACT_PATHS:
        raise SynthError(f"the exact lane model takes at most {MAX_EXACT_PATHS:,} paths, the routes have {len(lengths):,}")
    best = assign_lanes(channels, lengths, num_channels, max_lanes)
    keys, owner = dependencies(channels, lengths, num_channels)
    if best.max(initial=0) == 0:  # one lane (or none) suffices: nothing to prove
        return best, True
    if best.max() == 1:  # two lanes; one would need the whole dependency graph acyclic, which it is not
        return best, True
    unique_keys, inverse = np.unique(keys, return_inverse=True)
    used = np.unique(np.concatenate([unique_keys // num_channels, unique_keys % num_channels]))
    tail = np.searchsorted(used, unique_keys // num_channels).tolist()
    head = np.searchsorted(used, unique_keys % num_channels).tolist()
    pairs = np.unique(inverse.astype(np.int64) * len(lengths) + owner)  # (dependency, path), each once
    first = int(np.argmax(lengths))
    for count in range(int(best.max()), 1, -1):  # the heuristics' count is `count + 1`: try one fewer
        model = cp_model.CpModel()
        on = [[model.new_bool_var(f"p{p}l{k}") for k in range(count)] for p in range(len(lengths))]
        for literals in on:
            model.add_exactly_one(literals)
        model.add(on[first][0] == 1)
        uses = [[model.new_bool_var(f"e{e}l{k}") for k in range(count)] for e in range(len(unique_keys))]
        for key in pairs.tolist():
            e, p = divmod(key, len(lengths))
            for k in range(count):
                model.add_implication(on[p][k], uses[e][k])
        position = [[model.new_int_var(0, len(used) - 1, f"c{c}l{k}") for c in range(len(used))] for k in range(count)]
        for e in range(len(unique_keys)):
            for k in range(count):
                model.add(position[k][tail[e]] < position[k][head[e]]).only_enforce_if(uses[e][k])
        solver = cp_model.CpSolver()
        configure(solver.parameters, time_limit, threads=1)
        status = run_solver(solver, model)
        if status == cp_model.INFEASIBLE:
            return best, True
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return np.unique(best, return_inverse=True)[1].reshape(-1), False  # out of time (lanes numbered densely)
        best = np.array([next(k for k in range(count) if solver.boolean_value(on[p][k])) for p in range(len(lengths))])
    return best, True  # two lanes, and one cannot do (the graph has a cycle)
