"""MULTITREE (000 ch.3, after Huang et al.): one spanning tree per root, built together so that
no directed link carries two trees' data in one step; `kautz-m` on Kautz graphs and `multitree` on
any network with one rank per router.

Construction of `multitree` (greedy, as 000 describes it): the roots' trees take turns in round
robin, each adding one edge from a node it held at the start of the step to a node it lacks, over a
link no tree has used in this step; when no tree can add an edge, the step ends and every link is
free again. A tree's candidate edges are tried in a fixed order (its nodes in the order they joined,
their out-neighbours ascending), so the construction is deterministic. First fit is not a matching:
on K(d,2) it takes d + 1 steps for d = 2, 3, 4 (000's count) and most d up to 16, but d + 2 at d =
10, 13, 14 (out-trees) and 10, 13, 14, 15 (in-trees): in the last step a tree lacks a node all of
whose in-links from the nodes it holds other trees took first (at d = 10, tree 61 and node 108: 5
such in-links, all taken), where a maximum matching would have routed one of those trees elsewhere.

`kautz-m` builds 000's own Kautz construction instead (eq. 3.5 and the text after it): every root's
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
tree). On an m x m 2dfc with m even the trees are 000 ch.4's construction instead (square_grid_trees),
which the greedy one matches in steps but not in the per-step loads."""

from __future__ import annotations

import numpy as np

from synth.schedule.algorithms import Algorithm, Request, register
from synth.schedule.algorithms.kautz import COLLECTIVES, kautz_refusal
from synth.schedule.algorithms.rank_graph import rank_graph
from synth.schedule.schedule import COPY, REDUCE


def build_trees(out: tuple[np.ndarray, ...], roots: list[int]) -> list[list[tuple[int, int, int]]]:
    """Per root, its tree's edges (step, parent, child) in the order they were added."""
    p = len(out)
    neighbours = [a.tolist() for a in out]
    member = np.zeros((len(roots), p), dtype=bool)
    order = [[r] for r in roots]  # nodes in the order they joined
    for t, r in enumerate(roots):
        member[t, r] = True
    edges = [[] for _ in roots]
    step = 0
    while not member.all():
        held = [len(o) for o in order]  # the nodes each tree holds at the start of the step
        used = set()
        cursor = [(0, 0)] * len(roots)  # per tree: (index into its nodes, index into their neighbours)
        growing = True
        while growing:
            growing = False
            for t in range(len(roots)):
                i, j = cursor[t]
                while i < held[t]:
                    u = order[t][i]
                    nbrs = neighbours[u]
                    while j < len(nbrs) and (member[t, nbrs[j]] or (u, nbrs[j]) in used):
                        j += 1
                    if j < len(nbrs):
                        w = nbrs[j]
                        used.add((u, w))
                        member[t, w] = True
                        order[t].append(w)
                        edges[t].append((step, u, w))
                        growing = True
                        j += 1
                        break
                    i, j = i + 1, 0
                cursor[t] = (i, j)
        step += 1
    return edges


def square_grid_trees(m: int, roots: list[int]) -> list[list[tuple[int, int, int]]]:
    """000 ch.4's MULTITREE on an m x m 2dfc (m even), for every root (offsets (row r, column c) from
    it, modulo m): step 0, the root reaches its row and column (the axis nodes); then, two rows and
    two columns a step, the Y-axis node (r, 0) reaches (r, c) for c = r mod 2 (c != 0) and the X-axis
    node (0, c) reaches (r, c) for r != c mod 2 (r != 0). m/2 + 1 steps, the (4.4) bound; every
    directed link carries one tree per step (the test checks it on the routed schedules)."""
    out = []
    for root in roots:
        y0, x0 = divmod(root, m)
        at = lambda r, c: ((y0 + r) % m) * m + (x0 + c) % m  # noqa: E731
        edges = [(0, root, at(r, 0)) for r in range(1, m)] + [(0, root, at(0, c)) for c in range(1, m)]
        for k in range(1, m):
            step = (k + 1) // 2
            edges += [(step, at(k, 0), at(k, c)) for c in range(1, m) if c % 2 == k % 2]
            edges += [(step, at(0, k), at(r, k)) for r in range(1, m) if r % 2 != k % 2]
        out.append(sorted(edges))
    return out


