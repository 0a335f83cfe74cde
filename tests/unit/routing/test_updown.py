"""The up*/down* router (synth.routing.updown), verified from the definition with networkx.

The reference below rebuilds everything from the Network's channel arrays alone: the router graph,
one root per connected part (least eccentricity, then the lowest router index: the rule the module
documents), BFS ranks, a link up when it goes to a lower (rank, index), and the shortest legal
length as the best turning router t of a shortest all-up path a ~> t and a shortest all-down path
t ~> b (another formulation than the router's state search)."""

from __future__ import annotations

import json
import math
import re
import tempfile
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from synth.core.errors import SynthError
from synth.routing.minimal import minimal
from synth.routing.updown import updown, updown_view
from synth.topology import parse_topology

FAMILIES = ["dragonfly:2,4,2", "hyperx:3,3", "torus:4,4", "slimfly:5", "mlfm:3", "oft:3", "2dfc:3,4",
            "dragonfly:2,4,2@fail=random:5:11", "dragonfly:2,4,2@fail=g1r2", "torus:6@fail=r0-r1+r3-r4"]


class Reference:
    """Roots, ranks, directions and shortest legal lengths of a network, from its channels."""

    def __init__(self, topology):
        net = self.net = topology.network()
        n = self.n = net.num_terminals
        src, dst = net.channel_src.tolist(), net.channel_dst.tolist()
        routers = range(net.num_nodes - n)
        self.router_of = {s: d - n for s, d in zip(src, dst) if s < n}
        links = [(s - n, d - n) for s, d in zip(src, dst) if s >= n and d >= n]
        graph = nx.Graph()
        graph.add_nodes_from(routers)
        graph.add_edges_from(links)
        self.rank, self.roots, self.part = {}, [], {}
        for number, part in enumerate(nx.connected_components(graph)):
            sub = graph.subgraph(part)
            eccentricity = nx.eccentricity(sub)
            root = min(part, key=lambda v: (eccentricity[v], v))
            self.roots.append(root)
            self.rank.update(nx.single_source_shortest_path_length(sub, root))
            self.part.update({v: number for v in part})
        ups, downs = nx.DiGraph(), nx.DiGraph()
        ups.add_nodes_from(routers)
        downs.add_nodes_from(routers)
        for u, v in links:
            (ups if self.is_up(u, v) else downs).add_edge(u, v)
        up_length = dict(nx.all_pairs_shortest_path_length(ups))
        down_length = dict(nx.all_pairs_shortest_path_length(downs))
        self.legal_length = {(a, b): min((up_length[a][t] + down_length[t][b] for t in up_length[a] if b in down_length[t]),
                                         default=math.inf) for a in routers for b in routers}

    def is_up(self, u: int, v: int) -> bool:
        return (self.rank[v], v) < (self.rank[u], u)

    def reachable(self, s: int, d: int) -> bool:
        failed = set() if self.net.failed_nodes is None else set(self.net.failed_nodes.tolist())
        return s not in failed and d not in failed and self.part[self.router_of[s]] == self.part[self.router_of[d]]

    def problem(self, s: int, d: int, channels: list[int]) -> str | None:
        """Why `channels` is not a shortest legal path from terminal s to terminal d (None if it is)."""
        net, n = self.net, self.n
        if s == d:
            return None if not channels else "a path to itself"
        if net.channel_src[channels[0]] != s or net.channel_dst[channels[-1]] != d:
            return "wrong ends"
        if any(net.channel_dst[a] != net.channel_src[b] for a, b in zip(channels, channels[1:])):
            return "not contiguous"
        routers = [int(net.channel_dst[c]) - n for c in channels[:-1]]
        if min(routers) < 0:
            return "through a terminal"
        gone_down = False
        for u, v in zip(routers, routers[1:]):
            up = self.is_up(u, v)
            if up and gone_down:
                return "up after down"
            gone_down |= not up
        if len(routers) - 1 != self.legal_length[routers[0], routers[-1]]:
            return f"{len(routers) - 1} hops, the shortest legal path has {self.legal_length[routers[0], routers[-1]]}"
        return None


def _all_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    s, d = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return s.ravel(), d.ravel()


