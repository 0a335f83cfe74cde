"""ILP backends for the choice problem form (synth.solve.problem)."""

from __future__ import annotations

import numpy as np

from synth.core.errors import SynthError
from synth.solve.problem import ChoiceProblem, ProblemBuilder, SolveResult

SOLVERS = ("cpsat", "cbc", "highs", "glpk")


def check_solver(name: str) -> str:
    if name not in SOLVERS:
        raise SynthError(f"unknown solver '{name}' (known: {', '.join(SOLVERS)})")
    return name


def solve(
    problem: ChoiceProblem,
    solver: str = "cpsat",
    time_limit: float | None = None,
    threads: int = 1,
    hint: np.ndarray | None = None,
    glpk_options: tuple[str, ...] | None = None,
    seed: int = 0,
) -> SolveResult:
    """Solve with one backend; every backend returns the same SolveResult shape and statuses."""
    check_solver(solver)
    if solver == "cpsat":
        from synth.solve.cpsat import solve_cpsat
        return solve_cpsat(problem, time_limit, threads, hint, seed)
    if solver == "cbc":
        from synth.solve.pulp_backend import solve_pulp
        return solve_pulp(problem, solver, time_limit, threads)
    if solver == "highs":
        return _solve_highs_isolated(problem, time_limit, threads)
    from synth.solve.glpk import solve_glpk
    return solve_glpk(problem, time_limit, glpk_options)


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


__all__ = ["SOLVERS", "ChoiceProblem", "ProblemBuilder", "SolveResult", "check_solver", "solve"]
