"""Kautz K(d,2) collectives with message combining (`kautz-c`, [Pham26] ch.3;
digest ../shared/spec/kautz-2dfc-collectives.md). Shortest paths in K(d,2) are unique and at most
two hops, so every collective takes two steps along them:

- broadcast / scatter: the root sends to its d out-neighbours (scatter: the blocks of each one's
  branch), which forward to the nodes at distance two (each has exactly one parent);
- reduce / gather: the mirror image on the in-tree of the root;
- allgather: step 1 every node sends its block on all out-links; step 2 node a sends to each
  out-neighbour b the blocks of its in-neighbours c at distance two from b (combined);
- reduce-scatter: step 1 node u reduces into each out-neighbour v the partial blocks of v's
  out-neighbours at distance two from u; step 2 v reduces block t into each out-neighbour t;
- alltoall: step 1 node s sends to each out-neighbour v its blocks for v and for the nodes it
  reaches through v; step 2 v forwards them;
- allreduce: reduce-scatter then allgather (4 steps).
Pham26 Table 3.2 prices these: with combining, 2 alpha + ... per collective (tests/unit/collectives/test_kautz_2dfc.py)."""

from __future__ import annotations

import numpy as np

from synth.collectives.algorithms import Algorithm, Request
from synth.collectives.algorithms.rank_graph import rank_graph
from synth.collectives.schedule import REDUCE
from synth.topology import parse_topology

COLLECTIVES = ("broadcast", "reduce", "scatter", "gather", "allgather", "reduce-scatter", "alltoall", "alltoallv",
               "allreduce")


def _middle(g, a: int, b: int) -> int:
    """The node between a and b on the unique two-hop path."""
    return int(np.intersect1d(g.out[a], g.into[b])[0])


def _rooted(g, request: Request, builder) -> None:
    root, every = request.root, np.arange(request.blocks)
    name = request.collective
    far = [int(x) for x in np.flatnonzero(g.distance[root] == 2)] if name in ("broadcast", "scatter") else \
        [int(x) for x in np.flatnonzero(g.distance[:, root] == 2)]
    near = g.out[root] if name in ("broadcast", "scatter") else g.into[root]
    if name == "broadcast":
        builder.add_step(np.full(len(near), root), near, np.tile(every, (len(near), 1)))
        parents = [_middle(g, root, x) for x in far]
        builder.add_step(parents, far, np.tile(every, (len(far), 1)))
    elif name == "scatter":
        branch = {int(c): [int(c)] for c in near}
        for x in far:
            branch[_middle(g, root, x)].append(x)
        builder.add_step(np.full(len(near), root), near, [np.array(branch[int(c)]) for c in near])
        builder.add_step([_middle(g, root, x) for x in far], far, [[x] for x in far])
    elif name == "reduce":
        builder.add_step(far, [_middle(g, x, root) for x in far], np.tile(every, (len(far), 1)), REDUCE)
        builder.add_step(near, np.full(len(near), root), np.tile(every, (len(near), 1)), REDUCE)
    else:  # gather
        branch = {int(c): [int(c)] for c in near}
        for x in far:
            branch[_middle(g, x, root)].append(x)
        builder.add_step(far, [_middle(g, x, root) for x in far], [[x] for x in far])
        builder.add_step(near, np.full(len(near), root), [np.array(branch[int(c)]) for c in near])


def add_allgather(g, builder, p: int) -> None:
    src = np.concatenate([np.full(len(g.out[r]), r) for r in range(p)])
    dst = np.concatenate(g.out)
    builder.add_step(src, dst, src[:, None])
    blocks = [g.into[a][g.distance[g.into[a], b] == 2] for a, b in zip(src.tolist(), dst.tolist())]
    builder.add_step(src, dst, blocks)


def add_reduce_scatter(g, builder, p: int) -> None:
    src = np.concatenate([np.full(len(g.out[r]), r) for r in range(p)])
    dst = np.concatenate(g.out)
    blocks = [g.out[v][g.distance[u, g.out[v]] == 2] for u, v in zip(src.tolist(), dst.tolist())]
    builder.add_step(src, dst, blocks, REDUCE)
    builder.add_step(src, dst, dst[:, None], REDUCE)


def _alltoall(g, builder, p: int) -> None:
    src = np.concatenate([np.full(len(g.out[r]), r) for r in range(p)])
    dst = np.concatenate(g.out)
    first = []
    for s, v in zip(src.tolist(), dst.tolist()):
        beyond = g.out[v][g.distance[s, g.out[v]] == 2]  # the nodes s reaches through v
        first.append(s * p + np.concatenate([[v], beyond]))
    builder.add_step(src, dst, first)
    second = [g.into[v][g.distance[g.into[v], t] == 2] * p + t for v, t in zip(src.tolist(), dst.tolist())]
    builder.add_step(src, dst, second)


def generate(request: Request):
    g = rank_graph(request.spec)
    p = request.ranks
    builder = request.builder("kautz-c")
    name = request.collective
    if name in ("broadcast", "scatter", "reduce", "gather"):
        _rooted(g, request, builder)
    elif name in ("allgather",):
        add_allgather(g, builder, p)
    elif name == "reduce-scatter":
        add_reduce_scatter(g, builder, p)
    elif name == "allreduce":
        add_reduce_scatter(g, builder, p)
        add_allgather(g, builder, p)
    else:
        _alltoall(g, builder, p)
    return builder.build()


def kautz_refusal(name: str):
    def refusal(request: Request) -> str | None:
        from synth.core.errors import SynthError

        try:
            topology = parse_topology(request.spec)
        except SynthError as exc:
            return str(exc).splitlines()[0]
        if topology.kautz_degree() is None:
            return f"{name} runs on Kautz graphs K(d,2) (kautz:D), not on {request.spec}"
        if request.ranks_per_node != 1:
            return f"{name} needs one rank per node"
        if request.collective == "allreduce" and request.blocks != request.ranks:
            return f"{name} allreduce splits the vector into one block per rank ({request.ranks}), not {request.blocks}"
        return None
    return refusal


ALGORITHM = Algorithm("kautz-c", COLLECTIVES, "Kautz K(d,2) with message combining: two steps along the unique shortest "
                      "paths (four for allreduce)", generate, kautz_refusal("kautz-c"), lambda request: request.ranks)
