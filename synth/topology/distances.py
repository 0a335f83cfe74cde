"""Hop distances between every pair of nodes of a graph, compiled (numba, without the GIL, stopped
at once by a signal): breadth-first from each node, O(N E), int16 (2 bytes per pair). scipy's
csgraph.shortest_path gives float64 (8 bytes per pair) and holds the GIL for seconds on 4096 nodes."""

from __future__ import annotations

import numpy as np
from numba import njit

from synth.core.interrupt import stoppable


@stoppable
@njit(cache=True, nogil=True)
def hop_distances(indptr, indices, r):
    """Hop distances between all nodes of a directed graph in CSR form (breadth-first from each;
    -1: unreachable), int16."""
    distance = np.full((r, r), -1, dtype=np.int16)
    queue = np.empty(r, dtype=np.int64)
    for source in range(r):
        row = distance[source]
        row[source] = 0
        queue[0] = source
        head, tail = 0, 1
        while head < tail:
            at = queue[head]
            head += 1
            for k in range(indptr[at], indptr[at + 1]):
                to = indices[k]
                if row[to] < 0:
                    row[to] = row[at] + 1
                    queue[tail] = to
                    tail += 1
    return distance


def connected_parts(count: int, src, dst, directed: bool = False) -> tuple[int, np.ndarray]:
    """(number of parts, part of every node) of a graph of `count` nodes and links src -> dst: strongly
    connected parts when `directed` (every node of a part reaches every other both ways)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    matrix = coo_matrix((np.ones(len(src)), (src, dst)), shape=(count, count))
    return connected_components(matrix, directed=directed, connection="strong")
