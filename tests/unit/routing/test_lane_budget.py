"""Routes within a budget of virtual lanes (`route --router paths --vls N`, synth.routing.lane_orders).

Deadlock freedom is verified here from its definition (Dally and Seitz): per lane, the graph whose
nodes are channels, with an edge c -> d wherever a path on that lane uses d right after c, is
built with networkx from the routes file alone and must be acyclic; paths are walked on the
network's channel arrays (each channel starts where the previous one ended, from the source
terminal to the destination terminal), and loads are recounted from the paths.
The whole exchange at --vls 8, 4, 2 and 1 is in tests/slow/test_lanes_budget_exchange.py.
"""

from __future__ import annotations

import contextlib
import io
import json

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from helpers import LANES_SPEC, budget_figures, route_with_lanes, verify_lanes
from synth.cli import main
from synth.topology import parse_topology

SUBSET = "1-12"  # 12 phases of a2a-lin: unrestricted, the paths router's routes need 3 lanes there


@pytest.fixture(scope="module")
def subset_runs(tmp_path_factory):
    runs = {}
    for budget in (2, 1):
        out = tmp_path_factory.mktemp(f"vls{budget}") / "r.json"
        runs[budget] = (*route_with_lanes(out, "--vls", budget, "--phase", SUBSET), out)
    return runs


@pytest.mark.parametrize("budget", [2, 1])
def test_routes_within_the_budget_are_deadlock_free(subset_runs, budget):
    code, out, err, path = subset_runs[budget]
    assert code == 0, err
    doc = json.loads(path.read_text())
    contention = verify_lanes(doc, budget)
    assert doc["synthesis"]["lanes"] == budget
    figures = budget_figures(out)
    assert figures["within the budget"] == (max(contention), sum(contention))
    # the routes without the budget needed more lanes (otherwise nothing was re-chosen), and are no worse
    assert "unrestricted, the routes need 3 lanes" in out
    assert figures["without it"][1] <= figures["within the budget"][1]
    assert figures["LP bound over all routings"][1] <= figures["without it"][1]


def test_one_lane_means_one_acyclic_dependency_graph(subset_runs):
    code, _, err, path = subset_runs[1]
    assert code == 0, err
    doc = json.loads(path.read_text())
    assert {lane for e in doc["phases"] for lane in e["vls"]} == {0}
    graph = nx.DiGraph()
    for entry in doc["phases"]:
        for p in entry["paths"]:
            graph.add_edges_from(zip(p, p[1:]))
    assert nx.is_directed_acyclic_graph(graph)


def test_budget_files_pass_check_and_tampering_fails(subset_runs, run, tmp_path):
    _, _, _, path = subset_runs[2]
    code, out, err = run("check", path)
    assert code == 0, out + err
    doc = json.loads(path.read_text())
    doc["synthesis"]["lanes"] = 1  # the file claims a smaller budget than its lanes use
    tampered = tmp_path / "t.json"
    tampered.write_text(json.dumps(doc))
    code, out, _ = run("check", tampered)
    assert code == 1 and "outside the budget of 1 virtual lanes" in out


def test_a_budget_the_routes_fit_costs_nothing(tmp_path):
    out = tmp_path / "r.json"
    code, text, err = route_with_lanes(out, "--vls", 4, "--phase", SUBSET)
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert "lanes" not in doc["synthesis"] and not any(l.startswith("budget ") for l in text.splitlines())
    verify_lanes(doc, 4)


def test_an_impossible_budget_fails_in_one_line_naming_the_least(tmp_path):
    # With --candidates minimal a dragonfly:2,4,2 router pair has one candidate (its minimal path),
    # so the routing is forced; its dependency graph has a cycle (checked below with networkx), so
    # one lane is impossible, and the lane heuristics give it 2 lanes. (On 12 phases one lane
    # order admits a candidate of every pair; on the whole exchange only 4 orders do.)
    out = tmp_path / "r.json"
    code, text, err = route_with_lanes(out, "--vls", 1, "--candidates", "minimal")
    assert code == 2 and not out.exists()
    assert len(err.strip().splitlines()) == 1
    assert "the least the paths router achieves here is 2 lanes: use --vls 2 or more" in err
    code, _, err = route_with_lanes(out, "--vls", 15, "--candidates", "minimal")
    assert code == 0, err
    doc = json.loads(out.read_text())
    graph = nx.DiGraph()
    for entry in doc["phases"]:
        for p in entry["paths"]:
            graph.add_edges_from(zip(p, p[1:]))
    assert not nx.is_directed_acyclic_graph(graph)
    verify_lanes(doc, 2)


