"""The time-expanded step program (synth.synthesis.exact): per step count from the step bound up,
the least total rounds, proven, over the plan's transfers; in its symmetric form the program of one
rank per orbit of the network's translations, translated to every rank (synth.synthesis.symmetry);
where the plan has no program (trees alone), the balanced breadth-first trees, or over every pair
each block straight in one step. The first point's steps prove the least steps with these
transfers; the least steps of one round each come from these points too."""

from __future__ import annotations

import dataclasses

from synth.synthesis.exact import FrontPoint, delivery, straight_point, synthesize_spread
from synth.synthesis.methods import HALF, Method


def _points(half, found) -> list[FrontPoint]:
    plan = half.plan
    if half.spread is None:  # thousands of ranks: the relay trees, no trees made delivery by delivery
        return []
    if plan.trees_only and plan.graph.reach == "all":  # breadth-first trees over every pair: straight sends
        point = straight_point(half.spread, plan.graph, half.network, half.reverse, half.rounds_bound)
        half.say(f"1 step over every pair: {point.rounds} rounds")
        return [point]
    front = synthesize_spread(half.spread, delivery(plan.graph, half.reverse), plan.graph, half.network, half.least,
                              time_limit=half.time_limit, solver=half.context.solver, rounds_bound=half.rounds_bound,
                              symmetry=half.symmetry, program=not plan.trees_only, say=half.say,
                              ledger=half.ledger)
    if half.symmetry is not None:
        front = [_status_for_any_schedule(point, half.rounds_bound) for point in front]
    return front


def _status_for_any_schedule(point: FrontPoint, rounds_bound: int) -> FrontPoint:
    """A symmetric front point's status for any schedule (the program's "optimal" is among
    translation-invariant ones: optimal outright only where the rounds meet the bandwidth bound;
    the steps it proves least are the step bound). Its deliveries are translated when made."""
    if point.choice is None:
        return point
    status = point.status
    if status == "optimal" and point.rounds > rounds_bound:
        status = "feasible"
    return dataclasses.replace(point, status=status, invariant_status=point.status)


METHOD = Method("program", "the time-expanded step program: per step count the least rounds, proven (exact: every "
                "rank's blocks up to 64 ranks; symmetric: one rank per orbit of the translations, translated); "
                "balanced breadth-first trees where there is no program", HALF,
                ("allgather", "reduce-scatter", "broadcast", "reduce"), _points, order=10, proves_steps=True)
