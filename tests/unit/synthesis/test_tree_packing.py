"""Broadcast and reduce by packed spanning trees (synth.synthesis.tree_packing) and the
least-cost arborescence they are made of (synth.synthesis.arborescence). Checked independently:
the arborescence against every choice of an entering arc per node on small random graphs; the
packings' trees spanning (walked from the root here), their channel loads recounted from the
transfers' paths, and at the cut bound where Edmonds' theorem says arc-disjoint trees exist (a
Kautz graph's d, a 2D torus's 4: the root's out-degree, so no broadcast moves less over its busiest
link); the pipelined schedules replayed, broadcast and reduce."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from synth.synthesis.front import rooted_schedule
from synth.synthesis.plan import plan_synthesis
from synth.synthesis.portfolio import bands, synthesize_parts
from synth.collectives.verify import verify
from synth.synthesis.arborescence import min_arborescence
from synth.synthesis.tree_packing import pack_trees, packed_deliveries
from synth.synthesis.transfers import transfer_graph
from synth.topology import parse_topology
from tests.helpers import delivers


def _brute_force(n, src, dst, cost, root):
    """The least cost over every choice of one entering arc per non-root node that reaches every
    node from the root (None: no choice does)."""
    into = [[k for k in range(len(src)) if dst[k] == v and src[k] != v] for v in range(n)]
    best = None
    for choice in itertools.product(*[into[v] for v in range(n) if v != root]):
        parent = {dst[k]: src[k] for k in choice}
        def reaches(v, seen=()):
            return v == root or (v not in seen and reaches(parent[v], seen + (v,)))
        if all(reaches(v) for v in range(n)):
            total = sum(cost[k] for k in choice)
            best = total if best is None else min(best, total)
    return best


@pytest.mark.parametrize("seed", range(40))
def test_the_arborescence_is_the_cheapest_choice_of_entering_arcs(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 6))
    pairs = [(a, b) for a in range(n) for b in range(n) if a != b and rng.random() < 0.6]
    src = np.array([a for a, _ in pairs], dtype=np.int64)
    dst = np.array([b for _, b in pairs], dtype=np.int64)
    cost = rng.integers(0, 3, len(pairs)).astype(float) if seed % 2 else rng.random(len(pairs))
    root = int(rng.integers(0, n))
    expected = _brute_force(n, src.tolist(), dst.tolist(), cost.tolist(), root)
    got = min_arborescence(n, src, dst, cost, root)
    if expected is None:
        assert got is None
        return
    assert got[root] == -1 and (dst[got[np.arange(n) != root]] == np.flatnonzero(np.arange(n) != root)).all()
    assert cost[got[got >= 0]].sum() == pytest.approx(expected)


def _walk(graph, arcs, root):
    """Ranks reached from the root along the tree's arcs, and each one's hops."""
    children = {}
    for v, k in enumerate(arcs.tolist()):
        if k >= 0:
            assert graph.dst[k] == v
            children.setdefault(int(graph.src[k]), []).append(v)
    hops, frontier = {root: 0}, [root]
    while frontier:
        u = frontier.pop()
        for v in children.get(u, []):
            assert v not in hops
            hops[v] = hops[u] + 1
            frontier.append(v)
    return hops


@pytest.mark.parametrize("spec, degree", [("kautz:2,2", 2), ("kautz:3,2", 3), ("kautz:4,2", 4), ("torus:4,4", 4),
                                          ("torus:6,6", 4)])
def test_edmonds_count_of_trees_reaches_the_cut_bound_from_every_root(spec, degree):
    """With up to 8 tries (the ties broken anew): the torus 8x8 from rank 32 is a root where
    they do not (100% above at 4 trees; tests/bench/RESULTS.md)."""
    topology = parse_topology(spec)
    network = topology.network()
    graph = transfer_graph(topology)
    bandwidth = network.channel_bandwidth.astype(float)
    for root in range(graph.ranks):
        packing = pack_trees(graph, bandwidth, root, degree, 1.0 / degree, restarts=8)
        load = np.zeros(network.num_channels)
        for t, arcs in enumerate(packing.arcs):
            hops = _walk(graph, arcs, root)
            assert len(hops) == graph.ranks  # spanning
            assert all(packing.depth[t, v] == h for v, h in hops.items())
            for k in arcs[arcs >= 0].tolist():
                for c in graph.paths.channels[graph.paths.offsets[k]:graph.paths.offsets[k + 1]].tolist():
                    load[c] += 1
        # every link (bandwidth 1) in one tree, a terminal's link (bandwidth d) in at most d: n / d bytes over
        # bandwidth, what the root's d links bound any broadcast to
        assert (load / bandwidth).max() == 1, root
        assert packing.per_byte == pytest.approx(1.0 / degree)


@pytest.mark.parametrize("collective", ["broadcast", "reduce"])
@pytest.mark.parametrize("spec, q, root, trees", [("kautz:2,2", 1, 3, 2), ("torus:3,3", 1, 4, 4),
                                                   ("dragonfly:2,4,2", 2, 5, 3)])
def test_the_pipelined_packing_delivers(collective, spec, q, root, trees):
    """Packed as synth.synthesis.methods.packed_trees packs them (a reduce's trees into the root, over the pairs
    turned round): replayed, and every transfer one of the plan's pairs, carrying over each channel
    of its path the blocks the packing counted there."""
    import dataclasses

    topology = parse_topology(spec)
    plan = plan_synthesis(collective, topology, ranks_per_node=q, root=root, time_limit=2)
    graph = plan.graph if collective == "broadcast" else dataclasses.replace(plan.graph, src=plan.graph.dst,
                                                                              dst=plan.graph.src)
    bandwidth = topology.network().channel_bandwidth.astype(float)
    packing = pack_trees(graph, bandwidth, root, trees, 1.0)
    rounds = 3
    deliveries = functools.partial(packed_deliveries, graph, packing, rounds)
    schedule = rooted_schedule(plan, deliveries, rounds * trees, 8)
    assert verify(schedule).ok and delivers(schedule)
    assert schedule.num_steps == rounds + packing.depth.max() - 1
    pairs = dict(((int(s), int(d)), k) for k, (s, d) in enumerate(zip(plan.graph.src, plan.graph.dst)))
    counts = np.diff(schedule.block_ptr)
    load = np.zeros(len(bandwidth))
    for s, d, c in zip(schedule.src.tolist(), schedule.dst.tolist(), counts.tolist()):
        k = pairs[(s, d)]  # KeyError: a transfer off the plan's pairs
        for channel in plan.graph.paths.channels[plan.graph.paths.offsets[k]:plan.graph.paths.offsets[k + 1]].tolist():
            load[channel] += c
    assert (load / bandwidth).max() / (rounds * trees) == pytest.approx(packing.per_byte)


@pytest.mark.parametrize("collective", ["broadcast", "reduce"])
def test_the_kautz_broadcast_at_large_sizes_takes_the_packed_trees(collective):
    """K(3,2) at 256 MiB: 5.0% above the bound (measured; the scatter then allgather: 92%)."""
    plan = plan_synthesis(collective, parse_topology("kautz:3,2"), time_limit=4)
    parts = synthesize_parts(plan, 4, generated=())
    (band,) = bands(plan, parts, [1 << 28], 1e-6, 100e9)
    record = band.schedule.synthesis
    assert "packed spanning trees" in record["parts"][0]["method"]
    assert record["sizes"][0]["gap"] < 0.06
    assert verify(band.schedule).ok