def test_other_routers_say_which_router_keeps_a_budget(run, tmp_path):
    code, _, err = run("route", LANES_SPEC, "--traffic", "a2a-lin", "--router", "valiant", "--vls", 1, "--quiet",
                       "--out", tmp_path / "r.json")
    assert code == 2 and "--router paths (with --consistency flow) routes within a lane budget" in err
    assert len(err.strip().splitlines()) == 1


# ----- the lane orders' guarantee, from its definition ----------------------------------------

@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(st.integers(3, 9).flatmap(lambda n: st.tuples(
    st.permutations(range(n)),
    st.lists(st.lists(st.integers(0, n - 1), min_size=2, max_size=7), min_size=1, max_size=25))))
def test_paths_whose_ranks_fall_then_rise_never_close_a_cycle(case):
    """Whatever the order and the graph, the channels (router pairs) of paths that one order admits
    form an acyclic dependency graph: the argument synth.routing.lane_orders rests on."""
    from synth.routing.lane_orders import v_shaped

    rank, walks = case
    rank = np.array(rank)
    width = max(map(len, walks))
    routers = np.array([w + [-1] * (width - len(w)) for w in walks])
    admitted = v_shaped(rank[None, :], routers)[0]
    graph = nx.DiGraph()
    for walk, ok in zip(walks, admitted):
        ranks = [int(rank[r]) for r in walk]
        falls = [b < a for a, b in zip(ranks, ranks[1:])]
        expected = all(a != b for a, b in zip(ranks, ranks[1:])) and falls == sorted(falls, reverse=True)
        assert bool(ok) == expected
        if ok:
            hops = list(zip(walk, walk[1:]))
            graph.add_edges_from(zip(hops, hops[1:]))
    assert nx.is_directed_acyclic_graph(graph)


def test_a_budget_run_resumes_from_its_checkpoint_and_its_loads_are_the_budgets(tmp_path):
    """Both routings (without the budget, then within it) are kept in the checkpoint; a rerun
    writes the same bytes, and --loads counts the routes within the budget."""
    outputs = []
    for k in range(2):
        out, loads = tmp_path / f"r{k}.json", tmp_path / f"l{k}.csv"
        code, _, err = route_with_lanes(out, "--vls", 2, "--phase", SUBSET, "--loads", loads, "--checkpoint", tmp_path / "ck")
        assert code == 0, err
        outputs.append((out.read_bytes(), loads.read_text()))
    assert outputs[0] == outputs[1]
    assert any(p.name.startswith("lanes-") for p in (tmp_path / "ck").iterdir())
    doc = json.loads(outputs[0][0])
    network = parse_topology(LANES_SPEC).network()
    total = np.zeros(network.num_channels, dtype=np.int64)
    for entry in doc["phases"]:
        for path in entry["paths"]:
            np.add.at(total, path, 1)
    rows = outputs[0][1].splitlines()
    header = rows[0].split(",")
    counted = {int(r.split(",")[0]): int(r.split(",")[header.index("messages")]) for r in rows[1:]}
    assert counted == {c: int(total[c]) for c in counted} and sum(counted.values()) == total.sum()


def check(path) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["check", str(path)])
    return code, stdout.getvalue(), stderr.getvalue()


@settings(max_examples=15, deadline=None, derandomize=True, database=None)
@given(st.one_of(st.integers(-3, 20), st.booleans(), st.floats(allow_nan=False), st.text(max_size=3), st.none()))
def test_a_tampered_budget_is_refused_or_checked(subset_runs, tmp_path_factory, value):
    """synthesis.lanes: not an integer 1..15 is a bad file (exit 2, one line); a budget below the
    lanes the file uses fails check (exit 1); one at or above them passes."""
    _, _, _, path = subset_runs[2]
    doc = json.loads(path.read_text())
    doc["synthesis"]["lanes"] = value
    tampered = tmp_path_factory.mktemp("tampered") / "r.json"
    tampered.write_text(json.dumps(doc))
    code, out, err = check(tampered)
    used = 1 + max(v for e in doc["phases"] for v in e["vls"])
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 15:
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "synthesis.lanes" in err, err
    elif value < used:
        assert code == 1 and "outside the budget" in out
    else:
        assert code == 0, out + err
