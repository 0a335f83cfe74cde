"""A broadcast (a reduce, run backwards) by striped trees: F spanning trees from the root whose
forwarding ranks are disjoint but for a few, every rank forwarding to at most F others over all
of them, laid out where ranks come in groups (synth.synthesis.relay.rank_groups) so that a
rank's children are in its own group where the slots allow: the rooted collectives at thousands
of ranks, where no packing is made (synth.synthesis.tree_packing is bounded by trees x pairs x
ranks).

Why: a rank with one link carries at most its link's bandwidth out, so a pipelined broadcast
meets the cut bound (the message over one link) only where every rank forwards no more than it
receives. A chain does, but is P - 1 hops deep: its pipeline's fill is P - 2 steps (Slim Fly
q = 13: 3,378 steps, the broadcast 598% above its bound at 256 MiB). F trees, the message split
in F stripes, each rank an inner rank of one tree with up to F children (F stripes out, F in:
its link carries the message once) and a leaf of the others, are about log_F P hops deep as
F-ary heaps (the classic disjoint-interior trees: Sanders, Speck and Traeff's two-tree
broadcast for F = 2); laid out for the groups as below they are deeper (Slim Fly q = 13: 20,
12, 9 and 7 hops for F = 2, 3, 4, 8; tested within 2 log_F P + 2). A rank starts at most F
messages a step, so the time of R rounds is about (R + depth - 1) (F alpha + n / (R x
bandwidth)): the fill costs depth / R of the bound and the message starts F alpha per step.

The trees: the ranks but the root in group order (the root's group first); the i-th has stripe
class i mod F, so every group holds about |group| / F of each class. Tree c's inner ranks (class
c) are grown breadth first from the root, each taking up to F children: its own group's inner
ranks first (no link between groups), then the first inner rank of a group none of whose are
placed yet, through a neighbouring group's link that has carried fewer than F - 1 stripes where
there is one (a group enters at most F groups). Every other rank is a leaf of tree c, the child
of an inner rank of its own group with a free slot, else of a neighbouring group's (the same
cap), else of any; within a group the least used pair of routers first. Where the classes are
uneven (P - 1 not 1 more than a multiple of F), a few leaves of a smaller class's tree hang under
a rank with slots left from a larger class's (one hop deeper; those ranks forward in two trees).
No rank has more than F children in all and the root one a tree: no rank's link carries more
than the message. With Q > 1 ranks a node, that holds per rank: a node's link carries up to Q
times it (priced so).

The layout is synth.synthesis.tree_packing's: round r's stripe c leaves the root at step r and
crosses the arc into a rank of depth h at step r + h - 1.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from synth.core.errors import SynthError

MAX_FANOUT = 16  # stripes (trees) at most: a rank starts F messages a step


def striped_trees(group: np.ndarray, root: int, fanout: int, neighbours: list[np.ndarray] | None = None,
                  near: np.ndarray | None = None) -> np.ndarray:
    """(F, P) per tree and rank its parent rank (-1 at the root): `fanout` trees from `root` over
    ranks in groups (`group`: per rank a group number 0..G-1; `neighbours`: per group the groups a
    link joins it to, where known), each rank's children F in all."""
    group = np.asarray(group, dtype=np.int64)
    ranks = len(group)
    if not 2 <= fanout <= min(MAX_FANOUT, ranks - 1):
        raise SynthError(f"striped trees take 2 to {min(MAX_FANOUT, ranks - 1)} stripes, not {fanout}")
    home = group[root]
    order = np.lexsort((np.arange(ranks), group, group != home))  # the root's group first
    order = order[order != root]
    klass = np.empty(ranks, dtype=np.int64)
    klass[order] = np.arange(len(order)) % fanout
    klass[root] = -1
    slots = np.full(ranks, fanout, dtype=np.int64)  # children a rank may still take, over every tree
    parent = np.full((fanout, ranks), -2, dtype=np.int64)  # -2: not yet placed
    parent[:, root] = -1
    members = [order[klass[order] == c] for c in range(fanout)]
    settled = np.zeros(ranks, dtype=bool)  # ranks whose own tree is made: what slots they have left they may lend
    crossings: dict[tuple[int, int], int] = {}  # per ordered pair of groups its arcs so far, over the trees
    links: dict[tuple[int, int], int] = {}  # the same per ordered pair of `near` (routers) within a group
    # the larger classes first: their leftover slots take the smaller classes' last leaves
    for c in sorted(range(fanout), key=lambda c: -len(members[c])):
        inner = members[c]
        _inner_tree(parent[c], inner, group, root, fanout, neighbours, crossings, near, links)
        np.subtract.at(slots, parent[c, inner], 1)
        settled[inner] = True
        _hang_leaves(parent[c], order[klass[order] != c], inner, group, slots, settled, neighbours, crossings, fanout,
                     near, links)
    return parent


