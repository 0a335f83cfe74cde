"""The LP bound (synth.measure.lp_bound) against an independent LP, routers and brute force.

The independent LP has one commodity per message (not per destination router) and is built
from a networkx graph with dense matrices; both must have the same optimum (flow
decomposition). The bound must never exceed what a router achieves on router links, nor the
optimum of an exhaustive search over all simple paths of a few messages.
"""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
from hypothesis import given, settings, strategies as st

from synth.measure.lp_bound import lp_bound
from synth.routing.minimal import minimal, minimal_random
from helpers import GraphTopology, connected_graphs, edge_lp


def per_message_lp(topology: GraphTopology, src, dst) -> float:
    g = topology.nx_graph()
    edges = [(x, y) for x, y, _ in g.edges(keys=True)]
    pairs = [(s // topology.per_router, d // topology.per_router) for s, d in zip(src, dst)]
    return edge_lp(topology.routers, edges, [(a, b) for a, b in pairs if a != b])


def router_link_max(topology, paths) -> int:
    network = topology.network()
    loads = np.bincount(paths.channels, minlength=network.num_channels)
    router_links = (network.channel_src >= topology.num_terminals) & (network.channel_dst >= topology.num_terminals)
    return int(loads[router_links].max(initial=0))


@settings(max_examples=40, deadline=None)
@given(connected_graphs(), st.data())
def test_equals_the_per_message_lp_and_never_exceeds_a_router(topology, data):
    n = topology.num_terminals
    flows = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), min_size=1, max_size=12))
    src, dst = np.array([f[0] for f in flows]), np.array([f[1] for f in flows])
    network = topology.network()
    exact, quick = lp_bound(network, src, dst, exact=True), lp_bound(network, src, dst)
    optimum = per_message_lp(topology, src, dst)
    assert exact.status == "optimal" and abs(exact.value - optimum) < 1e-6
    # Without `exact` the run stops once ceil(lambda*) is known: the same integer, lambda* bracketed.
    assert quick.status in ("optimal", "rounded") and quick.bound == exact.bound == math.ceil(optimum - 1e-6)
    assert quick.lower - 1e-6 <= optimum <= quick.upper + 1e-6
    for router in (minimal, minimal_random):
        assert exact.bound <= router_link_max(topology, router(topology, src, dst, seed=7))


def brute_force_optimum(topology: GraphTopology, src, dst) -> int:
    """The least maximum router-link load over every choice of simple paths (tiny instances)."""
    g = nx.DiGraph()
    for a, b in topology.edges:
        g.add_edge(a, b)
        if not topology.directed:
            g.add_edge(b, a)
    options = []
    for s, d in zip(src, dst):
        a, b = s // topology.per_router, d // topology.per_router
        options.append([[]] if a == b else [list(zip(p, p[1:])) for p in nx.all_simple_paths(g, a, b)])
    best = None
    for choice in itertools.product(*options):
        load: dict = {}
        for path in choice:
            for edge in path:
                load[edge] = load.get(edge, 0) + 1
        worst = max(load.values(), default=0)
        best = worst if best is None else min(best, worst)
    return best


def test_never_exceeds_the_brute_force_optimum():
    rng = np.random.default_rng(11)
    for _ in range(25):
        routers = int(rng.integers(3, 6))
        edges = [(i, (i + 1) % routers) for i in range(routers)]
        edges += [(int(a), int(b)) for a, b in rng.integers(0, routers, (2, 2)) if a != b and (a, b) not in edges
                  and (b, a) not in edges]
        topology = GraphTopology(tuple(edges), routers, 1)
        src, dst = rng.integers(0, routers, 4), rng.integers(0, routers, 4)
        assert lp_bound(topology.network(), src, dst).bound <= brute_force_optimum(topology, src, dst)


def test_ring_shift_value():
    # Six routers in a ring, two terminals each, every router sends both to the opposite router:
    # 12 messages x 3 hops over 12 directed links.
    topology = GraphTopology(tuple((i, (i + 1) % 6) for i in range(6)), 6, 2)
    src = np.arange(12)
    result = lp_bound(topology.network(), src, (src + 6) % 12, exact=True)
    assert (result.status, result.bound) == ("optimal", 3) and abs(result.value - 3.0) < 1e-9


def test_no_router_link_used():
    topology = GraphTopology(((0, 1),), 2, 2)
    result = lp_bound(topology.network(), np.array([0, 2]), np.array([1, 3]))  # same-router messages only
    assert (result.value, result.bound) == (0.0, 0)


def test_a_time_limit_keeps_a_valid_bound_and_says_so():
    rng = np.random.default_rng(3)
    topology = GraphTopology(tuple((i, (i + 1) % 8) for i in range(8)) + ((0, 4), (2, 6)), 8, 2)
    src = np.arange(16)
    dst = rng.permutation(16)
    exact = lp_bound(topology.network(), src, dst, exact=True)
    stopped = lp_bound(topology.network(), src, dst, time_limit=1e-9)
    assert stopped.status == "gap" and stopped.bound <= exact.bound
    assert stopped.lower <= exact.value + 1e-9 <= stopped.upper + 2e-9


def test_parallel_links_halve_lambda():
    """hyperx:4,3:trunk=2 is hyperx:4,3 with every link doubled: lambda* halves, for any flows
    (the paths of one map to the other; a channel id, not a router pair, carries the load)."""
    from synth.topology import parse_topology

    single, double = parse_topology("hyperx:4,3:p=2").network(), parse_topology("hyperx:4,3:p=2:trunk=2").network()
    rng = np.random.default_rng(5)
    for _ in range(5):
        src, dst = np.arange(24), rng.permutation(24)
        one, two = lp_bound(single, src, dst, exact=True), lp_bound(double, src, dst, exact=True)
        assert abs(one.value - 2 * two.value) < 1e-6
