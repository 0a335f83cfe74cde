"""HyperX and 2dfc (synth.topology.hyperx) and tori (synth.topology.torus) against their
definitions, built here independently with networkx (cartesian products of complete graphs,
periodic grid graphs) and relabelled to the seeds' rank conventions; the digests' numbers (Pham26's
2dfc, DeSensi24's tori, Prisacari20 ch.7's 2D HyperX); spec errors; the commands and the instances."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import REPO
from synth.core.errors import SynthError
from synth.topology import parse_topology



# ----- references, from the definitions --------------------------------------------------------

def rank(coordinates, sizes) -> int:
    """Dimension 0 least significant: c_0 + S_0 (c_1 + S_1 (...))."""
    value = 0
    for c, s in zip(reversed(coordinates), reversed(sizes)):
        value = value * s + c
    return value


def flatten(node) -> tuple:
    """nx.cartesian_product nests its tuples: ((c0, c1), c2) -> (c0, c1, c2)."""
    if isinstance(node, tuple):
        return sum((flatten(part) for part in node), ())
    return (node,)


def with_dimensions(simple: nx.Graph, sizes, multiplicity) -> nx.MultiGraph:
    """A multigraph on ranks from a graph on coordinate tuples: edge dimension = the one coordinate
    that differs, `multiplicity(k)` parallel edges."""
    g = nx.MultiGraph()
    g.add_nodes_from(range(math.prod(sizes)))
    for a, b in simple.edges():
        differ = [k for k, (x, y) in enumerate(zip(a, b)) if x != y]
        assert len(differ) == 1
        for _ in range(multiplicity(differ[0])):
            g.add_edge(rank(a, sizes), rank(b, sizes), dim=differ[0])
    return g


def reference_hyperx(sizes, trunk: int = 1) -> nx.MultiGraph:
    product = nx.complete_graph(sizes[0])
    for size in sizes[1:]:
        product = nx.cartesian_product(product, nx.complete_graph(size))
    simple = nx.relabel_nodes(product, {node: flatten(node) for node in product.nodes})
    assert all(len(node) == len(sizes) and all(0 <= c < s for c, s in zip(node, sizes)) for node in simple.nodes)
    return with_dimensions(simple, sizes, lambda k: trunk)


def reference_torus(sizes) -> nx.MultiGraph:
    """nx.grid_graph(periodic=True) lists the last dimension first in its node tuples (plain
    integers in 1D); a ring of 2 is one edge there, two parallel links in synth's torus (the +1 and -1 links)."""
    grid = nx.grid_graph(dim=list(sizes), periodic=True)
    simple = nx.relabel_nodes(grid, {node: tuple(reversed(node)) if isinstance(node, tuple) else (node,)
                                     for node in grid.nodes})
    assert all(all(0 <= c < s for c, s in zip(node, sizes)) for node in simple.nodes)
    return with_dimensions(simple, sizes, lambda k: 2 if sizes[k] == 2 else 1)


def reference_2dfc(m2: int, m1: int) -> nx.MultiGraph:
    """Pham26: node (a2, a1) of rank a2 m1 + a1, linked to every node differing in exactly one coordinate."""
    g = nx.MultiGraph()
    g.add_nodes_from(range(m1 * m2))
    for (a2, a1), (b2, b1) in itertools.combinations(itertools.product(range(m2), range(m1)), 2):
        if (a2 == b2) != (a1 == b1):
            g.add_edge(a2 * m1 + a1, b2 * m1 + b1, dim=0 if a2 == b2 else 1)
    return g


# ----- synth's network, read back ---------------------------------------------------------------

def link_multiset(network) -> Counter:
    """(lower router, higher router, class) of every undirected link, with multiplicity."""
    n = network.num_terminals
    src, dst, cls = (a[2 * n:][0::2] for a in (network.channel_src, network.channel_dst, network.channel_class))
    return Counter((min(u, v) - n, max(u, v) - n, network.class_names[c])
                   for u, v, c in zip(src.tolist(), dst.tolist(), cls.tolist()))


