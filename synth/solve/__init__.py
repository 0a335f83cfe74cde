"""ILP backends for the choice problem form (synth.solve.problem)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from synth.core.errors import SynthError
from synth.core.registry import Registry
from synth.solve.budget import Share
from synth.solve.problem import ChoiceProblem, ProblemBuilder, SolveResult

MIN_LIMIT = 1e-3  # a spent share still gets a call this short (a limit of 0 would be none)

@dataclass(frozen=True)
class Backend:
    """A solver backend: run(problem, time_limit, threads, hint, glpk_options, seed, wall_limit) ->
    SolveResult. A backend that counts deterministic work (`deterministic`) takes `time_limit` in
    it and `wall_limit` as the clock's cap; the others take seconds in `time_limit`."""

    name: str
    summary: str
    run: Callable
    deterministic: bool = False


def _cpsat(problem, time_limit, threads, hint, glpk_options, seed, wall_limit=None):
    from synth.solve.cpsat import solve_cpsat
    return solve_cpsat(problem, time_limit, threads, hint, seed, wall_limit)


def _cbc(problem, time_limit, threads, hint, glpk_options, seed, wall_limit=None):
    from synth.solve.pulp_backend import solve_pulp
    return solve_pulp(problem, "cbc", time_limit, threads)


def _highs(problem, time_limit, threads, hint, glpk_options, seed, wall_limit=None):
    return _solve_highs_isolated(problem, time_limit, threads)


def _glpk(problem, time_limit, threads, hint, glpk_options, seed, wall_limit=None):
    from synth.solve.glpk import solve_glpk
    return solve_glpk(problem, time_limit, glpk_options)


# The backends, in the order help texts list them; a new one is one entry here and its module.
SOLVERS: Registry[Backend] = Registry("solver")
for _backend in (
    Backend("cpsat", "OR-Tools CP-SAT (deterministic time limits, interleaved threads, hints)", _cpsat, True),
    Backend("cbc", "COIN-OR CBC through PuLP", _cbc),
    Backend("highs", "HiGHS through PuLP, in a helper process (OR-Tools links its own HiGHS)", _highs),
    Backend("glpk", "GLPK's glpsol on a MathProg model (models/assignment.mod)", _glpk),
):
    SOLVERS.register(_backend.name, _backend)


def check_solver(name: str) -> str:
    SOLVERS.get(name)  # one line naming the known ones when it is not
    return name


def solve(
    problem: ChoiceProblem,
    solver: str = "cpsat",
    time_limit: float | None = None,
    threads: int = 1,
    hint: np.ndarray | None = None,
    glpk_options: tuple[str, ...] | None = None,
    seed: int = 0,
    share: Share | None = None,
) -> SolveResult:
    """Solve with one backend; every backend returns the same SolveResult shape and statuses.
    `share` (synth.solve.budget) replaces `time_limit`: CP-SAT stops at its work (deterministic)
    or its deadline (the clock's cap), whichever comes first; the other backends at its deadline."""
    backend = SOLVERS.get(solver)
    if share is None:
        return backend.run(problem, time_limit, threads, hint, glpk_options, seed)
    seconds = max(share.seconds_left(), MIN_LIMIT)
    if backend.deterministic:
        return backend.run(problem, max(share.work, MIN_LIMIT), threads, hint, glpk_options, seed, seconds)
    return backend.run(problem, seconds, threads, hint, glpk_options, seed)


def _solve_highs_isolated(problem: ChoiceProblem, time_limit: float | None, threads: int) -> SolveResult:
    """HiGHS runs in a helper process (python -m synth.solve.highs_worker): OR-Tools links its own
    copy of HiGHS, and the two libraries cannot be loaded into one process (each then fails with
    undefined symbols of the other)."""
    import pickle
    import subprocess
    import sys

    payload = pickle.dumps((problem, time_limit, threads))
    run = subprocess.run([sys.executable, "-m", "synth.solve.highs_worker"], input=payload, capture_output=True)
    if run.returncode != 0:
        message = run.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise SynthError(f"the HiGHS helper process failed: {message[0]}")
    return pickle.loads(run.stdout)


__all__ = ["SOLVERS", "Backend", "ChoiceProblem", "ProblemBuilder", "SolveResult", "check_solver", "solve"]
