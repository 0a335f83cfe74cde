"""The transfers a synthesized schedule may use in one step: ordered rank pairs, each with the
channels its message crosses and the port it starts at.

Rank r sits on terminal r // Q (Q ranks per node). A pair of ranks of one node moves through
memory: no channel, the sender's memory port. A pair of nodes takes the path a router of synth
gives it, routed once (all pairs as one phase): the synthesized schedule is priced along exactly
these paths (synth.pricing.schedule_cost with `paths`).

`neighbours`: the pairs whose path crosses at most one router-to-router channel (ranks of one
router, or of two linked routers): SCCL's and TACCL's logical topology, the small graph an exact
program can search. `all`: every pair (one step may then cross the whole network).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.pricing.alphabeta import message_ports
from synth.topology.paths import Paths, as_paths

REACHES = ("neighbours", "all")
DIGITS = "digits"  # an orbit synthesis' pairs of one differing digit (digit_pairs), where neighbours do not join
LANES = "lanes"  # an orbit synthesis' lane pairs (lane_pairs), where the neighbour pairs are too many
MAX_PAIRS = 1 << 20  # ordered rank pairs of one transfer graph (each with its path)
MAX_ROUTED_ROUTERS = 8192  # above, neighbour pairs take their forced paths (synth.routing.minimal.MAX_ROUTERS)


@dataclass(frozen=True)
class TransferGraph:
    ranks: int
    ranks_per_node: int
    reach: str
    src: np.ndarray  # (pairs,) sending rank, pairs sorted by (dst, src)
    dst: np.ndarray  # (pairs,) receiving rank
    paths: Paths  # per pair its channels (none within a node)
    port: np.ndarray  # (pairs,) the port its message starts at (memory ports after the channels)
    router: str

    @property
    def num_pairs(self) -> int:
        return len(self.src)

    def in_pairs(self) -> list[np.ndarray]:
        """Per rank, the pairs that deliver to it (in sender order)."""
        bounds = np.searchsorted(self.dst, np.arange(self.ranks + 1))
        return [np.arange(bounds[v], bounds[v + 1]) for v in range(self.ranks)]

    def distances(self) -> np.ndarray:
        """Steps between ranks in this graph (breadth-first; -1: not reachable), int16."""
        from synth.topology.distances import hop_distances

        order = np.lexsort((self.dst, self.src))
        indptr = np.searchsorted(self.src[order], np.arange(self.ranks + 1)).astype(np.int64)
        return hop_distances(indptr, self.dst[order].astype(np.int64), self.ranks)

    def joins_every_rank(self) -> bool:
        """Whether every rank reaches every rank along the pairs (one strongly connected component;
        no P x P distances: 65,536 ranks' are 8 GiB)."""
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components

        arcs = coo_matrix((np.ones(len(self.src), dtype=np.int8), (self.src, self.dst)), shape=(self.ranks, self.ranks))
        return connected_components(arcs, directed=True, connection="strong")[0] == 1

    def distances_from(self, rank: int) -> np.ndarray:
        """Steps from `rank` to every rank (breadth-first; -1: not reachable)."""
        return self._one_row(rank, self.src, self.dst)

    def distances_to(self, rank: int) -> np.ndarray:
        """Steps from every rank to `rank` (breadth-first along the reversed pairs; -1: not reachable)."""
        return self._one_row(rank, self.dst, self.src)

    def _one_row(self, rank: int, tail: np.ndarray, head: np.ndarray) -> np.ndarray:
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import shortest_path

        arcs = csr_matrix((np.ones(len(tail)), (tail, head)), shape=(self.ranks, self.ranks))
        found = shortest_path(arcs, directed=True, unweighted=True, indices=[rank])[0]
        return np.where(np.isinf(found), -1, found).astype(np.int64)

    def pair_index(self, src, dst) -> np.ndarray:
        """The numbers of the pairs src -> dst (arrays of ranks); one line where a pair is not in
        this graph."""
        keys = self.dst.astype(np.int64) * self.ranks + self.src
        wanted = np.asarray(dst, dtype=np.int64) * self.ranks + np.asarray(src, dtype=np.int64)
        pair = np.searchsorted(keys, wanted)
        if len(wanted) and (len(keys) == 0 or not np.array_equal(keys[np.minimum(pair, len(keys) - 1)], wanted)):
            raise SynthError(f"the {self.reach} transfers lack pairs a schedule takes")
        return pair

    def max_out_degree(self) -> int:
        return int(np.bincount(self.src, minlength=self.ranks).max(initial=0))

    def max_in_degree(self) -> int:
        return int(np.bincount(self.dst, minlength=self.ranks).max(initial=0))


def routes_label(routes: dict) -> str:
    """How a routes file names itself as the router of a transfer graph."""
    return f"a routes file of {routes.get('router', 'unknown')}"


def transfer_graph(topology, ranks_per_node: int = 1, reach: str = "neighbours", router: str | None = None,
                   seed: int = 0, routes: dict | None = None, limit: int = MAX_PAIRS) -> TransferGraph:
    """The transfer graph of the rank pairs `reach` joins (at most `limit`), routed."""
    if reach not in REACHES:
        raise SynthError(f"unknown transfer reach '{reach}' (known: {', '.join(REACHES)})")
    network = topology.network()
    n, q = network.num_terminals, ranks_per_node
    # counted before the pairs are made: the n x n masks alone would be gigabytes where the guard refuses
    counts = {r: count_node_pairs(network, r) for r in REACHES}
    pairs = rank_pairs(network, reach, q, counts[reach])
    if pairs > limit:
        raise SynthError(f"{topology.spec}: {pairs:,} rank pairs with {reach} transfers, more than the {limit:,} a "
                         f"synthesis takes; {_what_helps(counts, reach, n, q, limit)}")
    node_pairs = _node_pairs(network, reach)
    node_paths = None
    if reach == "neighbours" and router is None and routes is None and \
            network.num_nodes - network.num_terminals > MAX_ROUTED_ROUTERS:
        node_paths = forced_neighbour_paths(network, *node_pairs)
    return pairs_graph(topology, q, reach, node_pairs, router, seed, node_paths=node_paths, routes=routes)


def forced_neighbour_paths(network, a: np.ndarray, b: np.ndarray) -> Paths | None:
    """The paths of neighbour pairs of terminals where every minimal router takes the same one:
    each terminal on one router by one link each way, and one channel between every two linked
    routers (a minimal path between linked routers is that one hop). Made from arrays where the
    routers' tables would not fit (more than synth.routing.minimal.MAX_ROUTERS routers: a
    65,536-router torus); None where a pair has a choice (parallel channels, several links)."""
    n = network.num_terminals
    src, dst = network.channel_src.astype(np.int64), network.channel_dst.astype(np.int64)
    injection, ejection = np.flatnonzero(src < n), np.flatnonzero(dst < n)
    if len(injection) != n or len(ejection) != n or (dst[injection] < n).any() or (src[ejection] < n).any():
        return None
    inject = np.empty(n, dtype=np.int64)
    inject[src[injection]] = injection
    eject = np.empty(n, dtype=np.int64)
    eject[dst[ejection]] = ejection
    between = np.flatnonzero((src >= n) & (dst >= n))
    keys = src[between] * network.num_nodes + dst[between]
    order = np.argsort(keys, kind="stable")
    keys, between = keys[order], between[order]
    if len(keys) > 1 and (keys[1:] == keys[:-1]).any():
        return None
    ra, rb = dst[inject[a]], src[eject[b]]
    hop = ra != rb
    where = np.searchsorted(keys, ra[hop] * network.num_nodes + rb[hop])
    lengths = np.where(hop, 3, 2)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    channels = np.empty(int(offsets[-1]), dtype=np.int64)
    channels[offsets[:-1]] = inject[a]
    channels[offsets[1:] - 1] = eject[b]
    channels[offsets[:-1][hop] + 1] = between[where]
    return Paths(offsets, channels)


def _what_helps(counts: dict, reach: str, n: int, q: int, limit: int) -> str:
    """The changes of the options that would bring the pairs under `limit`: only those (a refusal
    never suggests what is already asked, the default included)."""
    def fits(r: str, per_node: int) -> bool:
        return counts[r] * per_node * per_node + n * per_node * (per_node - 1) <= limit

    helps = []
    if reach != "neighbours" and fits("neighbours", q):
        helps.append("--transfers neighbours")
    if q > 1 and fits(reach, 1):
        helps.append("--ranks-per-node 1")
    if helps:
        return "use " + " or ".join(helps) + ", or a smaller network"
    if reach == "neighbours" or not fits("neighbours", q):
        return "neighbour transfers (at most one router-to-router link) are the fewest a synthesis takes: take a smaller network"
    return "take a smaller network"


def rank_pairs(network, reach: str, ranks_per_node: int, node_pairs: int | None = None) -> int:
    """The rank pairs of a transfer graph of `reach` (every rank of one node to every rank of the
    other, and the pairs within a node), counted without making them."""
    q = ranks_per_node
    node_pairs = count_node_pairs(network, reach) if node_pairs is None else node_pairs
    return node_pairs * q * q + network.num_terminals * q * (q - 1)


def count_node_pairs(network, reach: str) -> int:
    """len(_node_pairs(network, reach)[0]) without making them: for neighbours, the terminals of
    every pair of linked routers (a router with itself included), less each terminal with itself."""
    n = network.num_terminals
    if reach == "all":
        return n * (n - 1)
    src, dst = network.channel_src, network.channel_dst
    router_of = terminal_routers(network)
    if (router_of < 0).any():  # a terminal without an injection channel: count what _node_pairs makes
        return len(_node_pairs(network, reach)[0])
    per_router = np.bincount(router_of, minlength=network.num_nodes).astype(np.int64)
    between = (src >= n) & (dst >= n) & (src != dst)
    linked = np.unique(np.asarray(src[between], dtype=np.int64) * network.num_nodes + dst[between])
    a, b = linked // network.num_nodes, linked % network.num_nodes
    return int((per_router[a] * per_router[b]).sum() + (per_router * per_router).sum() - n)


def pairs_graph(topology, ranks_per_node: int, reach: str, node_pairs: tuple[np.ndarray, np.ndarray],
                router: str | None = None, seed: int = 0, node_paths: Paths | None = None,
                routes: dict | None = None) -> TransferGraph:
    """The transfer graph of the given ordered pairs of distinct nodes (every rank of one to every
    rank of the other), and of the ranks within each node; the node pairs routed by `router`, along
    a routes file's paths (`routes`: synth-routes/2, a path for every pair or a one-line error), or
    along `node_paths` (one per node pair, in order; `router` then names where they come from)."""
    from synth.routing.registry import make_router

    network = topology.network()
    n, q = network.num_terminals, ranks_per_node
    ranks = n * q
    a, b = (np.asarray(x, dtype=np.int64) for x in node_pairs)
    router = router or topology.default_router
    if node_paths is None and routes is not None:
        from synth.pricing.schedule_cost import paths_from_routes

        node_paths, router = paths_from_routes(routes, topology, a, b), routes_label(routes)
    if node_paths is None:
        routed = make_router(router, topology)(topology, a, b, phase=np.zeros(len(a), dtype=np.int64),
                                               occurrence=np.zeros(len(a), dtype=np.int64), seed=seed)
        node_paths = as_paths(topology, a, b, routed.routes)
    ports = message_ports(network, node_paths)
    # Ranks: every rank of node a to every rank of node b, then the pairs within a node.
    ra = (a[:, None, None] * q + np.arange(q)[None, :, None]).repeat(q, axis=2).ravel()
    rb = (b[:, None, None] * q + np.arange(q)[None, None, :]).repeat(q, axis=1).ravel()
    which = np.repeat(np.arange(len(a)), q * q)
    inside_src, inside_dst = np.nonzero(np.ones((q, q), dtype=bool) & ~np.eye(q, dtype=bool))
    base = np.repeat(np.arange(n) * q, len(inside_src))
    src = np.concatenate([ra, base + np.tile(inside_src, n)])
    dst = np.concatenate([rb, base + np.tile(inside_dst, n)])
    lengths = np.concatenate([node_paths.lengths()[which], np.zeros(len(src) - len(ra), dtype=np.int64)])
    channel_parts = node_paths.select(which).channels
    port = np.concatenate([ports[which], network.num_channels + src[len(ra):]])
    order = np.lexsort((src, dst))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    paths = Paths(offsets, channel_parts).select(order)
    return TransferGraph(ranks, q, reach, src[order], dst[order], paths, port[order], router)


def digit_pairs(topology) -> tuple[np.ndarray, np.ndarray] | None:
    """The ordered pairs of terminals whose numbers differ in exactly one digit of the mixed radix
    Topology.hierarchy() gives (its least significant first: an XGFT's leaf digits m_1..m_H,
    Prisacari20 ch.4's subnetworks), sorted by sender then receiver; None where the family has no
    hierarchy that numbers its terminals. Sum (H_k - 1) pairs a terminal: a 32,768-leaf XGFT's
    3 x 31, where its neighbours (the leaves of one switch) do not join every leaf."""
    sizes = topology.hierarchy()
    n = topology.network().num_terminals
    if not sizes or int(np.prod(sizes)) != n:
        return None
    terminals = np.arange(n, dtype=np.int64)
    senders, receivers, stride = [], [], 1
    for size in sizes:
        digit = (terminals // stride) % size
        for change in range(1, size):
            senders.append(terminals)
            receivers.append(terminals + (((digit + change) % size) - digit) * stride)
        stride *= size
    a, b = np.concatenate(senders), np.concatenate(receivers)
    order = np.lexsort((b, a))
    return a[order], b[order]


def lane_pairs(network) -> tuple[np.ndarray, np.ndarray] | None:
    """The ordered pairs of terminals of one router, and of the k-th terminals of two linked routers
    (a router's lane k), sorted by sender then receiver; None unless every router with terminals has
    the same number of them, numbered router by router. A subset of the neighbour pairs that the
    rotation of every router's terminals and the router automorphisms map onto itself, with
    p - 1 + r' pairs a terminal instead of p - 1 + p r': a 30,618-terminal Slim Fly's (q = 27)
    1.9 M pairs, not its 27 M. Where the terminal links are the bottleneck (a Slim Fly's p of
    about r'/2), the router links carry what a neighbour schedule puts on them either way."""
    n = network.num_terminals
    router_of = terminal_routers(network)
    if (router_of < 0).any():
        return None
    routers, start, count = np.unique(router_of, return_index=True, return_counts=True)
    p = int(count[0])
    if (count != p).any() or (np.diff(router_of) < 0).any():
        return None
    first = np.full(network.num_nodes, -1, dtype=np.int64)
    first[routers] = start
    src, dst = network.channel_src.astype(np.int64), network.channel_dst.astype(np.int64)
    between = (src >= n) & (dst >= n) & (src != dst) & (first[src] >= 0) & (first[dst] >= 0)
    linked = np.unique(src[between] * network.num_nodes + dst[between])
    ra, rb = first[linked // network.num_nodes], first[linked % network.num_nodes]
    lane = np.arange(p, dtype=np.int64)
    a = [(ra[:, None] + lane).ravel()]
    b = [(rb[:, None] + lane).ravel()]
    within_a, within_b = np.nonzero(~np.eye(p, dtype=bool))
    a.append((start[:, None] + within_a).ravel())
    b.append((start[:, None] + within_b).ravel())
    a, b = np.concatenate(a), np.concatenate(b)
    order = np.lexsort((b, a))
    return a[order], b[order]


def terminal_routers(network) -> np.ndarray:
    """Per terminal, the node of the router its first injection channel enters."""
    n = network.num_terminals
    src, dst = network.channel_src, network.channel_dst
    injection = src < n
    router_of = np.full(n, -1, dtype=np.int64)
    router_of[src[injection][::-1]] = dst[injection][::-1]
    return router_of


def _node_pairs(network, reach: str) -> tuple[np.ndarray, np.ndarray]:
    """The ordered pairs of distinct terminals a transfer may join."""
    n = network.num_terminals
    if reach == "all":
        a, b = np.nonzero(~np.eye(n, dtype=bool))
        return a.astype(np.int64), b.astype(np.int64)
    from scipy.sparse import coo_matrix

    src, dst = network.channel_src, network.channel_dst
    router_of = terminal_routers(network)
    # sparse: a nodes x nodes mask is 17 GB at 65,536 terminals (131,072 nodes); terminals x routers x terminals
    between = (src >= n) & (dst >= n)
    nodes = network.num_nodes
    linked = coo_matrix((np.ones(int(between.sum()) + nodes, dtype=np.int8),
                         (np.concatenate([src[between], np.arange(nodes)]),
                          np.concatenate([dst[between], np.arange(nodes)]))), shape=(nodes, nodes)).tocsr()
    placed = router_of >= 0
    terminals = np.flatnonzero(placed)
    on = coo_matrix((np.ones(len(terminals), dtype=np.int8), (terminals, router_of[placed])), shape=(n, nodes)).tocsr()
    near = (on @ linked @ on.T).tocoo()
    a, b = near.row.astype(np.int64), near.col.astype(np.int64)
    keep = a != b
    a, b = a[keep], b[keep]
    order = np.lexsort((b, a))  # as np.nonzero of a dense mask: by sender, then receiver
    return a[order], b[order]


def transfer_paths(graph, schedule):
    """The paths of a schedule's transfers between nodes, in order: each its pair's in the graph."""
    keys = graph.dst * graph.ranks + graph.src  # the pairs are sorted by (dst, src)
    found = np.searchsorted(keys, schedule.dst * graph.ranks + schedule.src)
    q = graph.ranks_per_node
    across = (schedule.src // q) != (schedule.dst // q)
    return graph.paths.select(found[across])
