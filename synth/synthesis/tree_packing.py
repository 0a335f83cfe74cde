"""A broadcast (a reduce, run backwards) by packed spanning trees, pipelined (issue 24's
bandwidth-optimal tree packing for the rooted collectives).

Edmonds' branching theorem: a directed graph holds as many arc-disjoint spanning arborescences
rooted at r as the least max-flow from r to a vertex, so a message split over those trees reaches
the broadcast's cut bound (synth.pricing.bounds: n over that max-flow) once pipelined. Here the
trees are over ranks, their arcs the pairs of the transfer graph, each routed along its path (a
pair of a Kautz graph's or a torus's neighbours crosses one channel; a pair of a dragonfly's or a
Slim Fly's linked routers crosses the two terminals' links too, so there the terminals' links are
the cut and a rank may forward no more blocks than it receives).

The packing: M trees (M blocks a round, one on each; a tree may repeat), the busiest channel's
trees over its bandwidth as small as can be found. Each tree is a least-cost spanning arborescence
(Edmonds' algorithm, synth.synthesis.arborescence) under arc costs that are the marginal growth of
an exponential potential of the channels' use by the other trees, sum over channels of
exp(ETA x use / (bandwidth x M x the cut bound)) (the multiplicative weights of Garg and Koenemann's
packing, made integral); then each tree in turn is taken out and chosen again against the others,
until a pass changes none. Edmonds' trees cannot see that one tree's arcs out of a rank share its
link, so then, while a channel is over the cut bound's share, a rank whose arc crosses it moves to
another parent whose pair has room (the shallowest first; never one below it, so every tree still
spans), and last, ranks move to parents two or more levels nearer the root where the pairs have
room (a shallower pipeline). The ties (and so the trees) depend on the rank numbering: a packing is
tried again with the ties broken by a seeded perturbation, `restarts` times at most, until one meets
the cut bound. At the cut bound the packing is optimal (no schedule moves fewer bytes over the
busiest channel); above it, that is the gap it reports. Among trees of equal cost, arcs out of ranks
nearer the root are a hair cheaper, for a shallow tree: its depth is the pipeline's fill.

The layout (`packed_deliveries`): round r's block on tree T leaves the root at step r and crosses
the arc into a rank of depth h at step r + h - 1: rounds + depth - 1 steps, one message per rank
pair and step, each step's channel loads at most one round's (the packing's). A reduce is the same
run backwards (synth.synthesis.methods.packed_trees).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix

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


def pack_trees(graph, bandwidth: np.ndarray, root: int, trees: int, cut_bound: float, restarts: int = 1,
               base: np.ndarray | None = None) -> TreePacking:
    """`trees` spanning arborescences rooted at `root` in the transfer graph `graph`
    (synth.synthesis.transfers.TransferGraph) whose use of the channels, over `bandwidth`, is as
    even as found; `cut_bound`: the broadcast's bound per byte (the potential's scale, and where
    the restarts stop). The best of up to `restarts` tries (least load, then least depth).
    `base`: per channel the arcs of other trees already laid on it (an allreduce's reduce trees
    for its broadcast trees, synth.synthesis.reduce_broadcast), counted with these ones in the
    potential, the moves' room and `per_byte`, which are then of the two together."""
    best = None
    for attempt in range(max(1, restarts)):
        packing = _packing(graph, bandwidth, root, trees, cut_bound, attempt, base)
        if best is None or (packing.per_byte, int(packing.depth.max())) < (best.per_byte, int(best.depth.max())):
            best = packing
        if best.per_byte <= cut_bound * (1 + 1e-9):
            break
    return best


