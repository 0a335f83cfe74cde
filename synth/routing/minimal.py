"""Minimal routing on any direct network, from the Network arrays alone (no family arithmetic).

On families built of groups (dragonflies, Topology.router_groups) a minimal path crosses at
most one global link, directly into the destination's group (Prisacari20 ch.5: L-G-L), even where a path
through a third group (G-G) has fewer hops: that is what a dragonfly's minimal routing means.

RouterView derives the router graph: every terminal's one injection and one ejection channel,
the routers' outgoing channels, the hop distance between every pair of routers (breadth-first,
scipy.sparse.csgraph) and, per (router, destination router), the lowest-numbered channel that
stays on a minimal path. Routing a batch of flows is then a walk of at most `diameter` steps,
vectorized over the flows: one table lookup per flow and step.

Routers (called as router(topology, src, dst, phase=, occurrence=, seed=), returning Paths):
- `minimal`: deterministic, at every router the lowest-numbered minimal channel;
- `minimal-random`: at every router a minimal channel chosen by a hash of (seed, source,
  destination, hop), so a pair keeps its path (in-order delivery) and pairs spread over the
  minimal paths.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from synth.core import memory
from synth.core.errors import SynthError
from synth.routing.registry import DIRECT, RouterSpec, fixed
from synth.core.interrupt import stoppable
from synth.routing.oblivious import mix64
from synth.topology.paths import Paths
from synth.topology.distances import hop_distances

# The distance and next-channel tables take 6 bytes per router pair: 8192 routers are 400 MB.
MAX_ROUTERS = 8192
# Per router pair: the distance (int16), the next channel (int32), unreachable (bool); with groups
# also the float64 distances of the one-global-hop sense and of the groups' own links while made.
TABLE_BYTES = 8
GROUPED_TABLE_BYTES = 24
WALK_CELLS = 1 << 22  # padded hops walked at a time (32 MB of int64)
_SALT = np.uint64(0x9E3779B97F4A7C15)


class RouterView:
    def __init__(self, network, groups: np.ndarray | None = None):
        n, r = network.num_terminals, network.num_nodes - network.num_terminals
        if r > MAX_ROUTERS:
            raise SynthError(f"{network.spec} has {r:,} routers; minimal routing keeps a table per router pair and "
                             f"handles at most {MAX_ROUTERS:,}")
        need, budget = (TABLE_BYTES if groups is None else GROUPED_TABLE_BYTES) * r * r, memory.budget()
        if need > budget.bytes:  # the tables are made before any flow is routed
            raise SynthError(f"{network.spec}: minimal routing's tables for {r:,} routers take about {memory.gib(need)}; "
                             f"synth plans with {budget} here")
        src, dst = network.channel_src, network.channel_dst
        injection, ejection = np.flatnonzero(src < n), np.flatnonzero(dst < n)
        if len(injection) != n or len(ejection) != n or (dst[injection] < n).any():
            raise SynthError(f"{network.spec}: minimal routing needs every terminal attached to one router by one link")
        self.num_terminals = n
        self.router_names = network.node_names[n:]
        self.injection = np.empty(n, dtype=np.int64)
        self.injection[src[injection]] = injection
        self.ejection = np.empty(n, dtype=np.int64)
        self.ejection[dst[ejection]] = ejection
        self.terminal_router = dst[self.injection] - n

        links = np.flatnonzero((src >= n) & (dst >= n))
        self.head = np.full(network.num_channels, -1, dtype=np.int64)
        self.head[links] = dst[links] - n
        tail = src[links] - n
        order = np.lexsort((links, tail))  # per router, channels by id
        degree = np.bincount(tail, minlength=r)
        self.out = np.full((r, int(degree.max(initial=0))), -1, dtype=np.int64)
        slot = np.arange(len(links)) - np.repeat(np.cumsum(degree) - degree, degree)
        self.out[tail[order], slot] = links[order]

        head = dst[links] - n
        graph = csr_matrix((np.ones(len(links)), (tail, head)), shape=(r, r))
        distance = None
        if groups is not None:
            distance = _hierarchical_distance(tail, head, groups)
            if np.isinf(distance).any() and (np.isinf(distance) & ~np.isinf(shortest_path(graph, unweighted=True))).any():
                # A degraded network (synth.topology.degraded) where the one-global-hop sense leaves
                # connected routers apart: minimal then means the graph's shortest paths.
                groups, distance = None, None
        if distance is None:
            self.distance = hop_distances(graph.indptr, graph.indices, r)
        else:
            self.distance = np.where(np.isinf(distance), -1, distance).astype(np.int16)
        self.groups = groups
        self.unreachable = self.distance < 0
        self.diameter = int(self.distance.max(initial=0))
        # next_channel[a, d]: the lowest-numbered channel from a that stays minimal towards d.
        self.next_channel = _next_channels(self.out, self.head, self.distance,
                                           np.zeros(r, dtype=np.int64) if groups is None else np.asarray(groups, dtype=np.int64),
                                           groups is not None)

    def _stays_minimal(self, at, head, target) -> np.ndarray:
        """Whether a hop at -> head stays on a minimal path to target (arrays broadcast). With
        groups, a hop that leaves the group must enter the target's: one global hop at most."""
        closer = self.distance[head, target] == self.distance[at, target] - 1
        if self.groups is None:
            return closer
        g = self.groups
        return closer & ((g[head] == g[at]) | (g[head] == g[target]))

    def minimal_choices(self, at: np.ndarray, target: np.ndarray) -> np.ndarray:
        """(flows, out-degree) mask of the channels from `at` that stay minimal towards `target`."""
        channels = self.out[at]
        heads = np.where(channels >= 0, self.head[np.maximum(channels, 0)], 0)
        return (channels >= 0) & self._stays_minimal(at[:, None], heads, target[:, None])

    def router_hops(self, at: np.ndarray, target: np.ndarray, pick=None) -> np.ndarray:
        """Channels of minimal router paths from `at` to `target`, shape (flows, diameter), -1 after
        the last hop. `pick(step, at, target, rows)` chooses each hop's channel; default the lowest-
        numbered minimal one."""
        at, target = np.asarray(at, dtype=np.int64).copy(), np.asarray(target, dtype=np.int64)
        unreachable = self.unreachable[at, target]
        if unreachable.any():
            k = int(np.flatnonzero(unreachable)[0])
            raise SynthError(f"router {self.router_name(int(target[k]))} cannot be reached from router "
                             f"{self.router_name(int(at[k]))}")
        hops = self.distance[at, target].astype(np.int64)
        matrix = np.full((len(at), self.diameter), -1, dtype=np.int64)
        for step in range(self.diameter):
            rows = np.flatnonzero(hops > step)
            if not len(rows):
                break
            if pick is None:
                channel = self.next_channel[at[rows], target[rows]].astype(np.int64)
            else:
                channel = pick(step, at[rows], target[rows], rows)
            matrix[rows, step] = channel
            at[rows] = self.head[channel]
        return matrix

    def walk(self, src: np.ndarray, dst: np.ndarray, pick=None) -> Paths:
        """Minimal paths of the flows: injection, router hops, ejection (empty for src == dst).
        Walked WALK_CELLS padded hops at a time: the padded matrix has diameter + 2 columns per
        flow, and on a ring of 1024 routers (diameter 512) a million flows would take 8.6 GB
        padded, twice while stacked, for 2.1 GB of paths."""
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        rows = max(1, WALK_CELLS // (self.diameter + 2))
        parts = []
        for start in range(0, max(len(src), 1), rows):
            chunk = slice(start, start + rows)
            chosen = pick if pick is None or start == 0 else \
                (lambda step, at, target, r, start=start: pick(step, at, target, r + start))  # rows of all the flows
            parts.append(self.assemble(src[chunk], dst[chunk], [self.router_hops(self.terminal_router[src[chunk]],
                                                                                 self.terminal_router[dst[chunk]], chosen)]))
        return parts[0] if len(parts) == 1 else Paths.concatenate(parts)

    def assemble(self, src: np.ndarray, dst: np.ndarray, segments: list[np.ndarray]) -> Paths:
        """Injection, the router-hop segments in order (-1 entries skipped), ejection; nothing for a
        message to itself."""
        moving = src != dst
        inject = np.where(moving, self.injection[src], -1)[:, None]
        eject = np.where(moving, self.ejection[dst], -1)[:, None]
        return Paths.from_padded(np.hstack([inject, *segments, eject]))

    def router_name(self, router: int) -> str:
        return self.router_names[router]

def _hierarchical_distance(tail: np.ndarray, head: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Router distances along paths with at most one hop between groups (a dragonfly's minimal
    paths, L-G-L: Prisacari20 ch.5), which can be longer than the graph's shortest paths (G-G through a
    third group). Within a group the group's own shortest paths; between groups the best
    u ~> x -> y ~> v over the links x -> y joining them."""
    r = len(groups)
    inside = groups[tail] == groups[head]
    local = shortest_path(csr_matrix((np.ones(int(inside.sum())), (tail[inside], head[inside])), shape=(r, r)),
                          unweighted=True, directed=True)
    distance = np.where(groups[:, None] == groups[None, :], local, np.inf)
    members = [np.flatnonzero(groups == k) for k in range(int(groups.max()) + 1)]
    for x, y in zip(tail[~inside].tolist(), head[~inside].tolist()):
        rows, cols = members[groups[x]], members[groups[y]]
        via = local[rows, x][:, None] + 1 + local[y, cols][None, :]
        distance[np.ix_(rows, cols)] = np.minimum(distance[np.ix_(rows, cols)], via)
    return distance


@functools.lru_cache(maxsize=4)
def router_view(topology) -> RouterView:
    """One RouterView per topology (topologies are immutable and hashable), built on first use.
    Families with groups (dragonfly) route minimally in their own sense: at most one global hop."""
    return RouterView(topology.network(), topology.router_groups())


def minimal(topology, src, dst, phase=None, occurrence=None, seed=0) -> Paths:
    return router_view(topology).walk(src, dst)


def minimal_random(topology, src, dst, phase=None, occurrence=None, seed=0) -> Paths:
    view = router_view(topology)
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    salt = mix64(np.uint64(seed & 0xFFFFFFFFFFFFFFFF) + _SALT)
    pair = mix64((src.astype(np.uint64) * np.uint64(view.num_terminals) + dst.astype(np.uint64)) ^ salt)

    def pick(step, at, target, rows):
        allowed = view.minimal_choices(at, target)
        count = allowed.sum(axis=1)
        k = (mix64(pair[rows] + np.uint64(step + 1)) % count.astype(np.uint64)).astype(np.int64)
        chosen = np.argmax(np.cumsum(allowed, axis=1) > k[:, None], axis=1)
        return view.out[at, chosen]

    return view.walk(src, dst, pick)


@stoppable
@njit(cache=True, nogil=True)
def _next_channels(out, head, distance, groups, grouped):
    """Per (router, destination router) the lowest-numbered channel (out lists them by id) whose
    hop stays on a minimal path; with groups, a hop leaving the group must enter the target's."""
    r = out.shape[0]
    table = np.full((r, r), -1, dtype=np.int32)
    for at in range(r):
        for target in range(r):
            for slot in range(out.shape[1]):
                channel = out[at, slot]
                if channel < 0:
                    break
                to = head[channel]
                if distance[to, target] == distance[at, target] - 1 and (
                        not grouped or groups[to] == groups[at] or groups[to] == groups[target]):
                    table[at, target] = channel
                    break
    return table


ROUTER = (
    RouterSpec("minimal", DIRECT, "a shortest path, the lowest-numbered channel at every router", fixed(minimal),
               consistent=True, report={"minimal": ("minimal", "flow")}, report_default=True, order=40),
    RouterSpec("minimal-random", DIRECT, "a shortest path, a seeded choice per pair at every router",
               fixed(minimal_random), report={"minimal-random": ("minimal-random", "flow")}, order=40),
)