def reference_multiset(g: nx.MultiGraph) -> Counter:
    return Counter((min(u, v), max(u, v), f"dim {d['dim']}") for u, v, d in g.edges(data=True))


def simple_router_graph(network) -> nx.Graph:
    n = network.num_terminals
    g = nx.Graph()
    g.add_nodes_from(range(network.num_switches))
    links = (network.channel_src >= n) & (network.channel_dst >= n)
    g.add_edges_from(zip((network.channel_src[links] - n).tolist(), (network.channel_dst[links] - n).tolist()))
    return g


def check_network(topology, reference: nx.MultiGraph, p: int, degree: int):
    """Everything the family docstrings promise, against a reference router multigraph."""
    network = topology.network()
    n, r = network.num_terminals, network.num_switches
    assert r == reference.number_of_nodes() and n == p * r == topology.num_terminals
    src, dst = network.channel_src, network.channel_dst
    sport, dport = network.channel_src_port, network.channel_dst_port
    assert network.num_channels == 2 * n + 2 * reference.number_of_edges()
    # Terminals router-major: terminal t on router t // p, its port t % p + 1 there; port 1 at the terminal.
    t = np.arange(n)
    assert (src[2 * t] == t).all() and (dst[2 * t] == n + t // p).all()
    assert (src[2 * t + 1] == n + t // p).all() and (dst[2 * t + 1] == t).all()
    assert (sport[2 * t] == 1).all() and (dport[2 * t] == t % p + 1).all()
    assert (sport[2 * t + 1] == t % p + 1).all() and (dport[2 * t + 1] == 1).all()
    assert (network.channel_class[: 2 * n] == 0).all() and network.class_names[0] == "terminal"
    # Terminal bandwidth: the router's link bandwidth when the node is its own router, else 1.
    assert (network.channel_bandwidth[: 2 * n] == (degree if p == 1 else 1)).all()
    assert (network.channel_bandwidth[2 * n:] == 1).all()
    # Every undirected link is two opposite channels with swapped ports and one class.
    assert ((src[2 * n:] >= n) & (dst[2 * n:] >= n)).all()
    assert (src[2 * n::2] == dst[2 * n + 1::2]).all() and (dst[2 * n::2] == src[2 * n + 1::2]).all()
    assert (sport[2 * n::2] == dport[2 * n + 1::2]).all() and (dport[2 * n::2] == sport[2 * n + 1::2]).all()
    assert (network.channel_class[2 * n::2] == network.channel_class[2 * n + 1::2]).all()
    assert network.class_names[1:] == tuple(f"dim {k}" for k in range(len(topology.sizes)))
    # The router adjacency with multiplicities and dimensions.
    assert link_multiset(network) == reference_multiset(reference)
    # Ports: 1..degree once per node and direction, port k in and out joining the same neighbour.
    for node in range(n + r):
        out, into = np.flatnonzero(src == node), np.flatnonzero(dst == node)
        expected = list(range(1, (1 if node < n else p + degree) + 1))
        assert sorted(sport[out].tolist()) == expected == sorted(dport[into].tolist())
        assert dict(zip(sport[out].tolist(), dst[out].tolist())) == dict(zip(dport[into].tolist(), src[into].tolist()))
    assert topology.radix == p + degree
    # Names and coordinates follow the rank convention.
    coordinates = topology.router_coordinates()
    assert coordinates.shape == (r, len(topology.sizes))
    assert [rank(c, topology.sizes) for c in coordinates.tolist()] == list(range(r))
    assert math.prod(topology.hierarchy()) == n
    assert topology.hierarchy() == (topology.sizes if p == 1 else (p, *topology.sizes))


def ports_by_router(network) -> dict[int, list[int]]:
    """Router index -> the routers behind its ports p + 1, p + 2, ... in port order."""
    n = network.num_terminals
    links = np.flatnonzero((network.channel_src >= n) & (network.channel_dst >= n))
    table: dict[int, dict[int, int]] = {}
    for c in links.tolist():
        table.setdefault(int(network.channel_src[c]) - n, {})[int(network.channel_src_port[c])] = \
            int(network.channel_dst[c]) - n
    return {router: [peers[k] for k in sorted(peers)] for router, peers in table.items()}


# ----- HyperX -------------------------------------------------------------------------------------

HYPERX = ["hyperx:5", "hyperx:2", "hyperx:2,2", "hyperx:3,4", "hyperx:4,3:p=2", "hyperx:2,3,4:trunk=2",
          "hyperx:3,3,3:p=3:trunk=3", "hyperx:2,2,2,2", "hyperx:6,2:p=5"]


@pytest.mark.parametrize("spec", HYPERX)
def test_hyperx_matches_the_definition(spec):
    topology = parse_topology(spec)
    sizes, p, trunk = topology.sizes, topology.p, topology.trunk
    check_network(topology, reference_hyperx(sizes, trunk), p, trunk * sum(s - 1 for s in sizes))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(2, 5), min_size=1, max_size=3), st.integers(1, 3), st.integers(1, 2))
