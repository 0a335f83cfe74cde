"""Degraded networks (`--fail`, synth.topology.degraded), checked independently.

The failed links are resolved here from the item names on the intact network's JSON; the
degraded graph is that network without them (networkx). Every router of every family routes the
degraded network, its paths use no failed link (compared by node pairs, not channel ids), the
flows it leaves out are exactly those whose ends are in different components of the degraded
graph (or cut off), and `synth check` agrees (OpenSM on degraded fabrics: tests/integration/test_opensm_direct.py).
"""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import assert_user_error
from synth.routing.registry import ROUTERS
from synth.topology import parse_topology
from synth.traffic.patterns import parse_pattern


def intact_graph(spec: str) -> tuple[dict, nx.MultiGraph]:
    doc = parse_topology(spec).network().to_json_dict()
    graph = nx.MultiGraph()
    graph.add_nodes_from(range(len(doc["nodes"])))
    for ch in doc["channels"]:
        if ch["src"] < ch["dst"]:  # one edge per link (its two channels)
            graph.add_edge(ch["src"], ch["dst"])
    return doc, graph


def degraded(spec: str, items: list[str], random_links: list[tuple[str, str]] = ()) -> tuple[dict, nx.MultiGraph, set]:
    """The degraded graph from the definition: named links removed, a named switch loses every link
    (its terminals are cut off), a terminal's named link cuts it off."""
    doc, graph = intact_graph(spec)
    index = {node["name"]: node["id"] for node in doc["nodes"]}
    n = doc["terminals"]
    cut = set()
    for item in items:
        names = item.split("-")
        if len(names) == 1:
            switch = index[names[0]]
            cut |= {t for t in graph.neighbors(switch) if t < n}
            graph.remove_edges_from(list(graph.edges(switch)))
        else:
            u, v = index[names[0]], index[names[1]]
            cut |= {x for x in (u, v) if x < n}
            while graph.has_edge(u, v):
                graph.remove_edge(u, v)
    for a, b in random_links:
        while graph.has_edge(index[a], index[b]):
            graph.remove_edge(index[a], index[b])
    for t in cut:
        graph.remove_edges_from(list(graph.edges(t)))
    return doc, graph, cut


CASES = [
    ("dragonfly:2,4,2", ["g0r0-g0r1", "g1r2", "g0r2-g5r0"]),
    ("dragonfly:2,4,2", ["t5-g0r2", "g2r0-g2r3"]),
    ("slimfly:5", ["a.0.0", "a.0.1-b.0.1"]),
    ("hyperx:3,4", ["r0.0-r0.1", "r1.1"]),
    ("torus:4,4", ["r0.0-r0.1", "r0.0-r0.3", "r0.0-r1.0", "r0.0-r3.0"]),  # r0.0 keeps its terminals, loses every link
]


def routers_for(spec: str) -> list[str]:
    topology = parse_topology(spec)
    return [spec.name for spec in ROUTERS.applicable(topology)]


def _node_names(doc):
    return [node["name"] for node in doc["nodes"]]


@pytest.mark.parametrize("spec,items", CASES)
def test_every_router_avoids_failed_links_and_drops_exactly_the_cut_pairs(run, tmp_path, spec, items):
    doc, graph, cut = degraded(spec, items)
    names = _node_names(doc)
    component = {node: k for k, nodes in enumerate(nx.connected_components(graph)) for node in nodes}
    topology = parse_topology(spec)
    workload = parse_pattern("randperm:3", doc["terminals"], topology.hierarchy(), topology=topology)
    flows = workload.flows(0)
    expected_dropped = {(s, d) for s, d in zip(flows.src.tolist(), flows.dst.tolist())
                        if s != d and (component[s] != component[d] or s in cut or d in cut)}
    for router in routers_for(spec):
        out = tmp_path / f"{router}.json"
        budget = ["--time-limit", "2"] if router in ("paths", "layered", "monolithic") else []  # (a solver option)
        code, text, err = run("route", spec, "--fail", "+".join(items), "--traffic", "randperm:3", "--router", router,
                              "--out", out, "--quiet", *budget)
        assert code == 0, err
        routes = json.loads(out.read_text())
        assert routes["topology"]["spec"].startswith(parse_topology(spec).spec + "@fail=")
        network = parse_topology(routes["topology"]["spec"]).network()
        phase = routes["phases"][0]
        routed = {(s, d) for s, d, _ in phase["flows"]}
        dropped = {(s, d) for s, d in zip(flows.src.tolist(), flows.dst.tolist())} - routed
        assert {p for p in dropped if p[0] != p[1]} == expected_dropped, router
        assert phase["unreachable"] == len(expected_dropped)
        for path in phase["paths"]:
            for c in path:
                u, v = int(network.channel_src[c]), int(network.channel_dst[c])
                assert graph.has_edge(u, v), f"{router} uses {names[u]}-{names[v]}, which failed"
        assert run("check", out)[0] == 0, router


