"""Up*/down* routing on direct networks, as OpenSM's `updn` engine does it (doc/current-routing.txt,
osm_ucast_updn.c): deadlock-free on one virtual lane, whatever the topology.

Ranks: every router gets its breadth-first distance from the root (links taken both ways), and
every router link a direction: *up* when it goes to a router of lower (rank, router index), *down*
otherwise (OpenSM: to a lower rank, on equal ranks by node id; synth's switch GUIDs follow the
router index, so the two orders agree). A legal path never takes an up link after a down link. Up
links alone cannot form a cycle (the order strictly decreases along them), down links neither, and
a channel dependency from a down to an up link never occurs: the channel dependencies of legal
paths are acyclic, so `synth check` finds them so.

Roots: one per connected component of the router graph, the router of least eccentricity (a
centre), the lowest-numbered on a tie. A centre keeps the ranks as shallow as the component allows,
and the up/down restriction lengthens paths the less the shallower the ranks (a legal path between
a and b has at most rank(a) + rank(b) router hops). The rule depends on the network alone (no seed),
and a degraded network (synth.topology.degraded) gets a root in every part it falls into. OpenSM
instead reads roots from a GUID file (`-a`) or detects them: a switch whose hop counts to 90% of the
CAs are one value (a fat tree's spine). Direct networks rarely have such switches, so OpenSM then
finds no root and refuses updn; given this module's roots in a GUID file it labels every link as
here. (OpenSM also treats a link between two roots as up both ways, a case one root per part avoids.)

Paths: among legal paths the shortest (OpenSM: min-hop under the up/down restriction), chosen per
router and destination terminal as OpenSM's LFTs balance them: every router walks the destination
terminals in order and gives each the out-channel, among those on a shortest legal path, that the
fewest destinations were given so far (the lowest-numbered on a tie). Because a legal path's
continuation depends on whether it has gone down yet, a router keeps two entries per destination:
one for paths still free to go up and one for paths that went down. Where a shortest legal path
from the router goes only down, the two are one entry (taken first: it leaves the links near the
root to paths that need them); elsewhere paths to one destination may leave a router two ways, and
`synth tables` gives such routes the LMC they need. A message to itself has an empty path.

The distances (shortest legal, and shortest all-down) are breadth-first searches over (router,
gone-down) states, compiled; the tables are a compiled loop over routers and destinations (R x N x 2
int32); a batch of flows is then walked vectorized, one table lookup per flow and hop.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from synth.core import memory
from synth.core.errors import SynthError
from synth.core.interrupt import stoppable
from synth.routing.minimal import WALK_CELLS, router_view
from synth.topology.paths import Paths
from synth.routing.registry import DIRECT, PathPolicy, RouterSpec, fixed
from synth.topology.distances import hop_distances

# Per router pair: the shortest legal and all-down distances and, at the peak, the distances between
# the four (router, gone down) state pairs (int16 each); per (router, terminal): the two table entries
# (int32 each).
PAIR_BYTES, ENTRY_BYTES = 12, 8


class UpDown:
    """Roots, ranks, link directions, legal distances and the two tables of a network."""

    def __init__(self, topology):
        view = router_view(topology)
        network = topology.network()
        r, n = len(view.out), view.num_terminals
        need = PAIR_BYTES * r * r + ENTRY_BYTES * r * n
        budget = memory.budget()
        if need > budget.bytes:
            raise SynthError(f"{network.spec}: up*/down* tables for {r:,} routers and {n:,} terminals take about "
                             f"{memory.gib(need)}; synth plans with {budget}")
        self.view = view
        links = np.flatnonzero(view.head >= 0)
        tail = network.channel_src[links] - n
        head = view.head[links]
        # Ranks: breadth-first from a centre of every component, links taken both ways.
        both = csr_matrix((np.ones(2 * len(links)), (np.concatenate([tail, head]), np.concatenate([head, tail]))),
                          shape=(r, r))
        both.sum_duplicates()
        hops = hop_distances(both.indptr, both.indices, r)
        parts, label = connected_components(both, directed=False)
        eccentricity = hops.max(axis=1).astype(np.int64)  # (-1 entries, other parts, never raise a maximum)
        order = np.lexsort((np.arange(r), eccentricity, label))  # per part: least eccentricity, then lowest index
        first = np.concatenate([[True], label[order][1:] != label[order][:-1]])
        self.roots = np.sort(order[first])
        root_of = np.empty(parts, dtype=np.int64)
        root_of[label[self.roots]] = self.roots
        self.rank = hops[root_of[label], np.arange(r)].astype(np.int64)
        del hops
        # A link is up when it goes to a lower (rank, index): one total order, so up links alone
        # never close a cycle, nor down links alone.
        self.key = self.rank * r + np.arange(r)
        self.channel_up = np.zeros(network.num_channels, dtype=np.bool_)
        self.channel_up[links] = self.key[head] < self.key[tail]
        # Legal distances: breadth-first over (router, gone down) states, 2v (may still go up) and
        # 2v + 1 (gone down): an up link v -> w leads from 2v to 2w, a down link from both states
        # of v to 2w + 1. The legal distance a ~> b is the nearer of b's states from 2a; the
        # all-down distance is 2b + 1 from 2a + 1.
        up = self.channel_up[links]
        state_tail = np.concatenate([2 * tail[up], 2 * tail[~up], 2 * tail[~up] + 1])
        state_head = np.concatenate([2 * head[up], 2 * head[~up] + 1, 2 * head[~up] + 1])
        states = csr_matrix((np.ones(len(state_tail)), (state_tail, state_head)), shape=(2 * r, 2 * r))
        far = hop_distances(states.indptr, states.indices, 2 * r)
        still_up, gone_down = far[0::2, 0::2], far[0::2, 1::2]
        self.distance = np.where((gone_down < 0) | ((still_up >= 0) & (still_up <= gone_down)), still_up, gone_down)
        self.down_distance = far[1::2, 1::2].copy()
        del far, still_up, gone_down
        self.diameter = int(self.distance.max(initial=0))
        self.up_table, self.down_table = _tables(view.out, view.head, self.channel_up, self.distance,
                                                 self.down_distance, view.terminal_router.astype(np.int64))

    def root_names(self) -> str:
        return ", ".join(self.view.router_name(int(k)) for k in self.roots)

    def walk(self, src: np.ndarray, dst: np.ndarray) -> Paths:
        """Shortest legal paths of the flows: injection, router hops, ejection (empty for src == dst),
        WALK_CELLS padded hops at a time (as RouterView.walk)."""
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        view = self.view
        a, b = view.terminal_router[src], view.terminal_router[dst]
        cut = (self.distance[a, b] < 0) & (src != dst)
        if cut.any():
            k = int(np.flatnonzero(cut)[0])
            raise SynthError(f"router {view.router_name(int(b[k]))} cannot be reached from router "
                             f"{view.router_name(int(a[k]))} by an up*/down* path (roots {self.root_names()})")
        rows = max(1, WALK_CELLS // (self.diameter + 2))
        parts = []
        for start in range(0, max(len(src), 1), rows):
            s, d = src[start:start + rows], dst[start:start + rows]
            parts.append(view.assemble(s, d, [self._router_hops(view.terminal_router[s], d)]))
        return parts[0] if len(parts) == 1 else Paths.concatenate(parts)

    def _router_hops(self, at: np.ndarray, dst: np.ndarray) -> np.ndarray:
        at = at.copy()
        hops = self.distance[at, self.view.terminal_router[dst]].astype(np.int64)
        matrix = np.full((len(at), self.diameter), -1, dtype=np.int64)
        gone_down = np.zeros(len(at), dtype=bool)
        for step in range(self.diameter):
            rows = np.flatnonzero(hops > step)
            if not len(rows):
                break
            channel = np.where(gone_down[rows], self.down_table[at[rows], dst[rows]],
                               self.up_table[at[rows], dst[rows]]).astype(np.int64)
            matrix[rows, step] = channel
            gone_down[rows] |= ~self.channel_up[channel]
            at[rows] = self.view.head[channel]
        return matrix

    def legal(self, routers: np.ndarray) -> np.ndarray:
        """Per row of visited routers (paths, k + 1): no up link after a down link, and k hops, the
        shortest legal length."""
        if routers.shape[1] < 2:
            return np.ones(len(routers), dtype=bool)
        routers = np.where((routers >= 0) & (routers < len(self.key)), routers, 0)  # (rows the checker refuses anyway)
        up = self.key[routers[:, 1:]] < self.key[routers[:, :-1]]
        gone_down = np.logical_or.accumulate(~up, axis=1)
        turns_up = (gone_down[:, :-1] & up[:, 1:]).any(axis=1)
        return ~turns_up & (self.distance[routers[:, 0], routers[:, -1]] == routers.shape[1] - 1)


@functools.lru_cache(maxsize=4)
def updown_view(topology) -> UpDown:
    """One UpDown per topology (immutable and hashable), built on first use."""
    return UpDown(topology)


def updown(topology, src, dst, phase=None, occurrence=None, seed=0) -> Paths:
    return updown_view(topology).walk(src, dst)


def _refusal(topology) -> str | None:
    """Links that go one way only (Kautz) may leave pairs without any legal path (on a one-way ring
    every order of the routers puts a peak inside some path): such networks are refused."""
    network = topology.network()
    n = network.num_terminals
    links = (network.channel_src >= n) & (network.channel_dst >= n)
    size = network.num_nodes
    forward = np.unique(network.channel_src[links] * size + network.channel_dst[links])
    backward = np.unique(network.channel_dst[links] * size + network.channel_src[links])
    if len(forward) != len(backward) or not np.array_equal(forward, backward):
        return (f"updown needs every router link both ways (up*/down* labels a link's two directions), and "
                f"{topology.family}'s links are one-way")
    return None


def _verifier(topology):
    """`synth check`'s test of this router's paths (PathPolicy.check)."""
    view = updown_view(topology)
    requirement = f"a shortest up*/down* path (roots {view.root_names()}: no up link after a down link)"
    return lambda routers: (view.legal(routers), requirement)


@stoppable
@njit(cache=True, nogil=True)
def _tables(out, head, up, legal, down, terminal_router):
    """Per (router, destination terminal) the out-channel of paths that may still go up and of paths
    that went down (-1: none), each the least used so far at that router among the channels on a
    shortest legal path (the lowest-numbered on a tie: `out` lists a router's channels by id)."""
    r, n = out.shape[0], len(terminal_router)
    up_table = np.full((r, n), -1, dtype=np.int32)
    down_table = np.full((r, n), -1, dtype=np.int32)
    used = np.zeros(len(head), dtype=np.int64)
    for at in range(r):
        for t in range(n):
            b = terminal_router[t]
            total = legal[at, b]
            if b == at or total < 0:
                continue
            going_down = down[at, b]
            if going_down > 0:  # the channels starting an all-down shortest path
                best = -1
                for slot in range(out.shape[1]):
                    c = out[at, slot]
                    if c < 0:
                        break
                    if not up[c] and down[head[c], b] == going_down - 1 and (best < 0 or used[c] < used[best]):
                        best = c
                down_table[at, t] = best
                used[best] += 1
                if going_down == total:  # a shortest legal path goes down from here: one entry
                    up_table[at, t] = best
                    continue
            best = -1  # a shortest legal path goes up first
            for slot in range(out.shape[1]):
                c = out[at, slot]
                if c < 0:
                    break
                if up[c] and legal[head[c], b] == total - 1 and (best < 0 or used[c] < used[best]):
                    best = c
            up_table[at, t] = best
            used[best] += 1
    return up_table, down_table


UP_DOWN = PathPolicy("up*/down*", "shortest up*/down* (no up link after a down link, ranks from the roots of least "
                     "eccentricity)", _verifier)

ROUTER = (
    RouterSpec("updown", DIRECT, "OpenSM's up*/down*: a shortest path that never goes up after going down (ranks "
               "from a centre), balanced per router over destinations; deadlock-free on one lane", fixed(updown),
               policy=UP_DOWN, refuses=_refusal, report={"updown": ("updown", "flow")},
               label=lambda options, seed: "updown (up*/down*, a root of least eccentricity per part)", order=100),
)
