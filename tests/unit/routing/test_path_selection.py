"""The path-selection router (`--router paths`, synth.routing.path_selection), checked independently.

- Candidates: rebuilt here from the topology JSON with networkx (every minimal router path; per
  intermediate router the lexicographically least minimal segments, a loop cut out) and compared
  as sets with synth's.
- Optimality: on tiny flow sets the least maximum contention over those independent candidates
  is found by exhaustive search and must equal what the router achieves.
- The whole-phase model solved by all four backends gives one optimum.
- On small instances of every family (random permutations, shifts, the ch.7 worst cases, a
  dragonfly all-to-all phase) the router is proven optimal over its candidates (it reaches the
  candidates' LP bound or a solver proves it) and is never worse than minimal, valiant or ugal.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from helpers import Fabric, phase_state
from synth.routing import path_selection
from synth.routing.candidates import build_candidates
from synth.routing.minimal import minimal
from synth.routing.path_selection import route_phase_paths, whole_phase_problem
from synth.routing.paths_options import PathsOptions
from synth.routing.ugal import ugal
from synth.routing.valiant import valiant
from synth.solve import SOLVERS, solve
from synth.topology import parse_topology
from synth.traffic.patterns import parse_pattern

# Every family; dragonfly:1,4,2:groups=5, hyperx with trunk=2 and torus:2,3 have parallel links.
SPECS = ["dragonfly:2,4,2", "dragonfly:1,4,2:groups=5", "hyperx:3,4", "hyperx:3,3:p=2:trunk=2", "2dfc:3,4",
         "torus:4,4", "torus:2,3", "kautz:3", "slimfly:5", "mlfm:3", "oft:4"]


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("kind", ["minimal", "valiant", "all"])
def test_candidates_match_an_independent_enumeration(spec, kind):
    fabric = Fabric(spec)
    routers = sorted(fabric.graph.nodes)
    rng = np.random.default_rng(7)
    pairs = [(a, b) for a in routers for b in routers if a != b]
    pairs = [pairs[i] for i in sorted(rng.choice(len(pairs), min(25, len(pairs)), replace=False))]
    a = np.array([p[0] for p in pairs]) - fabric.n
    b = np.array([p[1] for p in pairs]) - fabric.n
    found = build_candidates(parse_topology(spec), a, b, kind)
    for i in range(found.num_pairs):
        rows = found.rows(i)
        mine = {tuple(int(c) for c in row if c >= 0) for row in rows}
        assert len(mine) == len(rows), "a candidate listed twice"
        expected = fabric.candidates(int(found.a[i]) + fabric.n, int(found.b[i]) + fabric.n, kind)
        assert mine == expected, (spec, kind, found.a[i], found.b[i])


def _max_load(num_channels: int, paths) -> int:
    return int(np.bincount(paths.channels, minlength=num_channels).max(initial=0))


def _brute_force(fabric: Fabric, src, dst, kind: str) -> int:
    """The least maximum contention over every combination of the independent candidates."""
    fixed = {}
    options = []
    for s, d in zip(src.tolist(), dst.tolist()):
        if s == d:
            continue
        for c in (fabric.inject[s], fabric.eject[d]):
            fixed[c] = fixed.get(c, 0) + 1
        a, b = fabric.router_of[s], fabric.router_of[d]
        if a != b:
            options.append(sorted(fabric.candidates(a, b, kind)))
    floor = max(fixed.values(), default=0)
    best = None
    for combo in itertools.product(*options):
        load: dict[int, int] = {}
        for path in combo:
            for c in path:
                load[c] = load.get(c, 0) + 1
        top = max(floor, max(load.values(), default=0))
        best = top if best is None else min(best, top)
    return floor if best is None else best


@pytest.mark.parametrize("spec", ["dragonfly:2,4,2", "hyperx:3,4", "torus:4,4", "kautz:3", "slimfly:5", "oft:4"])
@pytest.mark.parametrize("kind,flows", [("minimal", 6), ("all", 3)])
def test_optimum_over_candidates_equals_exhaustive_search(spec, kind, flows):
    topology = parse_topology(spec)
    fabric = Fabric(spec)
    n = topology.network().num_terminals
    rng = np.random.default_rng(11)
    for trial in range(4):
        # flows crowded onto few routers, so that their paths compete
        src = rng.choice(n, flows, replace=False)
        dst = rng.choice(n, flows, replace=False)
        expected = _brute_force(fabric, src, dst, kind)
        paths, report = route_phase_paths(topology, src, dst, PathsOptions(candidates=kind), seed=trial)
        assert _max_load(topology.network().num_channels, paths) == expected, (spec, kind, trial)
        assert report.proven_by is not None


@pytest.mark.parametrize("spec,kind,seed", [("dragonfly:2,4,2", "minimal", 1), ("slimfly:5", "minimal", 2),
                                            ("kautz:3", "all", 3), ("torus:4,4", "minimal", 4)])
def test_every_backend_finds_the_same_optimum(spec, kind, seed):
    topology = parse_topology(spec)
    n = topology.network().num_terminals
    rng = np.random.default_rng(seed)
    src = rng.choice(n, min(n, 10), replace=False)
    dst = rng.choice(n, min(n, 10), replace=False)
    state = phase_state(spec, kind, src, dst)
    problem = whole_phase_problem(state)
    floor = int(state.floor_load.max())
    optima = {}
    for solver in SOLVERS:
        result = solve(problem, solver, time_limit=60)
        assert result.status == "optimal", solver
        state.set(result.choice)
        assert state.maximum == floor + result.objective, solver  # the model's objective is the contention
        optima[solver] = result.objective
    assert len(set(optima.values())) == 1, optima
    assert floor + optima["cpsat"] == _brute_force(Fabric(spec), src, dst, kind) if len(src) <= 6 else True


def _workloads(spec: str):
    topology = parse_topology(spec)
    n = topology.network().num_terminals
    names = ["randperm:1", "randperm:2", "shift:1", f"shift:{max(1, n // 3)}"]
    if topology.family in ("slimfly", "mlfm", "oft"):
        names.append("worst-case")
    out = []
    for name in names:
        workload = parse_pattern(name, n, topology.hierarchy(), topology=topology)
        for phase in range(workload.num_phases):
            _, src, dst, _ = workload.batch(np.array([phase]))
            out.append((f"{name}#{phase}", src, dst))
    if topology.family == "dragonfly":
        workload = parse_pattern("a2a-lin", n, topology.hierarchy(), topology=topology)
        _, src, dst, _ = workload.batch(np.array([n // 2]))
        out.append(("a2a-lin#half", src, dst))
    return out


@pytest.mark.parametrize("spec", ["dragonfly:2,4,2", "dragonfly:1,4,2:groups=5", "hyperx:3,4", "2dfc:3,4",
                                  "torus:4,4", "kautz:3", "slimfly:5", "mlfm:3", "oft:4"])
def test_proven_and_never_worse_than_the_oblivious_routers(spec):
    topology = parse_topology(spec)
    channels = topology.network().num_channels
    for name, src, dst in _workloads(spec):
        paths, report = route_phase_paths(topology, src, dst, PathsOptions(candidates="all"))
        achieved = _max_load(channels, paths)
        for router in (minimal, valiant, ugal):
            assert achieved <= _max_load(channels, router(topology, src, dst)), (name, router.__name__)
        assert report.proven_by is not None, (name, report.progress_text())
        assert achieved >= report.lp_bound  # the LP bound over all paths holds for this routing too
        if report.proven_by == "lp":
            assert achieved == report.candidate_bound


def test_large_neighbourhood_search_reaches_the_exact_optimum(monkeypatch):
    """With the whole-phase model switched off, the neighbourhoods alone reach what the model proves."""
    spec = "slimfly:5"
    topology = parse_topology(spec)
    n = topology.network().num_terminals
    workload = parse_pattern("worst-case", n, topology.hierarchy(), topology=topology)
    _, src, dst, _ = workload.batch(np.array([0]))
    options = PathsOptions(candidates="minimal")
    exact, exact_report = route_phase_paths(topology, src, dst, options)
    monkeypatch.setattr(path_selection, "EXACT_CHOICES", 0)
    searched, report = route_phase_paths(topology, src, dst, options)
    channels = topology.network().num_channels
    assert exact_report.exact == "optimal" or exact_report.proven_by == "lp"
    assert _max_load(channels, searched) == _max_load(channels, exact)
    again, _ = route_phase_paths(topology, src, dst, options)
    assert np.array_equal(again.channels, searched.channels)  # deterministic


def test_paths_are_contiguous_and_keep_their_flows(run, tmp_path):
    out = tmp_path / "r.json"
    code, stdout, _ = run("route", "slimfly:5", "--router", "paths", "--traffic", "randperm:4", "--out", out, "--quiet")
    assert code == 0, stdout
    doc = json.loads(out.read_text())
    assert doc["router"] == "paths"
    assert doc["synthesis"] == {"candidates": "all", "solver": "cpsat", "time_limit": None, "threads": 1,
                                "consistency": "flow"}
    network = parse_topology("slimfly:5").network()
    for (s, d, _), path in zip(doc["phases"][0]["flows"], doc["phases"][0]["paths"]):
        if s == d:
            assert path == []
            continue
        assert network.channel_src[path[0]] == s and network.channel_dst[path[-1]] == d
        for x, y in zip(path, path[1:]):
            assert network.channel_dst[x] == network.channel_src[y]
    code, stdout, _ = run("check", out)
    assert code == 0 and "OK:" in stdout
    again = tmp_path / "again.json"
    assert run("route", "slimfly:5", "--router", "paths", "--traffic", "randperm:4", "--out", again, "--quiet")[0] == 0
    assert again.read_bytes() == out.read_bytes()


@pytest.mark.parametrize("argv,message", [
    (["slimfly:5", "--router", "paths", "--candidates", "some"], "unknown candidate set 'some' (known: minimal, valiant, all)"),
    (["xgft:2:4,4:1,2", "--router", "paths"], "the paths router is for direct networks"),
    (["slimfly:5", "--router", "paths", "--solver", "gurobi"], "unknown solver 'gurobi'"),
])
def test_bad_options_are_one_line(run, argv, message):
    code, stdout, stderr = run("route", *argv, "--traffic", "shift:1")
    assert code == 2 and message in stderr and stderr.count("\n") == 1 and stdout == ""


def test_check_refuses_a_false_proof(run, tmp_path):
    out = tmp_path / "r.json"
    assert run("route", "dragonfly:2,4,2", "--router", "paths", "--traffic", "randperm:3", "--out", out, "--quiet")[0] == 0
    doc = json.loads(out.read_text())
    phase = doc["phases"][0]
    # above the cut bound, at the LP bound over all paths, which the phase records as its bound
    assert phase["proven_by"] == "lp" and phase["max_contention"] > max(phase["stage_bounds"])
    assert phase["bound_source"] == "LP" and phase["lower_bound"] == phase["solver"]["lp_bound"] == phase["max_contention"]
    phase["solver"]["candidate_bound"] = phase["max_contention"] - 1
    out.write_text(json.dumps(doc))
    code, stdout, _ = run("check", out)
    assert code == 1 and "above the LP bound 1 the solver report records (candidate_bound)" in stdout


@pytest.mark.parametrize("tamper,message", [
    (lambda p: p.update(bound_source="oracle"), "bound_source 'oracle' is not a bound"),
    (lambda p: p["solver"].update(lp_bound=1), "records no LP bound above the cut bound"),
    (lambda p: p.pop("bound_source"), "recorded lower bound 2, recomputed 1"),
])
def test_check_verifies_the_recorded_bound_source(run, tmp_path, tamper, message):
    out = tmp_path / "r.json"
    assert run("route", "dragonfly:2,4,2", "--router", "paths", "--traffic", "randperm:3", "--out", out, "--quiet")[0] == 0
    doc = json.loads(out.read_text())
    assert doc["phases"][0]["bound_source"] == "LP"
    code, stdout, _ = run("check", out)
    assert code == 0
    notes = [line for line in stdout.splitlines() if line.startswith("note:")]
    assert notes == ["note: lower bound from the LP bound over all paths the solver report records (not re-solved "
                     "here): 1 phase (0)"]
    tamper(doc["phases"][0])
    out.write_text(json.dumps(doc))
    code, stdout, _ = run("check", out)
    assert code == 1 and message in stdout, stdout


def test_route_bounds_and_report_print_the_same_bound(run, tmp_path):
    """The issue's case at the size of a test: the LP bound (2) above the cut bound (1) is what
    route, bounds --lp and report print for the phase."""
    code, out, _ = run("route", "dragonfly:2,4,2", "--router", "paths", "--traffic", "randperm:3", "--quiet")
    row = next(line.split() for line in out.splitlines() if line.split()[:1] == ["0"])
    assert row[1:6] == ["2", "2", "LP", "0", "optimal"]
    code, out, _ = run("bounds", "dragonfly:2,4,2", "--traffic", "randperm:3", "--lp")
    assert code == 0
    row = next(line.split() for line in out.splitlines() if line.split()[:1] == ["0"])
    assert row[1] == "2", out
    report = tmp_path / "r.md"
    assert run("report", "dragonfly:2,4,2", "--patterns", "randperm:3", "--routers", "paths", "--out", report,
               "--quiet")[0] == 0
    assert "lower bound 2" in run("report", "dragonfly:2,4,2", "--patterns", "randperm:3", "--routers", "paths",
                                  "--out", tmp_path / "s.md", "--quiet")[1]


def test_no_lp_bound_is_recorded_where_no_lp_ran(run, tmp_path):
    """A phase whose flows stay within their routers needs no LP: its report has no lp_bound (not a
    bound of 0), the routes file leaves it out, and synth check takes the file."""
    from synth.routing.paths_options import PathsOptions
    from synth.topology import parse_topology

    topology = parse_topology("torus:2,2:p=2")
    _, report = route_phase_paths(topology, np.array([0, 2]), np.array([1, 3]), PathsOptions())
    assert report.lp_bound is None and "lp_bound" not in report.as_dict()
    (tmp_path / "t.csv").write_text("src,dst\n0,1\n2,3\n")
    routes = tmp_path / "r.json"
    code, out, err = run("route", "torus:2,2:p=2", "--traffic", f"csv:{tmp_path / 't.csv'}", "--router", "paths",
                         "--out", routes, "--quiet")
    assert code == 0, err
    assert "lp_bound" not in json.loads(routes.read_text())["phases"][0]["solver"]
    code, out, err = run("check", routes)
    assert code == 0, err + out
