"""OR-Tools CP-SAT backend (OR-Tools imported on the first solve: the registry imports this module to list it)."""

from __future__ import annotations

import time

import numpy as np

from synth.core.interrupt import native
from synth.solve.problem import FEASIBLE, INFEASIBLE, OPTIMAL, TIMEOUT, Backend, ChoiceProblem, SolveResult


# Reproducible settings for every CP-SAT call in synth. Several workers search deterministically
# only when interleaved; a time limit is CP-SAT's deterministic time (work units, measured here at
# 0.5 per second on one core, 1.2 per second with two interleaved workers), so a run that stops at
# its limit stops at the same point every time. The wall clock only guards against a runaway call.
# A share of a wall-clock budget (synth.solve.budget: `synthesize --time-limit`) comes as both: its
# work in deterministic time, and the seconds it has left as the clock's cap.
WALL_CLOCK_FACTOR = 4


def configure(parameters, time_limit: float | None, threads: int, seed: int = 0,
              wall_limit: float | None = None) -> None:
    # CP-SAT otherwise installs its own SIGINT handler for each solve and afterwards resets SIGINT
    # to the default action, not to what it was: a worker process that ignores SIGINT (Ctrl-C goes
    # to the whole process group; the parent alone decides, synth.core.interrupt) would then die
    # of the next Ctrl-C mid-task and leave the pool waiting for its result forever.
    parameters.catch_sigint_signal = False
    parameters.num_workers = max(1, threads)
    parameters.random_seed = seed
    if threads > 1:
        parameters.interleave_search = True
    if time_limit:
        parameters.max_deterministic_time = float(time_limit)
        parameters.max_time_in_seconds = WALL_CLOCK_FACTOR * float(time_limit) + 1.0
    if wall_limit is not None:  # a share of a wall-clock budget (synth.solve.budget): the clock's own cap
        parameters.max_time_in_seconds = float(wall_limit)


def run_solver(solver, model) -> int:
    """solver.solve(model), interruptible: in the main thread a signal waits for the end of a native
    call, so the solve runs under `native` and an interrupt stops its search (synth.core.interrupt).
    Every CP-SAT solve in synth goes through here."""
    return native(lambda: solver.solve(model), stop=solver.stop_search)


def solve_cpsat(problem: ChoiceProblem, time_limit: float | None, threads: int, hint: np.ndarray | None = None,
                seed: int = 0, wall_limit: float | None = None) -> SolveResult:
    """`time_limit`: deterministic time; `wall_limit`: seconds for the whole call, the model's
    building included (what the building took is taken off the solver's cap)."""
    from ortools.sat.python import cp_model

    start = time.perf_counter()
    model = cp_model.CpModel()
    variables = []
    for k in problem.num_candidates.tolist():
        if k == 2:  # one literal and its negation: no exactly-one constraint needed
            b = model.new_bool_var("")
            variables.append([~b, b])
        else:
            row = [model.new_bool_var("") for _ in range(int(k))]
            model.add_exactly_one(row)
            variables.append(row)
    zs = [model.new_int_var(0, max(problem.z_upper, 0), f"z{k}") for k in range(problem.num_z)]
    z_index, z_coef = problem.group_z()
    items, cands = problem.group_items.tolist(), problem.group_candidates.tolist()
    ptr, sizes = problem.group_ptr.tolist(), problem.group_sizes().tolist()
    weight = problem.weight.tolist() if problem.weight is not None else None
    for g in range(problem.num_groups):
        pairs = range(ptr[g], ptr[g + 1])
        if weight is None:
            expr = sum(variables[items[j]][cands[j]] for j in pairs)
        else:
            expr = cp_model.LinearExpr.weighted_sum([variables[items[j]][cands[j]] for j in pairs], [weight[items[j]] for j in pairs])
        if problem.capped[g]:
            model.add(expr <= int(problem.upper[g]) + int(z_coef[g]) * zs[z_index[g]])
        else:
            if problem.upper[g] < sizes[g]:
                model.add(expr <= int(problem.upper[g]))
        if problem.lower[g] > 0:
            model.add(expr >= int(problem.lower[g]))
    if zs:
        model.minimize(sum(zs))
    if hint is not None:
        for z, value in zip(zs, problem.z_values(hint).tolist()):  # a complete hint: CP-SAT then starts from a
            model.add_hint(z, value)  # feasible solution
        for row, chosen in zip(variables, hint.tolist()):
            if len(row) == 2:
                model.add_hint(row[1], chosen == 1)
                continue
            for k, var in enumerate(row):
                model.add_hint(var, k == chosen)
    solver = cp_model.CpSolver()
    left = None if wall_limit is None else max(1e-3, wall_limit - (time.perf_counter() - start))
    configure(solver.parameters, time_limit, threads, seed, left)
    if not zs:
        # Pure feasibility: the LP relaxation only costs time (measured on 250-message, 4-link
        # layer models: 0.4-1.6 s with it, 0.05-0.07 s without).
        solver.parameters.linearization_level = 0
    code = run_solver(solver, model)
    seconds = time.perf_counter() - start
    work = float(solver.deterministic_time)
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        choice = np.array([next(k for k, v in enumerate(row) if solver.boolean_value(v)) for row in variables], dtype=np.int64)
        objective = int(sum(solver.value(z) for z in zs)) if zs else None
        bound = int(round(solver.best_objective_bound)) if zs else None
        # A feasibility problem is solved by any solution; an objective needs the proof.
        status = OPTIMAL if code == cp_model.OPTIMAL or not zs else FEASIBLE
        return SolveResult(status, choice, objective, bound, "cpsat", seconds, work)
    if code == cp_model.INFEASIBLE:
        return SolveResult(INFEASIBLE, None, solver="cpsat", seconds=seconds, work=work)
    return SolveResult(TIMEOUT, None, solver="cpsat", seconds=seconds, work=work)


SOLVER = Backend("cpsat", "OR-Tools CP-SAT (deterministic time limits, interleaved threads, hints)",
                 lambda problem, time_limit, threads, hint, glpk_options, seed, wall_limit=None:
                 solve_cpsat(problem, time_limit, threads, hint, seed, wall_limit), deterministic=True, order=10)
