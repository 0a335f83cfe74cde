"""A broadcast (a reduce, run backwards) by packed spanning trees, pipelined (issue 24's
bandwidth-optimal tree packing for the rooted collectives).

Edmonds' branching theorem: a directed graph holds as many arc-disjoint spanning arborescences
rooted at r as the least max-flow from r to a vertex, so a message split over those trees reaches
the broadcast's cut bound (synth.synthesis.bounds: n over that max-flow) once pipelined. Here the
trees are over ranks, their arcs the pairs of the transfer graph, each routed along its path (a
pair of a Kautz graph's or a torus's neighbours crosses one channel; a pair of a dragonfly's or a
Slim Fly's linked routers crosses the two terminals' links too, so there the terminals' links are
the cut and a rank may send no more than it receives: trees in which each rank forwards to few).

The packing: M trees (M blocks a round, one on each; a tree may repeat), the busiest channel's
trees over its bandwidth as small as can be found. Each tree is a least-cost spanning arborescence
(Edmonds' algorithm, synth.synthesis.arborescence) under arc costs that are the marginal growth of
an exponential potential of the channels' use by the other trees, sum over channels of
exp(ETA x use / (bandwidth x M x the cut bound)) (the multiplicative weights of Garg and Koenemann's
packing, made integral); then each tree in turn is taken out and chosen again against the others,
until a pass changes none. At the cut bound the packing is optimal (no schedule moves fewer bytes
over the busiest channel); above it, that is the gap it reports. Among trees of equal cost, arcs
out of ranks nearer the root are a hair cheaper, for a shallow tree: its depth is the pipeline's fill.

The layout (`packed_deliveries`): round r's block on tree T leaves the root at step r and crosses
the arc into a rank of depth h at step r + h - 1: rounds + depth - 1 steps, one message per rank
pair and step, each step's channel loads at most one round's (the packing's). A reduce is the same
run backwards (synth.app.synthesize).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.synthesis.arborescence import min_arborescence

ETA = 12.0  # the potential's steepness: a channel at the cut bound weighs e^12 times an idle one
MAX_PASSES = 8  # of taking each tree out and choosing it again
LEVEL_PRICE = 1e-6  # per breadth-first level of an arc's sender, relative to the least channel cost


@dataclass(frozen=True)
class TreePacking:
    arcs: np.ndarray  # (M, P) per tree and rank, the transfer pair into it (-1: the root)
    depth: np.ndarray  # (M, P) per tree and rank, its hops from the root
    per_byte: float  # the busiest channel's bytes over bandwidth per byte of message, pipelined
    passes: int

    @property
    def trees(self) -> int:
        return len(self.arcs)


def pack_trees(graph, bandwidth: np.ndarray, root: int, trees: int, cut_bound: float) -> TreePacking:
    """`trees` spanning arborescences rooted at `root` in the transfer graph `graph`
    (synth.synthesis.transfers.TransferGraph) whose use of the channels, over `bandwidth`, is as
    even as the potential finds; `cut_bound`: the broadcast's bound per byte (the potential's scale)."""
    owner = np.repeat(np.arange(graph.num_pairs), graph.paths.lengths())
    channels = graph.paths.channels
    level = _levels(graph, root)[graph.src]
    scale = ETA / (bandwidth * trees * max(cut_bound, 1e-300))
    use = np.zeros(len(bandwidth))

    def crossing(tree: np.ndarray) -> np.ndarray:
        return np.bincount(graph.paths.select(tree[tree >= 0]).channels, minlength=len(bandwidth))

    def cheapest() -> np.ndarray:
        grow = np.exp(np.minimum(scale * use, 600.0)) * np.expm1(scale)  # the potential's growth per channel
        cost = np.bincount(owner, weights=grow[channels], minlength=graph.num_pairs)
        cost = cost + LEVEL_PRICE * float(grow.min()) * level
        tree = min_arborescence(graph.ranks, graph.src, graph.dst, cost, root)
        if tree is None:
            raise SynthError(f"no spanning tree from rank {root} over the {graph.reach} transfers")
        return tree

    chosen = []
    for _ in range(trees):
        chosen.append(cheapest())
        use += crossing(chosen[-1])
    passes = 0
    for passes in range(1, MAX_PASSES + 1):
        changed = False
        for i in range(trees):
            use -= crossing(chosen[i])
            tree = cheapest()
            use += crossing(tree)
            if not np.array_equal(tree, chosen[i]):
                chosen[i], changed = tree, True
        if not changed:
            break
    arcs = np.array(chosen)
    return TreePacking(arcs, np.array([_depths(graph, a, root) for a in arcs]),
                       float((use / bandwidth).max()) / trees, passes)


def budgeted_trees(graph, bandwidth: np.ndarray, root: int, trees: int, cut_bound: float) -> TreePacking:
    """`trees` breadth-first spanning trees rooted at `root`, each rank adopting unreached
    neighbours while every channel of the pair's path has room: a channel's room is
    M x the cut bound x its bandwidth arcs in all, the root's shared out evenly between the trees,
    every other rank's spent in the first tree that reaches it with room (so it forwards there,
    up to M blocks a round, and is a leaf in the later ones: each tree about log_M P deep, at the
    terminals' cut bound where the transfers allow). A rank no pair with room reaches is joined by
    the pair whose busiest channel is least over its room."""
    n_channels = len(bandwidth)
    room = trees * cut_bound * bandwidth * (1 + 1e-9)
    use = np.zeros(n_channels)
    bounds = np.searchsorted(graph.src[np.lexsort((graph.dst, graph.src))], np.arange(graph.ranks + 1))
    order = np.lexsort((graph.paths.lengths(), graph.src))  # per rank its pairs, shortest paths first
    offsets, channels = graph.paths.offsets, graph.paths.channels
    path = [channels[offsets[k]:offsets[k + 1]] for k in range(graph.num_pairs)]
    out = [order[bounds[u]:bounds[u + 1]].tolist() for u in range(graph.ranks)]
    dst = graph.dst.tolist()
    root_channels = np.unique(np.concatenate([path[k] for k in out[root]] or [np.zeros(0, dtype=np.int64)]))
    chosen = []
    for t in range(trees):
        share = use.copy()  # the root's channels: this tree may take up to its even share of their room
        share[root_channels] = use[root_channels] + room[root_channels] * (1 - 1e-9) / (trees - t)
        arcs = np.full(graph.ranks, -1, dtype=np.int64)
        reached = np.zeros(graph.ranks, dtype=bool)
        reached[root] = True
        queue, head = [root], 0
        while not reached.all():
            while head < len(queue):
                u = queue[head]
                head += 1
                limit = np.where(np.isin(np.arange(n_channels), root_channels), share, room) if u == root else room
                for k in out[u]:
                    v = dst[k]
                    if not reached[v] and (use[path[k]] + 1 <= limit[path[k]]).all():
                        use[path[k]] += 1
                        arcs[v], reached[v] = k, True
                        queue.append(v)
            if not reached.all():  # none with room: the least overloaded pair into an unreached rank
                k = _least_over(graph, reached, path, use, room)
                use[path[k]] += 1
                arcs[dst[k]], reached[dst[k]] = k, True
                queue.append(dst[k])
        chosen.append(arcs)
    arcs = np.array(chosen)
    return TreePacking(arcs, np.array([_depths(graph, a, root) for a in arcs]),
                       float((use / bandwidth).max()) / trees, 1)


def _least_over(graph, reached: np.ndarray, path: list, use: np.ndarray, room: np.ndarray) -> int:
    candidates = np.flatnonzero(reached[graph.src] & ~reached[graph.dst])
    if not len(candidates):
        raise SynthError(f"no spanning tree over the {graph.reach} transfers")
    worst = [float(((use[path[k]] + 1) / room[path[k]]).max(initial=0.0)) for k in candidates.tolist()]
    return int(candidates[int(np.argmin(worst))])


def packed_deliveries(graph, packing: TreePacking, rounds: int):
    """(step, sender, receiver, block) of the packing pipelined over `rounds` rounds (block
    r x M + t rides tree t, leaving the root at step r), and the steps."""
    m, p = packing.arcs.shape
    tree, rank = np.nonzero(packing.arcs >= 0)
    pair = packing.arcs[tree, rank]
    hop = packing.depth[tree, rank] - 1
    r = np.arange(rounds, dtype=np.int64)
    step = (hop[:, None] + r[None, :]).ravel()
    block = (r[None, :] * m + tree[:, None]).ravel()
    sender = np.repeat(graph.src[pair].astype(np.int64), rounds)
    receiver = np.repeat(graph.dst[pair].astype(np.int64), rounds)
    return (step, sender, receiver, block), rounds + int(packing.depth.max()) - 1


def _levels(graph, root: int) -> np.ndarray:
    distance = graph.distances()[root].astype(np.float64)
    return np.where(distance < 0, graph.ranks, distance)


def _depths(graph, arcs: np.ndarray, root: int) -> np.ndarray:
    """Per rank its hops from the root in the tree (pointer jumping: hops[v] is the distance from v
    to jump[v], and each pass doubles it)."""
    jump = np.where(arcs >= 0, graph.src[np.maximum(arcs, 0)], root)
    hops = (arcs >= 0).astype(np.int64)
    while (jump != root).any():
        hops, jump = hops + hops[jump], jump[jump]
    return hops
