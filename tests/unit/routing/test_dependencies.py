"""The channel dependency graph (synth.routing.dependencies) against networkx, and `synth check`'s line
about it: acyclic for up*/down* routes on an XGFT, a named cycle for minimal routes on a ring."""

from __future__ import annotations

import itertools
import json

import networkx as nx
import pytest
import numpy as np
from hypothesis import given, settings, strategies as st

from synth.routing.dependencies import DependencyGraph


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 12).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.lists(st.integers(0, n - 1), min_size=0, max_size=6), min_size=0, max_size=12))))
def test_cycle_agrees_with_networkx(case):
    n, paths = case
    paths = [[c for i, c in enumerate(p) if i == 0 or c != p[i - 1]] for p in paths]  # no channel twice in a row
    graph = DependencyGraph(n)
    for chunk in (paths[: len(paths) // 2], paths[len(paths) // 2:]):  # added in two calls, as phases are
        flat = [c for p in chunk for c in p]
        graph.add_paths(np.array(flat, dtype=np.int64), np.array([len(p) for p in chunk], dtype=np.int64))
    reference = nx.DiGraph()
    reference.add_nodes_from(range(n))
    for p in paths:
        reference.add_edges_from(zip(p, p[1:]))
    cycle = graph.cycle()
    assert (cycle is None) == nx.is_directed_acyclic_graph(reference)
    if cycle is not None:
        assert len(cycle) >= 2 and len(set(cycle)) == len(cycle)
        assert all(reference.has_edge(a, b) for a, b in zip(cycle, cycle[1:] + cycle[:1]))


def _routed(run, tmp_path, spec, router):
    target = tmp_path / "r.json"
    code, _, err = run("route", spec, "--traffic", "a2a-lin", "--router", router, "--quiet", "--out", target)
    assert code == 0, err
    code, out, err = run("check", target)
    assert code == 0, out + err
    return json.loads(target.read_text()), [line for line in out.splitlines() if line.startswith("channel dependencies:")]


def test_check_names_a_cycle_of_minimal_routes_on_a_ring(run, tmp_path):
    doc, lines = _routed(run, tmp_path, "torus:6", "minimal")
    assert len(lines) == 1 and "a cycle, so the routes can deadlock without virtual lanes: channel" in lines[0]
    first = int(lines[0].split("virtual lanes: channel ")[1].split()[0])
    used = {c for p in doc["phases"] for path in p["paths"] for c in path}
    assert first in used


def test_check_finds_up_down_routes_acyclic(run, tmp_path):
    _, lines = _routed(run, tmp_path, "xgft:2:4,4:1,2", "dmodk")
    assert lines == ["channel dependencies: acyclic: the routes cannot deadlock, even without virtual lanes"]


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 10).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.lists(st.integers(0, n - 1), min_size=1, max_size=6), min_size=1, max_size=15))))
def test_every_lane_is_acyclic(case):
    from synth.routing.lanes import assign_lanes

    n, paths = case
    paths = [list(dict.fromkeys(p)) for p in paths]  # a path through a channel twice is refused (test below)
    flat = np.array([c for p in paths for c in p], dtype=np.int64)
    lanes = assign_lanes(flat, np.array([len(p) for p in paths], dtype=np.int64), n, max_lanes=15)
    assert len(lanes) == len(paths)
    for lane in set(lanes.tolist()):
        graph = nx.DiGraph()
        for p, on in zip(paths, lanes.tolist()):
            if on == lane:
                graph.add_edges_from(zip(p, p[1:]))
        assert nx.is_directed_acyclic_graph(graph)
    if nx.is_directed_acyclic_graph(nx.DiGraph([e for p in paths for e in zip(p, p[1:])])):
        assert set(lanes.tolist()) == {0}  # nothing to break: one lane


def test_a_path_through_a_channel_twice_is_refused():
    from synth.core.errors import SynthError
    from synth.routing.lanes import assign_lanes

    with pytest.raises(SynthError, match="path 1 crosses channel 3 twice"):
        assign_lanes(np.array([0, 1, 3, 2, 3]), np.array([2, 3]), 4, max_lanes=8)


def test_vls_command_writes_lanes_that_check_verifies(run, tmp_path):
    routes, laned = tmp_path / "r.json", tmp_path / "v.json"
    assert run("route", "torus:6", "--traffic", "a2a-lin", "--router", "minimal", "--quiet", "--out", routes)[0] == 0
    code, out, err = run("vls", routes, "--out", laned)
    assert code == 0 and err == "" and "2 virtual lanes" in out, out + err
    code, out, err = run("vls", routes, "--out", tmp_path / "exact.json", "--exact")
    assert code == 0 and "2 virtual lanes" in out and "the least number, proven by CP-SAT" in out, out + err
    doc = json.loads(laned.read_text())
    assert all(len(p["vls"]) == len(p["paths"]) for p in doc["phases"])
    code, out, _ = run("check", laned)
    assert code == 0 and "with the recorded virtual lanes (2 used: VL0, VL1) every lane is acyclic" in out
    for p in doc["phases"]:  # everything back on one lane: the ring's cycle returns
        p["vls"] = [0] * len(p["vls"])
    tampered = tmp_path / "t.json"
    tampered.write_text(json.dumps(doc))
    code, out, _ = run("check", tampered)
    assert code == 1 and out.startswith("FAIL: virtual lane 0: its paths' channel dependencies have a cycle")
    del doc["phases"][0]["vls"]
    tampered.write_text(json.dumps(doc))
    code, out, _ = run("check", tampered)
    assert code == 1 and "all or none must" in out.splitlines()[0]


