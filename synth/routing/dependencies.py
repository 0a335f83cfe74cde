"""The channel dependency graph of a set of routes, and whether it is acyclic (Dally and Seitz:
routing on a network with wormhole or virtual cut-through switching is deadlock-free when the
graph whose nodes are the channels, with an edge c -> d wherever some path uses d right after c,
has no cycle).

The graph is built over every path of a routes file (all phases: a fabric's tables hold them at
once). Acyclicity comes from the strongly connected components (scipy, linear time): a cycle
exists exactly when a component has two or more channels (a path never uses one channel twice in
a row, so there are no self-loops). One cycle is then found inside the smallest such component
and named, so a user can see where the routes depend on each other in a circle.
"""

from __future__ import annotations

from itertools import chain

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components


def flatten(paths: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Paths as a routes file lists them, as (their channels one after another, their lengths)."""
    lengths = np.fromiter(map(len, paths), dtype=np.int64, count=len(paths))
    return np.fromiter(chain.from_iterable(paths), dtype=np.int64, count=int(lengths.sum())), lengths


def dependencies(channels: np.ndarray, lengths: np.ndarray, num_channels: int) -> tuple[np.ndarray, np.ndarray]:
    """Every dependency the paths induce, as (key c * num_channels + d for channel d right after c,
    the index of the path that induces it)."""
    channels = np.asarray(channels, dtype=np.int64)
    path_of = np.repeat(np.arange(len(lengths)), lengths)
    same = path_of[:-1] == path_of[1:]
    return channels[:-1][same] * num_channels + channels[1:][same], path_of[:-1][same]


class DependencyGraph:
    def __init__(self, num_channels: int):
        self.num_channels = num_channels
        self._keys: list[np.ndarray] = []

    def add_paths(self, channels: np.ndarray, lengths: np.ndarray) -> None:
        """Paths given flat (their channels one after another) with their lengths."""
        self._keys.append(np.unique(dependencies(channels, lengths, self.num_channels)[0]))

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        keys = np.unique(np.concatenate(self._keys)) if self._keys else np.zeros(0, dtype=np.int64)
        self._keys = [keys]
        return keys // self.num_channels, keys % self.num_channels

    def cycle(self) -> list[int] | None:
        """Channels c_0 .. c_k-1 with edges c_i -> c_i+1 and c_k-1 -> c_0, or None when acyclic."""
        return find_cycle(*self.edges(), self.num_channels)


def find_cycle(tail: np.ndarray, head: np.ndarray, n: int) -> list[int] | None:
    """A cycle of the graph with edges tail[i] -> head[i] over nodes 0..n-1 (inside the smallest
    strongly connected component, through its lowest node), or None when it is acyclic."""
    graph = csr_matrix((np.ones(len(tail), dtype=np.int8), (tail, head)), shape=(n, n))
    count, label = connected_components(graph, directed=True, connection="strong")
    sizes = np.bincount(label, minlength=count)
    cyclic = np.flatnonzero(sizes > 1)
    if not len(cyclic):
        return None
    component = cyclic[np.argmin(sizes[cyclic])]
    return _cycle_within(graph, label == component, int(np.flatnonzero(label == component)[0]))


def _cycle_within(graph: csr_matrix, inside: np.ndarray, start: int) -> list[int]:
    """A cycle through `start` inside one strongly connected component: a breadth-first search from
    start over the component's channels until an edge leads back to start."""
    parent = {start: -1}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for succ in graph.indices[graph.indptr[node]:graph.indptr[node + 1]].tolist():
                if succ == start:
                    cycle = [node]
                    while parent[cycle[-1]] != -1:
                        cycle.append(parent[cycle[-1]])
                    return cycle[::-1]
                if inside[succ] and succ not in parent:
                    parent[succ] = node
                    following.append(succ)
        frontier = following
    raise AssertionError("a strongly connected component without a cycle through its members")
