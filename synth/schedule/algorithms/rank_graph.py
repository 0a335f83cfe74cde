"""The ranks of a network with one terminal per router as a directed graph: rank a -> rank b when
a's router has a channel to b's (for the algorithms that send only to neighbours: Kautz's and
2dfc's collectives, MULTITREE), with breadth-first distances."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from synth.core.errors import SynthError
from synth.topology import parse_topology


@dataclass(frozen=True)
class RankGraph:
    out: tuple[np.ndarray, ...]  # per rank, its out-neighbours (ascending)
    into: tuple[np.ndarray, ...]  # per rank, its in-neighbours (ascending)
    distance: np.ndarray  # (P, P) hops

    @property
    def ranks(self) -> int:
        return len(self.out)


@lru_cache(maxsize=8)
def rank_graph(spec: str) -> RankGraph:
    network = parse_topology(spec).network()
    n = network.num_terminals
    injection = np.flatnonzero(network.channel_src < n)
    router_of = np.full(network.num_nodes, -1, dtype=np.int64)
    router_of[network.channel_src[injection]] = network.channel_dst[injection]
    rank_of = np.full(network.num_nodes, -1, dtype=np.int64)
    rank_of[router_of[:n]] = np.arange(n)
    if len(np.unique(router_of[:n])) != n:
        raise SynthError(f"{spec}: this algorithm sends between neighbouring nodes and needs one rank per router")
    links = (network.channel_src >= n) & (network.channel_dst >= n)
    a, b = rank_of[network.channel_src[links]], rank_of[network.channel_dst[links]]
    keep = (a >= 0) & (b >= 0) & (a != b)
    pairs = np.unique(np.stack([a[keep], b[keep]], axis=1), axis=0)
    out = tuple(pairs[pairs[:, 0] == r, 1] for r in range(n))
    into = tuple(np.sort(pairs[pairs[:, 1] == r, 0]) for r in range(n))
    adjacency = csr_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    distance = shortest_path(adjacency, unweighted=True)
    if np.isinf(distance).any():
        raise SynthError(f"{spec}: some rank cannot reach another")
    return RankGraph(out, into, distance.astype(np.int64))