def test_hyperx_property(sizes, p, trunk):
    spec = f"hyperx:{','.join(map(str, sizes))}" + (f":p={p}" if p > 1 else "")
    spec += f":trunk={trunk}" if trunk > 1 else ""
    topology = parse_topology(spec)
    assert topology.spec == spec and parse_topology(topology.spec) == topology
    check_network(topology, reference_hyperx(tuple(sizes), trunk), p, trunk * sum(s - 1 for s in sizes))


@pytest.mark.parametrize("spec", ["hyperx:3,4,2", "hyperx:4,3:p=2:trunk=2", "hyperx:5:trunk=3"])
def test_hyperx_port_order(spec):
    """Ports after the terminals: per dimension (0 first) the neighbours in increasing coordinate,
    T consecutive ports each (the docstring's formula)."""
    topology = parse_topology(spec)
    network = topology.network()
    sizes, p, t = topology.sizes, topology.p, topology.trunk
    coordinates = topology.router_coordinates().tolist()
    for router, peers in ports_by_router(network).items():
        c = coordinates[router]
        expected = []
        for k, size in enumerate(sizes):
            for other in range(size):
                if other != c[k]:
                    expected += [rank(c[:k] + [other] + c[k + 1:], sizes)] * t
        assert peers == expected
        n = network.num_terminals
        for k, size in enumerate(sizes):
            for other in (x for x in range(size) if x != c[k]):
                for j in range(t):
                    port = p + 1 + t * sum(s - 1 for s in sizes[:k]) + t * (other - (other > c[k])) + j
                    channel = np.flatnonzero((network.channel_src == n + router) & (network.channel_src_port == port))
                    assert network.channel_dst[channel[0]] - n == rank(c[:k] + [other] + c[k + 1:], sizes)
    # Listed direction: from the lower router to the higher.
    n = network.num_terminals
    assert (network.channel_src[2 * n::2] < network.channel_dst[2 * n::2]).all()


@pytest.mark.parametrize("spec, paths", [("hyperx:3,3", 2), ("hyperx:2,3,4", 6), ("hyperx:2,2,2,2", 24),
                                         ("hyperx:4", 1), ("hyperx:3,3:trunk=2", 2)])
def test_hyperx_diameter_and_minimal_paths(spec, paths):
    topology = parse_topology(spec)
    g = simple_router_graph(topology.network())
    l = len(topology.sizes)
    assert nx.diameter(g) == l == topology.diameter
    assert paths == math.factorial(l)
    far = [(u, v) for u, v in itertools.combinations(range(topology.num_routers), 2)
           if (topology.router_coordinates()[u] != topology.router_coordinates()[v]).all()]
    assert far
    for u, v in far[:50]:
        assert len(list(nx.all_shortest_paths(g, u, v))) == paths
    facts = dict(topology.facts())
    assert facts["diameter"].startswith(f"{l} ")
    assert facts["minimal paths between routers differing in every coordinate"].startswith(f"{paths} (L!)")


