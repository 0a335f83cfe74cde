"""Every node pair routed at once as shortest-path forests: exchanges too large to list their paths.

An all-to-all of 4,096 ranks on the 64 x 64 torus joins 16.8 M rank pairs over 570 M channel hops:
as explicit paths (synth.topology.paths) that is 4.6 GB before a single load is counted. A forest
holds the same routing in the size of the routers squared: per source router u, the tree of
shortest paths from u (Dijkstra's predecessors), kept as the router before v and the channel into
v on u's tree (two routers x routers matrices, 24 MiB at 4,096 routers). A routing is F such
forests and, per ordered terminal pair, the forest it takes: `pick`, a fixed hash of the pair, so
that the routing is the fractional one averaging the forests rounded at random (Raghavan and
Thompson's randomized rounding), the same on every run. A pair of terminals takes its source's
injection link, its routers' path and its destination's ejection link, as every family's paths do.
The loads of any set of transfers along it are one compiled walk from each destination router
back to its source (`step_loads`), with no path stored.

The forests come from load spreading, synth.measure.lp_bound's stage 1 at this size (`spread`):
route every router pair along its shortest path under channel lengths that grow exponentially with
the utilization of the average flow so far. Each step brackets lambda*, the least busiest load of
any fractional routing of the demand (the multicommodity-flow LP), between two certified numbers:
- lower: for any lengths y >= 0, lambda* >= sum over pairs of d_ab dist_y(a, b) / sum over channels
  of bandwidth(c) y_c (weak LP duality, every path of (a, b) at least dist_y(a, b) long);
- upper: the busiest utilization of the average of the forests so far (a fractional routing).
The lower end bounds every schedule of the exchange, forwarding ones included (a forwarded block's
hops form a walk from its source to its destination, synth.synthesis.exchange); the routing's own
busiest load, whole blocks each on the path its pair picks, is what a schedule along it pays.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from numba import njit
from scipy.sparse.csgraph import dijkstra

from synth.core import memory
from synth.core.errors import SynthError
from synth.core.interrupt import native, stoppable
from synth.topology.paths import Paths

SPREAD_STEPS = 12  # forests made by load spreading at most (each one Dijkstra from every router)
SHARPNESS = 8.0  # how strongly the lengths grow with utilization (synth.measure.lp_bound's)
NUDGE = 1e-9  # added to every length so that Dijkstra sees zero-length channels (corrected in the bound)
MAX_ROUTERS = 1 << 15  # router indices kept as int16


@dataclass(frozen=True)
class ForestRouting:
    """F shortest-path forests over the routers and, per pair of terminals, the path its routers'
    pair picks (`pick`); the bracket of lambda* that spreading reached."""

    parent: np.ndarray  # (F, R, R) int16: the router before v on u's tree of forest f (-1 at the root u)
    into: np.ndarray  # (F, R, R) int32: the channel entering v on that tree (-1 at the root)
    cumulative: np.ndarray  # (F,) the forests' shares summed (the last 1): a pair takes f with f's share
    router_of: np.ndarray  # (n,) int64: the router (node - n) of every terminal
    injection: np.ndarray  # (n,) int64: every terminal's injection channel
    ejection: np.ndarray  # (n,) int64: every terminal's ejection channel
    hop: int  # the hop a message's port is at: 1 where nodes are their own routers (the first router link), else 0
    lower: float  # certified: lower <= lambda* (of the demand spread) <= upper
    upper: float
    steps: int  # spreading steps taken

    @property
    def forests(self) -> int:
        return self.parent.shape[0]

    def paths(self, a: np.ndarray, b: np.ndarray) -> Paths:
        """The explicit paths of terminal pairs (a, b) (a != b): for tests and small cases."""
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        lengths = np.empty(len(a), dtype=np.int64)
        _path_lengths(self.parent, self.cumulative, self.router_of, a, b, lengths)
        offsets = np.concatenate([[0], np.cumsum(lengths + 2)]).astype(np.int64)
        channels = np.empty(offsets[-1], dtype=np.int64)
        _fill_paths(self.parent, self.into, self.cumulative, self.router_of, self.injection, self.ejection, a, b, offsets, channels)
        return Paths(offsets, channels)


def check_memory(network, steps: int = SPREAD_STEPS) -> None:
    """One line, before anything is allocated, where spreading would not fit this machine: per
    router pair its demand and distance (8 bytes each), and per forest kept its parent and channel
    (6 bytes), the flow's loads besides."""
    routers = network.num_nodes - network.num_terminals
    need = routers * routers * (16 + 6 * (steps + 1))
    budget = memory.budget()
    if need > budget.bytes:
        raise SynthError(f"{network.spec}: routing every pair along {steps} forests of {routers:,} routers takes about "
                         f"{memory.gib(need)}; synth plans with {budget} here")


