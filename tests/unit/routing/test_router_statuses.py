"""Every status and every fallback path of the routers, each guarded by a test that fails when the path breaks.

A path is reached by an input that provably takes it: small instances found by search and fixed here
(the fact that sends them down the path is checked in the test where that is cheap: a brute force over
all assignments, or the same run without the fallback), or by a solve layer replaced (pytest's
monkeypatch) with one that returns a real status (timeout, feasible without a proof) so that the test
exercises how the router and the evaluation handle that status. Solver backends are given models
that certainly cannot be finished within the limit (random 3-SAT, 300 variables, 1500 clauses: CP-SAT
needs seconds to refute it) for their timeout and feasible-without-proof statuses.

Each test's docstring names the path it guards ("Path: ..."); every test was checked to fail with its
path broken in the source (the commit that added this file lists the mutations).
"""

import itertools

import numpy as np
import pytest

from helpers import TABLE_2_1, TABLE_3_1, xgft_and_network
from synth.core.errors import SynthError
from synth.measure.contention_bounds import lower_bound
from synth.measure.evaluate import evaluate_batch, status_of
from synth.measure.loads import channel_loads
import synth.routing.consistent as consistent
import synth.routing.xgft_layers as layered
import synth.routing.monolithic as monolithic
from synth.routing.consistent import route_consistent
from synth.routing.xgft_layers import BACKTRACKS, LayeredOptions, LayerSearch, conditions_hold, route_phase
from synth.routing.monolithic import (MAX_VARIABLES, MAX_VARIABLES_UNCAPPED, path_pairs, route_phase_monolithic)
from synth.routing.monolithic import route_consistent_monolithic
from synth.routing.oblivious import dmodk
from synth.solve import SOLVERS, ProblemBuilder, solve
from synth.solve.problem import FEASIBLE, INFEASIBLE, OPTIMAL, TIMEOUT, SolveResult
from synth.tables.forwarding import Hops, _greedy_colours, build_tables, colour_flows, route_hops
from synth.topology import parse_topology
from synth.traffic.patterns import parse_pattern
from synth.routing.registry import RouterOptions, make_router
from synth.workflow import route_phases


def contention(xgft, src, dst, choice):
    return int(channel_loads(xgft.hop_matrix(src, dst, choice), xgft.num_channels).max(initial=0))


def per_phase_contention(xgft, src, dst, phase, choice):
    return [contention(xgft, src[phase == p], dst[phase == p], choice[phase == p]) for p in np.unique(phase)]


def valid_choices(xgft, src, dst, choice):
    """Every flow has one of its minimal paths (Property 1 of the seed)."""
    return bool(((choice >= 0) & (choice < xgft.path_count(xgft.nca_layer(src, dst)))).all())


def every_assignment(units, width=2):
    """All width^units assignments, one per row."""
    return np.array(list(itertools.product(range(width), repeat=units)), dtype=np.int64)


def csv_workload(tmp_path, xgft, src, dst):
    path = tmp_path / "flows.csv"
    rows = [f"{s},{d}" for s, d in zip(src.tolist(), dst.tolist())]
    path.write_text("\n".join(rows) + "\n")
    return f"csv:{path}", parse_pattern(f"csv:{path}", xgft.num_leaves, xgft.hierarchy())


def routed(xgft, workload, router, phases=None):
    network = xgft.network()
    phases = workload.phase_numbers if phases is None else np.asarray(phases)
    return list(route_phases(xgft, network, workload, phases, router, workers=1))


def solver_returning(status, keep_solution=False, seen=None):
    """A stand-in for synth.solve.solve: the real solver runs, and its result is reported with
    `status` (a solution kept only with keep_solution), as a solver that ran out of time would.
    The problems it is given are appended to `seen`."""

    def fake(problem, *args, **kwargs):
        if seen is not None:
            seen.append(problem)
        real = solve(problem, *args, **kwargs)
        choice = real.choice if keep_solution else None
        return SolveResult(status, choice, real.objective if keep_solution else None, None, real.solver, real.seconds)

    return fake


# ----- the layered router: backtracking over the WT tree ----------------------------------------