@pytest.mark.parametrize("r", [3, 6, 12, 24, 27, 30, 36])
def test_hyperx_ch7_sizes(r):
    """Prisacari20 ch.7: the 2D HyperX of router radix r has p = r/3, R = (r/3+1)^2 routers, N = (r/3)(r/3+1)^2."""
    from synth.pricing.diameter2_model import hyperx_2d

    p = r // 3
    topology = parse_topology(f"hyperx:{p + 1},{p + 1}:p={p}")
    network = topology.network()
    assert network.num_switches == (r // 3 + 1) ** 2 and network.num_terminals == (r // 3) * (r // 3 + 1) ** 2
    n = network.num_terminals
    ports = np.bincount(network.channel_src[network.channel_src >= n] - n)  # one out-channel per port
    assert (ports == r).all() and topology.radix == r
    assert network.cost_per_endpoint() == (3.0, 2.0)  # Figure 7.3: 3 ports, 2 links per endpoint
    config = hyperx_2d(r)
    assert parse_topology(config.spec) == topology  # r = 3 writes p=1 explicitly
    assert (config.terminals, config.routers, config.radix) == (network.num_terminals, network.num_switches, r)
    assert network.cost_per_endpoint() == (config.ports_per_terminal, config.links_per_terminal)
    facts = dict(topology.facts())
    assert facts["Prisacari20 ch.7 2D HyperX"] == (f"router radix r = 3p = {r}: R = (r/3+1)^2 = {(p + 1) ** 2}, "
                                           f"N = (r/3)(r/3+1)^2 = {p * (p + 1) ** 2}")


def test_hyperx_ch7_configuration_of_radix_30():
    topology = parse_topology("hyperx:11,11:p=10")
    assert (topology.num_routers, topology.num_terminals, topology.radix, topology.diameter) == (121, 1210, 30, 2)
    assert topology.label() == "HyperX(11x11; p=10)"
    assert topology.hierarchy() == (10, 11, 11)


# ----- 2dfc ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("m2, m1", [(4, 4), (3, 5), (5, 3), (2, 2), (2, 7), (8, 8)])
def test_2dfc_matches_the_definition(m2, m1):
    topology = parse_topology(f"2dfc:{m2},{m1}")
    assert topology.spec == f"2dfc:{m2},{m1}" and topology.label() == f"2dfc({m2},{m1})"
    assert topology.family == "2dfc" and topology.network().family == "2dfc"
    assert (topology.m2, topology.m1) == (m2, m1) and topology.sizes == (m1, m2)
    check_network(topology, reference_2dfc(m2, m1), 1, m1 + m2 - 2)
    # Node (a2, a1) is router a2 m1 + a1 and terminal a2 m1 + a1, named n<a2>.<a1>.
    network = topology.network()
    n = network.num_terminals
    for a2, a1 in itertools.product(range(m2), range(m1)):
        assert network.node_names[n + a2 * m1 + a1] == f"n{a2}.{a1}"
        assert network.channel_dst[2 * (a2 * m1 + a1)] == n + a2 * m1 + a1
    # It is hyperx:M1,M2 (one node per router) but for the names, spec and family.
    hyperx = parse_topology(f"hyperx:{m1},{m2}").network()
    for field in ("channel_src", "channel_dst", "channel_src_port", "channel_dst_port", "channel_bandwidth",
                  "channel_class"):
        assert (getattr(network, field) == getattr(hyperx, field)).all()
    assert network.class_names == hyperx.class_names


@pytest.mark.parametrize("m, degree, edges", [(4, 6, 48), (8, 14, 448), (16, 30, 3840)])
def test_2dfc_digest_numbers(m, degree, edges):
    """Pham26 (kautz-2dfc-collectives.md): degree m1 + m2 - 2, m1 m2 (m1 + m2 - 2)/2 undirected edges,
    diameter 2, two minimal paths between nodes differing in both coordinates."""
    topology = parse_topology(f"2dfc:{m},{m}")
    network = topology.network()
    n = network.num_terminals
    assert n == network.num_switches == m * m
    links = (network.channel_src >= n) & (network.channel_dst >= n)
    assert int(links.sum()) == 2 * edges
    assert (np.bincount(network.channel_src[links] - n) == degree).all()
    assert (network.channel_bandwidth[: 2 * n] == degree).all()
    facts = dict(topology.facts())
    assert facts["degree"].startswith(f"{degree} ") and facts["undirected edges"].startswith(f"{edges} ")
    assert facts["diameter"] == "2" and facts["minimal paths between nodes differing in both coordinates"] == "2"
    g = simple_router_graph(network)
    assert g.number_of_edges() == edges and nx.diameter(g) == 2
    rng = np.random.default_rng(m)
    pairs = [(int(u), int(v)) for u, v in rng.integers(0, n, (200, 2))] if m > 4 else \
        list(itertools.permutations(range(n), 2))
    for u, v in pairs:
        if u // m != v // m and u % m != v % m:
            assert len(list(nx.all_shortest_paths(g, u, v))) == 2


# ----- torus --------------------------------------------------------------------------------------

TORI = ["torus:5", "torus:2", "torus:3", "torus:4,4", "torus:2,4", "torus:3,5", "torus:2,2", "torus:2,3,2:p=2",
        "torus:4,3:p=3", "torus:6,2,3", "torus:2,2,2,2"]


@pytest.mark.parametrize("spec", TORI)
def test_torus_matches_the_definition(spec):
    topology = parse_topology(spec)
    check_network(topology, reference_torus(topology.sizes), topology.p, 2 * len(topology.sizes))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(2, 6), min_size=1, max_size=3), st.integers(1, 3))
