"""Destination-consistent routes on direct networks (`--router paths --consistency destination`):
what a fabric with one LID per terminal (no LMC) can hold.

A switch forwards by destination only, so every flow to terminal d that reaches router r leaves
it by one channel, in every phase: the routes to d form a tree into d's router. Here each unit
(r, d) chooses among r's minimal next channels towards d's router (a dragonfly's minimal sense:
one global hop at most), so every choice keeps the tree loop-free and every path minimal.

The choice is greedy per destination, over all selected phases at once (they share the tables):
destinations in order; for destination d the routers in decreasing distance from d's router, so
that when router r chooses, every router upstream of it has chosen and the flows through r are
known per phase (its own sources plus what its upstream routers send it); r takes the next
channel whose busiest phase would carry the fewest messages after adding them (ties: the least
sum of squared loads over the phases, then the lowest-numbered channel). The result is compared with the minimal router's (itself destination-
consistent: the lowest-numbered channel at every router) and the better one is returned, so it is
never worse than minimal. It is a heuristic: the status is optimal only where the bound is reached.
"""

from __future__ import annotations

import numpy as np

from synth.routing.minimal import minimal, router_view
from synth.routing.paths_options import PathsOptions, PathsReport
from synth.topology.paths import Paths


def route_consistent(topology, src: np.ndarray, dst: np.ndarray, phase: np.ndarray) -> tuple[Paths, str]:
    """Paths of all flows (every phase) with one next channel per (router, destination); and which
    construction won ("greedy" or "minimal")."""
    view = router_view(topology)
    network = topology.network()
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    phases, phase_index = np.unique(np.asarray(phase, dtype=np.int64), return_inverse=True)
    routers = len(view.distance)
    load = np.zeros((len(phases), network.num_channels), dtype=np.int64)
    moving = src != dst
    np.add.at(load, (phase_index[moving], view.injection[src[moving]]), 1)
    np.add.at(load, (phase_index[moving], view.ejection[dst[moving]]), 1)
    next_channel = {}  # destination terminal -> (routers,) chosen channel, -1 where unused
    a = view.terminal_router[src]
    for d in np.unique(dst[moving]).tolist():
        mine = np.flatnonzero(moving & (dst == d))
        target = int(view.terminal_router[d])
        through = np.zeros((routers, len(phases)), dtype=np.int64)  # flows at each router, per phase
        np.add.at(through, (a[mine], phase_index[mine]), 1)
        choice = np.full(routers, -1, dtype=np.int64)
        order = np.argsort(-view.distance[:, target].astype(np.int64), kind="stable")
        for r in order.tolist():
            if r == target or not through[r].any():
                continue
            options = view.out[r][view.minimal_choices(np.array([r]), np.array([target]))[0]]
            after = load[:, options] + through[r][:, None]
            # the busiest phase first, then the spread over phases (sum of squares), then the channel id
            best = np.lexsort((options, (after.astype(np.float64) ** 2).sum(axis=0), after.max(axis=0)))[0]
            channel = int(options[best])
            choice[r] = channel
            load[:, channel] += through[r]
            through[view.head[channel]] += through[r]
        next_channel[d] = choice
    greedy = _walk(view, src, dst, next_channel)
    base = minimal(topology, src, dst)
    if _peak(network, phase_index, len(phases), greedy) <= _peak(network, phase_index, len(phases), base):
        return greedy, "greedy"
    return base, "minimal"


def _walk(view, src, dst, next_channel: dict[int, np.ndarray]) -> Paths:
    a, b = view.terminal_router[src], view.terminal_router[dst]
    width = max(view.diameter, 1)
    hops = np.full((len(src), width), -1, dtype=np.int64)
    at = a.copy()
    table = np.full((max(next_channel, default=0) + 1, len(view.distance)), -1, dtype=np.int64)
    for d, choice in next_channel.items():
        table[d] = choice
    for step in range(width):
        going = (at != b) & (src != dst)
        if not going.any():
            break
        channel = table[dst[going], at[going]]
        hops[going, step] = channel
        at[going] = view.head[channel]
    return view.assemble(src, dst, [hops])


def _peak(network, phase_index: np.ndarray, num_phases: int, paths: Paths) -> int:
    keys = np.repeat(phase_index, paths.lengths()) * network.num_channels + paths.channels
    return int(np.bincount(keys, minlength=num_phases * network.num_channels).max(initial=0))


def is_destination_consistent(network, src, dst, paths: Paths) -> tuple[bool, str]:
    """Whether all paths to one destination leave every node they share by one channel (a check
    independent of how the routes were made)."""
    flow = paths.flow_of_hop()
    tail = network.channel_src[paths.channels]
    keys = np.asarray(dst)[flow] * network.num_nodes + tail
    order = np.lexsort((paths.channels, keys))
    k, c = keys[order], paths.channels[order]
    clash = (k[1:] == k[:-1]) & (c[1:] != c[:-1])
    if clash.any():
        i = int(np.flatnonzero(clash)[0])
        d, node = divmod(int(k[i]), network.num_nodes)
        return False, (f"flows to terminal {d} leave {network.node_names[node]} by channels {int(c[i])} and "
                       f"{int(c[i + 1])}")
    return True, ""


class ConsistentPathsRouter:
    """Router interface of synth.workflow for `--consistency destination`: every selected phase in
    one call (the phases share one set of tables), synth.routing.consistent_direct."""

    expensive = True
    whole_workload = True

    def __init__(self, options: PathsOptions):
        self.options = options

    def __call__(self, topology, src, dst, phase=None, occurrence=None, seed=0):
        phase = np.zeros(len(src), dtype=np.int64) if phase is None else np.asarray(phase, dtype=np.int64)
        paths, construction = route_consistent(topology, src, dst, phase)
        report = PathsReport(lp_status="none", start=construction)
        return paths, {int(p): report for p in np.unique(phase)}
