"""GLPK backend: glpsol runs the MathProg model synth/models/assignment.mod on a data file synth writes."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from synth.core.errors import SynthError
from synth.solve.problem import FEASIBLE, INFEASIBLE, OPTIMAL, TIMEOUT, Backend, ChoiceProblem, SolveResult

MODEL = Path(__file__).resolve().parent.parent / "models" / "assignment.mod"
# The options of the seed's runs ([Prisacari20], sec. 3.6), minus --exact (slow, and
# rational arithmetic buys nothing on a 0/1 model).
DEFAULT_OPTIONS = ("--intopt", "--binarize", "--fpump")


def write_data(problem: ChoiceProblem, handle, out_path: str) -> None:
    """The MathProg data section for assignment.mod."""
    write = handle.write
    write("data;\n")
    write("set I := " + " ".join(map(str, range(problem.num_items))) + ";\n")
    write("set A :=")
    for i, n in enumerate(problem.num_candidates.tolist()):
        write("".join(f" {i} {k}" for k in range(n)))
    write(";\n")
    write("set G := " + " ".join(map(str, range(problem.num_groups))) + ";\n")
    items, cands, ptr = problem.group_items.tolist(), problem.group_candidates.tolist(), problem.group_ptr.tolist()
    for g in range(problem.num_groups):
        write(f"set P[{g}] :=" + "".join(f" {items[j]} {cands[j]}" for j in range(ptr[g], ptr[g + 1])) + ";\n")
    for name, values in (("lower", problem.lower), ("upper", problem.upper), ("capped", problem.capped.astype(int))):
        write(f"param {name} :=" + "".join(f" {g} {v}" for g, v in enumerate(values.tolist())) + ";\n")
    if problem.weight is not None:
        write("param weight :=" + "".join(f" {i} {w}" for i, w in enumerate(problem.weight.tolist())) + ";\n")
    if problem.z_index is not None or problem.z_coef is not None:
        index, coef = problem.group_z()
        write("set K := " + " ".join(map(str, range(max(problem.num_z, 1)))) + ";\n")
        write("param zof :=" + "".join(f" {g} {k}" for g, k in enumerate(index.tolist())) + ";\n")
        write("param zcoef :=" + "".join(f" {g} {c}" for g, c in enumerate(coef.tolist())) + ";\n")
    write(f"param zmax := {max(problem.z_upper, 0)};\n")
    write(f'param out := "{out_path}";\n')
    write("end;\n")


def solve_glpk(problem: ChoiceProblem, time_limit: float | None, options: tuple[str, ...] | None = None) -> SolveResult:
    glpsol = shutil.which("glpsol")
    if glpsol is None:
        raise SynthError("the glpk backend needs glpsol: apt-get install glpk-utils")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="synth-glpk-") as tmp:
        data, out = Path(tmp) / "problem.dat", Path(tmp) / "solution.txt"
        with open(data, "w") as handle:
            write_data(problem, handle, str(out))
        command = [glpsol, "--math", str(MODEL), "--data", str(data), *(options or DEFAULT_OPTIONS)]
        if time_limit:
            command += ["--tmlim", str(max(1, int(np.ceil(time_limit))))]
        try:
            run = subprocess.run(command, capture_output=True, text=True, timeout=_wall_clock_cap(time_limit))
        except subprocess.TimeoutExpired:  # glpsol checks --tmlim only in its search, not while presolving
            return SolveResult(TIMEOUT, None, solver="glpk", seconds=time.perf_counter() - start)
        log = run.stdout + run.stderr
        seconds = time.perf_counter() - start
        if "NO INTEGER FEASIBLE SOLUTION" in log or "NO PRIMAL FEASIBLE SOLUTION" in log:
            return SolveResult(INFEASIBLE, None, solver="glpk", seconds=seconds)
        if run.returncode != 0 and "TIME LIMIT" not in log:
            last = [line for line in log.splitlines() if line.strip()][-1:] or ["no output"]
            raise SynthError(f"glpsol failed: {last[0]}")
        choice, objective = _read_solution(out, problem.num_items)
    if choice is None or problem.violations(choice, objective if problem.has_objective else None):
        return SolveResult(TIMEOUT, None, solver="glpk", seconds=seconds)
    proven = "INTEGER OPTIMAL SOLUTION FOUND" in log and "TIME LIMIT" not in log
    status = OPTIMAL if proven or not problem.has_objective else FEASIBLE
    return SolveResult(status, choice, objective if problem.has_objective else None,
                       objective if status == OPTIMAL and problem.has_objective else None, "glpk", seconds)


def _wall_clock_cap(time_limit: float | None) -> float | None:
    """glpsol may overrun --tmlim by minutes (measured: over 4 min with a 60 s limit on the seed's
    per-layer model of a 1024-leaf phase); the process is stopped at 1.5 times the limit plus 10 s."""
    return None if not time_limit else 1.5 * time_limit + 10


def _read_solution(path: Path, num_items: int) -> tuple[np.ndarray | None, int | None]:
    if not path.exists():
        return None, None
    choice = np.full(num_items, -1, dtype=np.int64)
    objective = None
    for line in path.read_text().splitlines():
        parts = line.split()
        if parts[0] == "z":
            objective = int(parts[1])
        else:
            choice[int(parts[0])] = int(parts[1])
    return (choice if (choice >= 0).all() else None), objective


SOLVER = Backend("glpk", "GLPK's glpsol on a MathProg model (models/assignment.mod)",
                 lambda problem, time_limit, threads, hint, glpk_options, seed, wall_limit=None:
                 solve_glpk(problem, time_limit, glpk_options), order=40)


_CHECKED_OPTIONS: dict[tuple[str, ...], str | None] = {}


def check_glpk_options(options: tuple[str, ...] | None) -> None:
    """glpsol run once with `options` on a one-item model, so that an option it refuses is one line
    before any routing, even where no solve of the run reaches glpsol (the layered router orients
    most splits without a solver)."""
    if not options:
        return
    if options not in _CHECKED_OPTIONS:
        from synth.solve.problem import ProblemBuilder

        builder = ProblemBuilder(np.array([2], dtype=np.int64))
        builder.add(np.array([0]), 1, upper=1)
        try:
            solve_glpk(builder.build(), 10, options)
            _CHECKED_OPTIONS[options] = None
        except SynthError as exc:
            _CHECKED_OPTIONS[options] = str(exc)
    if _CHECKED_OPTIONS[options] is not None:
        raise SynthError(f"--glpk-options {' '.join(options)}: {_CHECKED_OPTIONS[options]}")