def test_torus_property(sizes, p):
    spec = f"torus:{','.join(map(str, sizes))}" + (f":p={p}" if p > 1 else "")
    topology = parse_topology(spec)
    assert topology.spec == spec and parse_topology(topology.spec) == topology
    check_network(topology, reference_torus(tuple(sizes)), p, 2 * len(sizes))


@pytest.mark.parametrize("spec", ["torus:5,4", "torus:2,3", "torus:3,2,4:p=2"])
def test_torus_port_order_and_directions(spec):
    """Ports after the terminals: per dimension the two neighbours in increasing coordinate; channel
    2N + 2i goes in the + direction of its dimension."""
    topology = parse_topology(spec)
    network = topology.network()
    sizes = topology.sizes
    coordinates = topology.router_coordinates()
    for router, peers in ports_by_router(network).items():
        c = coordinates[router].tolist()
        expected = []
        for k, size in enumerate(sizes):
            others = sorted([(c[k] - 1) % size, (c[k] + 1) % size])
            expected += [rank(c[:k] + [x] + c[k + 1:], sizes) for x in others]
        assert peers == expected
    n = network.num_terminals
    forward = np.arange(2 * n, network.num_channels, 2)
    dimension = network.channel_class[forward] - 1
    a, b = coordinates[network.channel_src[forward] - n], coordinates[network.channel_dst[forward] - n]
    rows = np.arange(len(forward))
    step = (b[rows, dimension] - a[rows, dimension]) % np.asarray(sizes)[dimension]
    assert (step == 1).all()
    assert ((a != b).sum(axis=1) == 1).all()


