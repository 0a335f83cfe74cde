"""An allreduce as a reduce then a broadcast over packed spanning trees, pipelined: the vector in
M x R blocks, block r x M + t of tree t; each tree's blocks are reduced up the tree to its root,
round after round, and broadcast back down as soon as the root holds them.

Why trees (Sanders09: Sanders, Speck and Traeff, "Two-tree algorithms for full bandwidth
broadcast, reduction and scan"; Zhao24: ForestColl, spanning forests packed to the cut bound):
every element crosses each tree edge once up and once down, so M trees each edge of which a channel
carries k times in all move k n / M over it, and where the trees are spread evenly that is the
allreduce cut bound (synth.pricing.bounds: 2 (N - 1) n over the injection bandwidth on a regular
network) even where a reduce-scatter then an allgather does not reach it: DGX-1's cube-mesh
(8 GPUs, 16 NVLinks) takes 16 trees, each link in 7 of them, 7 n / 16 per link direction, the
bound, where the halves' schedules move n / 2. The price is the pipeline's fill, the trees' depth
up and down (2 D - 1 steps), and the message starts: a rank may send a partial up one tree and a
sum down another along the same link in one step, two transfers (one op each) and two alphas.
On a torus, a HyperX, a Kautz graph or a dragonfly the halves are at their bounds already and the
trees lose (the fill); on GPU meshes they win at large sizes (tests/unit/synthesis/
test_allreduce_trees.py).

The directions: where every pair of the transfer graph has its reverse (a torus, a HyperX, a
dragonfly), the reduce runs along each tree reversed and the broadcast along it, so the two
directions of every tree edge are both used (each carries the tree's share once); the trees are
packed on the round trips (`round_trip_graph`: pair u -> v crossing the channels of u -> v and of
v -> u), so the packing's busiest channel is the schedule's. Such a tree is undirected: it is
re-rooted at its centre (`rerooted`), the rank of least eccentricity, so its depth is its radius
and the trees' roots spread over the ranks. Where pairs lack their reverse (a Kautz graph's links
are one way), the broadcast trees are packed out of the root and the reduce trees into it (the
reversed graph), each packing against the other's load (`in_out_trees`).

The layout (`reduce_broadcast_schedule`): tree t's in-tree is D_t deep and its out-tree E_t; in
round r a rank at depth h of the in-tree sends its partial (its own contribution and its
children's partials, which arrived the step before) to its parent at step r + D_t - h, so the
root holds round r's sum after step r + D_t - 1; the arc into a rank at depth h of the out-tree
carries the sum at step r + D_t + h - 1. Max over t of R + D_t + E_t - 1 steps; per step and tree
each tree arc carries at most one block, so a step's channel loads are at most one round's.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from synth.collectives.schedule import COPY, REDUCE, Schedule, ScheduleBuilder
from synth.synthesis.tree_packing import pack_trees, tree_depths
from synth.topology.paths import Paths


def round_trip_graph(graph):
    """The transfer graph whose pair u -> v crosses the channels of u -> v and then of v -> u, or
    None where a pair's reverse is not a pair of `graph`."""
    keys = graph.dst.astype(np.int64) * graph.ranks + graph.src  # sorted: the pairs are by (dst, src)
    reverse = np.searchsorted(keys, graph.src.astype(np.int64) * graph.ranks + graph.dst)
    if not len(keys) or (reverse >= len(keys)).any() or not np.array_equal(keys[reverse], graph.src * graph.ranks
                                                                          + graph.dst):
        return None
    lengths = graph.paths.lengths()
    both = np.stack([np.arange(graph.num_pairs), reverse], axis=1).ravel()  # u -> v, then v -> u
    trips = graph.paths.select(both)
    offsets = np.concatenate([[0], np.cumsum(lengths + lengths[reverse])]).astype(np.int64)
    return dataclasses.replace(graph, paths=Paths(offsets, trips.channels))


def parents_of(graph, arcs: np.ndarray) -> np.ndarray:
    """(M, P) per tree and rank its parent rank (-1 at the root) from a packing's arcs (pairs of `graph`)."""
    return np.where(arcs >= 0, graph.src[np.maximum(arcs, 0)], -1).astype(np.int64)


def rerooted(parent: np.ndarray) -> np.ndarray:
    """Each tree of `parent` (undirected: its pairs go both ways) rooted at its centre, the rank of
    least eccentricity in the tree (the least such rank on a tie)."""
    trees, p = parent.shape
    out = np.empty_like(parent)
    for t in range(trees):
        neighbours = [[] for _ in range(p)]
        for v, u in enumerate(parent[t].tolist()):
            if u >= 0:
                neighbours[v].append(u)
                neighbours[u].append(v)
        # the centre: peel the leaves, layer by layer, until one or two ranks are left
        degree = np.array([len(n) for n in neighbours])
        layer = [v for v in range(p) if degree[v] <= 1]
        left = p
        while left > 2:
            left -= len(layer)
            nxt = []
            for v in layer:
                for u in neighbours[v]:
                    degree[u] -= 1
                    if degree[u] == 1:
                        nxt.append(u)
            layer = nxt
        centre = min(layer)
        out[t] = -1
        seen = np.zeros(p, dtype=bool)
        seen[centre] = True
        stack = [centre]
        while stack:
            v = stack.pop()
            for u in neighbours[v]:
                if not seen[u]:
                    seen[u] = True
                    out[t, u] = v
                    stack.append(u)
    return out