def _packing(graph, bandwidth: np.ndarray, root: int, trees: int, cut_bound: float, attempt: int,
             base: np.ndarray | None = None) -> TreePacking:
    owner = np.repeat(np.arange(graph.num_pairs), graph.paths.lengths())
    channels = graph.paths.channels
    level = _levels(graph, root)[graph.src]
    if attempt:  # ties broken another way: a seeded perturbation below one level
        level = level + 0.5 * np.random.default_rng(attempt).random(graph.num_pairs)
    scale = ETA / (bandwidth * trees * max(cut_bound, 1e-300))
    use = np.zeros(len(bandwidth)) if base is None else np.asarray(base, dtype=np.float64).copy()

    def crossing(tree: np.ndarray) -> np.ndarray:
        return np.bincount(graph.paths.select(tree[tree >= 0]).channels, minlength=len(bandwidth))

    def cheapest() -> np.ndarray:
        exponent = scale * use
        # the potential's growth per channel, all divided by the largest (Edmonds' choice is the same)
        grow = np.exp(exponent - exponent.max()) * np.expm1(scale)
        cost = np.bincount(owner, weights=grow[channels], minlength=graph.num_pairs)
        cost = cost + LEVEL_PRICE * float(grow[grow > 0].min()) * level
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
    _Moves(graph, arcs, use, trees * cut_bound * bandwidth * (1 + 1e-9), root).balance().shallow()
    return TreePacking(arcs, np.array([_depths(graph, a, root) for a in arcs]),
                       float((use / bandwidth).max()) / trees, passes)


class _Moves:
    """Moves of one rank of one tree to another parent (its subtree with it), each keeping every
    tree spanning: the new parent is not below it. `use` and `arcs` are changed in place."""

    def __init__(self, graph, arcs: np.ndarray, use: np.ndarray, room: np.ndarray, root: int):
        self.graph, self.arcs, self.use, self.room, self.root = graph, arcs, use, room, root
        offsets, channels = graph.paths.offsets, graph.paths.channels
        self.path = [channels[offsets[k]:offsets[k + 1]] for k in range(graph.num_pairs)]
        order = np.argsort(graph.dst, kind="stable")  # a reduce's turned-round graph is not sorted by dst
        bounds = np.searchsorted(graph.dst[order], np.arange(graph.ranks + 1))
        self.into = [order[bounds[v]:bounds[v + 1]].tolist() for v in range(graph.ranks)]
        self.src = graph.src.tolist()

    def _parent(self, t: int, v: int) -> int:
        k = int(self.arcs[t, v])
        return -1 if k < 0 else self.src[k]

    def _below(self, t: int, w: int, v: int) -> bool:
        """Whether w is v or in v's subtree of tree t."""
        while w >= 0:
            if w == v:
                return True
            w = self._parent(t, w)
        return False

    def _fits(self, old: int, new: int) -> bool:
        """Whether pair `new` in place of pair `old` keeps every channel it adds to within its room."""
        change: dict[int, int] = {}
        for c in self.path[new].tolist():
            change[c] = change.get(c, 0) + 1
        for c in self.path[old].tolist():
            if c in change:
                change[c] -= 1
        return all(self.use[c] + d <= self.room[c] for c, d in change.items() if d > 0)

    def _move(self, t: int, v: int, new: int) -> None:
        old = int(self.arcs[t, v])
        np.subtract.at(self.use, self.path[old], 1)
        np.add.at(self.use, self.path[new], 1)
        self.arcs[t, v] = new

    def balance(self) -> "_Moves":
        """While a channel is over its room (the cut bound's share), move a rank whose pair into it
        crosses that channel to a parent whose pair fits, the shallowest such parent first."""
        for _ in range(self.graph.ranks * len(self.arcs)):
            over = np.flatnonzero(self.use > self.room)
            if not len(over):
                break
            moved = False
            for c in over[np.argsort(self.room[over] - self.use[over], kind="stable")].tolist():
                if self.use[c] <= self.room[c]:  # brought within its room by the moves for another channel
                    continue
                depth = [_depths(self.graph, a, self.root) for a in self.arcs]
                for t, v in zip(*np.nonzero(self.arcs >= 0)):
                    t, v = int(t), int(v)
                    if c not in self.path[int(self.arcs[t, v])]:
                        continue
                    for k in sorted(self.into[v], key=lambda k: depth[t][self.src[k]]):
                        if k != self.arcs[t, v] and c not in self.path[k] and not self._below(t, self.src[k], v) \
                                and self._fits(int(self.arcs[t, v]), k):  # c lighter, nothing over its room
                            self._move(t, v, k)
                            moved = True
                            break
                    if self.use[c] <= self.room[c]:
                        break
            if not moved:
                break
        return self

    def shallow(self) -> "_Moves":
        """Deepest ranks first, move a rank to a parent at least two levels above its own one
        where the pair fits (the channels stay within the larger of their room and their use)."""
        self.room = np.maximum(self.room, self.use)
        for t in range(len(self.arcs)):
            depth = _depths(self.graph, self.arcs[t], self.root)
            for v in np.argsort(-depth, kind="stable").tolist():
                if v == self.root:
                    continue
                for k in sorted(self.into[v], key=lambda k: depth[self.src[k]]):
                    if depth[self.src[k]] + 1 >= depth[v]:
                        break
                    if self._fits(int(self.arcs[t, v]), k):
                        self._move(t, v, k)
                        depth = _depths(self.graph, self.arcs[t], self.root)
                        break
        return self