# Found by a search over random flow sets on XGFT(3; 2,2,2; 2,2,3). Layer 0 has strong solutions, but
# the first one the solver finds leaves a layer-1 WT node without one: the root is solved again.
BACKTRACK_CASE = ("xgft:3:2,2,2:2,2,3", [2, 7, 7, 7, 0, 7, 7, 3, 2, 2], [6, 3, 1, 4, 4, 0, 5, 2, 6, 0])
# Here no strong solution of layer 0 leaves one at layer 1 (the test shows it by brute force): the
# whole budget is spent, then the failing child takes the least excess over its bounds.
BUDGET_CASE = ("xgft:3:2,2,2:2,2,3", [2, 7, 3, 2, 6, 4, 0, 6, 7, 4], [5, 3, 0, 4, 5, 1, 2, 1, 4, 0])
# The strong conditions of layer 0 itself have no solution (a brute force over all 2^9 assignments
# below shows it), and spreading the messages over the links in turn (the fallback without a model)
# exceeds the bounds by more than the least excess.
EXCESS_CASE = ("xgft:3:2,2,2:2,2,3", [0, 2, 1, 7, 4, 1, 2, 3, 7], [3, 3, 3, 4, 3, 5, 1, 6, 2])


def case(spec_src_dst):
    spec, src, dst = spec_src_dst
    return parse_topology(spec), np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64)


def route_with_budget(xgft, src, dst, options, budget):
    """route_phase with another backtracking budget (the control runs below)."""
    delta = xgft.nca_layer(src, dst)
    choice = np.zeros(len(src), dtype=np.int64)
    layers = [l for l in range(xgft.height) if xgft.w[l] > 1]
    search = LayerSearch(xgft, src, dst, delta, layers, choice, options, backtracks=budget)
    search.subtree(0, np.flatnonzero(delta > 0), has_parent=False)
    return choice, search.report


def test_layered_solves_a_parent_again_when_a_child_wt_node_has_no_strong_solution():
    """Path: LayerSearch.subtree, a child returns RETRY and its parent is solved again in another order."""
    xgft, src, dst = case(BACKTRACK_CASE)
    choice, report = route_phase(xgft, src, dst, LayeredOptions())
    assert report.backtracks >= 1 and report.relaxed_layers == []
    assert valid_choices(xgft, src, dst, choice)
    assert contention(xgft, src, dst, choice) == lower_bound(xgft, src, dst) == 3
    # The control: without backtracking the same instance has to relax a layer.
    _, unaided = route_with_budget(xgft, src, dst, LayeredOptions(), budget=0)
    assert unaided.backtracks == 0 and unaided.relaxed_layers != []


@pytest.mark.parametrize("construction", ["halving", "ilp"])
def test_layered_child_takes_the_least_excess_once_the_backtracking_budget_is_spent(construction):
    """Path: the budget is spent: the parent is solved once more and its failing child, no longer
    allowed to ask for a retry (may_retry false), is routed with `fallback` (the least excess)."""
    xgft, src, dst = case(BUDGET_CASE)
    delta, root = xgft.nca_layer(src, dst), np.zeros_like(src)
    strong = [a for a in every_assignment(len(src)) if conditions_hold(xgft, 0, src, dst, delta, root, a)]
    assert len(strong) == 2
    climbing = np.flatnonzero(delta > 1)
    for w1 in strong:  # w_1 is the WT index at layer 1
        for w2 in every_assignment(len(climbing)):
            links = np.zeros_like(src)
            links[climbing] = w2
            assert not conditions_hold(xgft, 1, src, dst, delta, w1, links)
    choice, report = route_phase(xgft, src, dst, LayeredOptions(construction=construction))
    assert report.backtracks == BACKTRACKS
    assert report.relaxed_layers == [1]  # layer 0 met the strong conditions, layer 1 could not
    assert valid_choices(xgft, src, dst, choice)
    assert conditions_hold(xgft, 0, src, dst, delta, root, choice % xgft.w[0])
    assert contention(xgft, src, dst, choice) == 2 and lower_bound(xgft, src, dst) == 1


