"""The layered router ([Prisacari20] ch.3): conditions, optimality, backends, CLI."""

import json

import numpy as np
import pytest

from helpers import REPO, TABLE_2_1, TABLE_3_1
from synth.measure.contention_bounds import lower_bound, stage_lower_bounds
from synth.measure.evaluate import stage_maxima
from synth.measure.loads import channel_loads
from synth.routing.xgft_layers import LayeredOptions, conditions_hold, route_phase
from synth.routing.monolithic import route_phase_monolithic
from synth.topology import parse_topology
from synth.traffic.patterns import parse_pattern


def contention(xgft, src, dst, choice):
    return int(channel_loads(xgft.hop_matrix(src, dst, choice), xgft.num_channels).max(initial=0))


def stage_contention(xgft, src, dst, choice):
    network = xgft.network()
    loads = channel_loads(xgft.hop_matrix(src, dst, choice), xgft.num_channels)
    return stage_maxima(network, loads[None, :])[0].tolist()


def figure_3_2():
    """XGFT(2; 2,2; 3,3); every leaf sends 4 messages across the root, 2 to each leaf there."""
    src = np.repeat(np.arange(4), 4)
    dst = np.array([2, 2, 3, 3] * 2 + [0, 0, 1, 1] * 2)
    return parse_topology("xgft:2:2,2:3,3"), src, dst


def test_figure_3_2_layered_reaches_one_on_the_layer_1_links():
    """Fig. 3.2b: the layer-1 up links (stage 2) carry the workload at contention 1. (Each leaf
    injects 4 messages into W_1 = 3 links, so stage 1 needs 2, as the seed's figure shows; the
    network-wide maximum is 2 and equals the network-wide lower bound.)"""
    xgft, src, dst = figure_3_2()
    choice, report = route_phase(xgft, src, dst, LayeredOptions())
    assert stage_contention(xgft, src, dst, choice) == [2, 1]
    assert stage_lower_bounds(xgft, src, dst).tolist() == [2, 1]
    assert contention(xgft, src, dst, choice) == lower_bound(xgft, src, dst) == 2


