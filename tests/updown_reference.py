"""An independent up*/down* reference for the tests of synth.routing.updown (unit) and of OpenSM's
updn (integration): everything rebuilt from the Network's channel arrays alone with networkx."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np


class Reference:
    """Roots, ranks, directions and shortest legal lengths of a network, from its channels."""

    def __init__(self, topology):
        net = self.net = topology.network()
        n = self.n = net.num_terminals
        src, dst = net.channel_src.tolist(), net.channel_dst.tolist()
        routers = range(net.num_nodes - n)
        self.router_of = {s: d - n for s, d in zip(src, dst) if s < n}
        links = [(s - n, d - n) for s, d in zip(src, dst) if s >= n and d >= n]
        graph = nx.Graph()
        graph.add_nodes_from(routers)
        graph.add_edges_from(links)
        self.rank, self.roots, self.part = {}, [], {}
        for number, part in enumerate(nx.connected_components(graph)):
            sub = graph.subgraph(part)
            eccentricity = nx.eccentricity(sub)
            root = min(part, key=lambda v: (eccentricity[v], v))
            self.roots.append(root)
            self.rank.update(nx.single_source_shortest_path_length(sub, root))
            self.part.update({v: number for v in part})
        ups, downs = nx.DiGraph(), nx.DiGraph()
        ups.add_nodes_from(routers)
        downs.add_nodes_from(routers)
        for u, v in links:
            (ups if self.is_up(u, v) else downs).add_edge(u, v)
        up_length = dict(nx.all_pairs_shortest_path_length(ups))
        down_length = dict(nx.all_pairs_shortest_path_length(downs))
        self.legal_length = {(a, b): min((up_length[a][t] + down_length[t][b] for t in up_length[a] if b in down_length[t]),
                                         default=math.inf) for a in routers for b in routers}

    def is_up(self, u: int, v: int) -> bool:
        return (self.rank[v], v) < (self.rank[u], u)

    def reachable(self, s: int, d: int) -> bool:
        failed = set() if self.net.failed_nodes is None else set(self.net.failed_nodes.tolist())
        return s not in failed and d not in failed and self.part[self.router_of[s]] == self.part[self.router_of[d]]

    def problem(self, s: int, d: int, channels: list[int]) -> str | None:
        """Why `channels` is not a shortest legal path from terminal s to terminal d (None if it is)."""
        net, n = self.net, self.n
        if s == d:
            return None if not channels else "a path to itself"
        if net.channel_src[channels[0]] != s or net.channel_dst[channels[-1]] != d:
            return "wrong ends"
        if any(net.channel_dst[a] != net.channel_src[b] for a, b in zip(channels, channels[1:])):
            return "not contiguous"
        routers = [int(net.channel_dst[c]) - n for c in channels[:-1]]
        if min(routers) < 0:
            return "through a terminal"
        gone_down = False
        for u, v in zip(routers, routers[1:]):
            up = self.is_up(u, v)
            if up and gone_down:
                return "up after down"
            gone_down |= not up
        if len(routers) - 1 != self.legal_length[routers[0], routers[-1]]:
            return f"{len(routers) - 1} hops, the shortest legal path has {self.legal_length[routers[0], routers[-1]]}"
        return None


def all_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    s, d = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return s.ravel(), d.ravel()
