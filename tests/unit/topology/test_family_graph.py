"""`graph:FILE[:p=P]` (issue 26): any topology as an edge list, GML or networkx node-link JSON.

The files are written here with networkx's own writers from graphs built by hand, and the network
is checked against the graph it came from: router links (parallel ones counted), bandwidths,
terminals and their names; the generic routers route it."""

from __future__ import annotations

import json
from collections import Counter

import networkx as nx
import numpy as np
import pytest

from helpers import run
from synth.core.errors import SynthError
from synth.topology import parse_topology


def router_links(network) -> Counter:
    """Undirected router-router links as name pairs, with their bandwidths."""
    n, names = network.num_terminals, network.node_names
    found = Counter()
    for s, d, b in zip(network.channel_src.tolist(), network.channel_dst.tolist(), network.channel_bandwidth.tolist()):
        if s >= n and d >= n:
            found[(*sorted((names[s], names[d])), b)] += 1
    return found


def hosts(network) -> dict[str, str]:
    n, names = network.num_terminals, network.node_names
    return {names[t]: names[int(network.channel_dst[2 * t])] for t in range(n)}


def test_an_edge_list_with_p_terminals_per_router_and_bandwidths(tmp_path):
    (tmp_path / "g.txt").write_text("# a ring of four and a chord of bandwidth 2, listed twice\na b\nb c\nc d\nd a\n"
                                    "a c 2\na c 2  # parallel\n")
    network = parse_topology(f"graph:{tmp_path / 'g.txt'}:p=2:recognize=no").network()
    assert network.num_terminals == 8 and network.node_names[8:] == ["a", "b", "c", "d"]
    assert router_links(network) == Counter({("a", "b", 1.0): 2, ("b", "c", 1.0): 2, ("c", "d", 1.0): 2,
                                             ("a", "d", 1.0): 2, ("a", "c", 2.0): 4})
    assert hosts(network) == {"t0": "a", "t1": "a", "t2": "b", "t3": "b", "t4": "c", "t5": "c", "t6": "d", "t7": "d"}


def test_gml_with_marked_terminals_keeps_their_names_and_links(tmp_path):
    graph = nx.MultiGraph()
    graph.add_nodes_from(["r1", "r2", "r3"])
    for host, router in (("h1", "r1"), ("h2", "r1"), ("h3", "r3")):
        graph.add_node(host, kind="host")
        graph.add_edge(host, router, bandwidth=4.0)
    graph.add_edge("r1", "r2")
    graph.add_edge("r2", "r3")
    graph.add_edge("r2", "r3")
    nx.write_gml(graph, tmp_path / "g.gml")
    network = parse_topology(f"graph:{tmp_path / 'g.gml'}:recognize=no").network()
    assert network.num_terminals == 3 and hosts(network) == {"h1": "r1", "h2": "r1", "h3": "r3"}
    assert network.channel_bandwidth[:6].tolist() == [4.0] * 6
    assert router_links(network) == Counter({("r1", "r2", 1.0): 2, ("r2", "r3", 1.0): 4})


def test_node_link_json_with_attached_terminals_and_one_way_links(tmp_path):
    graph = nx.DiGraph()
    for k in range(3):
        graph.add_node(f"n{k}", terminals=1)
        graph.add_edge(f"n{k}", f"n{(k + 1) % 3}")
    (tmp_path / "g.json").write_text(json.dumps(nx.node_link_data(graph)))
    network = parse_topology(f"graph:{tmp_path / 'g.json'}:recognize=no").network()
    n = network.num_terminals
    assert n == 3 and network.num_channels == 2 * 3 + 3  # one channel per one-way link
    links = {(network.node_names[s], network.node_names[d])
             for s, d in zip(network.channel_src[2 * n:].tolist(), network.channel_dst[2 * n:].tolist())}
    assert links == {("n0", "n1"), ("n1", "n2"), ("n2", "n0")}


@pytest.mark.parametrize("router", ["minimal", "minimal-random", "valiant", "ugal", "paths"])
def test_the_generic_routers_route_a_random_regular_graph(tmp_path, router):
    graph = nx.random_regular_graph(4, 12, seed=3)
    nx.write_edgelist(graph, tmp_path / "rr.txt", data=False)
    code, out, err = run("route", f"graph:{tmp_path / 'rr.txt'}:p=2", "--traffic", "a2a-lin", "--phase", "0-2",
                         "--router", router, "--out", tmp_path / "r.json")
    assert code == 0, err
    assert run("check", tmp_path / "r.json")[0] == 0