def in_out_trees(graph, bandwidth: np.ndarray, root: int, trees: int, cut_bound: float, restarts: int = 1,
                 passes: int = 2):
    """(reduce trees' parents, broadcast trees' parents, per byte): M trees into `root` (partials go
    from a rank to its parent along the pair rank -> parent) and M out of it, each packing made
    against the other's channel use, `passes` times; per byte: the busiest channel's bytes over
    bandwidth per byte of vector, both together."""
    turned = dataclasses.replace(graph, src=graph.dst, dst=graph.src)  # an arc u -> v: the pair v -> u

    def use(packed, of) -> np.ndarray:
        return np.bincount(of.paths.select(packed.arcs[packed.arcs >= 0]).channels, minlength=len(bandwidth)) \
            .astype(np.float64)

    down = pack_trees(graph, bandwidth, root, trees, cut_bound / 2, restarts)  # alone: half the cut's room
    up = None
    for _ in range(passes):  # each against the other's use: the room of the whole cut bound
        up = pack_trees(turned, bandwidth, root, trees, cut_bound, restarts, base=use(down, graph))
        down = pack_trees(graph, bandwidth, root, trees, cut_bound, restarts, base=use(up, turned))
    per_byte = float(((use(up, turned) + use(down, graph)) / bandwidth).max()) / trees
    return parents_of(turned, up.arcs), parents_of(graph, down.arcs), per_byte


def reduce_broadcast_deliveries(up: np.ndarray, down: np.ndarray, rounds: int):
    """Per transfer of the layout (step, sender, receiver, block, op) as arrays, and the steps: tree
    t's blocks reduced along `up` (per rank the rank its partial goes to) and broadcast along `down`
    (per rank the rank it receives from), the two with the same root."""
    m, p = up.shape
    up_depth, down_depth = tree_depths(up), tree_depths(down)
    reduce_depth, broadcast_depth = up_depth.max(axis=1), down_depth.max(axis=1)  # D_t, E_t
    r = np.arange(rounds, dtype=np.int64)
    parts = []
    for parent, depth, op in ((up, up_depth, REDUCE), (down, down_depth, COPY)):
        tree, rank = np.nonzero(parent >= 0)
        hop = depth[tree, rank]
        if op == REDUCE:  # rank -> parent at r + D_t - h
            start, sender, receiver = reduce_depth[tree] - hop, rank, parent[tree, rank]
        else:  # parent -> rank at r + D_t + h - 1
            start, sender, receiver = reduce_depth[tree] + hop - 1, parent[tree, rank], rank
        parts.append(((start[:, None] + r[None, :]).ravel(), np.repeat(sender, rounds), np.repeat(receiver, rounds),
                      (r[None, :] * m + tree[:, None]).ravel(), np.full(len(tree) * rounds, op, dtype=np.int8)))
    step, sender, receiver, block, op = (np.concatenate(x) for x in zip(*parts))
    return (step, sender, receiver, block, op), int((rounds + reduce_depth + broadcast_depth - 1).max())


def reduce_broadcast_schedule(spec: str, ranks_per_node: int, up: np.ndarray, down: np.ndarray, rounds: int,
                              block_bytes: int) -> Schedule:
    """The allreduce of `reduce_broadcast_deliveries`, a rank's blocks to one peer in one step and
    with one op as one transfer."""
    m, p = up.shape
    (step, sender, receiver, block, op), steps = reduce_broadcast_deliveries(up, down, rounds)
    order = np.lexsort((block, receiver, sender, op, step))
    step, sender, receiver, block, op = step[order], sender[order], receiver[order], block[order], op[order]
    builder = ScheduleBuilder("allreduce", "synthesized", spec, p, m * rounds, block_bytes,
                              ranks_per_node=ranks_per_node)
    bounds = np.searchsorted(step, np.arange(steps + 1))
    for s in range(steps):
        lo, hi = bounds[s], bounds[s + 1]
        key = (op[lo:hi].astype(np.int64) * p + sender[lo:hi]) * p + receiver[lo:hi]
        first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if hi > lo else np.zeros(0, dtype=np.int64)
        counts = np.diff(np.r_[first, hi - lo])
        builder.add_step(sender[lo:hi][first], receiver[lo:hi][first], (counts, block[lo:hi]), op[lo:hi][first])
    return builder.build()
