"""Virtual lanes that make routes deadlock-free: each path gets a lane so that, lane by lane, the
channel dependency graph (synth.routing.dependencies) of the paths on it is acyclic.

The heuristic is layered in the spirit of DFSSSP (Domke, Hoefler and Nagel, IPDPS 2011): every path
starts on lane 0; while the paths of lane l have a dependency cycle, the edge of that cycle which
the fewest of them induce is broken by moving exactly those paths up to lane l + 1; then lane l + 1
gets the same treatment. Lanes only ever receive paths from below, so the count it ends with is an
upper bound on the least number needed (not a proof of it).

Paths are given flat, every phase of a routes file together: a fabric's tables hold all of them.
"""

from __future__ import annotations

import numpy as np

from synth.core.errors import SynthError
from synth.routing.dependencies import DependencyGraph, dependencies, find_cycle

MAX_VLS = 15  # InfiniBand's data virtual lanes: VL0..VL14 (VL15 carries subnet management)
COMMON_DATA_VLS = 8  # what switches commonly run (ibsim's ports: VL0-7)


class TooManyLanes(SynthError):
    """The layered heuristic needs more lanes than it was given."""


def lane_cycle(channels: np.ndarray, lengths: np.ndarray, lanes: np.ndarray, num_channels: int,
               lane: int) -> list[int] | None:
    """A dependency cycle among the paths on `lane`, or None."""
    on = lanes == lane
    graph = DependencyGraph(num_channels)
    graph.add_paths(channels[np.repeat(on, lengths)], lengths[on])
    return graph.cycle()


def assign_lanes(channels: np.ndarray, lengths: np.ndarray, num_channels: int, max_lanes: int) -> np.ndarray:
    """A lane per path (DFSSSP-style layering); refuses when more than `max_lanes` would be needed."""
    channels, lengths = np.asarray(channels, dtype=np.int64), np.asarray(lengths, dtype=np.int64)
    path_of = np.repeat(np.arange(len(lengths)), lengths)
    pairs = np.unique(path_of * num_channels + channels, return_counts=True)
    if (pairs[1] > 1).any():  # a path through one channel twice depends on itself: no lane can help
        path, channel = divmod(int(pairs[0][np.argmax(pairs[1] > 1)]), num_channels)
        raise SynthError(f"path {path} crosses channel {channel} twice, so its own channel dependencies form a cycle "
                         f"that no virtual lane assignment can break")
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


MAX_EXACT_PATHS = 2000  # the exact model has a literal per path and lane, and an ordering per lane: small instances


def exact_lanes(channels: np.ndarray, lengths: np.ndarray, num_channels: int, max_lanes: int,
                time_limit: float = 60.0) -> tuple[np.ndarray, bool]:
    """The least number of lanes, by CP-SAT: for K = 1, 2, ... a model that puts every path on one
    of K lanes with, per lane, a position for every channel that strictly increases along each
    dependency of the lane's paths (an order exists exactly when the lane is acyclic). The first
    feasible K is the minimum once every smaller K was proven infeasible. Returns the lanes and
    whether that proof was completed (False: a smaller K timed out, the count is an upper bound)."""
    from ortools.sat.python import cp_model

    from synth.solve.cpsat import configure, run_solver

    channels, lengths = np.asarray(channels, dtype=np.int64), np.asarray(lengths, dtype=np.int64)
    if len(lengths) > MAX_EXACT_PATHS:
        raise SynthError(f"the exact lane model takes at most {MAX_EXACT_PATHS:,} paths, the routes have {len(lengths):,}")
    heuristic = assign_lanes(channels, lengths, num_channels, max_lanes)
    if heuristic.max(initial=0) == 0:  # one lane (or none) suffices: nothing to prove
        return heuristic, True
    keys, owner = dependencies(channels, lengths, num_channels)
    unique_keys, inverse = np.unique(keys, return_inverse=True)
    used = np.unique(np.concatenate([unique_keys // num_channels, unique_keys % num_channels]))
    index = {int(c): i for i, c in enumerate(used.tolist())}
    proven = True
    for count in range(1, int(heuristic.max(initial=-1)) + 1):
        model = cp_model.CpModel()
        on = [[model.new_bool_var(f"p{p}l{k}") for k in range(count)] for p in range(len(lengths))]
        for literals in on:
            model.add_exactly_one(literals)
        position = [[model.new_int_var(0, len(used) - 1, f"c{c}l{k}") for c in range(len(used))] for k in range(count)]
        for e, key in enumerate(unique_keys.tolist()):
            a, b = index[key // num_channels], index[key % num_channels]
            for p in np.unique(owner[inverse == e]).tolist():
                for k in range(count):
                    model.add(position[k][a] < position[k][b]).only_enforce_if(on[p][k])
        solver = cp_model.CpSolver()
        configure(solver.parameters, time_limit, threads=1)
        status = run_solver(solver, model)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            lanes = np.array([next(k for k in range(count) if solver.boolean_value(on[p][k])) for p in range(len(lengths))])
            return lanes, proven
        if status != cp_model.INFEASIBLE:
            proven = False  # out of time: this count is undecided
    return heuristic, proven
