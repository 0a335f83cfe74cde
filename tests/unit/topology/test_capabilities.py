"""Family-specific choices are Topology capabilities (issue 23, item 2), not isinstance or name checks
(tests/contract/test_layers.py scans synth/ so that those cannot come back): every capability of
synth.topology.family.Topology, family by family, against what the seeds and the networks say, built
independently where it can be (BFS path lengths, the links of grid lines, the Kautz graph's degree
and diameter)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from synth.measure.contention_bounds import cut_bounds_batch
from synth.topology import parse_topology
from synth.topology.family import (DRAGONFLY_STENCIL_FORMS, DRAGONFLY_UNIFORM_FORMS, FAT_TREE_FORMS, GRID_ALLTOALL_FORMS,
                                   KAUTZ_FORMS, TORUS_ALLREDUCE_FORMS)
from synth.traffic.patterns import parse_pattern

FAMILY_SPECS = ["xgft:3:4,4,2:1,4,2", "xgft:2:4,4:2,2", "dragonfly:2,4,2", "hyperx:3,3:p=2", "2dfc:3,4", "torus:4,4",
                "kautz:3", "slimfly:5", "mlfm:3", "oft:4", "dragonfly:1,4,2@fail=g0r0-g0r1"]


@pytest.mark.parametrize("spec, names", [
    ("xgft:3:4,4,2:1,4,2", ("stage 1", "stage 2", "stage 3")),
    ("dragonfly:2,4,2", ("terminal", "group cut")),
    ("dragonfly:1,4,2@fail=g0r0-g0r1", ("terminal", "group cut")),
    ("torus:4,4", ("terminal",)), ("hyperx:3,3:p=2", ("terminal",)), ("2dfc:3,4", ("terminal",)),
    ("kautz:3", ("terminal",)), ("slimfly:5", ("terminal",)), ("mlfm:3", ("terminal",)), ("oft:4", ("terminal",)),
])
def test_bound_names_name_the_columns_of_the_cut_bounds(spec, names):
    topology = parse_topology(spec)
    assert topology.bound_names() == names
    n = topology.num_terminals
    src = np.arange(n, dtype=np.int64)
    columns = cut_bounds_batch(topology, np.zeros(n, dtype=np.int64), src, (src + 1) % n, 1)
    assert columns.shape == (1, len(names))


@pytest.mark.parametrize("spec", FAMILY_SPECS)
def test_the_tree_capabilities_hold_on_xgfts_only(spec):
    topology = parse_topology(spec)
    tree = spec.startswith("xgft")  # (the test knows the families; the code asks the capabilities)
    assert topology.compact_routes is tree
    assert topology.up_down_routes is tree
    assert topology.bounds_per_stage is tree
    assert topology.reports_seed_exchanges is tree
    assert topology.degradable is not tree
    assert topology.network().staged is tree
    assert topology.default_router == ("dmodk" if tree else "minimal")


@pytest.mark.parametrize("spec", FAMILY_SPECS)
def test_ports_per_terminal_counts_a_terminals_links(spec):
    topology = parse_topology(spec)
    network = topology.network()
    assert topology.ports_per_terminal == int((network.channel_src == 0).sum())


@pytest.mark.parametrize("spec, expected", [
    ("xgft:2:4,4:1,2", ["a2a-lin", "a2a-xor", "a2a-opt", "a2a-ghe", "a2a-bgh"]),
    ("xgft:2:3,4:1,2", ["a2a-lin", "a2a-opt", "a2a-ghe", "a2a-bgh"]),  # 12 leaves: no XOR
    ("dragonfly:2,4,2", ["a2a-lin", "a2a-lat", "randperm:1", "shift:8"]),  # 8 terminals per group
    ("dragonfly:1,4,2@fail=g0r0-g0r1", ["a2a-lin", "a2a-lat", "randperm:1", "shift:4"]),
    ("hyperx:3,3:p=2", ["a2a-lin", "randperm:1", "shift:2"]),  # 2 terminals per router
    ("2dfc:3,4", ["a2a-lin", "randperm:1", "shift:1"]),
    ("torus:4,4", ["a2a-lin", "randperm:1", "shift:1"]),
    ("kautz:3", ["a2a-lin", "randperm:1", "shift:1"]),
    ("slimfly:5", ["a2a-lin", "randperm:1", "worst-case"]),
    ("mlfm:3", ["a2a-lin", "randperm:1", "worst-case"]),
    ("oft:4", ["a2a-lin", "randperm:1", "worst-case"]),
])
def test_report_patterns_per_family(spec, expected):
    topology = parse_topology(spec)
    assert topology.report_patterns() == expected
    for pattern in expected:  # every one is a pattern of the network
        parse_pattern(pattern, topology.num_terminals, topology.hierarchy(), topology=topology)


@pytest.mark.parametrize("spec", FAMILY_SPECS + ["slimfly:4"])
def test_worst_case_destinations(spec):
    topology = parse_topology(spec)
    n = topology.num_terminals
    table = topology.worst_case_destinations(n)
    assert topology.has_worst_case is (table is not None)
    assert topology.has_worst_case is (spec.split(":")[0] in ("slimfly", "mlfm", "oft"))
    if table is None:
        return
    assert sorted(table.tolist()) == list(range(n))  # a permutation
    if spec.startswith("mlfm"):
        assert table.tolist() == [(t + topology.h) % n for t in range(n)]
    if spec.startswith("oft"):
        assert table.tolist() == [(t + topology.k) % n for t in range(n)]
    if spec.startswith("slimfly"):  # whole routers to whole routers, terminal j to terminal j, in pairs
        p = topology.p
        assert all(table[t] % p == t % p and table[table[t]] == t for t in range(n))


def test_a_degraded_network_has_its_familys_worst_case():
    intact, degraded = parse_topology("slimfly:5"), parse_topology("slimfly:5@fail=random:1:0")
    assert degraded.worst_case_destinations(50).tolist() == intact.worst_case_destinations(50).tolist()


@pytest.mark.parametrize("spec, forms", [
    ("xgft:2:4,4:1,2", {FAT_TREE_FORMS}),
    ("torus:4,4", {TORUS_ALLREDUCE_FORMS}), ("torus:4,4,4", {TORUS_ALLREDUCE_FORMS}),
    ("torus:4,8", set()), ("torus:8", set()), ("torus:4,4:p=2", set()),  # DeSensi24: equal sides, D >= 2, one terminal
    ("kautz:3", {KAUTZ_FORMS}), ("kautz:3,3", set()),  # Pham26 ch.3: K(d,2)
    ("2dfc:3,4", {GRID_ALLTOALL_FORMS}), ("hyperx:3,4", set()),
    ("dragonfly:2,4,2", {DRAGONFLY_STENCIL_FORMS, DRAGONFLY_UNIFORM_FORMS}),
    ("slimfly:5", set()), ("mlfm:3", set()), ("oft:4", set()),
    ("torus:4,4@fail=r0.0-r1.0", set()),  # the closed forms are the intact network's
])
def test_closed_forms_per_family(spec, forms):
    assert parse_topology(spec).closed_forms() == forms


@pytest.mark.parametrize("spec", ["xgft:3:4,4,2:1,4,2", "xgft:2:4,4:2,2", "xgft:2:3,2:2,3"])
def test_minimal_channels_of_an_xgft_are_its_shortest_paths(spec):
    topology = parse_topology(spec)
    network = topology.network()
    graph = nx.DiGraph(list(zip(network.channel_src.tolist(), network.channel_dst.tolist())))
    n = topology.num_terminals
    src, dst = np.divmod(np.arange(n * n), n)
    expected = np.zeros(n * n, dtype=np.int64)
    for s in range(n):
        lengths = nx.single_source_shortest_path_length(graph, s)
        expected[s * n:(s + 1) * n] = [lengths[d] for d in range(n)]
    assert topology.minimal_channels(src, dst).tolist() == expected.tolist()
    assert topology.all_pairs_minimal_channels() == int(expected.sum())


@pytest.mark.parametrize("spec", [s for s in FAMILY_SPECS if not s.startswith("xgft")])
def test_direct_families_give_minimal_lengths_from_router_distances(spec):
    topology = parse_topology(spec)
    assert topology.minimal_channels(np.array([0]), np.array([1])) is None
    assert topology.all_pairs_minimal_channels() is None


@pytest.mark.parametrize("spec, degree", [("kautz:3", 3), ("kautz:2", 2), ("kautz:3,3", None), ("torus:4,4", None),
                                          ("xgft:2:4,4:1,2", None), ("dragonfly:2,4,2", None)])
def test_kautz_degree(spec, degree):
    topology = parse_topology(spec)
    assert topology.kautz_degree() == degree
    if degree is not None:  # K(d,2): (d + 1) d nodes, every node d out-neighbours, diameter two
        network = topology.network()
        n = topology.num_terminals
        links = (network.channel_src >= n) & (network.channel_dst >= n)
        graph = nx.DiGraph(list(zip(network.channel_src[links].tolist(), network.channel_dst[links].tolist())))
        assert graph.number_of_nodes() == (degree + 1) * degree
        assert {d for _, d in graph.out_degree()} == {degree} and nx.diameter(graph) == 2


@pytest.mark.parametrize("spec", ["hyperx:3,4", "hyperx:3,3:p=2", "2dfc:3,4", "torus:4,4", "torus:5,3",
                                  "dragonfly:2,4,2", "kautz:3", "xgft:2:4,4:1,2"])
def test_complete_dimensions_means_every_line_is_a_clique(spec):
    topology = parse_topology(spec)
    coordinates = topology.router_coordinates()
    if coordinates is None:
        assert not topology.complete_dimensions
        return
    network = topology.network()
    n = topology.num_terminals
    links = (network.channel_src >= n) & (network.channel_dst >= n)
    linked = set(zip((network.channel_src[links] - n).tolist(), (network.channel_dst[links] - n).tolist()))
    routers = len(coordinates)
    differ = (coordinates[:, None, :] != coordinates[None, :, :]).sum(axis=2)  # routers on one line differ in one
    on_a_line = {(a, b) for a in range(routers) for b in range(routers) if differ[a, b] == 1}
    assert topology.complete_dimensions is on_a_line.issubset(linked)


def test_a_degraded_network_delegates_to_its_family():
    intact, degraded = parse_topology("dragonfly:1,4,2"), parse_topology("dragonfly:1,4,2@fail=g0r0-g0r1")
    for capability in ("compact_routes", "up_down_routes", "bounds_per_stage", "reports_seed_exchanges",
                       "complete_dimensions", "has_worst_case", "default_router", "ports_per_terminal"):
        assert getattr(degraded, capability) == getattr(intact, capability), capability
    assert degraded.bound_names() == intact.bound_names()
    assert degraded.report_patterns() == intact.report_patterns()
    assert intact.closed_forms() and not degraded.closed_forms()


def test_an_xgft_cannot_be_degraded():
    from synth.core.errors import SynthError

    with pytest.raises(SynthError, match="--fail works on direct networks"):
        parse_topology("xgft:2:4,4:1,2@fail=x")
