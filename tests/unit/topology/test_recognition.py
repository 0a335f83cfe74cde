"""Recognition of a family in an imported fabric or graph (issue 26): synth.topology.recognize.

The fabric files here are written by this test, not by synth: every family network is cabled in a shuffled
order, with random GUIDs, random port numbers on every switch and new names, in ibnetdiscover's format. What
must hold: the file is recognized as its family (a network isomorphic to the one it was made from, checked with
networkx), the recognized network is the family's network (its node numbering and channels) with the file's own
names and ports, and a few links or a switch taken out are reported as missing. A random regular graph is no
family's.
"""

from __future__ import annotations

import json
from collections import Counter

import networkx as nx
import numpy as np
import pytest

from helpers import cabling, run
from synth.topology import parse_topology


def router_multigraph(network) -> nx.MultiGraph:
    """Routers of a network by name, a node attribute `terminals`, an edge per two-way router link."""
    n = network.num_terminals
    failed = set() if network.failed_nodes is None else set(network.failed_nodes.tolist())
    graph = nx.MultiGraph()
    names = network.node_names
    for r in range(n, network.num_nodes):
        if r not in failed:
            graph.add_node(names[r], terminals=0)
    for s, d in zip(network.channel_src.tolist(), network.channel_dst.tolist()):
        if s < n <= d and s not in failed:
            graph.nodes[names[d]]["terminals"] += 1
        elif s >= n and d >= n and s < d:
            graph.add_edge(names[s], names[d])
    return graph


def isomorphic(a: nx.MultiGraph, b: nx.MultiGraph) -> bool:
    return nx.is_isomorphic(nx.Graph(a), nx.Graph(b), node_match=lambda x, y: x["terminals"] == y["terminals"],
                            edge_match=None) and Counter(Counter(map(frozenset, a.edges())).values()) == \
        Counter(Counter(map(frozenset, b.edges())).values())


def write_fabric(path, graph: nx.MultiGraph, seed: int) -> dict[str, str]:
    """An ibnetdiscover file of the routers in `graph` (and their terminals), shuffled: node order, GUIDs, switch
    port numbers and names all new. Returns the new name of every router."""
    rng = np.random.default_rng(seed)
    routers = list(graph.nodes)
    rng.shuffle(routers)
    rename = {r: f"sw-{i}-{rng.integers(1 << 20)}" for i, r in enumerate(routers)}
    guid = {r: int(rng.integers(1 << 40, 1 << 56)) for r in routers}
    ends: dict[str, list] = {r: [] for r in routers}  # (remote, kind) per port, before port numbers are drawn
    cas = []
    for r in routers:
        for k in range(graph.nodes[r]["terminals"]):
            cas.append((f"host{len(cas)} HCA-1", r, int(rng.integers(1 << 40, 1 << 56))))
            ends[r].append(("ca", len(cas) - 1))
    for u, v, _ in graph.edges(keys=True):
        ends[u].append(("sw", v, len(ends[v])))  # the far end's slot, fixed below once ports are drawn
        ends[v].append(("sw", u, len(ends[u]) - 1))
    port = {r: rng.permutation(len(ends[r])) + 1 + int(rng.integers(0, 3)) for r in routers}
    lines = []
    for r in routers:
        lines += [f"switchguid=0x{guid[r]:016x}({guid[r]:x})",
                  f'Switch\t{int(port[r].max())} "S-{guid[r]:016x}"\t\t# "{rename[r]}" enhanced port 0 lid 1 lmc 0']
        for slot, end in enumerate(ends[r]):
            if end[0] == "ca":
                name, _, ca_guid = cas[end[1]]
                lines.append(f'[{port[r][slot]}]\t"H-{ca_guid:016x}"[1]({ca_guid + 1:x})\t\t# "{name}" lid 2 4xEDR')
            else:
                far, far_slot = end[1], end[2]
                lines.append(f'[{port[r][slot]}]\t"S-{guid[far]:016x}"[{port[far][far_slot]}]\t\t# "{rename[far]}" '
                             f"lid 1 4xEDR")
        lines.append("")
    for name, r, ca_guid in cas:
        slot = next(i for i, e in enumerate(ends[r]) if e[0] == "ca" and cas[e[1]][0] == name)
        lines += [f"caguid=0x{ca_guid:016x}", f'Ca\t1 "H-{ca_guid:016x}"\t\t# "{name}"',
                  f'[1]({ca_guid + 1:x})\t"S-{guid[r]:016x}"[{port[r][slot]}]\t\t# lid 2 lmc 0 "{rename[r]}" lid 1 '
                  f"4xEDR", ""]
    path.write_text("\n".join(lines))
    return rename