def terminal_links(network) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per terminal: its router (node - n), its injection channel and its ejection channel; one
    line where a terminal is not attached to one router by one link each way."""
    n = network.num_terminals
    src, dst = network.channel_src, network.channel_dst
    injection = np.flatnonzero(src < n)
    ejection = np.flatnonzero(dst < n)
    if len(injection) != n or len(ejection) != n or (dst[injection] < n).any() or (src[ejection] < n).any():
        raise SynthError(f"{network.spec}: routing by forests needs every terminal attached to one router by one link")
    inj = np.empty(n, dtype=np.int64)
    inj[src[injection]] = injection
    ej = np.empty(n, dtype=np.int64)
    ej[dst[ejection]] = ejection
    return (dst[inj] - n).astype(np.int64), inj, ej


class _Routers:
    """The router-to-router channels, for Dijkstra, and per router the channels entering it."""

    def __init__(self, network):
        n = network.num_terminals
        self.routers = network.num_nodes - n
        if self.routers >= MAX_ROUTERS:
            raise SynthError(f"{network.spec}: {self.routers:,} routers, more than the {MAX_ROUTERS - 1:,} forests take")
        channels = np.flatnonzero((network.channel_src >= n) & (network.channel_dst >= n))
        tail = (network.channel_src[channels] - n).astype(np.int64)
        head = (network.channel_dst[channels] - n).astype(np.int64)
        order = np.lexsort((channels, head))  # entering channels grouped by head router
        self.channels, self.tail, self.head = channels[order], tail[order], head[order]
        self.indptr = np.searchsorted(self.head, np.arange(self.routers + 1)).astype(np.int64)
        self.bandwidth = network.channel_bandwidth[self.channels].astype(np.float64)

    def forest(self, length: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Shortest paths from every router under `length` (per router channel, plus NUDGE): the
        distances (R, R), and a tree per source whose every router v enters by a channel on a
        shortest path, chosen among the ties by a hash of (source, v, seed): parents (int16) and the
        channels into every router (int32). Ties broken at random spread the loads where Dijkstra's
        own predecessors would send every tie one way (a torus's half-way pairs, its dimension orders)."""
        from scipy.sparse import csr_matrix

        r = self.routers
        weight = length + NUDGE
        # the cheapest channel per linked router pair (csr_matrix would add parallel channels up)
        order = np.lexsort((weight, self.tail * r + self.head))
        key = (self.tail * r + self.head)[order]
        first = np.ones(len(order), dtype=bool)
        first[1:] = key[1:] != key[:-1]
        best = order[first]
        graph = csr_matrix((weight[best], (self.tail[best], self.head[best])), shape=(r, r))
        distance = native(lambda: dijkstra(graph, directed=True))
        if np.isinf(distance).any():
            u, v = np.argwhere(np.isinf(distance))[0]
            raise SynthError(f"router {u} cannot reach router {v}")
        parent = np.full((r, r), -1, dtype=np.int16)
        into = np.full((r, r), -1, dtype=np.int32)
        _tight_parents(distance, self.indptr, self.tail, self.channels, weight, seed, parent, into)
        return distance, parent, into


