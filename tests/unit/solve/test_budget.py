"""`--time-limit S` as a budget (synth.solve.budget): wall-clock seconds split as shares among the
programs a run solves, each spent by CP-SAT as deterministic work (WORK_PER_SECOND per second), the
clock a cap. No test here times anything: they read the limits handed to the backend."""

from __future__ import annotations

import pytest

import synth.solve.budget as budget_module
import synth.solve.cpsat as cpsat
from synth.app.synthesize import plan_synthesis, synthesize_parts
from synth.solve.budget import CLOCK_GRACE, WORK_PER_SECOND, Budget
from synth.solve.problem import OPTIMAL
from synth.topology import parse_topology

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def clock_binds():
    """These tests read the clock's cap as a plain run sets it, not the suite's reproducible default
    (tests/conftest.py sets SYNTH_REPRODUCIBLE=1)."""
    token = budget_module._WORK_ONLY.set(False)
    yield
    budget_module._WORK_ONLY.reset(token)


@pytest.fixture
def calls(monkeypatch):
    """Every CP-SAT call's (max_deterministic_time, max_time_in_seconds, deterministic time spent, status)."""
    seen = []
    run_solver = cpsat.run_solver

    def recording(solver, model):
        code = run_solver(solver, model)
        p = solver.parameters
        seen.append((p.max_deterministic_time, p.max_time_in_seconds, solver.deterministic_time, solver.status_name(code)))
        return code

    monkeypatch.setattr(cpsat, "run_solver", recording)
    return seen


def test_the_shares_sum_to_the_limit_and_what_a_program_leaves_passes_to_the_next():
    b = Budget(10.0, programs=5)
    works = []
    for k in range(5):
        share = b.share()
        works.append(share.work)
        assert share.seconds_left() <= 2.0 * (k + 1) + CLOCK_GRACE + 1e-6  # the clock: never past the allotted seconds
        b.spend(share, share.work if k != 1 else 0.0)  # the second is proven at once: it spends no work
    full = 2.0 * WORK_PER_SECOND
    assert works[:2] == pytest.approx([full, full])
    assert works[2] == pytest.approx(2 * full)  # its own share and all the second left
    assert works[3:] == pytest.approx([full, full])
    assert sum(w for k, w in enumerate(works) if k != 1) == pytest.approx(10.0 * WORK_PER_SECOND)


def test_a_synthesis_gives_cpsat_its_shares_of_the_limit_in_work_and_the_clock_as_the_cap(calls, monkeypatch):
    # an allreduce: the whole methods' programs (combining's routing by distinct ports) first, with a quarter of the
    # limit; then the halves with the rest and what the whole ones left, the allgather also getting what the
    # reduce-scatter's programs left; each half's step counts a fifth of its seconds plus what the earlier left
    from synth.synthesis.portfolio import WHOLE_PROGRAMS

    made = []
    init = Budget.__init__

    def recording(self, seconds, programs=1, ledger=None):
        init(self, seconds, programs, ledger)
        made.append(self)

    monkeypatch.setattr(Budget, "__init__", recording)
    limit = 4.0
    plan = plan_synthesis("allreduce", parse_topology("kautz:3,2"), time_limit=limit)
    synthesize_parts(plan, limit, generated=())
    wholes, halves = made[0], next(b for b in made if b.programs == 2 and b.ledger is None)
    assert wholes.seconds == pytest.approx(limit * WHOLE_PROGRAMS) and wholes.work_spent > 0
    left = limit * WHOLE_PROGRAMS - wholes.work_spent / WORK_PER_SECOND
    assert halves.seconds == pytest.approx(limit * (1 - WHOLE_PROGRAMS) + left)
    reduce_scatter, allgather = [b for b in made if b.ledger is halves]
    assert reduce_scatter.seconds == pytest.approx(halves.seconds / 2)
    assert allgather.seconds == pytest.approx(halves.seconds - reduce_scatter.work_spent / WORK_PER_SECOND)
    assert allgather.seconds > halves.seconds / 2  # the reduce-scatter was proven before its share was spent
    assert halves.work_spent == pytest.approx(reduce_scatter.work_spent + allgather.work_spent)
    firsts = [c for c in calls if c[0] == pytest.approx(reduce_scatter.seconds / 5 * WORK_PER_SECOND)]
    assert firsts, "the reduce-scatter's first step count gets a fifth of its seconds, as work"
    assert all(clock <= limit + CLOCK_GRACE + 1e-6 for _, clock, _, _ in calls)
    assert sum(min(spent, given) for given, _, spent, _ in calls) <= limit * WORK_PER_SECOND + 1e-9


def test_a_ledger_is_charged_with_what_its_budgets_spend_and_hands_on_the_rest():
    ledger = Budget(6.0, programs=2)
    first = Budget(ledger.seconds_unspent(1), programs=2, ledger=ledger)
    assert first.seconds == pytest.approx(3.0)
    share = first.share()
    first.spend(share, share.work / 3)  # proven with two thirds of its share left
    assert ledger.work_spent == pytest.approx(first.work_spent) and ledger.seconds_spent == first.seconds_spent
    # the second gets its own half and what the first left of its share
    assert ledger.seconds_unspent(2) == pytest.approx(6.0 - 1.5 / 3)
    assert ledger.seconds_unspent() == ledger.seconds_unspent(2)