def test_torus_dimension_of_two_has_two_parallel_links():
    """torus:2,4 (DeSensi24's Fig. 5): the +1 and -1 neighbours in dimension 0 coincide and get two links,
    so every router keeps 2D = 4 ports; hyperx:2,4 has one. torus:2,2 = hyperx:2,2:trunk=2."""
    torus = parse_topology("torus:2,4").network()
    n = torus.num_terminals
    pairs = link_multiset(torus)
    assert {key: count for key, count in pairs.items() if key[2] == "dim 0"} == \
        {(r, r + 1, "dim 0"): 2 for r in range(0, 8, 2)}
    assert all(count == 1 for key, count in pairs.items() if key[2] == "dim 1")
    assert (np.bincount(torus.channel_src[2 * n:] - n) == 4).all()
    assert (torus.channel_bandwidth[: 2 * n] == 4).all()
    # The first is listed from coordinate 0 to 1, the second (the wrap-around) from 1 to 0.
    assert torus.channel_src[2 * n:2 * n + 4:2].tolist() == [n + 0, n + 1]
    hyperx = parse_topology("hyperx:2,4").network()
    assert sum(c for key, c in link_multiset(hyperx).items() if key[2] == "dim 0") == 4
    assert link_multiset(parse_topology("torus:2,2").network()) == \
        link_multiset(parse_topology("hyperx:2,2:trunk=2").network())
    facts = dict(parse_topology("torus:2,4").facts())
    assert "two parallel links per pair in the 1 dimension(s) of size 2" in facts["router links"]


