"""What a time limit in wall-clock seconds buys the solver, spent so that reruns stay identical.

`synth synthesize --time-limit S` (and `compare --synthesize`) is a budget of S wall-clock seconds
for every program the run solves, split as shares among them: a spreading collective's step counts
(equal shares of its part), an all-to-all's routing program (the whole). A program that is proven
stops there and the run goes on without waiting for the rest of its share.

CP-SAT spends a share as deterministic time (work units that count the solver's own operations,
not the clock), WORK_PER_SECOND units per second of share, so a rerun stops at the same point and
writes the same bytes. The clock is the guard: each call is also capped at the seconds its budget
has left, measured (model building included), plus CLOCK_GRACE, so the programs take at most S +
CLOCK_GRACE seconds in all. The work rate is set below every rate measured here
(one worker: 0.36 to 0.9 units per wall second on the loaded 2-core machine, model building
included, the 240-pair alltoallv routing program and the 30-rank Kautz allgather programs), so the
work runs out first and the clock only binds on a machine more than three times slower than one
unit per second: then the point says `feasible` or `timeout` (never optimal) and a rerun may differ.
CBC, HiGHS and glpsol honour the seconds themselves (wall clock: their reruns may differ).

A Budget hands its programs out in order: each gets an equal share of the seconds plus what the
earlier ones left, the leftover counted in work (deterministic), never more than the clock has left.

`reproducible()` (`--reproducible`, the API's `reproducible=True`) trades the seconds for the bytes:
within it the work alone ends a call and the clock is only a runaway guard, RUNAWAY_FACTOR times
the seconds the work stands for, so the same command gives the same schedule on any machine that
is not that much slower than one unit per 3 s, and may take longer than its time limit where it
is slower (a CI runner shared with other jobs: issue 43's landing found one). SYNTH_REPRODUCIBLE=1
in the environment makes it the default for a whole process and the commands it starts (the test
suite sets it: its figures must not depend on how loaded the machine is).
"""

from __future__ import annotations

import contextvars
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass

WORK_PER_SECOND = 1 / 3  # CP-SAT deterministic time per wall-clock second of a share (one unit per 3 s)
# The clock's cap of a call lies this far past its share: CP-SAT's start (loading the model, presolve)
# costs a few hundredths of a second of little work, which a share of a tenth of a second would
# otherwise spend on the clock. A late call's excess is taken off the next ones' clock, so the whole
# budget overruns by one grace at most.
CLOCK_GRACE = 0.5
# Under reproducible(): a call's clock guard, in multiples of the seconds its work stands for.
RUNAWAY_FACTOR = 4
_WORK_ONLY = contextvars.ContextVar("synth_budget_work_only",
                                    default=os.environ.get("SYNTH_REPRODUCIBLE", "") not in ("", "0"))


@contextmanager
def reproducible(on: bool = True):
    """Within: every share ends at its work, the clock a runaway guard alone (see the module);
    `on` False: no change (the default, or SYNTH_REPRODUCIBLE's)."""
    if not on:
        yield
        return
    token = _WORK_ONLY.set(bool(on))
    try:
        yield
    finally:
        _WORK_ONLY.reset(token)


def clock_deadline(seconds: float) -> float:
    """time.perf_counter() at which `seconds` of a budget end on the clock: `seconds` from now, or
    under reproducible() RUNAWAY_FACTOR times that."""
    return time.perf_counter() + float(seconds) * (RUNAWAY_FACTOR if _WORK_ONLY.get() else 1)


def work_of(seconds: float) -> float:
    """The deterministic time that `seconds` of wall clock buy CP-SAT."""
    return float(seconds) * WORK_PER_SECOND