@pytest.mark.parametrize("extra, message", [(["--max-vls", "1"], "the routes need 2 virtual lanes (the lane heuristics"),
                                            (["--max-vls", "1", "--exact"], "the routes need 2 virtual lanes (the least number, proven"),
                                            (["--max-vls", "16"], "--max-vls must be between 1 and 15")])
def test_vls_refuses(run, tmp_path, extra, message):
    routes = tmp_path / "r.json"
    assert run("route", "torus:6", "--traffic", "a2a-lin", "--router", "minimal", "--quiet", "--out", routes)[0] == 0
    code, out, err = run("vls", routes, "--out", tmp_path / "v.json", *extra)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and message in err, err
    assert not (tmp_path / "v.json").exists()


def _brute_force_lanes(paths: list[list[int]]) -> int:
    for count in range(1, len(paths) + 1):
        for assignment in itertools.product(range(count), repeat=len(paths)):
            graphs = [nx.DiGraph() for _ in range(count)]
            for path, lane in zip(paths, assignment):
                graphs[lane].add_edges_from(zip(path, path[1:]))
            if all(nx.is_directed_acyclic_graph(g) for g in graphs):
                return count
    return 0


@settings(max_examples=25, deadline=None)
@given(st.lists(st.permutations(range(5)).map(lambda p: p[:3]), min_size=1, max_size=6))
def test_exact_lanes_equal_a_brute_force_minimum(paths):
    from synth.routing.lanes import exact_lanes

    paths = [list(p) for p in paths]
    flat = np.array([c for p in paths for c in p], dtype=np.int64)
    lanes, proven = exact_lanes(flat, np.array([len(p) for p in paths]), 5, max_lanes=15, time_limit=30)
    assert proven
    assert int(lanes.max()) + 1 == _brute_force_lanes(paths)
    for lane in set(lanes.tolist()):
        graph = nx.DiGraph([e for p, on in zip(paths, lanes.tolist()) if on == lane for e in zip(p, p[1:])])
        assert nx.is_directed_acyclic_graph(graph)


def test_vls_contract_unwritable_out_and_identical_reruns(run, tmp_path):
    routes = tmp_path / "r.json"
    assert run("route", "torus:6", "--traffic", "a2a-lin", "--router", "minimal", "--quiet", "--out", routes)[0] == 0
    (tmp_path / "f").write_text("a file where a directory goes")
    code, out, err = run("vls", routes, "--out", tmp_path / "f" / "v.json")
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "cannot write" in err, err
    assert run("vls", routes, "--out", routes)[0] == 2  # never over its own input
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert run("vls", routes, "--out", first)[0] == 0 and run("vls", routes, "--out", second)[0] == 0
    assert first.read_bytes() == second.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json", "f", "r.json"]


def test_route_vls_writes_the_same_lanes_as_synth_vls(run, tmp_path):
    routes, laned, direct = tmp_path / "r.json", tmp_path / "v.json", tmp_path / "d.json"
    argv = ["route", "torus:6", "--traffic", "a2a-lin", "--router", "minimal", "--quiet"]
    assert run(*argv, "--out", routes)[0] == 0
    assert run("vls", routes, "--out", laned)[0] == 0
    code, out, err = run(*argv, "--out", direct, "--vls", "2")
    assert code == 0 and "lanes     " in out and "2 virtual lanes" in out, out + err
    assert direct.read_bytes() == laned.read_bytes()  # one lane assignment, whichever command makes it
    code, out, _ = run("check", direct)
    assert code == 0 and "every lane is acyclic" in out


@pytest.mark.parametrize("extra, message", [(["--vls", "1"], "the routes need 2 virtual lanes (the lane heuristics, first fit "
                                             "and DFSSSP's layering: an upper bound on the least number); the fabric "
                                             "has 1 (--vls)"),
                                            (["--vls", "0"], "--vls must be between 1 and 15")])
def test_route_vls_refuses_without_writing(run, tmp_path, extra, message):
    out_file = tmp_path / "r.json"
    code, out, err = run("route", "torus:6", "--traffic", "a2a-lin", "--router", "minimal", "--quiet", "--out", out_file,
                         *extra)
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err
    assert not out_file.exists()


def test_route_vls_needs_out(run):
    code, out, err = run("route", "torus:6", "--traffic", "a2a-lin", "--router", "minimal", "--vls", "2")
    assert code == 2 and out == "" and "--vls records virtual lanes in the routes file: add --out FILE" in err