@pytest.mark.parametrize("sizes", [(5,), (6,), (2,), (4, 4), (3, 5), (2, 4), (4, 3, 2), (6, 6), (3, 3, 3), (2, 2, 2)])
def test_torus_diameter_and_antipodal_paths(sizes):
    topology = parse_topology(f"torus:{','.join(map(str, sizes))}")
    g = simple_router_graph(topology.network())
    assert nx.diameter(g) == sum(d // 2 for d in sizes) == topology.diameter
    far = [v for v, d in nx.single_source_shortest_path_length(g, 0).items() if d == topology.diameter]
    assert far
    for v in far:
        assert len(list(nx.all_shortest_paths(g, 0, v))) == topology.antipodal_paths()
    facts = dict(topology.facts())
    assert facts["diameter"] == f"{topology.diameter} (sum floor(D_k/2))"
    assert facts["minimal paths between antipodal routers"].startswith(str(topology.antipodal_paths()))


@pytest.mark.parametrize("spec, diameter, links", [("torus:64,64", 64, 8192), ("torus:128,8", 68, 2048),
                                                   ("torus:256,4", 130, 2048), ("torus:64,16", 40, 2048),
                                                   ("torus:8,8,8", 12, 1536), ("torus:8,8,8,8", 16, 16384)])
def test_torus_of_001(spec, diameter, links):
    topology = parse_topology(spec)
    network = topology.network()
    n = network.num_terminals
    assert topology.diameter == diameter and topology.num_links == links
    assert network.num_channels == 2 * n + 2 * links
    l = len(topology.sizes)
    assert (np.bincount(network.channel_src[2 * n:] - n) == 2 * l).all()
    assert (network.channel_bandwidth[: 2 * n] == 2 * l).all()
    assert topology.hierarchy() == topology.sizes


# ----- specs and errors ---------------------------------------------------------------------------

@pytest.mark.parametrize("text, canonical, label", [
    ("hyperx:4,4:p=1:trunk=1", "hyperx:4,4", "HyperX(4x4)"),
    ("hyperx:4,4:trunk=2:p=3", "hyperx:4,4:p=3:trunk=2", "HyperX(4x4; p=3, trunk=2)"),
    ("hyperx:3,4,5:trunk=2", "hyperx:3,4,5:trunk=2", "HyperX(3x4x5; trunk=2)"),
    ("HYPERX:8", "hyperx:8", "HyperX(8)"),
    ("torus:8,8:p=1", "torus:8,8", "torus(8x8)"),
    ("torus:8,4,2:p=2", "torus:8,4,2:p=2", "torus(8x4x2; p=2)"),
    ("2dfc:4,8", "2dfc:4,8", "2dfc(4,8)"),
    ("2dfc:16,16", "2dfc:16,16", "2dfc(16,16)"),
])
def test_canonical_specs(text, canonical, label):
    topology = parse_topology(text)
    assert topology.spec == canonical and topology.label() == label
    assert parse_topology(canonical) == topology and topology.network().spec == canonical


@pytest.mark.parametrize("spec, message", [
    ("hyperx:1,4", "every dimension needs at least 2 routers, dimension 0 (parameter 1) has 1"),
    ("hyperx:4,1", "dimension 1 (parameter 2) has 1"),
    ("hyperx:", "expected 1 to 32 comma-separated integers"),
    ("hyperx:4,x", "parameter 2 of 'hyperx:4,x' must be an integer"),
    ("hyperx:4,0", "parameter 2 of 'hyperx:4,0' must be between 1 and"),
    ("hyperx:4,4:p=0", "option p of 'hyperx:4,4:p=0' must be between 1 and"),
    ("hyperx:4,4:trunk=-1", "option trunk of 'hyperx:4,4:trunk=-1'"),
    ("hyperx:4,4:q=1", "unknown option 'q' (options of hyperx: p, trunk)"),
    ("hyperx:4,4:p=2:p=3", "option 'p' given twice"),
    ("hyperx:4,4:p", "expected key=value after ':'"),
    ("hyperx:1024,1024", "more than the"),
    ("hyperx:64,64:p=300", "more than the"),
    ("hyperx:" + ",".join(["2"] * 33), "expected 1 to 32 comma-separated integers"),
    ("torus:1", "every dimension needs at least 2 routers, dimension 0 (parameter 1) has 1"),
    ("torus:8,1,8", "dimension 1 (parameter 2) has 1"),
    ("torus:4,4:trunk=2", "unknown option 'trunk' (options of torus: p)"),
    ("torus:4,4:p=0", "option p of 'torus:4,4:p=0' must be between 1 and"),
    ("torus:1024,1024,2", "more than the"),
    ("torus:", "expected 1 to 32 comma-separated integers"),
    ("2dfc:4", "expected 2 comma-separated integers (2dfc:M2,M1), got 1"),
    ("2dfc:4,4,4", "expected 2 comma-separated integers"),
    ("2dfc:1,4", "both dimensions need at least 2 nodes, M2 = 1"),
    ("2dfc:4,1", "both dimensions need at least 2 nodes, M1 = 1"),
    ("2dfc:4,4:p=2", "unknown option 'p' (options of 2dfc: none)"),
    ("2dfc:2048,1024", "more than the"),
])
def test_bad_specs_are_one_line_errors(assert_bad_spec, spec, message):
    assert_bad_spec(spec, message)


def test_size_guard_before_building(monkeypatch):
    """Refused from the counts: no coordinates are computed."""
    import synth.topology.grid as grid

    def refuse(sizes):
        raise AssertionError(f"coordinates of {sizes} computed for a refused network")

    monkeypatch.setattr(grid, "grid_coordinates", refuse)
    for spec in ("torus:1024,1024,2", "hyperx:2048,1024", "2dfc:2048,1024"):
        with pytest.raises(SynthError, match="more than the"):
            parse_topology(spec)


# ----- commands and instances ---------------------------------------------------------------------

def test_topology_command(run, tmp_path):
    code, out, _ = run("topology", "torus:4,4")
    assert code == 0
    assert "torus(4x4)  spec torus:4,4" in out and "terminals 16, routers 16, 96 directed channels" in out
    for cls in ("terminal", "dim 0", "dim 1"):
        assert cls in out
    assert "diameter" in out and "4 (sum floor(D_k/2))" in out
    target = tmp_path / "torus.json"
    code, out, _ = run("topology", "torus:4,4", "--format", "json", "--out", target)
    assert code == 0 and out == ""
    doc = json.loads(target.read_text())
    assert doc["format"] == "synth-topology/1" and doc["spec"] == "torus:4,4" and doc["family"] == "torus"
    assert doc["terminals"] == 16 and len(doc["nodes"]) == 32 and len(doc["channels"]) == 2 * 16 + 2 * 32
    assert [c.get("bandwidth", 1) for c in doc["channels"][:32]] == [4] * 32
    assert all("bandwidth" not in c for c in doc["channels"][32:])
    assert doc["nodes"][16]["name"] == "r0.0" and doc["nodes"][17]["name"] == "r1.0"
    code, out, _ = run("topology", "2dfc:4,4")
    assert code == 0 and "2dfc(4,4)  spec 2dfc:4,4" in out and "48 (m1 m2 (m1 + m2 - 2)/2)" in out
    code, out, _ = run("topology", "hyperx:3,3:p=2:trunk=2")
    assert code == 0 and "HyperX(3x3; p=2, trunk=2)  spec hyperx:3,3:p=2:trunk=2" in out


def test_dimension_order_routes_through_the_command(run, tmp_path):
    """The families' coordinates and `dim k` classes are what dor needs: every path corrects
    dimension 0 first and is minimal."""
    for spec in ("torus:4,3", "2dfc:3,4", "hyperx:3,2,2:p=2"):
        target = tmp_path / "routes.json"
        code, _, err = run("route", spec, "--traffic", "a2a-lin", "--router", "dor", "--quiet", "--out", target)
        assert code == 0, err
        topology = parse_topology(spec)
        network = topology.network()
        g = simple_router_graph(network)
        distance = dict(nx.all_pairs_shortest_path_length(g))
        p = topology.p
        doc = json.loads(target.read_text())
        for record in doc["phases"]:
            for (s, d, _), path in zip(record["flows"], record["paths"]):
                if s == d:
                    continue
                classes = network.channel_class[path[1:-1]] - 1
                assert classes.tolist() == sorted(classes.tolist())
                assert len(path) - 2 == distance[s // p][d // p]
        code, out, _ = run("check", target)
        assert code == 0, out


@pytest.mark.parametrize("path, spec, terminals", [
    ("tori/torus-64x64.toml", "torus:64,64", 4096),
    ("tori/torus-8x8.toml", "torus:8,8", 64),
    ("tori/torus-64x16.toml", "torus:64,16", 1024),
    ("tori/torus-128x8.toml", "torus:128,8", 1024),
    ("tori/torus-256x4.toml", "torus:256,4", 1024),
    ("tori/torus-8x8x8.toml", "torus:8,8,8", 512),
    ("tori/torus-8x8x8x8.toml", "torus:8,8,8,8", 4096),
    ("2dfc/2dfc-4x4.toml", "2dfc:4,4", 16),
    ("2dfc/2dfc-8x8.toml", "2dfc:8,8", 64),
    ("2dfc/2dfc-16x16.toml", "2dfc:16,16", 256),
    ("ch7/hyperx-11x11-p10.toml", "hyperx:11,11:p=10", 1210),
])
def test_instances(run, path, spec, terminals):
    code, out, err = run("topology", REPO / "instances" / path)
    assert code == 0, err
    assert f"spec {spec}" in out and f"terminals {terminals}," in out


def test_instance_routes(run):
    code, out, err = run("route", REPO / "instances" / "2dfc" / "2dfc-4x4.toml", "--quiet")
    assert code == 0, err
    assert "a2a-lin: 16 of 16 phases" in out and "router    dor" in out
    code, out, err = run("route", REPO / "instances" / "tori" / "torus-8x8.toml", "--quiet")
    assert code == 0, err
    # DeSensi24's recursive doubling on 8x8: partners at distance 1, 2, 4 in each dimension, 14 in all
    # ("sum of distances over steps", swing-allreduce.md); on a ring the worst link carries that many.
    assert "a2a-xor: 6 of 64 phases" in out and "sum over phases 14 " in out
