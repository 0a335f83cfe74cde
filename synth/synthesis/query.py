"""One point of the front asked for: is there a schedule of `steps` steps and at most `rounds`
rounds with the plan's chunks (SCCL's (C, S, R) query)? The step program at that step count answers:
`satisfiable` (with the schedule), `impossible` (proven: its least rounds are more), or `unknown`
(its budget ran out first). The answer is about schedules over the plan's transfers, each rank pair
on its one path; with the symmetric program, about translation-invariant ones, which the answer
says (a symmetric `impossible` proves nothing about the others)."""

from __future__ import annotations

from dataclasses import dataclass

from synth.core.errors import SynthError
from synth.solve import solve
from synth.solve.budget import Budget
from synth.measure.cuts import integer_bandwidth
from synth.synthesis.exact import FrontPoint, LoadClasses, build_program, decode, delivery
from synth.synthesis.front import Context, HalfContext, point_maker

SPREADING = ("allgather", "reduce-scatter", "broadcast", "reduce")
SATISFIABLE, IMPOSSIBLE, UNKNOWN = "satisfiable", "impossible", "unknown"


def check_queried(name: str) -> None:
    """One line where the collective has no single step program to ask."""
    if name not in SPREADING:
        raise SynthError(f"--query asks the step program of {', '.join(SPREADING)}, not of {name}"
                         + (" (its halves are programs of their own: query its reduce-scatter and allgather)"
                            if name == "allreduce" else ""))


@dataclass
class Answer:
    status: str  # satisfiable | impossible | unknown
    rounds: int | None  # the least rounds found at that step count (proven least where the solver says so)
    solver_status: str
    scope: str  # the schedules the answer is about
    make: object = None  # satisfiable: the function making the schedule


def query(plan, steps: int, rounds: int, time_limit: float, solver: str = "cpsat", say=lambda text: None) -> Answer:
    check_queried(plan.collective)
    if plan.trees_only:
        raise SynthError(f"--query: {plan.topology.spec} has no step program here (more than the exact program's "
                         "ranks and no translations)")
    if steps < 1:
        raise SynthError("--query: at least one step")
    half = HalfContext.of(Context(plan, time_limit, solver, say), plan.collective, time_limit)
    if steps < half.least:
        return Answer(IMPOSSIBLE, None, "step bound", f"schedules over {plan.graph.reach} transfers: the step bound "
                      f"is {half.least}")
    scope = (f"schedules over {plan.graph.reach} transfers, each rank pair on its {plan.graph.router} path"
             + ("" if plan.symmetry is None else ", translation-invariant ones"))
    bandwidth = integer_bandwidth(half.network)
    classes = LoadClasses.channels(bandwidth) if half.symmetry is None else LoadClasses.orbits(half.symmetry, bandwidth)
    route = delivery(plan.graph, half.reverse)
    problem = build_program(half.spread, route, plan.graph, classes, steps)
    result = solve(problem, solver, share=Budget(time_limit, 1).share())
    say(f"{steps} steps, {plan.chunks} chunks: {result.status}"
        + (f", {int(result.objective)} rounds" if result.solved else ""))
    if not result.solved:
        status = IMPOSSIBLE if result.status == "infeasible" else UNKNOWN
        return Answer(status, None, result.status, scope)
    found = int(result.objective)
    if found <= rounds:
        point = FrontPoint(steps, found, result.status, result.seconds, decode(half.spread, route, result.choice))
        make = point_maker(plan, plan.collective, point, len(half.sources), half.reverse, half.symmetry,
                           half.designed)
        return Answer(SATISFIABLE, found, result.status, scope, make)
    return Answer(IMPOSSIBLE if result.status == "optimal" else UNKNOWN, found, result.status, scope)
