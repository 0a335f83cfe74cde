"""The allreduce as a reduce then a broadcast over M packed spanning trees, pipelined
(synth.synthesis.reduce_broadcast: the two-tree algorithm, Sanders09, and ForestColl's packed
forests, Zhao24): M of 1, the allreduce cut bound's width and 2 and 4 times it, and the least M at
which the bound is whole trees (tree_counts), up to the first packing at the cut bound,
limits.PACKED_TREES and limits.PACKING_WORK, up to MAX_RANKS ranks; each over ROUNDS rounds, priced
along the plan's transfers the trees were packed on."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

from synth.synthesis import limits
from synth.synthesis.front import priced_whole
from synth.synthesis.methods import WHOLE, Method
from synth.synthesis.reduce_broadcast import (in_out_trees, parents_of, reduce_broadcast_schedule, rerooted,
                                              round_trip_graph)
from synth.synthesis.tree_packing import pack_trees, tree_depths

# Tries of a packing (a broadcast's: limits.PACKING_RESTARTS): one tree never meets the allreduce cut bound, and
# where trees do the first try did (DGX-1's 16, HyperX 4x4's 16, the dragonfly (2,4,2)'s 36); a torus's never do
# (its bound is 63 of 128 trees a link), so every try is spent (torus 16x16: 21 s with 8 tries, 6 s with 2; the
# dragonfly's 2 trees 27% above the bound with 2 tries, 1.4% with 8, where its 36 meet it)
RESTARTS = 2
ROUNDS = tuple(1 << i for i in range(11))  # 1 to 1,024: one round (mid sizes, the fewest steps) to long pipelines
# Ranks at most: the trees' reduce and broadcast are priced schedule by schedule, up to a million transfers each,
# and above a few hundred ranks the trees lose to the halves wherever they were tried (torus 32x32: 13 s for none)
MAX_RANKS = 256


def tree_counts(per_byte: float, least_bandwidth: float) -> list[int]:
    """The tree counts tried: 1 (the fewest messages a step); the allreduce cut bound's width (each
    tree's edges carry 2 n / M, both directions, so M trees on the slowest channels may meet it at
    about 1 / (bound x bandwidth)) and 2 and 4 times it; and the least M at which the bound is a
    whole number of trees on those channels (DGX-1's cube-mesh: 16 trees, 7 on each link, 7 / 16 of
    the vector per direction: the bound), all within limits.PACKED_TREES."""
    if per_byte <= 0:
        return [1]
    width = max(1, round(1.0 / (per_byte * least_bandwidth)))
    whole = Fraction(per_byte * least_bandwidth).limit_denominator(limits.PACKED_TREES)
    exact = [whole.denominator] if abs(float(whole) - per_byte * least_bandwidth) <= 1e-9 * per_byte else []
    return sorted(m for m in {1, width, 2 * width, 4 * width, *exact} if m <= limits.PACKED_TREES)


def tree_floor(per_byte: float, least_bandwidth: float, trees: int) -> float:
    """The least per byte M trees can meet on the slowest channels: a channel carries a whole
    number of tree edges (each 1 / M of the vector, per direction), so at least the allreduce cut
    bound rounded up to whole trees (the torus's two trees: 1 of 0.98, 0.5 per byte against 0.492).
    The packing's room is this, not the bound, lest every used channel seem over it."""
    return max(per_byte, math.ceil(trees * per_byte * least_bandwidth - 1e-9) / (trees * least_bandwidth))


def packed(context, trees: int):
    """(reduce parents, broadcast parents, per byte, how) of M packed trees over the plan's
    transfers, or None beyond limits.PACKING_WORK."""
    plan = context.plan
    graph, p = plan.graph, plan.graph.ranks
    bandwidth = context.network.channel_bandwidth.astype(np.float64)
    work = 2 * trees * graph.num_pairs * p
    if work > limits.PACKING_WORK:
        return None
    restarts = 1 if trees == 1 else max(1, min(RESTARTS, limits.RESTART_WORK // work))
    cut = tree_floor(plan.time_bound.bandwidth.per_byte, float(bandwidth.min()), trees)
    trips = round_trip_graph(graph)
    if trips is not None:  # the reduce along each tree reversed, the broadcast along it: one packing of round trips
        packing = pack_trees(trips, bandwidth, plan.root, trees, cut, restarts)
        parent = rerooted(parents_of(trips, packing.arcs))
        return parent, parent, packing.per_byte, "reduced along each tree reversed, rooted at its centre"
    up, down, per_byte = in_out_trees(graph, bandwidth, plan.root, trees, cut, restarts)
    return up, down, per_byte, f"reduced into rank {plan.root} along trees of its own"


def _points(context):
    plan = context.plan
    p = plan.graph.ranks
    if p < 2:
        return []
    spec, q = plan.topology.spec, plan.graph.ranks_per_node
    cut = plan.time_bound.bandwidth.per_byte
    least = float(context.network.channel_bandwidth.min())
    found = []
    for trees in tree_counts(cut, least):
        made = packed(context, trees)
        if made is None:
            break
        up, down, per_byte, how = made
        depth = int(tree_depths(up).max(axis=1).max() + tree_depths(down).max(axis=1).max())
        gap = per_byte / cut - 1 if cut > 0 else 0.0
        context.say(f"allreduce: {trees} packed trees {how}: {gap:.1%} above the cut bound, {depth} deep up and down")
        for rounds in ROUNDS:
            if rounds * trees * 2 * (p - 1) > limits.MAX_TREE_DELIVERIES:
                break
            blocks = rounds * trees
            found.append(priced_whole(
                context, f"reduce then broadcast over {trees} packed trees ({gap:.1%} above the cut bound), "
                         f"{rounds} rounds", blocks,
                functools.partial(reduce_broadcast_schedule, spec, q, up, down, rounds), plan.graph))
        if per_byte <= cut * (1 + 1e-9):
            break  # at the cut bound: more trees deepen the pipeline and start more messages
    return [c for c in found if c is not None]


METHOD = Method("reduce-broadcast-trees", "allreduce as a reduce then a broadcast over M packed spanning trees, "
                "pipelined over 1 to 1,024 rounds (the reduce along each tree reversed where pairs go both ways)",
                WHOLE, ("allreduce",), _points, order=140, pool="reduce-broadcast",
                refusal=lambda plan: f"not above {MAX_RANKS} ranks (its packings' work)" if plan.graph.ranks > MAX_RANKS
                else None,
                cites="Sanders09 (two-tree algorithms); Zhao24 (ForestColl)")
