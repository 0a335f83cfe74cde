"""Multi-Layer Full-Mesh (synth.topology.mlfm) and two-level Orthogonal Fat-Trees
(synth.topology.oft) against their definitions (Prisacari20 sec. 7.2.2.3-7.2.2.4,
hierarchical-dragonfly-diameter2.md ch.7), built here independently with networkx and a test-local
k-ML3B table; the digest's numbers and Table 7.2; the commands end to end."""

from __future__ import annotations

import itertools
import json
from collections import Counter

import networkx as nx
import numpy as np
import pytest

from helpers import REPO
from synth.core.errors import SynthError
from synth.topology import parse_topology


# Prisacari20 Table 7.2, the 4-ML3B, row by row (as the digest lists it).
TABLE_7_2 = [[9, 10, 11, 12], [9, 0, 1, 2], [9, 3, 4, 5], [9, 6, 7, 8], [10, 0, 3, 6], [10, 1, 4, 7], [10, 2, 5, 8],
             [11, 0, 4, 8], [11, 1, 5, 6], [11, 2, 3, 7], [12, 0, 5, 7], [12, 1, 3, 8], [12, 2, 4, 6]]


# ----- references from the definitions -------------------------------------------------------------

def reference_mlfm(h: int) -> tuple[nx.Graph, list[str]]:
    """The h-MLFM from the digest's rule (global router {i,j} joins local routers i and j of every
    layer), and the router name of every terminal in synth's documented order."""
    g = nx.Graph()
    locals_ = [f"L{l}.{i}" for l in range(h) for i in range(h + 1)]
    g.add_nodes_from(locals_)
    for i, j in itertools.combinations(range(h + 1), 2):
        for l in range(h):
            g.add_edge(f"L{l}.{i}", f"G{i}.{j}", kind="local-global")
            g.add_edge(f"L{l}.{j}", f"G{i}.{j}", kind="local-global")
    return g, [name for name in locals_ for _ in range(h)]


def reference_ml3b(k: int) -> list[list[int]]:
    """The k-ML3B table following the seed's four steps literally (Prisacari20 sec. 7.2.2.4)."""
    q, rows = k - 1, 1 + k * (k - 1)
    first_row = list(range(rows - k, rows))  # step 1
    first_column = [v for v in range(rows - k, rows) for _ in range(k - 1)]  # step 2
    squares = [[[r * q + c for c in range(q)] for r in range(q)]]  # step 3: 0..q^2-1, left to right, top to bottom
    squares.append([list(column) for column in zip(*squares[0])])  # its transpose
    for m in range(1, k - 1):  # the k-2 MOLS (r + m c) mod q, column i (1-based) increased by (i-1)(k-1)
        squares.append([[(r + m * c) % q + (i - 1) * (k - 1) for i, c in enumerate(range(q), 1)] for r in range(q)])
    body = [row for square in squares for row in square]
    return [first_row] + [[head] + row for head, row in zip(first_column, body)]


def reference_oft(k: int) -> tuple[nx.Graph, list[str]]:
    table = reference_ml3b(k)
    g = nx.Graph()
    rl = len(table)
    g.add_nodes_from(f"L{level}.{i}" for level in range(3) for i in range(rl))
    for i, row in enumerate(table):
        for j in row:
            g.add_edge(f"L0.{i}", f"L1.{j}", kind="L0-L1")
            g.add_edge(f"L2.{i}", f"L1.{j}", kind="L1-L2")
    terminals = [f"L{level}.{i}" for level in (0, 2) for i in range(rl) for _ in range(k)]
    return g, terminals


# ----- reading synth's network ----------------------------------------------------------------------

def router_graph(network) -> tuple[nx.Graph, int]:
    n, names = network.num_terminals, network.node_names
    g = nx.Graph()
    g.add_nodes_from(names[n:])
    links = np.flatnonzero((network.channel_src >= n) & (network.channel_dst >= n))
    for c in links.tolist():
        g.add_edge(names[network.channel_src[c]], names[network.channel_dst[c]],
                   kind=network.class_names[network.channel_class[c]])
    return g, len(links)