@dataclass(frozen=True)
class Share:
    """One solver call's limits: `work` (CP-SAT's deterministic time: where a rerun stops too) and
    `deadline` (time.perf_counter() by which it ends: the clock's cap, model building included;
    the other backends' limit)."""

    work: float
    deadline: float

    def seconds_left(self) -> float:
        return self.deadline - time.perf_counter()

    def clock_ended(self) -> bool:
        """Whether the call just made ran to the clock's cap (not to its work or a proof): then its
        result is `feasible` or `timeout` and a rerun may differ."""
        return time.perf_counter() >= self.deadline - 0.01


def capped(work: float, deadline: float) -> Share:
    """A call's share of `work` whose clock ends at `deadline` (plus the grace); under
    reproducible() at RUNAWAY_FACTOR times the seconds the work stands for, whatever `deadline`."""
    if _WORK_ONLY.get():
        deadline = clock_deadline(work / WORK_PER_SECOND)
    return Share(work, deadline + CLOCK_GRACE)


class Budget:
    """`seconds` of wall clock for `programs` solver calls, handed out in order (see the module):
    `share()` before a program is built, `spend(share, work)` once it is solved."""

    def __init__(self, seconds: float, programs: int = 1, ledger: Budget | None = None):
        if programs < 1:
            raise ValueError("a budget is for one program or more")
        self.seconds, self.programs = float(seconds), int(programs)
        self.ledger = ledger  # a budget of several methods' programs, charged with what this one's spend too
        self.given = 0  # shares handed out
        self.work_spent = 0.0  # deterministic time the calls used (their seconds' worth where not counted)
        self.seconds_spent = 0.0  # wall clock the programs took, building and solving
        self._started = 0.0

    def share(self) -> Share:
        """The next program's limits: its equal share and the earlier ones' leftover, in work; the
        seconds allotted so far less those spent, on the clock."""
        self.given += 1
        allotted = self.seconds * min(self.given, self.programs) / self.programs
        self._started = time.perf_counter()
        return capped(max(0.0, work_of(allotted) - self.work_spent),
                      self._started + max(0.0, allotted - self.seconds_spent))

    def spend(self, share: Share, work: float | None) -> None:
        """A program's use of its share: the seconds since `share()`, and the deterministic time the
        backend reports (None: it does not count work; its seconds' worth is charged)."""
        seconds = time.perf_counter() - self._started
        spent = min(share.work, work_of(seconds) if work is None else float(work))
        for budget in (self, self.ledger) if self.ledger is not None else (self,):
            budget.seconds_spent += seconds
            budget.work_spent += spent

    def seconds_unspent(self, shares: int | None = None) -> float:
        """The seconds of the first `shares` equal shares (default all) whose work the programs left,
        counted in work so that a rerun leaves the same."""
        shares = self.programs if shares is None else shares
        return max(0.0, self.seconds * shares / self.programs - self.work_spent / WORK_PER_SECOND)


SYNTHESIS_TIME_HELP = (
    "wall-clock seconds for the programs the synthesis solves, in shares: equal ones for the step counts tried (each "
    "also gets what the earlier ones left; an allreduce's halves three eighths each and its "
    "whole methods' routing programs a quarter, which they solve first, the halves getting what they leave; a broadcast's program and its scatter's allgather each half), all of it for an all-to-all's routing program; a program proven optimal stops there. CP-SAT spends "
    f"a share as deterministic work, one unit per {1 / WORK_PER_SECOND:g} s, so reruns give the same schedule; the "
    f"clock caps each call at what is left (plus {CLOCK_GRACE:g} s in all), and on a machine too slow for the work it "
    "ends the call first: the point is then feasible or timeout and a rerun may differ. Planning, bounds, pricing and "
    "verifying come on top (default 60)")


REPRODUCIBLE_HELP = (
    "the same schedule on any machine: CP-SAT's work alone ends each program, the clock only a guard at "
    f"{RUNAWAY_FACTOR} times the seconds the work stands for, so a machine slower than one unit per "
    f"{1 / WORK_PER_SECOND:g} s takes longer than --time-limit instead of stopping early with another schedule")
