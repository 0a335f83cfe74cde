"""Every block straight from its source to every rank in one step, over every pair (the bandwidth
end where the core has room), where the plan has no program."""

from __future__ import annotations

from synth.synthesis.exact import SpreadProblem, straight_point
from synth.synthesis.methods import HALF, Method


def _points(half, found):
    plan = half.plan
    if not plan.trees_only or plan.graph.reach == "all":  # over every pair already the program's own point
        return []
    every_pair = half.context.every_pair()
    if every_pair is None:
        return []
    point = straight_point(half.spread or SpreadProblem.of(half.designed, plan.graph.ranks), every_pair, half.network,
                           half.reverse, half.rounds_bound)
    half.say(f"1 step over every pair: {point.rounds} rounds")
    return [point]


METHOD = Method("straight", "every block straight to every rank in one step over every pair (networks without a "
                "program)", HALF, ("allgather", "reduce-scatter", "broadcast", "reduce"), _points, order=30)