@pytest.mark.parametrize("spec", FAMILIES)
def test_every_reachable_pair_gets_a_shortest_legal_path_of_the_documented_roots(spec):
    topology = parse_topology(spec)
    ref = Reference(topology)
    view = updown_view(topology)
    assert sorted(view.roots.tolist()) == sorted(ref.roots)
    s, d = _all_pairs(ref.n)
    reachable = np.array([ref.reachable(a, b) for a, b in zip(s.tolist(), d.tolist())])
    s, d = s[reachable], d[reachable]
    paths = updown(topology, s, d)
    assert paths.num_flows == len(s)
    problems = [(a, b, ref.problem(a, b, paths.path(k).tolist())) for k, (a, b) in enumerate(zip(s.tolist(), d.tolist()))]
    assert [p for p in problems if p[2] is not None] == []
    # the same paths again, flow by flow in another order: a pair's path depends on the pair alone
    again = updown(topology, s[::-1], d[::-1])
    assert all(np.array_equal(again.path(len(s) - 1 - k), paths.path(k)) for k in range(0, len(s), 7))


def test_unreachable_pairs_and_directed_networks_are_one_line():
    topology = parse_topology("torus:6@fail=r0-r1+r3-r4")  # two parts: r1 r2 r3 and r4 r5 r0
    with pytest.raises(SynthError, match="cannot be reached from router r1 by an up\\*/down\\* path"):
        updown(topology, np.array([1]), np.array([4]))
    assert len(updown_view(topology).roots) == 2


def test_up_down_avoids_some_minimal_paths_on_a_dragonfly():
    """Up*/down* is a restriction: on a dragonfly some minimal paths (one global hop) turn up after
    going down, and the router then takes a longer legal one (elsewhere a legal path through a
    third group can be shorter than the dragonfly's minimal one)."""
    topology = parse_topology("dragonfly:2,4,2")
    ref = Reference(topology)
    s, d = _all_pairs(ref.n)
    shortest = minimal(topology, s, d)
    turning = [k for k in range(len(s)) if ref.problem(int(s[k]), int(d[k]), shortest.path(k).tolist()) == "up after down"]
    assert turning
    assert (updown(topology, s, d).lengths() > shortest.lengths()).any()


def _dependencies_acyclic(network, doc) -> bool:
    """Channel dependency graph of every path of a routes file, built here with networkx."""
    graph = nx.DiGraph()
    for phase in doc["phases"]:
        for path in phase["paths"]:
            graph.add_edges_from(zip(path, path[1:]))
    return nx.is_directed_acyclic_graph(graph)


@pytest.mark.parametrize("spec, fail", [("dragonfly:2,4,2", None), ("slimfly:5", None), ("hyperx:3,3", None),
                                        ("dragonfly:2,4,2", "random:5:11")])
def test_route_then_check_passes_and_reports_acyclic_dependencies(run, tmp_path, spec, fail):
    routes = tmp_path / "routes.json"
    extra = ("--fail", fail) if fail else ()
    code, out, err = run("route", spec, *extra, "--router", "updown", "--traffic", "a2a-lin", "--out", routes, "--quiet")
    assert code == 0, out + err
    code, out, err = run("check", routes)
    assert code == 0, out + err
    assert "acyclic: the routes cannot deadlock, even without virtual lanes" in out
    assert "shortest up*/down*" in out
    doc = json.loads(routes.read_text())
    assert doc["router"] == "updown"
    assert _dependencies_acyclic(parse_topology(doc["topology"]["spec"]).network(), doc)


def test_a_path_that_breaks_the_up_down_rule_fails_check_named(run, tmp_path):
    spec = "dragonfly:2,4,2"
    topology = parse_topology(spec)
    ref = Reference(topology)
    routes = tmp_path / "routes.json"
    code, out, err = run("route", spec, "--router", "updown", "--traffic", "a2a-lin", "--phase", "1-12", "--out", routes,
                         "--quiet")
    assert code == 0, out + err
    doc = json.loads(routes.read_text())
    for phase in doc["phases"]:  # the first flow whose minimal path turns up after going down
        flows = np.array(phase["flows"])
        shortest = minimal(topology, flows[:, 0], flows[:, 1])
        bad = [k for k in range(len(flows)) if ref.problem(int(flows[k, 0]), int(flows[k, 1]),
                                                            shortest.path(k).tolist()) == "up after down"]
        if bad:
            phase["paths"][bad[0]] = shortest.path(bad[0]).tolist()
            break
    else:
        pytest.fail("no minimal path breaks the rule")
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(doc))
    code, out, err = run("check", tampered)
    assert code == 1, out + err
    assert re.search(rf"phase {phase['phase']}, flow {bad[0]}: path is not a shortest up\*/down\* path \(roots g0r0", out), out


