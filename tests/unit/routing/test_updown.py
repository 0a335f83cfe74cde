"""The up*/down* router (synth.routing.updown), verified from the definition with networkx.

The reference (tests/updown_reference.py) rebuilds everything from the Network's channel arrays alone: the router graph,
one root per connected part (least eccentricity, then the lowest router index: the rule the module
documents), BFS ranks, a link up when it goes to a lower (rank, index), and the shortest legal
length as the best turning router t of a shortest all-up path a ~> t and a shortest all-down path
t ~> b (another formulation than the router's state search)."""

from __future__ import annotations

import json
import re

import networkx as nx
import numpy as np
import pytest

from updown_reference import Reference, all_pairs
from synth.core.errors import SynthError
from synth.routing.minimal import minimal
from synth.routing.updown import updown, updown_view
from synth.topology import parse_topology

FAMILIES = ["dragonfly:2,4,2", "hyperx:3,3", "torus:4,4", "slimfly:5", "mlfm:3", "oft:3", "2dfc:3,4",
            "dragonfly:2,4,2@fail=random:5:11", "dragonfly:2,4,2@fail=g1r2", "torus:6@fail=r0-r1+r3-r4"]


@pytest.mark.parametrize("spec", FAMILIES)
def test_every_reachable_pair_gets_a_shortest_legal_path_of_the_documented_roots(spec):
    topology = parse_topology(spec)
    ref = Reference(topology)
    view = updown_view(topology)
    assert sorted(view.roots.tolist()) == sorted(ref.roots)
    s, d = all_pairs(ref.n)
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
    s, d = all_pairs(ref.n)
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
    s, d = all_pairs(topology.num_terminals)
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