@stoppable
@njit(cache=True, nogil=True)
def _tight_parents(distance, indptr, tail, channels, weight, seed, parent, into):
    """Per source u and router v != u: one channel entering v on a shortest path from u (its tail w
    at dist(u, w) + length = dist(u, v), within rounding), the k-th of the ties by a hash."""
    r = distance.shape[0]
    for u in range(r):
        for v in range(r):
            if v == u:
                continue
            target = distance[u, v]
            tolerance = 1e-12 * max(1.0, target)
            ties = 0
            for e in range(indptr[v], indptr[v + 1]):
                if abs(distance[u, tail[e]] + weight[e] - target) <= tolerance:
                    ties += 1
            k = np.int64(_hash(u * r + v, seed) % np.uint64(ties)) if ties > 1 else 0
            for e in range(indptr[v], indptr[v + 1]):
                if abs(distance[u, tail[e]] + weight[e] - target) <= tolerance:
                    if k == 0:
                        parent[u, v] = tail[e]
                        into[u, v] = channels[e]
                        break
                    k -= 1


@njit(cache=True, inline="always")
def _hash(a, b):
    """A fixed hash (splitmix64) of a pair of integers."""
    x = np.uint64(a) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(b) + np.uint64(0x632BE59BD9B4E019)
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


@njit(cache=True, inline="always")
def _pick(a, b, cumulative):
    """The forest the terminal pair (a, b) takes: forest f with probability its share (cumulative
    shares, the last 1), by the pair's hash read as a number in [0, 1). Per terminal pair, not per
    router pair: a dragonfly's global link carries a few hundred router pairs, each of 36 terminal
    pairs, and rounding whole router pairs left it 25% above the fractional flow."""
    x = np.float64(_hash(a, b) >> np.uint64(11)) * (1.0 / 9007199254740992.0)
    f = 0
    while f < len(cumulative) - 1 and x >= cumulative[f]:
        f += 1
    return f


@stoppable
@njit(cache=True, nogil=True)
def _router_loads(parent, into, demand, forest, load):
    """Adds every router pair's demand (R x R, row u column v) to the channels of its path on
    forest `forest`."""
    r = demand.shape[0]
    for u in range(r):
        for v in range(r):
            d = demand[u, v]
            if d == 0.0 or u == v:
                continue
            f = forest
            at = v
            while at != u:
                load[into[f, u, at]] += d
                at = parent[f, u, at]


@njit(cache=True, nogil=True)
def _path_lengths(parent, cumulative, router_of, a, b, lengths):
    for i in range(len(a)):
        u, v = router_of[a[i]], router_of[b[i]]
        f = _pick(a[i], b[i], cumulative)
        k = 0
        at = v
        while at != u:
            k += 1
            at = parent[f, u, at]
        lengths[i] = k


@njit(cache=True, nogil=True)
def _fill_paths(parent, into, cumulative, router_of, injection, ejection, a, b, offsets, channels):
    for i in range(len(a)):
        u, v = router_of[a[i]], router_of[b[i]]
        f = _pick(a[i], b[i], cumulative)
        start, end = offsets[i], offsets[i + 1]
        channels[start] = injection[a[i]]
        channels[end - 1] = ejection[b[i]]
        k = end - 2
        at = v
        while at != u:
            channels[k] = into[f, u, at]
            k -= 1
            at = parent[f, u, at]