def terminal_routers(network) -> list[str]:
    """The router of every terminal, by name, from its injection channel (and its ejection channel)."""
    n, names = network.num_terminals, network.node_names
    inject = np.flatnonzero(network.channel_src < n)
    eject = np.flatnonzero(network.channel_dst < n)
    assert len(inject) == len(eject) == n
    assert sorted(network.channel_src[inject].tolist()) == list(range(n))
    by_terminal = dict(zip(network.channel_src[inject].tolist(), network.channel_dst[inject].tolist()))
    assert by_terminal == dict(zip(network.channel_dst[eject].tolist(), network.channel_src[eject].tolist()))
    return [names[by_terminal[t]] for t in range(n)]


def check_ports(network, radix: int) -> None:
    """Every node uses each of its ports for exactly one outgoing and one incoming channel, ports
    1..degree (terminals: 1), at most the radix; a link sits on the same port at both of its ends."""
    nodes = network.num_nodes
    out = np.stack([network.channel_src, network.channel_src_port], axis=1)
    into = np.stack([network.channel_dst, network.channel_dst_port], axis=1)
    assert len(np.unique(out, axis=0)) == len(out) and len(np.unique(into, axis=0)) == len(into)
    degree = np.bincount(network.channel_src, minlength=nodes)
    assert (np.bincount(network.channel_dst, minlength=nodes) == degree).all()
    assert (degree[: network.num_terminals] == 1).all() and degree.max() <= radix
    assert (network.channel_src_port >= 1).all() and (network.channel_src_port <= degree[network.channel_src]).all()
    assert (network.channel_dst_port >= 1).all() and (network.channel_dst_port <= degree[network.channel_dst]).all()
    forward = {(s, sp, d, dp) for s, sp, d, dp in zip(network.channel_src.tolist(), network.channel_src_port.tolist(),
                                                      network.channel_dst.tolist(), network.channel_dst_port.tolist())}
    assert {(d, dp, s, sp) for s, sp, d, dp in forward} == forward


def ports_of(network, router: str) -> dict[int, str]:
    """Port -> the node name it leads to, for one router."""
    node = network.node_names.index(router)
    out = np.flatnonzero(network.channel_src == node)
    return {int(network.channel_src_port[c]): network.node_names[network.channel_dst[c]] for c in out}


def by_pair(g: nx.Graph) -> dict:
    return {frozenset(e): kind for *e, kind in g.edges(data="kind")}