def two_level_trees(out: tuple[np.ndarray, ...], roots: list[int]) -> list[list[tuple[int, int, int]]]:
    """Kautz-M's trees on a diameter-two graph (K(d,2), or its reverse for the in-trees): every
    root's breadth-first tree, its links to the children in step 0 (a link leaves one root only),
    and every link's second-level uses, one tree per step in the order of their roots, in steps 1,
    2, ...: a link carries the children of at most d roots (000 ch.3: ab -> bc is used by the roots
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
    return trees


def _square(request: Request) -> int | None:
    """m when the ranks are an m x m grid with whole rows and columns linked (2dfc, HyperX) and m even."""
    from synth.topology import parse_topology

    dims = request.dims
    family = parse_topology(request.spec).family
    return dims[0] if len(dims) == 2 and dims[0] == dims[1] and dims[0] % 2 == 0 and family in ("2dfc", "hyperx") else None


def _subtrees(edges: list[tuple[int, int, int]], root: int, p: int) -> dict[int, list[int]]:
    """Per node of a tree, the nodes of its subtree (itself included)."""
    children: dict[int, list[int]] = {}
    for _, u, w in edges:
        children.setdefault(u, []).append(w)
    out: dict[int, list[int]] = {}

    def collect(x: int) -> list[int]:
        nodes = [x]
        for c in children.get(x, []):
            nodes += collect(c)
        out[x] = nodes
        return nodes

    collect(root)
    return out


def _steps(trees) -> int:
    return 1 + max((s for edges in trees for s, _, _ in edges), default=-1)


def _emit(builder, transfers: list[tuple[int, int, int, list[int]]], steps: int, op: int) -> None:
    """(step, src, dst, blocks) transfers, added step by step."""
    for s in range(steps):
        mine = [(u, w, b) for step, u, w, b in transfers if step == s]
        if mine:
            builder.add_step([u for u, _, _ in mine], [w for _, w, _ in mine], [b for _, _, b in mine], op)


def add_allgather(make, out, builder, p: int) -> None:
    trees = make(out, list(range(p)))
    _emit(builder, [(s, u, w, [r]) for r, edges in enumerate(trees) for s, u, w in edges], _steps(trees), COPY)


def add_reduce_scatter(make, into, builder, p: int) -> None:
    trees = make(into, list(range(p)))  # on the reversed graph: tree edge u -> w is the link w -> u
    steps = _steps(trees)
    transfers = [(steps - 1 - s, w, u, [r]) for r, edges in enumerate(trees) for s, u, w in edges]
    _emit(builder, transfers, steps, REDUCE)


def _alltoall(make, out, builder, p: int) -> None:
    trees = make(out, list(range(p)))
    transfers = []
    for r, edges in enumerate(trees):
        below = _subtrees(edges, r, p)
        transfers += [(s, u, w, [r * p + x for x in below[w]]) for s, u, w in edges]
    _emit(builder, transfers, _steps(trees), COPY)


def _rooted(make, g, request: Request, builder) -> None:
    p, root, every = request.ranks, request.root, list(range(request.blocks))
    name = request.collective
    outward = name in ("broadcast", "scatter")
    (edges,) = make(g.out if outward else g.into, [root])
    steps = _steps([edges])
    below = _subtrees(edges, root, p)
    if name == "broadcast":
        _emit(builder, [(s, u, w, every) for s, u, w in edges], steps, COPY)
    elif name == "scatter":
        _emit(builder, [(s, u, w, below[w]) for s, u, w in edges], steps, COPY)
    elif name == "reduce":
        _emit(builder, [(steps - 1 - s, w, u, every) for s, u, w in edges], steps, REDUCE)
    else:  # gather
        _emit(builder, [(steps - 1 - s, w, u, below[w]) for s, u, w in edges], steps, COPY)


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


register(Algorithm("kautz-m", COLLECTIVES, "Kautz K(d,2) with MULTITREE: one tree per root, no link shared within a "
                   "step", _generator("kautz-m"), kautz_refusal("kautz-m"), lambda request: request.ranks,
                   transfers=_transfers))
register(Algorithm("multitree", COLLECTIVES, "MULTITREE on any network with one rank per router (greedy trees, "
                   "contention-free steps)", _generator("multitree"), _any_network_refusal, lambda request: request.ranks,
                   transfers=_transfers))