def spread(network, demand: np.ndarray, seconds: float, say=lambda text: None, steps: int = SPREAD_STEPS,
           first: tuple[np.ndarray, np.ndarray] | None = None) -> ForestRouting:
    """Load spreading of the router-pair `demand` (R x R: messages or bytes) over forests, at
    most `steps` of them or `seconds` of wall clock (after the first), bracketing lambda*;
    `first`: the (parent, into) forest to start from (a translated one, where the network has
    translations: synth.synthesis.exchange), else the shortest paths' with ties at random.

    Frank and Wolfe's method on the busiest utilization smoothed (lengths exponential in the
    utilization, as synth.measure.lp_bound's stage 1): the flow is a convex combination of the
    forests, each new forest (the shortest paths under the current lengths) mixed in at the share
    that lowers the busiest utilization most (a line search; 0 where none lowers it), so the
    upper end never rises and the weights say how often a pair takes each forest."""
    routers = _Routers(network)
    router_of, injection, ejection = terminal_links(network)
    demand = np.asarray(demand, dtype=np.float64)
    np.fill_diagonal(demand, 0.0)
    deadline = time.monotonic() + seconds
    flow = np.zeros(len(routers.channels))
    length = np.ones(len(routers.channels))
    parents, intos, shares = [], [], []
    lower, upper = 0.0, math.inf
    slack = NUDGE * max(routers.routers - 1, 1)
    share_grid = np.linspace(0.0, 1.0, 257)
    taken = 0
    for taken in range(1, steps + 1):
        distance, parent, into = routers.forest(length, taken)
        if taken == 1 and first is not None:  # its paths must be shortest ones: the dual bound needs the distances
            parent, into = first
        weight = float(routers.bandwidth @ length)
        # weak duality on these lengths: every path of (u, v) is at least dist(u, v) - NUDGE per hop long
        lower = max(lower, float(native(lambda: (demand * np.maximum(distance - slack, 0.0)).sum())) / weight)
        del distance
        load = np.zeros(network.num_channels)
        _router_loads(parent[None], into[None], demand, 0, load)
        load = load[routers.channels]
        if taken == 1:
            share = 1.0
        else:  # the share of the new forest that lowers the busiest utilization most
            busiest = np.array([((1 - g) * flow + g * load).__truediv__(routers.bandwidth).max() for g in share_grid])
            share = float(share_grid[int(np.argmin(busiest))])
        if share > 0:
            flow = (1 - share) * flow + share * load
            shares = [w * (1 - share) for w in shares] + [share]
            parents.append(parent)
            intos.append(into)
        utilization = flow / routers.bandwidth
        upper = min(upper, float(utilization.max(initial=0.0)))
        say(f"spreading step {taken}: lambda* in [{lower:.6g}, {upper:.6g}], forest share {share:.3g}")
        if upper <= lower * (1 + 1e-9) or time.monotonic() > deadline or upper == 0:
            break
        length = np.exp(SHARPNESS * (utilization / upper - 1.0))
    keep = [k for k, w in enumerate(shares) if w > 1e-6]
    cumulative = np.cumsum([shares[k] for k in keep])
    return ForestRouting(np.stack([parents[k] for k in keep]), np.stack([intos[k] for k in keep]),
                         cumulative / cumulative[-1], router_of, injection, ejection,
                         1 if network.nodes_are_routers else 0, lower, upper, taken)


def router_demand(network, ranks_per_node: int, sizes: np.ndarray | None) -> np.ndarray:
    """The exchange's demand per ordered router pair (R x R): blocks (an alltoall: one per rank
    pair) or an alltoallv's bytes, pairs within a router left out."""
    n, q = network.num_terminals, ranks_per_node
    router_of, _, _ = terminal_links(network)
    r = network.num_nodes - n
    ranks = n * q
    rank_router = np.repeat(router_of, q)
    if sizes is None:  # every rank pair one block: the count of rank pairs per router pair
        per = np.bincount(rank_router, minlength=r).astype(np.float64)
        demand = np.outer(per, per)
    else:  # a band of rows at a time, its columns summed per router: no P^2 float copy
        matrix = np.asarray(sizes).reshape(ranks, ranks)
        order = np.argsort(rank_router, kind="stable")
        present, starts = np.unique(rank_router[order], return_index=True)
        demand = np.zeros((r, r))
        for s0 in range(0, ranks, 256):
            band = matrix[s0:s0 + 256][:, order].astype(np.float64)
            summed = np.add.reduceat(band, starts, axis=1)
            np.add.at(demand, (rank_router[s0:s0 + 256][:, None], present[None, :]), summed)
    np.fill_diagonal(demand, 0.0)
    return demand


