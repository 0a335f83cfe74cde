"""Relay trees through every group of ranks (synth.synthesis.relay): direct (two steps) and
gathered (three), over every pair where that graph was made, else over the pairs they take
(routed here: at thousands of ranks every pair is too many); where the plan has no program."""

from __future__ import annotations

import functools

import numpy as np

from synth.core.errors import SynthError
from synth.synthesis.relay import RelayTrees, rank_groups
from synth.synthesis.transfers import pairs_graph
from synth.synthesis.methods import HALF, Method


def _points(half, found):
    plan = half.plan
    if not plan.trees_only:
        return []
    points = _relay_points(half)
    if plan.relay_only and not points:
        raise SynthError(f"{plan.topology.spec}: no relay trees over the transfers (the routes file lacks "
                         "pairs they take?), and no balanced trees at this size")
    return points


def _relay_points(half) -> list:
    """The direct and the gathered relay trees as front points; none where the ranks have no
    groups or the routes file lacks a pair."""
    plan = half.plan
    q = plan.graph.ranks_per_node
    groups = rank_groups(plan.topology, q)
    if groups is None:
        return []
    every_pair = half.context.every_pair()
    points = []
    for make in (RelayTrees.direct, RelayTrees.gathered):
        trees = make(half.sources, groups)
        if trees is None:
            return []
        graph = every_pair
        if graph is None:
            try:
                graph = pairs_graph(plan.topology, q, "relay", trees.node_pairs(q, half.reverse), half.context.router,
                                    routes=plan.routes)
            except SynthError as exc:
                half.say(f"no {trees.method}: {exc}")
                continue
        points.append(trees.point(graph, half.network, half.reverse, half.rounds_bound,
                                  functools.partial(make, half.sources, groups)))
        del trees
        half.say(f"{points[-1].steps} steps through {points[-1].method} ({len(np.unique(groups))} groups, "
                 f"{graph.num_pairs:,} pairs): {points[-1].rounds} rounds")
    return points


METHOD = Method("relay", "relay trees through every group of ranks: direct (two steps) and gathered (three), the "
                "schedule of thousands of ranks (dragonflies, Slim Fly, several ranks a node)", HALF,
                ("allgather", "reduce-scatter", "broadcast", "reduce"), _points, order=40)
