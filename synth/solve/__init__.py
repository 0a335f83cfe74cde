"""ILP backends for the choice problem form (synth.solve.problem)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from synth.core.errors import SynthError
from synth.core.registry import Registry
from synth.solve.problem import ChoiceProblem, ProblemBuilder, SolveResult

@dataclass(frozen=True)
class Backend:
    """A solver backend: run(problem, time_limit, threads, hint, glpk_options, seed) -> SolveResult."""

    name: str
    summary: str
    run: Callable


def _cpsat(problem, time_limit, threads, hint, glpk_options, seed):
    from synth.solve.cpsat import solve_cpsat
    return solve_cpsat(problem, time_limit, threads, hint, seed)


def _cbc(problem, time_limit, threads, hint, glpk_options, seed):
    from synth.solve.pulp_backend import solve_pulp
    return solve_pulp(problem, "cbc", time_limit, threads)


def _highs(problem, time_limit, threads, hint, glpk_options, seed):
    return _solve_highs_isolated(problem, time_limit, threads)


def _glpk(problem, time_limit, threads, hint, glpk_options, seed):
    from synth.solve.glpk import solve_glpk
    return solve_glpk(problem, time_limit, glpk_options)


# The backends, in the order help texts list them; a new one is one entry here and its module.
SOLVERS: Registry[Backend] = Registry("solver")
for _backend in (
    Backend("cpsat", "OR-Tools CP-SAT (deterministic time limits, interleaved threads, hints)", _cpsat),
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
) -> SolveResult:
    """Solve with one backend; every backend returns the same SolveResult shape and statuses."""
    return SOLVERS.get(solver).run(problem, time_limit, threads, hint, glpk_options, seed)


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
