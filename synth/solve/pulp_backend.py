"""PuLP backends: CBC (bundled with PuLP) and HiGHS (through highspy, in a helper process).

PuLP is imported inside the calls: the solver registry imports this module to list the backends, and
HiGHS must never load into a process that has OR-Tools (see `_solve_highs_isolated`)."""

from __future__ import annotations

import os
import time
import warnings

import numpy as np

from synth.core.errors import SynthError
from synth.core.interrupt import child_processes, kill_processes, native
from synth.solve.problem import FEASIBLE, INFEASIBLE, OPTIMAL, TIMEOUT, Backend, ChoiceProblem, SolveResult


def _solver(name: str, time_limit: float | None, threads: int):
    import pulp

    if name == "cbc":
        return pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit, threads=max(1, threads))
    if name == "highs":
        solver = pulp.HiGHS(msg=False, timeLimit=time_limit, threads=max(1, threads))
        if not solver.available():
            raise SynthError("the HiGHS backend needs the highspy package: pip install highspy")
        return solver
    raise ValueError(name)


def solve_pulp(problem: ChoiceProblem, name: str, time_limit: float | None, threads: int) -> SolveResult:
    with warnings.catch_warnings():  # PuLP 3 announces its 4.0 API on every variable
        warnings.simplefilter("ignore", DeprecationWarning)
        return _solve_pulp(problem, name, time_limit, threads)


def _solve_pulp(problem: ChoiceProblem, name: str, time_limit: float | None, threads: int) -> SolveResult:
    import pulp

    start = time.perf_counter()
    model = pulp.LpProblem("synth", pulp.LpMinimize)
    variables = [[pulp.LpVariable(f"x_{i}_{k}", cat="Binary") for k in range(int(n))]
                 for i, n in enumerate(problem.num_candidates.tolist())]
    for i, row in enumerate(variables):
        model += pulp.lpSum(row) == 1, f"one_{i}"
    zs = [pulp.LpVariable(f"z_{k}", lowBound=0, upBound=max(problem.z_upper, 0), cat="Integer") for k in range(problem.num_z)]
    z_index, z_coef = problem.group_z()
    model += pulp.lpSum(zs)
    items, cands = problem.group_items.tolist(), problem.group_candidates.tolist()
    ptr, sizes = problem.group_ptr.tolist(), problem.group_sizes().tolist()
    weight = problem.item_weights().tolist()
    for g in range(problem.num_groups):
        expr = pulp.lpSum(weight[items[j]] * variables[items[j]][cands[j]] for j in range(ptr[g], ptr[g + 1]))
        if problem.capped[g]:
            model += expr <= int(problem.upper[g]) + int(z_coef[g]) * zs[z_index[g]], f"cap_{g}"
        elif problem.upper[g] < sizes[g]:
            model += expr <= int(problem.upper[g]), f"up_{g}"
        if problem.lower[g] > 0:
            model += expr >= int(problem.lower[g]), f"low_{g}"
    solver = _solver(name, time_limit, threads)
    # CBC runs as a child process that PuLP waits for: under `native` an interrupt stops the run
    # at once, and the CBC binary is killed instead of left to its time limit.
    native(lambda: model.solve(solver), stop=lambda: kill_processes(child_processes(os.getpid(), "cbc")))
    seconds = time.perf_counter() - start
    has_solution = model.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
    if has_solution:
        choice = np.array([max(range(len(row)), key=lambda k: row[k].value() or 0) for row in variables], dtype=np.int64)
        objective = int(sum(round(z.value()) for z in zs)) if zs else None
        if problem.violations(choice, objective):
            has_solution = False  # a solver's "solution" that breaks a bound is no solution
    if has_solution:
        proven = model.sol_status == pulp.LpSolutionOptimal and model.status == pulp.LpStatusOptimal
        status = OPTIMAL if proven or not zs else FEASIBLE
        return SolveResult(status, choice, objective, objective if status == OPTIMAL else None, name, seconds)
    if model.status == pulp.LpStatusInfeasible:
        return SolveResult(INFEASIBLE, None, solver=name, seconds=seconds)
    return SolveResult(TIMEOUT, None, solver=name, seconds=seconds)


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


SOLVER = (
    Backend("cbc", "COIN-OR CBC through PuLP",
            lambda problem, time_limit, threads, hint, glpk_options, seed, wall_limit=None:
            solve_pulp(problem, "cbc", time_limit, threads), order=20),
    Backend("highs", "HiGHS through PuLP, in a helper process (OR-Tools links its own HiGHS)",
            lambda problem, time_limit, threads, hint, glpk_options, seed, wall_limit=None:
            _solve_highs_isolated(problem, time_limit, threads), order=30),
)