def packed_deliveries(graph, packing: TreePacking, rounds: int):
    """(step, sender, receiver, block) of the packing pipelined over `rounds` rounds, and the steps
    (`pipelined_trees` of its trees' parents)."""
    parent = np.where(packing.arcs >= 0, graph.src[np.maximum(packing.arcs, 0)], -1)
    return pipelined_trees(parent, packing.depth, rounds)


def pipelined_trees(parent: np.ndarray, depth: np.ndarray, rounds: int):
    """(step, sender, receiver, block) of M trees ((M, P) per tree and rank its parent, -1 at the
    root; `depth` its hops from the root) pipelined over `rounds` rounds: block r x M + t rides
    tree t, leaving the root at step r; rounds + depth - 1 steps, which it returns too."""
    m, p = parent.shape
    tree, rank = np.nonzero(parent >= 0)
    hop = depth[tree, rank] - 1
    r = np.arange(rounds, dtype=np.int64)
    step = (hop[:, None] + r[None, :]).ravel()
    block = (r[None, :] * m + tree[:, None]).ravel()
    sender = np.repeat(parent[tree, rank].astype(np.int64), rounds)
    receiver = np.repeat(rank.astype(np.int64), rounds)
    return (step, sender, receiver, block), rounds + int(depth.max()) - 1


def _levels(graph, root: int) -> np.ndarray:
    """Per rank its hops from the root over the transfers (unreachable: P)."""
    from scipy.sparse.csgraph import shortest_path

    hops = shortest_path(csr_matrix((np.ones(graph.num_pairs), (graph.src, graph.dst)), shape=(graph.ranks, graph.ranks)),
                         unweighted=True, indices=root)
    return np.where(np.isinf(hops), graph.ranks, hops)


def _depths(graph, arcs: np.ndarray, root: int) -> np.ndarray:
    """Per rank its hops from the root in the tree of `arcs` (pairs of `graph`)."""
    return tree_depths(np.where(arcs >= 0, graph.src[np.maximum(arcs, 0)], -1)[None, :])[0]


def tree_depths(parent: np.ndarray) -> np.ndarray:
    """Per tree and rank its hops from the root (pointer jumping over the (F, P) parents)."""
    depth = np.empty(parent.shape, dtype=np.int64)
    for t, up in enumerate(parent):
        root = int(np.flatnonzero(up < 0)[0])
        jump = np.where(up >= 0, up, root)
        hops = (up >= 0).astype(np.int64)
        while (jump != root).any():
            hops, jump = hops + hops[jump], jump[jump]
        depth[t] = hops
    return depth