def test_random_failures_are_seeded_and_named_in_the_spec(run, tmp_path):
    first = parse_topology("dragonfly:2,4,2@fail=random:5:11")
    second = parse_topology("dragonfly:2,4,2@fail=random:5:11")
    assert first.spec == "dragonfly:2,4,2@fail=random:5:11"
    assert np.array_equal(first.failed.links, second.failed.links) and len(first.failed.links) == 5
    assert not np.array_equal(first.failed.links, parse_topology("dragonfly:2,4,2@fail=random:5:12").failed.links)
    names = first.base.network().node_names
    links = [(names[u], names[v]) for u, v in first.failed.links.tolist()]
    doc, graph, _ = degraded("dragonfly:2,4,2", [], links)
    assert first.network().num_channels == 2 * graph.number_of_edges()
    assert all(u >= doc["terminals"] for u, _ in first.failed.links.tolist())  # router-to-router links only
    out = tmp_path / "r.json"
    assert run("route", "dragonfly:2,4,2", "--fail", "random:5:11", "--traffic", "a2a-lin", "--phase", "0-3",
               "--router", "ugal", "--out", out, "--quiet")[0] == 0
    again = tmp_path / "again.json"
    assert run("route", "dragonfly:2,4,2@fail=random:5:11", "--traffic", "a2a-lin", "--phase", "0-3",
               "--router", "ugal", "--out", again, "--quiet")[0] == 0
    assert out.read_bytes() == again.read_bytes()


def test_a_dragonfly_that_lost_a_group_pair_routes_through_other_groups(run, tmp_path):
    """g0 and g1 of dragonfly:2,4,2 share one global link: without it, minimal in the dragonfly
    sense (one global hop) cannot join them, so minimal routes over the graph's shortest paths."""
    topology = parse_topology("dragonfly:2,4,2")
    names = topology.network().node_names
    channel = next(c for c in range(topology.network().num_channels)
                   if names[topology.network().channel_src[c]].startswith("g0")
                   and names[topology.network().channel_dst[c]].startswith("g1"))
    link = f"{names[topology.network().channel_src[channel]]}-{names[topology.network().channel_dst[channel]]}"
    out = tmp_path / "r.json"
    code, text, _ = run("route", "dragonfly:2,4,2", "--fail", link, "--traffic", "shift:8", "--router", "minimal",
                        "--out", out, "--quiet")
    assert code == 0 and "none: every flow" in text
    assert run("check", out)[0] == 0


def test_check_rejects_a_wrong_unreachable_count(run, tmp_path):
    out = tmp_path / "r.json"
    assert run("route", "dragonfly:2,4,2", "--fail", "g1r2", "--traffic", "randperm:1", "--router", "minimal",
               "--out", out, "--quiet")[0] == 0
    doc = json.loads(out.read_text())
    doc["phases"][0]["unreachable"] += 1
    out.write_text(json.dumps(doc))
    code, text, _ = run("check", out)
    assert code == 1 and "unreachable flows recorded" in text


def test_console_reports_what_became_unreachable(run):
    code, text, _ = run("route", "dragonfly:2,4,2", "--fail", "g1r2", "--traffic", "randperm:1", "--router", "minimal",
                        "--quiet")
    assert code == 0
    line = next(line for line in text.splitlines() if line.startswith("unreachable"))
    assert "2 terminals cut off" in line and "cannot be delivered" in line
    code, text, _ = run("topology", "dragonfly:2,4,2", "--fail", "g1r2")
    assert "failed switches" in text and "g1r2" in text


@pytest.mark.parametrize("argv,mention", [
    (["--fail", "g0r0-g9r9"], "g9r9"),
    (["--fail", "g0r0-g3r3"], "no link joins"),
    (["--fail", "t3"], "terminal"),
    (["--fail", "random:1000:1"], "router-to-router links"),
    (["--fail", "a-b-c"], "A-B"),
    (["--fail", ""], "fail"),
])
def test_bad_failures_are_one_line(run, argv, mention):
    assert_user_error(run("route", "dragonfly:2,4,2", *argv, "--traffic", "randperm:1", "--router", "minimal"), mention)