def check_recognized(path, expected: nx.MultiGraph, family: str):
    topology = parse_topology(f"fabric:{path}")
    assert topology.family == family, topology.facts()
    network = topology.network()
    # the file's network, cable for cable under the file's names and ports
    assert cabling(network) == cabling(parse_topology(f"fabric:{path}:recognize=no").network())
    # the family's network: its numbering and channels, unchanged where nothing is missing
    base = topology.base.network()
    if network.failed_nodes is None and network.num_channels == base.num_channels:
        assert np.array_equal(network.channel_src, base.channel_src)
        assert np.array_equal(network.channel_dst, base.channel_dst)
        assert np.array_equal(network.channel_class, base.channel_class)
    # and the family network is the one the file was made from
    assert isomorphic(router_multigraph(base), expected)
    return topology


FAMILY_CASES = ["xgft:2:4,4:1,2", "xgft:3:4,2,3:1,2,2", "dragonfly:2,4,2", "dragonfly:1,4,2:groups=5",
                "dragonfly:1,4,2:arrangement=circulant", "hyperx:3,4", "hyperx:3,3:p=2:trunk=2", "torus:4,5",
                "torus:2,4:p=2", "slimfly:5", "slimfly:4", "mlfm:3", "oft:4"]


@pytest.mark.parametrize("spec", FAMILY_CASES)
def test_a_relabelled_copy_of_every_family_is_recognized(tmp_path, spec):
    source = router_multigraph(parse_topology(spec).network())
    write_fabric(tmp_path / "f.txt", source, seed=len(spec))
    topology = check_recognized(tmp_path / "f.txt", source, spec.partition(":")[0])
    assert topology.complete and topology.missing() == ""
    # the seeds' closed forms where the file's bandwidths are the family's (not so for a node that is its own
    # router, whose terminal link the family gives the router's bandwidth: a CA's cable has the CA's rate)
    same = np.array_equal(topology.network().channel_bandwidth, topology.base.network().channel_bandwidth)
    assert topology.intact == same and topology.closed_forms() == (topology.base.closed_forms() if same else set())
    assert dict(topology.facts())["recognized as"].startswith(topology.base.spec)


def independent_hyperx(sizes) -> nx.MultiGraph:
    """The HyperX from its definition: the Cartesian product of complete graphs, one terminal per router."""
    graph = nx.complete_graph(sizes[0])
    for size in sizes[1:]:
        graph = nx.cartesian_product(graph, nx.complete_graph(size))
    out = nx.MultiGraph(nx.relabel_nodes(graph, {v: str(v) for v in graph}))
    nx.set_node_attributes(out, 1, "terminals")
    return out


def independent_torus(sizes) -> nx.MultiGraph:
    out = nx.MultiGraph(nx.relabel_nodes(nx.grid_graph(dim=list(sizes), periodic=True), str))
    nx.set_node_attributes(out, 2, "terminals")
    return out


