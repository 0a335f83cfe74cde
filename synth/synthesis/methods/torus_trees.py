"""The broadcast by a 2D torus's four arc-disjoint spanning trees (synth.synthesis.torus_trees),
pipelined over limits.PACKED_ROUNDS rounds, priced along the plan's transfers (neighbours)."""

from __future__ import annotations

from synth.synthesis.front import pipelined_candidates
from synth.synthesis.methods import WHOLE, Method
from synth.synthesis.torus_trees import torus_trees
from synth.synthesis.tree_packing import tree_depths


def _points(context):
    from synth.collectives.algorithms import grid_shape

    plan = context.plan
    dims = grid_shape(plan.topology, plan.graph.ranks_per_node)
    if len(dims) != 2 or min(dims) < 3:
        return []
    parent = torus_trees(dims, plan.root)
    depth = tree_depths(parent)
    grid = "torus" if plan.topology.spec.startswith("torus") else "grid"  # HyperX: valid trees, its cut not met
    context.say(f"{plan.collective}: the 2D {grid}'s four arc-disjoint trees, {int(depth.max())} deep")
    return pipelined_candidates(context, f"four arc-disjoint trees of the 2D {grid} ({int(depth.max())} deep)", parent,
                                depth, plan.graph)


METHOD = Method("torus-trees", "a 2D torus's (or grid's) four arc-disjoint spanning trees, pipelined", WHOLE,
                ("broadcast", "reduce"), _points, order=100, pool="rooted")