@dataclass(frozen=True)
class StepLoads:
    """Per step of a set of transfers along a forest routing: the most bytes over bandwidth on one
    channel, the most transfers on one router-to-router channel, the longest path in router hops;
    per transfer the port it starts at (synth.pricing.alphabeta.message_ports' rule)."""

    channel_bytes: np.ndarray
    flows: np.ndarray
    hops: np.ndarray
    ports: np.ndarray


def step_loads(routing: ForestRouting, network, step: np.ndarray, a: np.ndarray, b: np.ndarray, size: np.ndarray,
               steps: int) -> StepLoads:
    """The loads of transfers between terminals a -> b (a != b), `size` bytes each, in step order
    (`step`, non-decreasing), every one along the path its routers' pair picks: its injection link,
    its routers' path, its ejection link. One pass, no path stored."""
    n = network.num_terminals
    inner = ((network.channel_src >= n) & (network.channel_dst >= n)).astype(np.bool_)
    out = StepLoads(np.zeros(steps), np.zeros(steps, dtype=np.int64), np.zeros(steps, dtype=np.int64),
                    np.empty(len(step), dtype=np.int64))
    _step_loads(routing.parent, routing.into, routing.cumulative, routing.router_of, routing.injection,
                routing.ejection, routing.hop, np.asarray(step, dtype=np.int64), np.asarray(a, dtype=np.int64),
                np.asarray(b, dtype=np.int64), np.asarray(size, dtype=np.float64),
                network.channel_bandwidth.astype(np.float64), inner, out.channel_bytes, out.flows, out.hops, out.ports)
    return out


@njit(cache=True, inline="always")
def _load(c, w, load, count, seen, touched, marked):
    """Adds a transfer of w bytes to channel c; a channel first touched this step is listed."""
    load[c] += w
    count[c] += 1
    if not seen[c]:
        seen[c] = True
        touched[marked] = c
        marked += 1
    return marked


@stoppable
@njit(cache=True, nogil=True)
def _step_loads(parent, into, cumulative, router_of, injection, ejection, hop, step, a, b, size, bandwidth, inner,
                channel_bytes, flows, hops, ports):
    channels = len(bandwidth)
    load = np.zeros(channels)
    count = np.zeros(channels, dtype=np.int64)
    touched = np.empty(channels, dtype=np.int64)
    seen = np.zeros(channels, dtype=np.bool_)
    marked = 0
    i = 0
    total = len(step)
    while i < total:
        s = step[i]
        j = i
        while j < total and step[j] == s:
            u, v = router_of[a[j]], router_of[b[j]]
            f = _pick(a[j], b[j], cumulative)
            w = size[j]
            length = 2
            first = ejection[b[j]]  # the second channel of the path: the first router link, else the ejection
            marked = _load(injection[a[j]], w, load, count, seen, touched, marked)
            marked = _load(ejection[b[j]], w, load, count, seen, touched, marked)
            at = v
            while at != u:
                c = into[f, u, at]
                marked = _load(c, w, load, count, seen, touched, marked)
                first = c
                length += 1
                at = parent[f, u, at]
            ports[j] = first if hop == 1 else injection[a[j]]
            if length - 2 > hops[s]:
                hops[s] = length - 2
            j += 1
        for k in range(marked):
            c = touched[k]
            x = load[c] / bandwidth[c]
            if x > channel_bytes[s]:
                channel_bytes[s] = x
            if inner[c] and count[c] > flows[s]:
                flows[s] = count[c]
            load[c] = 0.0
            count[c] = 0
            seen[c] = False
        marked = 0
        i = j