def independent_fat_tree(k: int) -> nx.MultiGraph:
    """A two-level fat tree of k leaf switches with k terminals each, every leaf linked to each of k/2 spines."""
    out = nx.MultiGraph()
    for leaf in range(k):
        out.add_node(f"leaf{leaf}", terminals=k)
    for spine in range(k // 2):
        out.add_node(f"spine{spine}", terminals=0)
        for leaf in range(k):
            out.add_edge(f"leaf{leaf}", f"spine{spine}")
    return out


@pytest.mark.parametrize("graph, family, spec", [
    (independent_hyperx((3, 4, 2)), "hyperx", "hyperx:2,3,4"),
    (independent_torus((5, 3, 4)), "torus", "torus:3,4,5:p=2"),
    (independent_fat_tree(6), "xgft", "xgft:2:6,6:1,3"),
])
def test_networks_built_from_their_definitions_are_recognized_with_their_parameters(tmp_path, graph, family, spec):
    write_fabric(tmp_path / "f.txt", graph, seed=3)
    topology = check_recognized(tmp_path / "f.txt", graph, family)
    assert topology.base.spec == spec


@pytest.mark.parametrize("spec, drop", [("dragonfly:2,4,2", 2), ("slimfly:5", 3), ("torus:6,6", 3), ("hyperx:4,5", 2),
                                        ("oft:4", 2), ("mlfm:4", 2), ("dragonfly:2,6,3", 4)])
def test_a_family_with_a_few_links_removed_is_recognized_with_them_missing(tmp_path, spec, drop):
    source = router_multigraph(parse_topology(spec).network())
    edges = sorted(source.edges(keys=True))
    for k in np.random.default_rng(7).choice(len(edges), size=drop, replace=False).tolist():
        source.remove_edge(*edges[k])
    write_fabric(tmp_path / "f.txt", source, seed=5)
    topology = parse_topology(f"fabric:{tmp_path / 'f.txt'}")
    assert topology.family == spec.partition(":")[0] and topology.base.spec == spec
    assert topology.missing() == f"{drop} missing links" and not topology.intact
    network = topology.network()
    assert cabling(network) == cabling(parse_topology(f"fabric:{tmp_path / 'f.txt'}:recognize=no").network())
    assert network.num_channels == topology.base.network().num_channels - 2 * drop
    assert topology.closed_forms() == frozenset() and topology.minimal_channels([0], [1]) is None


@pytest.mark.parametrize("spec", ["dragonfly:2,4,2", "torus:6,6", "slimfly:5:p=1"])
def test_a_family_with_a_switch_removed_is_recognized_with_it_and_its_terminals_failed(tmp_path, spec):
    intact = parse_topology(spec)
    source = router_multigraph(intact.network())
    gone = sorted(source.nodes)[5]
    source.remove_node(gone)
    write_fabric(tmp_path / "f.txt", source, seed=9)
    topology = parse_topology(f"fabric:{tmp_path / 'f.txt'}")
    assert topology.family == intact.family
    p = intact.network().num_terminals // intact.network().num_switches
    assert topology.missing() == f"1 missing switch, {p} missing terminal" + "s" * (p > 1)
    network = topology.network()
    assert len(network.failed_nodes) == 1 + p
    assert all(network.node_names[v].startswith("missing:") for v in network.failed_nodes.tolist())
    # routes and the checker work on it as on any degraded network
    code, out, err = run("route", f"fabric:{tmp_path / 'f.txt'}", "--traffic", "a2a-lin", "--phase", "0-2", "--router", "minimal",
                         "--out", tmp_path / "r.json")
    assert code == 0, err
    code, out, err = run("check", tmp_path / "r.json")
    assert code == 0, out + err


def test_a_fat_tree_with_a_link_missing_stays_generic_and_says_what_it_resembles(tmp_path):
    source = independent_fat_tree(8)
    source.remove_edge("leaf0", "spine0")
    write_fabric(tmp_path / "f.txt", source, seed=2)
    topology = parse_topology(f"fabric:{tmp_path / 'f.txt'}")
    assert topology.family == "fabric"
    note = dict(topology.facts())["family"]
    assert note.startswith("close to xgft:2:8,8:1,4") and "1 missing link" in note and "generic" in note


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_random_regular_graph_is_no_family(tmp_path, seed):
    graph = nx.random_regular_graph(5, 40, seed=seed)
    (tmp_path / "g.txt").write_text("".join(f"r{u} r{v}\n" for u, v in graph.edges()))
    topology = parse_topology(f"graph:{tmp_path / 'g.txt'}:p=2")
    assert topology.family == "graph"
    assert dict(topology.facts())["family"].startswith("none")


def test_the_petersen_graph_is_the_dragonfly_of_two_routers_per_group(tmp_path):
    """Contracting a perfect matching of the Petersen graph gives K5: it is a maximum-size dragonfly with a = 2 and
    h = 2 (five groups of two routers, one global link between every two groups)."""
    topology = parse_topology("graph:instances/graphs/petersen.gml:p=2")
    assert topology.family == "dragonfly" and topology.base.spec.startswith("dragonfly:2,2,2")
    assert isomorphic(router_multigraph(topology.base.network()), _with_terminals(nx.petersen_graph(), 2))


def _with_terminals(graph: nx.Graph, p: int) -> nx.MultiGraph:
    out = nx.MultiGraph(nx.relabel_nodes(graph, str))
    nx.set_node_attributes(out, p, "terminals")
    return out


def test_a_kautz_graph_written_as_a_directed_graph_is_recognized(tmp_path):
    """K(3,2) from its definition: words xy (x != y) over 4 letters, xy -> yz."""
    words = [(x, y) for x in range(4) for y in range(4) if x != y]
    links = [{"source": f"{x}{y}", "target": f"{y}{z}"} for x, y in words for z in range(4) if z != y]
    document = {"directed": True, "multigraph": False, "graph": {},
                "nodes": [{"id": f"{x}{y}", "terminals": 1} for x, y in reversed(words)], "links": links}
    (tmp_path / "k.json").write_text(json.dumps(document))
    topology = parse_topology(f"graph:{tmp_path / 'k.json'}")
    assert topology.family == "kautz" and topology.base.spec == "kautz:3"
    assert topology.kautz_degree() == 3  # the Kautz collectives apply


def test_recognition_can_be_turned_off_and_is_the_same_on_every_parse(tmp_path):
    source = router_multigraph(parse_topology("dragonfly:2,4,2").network())
    write_fabric(tmp_path / "f.txt", source, seed=11)
    raw = parse_topology(f"fabric:{tmp_path / 'f.txt'}:recognize=no")
    assert raw.family == "fabric" and raw.spec.endswith(":recognize=no")
    assert dict(raw.facts())["family"] == "not looked for (recognize=no)"
    first, second = parse_topology(f"fabric:{tmp_path / 'f.txt'}"), parse_topology(f"fabric:{tmp_path / 'f.txt'}")
    assert first.network().node_names == second.network().node_names
    code, out, err = run("topology", f"fabric:{tmp_path / 'f.txt'}")
    assert code == 0 and "recognized as" in out and "dragonfly:2,4,2" in out
    code, out, err = run("topology", f"fabric:{tmp_path / 'f.txt'}:recognize=maybe")
    assert code == 2 and "recognize" in err and len(err.strip().splitlines()) == 1


def test_fail_names_nodes_whose_names_hold_dashes(tmp_path):
    """ibnetdiscover's ids (S-<guid>) and many descriptions hold '-': `--fail A-B` splits at the dash that leaves
    two known names."""
    source = router_multigraph(parse_topology("dragonfly:2,4,2").network())
    write_fabric(tmp_path / "f.txt", source, seed=4)  # routers named sw-<i>-<random>
    spec = f"fabric:{tmp_path / 'f.txt'}"
    network = parse_topology(spec).network()
    n = network.num_terminals
    link = next((s, d) for s, d in zip(network.channel_src.tolist(), network.channel_dst.tolist()) if s >= n and d >= n)
    a, b = network.node_names[link[0]], network.node_names[link[1]]
    assert "-" in a and "-" in b
    degraded = parse_topology(f"{spec}@fail={a}-{b}")
    assert degraded.network().num_channels == network.num_channels - 2
    assert degraded.family == "dragonfly" and len(degraded.failed.links) == 1
    switch = parse_topology(f"{spec}@fail={a}")
    assert len(switch.failed.switches) == 1
    code, out, err = run("topology", f"{spec}@fail={a}-nosuch")
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_routes_record_the_files_digest_and_refuse_a_changed_file(tmp_path):
    source = router_multigraph(parse_topology("dragonfly:2,4,2").network())
    path = tmp_path / "f.txt"
    write_fabric(path, source, seed=6)
    routes = tmp_path / "r.json"
    assert run("route", f"fabric:{path}", "--traffic", "a2a-lin", "--phase", "0-1", "--router", "minimal",
               "--out", routes)[0] == 0
    import hashlib
    doc = json.loads(routes.read_text())
    assert doc["topology"]["file_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert run("check", routes)[0] == 0
    path.write_text(path.read_text() + "\n# edited\n")  # the same network, another file: refused all the same
    for command in (("check", routes), ("tables", routes, "--out", tmp_path / "t"), ("vls", routes, "--out",
                                                                                     tmp_path / "v.json")):
        code, out, err = run(*command)
        assert code in (1, 2) and "changed since these routes were made" in out + err, command
        assert not (tmp_path / "t").exists() and not (tmp_path / "v.json").exists()


def test_a_kautz_graph_with_a_one_way_link_missing_is_recognized(tmp_path):
    words = [(x, y) for x in range(4) for y in range(4) if x != y]
    links = [{"source": f"{x}{y}", "target": f"{y}{z}"} for x, y in words for z in range(4) if z != y]
    del links[5]
    document = {"directed": True, "multigraph": False, "graph": {},
                "nodes": [{"id": f"{x}{y}", "terminals": 1} for x, y in words], "links": links}
    (tmp_path / "k.json").write_text(json.dumps(document))
    topology = parse_topology(f"graph:{tmp_path / 'k.json'}")
    assert topology.family == "kautz" and topology.missing() == "1 missing link"
    assert topology.network().num_channels == topology.base.network().num_channels - 1


def test_a_missing_terminal_keeps_its_routers_ports_and_tables_name_no_port_beyond_them(tmp_path):
    """A fabric missing one CA: its dead channel takes the port the CA's cable left (within the switch's ports),
    so forwarding tables never send a LID to a port the switch does not have."""
    source = router_multigraph(parse_topology("torus:6,6:p=2").network())
    source.nodes[sorted(source.nodes)[0]]["terminals"] = 1
    write_fabric(tmp_path / "f.txt", source, seed=8)
    topology = parse_topology(f"fabric:{tmp_path / 'f.txt'}")
    assert topology.family == "torus" and topology.missing() == "1 missing terminal"
    assert dict(topology.facts())["recognized as"].endswith("less the terminals missing")
    network = topology.network()
    highest: dict[int, int] = {}
    for node, port in zip(network.channel_src.tolist(), network.channel_src_port.tolist()):
        highest[node] = max(highest.get(node, 0), port)
    cabled = parse_topology(f"fabric:{tmp_path / 'f.txt'}:recognize=no").network()
    by_name = {name: i for i, name in enumerate(cabled.node_names)}
    for node in range(network.num_terminals, network.num_nodes):
        ports = cabled.channel_src_port[cabled.channel_src == by_name[network.node_names[node]]]
        assert highest[node] <= max(int(ports.max()), len(ports))


def test_a_routes_files_digest_must_be_one_and_must_fit_its_spec(tmp_path):
    source = router_multigraph(parse_topology("dragonfly:2,4,2").network())
    write_fabric(tmp_path / "f.txt", source, seed=6)
    routes = tmp_path / "r.json"
    assert run("route", f"fabric:{tmp_path / 'f.txt'}", "--traffic", "a2a-lin", "--phase", "0", "--router", "minimal",
               "--out", routes)[0] == 0
    doc = json.loads(routes.read_text())
    for change, message in ((lambda d: d["topology"].pop("file_sha256"), "record no topology.file_sha256"),
                            (lambda d: d["topology"].update(file_sha256="abc"), "not a SHA-256 digest")):
        tampered = json.loads(json.dumps(doc))
        change(tampered)
        (tmp_path / "t.json").write_text(json.dumps(tampered))
        code, out, err = run("check", tmp_path / "t.json")
        assert code in (1, 2) and message in out + err


def test_fabric_names_that_fail_could_not_name_fall_back_to_ids(tmp_path):
    source = router_multigraph(parse_topology("dragonfly:1,2,1").network())
    write_fabric(tmp_path / "f.txt", source, seed=1)
    body = (tmp_path / "f.txt").read_text()
    first = body.split('# "', 1)[1].split('"', 1)[0]
    (tmp_path / "f.txt").write_text(body.replace(f'"{first}"', '"s+1"'))
    names = parse_topology(f"fabric:{tmp_path / 'f.txt'}:recognize=no").network().node_names
    assert "s+1" not in names


def test_a_recognized_fat_tree_says_so_under_its_layer_table(tmp_path):
    write_fabric(tmp_path / "f.txt", independent_fat_tree(4), seed=2)
    code, out, err = run("topology", f"fabric:{tmp_path / 'f.txt'}")
    assert code == 0 and "layer" in out and "recognized as  xgft:2:4,4:1,2" in out
    code, out, err = run("topology", "xgft:2:4,4:1,2")
    assert code == 0 and "recognized as" not in out


@pytest.mark.parametrize("spec", ["hyperx:3,3:p=2:trunk=2", "torus:2,4:p=2", "dragonfly:1,4,2:groups=3"])
def test_both_channels_of_a_family_link_are_one_cable(tmp_path, spec):
    """Parallel cables: the family's link i (channels 2N + 2i and 2N + 2i + 1) is one cable of the file, its two
    directions with swapped ports."""
    source = router_multigraph(parse_topology(spec).network())
    write_fabric(tmp_path / "f.txt", source, seed=12)
    network = parse_topology(f"fabric:{tmp_path / 'f.txt'}").network()
    start = 2 * network.num_terminals
    forward, backward = slice(start, None, 2), slice(start + 1, None, 2)
    assert (network.channel_src[forward] == network.channel_dst[backward]).all()
    assert (network.channel_src_port[forward] == network.channel_dst_port[backward]).all()
    assert (network.channel_dst_port[forward] == network.channel_src_port[backward]).all()
