"""MULTITREE (Pham26 ch.3, after Huang et al.): one spanning tree per root, built together so that
no directed link carries two trees' data in one step; `kautz-m` on Kautz graphs and `multitree` on
any network with one rank per router.

Construction of `multitree` (greedy, as Pham26 describes it): the roots' trees take turns in round
robin, each adding one edge from a node it held at the start of the step to a node it lacks, over a
link no tree has used in this step; when no tree can add an edge, the step ends and every link is
free again. A tree's candidate edges are tried in a fixed order (its nodes in the order they joined,
their out-neighbours ascending), so the construction is deterministic. First fit is not a matching:
on K(d,2) it takes d + 1 steps for d = 2, 3, 4 (Pham26's count) and most d up to 16, but d + 2 at d =
10, 13, 14 (out-trees) and 10, 13, 14, 15 (in-trees): in the last step a tree lacks a node all of
whose in-links from the nodes it holds other trees took first (at d = 10, tree 61 and node 108: 5
such in-links, all taken), where a maximum matching would have routed one of those trees elsewhere.

`kautz-m` builds Pham26's own Kautz construction instead (eq. 3.5 and the text after it): every root's
breadth-first tree, its first level in step 0 and every link's second-level uses, at most d^1 = d of
them, serialized one tree per step (two_level_trees): d + 1 steps for every d, the lower bound
(a node receives n - 1 = d^2 + d - 1 blocks over d in-links, one per link and step), with one tree
per link and step, so Table 3.2's (d + 1)(alpha + M beta) for allgather and reduce-scatter, 2(d + 1)
alpha + 2M/d beta for allreduce, (d + 1) alpha + (2d + 1)M/(d(d + 1)) beta for alltoall (every step
after the first moves one block per link), and its rooted collectives in 2 steps.

Schedules from the trees: allgather, every tree edge carries its root's block in its step;
alltoall, the root's blocks for the child's subtree; reduce-scatter, trees built on the reversed
graph, a child reducing its subtree's partial into its parent, last-built edges first; allreduce,
reduce-scatter then allgather. A rooted collective builds its root's tree alone (a breadth-first
tree). On an m x m 2dfc with m even the trees are Pham26 ch.4's construction instead (square_grid_trees),
which the greedy one matches in steps but not in the per-step loads."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from synth.core.interrupt import native
from synth.collectives.algorithms import Algorithm, Request
from synth.collectives.algorithms.kautz import COLLECTIVES, kautz_refusal
from synth.collectives.algorithms.rank_graph import rank_graph
from synth.collectives.schedule import COPY, REDUCE


@dataclass(frozen=True)
class Trees:
    """Spanning trees, one per root, as arrays of shape (trees, P - 1): every tree's edges (step,
    parent, child) in the order they were added. Arrays, not lists of tuples: on a 64 x 64 torus the
    4096 trees have 16.7 M edges."""

    roots: np.ndarray  # (trees,)
    step: np.ndarray
    parent: np.ndarray
    child: np.ndarray

    @property
    def steps(self) -> int:
        return int(self.step.max(initial=-1)) + 1

    def edges(self, t: int) -> list[tuple[int, int, int]]:
        """Tree t's edges (step, parent, child), in order (for tests and small trees)."""
        return list(zip(self.step[t].tolist(), self.parent[t].tolist(), self.child[t].tolist()))

    def subtrees(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(preorder, position, size), each (trees, P): every tree's nodes in depth-first preorder
        (children in the order they were added), a node's index in it, and its subtree's size, so
        that node w's subtree is preorder[t, position[t, w] : position[t, w] + size[t, w]]."""
        return _preorders(self.roots.astype(np.int64), self.parent, self.child)


def _csr(neighbours: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray]:
    counts = np.array([len(a) for a in neighbours], dtype=np.int64)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    indices = np.concatenate(neighbours).astype(np.int64) if len(neighbours) else np.zeros(0, dtype=np.int64)
    return indptr, indices


def build_trees(out: tuple[np.ndarray, ...], roots: list[int]) -> Trees:
    """Pham26's greedy construction (module docstring), compiled: per root its tree's edges in the
    order they were added. Runs without the GIL under `native`, so a signal stops it at once."""
    indptr, indices = _csr(out)
    roots_array = np.asarray(roots, dtype=np.int64)
    step, parent, child, complete = native(lambda: _greedy_trees(indptr, indices, roots_array))
    if not complete:
        raise AssertionError("build_trees needs a strongly connected graph")
    return Trees(roots_array, step, parent, child)


@njit(cache=True, nogil=True)
def _greedy_trees(indptr, indices, roots):
    """The round robin of build_trees: in every step each tree in turn adds one edge from a node it
    held at the start of the step (its nodes in the order they joined, their out-neighbours
    ascending) to a node it lacks, over a link no tree used in the step, until no tree can; then
    the links are free again. A node whose neighbours are all in the tree offers nothing to it ever
    after, so each tree's scan starts past its first such nodes (`base`): the same edges, without
    rescanning saturated nodes every step."""
    trees, p = len(roots), len(indptr) - 1
    member = np.zeros((trees, p), dtype=np.bool_)
    order = np.empty((trees, p), dtype=np.int32)  # nodes in the order they joined
    count = np.ones(trees, dtype=np.int64)
    step_of = np.empty((trees, max(p - 1, 0)), dtype=np.int32)
    parent = np.empty((trees, max(p - 1, 0)), dtype=np.int32)
    child = np.empty((trees, max(p - 1, 0)), dtype=np.int32)
    used = np.zeros(len(indices), dtype=np.bool_)  # links taken in this step
    taken = np.empty(len(indices), dtype=np.int64)
    base = np.zeros(trees, dtype=np.int64)
    for t in range(trees):
        member[t, roots[t]] = True
        order[t, 0] = roots[t]
    remaining = trees * (p - 1)
    step = 0
    while remaining > 0:
        held = count.copy()  # the nodes each tree holds at the start of the step
        for t in range(trees):
            while base[t] < held[t]:
                u = order[t, base[t]]
                saturated = True
                for k in range(indptr[u], indptr[u + 1]):
                    if not member[t, indices[k]]:
                        saturated = False
                        break
                if not saturated:
                    break
                base[t] += 1
        cursor_node = base.copy()
        cursor_link = np.zeros(trees, dtype=np.int64)
        ntaken = 0
        growing = True
        while growing:
            growing = False
            for t in range(trees):
                i, j = cursor_node[t], cursor_link[t]
                while i < held[t]:
                    u = order[t, i]
                    k = indptr[u] + j
                    while k < indptr[u + 1] and (member[t, indices[k]] or used[k]):
                        k += 1
                    if k < indptr[u + 1]:
                        w = indices[k]
                        used[k] = True
                        taken[ntaken] = k
                        ntaken += 1
                        member[t, w] = True
                        e = count[t] - 1
                        order[t, count[t]] = w
                        count[t] += 1
                        step_of[t, e], parent[t, e], child[t, e] = step, u, w
                        remaining -= 1
                        growing = True
                        j = k - indptr[u] + 1
                        break
                    i, j = i + 1, 0
                cursor_node[t], cursor_link[t] = i, j
        if ntaken == 0:  # no tree can grow: some node is out of reach
            return step_of, parent, child, False
        for x in range(ntaken):
            used[taken[x]] = False
        step += 1
    return step_of, parent, child, True


@njit(cache=True, nogil=True)
def _preorders(roots, parent, child):
    trees, edges = parent.shape
    p = edges + 1
    preorder = np.empty((trees, p), dtype=np.int32)
    position = np.empty((trees, p), dtype=np.int32)
    size = np.ones((trees, p), dtype=np.int32)
    first = np.empty(p, dtype=np.int64)  # children of a node in the order they were added: a linked list
    after = np.empty(edges, dtype=np.int64)
    last = np.empty(p, dtype=np.int64)
    stack = np.empty(p, dtype=np.int64)  # per depth: the next child edge to descend
    node_stack = np.empty(p, dtype=np.int64)  # per depth: the node
    for t in range(trees):
        first[:] = -1
        for e in range(edges):
            u = parent[t, e]
            after[e] = -1
            if first[u] < 0:
                first[u] = e
            else:
                after[last[u]] = e
            last[u] = e
        # depth first: a node, then its children's subtrees in order (the stack holds edges)
        preorder[t, 0] = roots[t]
        position[t, roots[t]] = 0
        n = 1
        depth = 0
        stack[0] = first[roots[t]]
        node_stack[0] = roots[t]
        while depth >= 0:
            e = stack[depth]
            if e < 0:  # the node on top is done: its size is what joined since
                x = node_stack[depth]
                size[t, x] = n - position[t, x]
                depth -= 1
                continue
            stack[depth] = after[e]
            w = child[t, e]
            preorder[t, n] = w
            position[t, w] = n
            n += 1
            depth += 1
            stack[depth] = first[w]
            node_stack[depth] = w
    return preorder, position, size


def square_grid_trees(m: int, roots: list[int]) -> Trees:
    """Pham26 ch.4's MULTITREE on an m x m 2dfc (m even), for every root (offsets (row r, column c) from
    it, modulo m): step 0, the root reaches its row and column (the axis nodes); then, two rows and
    two columns a step, the Y-axis node (r, 0) reaches (r, c) for c = r mod 2 (c != 0) and the X-axis
    node (0, c) reaches (r, c) for r != c mod 2 (r != 0). m/2 + 1 steps, the (4.4) bound; every
    directed link carries one tree per step (the test checks it on the routed schedules). A tree's
    edges are sorted by (step, parent, child)."""
    axis = np.arange(1, m)
    # the edges of one tree as offsets from its root: (step, parent row, parent column, child row, child column)
    template = [(np.zeros_like(axis), 0 * axis, 0 * axis, axis, 0 * axis), (np.zeros_like(axis), 0 * axis, 0 * axis, 0 * axis, axis)]
    for k in range(1, m):
        step = (k + 1) // 2
        c = axis[axis % 2 == k % 2]
        template.append((np.full_like(c, step), np.full_like(c, k), 0 * c, np.full_like(c, k), c))
        r = axis[axis % 2 != k % 2]
        template.append((np.full_like(r, step), 0 * r, np.full_like(r, k), r, np.full_like(r, k)))
    step, pr, pc, cr, cc = (np.concatenate(column) for column in zip(*template))
    roots_array = np.asarray(roots, dtype=np.int64)
    y0, x0 = (roots_array // m)[:, None], (roots_array % m)[:, None]
    parent = ((y0 + pr) % m) * m + (x0 + pc) % m
    child = ((y0 + cr) % m) * m + (x0 + cc) % m
    steps = np.broadcast_to(step, parent.shape)
    p = m * m
    order = np.argsort((steps * p + parent) * p + child, axis=1, kind="stable")
    take = lambda a: np.take_along_axis(a, order, axis=1).astype(np.int32)  # noqa: E731
    return Trees(roots_array, take(steps), take(parent), take(child))


def two_level_trees(out: tuple[np.ndarray, ...], roots: list[int]) -> Trees:
    """Kautz-M's trees on a diameter-two graph (K(d,2), or its reverse for the in-trees): every
    root's breadth-first tree, its links to the children in step 0 (a link leaves one root only),
    and every link's second-level uses, one tree per step in the order of their roots, in steps 1,
    2, ...: a link carries the children of at most d roots (Pham26 ch.3: ab -> bc is used by the roots
    xa, x != a, except the root ba on ab -> ba), so d + 1 steps, and every step after the first moves
    one block per link: the (2d + 1) M / (d (d + 1)) of Table 3.2's alltoall. (The greedy trees miss
    d + 1 steps at some d, and from d = 4 their uneven branches put more on a link.)"""
    p = len(out)
    trees, users = [], {}
    for r in roots:
        edges, seen = [(0, r, int(c)) for c in out[r]], {r, *(int(c) for c in out[r])}
        for _, _, child in list(edges):
            for w in out[child].tolist():
                if w not in seen:
                    seen.add(w)
                    users.setdefault((child, w), []).append((r, len(trees), len(edges)))
                    edges.append((None, child, w))
        if len(seen) != p:
            raise AssertionError("two_level_trees needs a graph of diameter two")
        trees.append(edges)
    for uses in users.values():
        for step, (_, t, i) in enumerate(sorted(uses), start=1):
            trees[t][i] = (step,) + trees[t][i][1:]
    table = np.array(trees, dtype=np.int32).reshape(len(roots), p - 1, 3)
    return Trees(np.asarray(roots, dtype=np.int64), table[:, :, 0], table[:, :, 1], table[:, :, 2])


def _square(request: Request) -> int | None:
    """m when the ranks are an m x m grid with whole rows and columns linked (2dfc, HyperX) and m even."""
    from synth.topology import parse_topology

    dims = request.dims
    complete = parse_topology(request.spec).complete_dimensions
    return dims[0] if len(dims) == 2 and dims[0] == dims[1] and dims[0] % 2 == 0 and complete else None


def _emit(builder, step: np.ndarray, src: np.ndarray, dst: np.ndarray, blocks, steps: int, op: int) -> None:
    """Transfers given in one list (flattened tree by tree), added step by step in that order
    within a step. `blocks` is one block per transfer (an array) or (counts, ids), the ids of all
    transfers one after another."""
    order = np.argsort(step.ravel(), kind="stable")
    src, dst = src.ravel()[order], dst.ravel()[order]
    if isinstance(blocks, tuple):
        counts, ids = blocks
        starts = np.cumsum(counts) - counts
        counts = counts[order]
        within = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
        ids = ids[np.repeat(starts[order], counts) + within]
        bounds = np.concatenate([[0], np.cumsum(counts)])
    else:
        counts, ids = np.ones(len(order), dtype=np.int64), blocks.ravel()[order]
        bounds = np.arange(len(order) + 1)
    cuts = np.searchsorted(step.ravel()[order], np.arange(steps + 1))
    for s in range(steps):
        a, b = cuts[s], cuts[s + 1]
        if a < b:
            builder.add_step(src[a:b], dst[a:b], (counts[a:b], ids[bounds[a]:bounds[b]]), op)


def _subtree_blocks(trees: Trees, offset: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per edge (trees flattened in order), its child's subtree as blocks offset[t] + x: (counts, ids)."""
    preorder, position, size = trees.subtrees()
    t = np.repeat(np.arange(len(trees.roots)), trees.child.shape[1])
    child = trees.child.ravel()
    start, counts = position[t, child].astype(np.int64), size[t, child].astype(np.int64)
    within = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    rows = np.repeat(t, counts)
    ids = offset[rows] + preorder[rows, np.repeat(start, counts) + within]
    return counts, ids


def add_allgather(make, out, builder, p: int) -> None:
    trees = make(out, list(range(p)))
    roots = np.broadcast_to(trees.roots[:, None], trees.child.shape)
    _emit(builder, trees.step, trees.parent, trees.child, roots, trees.steps, COPY)


def add_reduce_scatter(make, into, builder, p: int) -> None:
    trees = make(into, list(range(p)))  # on the reversed graph: tree edge u -> w is the link w -> u
    roots = np.broadcast_to(trees.roots[:, None], trees.child.shape)
    _emit(builder, trees.steps - 1 - trees.step, trees.child, trees.parent, roots, trees.steps, REDUCE)


def _alltoall(make, out, builder, p: int) -> None:
    trees = make(out, list(range(p)))
    blocks = _subtree_blocks(trees, trees.roots * p)
    _emit(builder, trees.step, trees.parent, trees.child, blocks, trees.steps, COPY)


def _rooted(make, g, request: Request, builder) -> None:
    root, blocks = request.root, request.blocks
    name = request.collective
    trees = make(g.out if name in ("broadcast", "scatter") else g.into, [root])
    steps, edges = trees.steps, trees.child.shape[1]
    if name in ("broadcast", "reduce"):  # every edge carries every block
        every = (np.full(edges, blocks, dtype=np.int64), np.tile(np.arange(blocks, dtype=np.int64), edges))
    else:  # scatter, gather: the child's subtree's blocks
        every = _subtree_blocks(trees, np.zeros(1, dtype=np.int64))
    if name in ("broadcast", "scatter"):
        _emit(builder, trees.step, trees.parent, trees.child, every, steps, COPY)
    else:  # reduce, gather: the edges reversed, last-built first
        _emit(builder, steps - 1 - trees.step, trees.child, trees.parent, every, steps, REDUCE if name == "reduce" else COPY)


def _generator(name: str):
    def generate(request: Request):
        g = rank_graph(request.spec)
        p = request.ranks
        builder = request.builder(name)
        collective = request.collective
        m = _square(request)
        make = build_trees if m is None else (lambda _graph, roots: square_grid_trees(m, roots))  # (links both ways)
        if name == "kautz-m":
            make = two_level_trees
        if collective in ("broadcast", "scatter", "reduce", "gather"):
            _rooted(make, g, request, builder)
        elif collective == "allgather":
            add_allgather(make, g.out, builder, p)
        elif collective == "reduce-scatter":
            add_reduce_scatter(make, g.into, builder, p)
        elif collective == "allreduce":
            add_reduce_scatter(make, g.into, builder, p)
            add_allgather(make, g.out, builder, p)
        else:
            _alltoall(make, g.out, builder, p)
        return builder.build()
    return generate


def _any_network_refusal(request: Request) -> str | None:
    from synth.core.errors import SynthError

    try:
        rank_graph(request.spec)
    except SynthError as exc:
        return str(exc).splitlines()[0]
    if request.ranks_per_node != 1:
        return "multitree needs one rank per node"
    if request.collective == "allreduce" and request.blocks != request.ranks:
        return f"multitree allreduce splits the vector into one block per rank ({request.ranks}), not {request.blocks}"
    return None


def _transfers(request: Request) -> int:
    """One transfer per tree edge: P - 1 for a rooted collective's tree, P (P - 1) for one tree per
    root, twice that for allreduce (reduce-scatter, then allgather)."""
    p = request.ranks
    if request.collective in ("broadcast", "reduce", "scatter", "gather"):
        return p - 1
    return (2 if request.collective == "allreduce" else 1) * p * (p - 1)


ALGORITHM = (
    Algorithm("kautz-m", COLLECTIVES, "Kautz K(d,2) with MULTITREE: one tree per root, no link shared within a "
              "step", _generator("kautz-m"), kautz_refusal("kautz-m"), lambda request: request.ranks,
              transfers=_transfers),
    Algorithm("multitree", COLLECTIVES, "MULTITREE on any network with one rank per router (greedy trees, "
              "contention-free steps)", _generator("multitree"), _any_network_refusal, lambda request: request.ranks,
              transfers=_transfers, quick_ranks=1024),
)