def _inner_tree(parent: np.ndarray, inner: np.ndarray, group: np.ndarray, root: int, fanout: int,
                neighbours, crossings: dict, near: np.ndarray | None, links: dict) -> None:
    """Tree c's inner ranks (in group order, the root's group first) as a breadth-first tree of up
    to F children a rank under the root, in place. A rank takes the unplaced inner ranks of its
    own group first (no link between groups), then enters a group none of whose inner ranks is
    placed: a neighbouring one where its link has carried fewer than F - 1 stripes (the least crossed
    pair of groups first; F: what a rank's link carries), else any. A group enters at most F
    groups, so the slots left for leaves are spread over the groups; the groups left out are
    entered last from any inner rank with a slot."""
    waiting: dict[int, deque] = {}
    for v in inner.tolist():
        waiting.setdefault(int(group[v]), deque()).append(v)
    children = np.zeros(len(group), dtype=np.int64)
    entries: dict[int, int] = {}  # per group the groups it entered
    fresh = deque(waiting)  # groups no inner rank of which is placed yet, in order
    entered = {int(group[root])}

    def enter(a: int) -> int | None:
        """A fresh group's first inner rank, entered from group a."""
        if entries.get(a, 0) >= fanout:
            return None
        near = [b for b in (neighbours[a].tolist() if neighbours is not None else [])
                if b not in entered and b in waiting and crossings.get((a, b), 0) < max(1, fanout - 1)]
        if near:
            b = min(near, key=lambda b: (crossings.get((a, b), 0), b))
        else:
            while fresh and fresh[0] in entered:
                fresh.popleft()
            if not fresh:
                return None
            b = fresh[0]
        return _cross(a, b)

    def _cross(a: int, b: int) -> int:
        entered.add(b)
        entries[a] = entries.get(a, 0) + 1
        crossings[(a, b)] = crossings.get((a, b), 0) + 1
        return waiting[b].popleft()

    def grow(queue: deque) -> None:
        while queue:
            v = queue.popleft()
            a = int(group[v])
            while children[v] < fanout:
                u = _nearest(waiting[a], v, near, links) if waiting.get(a) else enter(a)
                if u is None:
                    break
                parent[u] = v
                children[v] += 1
                queue.append(u)

    home = int(group[root])
    top = waiting[home].popleft() if waiting.get(home) else _cross(home, next(iter(waiting)))
    parent[top] = root
    grow(deque([top]))
    while True:  # groups the entries did not reach: entered from any inner rank with a slot, a neighbour's first
        while fresh and fresh[0] in entered:
            fresh.popleft()
        if not fresh:
            return
        b = fresh[0]
        joined = set(neighbours[b].tolist()) if neighbours is not None else set()
        free = [v for v in inner.tolist() if parent[v] >= -1 and children[v] < fanout]
        if not free:
            raise SynthError("striped trees: no inner rank with a slot left")
        v = min(free, key=lambda v: (int(group[v]) not in joined, crossings.get((int(group[v]), b), 0)))
        u = _cross(int(group[v]), b)
        parent[u] = v
        children[v] += 1
        grow(deque([u]))


