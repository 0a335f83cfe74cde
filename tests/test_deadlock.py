"""The channel dependency graph (synth.verify.deadlock) against networkx, and `synth check`'s line
about it: acyclic for up*/down* routes on an XGFT, a named cycle for minimal routes on a ring."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
from hypothesis import given, settings, strategies as st

from synth.verify.deadlock import DependencyGraph


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
