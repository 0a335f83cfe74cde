"""The least-cost spanning arborescence of a directed graph (Chu and Liu's, Edmonds' algorithm):
every node but the root takes its cheapest entering arc; a cycle of those is contracted into one
node, the arcs into it made cheaper by the cycle arc they would replace, and the smaller graph
solved the same way; expanded, the arc chosen into a contracted cycle replaces its head's cycle arc.
One numpy pass per contraction (the oracle of synth.synthesis.tree_packing, called hundreds of
times: networkx's takes a second on 6,200 arcs and fails on some graphs with equal costs).
"""

from __future__ import annotations

import numpy as np


def min_arborescence(n: int, src, dst, cost, root: int) -> np.ndarray | None:
    """Per node the index of the arc entering it in a least-cost spanning arborescence rooted at
    `root` (-1 at the root), or None when some node is unreachable from it."""
    src, dst, cost = np.asarray(src, np.int64), np.asarray(dst, np.int64), np.asarray(cost, np.float64)
    levels = []  # per contraction: (the arcs' dst, the cheapest arc into each node, the kept arcs' indices)
    while True:
        keep = np.flatnonzero((dst != root) & (src != dst))
        order = keep[np.lexsort((cost[keep], dst[keep]))]
        first = order[np.r_[True, dst[order][1:] != dst[order][:-1]]] if len(order) else order
        best = np.full(n, -1, dtype=np.int64)
        best[dst[first]] = first
        if (best < 0).sum() > 1:
            return None
        parent = np.where(best >= 0, src[np.maximum(best, 0)], -1)
        cycle = _cycles(parent)
        if cycle.max(initial=-1) < 0:
            break
        count = int(cycle.max()) + 1
        outside = cycle < 0
        new = np.empty(n, dtype=np.int64)
        new[outside] = np.arange(int(outside.sum()))
        new[~outside] = int(outside.sum()) + cycle[~outside]
        reduced = cost - np.where(cycle[dst] >= 0, cost[np.maximum(best[dst], 0)], 0.0)
        crossing = np.flatnonzero(new[src] != new[dst])
        levels.append((dst, best, crossing))
        n, root = int(outside.sum()) + count, int(new[root])
        src, dst, cost = new[src[crossing]], new[dst[crossing]], reduced[crossing]
    chosen = best
    for dst, best, crossing in reversed(levels):
        arcs = crossing[chosen[chosen >= 0]]
        chosen = best.copy()
        chosen[dst[arcs]] = arcs
    return chosen


def _cycles(parent: np.ndarray) -> np.ndarray:
    """Per node the number of the cycle of `parent` pointers it lies on (-1: none; parent -1 at
    the root), cycles numbered in the order of the least node whose walk ends on them. Pointer
    doubling: after at least n steps every walk sits on a cycle (or at the root), so the cycles'
    nodes are the image of parent^(2^k >= n); along a cycle, doubling takes its least node."""
    n = len(parent)
    index = np.arange(n)
    step = np.where(parent >= 0, parent, index)  # the root a fixed point, not a cycle
    far, span = step, 1
    while span < n:
        far, span = far[far], span * 2
    on = np.zeros(n, dtype=bool)
    on[far] = True
    on &= parent >= 0
    least, jump, span = np.where(on, index, n), step, 1
    while span < n:
        least, jump, span = np.minimum(least, least[jump]), jump[jump], span * 2
    cycle = np.full(n, -1, dtype=np.int64)
    ends = least[far]  # per node, the least node of the cycle its walk ends on (n: the root)
    labels = np.unique(least[on])
    if not len(labels):
        return cycle
    first = np.full(len(labels), n, dtype=np.int64)  # per cycle, the least node whose walk ends on it
    reaching = ends < n
    np.minimum.at(first, np.searchsorted(labels, ends[reaching]), index[reaching])
    rank = np.empty(len(labels), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(labels))
    cycle[on] = rank[np.searchsorted(labels, least[on])]
    return cycle
