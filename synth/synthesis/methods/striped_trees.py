"""The broadcast by striped trees (synth.synthesis.striped_trees) where ranks come in groups: 2, 3,
4 or 8 stripes, each pipelined over limits.PACKED_ROUNDS rounds, priced along the trees' own
pairs (routed for them: reach `trees`)."""

from __future__ import annotations

import numpy as np

from synth.core.errors import SynthError
from synth.synthesis import limits
from synth.synthesis.front import pipelined_candidates
from synth.synthesis.methods import WHOLE, Method
from synth.synthesis.relay import distinct_node_pairs, group_neighbours, rank_groups
from synth.synthesis.striped_trees import striped_trees
from synth.synthesis.transfers import pairs_graph, terminal_routers
from synth.synthesis.tree_packing import tree_depths


def _points(context):
    plan = context.plan
    q, p = plan.graph.ranks_per_node, plan.graph.ranks
    groups = rank_groups(plan.topology, q)
    if groups is None:
        return []
    groups = np.unique(groups, return_inverse=True)[1]
    neighbours = group_neighbours(plan.topology, q, groups)
    routers = np.repeat(terminal_routers(context.network), q)
    found = []
    for stripes in (f for f in limits.STRIPES if f < p):
        try:
            parent = striped_trees(groups, plan.root, stripes, neighbours, routers)
        except SynthError as exc:  # the other points stand
            context.say(f"{plan.collective}: no {stripes} striped trees: {exc}")
            continue
        depth = tree_depths(parent)
        child = np.broadcast_to(np.arange(p), parent.shape)[parent >= 0]
        a, b = parent[parent >= 0] // q, child // q
        if plan.collective == "reduce":  # the partials flow from child to parent
            a, b = b, a
        try:
            graph = pairs_graph(plan.topology, q, "trees", distinct_node_pairs(a, b), context.router,
                                routes=plan.routes)
        except SynthError as exc:
            context.say(f"{plan.collective}: no striped trees: {exc}")
            return found
        context.say(f"{plan.collective}: {stripes} striped trees, {int(depth.max())} deep, {graph.num_pairs:,} pairs")
        found += pipelined_candidates(context, f"{stripes} striped trees ({int(depth.max())} deep)", parent, depth,
                                      graph)
    return found


METHOD = Method("striped-trees", "striped trees through the groups of ranks (2, 3, 4 or 8 stripes), pipelined",
                WHOLE, ("broadcast", "reduce"), _points, order=90, pool="rooted")