def test_xgft_refuses_failures(run):
    assert_user_error(run("route", "xgft:2:4,4:1,2", "--fail", "random:1:1", "--traffic", "randperm:1",
                          "--router", "dmodk"), "direct networks")


def test_layered_routes_around_failed_local_links_or_refuses_in_one_line(run, tmp_path):
    """With local links of a group failed, layered uses detours (two local hops) where they exist,
    and refuses, at once and in one line, a message its path space cannot hold (a router that lost
    every local link, with a message to its own group); it never searches without end."""
    out = tmp_path / "r.json"
    code, _, err = run("route", "dragonfly:2,4,2", "--fail", "g0r0-g0r1+g0r0-g0r2+g0r1-g0r3", "--traffic", "shift:16",
                       "--router", "layered", "--time-limit", "2", "--out", out, "--quiet")
    assert code == 0, err
    assert run("check", out)[0] == 0
    assert_user_error(run("route", "dragonfly:2,4,2", "--fail", "g0r0-g0r1+g0r0-g0r2+g0r0-g0r3", "--traffic", "shift:2",
                          "--router", "layered", "--time-limit", "2"), "not joined")


def test_cut_off_terminals_do_not_even_reach_themselves(run, tmp_path):
    out = tmp_path / "r.json"
    assert run("route", "dragonfly:2,4,2", "--fail", "g1r2", "--traffic", "a2a-lin", "--phase", "0", "--router",
               "minimal", "--out", out, "--quiet")[0] == 0
    phase = json.loads(out.read_text())["phases"][0]
    assert phase["unreachable"] == 2 and len(phase["flows"]) == 70  # t12 and t13 sit on g1r2


def test_one_link_has_one_name():
    assert parse_topology("dragonfly:2,4,2@fail=g0r1-g0r0+g0r0-g0r1").spec == "dragonfly:2,4,2@fail=g0r0-g0r1"


def test_closed_form_models_refuse_failures_and_cut_terminals_are_named(run):
    assert_user_error(run("model", "uniform", "dragonfly:2,4,2", "--fail", "g0r0"), "intact network")
    assert_user_error(run("model", "stencil", "dragonfly:2,4,2", "--fail", "g0r0", "--alpha", "8x8x8",
                          "--tasks", "64"), "intact network")
    code, text, _ = run("route", "dragonfly:2,4,2", "--fail", "g0r0", "--traffic", "randperm:1", "--router", "minimal",
                        "--quiet")
    line = next(line for line in text.splitlines() if line.startswith("unreachable"))
    assert "cut off from their router: t0, t1" in line
    assert "(intact network)" in run("topology", "dragonfly:2,4,2", "--fail", "g0r0")[1]


@settings(max_examples=12, deadline=None)
@given(failed=st.integers(1, 6), seed=st.integers(0, 2 ** 63 - 1),
       router=st.sampled_from(["minimal", "valiant", "paths"]), pattern=st.sampled_from(["a2a-lin", "randperm:3"]))
def test_synth_never_writes_a_file_its_check_or_tables_refuse(tmp_path_factory, failed, seed, router, pattern):
    """Any number of failed links, up to every router link of dragonfly(1,2,1) (a fully disconnected
    network: the issue's case was --fail random:90:1 on dragonfly(2,4,2)): the routes file synth
    writes passes its own check, and its tables are made."""
    import contextlib
    import io

    from synth.cli import main

    where = tmp_path_factory.mktemp("faults")
    routes = where / "r.json"
    quiet = contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO())
    spec = "dragonfly:1,2,1"
    with quiet[0], quiet[1]:
        code = main(["route", spec, "--fail", f"random:{failed}:{seed}", "--traffic", pattern, "--router", router,
                     "--out", str(routes), "--quiet"])
        if code == 2:  # a router that refuses the degraded network says so before writing anything
            assert not routes.exists()
            return
        assert code == 0
        assert main(["check", str(routes)]) == 0
    # Tables refuse one kind of path only: one through a switch twice, which Valiant's two segments can be around a
    # failure and which forwarding by destination cannot express; then in one line, writing nothing
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["tables", str(routes), "--out", str(where / "tables")])
    doc = json.loads(routes.read_text())
    network = parse_topology(doc["topology"]["spec"]).network()
    twice = any(len(set(nodes)) < len(nodes) for phase in doc["phases"] for path in phase["paths"]
                for nodes in [[int(network.channel_src[c]) for c in path]])
    assert code == (2 if twice else 0), err.getvalue()
    if twice:
        assert "twice" in err.getvalue() and len(err.getvalue().strip().splitlines()) == 1
        assert not (where / "tables").exists()