def test_figure_3_2_local_optimum_is_not_part_of_a_global_one():
    """Fig. 3.2a: 2 messages on link 0 and 1 on each other link at every leaf meets the lambda = 0
    conditions but not the lambda = 1 ones, and completed optimally above it the layer-1 links
    still need contention 2; fig. 3.2b's assignment (leaf i puts 2 on link i mod 3) meets all."""
    xgft, src, dst = figure_3_2()
    delta, wt = xgft.nca_layer(src, dst), np.zeros(16, dtype=np.int64)
    # w_1 per message, leaf by leaf: links 0, 0, 1, 2 at every leaf, arranged so that every
    # destination also receives 2, 1, 1 (the lambda = 0 conditions bind both sides).
    local = np.tile([0, 1, 0, 2, 0, 2, 0, 1], 2)
    assert conditions_hold(xgft, 0, src, dst, delta, wt, local, max_lambda=0)
    assert not conditions_hold(xgft, 0, src, dst, delta, wt, local)
    # Any completion: the layer-1 node (subtree 0, w_1 = 0) holds 4 messages for W_2 = 3 links.
    per_node = np.bincount((src // 2) * 3 + local, minlength=6)
    assert per_node.max() == 4 and -(-per_node.max() // 3) == 2
    choice, _ = route_phase(xgft, src, dst, LayeredOptions(), start_layer=1, start_choice=local)
    assert stage_contention(xgft, src, dst, choice) == [2, 2]

    seed_optimal = np.concatenate([[i % 3, i % 3, (i + 1) % 3, (i + 2) % 3] for i in range(4)])
    assert conditions_hold(xgft, 0, src, dst, delta, wt, seed_optimal)
    choice, _ = route_phase(xgft, src, dst, LayeredOptions(), start_layer=1, start_choice=seed_optimal)
    assert stage_contention(xgft, src, dst, choice) == [2, 1]


def opt_phases_reach_the_bound(spec, phases, **options):
    xgft = parse_topology(spec)
    workload = parse_pattern("a2a-opt", xgft.num_leaves, xgft.hierarchy())
    for p in phases:
        flows = workload.flows(int(p))
        choice, report = route_phase(xgft, flows.src, flows.dst, LayeredOptions(**options))
        assert contention(xgft, flows.src, flows.dst, choice) == lower_bound(xgft, flows.src, flows.dst) == 1, p
        assert report.timeouts == 0


@pytest.mark.parametrize("n", [16, 32, 64])
def test_every_opt_phase_reaches_the_bound_small(n):
    xgft = parse_topology(TABLE_3_1[n])
    opt_phases_reach_the_bound(TABLE_3_1[n], range(xgft.num_leaves))


@pytest.mark.parametrize("n", [128, 256, 512])
def test_opt_phases_reach_the_bound_sample(n):
    """A spread of phases here; every phase of these sizes runs in tests/slow (make test-slow)."""
    opt_phases_reach_the_bound(TABLE_3_1[n], np.linspace(1, n - 1, 6).astype(int))


@pytest.mark.parametrize("constraints", ["strong", "relaxed", "strong+eliminated", "relaxed+eliminated"])
@pytest.mark.parametrize("construction", ["halving", "ilp"])
def test_every_condition_variant_reaches_the_bound(constraints, construction):
    opt_phases_reach_the_bound(TABLE_3_1[64], [1, 9, 33, 63], constraints=constraints, construction=construction)


def test_balance_gives_every_link_floor_or_ceil():
    xgft = parse_topology(TABLE_3_1[64])
    flows = parse_pattern("a2a-opt", 64, xgft.hierarchy()).flows(7)
    choice, _ = route_phase(xgft, flows.src, flows.dst, LayeredOptions(balance=True))
    delta = xgft.nca_layer(flows.src, flows.dst)
    for layer in range(xgft.height):
        w_next = (choice // xgft.wt_span[layer]) % xgft.w[layer]
        assert conditions_hold(xgft, layer, flows.src, flows.dst, delta, choice % xgft.wt_span[layer], w_next, balance=True)
    assert contention(xgft, flows.src, flows.dst, choice) == 1


@pytest.mark.parametrize("n", [16, 32, 64, 128, 256])
def test_permutations_reach_the_proven_optimum(n):
    """Shift, bit complement and 20 seeded random permutations on the Table 2.1 XGFTs: the layered
    result equals the lower bound, or the monolithic model's proven optimum where it is above."""
    xgft = parse_topology(TABLE_2_1[n])
    patterns = ["shift:1", f"shift:{n // 2}", f"shift:{n // 4 + 1}", "bitcomp"] + [f"randperm:{s}" for s in range(20)]
    for pattern in patterns:
        flows = parse_pattern(pattern, n, xgft.hierarchy()).flows(0)
        choice, _ = route_phase(xgft, flows.src, flows.dst, LayeredOptions())
        achieved, bound = contention(xgft, flows.src, flows.dst, choice), lower_bound(xgft, flows.src, flows.dst)
        if achieved > bound:
            best, report = route_phase_monolithic(xgft, flows.src, flows.dst, LayeredOptions())
            assert report.proven_by == "cpsat"
            assert achieved == contention(xgft, flows.src, flows.dst, best), pattern
        assert achieved <= bound + 1, pattern


SOLVER_CASES = [
    ("xgft:2:2,2:3,3", None),  # figure 3.2
    (TABLE_3_1[16], "a2a-opt:5"),
    (TABLE_3_1[32], "a2a-opt:11"),
    (TABLE_2_1[16], "bitcomp"),
    ("xgft:3:4,3,2:1,4,3", "randperm:3"),
]


def solver_case(spec, pattern):
    if pattern is None:
        return figure_3_2()
    xgft = parse_topology(spec)
    name, _, phase = pattern.partition(":")
    if name == "a2a-opt":
        flows = parse_pattern(name, xgft.num_leaves, xgft.hierarchy()).flows(int(phase))
    else:
        flows = parse_pattern(pattern, xgft.num_leaves, xgft.hierarchy()).flows(0)
    return xgft, flows.src, flows.dst


@pytest.mark.parametrize("spec, pattern", SOLVER_CASES)
@pytest.mark.parametrize("construction", ["halving", "ilp"])
def test_all_backends_give_the_same_contention(spec, pattern, construction):
    xgft, src, dst = solver_case(spec, pattern)
    achieved = {}
    for solver in ("cpsat", "cbc", "highs", "glpk"):
        choice, report = route_phase(xgft, src, dst, LayeredOptions(solver=solver, construction=construction, time_limit=60))
        assert report.timeouts == 0
        achieved[solver] = contention(xgft, src, dst, choice)
    assert len(set(achieved.values())) == 1, achieved
    assert achieved["cpsat"] == lower_bound(xgft, src, dst)


@pytest.mark.parametrize("solver", ["cpsat", "cbc", "highs", "glpk"])
def test_monolithic_proves_the_optimum_with_every_backend(solver):
    xgft, src, dst = solver_case(TABLE_2_1[16], "bitcomp")
    choice, report = route_phase_monolithic(xgft, src, dst, LayeredOptions(solver=solver, time_limit=60))
    assert report.proven_by == solver
    assert contention(xgft, src, dst, choice) == 2 == lower_bound(xgft, src, dst)


def test_glpsol_runs_the_models_file(tmp_path):
    """The MathProg model in models/ solves a data file synth writes, run by glpsol directly."""
    import subprocess
    from synth.solve import ProblemBuilder
    from synth.solve.glpk import write_data

    model = REPO / "models" / "assignment.mod"
    assert model.exists()
    builder = ProblemBuilder(np.array([3, 3, 3]))
    for k in range(3):
        builder.add(np.arange(3), k, upper=1)
    out = tmp_path / "solution.txt"
    with open(tmp_path / "p.dat", "w") as handle:
        write_data(builder.build(), handle, str(out))
    run = subprocess.run(["glpsol", "--math", str(model), "--data", str(tmp_path / "p.dat"), "--intopt", "--binarize", "--fpump"],
                         capture_output=True, text=True)
    assert run.returncode == 0 and "INTEGER OPTIMAL SOLUTION FOUND" in run.stdout
    rows = [line.split() for line in out.read_text().splitlines()]
    assert rows[0] == ["z", "0"] and sorted(int(k) for _, k in rows[1:]) == [0, 1, 2]


def test_layered_cli_writes_checked_routes(run, tmp_path):
    target = tmp_path / "routes.json"
    code, out, _ = run("route", TABLE_3_1[64], "--traffic", "a2a-opt", "--router", "layered", "--phase", "0-7",
                       "--out", target, "--quiet")
    assert code == 0 and "8 optimal" in out
    doc = json.loads(target.read_text())
    assert doc["synthesis"]["constraints"] == "strong" and doc["synthesis"]["solver"] == "cpsat"
    assert all(p["status"] == "optimal" and p["solver"]["subproblems"] > 0 for p in doc["phases"])
    assert run("check", target)[0] == 0


def test_monolithic_cli_marks_a_proof_above_the_bound(run, tmp_path):
    """On XGFT(2; 2,2; 1,1) (no path choice) a phase where two flows share a link is optimal at 2,
    above no bound: the proof is the solver's."""
    matrix = tmp_path / "m.csv"
    matrix.write_text("0,2\n1,3\n")
    target = tmp_path / "routes.json"
    code, out, _ = run("route", "xgft:2:2,2:1,1", "--traffic", f"csv:{matrix}", "--router", "monolithic", "--out", target, "--quiet")
    assert code == 0
    phase = json.loads(target.read_text())["phases"][0]
    assert phase["max_contention"] == phase["lower_bound"] == 2 and phase["status"] == "optimal"
    assert run("check", target)[0] == 0


@pytest.mark.parametrize("argv, message", [
    (["--solver", "gurobi"], "unknown solver 'gurobi'"),
    (["--time-limit", "0"], "--time-limit must be a positive number, got '0'"),
    (["--time-limit", "-3"], "--time-limit must be a positive number, got '-3'"),
    (["--time-limit", "soon"], "--time-limit must be a positive number, got 'soon'"),
    (["--constraints", "weak"], "unknown constraints 'weak'"),
    (["--construction", "magic"], "unknown construction 'magic'"),
    (["--threads", "0"], "--threads must be between 1 and 256, got 0"),
])
def test_layered_bad_options(run, tmp_path, argv, message):
    target = tmp_path / "r.json"
    code, _, err = run("route", TABLE_3_1[16], "--traffic", "a2a-opt", "--router", "layered", "--phase", "1", *argv, "--out", target)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not target.exists()


def test_monolithic_refuses_a_model_too_large(run, tmp_path):
    target = tmp_path / "r.json"
    code, _, err = run("route", TABLE_3_1[512], "--traffic", "a2a-opt", "--router", "monolithic", "--phase", "3", "--out", target)
    assert code == 2 and "use --router layered" in err and not target.exists()


def test_backtracking_recovers_when_a_layer_has_no_strong_solution():
    """With one model per WT node, the first strong layer-1 solution of these 256-leaf OPT phases
    leaves a layer-2 WT node without a strong solution (the seed's conditions do not guarantee
    extendability); solving that layer-1 node again differently recovers contention 1. Without
    backtracking (budget 0, the control) layer 2 is relaxed and the phase needs contention 2."""
    from synth.routing.xgft_layers import LayerSearch

    xgft = parse_topology(TABLE_3_1[256])
    workload = parse_pattern("a2a-opt", 256, xgft.hierarchy())
    options = LayeredOptions(construction="ilp")
    for p in (3, 7, 39, 103, 231):
        flows = workload.flows(p)
        choice, report = route_phase(xgft, flows.src, flows.dst, options)
        assert contention(xgft, flows.src, flows.dst, choice) == 1 and not report.relaxed_layers, p
        assert report.backtracks >= 1, p
    delta = xgft.nca_layer(flows.src, flows.dst)
    unaided = np.zeros(len(flows.src), dtype=np.int64)
    layers = [layer for layer in range(xgft.height) if xgft.w[layer] > 1]
    search = LayerSearch(xgft, flows.src, flows.dst, delta, layers, unaided, options, backtracks=0)
    search.subtree(0, np.flatnonzero(delta > 0), has_parent=False)
    assert search.report.backtracks == 0 and search.report.relaxed_layers == [2]
    assert contention(xgft, flows.src, flows.dst, unaided) == 2


# ----- binary splits without a solver (_oriented_split, issue 43 item 5) -------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402


@st.composite
def split_instances(draw):
    """n items, pairs from two matchings (each item at most one partner per side, as _euler_pairs
    makes them), and groups of members with bounds on how many lie on side 1."""
    n = draw(st.integers(2, 12))
    pairs = []
    for _ in range(2):
        order = draw(st.permutations(range(n)))
        k = draw(st.integers(0, n // 2))
        pairs += [(order[2 * i], order[2 * i + 1]) for i in range(k)]
    groups = []
    for _ in range(draw(st.integers(0, 6))):
        members = np.array(sorted(draw(st.sets(st.integers(0, n - 1), min_size=2, max_size=n))), dtype=np.int64)
        lo = draw(st.integers(0, members.size))
        groups.append((members, lo, draw(st.integers(lo, members.size))))
    return n, np.array(pairs, dtype=np.int64).reshape(-1, 2), groups


@settings(max_examples=300, deadline=None)
@given(split_instances())
def test_a_split_found_without_the_solver_meets_every_bound_the_model_has(instance):
    from synth.routing.xgft_layers import _oriented_split

    n, pairs, groups = instance
    digits = _oriented_split(n, pairs, groups)
    if digits is None:
        return
    assert digits.shape == (n,) and set(digits.tolist()) <= {0, 1}
    for members, lo, up in groups:  # recounted naively
        assert lo <= sum(int(digits[m]) for m in members) <= up
    if not groups:  # nothing but the pairs: every pair is separated
        assert all(digits[a] != digits[b] for a, b in pairs.tolist())


def test_a_split_the_search_cannot_find_is_left_to_the_solver():
    from synth.routing.xgft_layers import _oriented_split

    # three items, each pair of them in a group that must be split one-one: no split exists
    groups = [(np.array(g), 1, 1) for g in ([0, 1], [1, 2], [0, 2])]
    assert _oriented_split(3, np.zeros((0, 2), dtype=np.int64), groups) is None
    assert _oriented_split(3, np.array([[0, 1], [1, 2], [0, 2]]), []) is None  # an odd cycle of pairs


def test_the_512_leaf_phases_meet_every_layers_conditions_mostly_without_the_solver():
    """The Table 3.1 512-leaf tree's phases: every layer's assignment meets the strong conditions
    (checked with conditions_hold, not trusted from the search), contention 1, and most binary
    splits (every 2-message split of the top layer among them) oriented without CP-SAT."""
    xgft = parse_topology(TABLE_3_1[512])
    workload = parse_pattern("a2a-opt", 512, xgft.hierarchy())
    for p in (1, 255, 511):
        flows = workload.flows(p)
        choice, report = route_phase(xgft, flows.src, flows.dst, LayeredOptions())
        delta = xgft.nca_layer(flows.src, flows.dst)
        for layer in range(xgft.height):
            w_next = (choice // xgft.wt_span[layer]) % xgft.w[layer]
            assert conditions_hold(xgft, layer, flows.src, flows.dst, delta, choice % xgft.wt_span[layer], w_next), (p, layer)
        assert contention(xgft, flows.src, flows.dst, choice) == lower_bound(xgft, flows.src, flows.dst) == 1
        assert report.oriented >= 100 and not report.relaxed_layers, (p, report)