BAD = [
    ("g.txt", "a b\nb\n", "line 2: expected 'A B [BANDWIDTH]', got 1 fields"),
    ("g.txt", "a a\n", "line 1: a link from 'a' to itself"),
    ("g.txt", "a b x\n", "line 1: bandwidth: not a number: 'x'"),
    ("g.txt", "a b 0\n", "line 1: bandwidth: 0 is not a bandwidth of 1e-06 to 1e+06"),
    ("g.txt", "a b 1e-300\nb c\nc a\n", "line 1: bandwidth: 1e-300 is not a bandwidth of 1e-06 to 1e+06"),
    ("g.txt", "# nothing\n", "no links"),
    ("g.json", '{"nodes": [1, 2], "links": []}', "nodes: not a list of objects with an 'id'"),
    ("g.json", '{"nodes": [{"id": "a"}, {"id": "b"}], "links": [{"source": "a", "target": "zz"}]}',
     "a link names node 'zz', which 'nodes' does not list"),
    ("g.json", '{"nodes": [{"id": "a", "terminals": 1180591620717411303424}, {"id": "b"}], '
               '"links": [{"source": "a", "target": "b"}]}', "terminals: '1180591620717411303424' is not a count"),
    ("g.json", '{"nodes": [{"id": "a", "terminal": "false"}, {"id": "b"}], "links": [{"source": "a", "target": "b"}]}',
     "terminal: 'false' is not true or false"),
    ("g.json", "[" * 100000 + "]" * 100000, "nested too deep"),
    ("g.txt", "a b\nc d\n", "the routers fall into 2 parts that no path joins"),
    ("g.json", "{\"nodes\": [}", "line 1: not JSON"),
    ("g.json", "[1, 2]", "not networkx's node-link JSON"),
    ("g.gml", "graph [ node [ id 0 ", "not GML that networkx reads"),
]


@pytest.mark.parametrize("name, text, message", BAD)
def test_a_bad_graph_file_is_one_line(tmp_path, name, text, message):
    (tmp_path / name).write_text(text)
    with pytest.raises(SynthError) as caught:
        parse_topology(f"graph:{tmp_path / name}:p=1:recognize=no").network()
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_terminals_are_marked_or_given_never_both_nor_neither(tmp_path):
    (tmp_path / "g.txt").write_text("a b\n")
    with pytest.raises(SynthError, match="no terminals: give graph:.*:p=P"):
        parse_topology(f"graph:{tmp_path / 'g.txt'}:recognize=no").network()
    graph = nx.Graph()
    graph.add_node("h", terminal=True)
    graph.add_edges_from([("h", "a"), ("a", "b"), ("h2", "b")])
    graph.nodes["h2"]["terminal"] = True
    nx.write_gml(graph, tmp_path / "g.gml")
    with pytest.raises(SynthError, match="the file marks its terminals; leave out :p=2"):
        parse_topology(f"graph:{tmp_path / 'g.gml'}:p=2:recognize=no").network()
    graph.add_edge("h", "b")
    nx.write_gml(graph, tmp_path / "g2.gml")
    with pytest.raises(SynthError, match="terminal 'h' has 2 links"):
        parse_topology(f"graph:{tmp_path / 'g2.gml'}:recognize=no").network()


def test_an_unnamed_terminal_never_takes_a_routers_name(tmp_path):
    (tmp_path / "g.txt").write_text("t1 x\n")  # a router is called t1: terminal 1 becomes x/t1
    network = parse_topology(f"graph:{tmp_path / 'g.txt'}:p=1:recognize=no").network()
    assert network.node_names == ["t0", "x/t1", "t1", "x"]
    assert len(set(network.node_names)) == len(network.node_names)
    assert np.array_equal(network.channel_dst[[0, 2]], [2, 3])


def test_a_byte_order_mark_and_gml_without_labels(tmp_path):
    (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbfa b\nb c\nc a\n")
    assert parse_topology(f"graph:{tmp_path / 'bom.txt'}:p=1:recognize=no").network().node_names[3:] == ["a", "b", "c"]
    (tmp_path / "ids.gml").write_text('graph [ comment "label" node [ id 0 ] node [ id 1 ] edge [ source 0 target 1 ] ]')
    assert parse_topology(f"graph:{tmp_path / 'ids.gml'}:p=1:recognize=no").network().node_names[2:] == ["0", "1"]


def test_a_name_a_fabric_file_cannot_carry_is_refused_when_written(tmp_path):
    (tmp_path / "q.json").write_text(json.dumps({"nodes": [{"id": 'a"1'}, {"id": "b"}], "links": [{"source": 'a"1', "target": "b"}]}))
    code, out, err = run("topology", f"graph:{tmp_path / 'q.json'}:p=1", "--format", "ibnetdiscover",
                         "--out", tmp_path / "q.net")
    assert code == 2 and "node name 'a\"1' cannot be written in a fabric file" in err
    assert not (tmp_path / "q.net").exists()


def test_a_link_listed_twice_is_two_links_in_every_form(tmp_path):
    (tmp_path / "d.json").write_text(json.dumps({"directed": False, "multigraph": False, "graph": {},
                                                 "nodes": [{"id": "a"}, {"id": "b"}],
                                                 "links": [{"source": "a", "target": "b"}, {"source": "a", "target": "b"}]}))
    (tmp_path / "d.gml").write_text('graph [ node [ id 0 label "a" ] node [ id 1 label "b" ] '
                                    'edge [ source 0 target 1 ] edge [ source 0 target 1 ] ]')
    for name in ("d.json", "d.gml"):
        network = parse_topology(f"graph:{tmp_path / name}:p=1:recognize=no").network()
        assert router_links(network) == Counter({("a", "b", 1.0): 4}), name  # two links, two channels each