def test_report_compares_updown_with_minimal(run, tmp_path):
    target = tmp_path / "r.md"
    code, out, err = run("report", "dragonfly:2,4,2", "--routers", "minimal,updown", "--patterns", "a2a-lin,shift:8",
                         "--out", target, "--quiet")
    assert code == 0, out + err
    text = target.read_text()
    assert re.search(r"^\| updown \| \d+ \|", text, re.M) and re.search(r"^\| minimal \| \d+ \|", text, re.M)


def test_api_routes_with_updown():
    import synth

    routing = synth.route("hyperx:3,3", "a2a-lin", router="updown")
    topology = parse_topology("hyperx:3,3")
    s, d = _all_pairs(topology.num_terminals)
    paths = updown(topology, s, d)
    phase = (d - s) % topology.num_terminals
    loads = np.bincount(paths.keys(phase * topology.network().num_channels),
                        minlength=topology.num_terminals * topology.network().num_channels)
    assert routing.max_contention == int(loads.max())


@pytest.mark.parametrize("spec, says", [("xgft:2:4,4:1,2", "the updown router is for direct networks, not xgft"),
                                        ("kautz:2,3", "updown needs every router link both ways")])
def test_refused_in_one_line(run, spec, says):
    code, out, err = run("route", spec, "--router", "updown", "--traffic", "randperm:1")
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and says in err, err


def test_comparable_to_opensm_updn_given_the_same_root():
    """OpenSM's own updn on ibsim, its roots from a GUID file (-a) holding this router's root (its own
    detection finds none on a dragonfly and falls back to minhop): on dragonfly(2,4,2) every OpenSM
    path has the shortest legal length of the reference, and a2a-lin's contention is within one of
    synth's (measured: 8 and 8, sums over the phases 414 and 414)."""
    from synth.io.switch_tables import render_fabric, render_guid2lid, switch_guids
    from synth.opensm.engines import out_port_matrix
    from synth.opensm.sim import Simulator, find_tools, read_back_tables
    from synth.tables.forwarding import LidPlan, walk_channels

    try:
        tools = find_tools()
    except SynthError as exc:
        pytest.skip(str(exc))
    topology = parse_topology("dragonfly:2,4,2")
    network, ref = topology.network(), Reference(topology)
    n = network.num_terminals
    plan = LidPlan(n, network.num_switches, 0)
    with tempfile.TemporaryDirectory(prefix="synth-updn-") as scratch:
        fabric, roots = Path(scratch) / "fabric.net", Path(scratch) / "roots"
        fabric.write_text(render_fabric(network))
        roots.write_text("".join(f"0x{g:016x}\n" for g in switch_guids(network)[ref.roots].tolist()))
        with Simulator(tools, fabric) as sim:
            cache = sim.dir / "cache-updn-roots"
            cache.mkdir()
            (cache / "guid2lid").write_text(render_guid2lid(network, plan))
            log = cache / "opensm.log"
            sim.run([tools.opensm, "-F", "/dev/null", "-o", "-s", "0", "-e", "-f", str(log), "-D", "0x03",
                     "--dump_files_dir", str(cache), "-R", "updn", "-l", "0", "-a", str(roots)],
                    {"OSM_CACHE_DIR": str(cache), "OSM_TMP_DIR": str(cache)})
            assert "updn tables configured on all switches" in log.read_text(errors="replace")
            out_port = out_port_matrix(network, read_back_tables(sim), plan.max_lid)
    s, d = _all_pairs(n)
    s, d = s[s != d], d[s != d]
    channels, reached = walk_channels(network, out_port, s, d, plan.terminal_base(d))
    assert reached.all()
    theirs = [row[row >= 0].tolist() for row in channels]
    assert all(len(p) - 2 == ref.legal_length[ref.router_of[a], ref.router_of[b]] for p, a, b in
               zip(theirs, s.tolist(), d.tolist()))
    phase = (d - s) % n - 1
    size = (n - 1) * network.num_channels
    opensm = np.bincount(phase[np.repeat(np.arange(len(s)), [len(p) for p in theirs])] * network.num_channels
                         + np.concatenate(theirs), minlength=size).reshape(n - 1, -1).max(axis=1)
    synth_paths = updown(topology, s, d)
    ours = np.bincount(synth_paths.keys(phase * network.num_channels), minlength=size).reshape(n - 1, -1).max(axis=1)
    assert abs(int(ours.max()) - int(opensm.max())) <= 1
    assert abs(int(ours.sum()) - int(opensm.sum())) <= 0.05 * opensm.sum()