def _hang_leaves(parent: np.ndarray, leaves: np.ndarray, inner: np.ndarray, group: np.ndarray, slots: np.ndarray,
                 settled: np.ndarray, neighbours, crossings: dict, fanout: int, near: np.ndarray | None,
                 links: dict) -> None:
    """Each leaf under an inner rank of its own group with a slot, else of a neighbouring group
    whose link has carried fewer than F - 1 stripes (the pair least crossed yet), else of any group (in
    turn, so no group's links take them all),
    else under a placed rank of a tree already made with a slot left (a larger class's), in place."""
    inner_set = set(inner.tolist())
    spare: dict[int, list[int]] = {}
    for v in inner.tolist():
        if slots[v] > 0:
            spare.setdefault(int(group[v]), []).extend([v] * int(slots[v]))
    waiting = []
    for v in leaves.tolist():
        free = spare.get(int(group[v]))
        if free:
            parent[v] = _nearest(free, v, near, links, parents=True)
            slots[parent[v]] -= 1
        else:
            waiting.append(v)
    # the waiting leaves with slots of their own first, so they are placed before others hang under them
    waiting.sort(key=lambda v: -int(slots[v]))
    turn = deque(g for g in sorted(spare) if spare[g])
    late = []
    for v in waiting:
        a = int(group[v])
        near = [b for b in (neighbours[a].tolist() if neighbours is not None else [])
                if spare.get(b) and crossings.get((b, a), 0) < max(1, fanout - 1)]
        if near:
            b = min(near, key=lambda b: (crossings.get((b, a), 0), b))
        else:
            while turn and not spare[turn[0]]:
                turn.popleft()
            if not turn:
                late.append(v)
                continue
            b = turn[0]
            turn.rotate(-1)
        crossings[(b, a)] = crossings.get((b, a), 0) + 1
        parent[v] = spare[b].pop()
        slots[parent[v]] -= 1
    late.sort(key=lambda v: -int(slots[v]))  # those with slots first: placed, they take the others
    for v in late:
        same = [u for u in np.flatnonzero((parent >= 0) & settled & (slots > 0)).tolist() if u != v]
        if same:
            mine = [u for u in same if group[u] == group[v]]
            parent[v] = (mine or same)[0]
            slots[parent[v]] -= 1
            continue
        if slots[v] <= 0:
            raise SynthError("striped trees: no rank with a slot left (the classes' sizes do not add up)")
        # no placed rank has a slot but v has: v takes a placed leaf's place, the leaf under v (its
        # parent's children the same in number, v's one more)
        placed = [u for u in np.flatnonzero(parent >= 0).tolist() if u not in inner_set]
        u = next((u for u in placed if group[u] == group[v]), placed[0])
        parent[v], parent[u] = parent[u], v
        slots[v] -= 1


def _nearest(candidates, v: int, near: np.ndarray | None, used: dict, parents: bool = False) -> int:
    """Taken out of `candidates` (a deque or list of ranks) for rank v: one whose `near` (its
    router) is v's, else the one whose routers' pair has carried the fewest arcs yet (`used`,
    counted here; `parents`: the candidates are v's parent, else its child), the earliest such
    (`parents`: the latest), so the links within a group are evenly used."""
    if near is None:
        return candidates.pop() if parents else candidates.popleft()
    index = list(range(len(candidates) - 1, -1, -1) if parents else range(len(candidates)))
    mine = int(near[v])

    def pair(u: int) -> tuple[int, int]:
        return (int(near[u]), mine) if parents else (mine, int(near[u]))

    best = min(index, key=lambda i: (int(near[candidates[i]]) != mine, used.get(pair(candidates[i]), 0)))
    u = candidates[best]
    del candidates[best]
    if int(near[u]) != mine:
        used[pair(u)] = used.get(pair(u), 0) + 1
    return u
