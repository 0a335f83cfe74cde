"""Minimal routing on direct networks (synth.routing.minimal), checked against networkx.

The networks are random router graphs (undirected with parallel links, and directed), so the
router is tested on shapes no family module produced; every path is walked hop by hop over the
channel arrays and its length compared with networkx's shortest path; loads are recounted with a
Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from helpers import GraphTopology, connected_graphs
from synth.core.errors import SynthError
from synth.measure.contention_bounds import terminal_bounds_batch
from synth.measure.loads import phase_channel_counts
from synth.routing.registry import ROUTERS
from synth.routing.minimal import RouterView, minimal, minimal_random
from synth.routing.valiant import valiant, valiant_any
from synth.topology.paths import Paths
from synth.topology.direct import RouterGraph


def check_paths(topology: GraphTopology, src, dst, paths: Paths) -> None:
    network = topology.network()
    n = topology.num_terminals
    lengths = dict(nx.all_pairs_shortest_path_length(topology.nx_graph()))
    for i, (s, d) in enumerate(zip(src.tolist(), dst.tolist())):
        hops = paths.path(i).tolist()
        if s == d:
            assert hops == []
            continue
        at = s
        for k, channel in enumerate(hops):
            assert network.channel_src[channel] == at, f"flow {i}: hop {k} does not leave {at}"
            at = int(network.channel_dst[channel])
            assert (at < n) == (k == len(hops) - 1), f"flow {i}: a terminal in the middle or not at the end"
        assert at == d
        assert len(hops) == lengths[s // topology.per_router][d // topology.per_router] + 2, f"flow {i} not minimal"


def all_pairs(n: int):
    return np.repeat(np.arange(n), n), np.tile(np.arange(n), n)


@settings(max_examples=60, deadline=None)
@given(connected_graphs(), st.integers(0, 2**32))
def test_minimal_paths_are_minimal_and_contiguous(topology, seed):
    src, dst = all_pairs(topology.num_terminals)
    check_paths(topology, src, dst, minimal(topology, src, dst))
    check_paths(topology, src, dst, minimal_random(topology, src, dst, seed=seed))


@settings(max_examples=40, deadline=None)
@given(connected_graphs(directed=True), st.integers(0, 2**32))
def test_directed_graphs(topology, seed):
    src, dst = all_pairs(topology.num_terminals)
    check_paths(topology, src, dst, minimal(topology, src, dst))
    check_paths(topology, src, dst, minimal_random(topology, src, dst, seed=seed))


def test_deterministic_router_takes_the_lowest_minimal_channel():
    # A square 0-1-2-3-0: from 0 to 2 both ways are minimal; the lower channel id leaves for 1.
    topology = GraphTopology(((0, 1), (1, 2), (2, 3), (3, 0)), 4, 1)
    paths = minimal(topology, np.array([0]), np.array([2]))
    network = topology.network()
    assert [network.node_names[network.channel_dst[c]] for c in paths.path(0)] == ["r0", "r1", "r2", "t2"]


def test_random_router_spreads_over_the_minimal_paths_and_keeps_a_pair_on_one():
    topology = GraphTopology(((0, 1), (1, 2), (2, 3), (3, 0)), 4, 8)
    src = np.arange(8)  # router 0's terminals to router 2's
    dst = src + 16
    first = minimal_random(topology, src, dst, seed=1)
    again = minimal_random(topology, src, dst, seed=1)
    assert np.array_equal(first.channels, again.channels)
    network = topology.network()
    via = {network.node_names[network.channel_dst[first.path(i)[1]]] for i in range(8)}
    assert via == {"r1", "r3"}


def test_parallel_links_are_separate_channels_and_loads_count_each():
    topology = GraphTopology(((0, 1), (0, 1)), 2, 2)
    src, dst = np.array([0, 1]), np.array([2, 3])
    paths = minimal_random(topology, src, dst, seed=3)
    counts = phase_channel_counts(topology, np.zeros(2, dtype=np.int64), src, dst, paths, 1)[0]
    naive = np.zeros(topology.network().num_channels, dtype=np.int64)
    for i in range(2):
        for channel in paths.path(i):
            naive[channel] += 1
    assert np.array_equal(counts, naive)


def test_loads_per_phase_recounted_naively():
    topology = GraphTopology(((0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (0, 2)), 5, 2)
    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, 10, 200), rng.integers(0, 10, 200)
    phase = rng.integers(0, 4, 200)
    paths = minimal_random(topology, src, dst, seed=9)
    counts = phase_channel_counts(topology, phase, src, dst, paths, 4)
    naive = np.zeros_like(counts)
    for i in range(200):
        for channel in paths.path(i):
            naive[phase[i], channel] += 1
    assert np.array_equal(counts, naive)


def test_terminal_bound_counts_sends_and_receives_per_phase():
    src, dst, phase = np.array([0, 0, 1, 2, 2, 3]), np.array([1, 2, 2, 2, 3, 3]), np.array([0, 0, 0, 1, 1, 1])
    # phase 0: terminal 0 sends 2, terminal 2 receives 2; phase 1: 2->2 and 3->3 move nothing, 2 sends 1.
    assert terminal_bounds_batch(phase, src, dst, 4, 2).tolist() == [[2], [1]]


def test_unreachable_destination_is_one_line():
    topology = GraphTopology(((0, 1),), 3, 1)  # router 2 has no link
    with pytest.raises(SynthError, match="cannot be reached"):
        minimal(topology, np.array([0]), np.array([2]))


def test_view_refuses_multi_homed_terminals():
    from synth.topology import parse_topology

    with pytest.raises(SynthError, match="one router by one link"):
        RouterView(parse_topology("xgft:2:4,4:2,4").network())  # W_1 = 2: two links per leaf


def test_paths_csr_helpers():
    paths = Paths.from_padded(np.array([[3, 4, -1], [-1, -1, -1], [5, 6, 7]]))
    assert paths.offsets.tolist() == [0, 2, 2, 5]
    assert paths.as_lists() == [[3, 4], [], [5, 6, 7]]
    assert paths.take(1, 3).as_lists() == [[], [5, 6, 7]]
    assert Paths.concatenate([paths.take(0, 1), paths.take(2, 3)]).as_lists() == [[3, 4], [5, 6, 7]]
    assert paths.keys(np.array([10, 20, 30])).tolist() == [13, 14, 35, 36, 37]


def router_sequence(topology, paths: Paths, flow: int) -> list[int]:
    network = topology.network()
    return [int(network.channel_dst[c]) - topology.num_terminals for c in paths.path(flow)[:-1]]


def intermediates(topology, sequence: list[int]) -> list[int]:
    """Routers r_i of the sequence with both segments shortest (networkx distances)."""
    d = dict(nx.all_pairs_shortest_path_length(topology.nx_graph()))
    k = len(sequence) - 1
    return [r for i, r in enumerate(sequence) if d[sequence[0]][r] == i and d[r][sequence[-1]] == k - i]


@settings(max_examples=40, deadline=None)
@given(connected_graphs(), st.integers(0, 2**32))
def test_valiant_paths_are_two_shortest_segments(topology, seed):
    src, dst = all_pairs(topology.num_terminals)
    paths = valiant(topology, src, dst, phase=np.zeros_like(src), seed=seed)
    network = topology.network()
    for i, (s, d) in enumerate(zip(src.tolist(), dst.tolist())):
        hops = paths.path(i).tolist()
        if s == d:
            assert hops == []
            continue
        assert network.channel_src[hops[0]] == s and network.channel_dst[hops[-1]] == d
        assert all(network.channel_dst[a] == network.channel_src[b] for a, b in zip(hops, hops[1:]))
        assert intermediates(topology, router_sequence(topology, paths, i)), f"flow {i}"
    assert np.array_equal(paths.channels, valiant(topology, src, dst, phase=np.zeros_like(src), seed=seed).channels)


def test_valiant_goes_through_another_router_and_spreads():
    # A ring of 6: from router 0 to router 1 Valiant goes through one of routers 2..5, chosen per message.
    topology = GraphTopology(tuple((i, (i + 1) % 6) for i in range(6)), 6, 1)
    src, dst = np.zeros(400, dtype=np.int64), np.ones(400, dtype=np.int64)
    paths = valiant(topology, src, dst, phase=np.arange(400), seed=2)
    d = dict(nx.all_pairs_shortest_path_length(topology.nx_graph()))
    seen = set()
    for i in range(400):
        sequence = router_sequence(topology, paths, i)
        middle = [r for r in intermediates(topology, sequence) if r not in (0, 1)]
        assert middle, f"message {i} did not go through another router: {sequence}"
        seen.update(middle)
        assert len(sequence) - 1 <= 2 * max(d[0].values())
    assert seen == {2, 3, 4, 5}


def test_valiant_on_groups_goes_through_another_group():
    # Three groups of two routers, a full mesh inside each group and one link between every two groups.
    edges = ((0, 1), (2, 3), (4, 5), (1, 2), (3, 4), (5, 0))
    topology = GraphTopology(edges, 6, 1, groups=(0, 0, 1, 1, 2, 2))
    src, dst = np.array([0, 0, 0]), np.array([2, 3, 1])
    for router in (valiant, valiant_any):
        paths = router(topology, src, dst, phase=np.arange(3), seed=4)
        for i in range(2):  # to group 1: through group 2, the only other group
            sequence = router_sequence(topology, paths, i)
            assert any(topology.groups[r] == 2 for r in intermediates(topology, sequence))
        assert router_sequence(topology, paths, 2) == [0, 1]  # same group: no intermediate group is taken
    # valiant lands on the router of group 2 nearest to router 0 (router 5), then goes on minimally.
    assert router_sequence(topology, valiant(topology, src[:1], dst[:1], seed=4), 0) == [0, 5, 4, 3, 2]


def test_valiant_any_needs_groups():
    topology = GraphTopology(((0, 1), (1, 2), (2, 0)), 3, 1)
    assert "needs a network with groups" in ROUTERS.by_id("valiant-any").refusal(topology)
    assert ROUTERS.by_id("valiant").refusal(topology) is None


def test_ugal_avoids_the_loaded_minimal_channel():
    # A full mesh of 5 routers, 4 terminals each; 32 messages from router 0's terminals to router
    # 1's. Minimal routing puts all on the channel 0 -> 1; UGAL sends later ones through another
    # router once 1 + the minimal queue outweighs 2 x (1 + a detour's first queue).
    from synth.routing.ugal import ugal

    edges = tuple((a, b) for a in range(5) for b in range(a + 1, 5))
    topology = GraphTopology(edges, 5, 4)
    src = np.repeat(np.arange(4), 8)
    dst = 4 + (np.arange(32) % 4)
    phase = np.zeros(32, dtype=np.int64)
    paths = ugal(topology, src, dst, phase=phase, occurrence=np.arange(32) // 4, seed=1)
    network = topology.network()
    loads = np.bincount(paths.channels, minlength=network.num_channels)
    router_links = (network.channel_src >= 20) & (network.channel_dst >= 20)
    direct = int(network.find_channels([20], [21])[0])
    assert 0 < loads[direct] < 32 and loads[router_links].max() < 32
    for i in range(32):
        assert intermediates(topology, router_sequence(topology, paths, i))
    again = ugal(topology, src, dst, phase=phase, occurrence=np.arange(32) // 4, seed=1)
    assert np.array_equal(paths.channels, again.channels) and np.array_equal(paths.offsets, again.offsets)


@settings(max_examples=25, deadline=None)
@given(connected_graphs(), st.integers(0, 2**16))
def test_ugal_paths_keep_the_valiant_policy(topology, seed):
    from synth.routing.ugal import ugal

    src, dst = all_pairs(topology.num_terminals)
    paths = ugal(topology, src, dst, phase=np.zeros_like(src), seed=seed)
    for i, (s, d) in enumerate(zip(src.tolist(), dst.tolist())):
        if s != d:
            assert intermediates(topology, router_sequence(topology, paths, i))


def test_paths_select():
    paths = Paths.from_padded(np.array([[3, 4, -1], [-1, -1, -1], [5, 6, 7]]))
    assert paths.select(np.array([2, 0])).as_lists() == [[5, 6, 7], [3, 4]]


@dataclass(frozen=True, eq=False)
class TorusTopology(GraphTopology):
    """A test-only D0 x D1 torus with router coordinates and per-dimension channel classes."""

    shape: tuple = (4, 3)

    def router_coordinates(self):
        r = np.arange(self.routers)
        return np.stack([r % self.shape[0], r // self.shape[0]], axis=1)

    @cached_property
    def graph(self) -> RouterGraph:
        d0, d1 = self.shape
        edges, classes = [], []
        for y in range(d1):
            for x in range(d0):
                edges.append((y * d0 + x, y * d0 + (x + 1) % d0))
                classes.append(0)
                edges.append((y * d0 + x, ((y + 1) % d1) * d0 + x))
                classes.append(1)
        src, dst = np.array(edges).T
        return RouterGraph([f"r{i}" for i in range(self.routers)], np.full(self.routers, self.per_router), src, dst,
                           np.array(classes), ("dim 0", "dim 1"))

    def nx_graph(self):
        g = nx.MultiDiGraph()
        for a, b in zip(self.graph.link_src.tolist(), self.graph.link_dst.tolist()):
            g.add_edge(a, b)
            g.add_edge(b, a)
        return g


def test_dor_corrects_dimension_zero_first_and_is_minimal():
    from synth.routing.dor import dor

    topology = TorusTopology((), 12, 1, shape=(4, 3))
    src, dst = all_pairs(12)
    paths = dor(topology, src, dst)
    check_paths(topology, src, dst, paths)
    coordinates = topology.router_coordinates()
    for i, (s, d) in enumerate(zip(src.tolist(), dst.tolist())):
        sequence = router_sequence(topology, paths, i)
        changed = [int(np.flatnonzero(coordinates[a] != coordinates[b])[0]) for a, b in zip(sequence, sequence[1:])]
        assert changed == sorted(changed), f"flow {i}: dimensions {changed}"


def test_dor_needs_coordinates():
    assert "router coordinates" in ROUTERS.by_id("dor").refusal(GraphTopology(((0, 1),), 2, 1))


def test_group_cut_bound_recounted_naively():
    from synth.measure.contention_bounds import cut_bounds_batch, group_cut_bounds_batch

    # Three groups of two routers (full mesh inside, one link between every two groups), 2 terminals each.
    edges = ((0, 1), (2, 3), (4, 5), (1, 2), (3, 4), (5, 0))
    topology = GraphTopology(edges, 6, 2, groups=(0, 0, 1, 1, 2, 2))
    rng = np.random.default_rng(3)
    src, dst, phase = rng.integers(0, 12, 300), rng.integers(0, 12, 300), rng.integers(0, 3, 300)
    bounds = group_cut_bounds_batch(topology.network(), topology.router_groups(), phase, src, dst, 3)[:, 0]
    group_of = lambda t: topology.groups[t // 2]  # noqa: E731
    for p in range(3):
        expected = 0
        for g in range(3):
            out = sum(1 for s, d, q in zip(src, dst, phase) if q == p and group_of(s) == g and group_of(d) != g)
            into = sum(1 for s, d, q in zip(src, dst, phase) if q == p and group_of(d) == g and group_of(s) != g)
            expected = max(expected, -(-out // 2), -(-into // 2))  # two links leave and enter each group
        assert bounds[p] == expected
    # The bound holds for every router.
    assert cut_bounds_batch(topology, phase, src, dst, 3).shape == (3, 2)
    for router in (minimal, minimal_random, valiant):
        paths = router(topology, src, dst, phase=phase, seed=1)
        counts = phase_channel_counts(topology, phase, src, dst, paths, 3)
        assert (counts.max(axis=1) >= bounds).all()


def small_dragonfly(p: int, a: int, h: int) -> GraphTopology:
    """A maximum-size dragonfly built here from its definition (absolute arrangement): a h + 1 groups
    of a routers, full mesh inside a group, global link k of group i from router k // h to group
    k if k < i else k + 1."""
    g = a * h + 1
    edges = [(i * a + x, i * a + y) for i in range(g) for x in range(a) for y in range(x + 1, a)]
    for i in range(g):
        for k in range(a * h):
            j = k if k < i else k + 1
            if i < j:  # each global link once: from the lower group
                back = i if i < j else i - 1  # the index of i among j's links
                edges.append((i * a + k // h, j * a + back // h))
    groups = tuple(r // a for r in range(g * a))
    return GraphTopology(tuple(edges), g * a, p, groups=groups)


def dragonfly_distances(topology: GraphTopology) -> dict:
    """Hops of the shortest path with at most one hop between groups, from networkx distances
    inside each group and the global edges."""
    g = topology.nx_graph()
    groups = topology.groups
    inside = nx.DiGraph([(u, v) for u, v in g.edges() if groups[u] == groups[v]])
    inside.add_nodes_from(range(topology.routers))
    local = dict(nx.all_pairs_shortest_path_length(inside))
    far = float("inf")
    d = {u: {v: local[u].get(v, far) for v in range(topology.routers)} for u in range(topology.routers)}
    for x, y in g.edges():
        if groups[x] != groups[y]:
            for u in range(topology.routers):
                for v in range(topology.routers):
                    if groups[u] == groups[x] and groups[v] == groups[y]:
                        d[u][v] = min(d[u][v], local[u].get(x, far) + 1 + local[y].get(v, far))
    return d


@pytest.mark.parametrize("p, a, h", [(1, 2, 1), (2, 2, 1), (2, 4, 2), (1, 3, 2)])
def test_a2a_lat_phases_are_permutations_covering_every_pair_once(p, a, h):
    from synth.traffic.lat import SHAPES, router_shapes
    from synth.traffic.patterns import parse_pattern

    topology = small_dragonfly(p, a, h)
    n = topology.num_terminals
    workload = parse_pattern("a2a-lat", n, None, topology=topology)
    assert workload.num_phases == n
    seen = set()
    for phase in range(n):
        flows = workload.flows(phase)
        assert sorted(flows.dst.tolist()) == list(range(n)), f"phase {phase} is not a permutation"
        seen.update(zip(flows.src.tolist(), flows.dst.tolist()))
    assert len(seen) == n * n
    # Blocks in the seed's order: the path shape never decreases from one phase to the next, and
    # it has as many hops as the dragonfly's minimal path (at most one global hop, by networkx).
    d = dragonfly_distances(topology)
    shapes = router_shapes(topology.network(), topology.router_groups())
    order = [int(shapes[workload.flows(q).src[0] // p, workload.flows(q).dst[0] // p]) for q in range(n)]
    assert order == sorted(order)
    expected = {"S": 0, "L": 1, "G": 1, "GL": 2, "LG": 2, "LGL": 3}
    for u in range(topology.routers):
        for v in range(topology.routers):
            assert d[u][v] == expected[SHAPES[shapes[u, v]]]


def test_a2a_lat_needs_groups():
    from synth.traffic.patterns import parse_pattern

    with pytest.raises(SynthError, match="needs a network of groups"):
        parse_pattern("a2a-lat", 4, None, topology=GraphTopology(((0, 1),), 2, 2))


@pytest.mark.parametrize("p, a, h", [(1, 2, 1), (2, 4, 2), (1, 3, 2)])
def test_minimal_routing_on_groups_takes_one_global_hop(p, a, h):
    topology = small_dragonfly(p, a, h)
    n = topology.num_terminals
    src, dst = all_pairs(n)
    d = dragonfly_distances(topology)
    groups = np.asarray(topology.groups)
    for router in (minimal, minimal_random):
        paths = router(topology, src, dst, seed=5)
        for i, (s, t) in enumerate(zip(src.tolist(), dst.tolist())):
            if s == t:
                continue
            sequence = router_sequence(topology, paths, i)
            assert len(sequence) - 1 == d[s // p][t // p]
            assert int((groups[sequence[1:]] != groups[sequence[:-1]]).sum()) <= 1


def test_check_policies_on_groups():
    """synth check's policy test (synth.checking.routes._policy): on a dragonfly a path through a third
    group (two global hops) is not minimal even when it is shorter than the L-G-L path."""
    from synth.routing.registry import MINIMAL, VIA_ONE
    from synth.checking.routes import _policy

    topology = small_dragonfly(1, 3, 2)
    groups = np.asarray(topology.groups)
    g = topology.nx_graph()
    d = dragonfly_distances(topology)
    shortcut = next([u, w, v] for u, w in g.edges() for v in g.successors(w)
                    if len({groups[u], groups[w], groups[v]}) == 3 and d[u][v] == 3)
    minimal_check, via_check = _policy(topology, MINIMAL), _policy(topology, VIA_ONE)
    ok, requirement = minimal_check(np.array([shortcut]))
    assert not ok[0] and "one hop between groups" in requirement
    assert via_check(np.array([shortcut]))[0][0]  # as Valiant through w's group it is two minimal segments
    path = nx.shortest_path(topology.nx_graph(), shortcut[0], shortcut[2])  # by hops: the shortcut itself
    assert len(path) == 3
    lgl = router_sequence(topology, minimal(topology, np.array([shortcut[0]]), np.array([shortcut[2]])), 0)
    assert len(lgl) == 4 and minimal_check(np.array([lgl]))[0][0]