# ----- MLFM -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("h", [1, 2, 3, 4, 5, 7, 15])
def test_mlfm_matches_the_definition(h):
    topology = parse_topology(f"mlfm:{h}")
    network = topology.network()
    ref, ref_terminals = reference_mlfm(h)
    got, channels = router_graph(network)
    assert channels == 2 * got.number_of_edges() == 2 * h * h * (h + 1)  # no parallel links
    assert set(got.nodes) == set(ref.nodes) and by_pair(got) == by_pair(ref)
    assert terminal_routers(network) == ref_terminals
    check_ports(network, 2 * h)
    # Numbering: local routers layer by layer, then global routers by pair in lexicographic order.
    n = network.num_terminals
    assert network.node_names[n:] == [f"L{l}.{i}" for l in range(h) for i in range(h + 1)] + \
        [f"G{i}.{j}" for i, j in itertools.combinations(range(h + 1), 2)]
    assert network.node_level.tolist() == [0] * n + [1] * h * (h + 1) + [2] * (h * (h + 1) // 2)
    assert (network.channel_bandwidth == 1).all() and network.class_names == ("terminal", "local-global")
    assert {d for node, d in got.degree} == ({h} if h > 1 else {1}) | {2 * h}
    # Links are listed from the local router: even router channels go towards the global router.
    links = np.arange(2 * n, network.num_channels)
    towards = network.node_level[network.channel_dst[links]] == 2
    assert (towards == (links % 2 == 0)).all()


@pytest.mark.parametrize("h", [2, 3, 4])
def test_mlfm_minimal_paths(h):
    """Same-column local routers (same index, different layers) have h minimal paths, every other
    pair of local routers exactly 1, all of length 2 (Prisacari20 sec. 7.3)."""
    got, _ = router_graph(parse_topology(f"mlfm:{h}").network())
    for l1, i1, l2, i2 in itertools.product(range(h), range(h + 1), range(h), range(h + 1)):
        if (l1, i1) >= (l2, i2):
            continue
        paths = list(nx.all_shortest_paths(got, f"L{l1}.{i1}", f"L{l2}.{i2}"))
        assert {len(p) for p in paths} == {3}
        assert len(paths) == (h if i1 == i2 else 1)


@pytest.mark.parametrize("h", [1, 2, 3, 4])
def test_mlfm_facts(h):
    topology = parse_topology(f"mlfm:{h}")
    got, _ = router_graph(topology.network())
    facts = dict(topology.facts())
    assert facts["diameter"].startswith("2 router hops between local routers")
    assert facts["diameter"].endswith(f"{nx.diameter(got)} over all routers")
    assert facts["minimal paths between local routers"].startswith(f"{h} in the same column")
    assert facts["routers"].startswith(f"{got.number_of_nodes()} ") and facts["router radix"].startswith(f"{2 * h} ")
    assert facts["router links"].startswith(f"{got.number_of_edges()} ")


def test_mlfm_digest_numbers_and_spec():
    for h, terminals, routers in ((15, 3600, 360), (32, 33792, 1584), (4, 80, 30)):
        topology = parse_topology(f"mlfm:{h}")
        network = topology.network()
        assert (network.num_terminals, network.num_switches) == (terminals, routers)
        assert (terminals, routers) == (h**3 + h * h, 3 * h * (h + 1) // 2)
        assert topology.num_terminals == terminals
    topology = parse_topology("mlfm:15")
    assert topology.spec == "mlfm:15" and topology.label() == "MLFM(h=15)"
    assert parse_topology("MLFM:015").spec == "mlfm:15"
    assert topology.hierarchy() == (15, 16, 15) and np.prod(topology.hierarchy()) == 3600
    assert topology.router_groups() is None and topology.router_coordinates() is None
    ports, links = topology.network().cost_per_endpoint()
    assert (ports, links) == (3.0, 2.0)  # Prisacari20 sec. 7.2: 3 router ports and 2 links per end-node


def test_mlfm_port_order():
    """Local router (l, i): terminals on 1..h, then the global routers by the other index; global
    router {i, j}: 2l + 1 to (l, i), 2l + 2 to (l, j)."""
    h = 4
    network = parse_topology(f"mlfm:{h}").network()
    for l, i in ((0, 0), (2, 3), (3, 4)):
        ports = ports_of(network, f"L{l}.{i}")
        others = [j for j in range(h + 1) if j != i]
        assert [ports[p] for p in range(1, h + 1)] == [f"t{(l * (h + 1) + i) * h + x}" for x in range(h)]
        assert [ports[p] for p in range(h + 1, 2 * h + 1)] == [f"G{min(i, j)}.{max(i, j)}" for j in others]
    for i, j in ((0, 1), (1, 3), (3, 4)):
        ports = ports_of(network, f"G{i}.{j}")
        assert [ports[p] for p in range(1, 2 * h + 1)] == [f"L{l}.{x}" for l in range(h) for x in (i, j)]


# ----- OFT --------------------------------------------------------------------------------------------

def test_table_7_2():
    from synth.topology.oft import ml3b_table
    assert reference_ml3b(4) == TABLE_7_2  # the digest's reading of the seed's algorithm
    assert ml3b_table(4).tolist() == TABLE_7_2
    assert parse_topology("oft:4").table.tolist() == TABLE_7_2


@pytest.mark.parametrize("k", [3, 4, 6, 8, 12, 14, 18])
def test_ml3b_table_and_its_property(k):
    from synth.topology.oft import ml3b_table
    table = ml3b_table(k).tolist()
    assert table == reference_ml3b(k)
    rows = [set(row) for row in table]
    assert all(len(row) == k for row in rows)  # no value twice in a row
    counts = Counter(v for row in table for v in row)
    assert sorted(counts) == list(range(len(table))) and set(counts.values()) == {k}
    # Any two rows share exactly one value (the ML3B property: a projective plane of order k - 1).
    assert all(len(a & b) == 1 for a, b in itertools.combinations(rows, 2))


@pytest.mark.parametrize("k", [3, 4, 6, 8, 12])
def test_oft_matches_the_definition(k):
    topology = parse_topology(f"oft:{k}")
    network = topology.network()
    ref, ref_terminals = reference_oft(k)
    got, channels = router_graph(network)
    rl = 1 + k * (k - 1)
    assert channels == 2 * got.number_of_edges() == 4 * k * rl
    assert set(got.nodes) == set(ref.nodes) and by_pair(got) == by_pair(ref)
    assert terminal_routers(network) == ref_terminals
    check_ports(network, 2 * k)
    n = network.num_terminals
    assert network.node_names[n:] == [f"L{level}.{i}" for level in range(3) for i in range(rl)]
    assert network.node_level.tolist() == [0] * n + [1] * rl + [2] * rl + [3] * rl
    assert (network.channel_bandwidth == 1).all() and network.class_names == ("terminal", "L0-L1", "L1-L2")
    # Every router has degree 2k: L1 routers k to L0 and k to L2.
    assert {d for _, d in got.degree(f"L1.{j}" for j in range(rl))} == {2 * k}
    for j in range(rl):
        levels = Counter(other[:2] for other in got.neighbors(f"L1.{j}"))
        assert levels == {"L0": k, "L2": k}
    # Any two L0 routers (and any two L2 routers) share exactly one L1 router.
    for level in ("L0", "L2"):
        neighbours = [set(got.neighbors(f"{level}.{i}")) for i in range(rl)]
        assert all(len(a & b) == 1 for a, b in itertools.combinations(neighbours, 2))
    # Links are listed from the L0/L2 router: even router channels go towards L1.
    links = np.arange(2 * n, network.num_channels)
    towards = network.node_level[network.channel_dst[links]] == 2
    assert (towards == (links % 2 == 0)).all()


@pytest.mark.parametrize("k", [3, 4])
def test_oft_minimal_paths(k):
    """(0, i) and (2, i) have k minimal paths, every other pair of L0/L2 routers exactly 1, all of
    length 2 (Prisacari20 sec. 7.3)."""
    got, _ = router_graph(parse_topology(f"oft:{k}").network())
    rl = 1 + k * (k - 1)
    ends = [(level, i) for level in (0, 2) for i in range(rl)]
    for (l1, i1), (l2, i2) in itertools.combinations(ends, 2):
        paths = list(nx.all_shortest_paths(got, f"L{l1}.{i1}", f"L{l2}.{i2}"))
        assert {len(p) for p in paths} == {3} and all(p[1].startswith("L1.") for p in paths)
        assert len(paths) == (k if i1 == i2 else 1)
    assert nx.diameter(got) == 3


def test_oft_digest_numbers_spec_and_facts():
    for k, terminals, routers in ((4, 104, 39), (12, 3192, 399), (3, 42, 21)):
        topology = parse_topology(f"oft:{k}")
        network = topology.network()
        assert (network.num_terminals, network.num_switches) == (terminals, routers)
        assert (terminals, routers) == (2 * k**3 - 2 * k * k + 2 * k, 3 * k * k - 3 * k + 3)
        facts = dict(topology.facts())
        assert facts["router radix"].startswith(f"{2 * k} ") and facts["terminals"].startswith(f"{terminals} ")
        assert facts["minimal paths between L0/L2 routers"].startswith(f"{k} between L0 router i and L2 router i")
        assert facts["diameter"].startswith("2 router hops") and "3 over all routers" in facts["diameter"]
        assert facts["router links"].startswith(f"{terminals} ")
    topology = parse_topology("oft:12")
    assert topology.spec == "oft:12" and topology.label() == "OFT(k=12)"
    assert topology.hierarchy() == (12, 133, 2) and np.prod(topology.hierarchy()) == 3192
    assert topology.network().cost_per_endpoint() == (3.0, 2.0)  # 3 router ports and 2 links per end-node


def test_oft_port_order():
    """L0/L2 router i: terminals on 1..k, then its table row in column order; L1 router j: the L0
    routers holding j in increasing order, then the L2 routers of the same indices."""
    k = 4
    network = parse_topology(f"oft:{k}").network()
    rl = 1 + k * (k - 1)
    for level, i in ((0, 0), (0, 7), (2, 12)):
        ports = ports_of(network, f"L{level}.{i}")
        first = (i if level == 0 else rl + i) * k
        assert [ports[p] for p in range(1, k + 1)] == [f"t{first + x}" for x in range(k)]
        assert [ports[p] for p in range(k + 1, 2 * k + 1)] == [f"L1.{j}" for j in TABLE_7_2[i]]
    for j in (0, 5, 12):
        holders = [i for i, row in enumerate(TABLE_7_2) if j in row]
        ports = ports_of(network, f"L1.{j}")
        assert [ports[p] for p in range(1, 2 * k + 1)] == [f"L0.{i}" for i in holders] + [f"L2.{i}" for i in holders]


# ----- errors, the commands and the instances -----------------------------------------------------

@pytest.mark.parametrize("spec, message", [
    ("oft:5", "k - 1 = 4 (2^2) is not prime"),
    ("oft:10", "k - 1 = 9 (3^2) is not prime"),
    ("oft:2", "k - 1 = 1 is not prime"),
    ("oft:1", "k - 1 = 0 is not prime"),
    ("oft:0", "parameter 1 of 'oft:0' must be between 1 and"),
    ("oft:4,4", "expected 1 comma-separated integers (oft:K), got 2"),
    ("oft:4:p=3", "unknown option 'p' (options of oft: none)"),
    ("oft:", "expected 1 comma-separated integers"),
    ("oft:x", "parameter 1 of 'oft:x'"),
    ("oft:102", "more than the"),
    ("mlfm:0", "parameter 1 of 'mlfm:0' must be between 1 and"),
    ("mlfm:-3", "parameter 1 of 'mlfm:-3'"),
    ("mlfm:3,4", "expected 1 comma-separated integers (mlfm:H), got 2"),
    ("mlfm:3:h=3", "unknown option 'h' (options of mlfm: none)"),
    ("mlfm:102", "more than the"),
])
def test_bad_specs_are_one_line_errors(assert_bad_spec, spec, message):
    assert_bad_spec(spec, message)


def test_counts_before_building(monkeypatch):
    """The size guard answers from the parameters: no table or link array is built for a refused spec."""
    import synth.topology.mlfm as mlfm
    import synth.topology.oft as oft

    def refuse(*args):
        raise AssertionError("built for a refused network")

    monkeypatch.setattr(oft, "ml3b_table", refuse)
    monkeypatch.setattr(mlfm.Mlfm, "links", refuse)
    with pytest.raises(SynthError, match="terminals, more than the"):
        parse_topology("oft:102")
    with pytest.raises(SynthError, match="terminals, more than the"):
        parse_topology("mlfm:102")


def test_topology_command(run, tmp_path):
    code, out, _ = run("topology", "oft:4")
    assert code == 0
    assert "OFT(k=4)  spec oft:4" in out and "terminals 104, routers 39, 416 directed channels" in out
    for cls in ("L0-L1", "L1-L2", "minimal paths between L0/L2 routers"):
        assert cls in out
    target = tmp_path / "oft.json"
    code, out, _ = run("topology", "oft:4", "--format", "json", "--out", target)
    assert code == 0 and out == ""
    doc = json.loads(target.read_text())
    assert doc["format"] == "synth-topology/1" and doc["spec"] == "oft:4" and doc["family"] == "oft"
    assert doc["terminals"] == 104 and len(doc["nodes"]) == 143 and len(doc["channels"]) == 2 * 104 + 2 * 104
    assert doc["nodes"][104] == {"id": 104, "name": "L0.0", "kind": "switch", "level": 1}
    code, out, _ = run("topology", "mlfm:3")
    assert code == 0 and "MLFM(h=3)  spec mlfm:3" in out and "terminals 36, routers 18" in out
    target = tmp_path / "mlfm.json"
    code, out, _ = run("topology", "mlfm:3", "--format", "json", "--out", target)
    doc = json.loads(target.read_text())
    assert code == 0 and doc["family"] == "mlfm" and len(doc["nodes"]) == 54 and len(doc["channels"]) == 2 * 36 + 2 * 36
    assert doc["nodes"][-1] == {"id": 53, "name": "G2.3", "kind": "switch", "level": 2}


@pytest.mark.parametrize("path, spec, terminals", [
    ("ch7/mlfm-h15.toml", "mlfm:15", 3600),
    ("ch7/oft-k12.toml", "oft:12", 3192),
])
def test_instances(run, path, spec, terminals):
    code, out, err = run("topology", REPO / "instances" / path)
    assert code == 0, err
    assert f"spec {spec}" in out and f"terminals {terminals}," in out