def layer0_excess(xgft, src, dst, assignments, phase=None):
    """For each row of `assignments` (w_1 per message), the largest excess over the strong bounds of
    layer 0 (eq. 3.6, 3.8), with the sets written from their definition (eq. 3.1-3.4): per phase and
    lambda, the messages with NCA layer above lambda sharing the layer-lambda subtree of their source
    (up) or of their destination (down); each may put at most ceil(c / W_1) on a link."""
    delta = xgft.nca_layer(src, dst)
    phase = np.zeros(len(src), dtype=np.int64) if phase is None else phase
    width = xgft.w[0]
    worst = np.full(len(assignments), -10**9)
    for p in np.unique(phase):
        for lam in range(xgft.height):
            span = int(np.prod(xgft.m[:lam]))
            for ranks in (src, dst):
                for subtree in np.unique(ranks // span):
                    members = np.flatnonzero((phase == p) & (delta > lam) & (ranks // span == subtree))
                    if members.size < 2:
                        continue
                    bound = -(-members.size // width)
                    for link in range(width):
                        worst = np.maximum(worst, (assignments[:, members] == link).sum(axis=1) - bound)
    return worst


@pytest.mark.parametrize("construction", ["halving", "ilp"])
def test_layered_takes_the_least_excess_when_a_layer_has_no_strong_solution(construction):
    """Path: LayerSolver.direct's slack model (minimize z, count <= bound + z) when the strong model is
    infeasible, and the layer recorded in relaxed_layers."""
    xgft, src, dst = case(EXCESS_CASE)
    assert xgft.w[0] == 2
    least = int(layer0_excess(xgft, src, dst, every_assignment(len(src))).min())
    assert least == 1  # no assignment of layer 0 meets the strong conditions
    spread = np.arange(len(src)) % 2  # what a node falls back to without a model
    assert int(layer0_excess(xgft, src, dst, spread[None, :])[0]) == 2
    choice, report = route_phase(xgft, src, dst, LayeredOptions(construction=construction))
    assert report.relaxed_layers == [0] and report.direct_solved >= 1
    assert int(layer0_excess(xgft, src, dst, (choice % 2)[None, :])[0]) == least
    assert valid_choices(xgft, src, dst, choice)


# ----- statuses: optimal, feasible, timeout, proven_by ---------------------------------------------

# A permutation on the 16-leaf Table 2.1 XGFT whose optimum (2, proven by the monolithic model with
# every backend) is above the subtree cut bound (1): every routing of it is above the bound.
PROOF_DST = [13, 7, 12, 0, 4, 10, 9, 2, 1, 14, 3, 15, 11, 5, 6, 8]


def test_status_of_every_case():
    assert status_of(3, 3) == "optimal"
    assert status_of(4, 3) == "feasible"
    assert status_of(4, 3, timed_out=True) == "timeout"
    assert status_of(4, 3, proven_optimal=True) == "optimal"
    assert status_of(3, 3, timed_out=True) == "optimal"  # at the bound nothing better exists
    assert status_of(4, 3, proven_optimal=True, timed_out=True) == "optimal"


def test_evaluate_batch_marks_proven_and_timed_out_phases():
    """Three phases routed above the bound (d-mod-k on PROOF_DST): no mark, a proof, a timeout."""
    xgft, network = xgft_and_network(TABLE_2_1[16])
    src, dst = np.tile(np.arange(16), 3), np.tile(PROOF_DST, 3)
    phases, idx = np.array([0, 1, 2]), np.repeat(np.arange(3), 16)
    choice = dmodk(xgft, src, dst, idx, None)
    plain = evaluate_batch(xgft, network, phases, idx, src, dst, choice)
    assert [(e.max_contention, e.lower_bound, e.status) for e in plain] == [(2, 1, "feasible")] * 3
    marked = evaluate_batch(xgft, network, phases, idx, src, dst, choice, np.array([False, True, False]), {2})
    assert [e.status for e in marked] == ["feasible", "optimal", "timeout"]


def proof_case(tmp_path):
    xgft = parse_topology(TABLE_2_1[16])
    src, dst = np.arange(16, dtype=np.int64), np.array(PROOF_DST, dtype=np.int64)
    _, workload = csv_workload(tmp_path, xgft, src, dst)
    return xgft, src, dst, workload


def test_layered_timeouts_are_counted_and_make_the_phase_status_timeout(monkeypatch, tmp_path):
    """Path: a solver call ends without a solution (TIMEOUT): LayerSolver.run counts it, the direct model
    stops trying weaker models, the node falls back to spreading its messages over the links, and the
    phase (above the bound, as every routing of PROOF_DST is) is reported `timeout` (route_phases ->
    evaluate_batch), not `feasible`."""
    xgft, src, dst, workload = proof_case(tmp_path)
    control = routed(xgft, workload, "layered")[0]
    assert control.evaluation.status == "feasible" and control.report.timeouts == 0
    seen = []
    monkeypatch.setattr(layered, "solve", solver_returning(TIMEOUT, seen=seen))
    phase = routed(xgft, workload, make_router("layered", xgft))[0]
    assert phase.report.timeouts == len(seen) > 0 and phase.report.relaxed_layers
    assert not any(problem.has_objective for problem in seen)  # no slack model is tried on the clock
    assert valid_choices(xgft, phase.flows.src, phase.flows.dst, phase.choice)
    assert phase.evaluation.max_contention > phase.evaluation.lower_bound
    assert phase.evaluation.status == "timeout"


def test_a_timeout_status_is_written_and_accepted_by_check(run, monkeypatch, tmp_path):
    """End to end: the routes file records `timeout` and the solver's count, and `synth check`
    recomputes the same status from them."""
    import json

    xgft = parse_topology(TABLE_2_1[16])
    traffic, _ = csv_workload(tmp_path, xgft, np.arange(16), np.array(PROOF_DST))
    monkeypatch.setattr(layered, "solve", solver_returning(TIMEOUT))
    target = tmp_path / "r.json"
    code, _, err = run("route", TABLE_2_1[16], "--traffic", traffic, "--router", "layered", "--out", target, "--quiet")
    assert code == 0, err
    entry = json.loads(target.read_text())["phases"][0]
    assert entry["status"] == "timeout" and entry["solver"]["timeouts"] > 0
    assert run("check", target)[0] == 0


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_solver_proof_above_the_bound_makes_the_phase_optimal(solver, tmp_path):
    """Path: monolithic sets proven_by when the solver reports OPTIMAL; route_phases raises the
    phase's lower bound from the cut bound (1) to what the proof shows no routing beats (2), names
    it, and reports `optimal` with no gap: "optimal" never stands beside a gap."""
    xgft, src, dst, workload = proof_case(tmp_path)
    phase = routed(xgft, workload, make_router("monolithic", xgft, RouterOptions(solver=solver, time_limit=60)))[0]
    assert phase.report.proven_by == solver
    assert max(phase.evaluation.stage_bounds) == 1  # the cut bound
    assert phase.evaluation.max_contention == 2 and phase.evaluation.lower_bound == 2 and phase.evaluation.gap == 0
    assert phase.evaluation.bound_source == f"{solver} proof"
    assert phase.evaluation.status == "optimal"


def test_a_solution_without_a_proof_is_feasible(monkeypatch, tmp_path):
    """Path: the monolithic solver stops with a solution but no proof (FEASIBLE): the solution is used,
    no proven_by is recorded and the phase above the bound is `feasible`."""
    xgft, src, dst, workload = proof_case(tmp_path)
    monkeypatch.setattr(monolithic, "solve", solver_returning(FEASIBLE, keep_solution=True))
    phase = routed(xgft, workload, make_router("monolithic", xgft))[0]
    assert phase.report.proven_by is None and phase.report.timeouts == 0
    assert phase.evaluation.max_contention == 2 and phase.evaluation.status == "feasible"


def test_monolithic_timeout_keeps_dmodk_and_reports_timeout(monkeypatch, tmp_path):
    """Path: the monolithic solver ends without a solution: d-mod-k's routes (its starting point)
    stand, the timeout is counted and the phase is `timeout`."""
    xgft, src, dst, workload = proof_case(tmp_path)
    monkeypatch.setattr(monolithic, "solve", solver_returning(TIMEOUT))
    choice, report = route_phase_monolithic(xgft, src, dst, LayeredOptions(time_limit=5))
    assert np.array_equal(choice, dmodk(xgft, src, dst, None, None))
    assert report.timeouts == 1 and report.proven_by is None
    phase = routed(xgft, workload, make_router("monolithic", xgft, RouterOptions(time_limit=5)))[0]
    assert phase.evaluation.max_contention == 2 and phase.evaluation.status == "timeout"


# ----- the monolithic models: refusals ----------------------------------------------------------

def test_monolithic_refuses_above_its_variable_limits():
    """Path: path_pairs refuses more than MAX_VARIABLES_UNCAPPED path variables without a time limit
    and more than MAX_VARIABLES with one; each flow of XGFT(1; 4; 100) across the root has 100 paths."""
    xgft = parse_topology("xgft:1:4:100")

    def flows(n):
        return np.zeros(n, dtype=np.int64), np.ones(n, dtype=np.int64)

    assert MAX_VARIABLES_UNCAPPED == 20_000 and MAX_VARIABLES == 250_000
    assert len(path_pairs(xgft, *flows(200), capped_time=False)[1]) == 20_000
    with pytest.raises(SynthError, match="20,100 path variables.*or give --time-limit"):
        path_pairs(xgft, *flows(201), capped_time=False)
    assert len(path_pairs(xgft, *flows(201), capped_time=True)[1]) == 20_100
    assert len(path_pairs(xgft, *flows(2500), capped_time=True)[1]) == 250_000
    with pytest.raises(SynthError, match="250,100 path variables") as refused:
        path_pairs(xgft, *flows(2501), capped_time=True)
    assert "--time-limit" not in str(refused.value)
    with pytest.raises(SynthError, match="use --router layered"):
        route_phase_monolithic(xgft, *flows(201), LayeredOptions())
    route_phase_monolithic(xgft, *flows(3), LayeredOptions())  # small: solved


def test_monolithic_with_a_time_limit_runs_capped_above_the_uncapped_limit(monkeypatch):
    """Path: with --time-limit a model above MAX_VARIABLES_UNCAPPED is built and solved with that
    limit (the solver is stubbed: it reports a timeout at once, so d-mod-k's routes stand)."""
    xgft = parse_topology("xgft:1:4:100")
    src, dst = np.zeros(201, dtype=np.int64), np.ones(201, dtype=np.int64)
    calls = []

    def stub(problem, solver, time_limit, *args, **kwargs):
        calls.append((problem.num_items, len(problem.group_items), solver, time_limit))
        return SolveResult(TIMEOUT, None, solver=solver)

    monkeypatch.setattr(monolithic, "solve", stub)
    choice, report = route_phase_monolithic(xgft, src, dst, LayeredOptions(time_limit=7))
    assert calls == [(201, 2 * 20_100, "cpsat", 7)]  # every path variable on its up and down channel
    assert report.timeouts == 1 and np.array_equal(choice, dmodk(xgft, src, dst, None, None))


def test_monolithic_consistent_refuses_other_solvers_and_large_models():
    xgft = parse_topology("xgft:1:4:100")
    src, dst, phase = np.zeros(201, dtype=np.int64), np.ones(201, dtype=np.int64), np.arange(201)
    with pytest.raises(SynthError, match="solved by cpsat only, not 'cbc'"):
        route_consistent_monolithic(xgft, src[:3], dst[:3], phase[:3], LayeredOptions(solver="cbc"))
    with pytest.raises(SynthError, match="the selected phases would have 20,100 path variables"):
        route_consistent_monolithic(xgft, src, dst, phase, LayeredOptions())
    choice, report = route_consistent_monolithic(xgft, src[:3], dst[:3], phase[:3], LayeredOptions())
    assert report.whole_run.endswith("proven optimal among destination-consistent routings")


def consistent_monolithic_with(monkeypatch, code):
    """Run the destination-consistent monolithic model on the 16-leaf OPT exchange with CP-SAT's
    answer replaced by `code` (the model is solved, then reported as CP-SAT would at a limit)."""
    from ortools.sat.python import cp_model

    real = cp_model.CpSolver.solve

    def stopped(self, model, *args, **kwargs):
        real(self, model, *args, **kwargs)
        return getattr(cp_model, code)

    monkeypatch.setattr(cp_model.CpSolver, "solve", stopped)
    xgft = parse_topology(TABLE_3_1[16])
    phase, src, dst, _ = parse_pattern("a2a-opt", 16, xgft.hierarchy()).batch(np.arange(16))
    choice, report = route_consistent_monolithic(xgft, src, dst, phase, LayeredOptions(time_limit=30))
    return xgft, src, dst, phase, choice, report


def test_monolithic_consistent_without_a_solution_keeps_dmodk(monkeypatch):
    """Path: CP-SAT ends without a solution (UNKNOWN at its limit): d-mod-k stands, counted as a timeout."""
    xgft, src, dst, phase, choice, report = consistent_monolithic_with(monkeypatch, "UNKNOWN")
    assert np.array_equal(choice, dmodk(xgft, src, dst, phase, None))
    assert report.timeouts == 1 and report.whole_run == "no solution within the time limit: d-mod-k's routes"


def test_monolithic_consistent_stopped_with_a_solution_claims_no_proof(monkeypatch):
    """Path: CP-SAT stops with a solution but no proof (FEASIBLE): its routes, no timeout, and the
    whole-run note says the limit stopped it rather than claiming optimality."""
    xgft, src, dst, phase, choice, report = consistent_monolithic_with(monkeypatch, "FEASIBLE")
    assert report.timeouts == 0 and report.whole_run.endswith("for destination-consistent routings (time limit)")
    assert "proven" not in report.whole_run and report.proven_by is None
    assert per_phase_contention(xgft, src, dst, phase, choice) == [1] * 16


# ----- the destination-consistent layered router ------------------------------------------------

# Found by a search over random permutations: 4 phases on XGFT(2; 4,4; 2,2) where one WT node is
# solved again (the control below shows that without backtracking a layer relaxes).
CONSISTENT_BACKTRACK = ("xgft:2:4,4:2,2", [
    [15, 13, 5, 2, 9, 6, 11, 0, 4, 3, 14, 12, 10, 8, 1, 7], [13, 4, 10, 6, 9, 7, 12, 0, 5, 1, 15, 2, 3, 8, 14, 11],
    [14, 11, 5, 1, 6, 12, 2, 9, 0, 15, 8, 4, 3, 13, 7, 10], [12, 13, 5, 6, 7, 15, 4, 8, 14, 3, 10, 2, 9, 1, 11, 0]])
# 2 phases of random traffic (phase, src, dst) on XGFT(2; 4,2; 2,2) whose layer-0 strong conditions
# have no solution, and where d-mod-k's links (the least-excess model's starting point) exceed the
# bounds by 2, the least excess by 1 (brute force over the 13 units below).
CONSISTENT_EXCESS = ("xgft:2:4,2:2,2", [0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0],
                     [0, 0, 1, 7, 5, 4, 0, 1, 6, 6, 0, 3, 4, 5, 0], [6, 4, 4, 2, 0, 7, 6, 6, 5, 3, 7, 0, 2, 3, 6])
# 3 phases on XGFT(3; 2,2,2; 1,2,2) where the layered routes end worse than d-mod-k's.
CONSISTENT_DMODK = ("xgft:3:2,2,2:1,2,2", [[4, 3, 6, 1, 7, 2, 5, 0], [0, 5, 1, 2, 4, 3, 6, 7], [4, 5, 2, 1, 6, 7, 3, 0]])


def phased(spec_phases):
    spec, phases = spec_phases
    xgft = parse_topology(spec)
    n = xgft.num_leaves
    src = np.tile(np.arange(n, dtype=np.int64), len(phases))
    dst = np.array(phases, dtype=np.int64).ravel()
    phase = np.repeat(np.arange(len(phases), dtype=np.int64), n)
    return xgft, src, dst, phase


def destination_consistent(xgft, src, dst, choice):
    network = xgft.network()
    return build_tables(xgft, network, dst, route_hops(network, xgft.path_nodes(src, dst, choice))).lids.lmc == 0


def test_consistent_router_solves_a_parent_again_when_a_child_fails(monkeypatch):
    """Path: the consistent router's WT nodes share LayerSearch's backtracking (budget consistent.BACKTRACKS)."""
    xgft, src, dst, phase = phased(CONSISTENT_BACKTRACK)
    choice, report = route_consistent(xgft, src, dst, phase, LayeredOptions())
    assert report.backtracks >= 1 and report.relaxed_layers == []
    assert destination_consistent(xgft, src, dst, choice)
    assert per_phase_contention(xgft, src, dst, phase, choice) == [1, 1, 1, 1]
    monkeypatch.setattr(consistent, "BACKTRACKS", 0)  # the control
    _, unaided = route_consistent(xgft, src, dst, phase, LayeredOptions())
    assert unaided.backtracks == 0 and unaided.relaxed_layers != []


def test_consistent_router_takes_the_least_excess_when_a_layer_has_no_strong_solution():
    """Path: _node_solver's least-excess model (_least_excess, started from d-mod-k's links) when the
    split over units fails at a node without a parent; its solution, not the start, is routed."""
    spec, phase, src, dst = CONSISTENT_EXCESS
    xgft = parse_topology(spec)
    phase, src, dst = (np.array(a, dtype=np.int64) for a in (phase, src, dst))
    # At layer 0 a unit is a (source, destination) pair: all its flows take one up link.
    _, unit = np.unique(src * xgft.num_leaves + dst, return_inverse=True)
    least = int(layer0_excess(xgft, src, dst, every_assignment(unit.max() + 1)[:, unit], phase).min())
    assert least == 1
    assert int(layer0_excess(xgft, src, dst, (dst % 2)[None, :], phase)[0]) == 2  # d-mod-k's links
    choice, report = route_consistent(xgft, src, dst, phase, LayeredOptions())
    assert report.relaxed_layers == [0] and report.direct_solved >= 1
    assert int(layer0_excess(xgft, src, dst, (choice % 2)[None, :], phase)[0]) == least
    assert destination_consistent(xgft, src, dst, choice)


def test_consistent_router_is_never_worse_than_dmodk(monkeypatch):
    """Path: the safety net of consistent._route_canonical; when the layered routes are worse than
    d-mod-k on the same phases, d-mod-k's routes are returned (marked -1 in relaxed_layers)."""
    xgft, src, dst, phase = phased(CONSISTENT_DMODK)
    worst = []
    real = consistent._worst_phase

    def spy(*args):
        worst.append(real(*args))
        return worst[-1]

    monkeypatch.setattr(consistent, "_worst_phase", spy)
    choice, report = route_consistent(xgft, src, dst, phase, LayeredOptions())
    reference = dmodk(xgft, src, dst, phase, None)
    assert worst[0] < worst[1]  # d-mod-k's worst phase, the layered routes' worst phase: the net is needed
    assert report.relaxed_layers[-1] == -1
    assert np.array_equal(choice, reference)


# ----- LMC colouring ------------------------------------------------------------------------------

def agree_per_offset(dst, hops, offsets):
    for key in set(zip(dst.tolist(), offsets.tolist())):
        seen = {}
        for f in np.flatnonzero((dst == key[0]) & (offsets == key[1])):
            for s, p in zip(hops.switch[f].tolist(), hops.port[f].tolist()):
                if s >= 0 and seen.setdefault(s, p) != p:
                    return False
    return True


def test_colouring_cp_sat_saves_an_lmc_step_the_greedy_colouring_misses():
    """Path: colour_flows' CP-SAT step. Four routes to one destination conflict in a path a-b-c-d
    (a, d longest, so first-fit colours a, d, b, c and needs 3 colours, LMC 2); 2 colours suffice."""
    switch = np.array([[10, 13, 14], [10, 11, -1], [11, 12, -1], [12, 15, 16]])
    port = np.array([[1, 1, 1], [2, 1, -1], [2, 1, -1], [2, 1, 1]])
    hops, dst = Hops(switch, port), np.zeros(4, dtype=np.int64)
    assert _greedy_colours(switch, port)[1] == 3
    offsets, bound = colour_flows(dst, hops)
    assert len(set(offsets.tolist())) == 2 and bound == 2
    assert agree_per_offset(dst, hops, offsets)


def test_colouring_proof_raises_the_bound_and_keeps_the_greedy_colouring():
    """Path: CP-SAT proves the step cannot be saved: the bound rises above the busiest switch's 2 and
    the greedy colouring stands (three routes pairwise in conflict at three different switches)."""
    switch = np.array([[10, 11], [10, 12], [11, 12]])
    port = np.array([[1, 1], [2, 1], [2, 2]])
    hops, dst = Hops(switch, port), np.zeros(3, dtype=np.int64)
    offsets, bound = colour_flows(dst, hops)
    assert bound == 3 and sorted(offsets.tolist()) == [0, 1, 2]
    assert agree_per_offset(dst, hops, offsets)


# ----- solver backends: every status ------------------------------------------------------------

def assignment_problem(items, candidates, objective):
    """`items` items each pick one of `candidates`; each candidate takes at most one item (plus z when
    `objective`, minimized): feasible iff items <= candidates, else the optimum is z = 1 (items <= 2c)."""
    builder = ProblemBuilder(np.full(items, candidates))
    for k in range(candidates):
        builder.add(np.arange(items), k, upper=1, capped=objective)
    return builder.build(z_upper=items if objective else 0)


def random_3sat(variables=300, clauses=1500, seed=0, objective=False):
    """Random 3-SAT at 5 clauses per variable (unsatisfiable; refuting it takes CP-SAT seconds and
    the MIP solvers far longer). As a feasibility model each clause is a group `at least one literal
    true`; with `objective`, `false literals <= 2 + z` (z = 1 is trivial to reach, z = 0 impossible)."""
    rng = np.random.default_rng(seed)
    builder = ProblemBuilder(np.full(variables, 2))
    for _ in range(clauses):
        items, signs = rng.choice(variables, 3, replace=False), rng.integers(0, 2, 3)
        if objective:
            builder.add(items, 1 - signs, upper=2, capped=True)
        else:
            builder.add(items, signs, lower=1)
    return builder.build(z_upper=1 if objective else 0)


@pytest.mark.parametrize("solver", SOLVERS)
def test_backend_reports_optimal_and_infeasible(solver):
    result = solve(assignment_problem(3, 3, objective=False), solver)
    assert result.status == OPTIMAL and result.solver == solver
    assert sorted(result.choice.tolist()) == [0, 1, 2]
    result = solve(assignment_problem(5, 3, objective=True), solver)
    assert result.status == OPTIMAL and result.objective == 1 and result.best_bound == 1
    assert assignment_problem(5, 3, objective=True).violations(result.choice, 1) == 0
    result = solve(assignment_problem(4, 3, objective=False), solver)
    assert result.status == INFEASIBLE and result.choice is None


def weighted_bins(weights, bins, lower=0):
    """Items of `weights` each go into one of `bins` bins; every bin holds at most z of weight
    (minimized) and, with `lower`, at least `lower`."""
    weights = np.asarray(weights)
    builder = ProblemBuilder(np.full(len(weights), bins), weight=weights)
    for k in range(bins):
        builder.add(np.arange(len(weights)), k, lower=lower, capped=True)
    return builder.build(z_upper=int(weights.sum()))


def brute_force_bins(weights, bins, lower=0):
    """The least maximum bin weight over every assignment with each bin at least `lower`."""
    best = None
    for assignment in itertools.product(range(bins), repeat=len(weights)):
        load = np.bincount(assignment, weights=weights, minlength=bins)
        if load.min() >= lower and (best is None or load.max() < best):
            best = int(load.max())
    return best


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("weights, bins, lower", [([5, 4, 3, 3, 2, 2, 1], 3, 0), ([9, 7, 6, 5, 1], 2, 0),
                                                  ([8, 1, 1, 1, 1], 3, 2), ([6, 6, 5, 2, 2, 1], 3, 0)])
def test_backends_weigh_items(solver, weights, bins, lower):
    """Weighted groups (the bytes objective's form): every backend reaches the brute-force optimum."""
    problem = weighted_bins(weights, bins, lower)
    result = solve(problem, solver)
    assert result.status == OPTIMAL
    assert result.objective == brute_force_bins(np.array(weights), bins, lower)
    assert problem.violations(result.choice, result.objective) == 0
    assert problem.objective(result.choice) == result.objective


# Limits the models above cannot be finished in: CP-SAT's are deterministic time; glpsol takes whole
# seconds only.
NO_TIME = {"cpsat": 0.001, "cbc": 0.001, "highs": 0.001, "glpk": 1}
SHORT_TIME = {"cpsat": 0.05, "cbc": 1, "highs": 1, "glpk": 1}


@pytest.mark.parametrize("solver", SOLVERS)
def test_backend_reports_timeout_without_a_solution(solver):
    result = solve(random_3sat(), solver, time_limit=NO_TIME[solver])
    assert result.status == TIMEOUT and result.choice is None


@pytest.mark.parametrize("solver", SOLVERS)
def test_backend_reports_feasible_when_the_limit_stops_the_proof(solver):
    """z = 1 is found at once (CP-SAT from a hint), z = 0 cannot be refuted in the limit."""
    problem = random_3sat(objective=True)
    result = solve(problem, solver, time_limit=SHORT_TIME[solver], hint=np.zeros(problem.num_items, dtype=np.int64))
    assert result.status == FEASIBLE and result.objective == 1
    assert problem.violations(result.choice, 1) == 0
    assert result.best_bound is None or result.best_bound < 1
