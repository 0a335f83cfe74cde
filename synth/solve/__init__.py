"""ILP backends for the choice problem form (synth.solve.problem)."""

from __future__ import annotations

import numpy as np

from synth.core.registry import Registry
from synth.solve.budget import Share
from synth.solve.problem import Backend, ChoiceProblem, ProblemBuilder, SolveResult

MIN_LIMIT = 1e-3  # a spent share still gets a call this short (a limit of 0 would be none)

# Each backend is one module of this package that declares `SOLVER = Backend(...)` (synth.solve.problem.Backend).
SOLVERS: Registry[Backend] = Registry("solver", __name__, "SOLVER", order=lambda backend: backend.order)


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


__all__ = ["SOLVERS", "Backend", "ChoiceProblem", "ProblemBuilder", "SolveResult", "check_solver", "solve"]
