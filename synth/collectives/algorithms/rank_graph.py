"""The ranks of a network with one terminal per router as a directed graph: rank a -> rank b when
a's router has a channel to b's (for the algorithms that send only to neighbours: Kautz's and
2dfc's collectives, MULTITREE), with breadth-first distances."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from synth.core import memory
from synth.core.errors import SynthError
from synth.topology import parse_topology
from synth.topology.distances import hop_distances


@dataclass(frozen=True)
class RankGraph:
    out: tuple[np.ndarray, ...]  # per rank, its out-neighbours (ascending)
    into: tuple[np.ndarray, ...]  # per rank, its in-neighbours (ascending)
    distance: np.ndarray  # (P, P) hops, int16

    @property
    def ranks(self) -> int:
        return len(self.out)


DISTANCE_BYTES = 2  # per pair of ranks: the int16 table
MAX_RANKS = 32767  # int16 distances: a ring of more ranks could have longer ones


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
    if n > MAX_RANKS:
        raise SynthError(f"{spec}: {n:,} ranks; the algorithms between neighbouring nodes keep hop distances for at "
                         f"most {MAX_RANKS:,}")
    need, budget = DISTANCE_BYTES * n * n, memory.budget()
    if need > budget.bytes:  # before the P x P table (a million ranks would take 10 TB)
        raise SynthError(f"{spec}: the hop distances between its {n:,} ranks take about {memory.gib(need)}; synth "
                         f"plans with {budget} here")
    cuts = np.arange(1, n)
    out = tuple(np.split(pairs[:, 1], np.searchsorted(pairs[:, 0], cuts)))  # pairs are sorted by (a, b)
    by_head = pairs[np.lexsort((pairs[:, 0], pairs[:, 1]))]
    into = tuple(np.split(by_head[:, 0], np.searchsorted(by_head[:, 1], cuts)))
    indptr = np.concatenate([[0], np.cumsum(np.bincount(pairs[:, 0], minlength=n))]).astype(np.int64)
    distance = hop_distances(indptr, pairs[:, 1].astype(np.int64), n)
    if (distance < 0).any():
        raise SynthError(f"{spec}: some rank cannot reach another")
    return RankGraph(out, into, distance)