def test_an_exchange_gives_its_routing_program_the_whole_limit(calls):
    limit = 1.5
    plan = plan_synthesis("alltoallv", parse_topology("torus:3,3"), sizes="random:65536:1", time_limit=limit)
    assert len(calls) == 1
    given, clock, spent, status = calls[0]
    assert given == pytest.approx(limit * WORK_PER_SECOND)
    assert clock <= limit + CLOCK_GRACE + 1e-6
    # cut off by its budget (the busiest load is above the candidate bound): never optimal
    report = plan.exchange.report
    assert status != "OPTIMAL" and report.exact != OPTIMAL and report.proven_by is None
    assert report.start_contention > report.candidate_bound


def test_a_step_count_cut_off_by_its_budget_is_not_called_optimal(calls):
    # 0.2 s for the step counts of kautz:4,2's symmetric program: 3 steps runs out of its work
    from synth.synthesis.front import Context, HalfContext
    from synth.synthesis.methods.program import METHOD

    plan = plan_synthesis("allgather", parse_topology("kautz:4,2"), time_limit=0.2)
    # the program's own front (the portfolio's drops the points others beat)
    front = METHOD.points(HalfContext.of(Context(plan, 0.2), "allgather", 0.2), [])
    programs = [point for point in front if point.method == "program"]  # one per call, step counts in order
    assert len(programs) == len(calls) >= 2
    assert any(status != "OPTIMAL" for _, _, _, status in calls)
    for point, (_, _, _, status) in zip(programs, calls):
        if status != "OPTIMAL":
            assert point.status != OPTIMAL and point.invariant_status != OPTIMAL


@pytest.mark.parametrize("argv", [
    ("alltoallv", "--network", "torus:3,3", "--sizes", "random:65536:1", "--time-limit", "1"),
    ("allgather", "--network", "kautz:4,2", "--time-limit", "0.2"),
])
def test_reruns_with_the_same_time_limit_are_byte_identical(run, tmp_path, monkeypatch, calls, argv):
    # where the work ends a call before the clock (the clock held off here: a loaded test machine must
    # not decide), the same inputs give the same bytes
    monkeypatch.setattr(budget_module, "CLOCK_GRACE", 1e6)
    outputs = []
    for k in range(2):
        out = tmp_path / f"s{k}.json"
        code, _, err = run("synthesize", *argv, "--out", out, "--quiet")
        assert code == 0, err
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    # the budget, not a proof, ended a program: the reruns stopped at the same work
    assert any(status != "OPTIMAL" and spent >= given * 0.999 for given, _, spent, status in calls)


def test_reproducible_ends_a_share_at_its_work_and_keeps_the_clock_as_a_runaway_guard_only():
    import time

    from synth.solve.budget import RUNAWAY_FACTOR, capped, clock_deadline, reproducible

    past = time.perf_counter() - 100.0  # a budget whose seconds a slow machine has already spent
    assert capped(1.0, past).clock_ended()  # a plain run: the clock ends the call at once
    with reproducible():
        share = capped(1.0, past)
        guard = RUNAWAY_FACTOR * 1.0 / WORK_PER_SECOND
        assert share.work == 1.0 and guard - 0.1 <= share.seconds_left() <= guard + CLOCK_GRACE
        assert clock_deadline(2.0) - time.perf_counter() == pytest.approx(2.0 * RUNAWAY_FACTOR, abs=0.1)
        b = Budget(1.0, 2)
        first = b.share()  # half a second's work, the guard four times its seconds
        assert first.work == pytest.approx(0.5 * WORK_PER_SECOND)
        assert first.seconds_left() > 0.5 * RUNAWAY_FACTOR
        with reproducible(False):  # False changes nothing
            assert capped(1.0, past).seconds_left() > 1.0
    assert capped(1.0, past).clock_ended()  # and the context ends with its block


def test_the_reproducible_option_reaches_the_solver(calls, run, monkeypatch):
    # kautz:4,2's allgather at 0.2 s: with --reproducible every CP-SAT call's clock cap is the guard
    # (RUNAWAY_FACTOR x its work's seconds, less the model's building), not the seconds the budget has left
    from synth.solve.budget import RUNAWAY_FACTOR

    monkeypatch.setattr(budget_module, "CLOCK_GRACE", 0.0)
    code, _, err = run("synthesize", "allgather", "--network", "kautz:4,2", "--time-limit", "0.2", "--reproducible",
                       "--quiet")
    assert code == 0, err and calls
    for given, clock, _, _ in calls:
        assert clock >= RUNAWAY_FACTOR / 2 * given / WORK_PER_SECOND
    assert budget_module._WORK_ONLY.get() is False  # the command leaves the process as it found it
    code, _, err = run("compare", "allgather", "--network", "torus:4", "--reproducible")
    assert code == 2 and "--reproducible applies to --synthesize" in err
