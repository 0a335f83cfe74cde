"""Cuts of a network's channel graph: the max-flows, min cuts, cut ratios and sweep cuts that the
time bounds of any schedule (synth.pricing.bounds) are made of. Graph computations only: what a
cut means for a collective is said there.

Bandwidths enter as integers (`integer_bandwidth`: the smallest scale that makes them whole), so
that scipy's Dinic runs on them and ratios compare exactly.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
from numba import njit

from synth.core.errors import SynthError
from synth.core.interrupt import stoppable

BANDWIDTH_SCALES = range(1, 17)  # a network's channel bandwidths times one of these must be integers
INT32 = 2**31 - 1  # scipy's maximum_flow takes int32 capacities (larger ones are silently wrong)
SWEEP_ROUTERS = 2048  # routers up to which the sweep cuts are tried (a dense eigenproblem: 2,048 in seconds)
SWEEP_VECTORS = 4  # Laplacian eigenvectors swept (a torus's first ones come in pairs per dimension)
SWEEP_PAIRS = 64  # routers v whose distance differences with router 0 are swept


def integer_bandwidth(network) -> np.ndarray:
    """The channels' bandwidths as integers (the exact programs' coefficients), the smallest scale."""
    bandwidth = np.asarray(network.channel_bandwidth, dtype=np.float64)
    for scale in BANDWIDTH_SCALES:
        scaled = bandwidth * scale / bandwidth.min()
        if np.allclose(scaled, np.round(scaled), rtol=0, atol=1e-9):
            return np.round(scaled).astype(np.int64)
    raise SynthError("exact synthesis needs channel bandwidths in small integer ratios (at most 1:16 apart)")


def arcs(network) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """An arc per linked node pair (source, destination, the bandwidth of its channels made
    integers: integer_bandwidth's scale) and the scale (integer units per bandwidth unit)."""
    scaled = integer_bandwidth(network)
    count = network.num_nodes
    keys = network.channel_src.astype(np.int64) * count + network.channel_dst
    unique, where = np.unique(keys, return_inverse=True)
    capacity = np.bincount(where, weights=scaled, minlength=len(unique)).round().astype(np.int64)
    return unique // count, unique % count, capacity, float(scaled[0]) / float(network.channel_bandwidth[0])


def max_flow(network):
    """max-flow value between two nodes, by scipy's Dinic on the channels' integer bandwidths, in
    bandwidth units: thousands of flows a second."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    src, dst, capacity, scale = arcs(network)
    count = network.num_nodes
    matrix = csr_matrix((capacity.astype(np.int32), (src, dst)), shape=(count, count))
    return lambda a, b: maximum_flow(matrix, int(a), int(b), method="dinic").flow_value / scale


def cut_ratio(graph, count: int, n: int, q: int, sinks) -> tuple[float, set]:
    """max over node sets S holding a terminal of (ranks outside S) / (bandwidth into S), and S.
    Dinkelbach: with lam = a / b the best ratio so far, a set S with q (ranks outside S) - lam
    C_in(S) > 0 is better; the least of q |terminals in S| + lam C_in(S) over S holding terminal v
    is a min cut (source -> every terminal with capacity q, the arcs with lam x bandwidth, sink v),
    here times b: integer capacities q b and a x bandwidth, so the ratios compare exactly. Each cut
    by scipy's Dinic (the sink side: what the source cannot reach in the residual graph), or by
    networkx where the capacities pass int32."""
    src, dst, capacity, scale = graph  # arcs(network), or its reverse
    p = n * q
    into_node = np.bincount(dst, weights=capacity, minlength=count).astype(np.int64)
    # the single nodes first: every rank's own blocks arrive through its links
    candidates = [(p - q, int(into_node[v]), v) for v in range(n) if into_node[v] > 0]
    a, b, v0 = max(candidates, key=lambda c: (c[0] / c[1], -c[2]))
    inside = {v0}
    source = count
    while True:
        improved = None
        cut_capacity = np.concatenate([a * capacity, np.full(n, q * b, dtype=np.int64)])
        tails = np.concatenate([src, np.full(n, source)])
        heads = np.concatenate([dst, np.arange(n)])
        min_cut = _scipy_min_cut if n * q * b <= INT32 and int(cut_capacity.max()) <= INT32 else _networkx_min_cut
        for v in sinks:
            value, sink_side = min_cut(tails, heads, cut_capacity, count + 1, source, int(v))
            if p * b - value > 0:
                into = int(capacity[~sink_side[src] & sink_side[dst]].sum())
                outside = p - q * int(sink_side[:n].sum())
                if into > 0 and outside * b > a * into:
                    improved = (outside, into, set(np.flatnonzero(sink_side[:count]).tolist()))
                    break
        if improved is None:
            return a / (b / scale), inside
        a, b, inside = improved


def _scipy_min_cut(tails, heads, capacity, count: int, source: int, sink: int) -> tuple[int, np.ndarray]:
    """The min cut's value and its sink side (a mask): the nodes the source does not reach along
    arcs with capacity left."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order, maximum_flow

    matrix = csr_matrix((capacity.astype(np.int32), (tails, heads)), shape=(count, count))
    result = maximum_flow(matrix, source, sink, method="dinic")
    # the flow is antisymmetric: a reverse arc's room is its flow (in int64: cap + flow may pass int32)
    residual = (matrix.astype(np.int64) - result.flow.astype(np.int64)).tocsr()
    residual.data[residual.data < 0] = 0
    residual.eliminate_zeros()
    reached = breadth_first_order(residual, source, directed=True, return_predecessors=False)
    sink_side = np.ones(count, dtype=bool)
    sink_side[reached] = False
    return int(result.flow_value), sink_side


def _networkx_min_cut(tails, heads, capacity, count: int, source: int, sink: int) -> tuple[int, np.ndarray]:
    graph = nx.DiGraph()
    graph.add_nodes_from(range(count))
    graph.add_edges_from((int(t), int(h), {"capacity": int(c)}) for t, h, c in zip(tails, heads, capacity))
    value, (_, sink_nodes) = nx.minimum_cut(graph, source, sink)
    sink_side = np.zeros(count, dtype=bool)
    sink_side[list(sink_nodes)] = True
    return int(value), sink_side


def sweep_cut_bound(network, a: np.ndarray, b: np.ndarray, weights: np.ndarray) -> tuple[float, str]:
    """The best of the sweep cuts: routers ordered by each of the router graph's first Laplacian
    eigenvectors (Fiedler's; on a torus the cosines along a dimension, whose prefixes are its
    bisections), every prefix S a cut. Any schedule moves what S sends out of S across the links
    out of S, so its busiest channels carry at least that over their bandwidth, summed over the steps
    (a maximum is at least the mean), likewise into S: a bound for any routing and any forwarding.
    (0, "") beyond SWEEP_ROUTERS routers (a dense eigenproblem), and where a terminal has links to
    several routers (XGFTs with w1 > 1: it is then on both sides of a cut of routers)."""
    n = network.num_terminals
    router_of = _single_routers(network)
    if router_of is None or not 2 <= network.num_nodes - n <= SWEEP_ROUTERS:
        return 0.0, ""
    routers = network.num_nodes - n
    demand = np.zeros((routers, routers))
    np.add.at(demand, (router_of[a], router_of[b]), weights.astype(np.float64))
    return sweep_cut_of(network, demand)


def _single_routers(network) -> np.ndarray | None:
    """Per terminal its router (node - n), or None where a terminal has links to several routers
    (it may then cross any cut of routers on its own links: no cut)."""
    n = network.num_terminals
    src, dst = network.channel_src, network.channel_dst
    injection = np.flatnonzero(src < n)
    if len(injection) != n or int((dst < n).sum()) != n:
        return None
    router_of = np.empty(n, dtype=np.int64)
    router_of[src[injection][::-1]] = dst[injection][::-1] - n  # a terminal's first link
    return router_of


def sweep_cut_of(network, demand: np.ndarray, eigenvectors: bool = True) -> tuple[float, str]:
    """sweep_cut_bound of a router-pair demand (R x R); without `eigenvectors` (beyond
    SWEEP_ROUTERS routers: the dense eigenproblem) only the distance-difference orders, which on a
    torus give the bisections."""
    n = network.num_terminals
    routers = network.num_nodes - n
    if routers < 2 or _single_routers(network) is None:
        return 0.0, ""
    src, dst, bandwidth = network.channel_src, network.channel_dst, network.channel_bandwidth
    between = (src >= n) & (dst >= n)
    capacity = np.zeros((routers, routers))
    np.add.at(capacity, (src[between] - n, dst[between] - n), bandwidth[between])
    best, where = 0.0, ""
    for order in _sweep_orders(capacity, eigenvectors):
        for load, name in ((_prefix_crossing(demand, order), "out of"), (_prefix_crossing(demand.T, order), "into")):
            cap = _prefix_crossing(capacity if name == "out of" else capacity.T, order)
            ratio = np.divide(load, cap, out=np.zeros_like(load), where=cap > 0)
            i = int(np.argmax(ratio))
            if ratio[i] > best * (1 + 1e-12):
                best, where = float(ratio[i]), f"the demand {name} {i + 1} of {routers} routers over its links (a sweep cut)"
    return best, where


def _sweep_orders(capacity: np.ndarray, eigenvectors: bool = True):
    """Orders of the routers whose prefixes are the cuts tried: by each of the first Laplacian
    eigenvectors (Fiedler's), and by d(0, .) - d(v, .) for routers v (a torus's eigenvectors mix its
    dimensions where they have one length; the distance differences to v half-way along one
    dimension give its bisection)."""
    from scipy.sparse.csgraph import shortest_path

    routers = len(capacity)
    if eigenvectors:
        adjacency = ((capacity + capacity.T) > 0).astype(np.float64)
        laplacian = np.diag(adjacency.sum(axis=1)) - adjacency
        _, vectors = np.linalg.eigh(laplacian)
        for k in range(1, min(SWEEP_VECTORS + 1, routers)):
            yield np.argsort(np.round(vectors[:, k], 12), kind="stable")
    from scipy.sparse import csr_matrix

    linked = csr_matrix(capacity > 0)  # once: a dense matrix would be converted for every search
    distance = shortest_path(linked, unweighted=True, indices=np.array([0]))[0]
    if np.isinf(distance).any():
        return
    if eigenvectors:
        chosen = np.linspace(1, routers - 1, min(routers - 1, SWEEP_PAIRS)).astype(np.int64)
    else:  # at scale fewer orders: routers R / 2^k (a torus's half-way points along a dimension, in row-major order)
        chosen = np.array([routers >> k for k in range(1, routers.bit_length()) if routers >> k >= 1], dtype=np.int64)
    for v in np.unique(chosen).tolist():
        other = shortest_path(linked, unweighted=True, indices=np.array([v]))[0]
        yield np.argsort(distance - other, kind="stable")


def _prefix_crossing(matrix: np.ndarray, order: np.ndarray) -> np.ndarray:
    """For k = 1 .. R - 1: the sum of matrix[i, j] over i among the first k of `order`, j not."""
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    return _crossing(np.ascontiguousarray(matrix, dtype=np.float64), position)


@stoppable
@njit(cache=True, nogil=True)
def _crossing(matrix, position):
    """Entry (i, j) crosses the cuts k with position[i] < k <= position[j]: a difference array, one
    pass over the matrix in its own order (no permuted copy)."""
    r = len(position)
    change = np.zeros(r + 1)
    for i in range(r):
        pi = position[i]
        for j in range(r):
            pj = position[j]
            if pi < pj:
                change[pi + 1] += matrix[i, j]
                change[pj + 1] -= matrix[i, j]
    return np.cumsum(change)[1:r]
