"""The broadcast by M packed spanning trees (synth.synthesis.tree_packing), M the least max-flow
from the root in units of the slowest channel (Edmonds' count of arc-disjoint trees where every
channel is alike) times 1, 2, 4, ... up to the second packing at the cut bound,
limits.PACKED_TREES and limits.PACKING_WORK, each pipelined over limits.PACKED_ROUNDS rounds and
priced along the transfers' paths it was packed on; a reduce: the trees into the root."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from synth.synthesis import limits
from synth.pricing.bounds import bandwidth_bound
from synth.synthesis.front import priced_whole, rooted_maker
from synth.synthesis.methods import WHOLE, Method
from synth.synthesis.tree_packing import pack_trees, packed_deliveries


def _points(context):
    plan = context.plan
    network = context.network
    bandwidth = network.channel_bandwidth.astype(np.float64)
    graph = plan.graph
    if plan.collective == "reduce":  # trees into the root: each pair's arc turned round, its path the pair's own
        graph = dataclasses.replace(graph, src=graph.dst, dst=graph.src)
    cut = bandwidth_bound(plan.collective, network, graph.ranks_per_node, plan.root).per_byte
    p = graph.ranks
    trees, met = max(1, round(1.0 / (cut * float(bandwidth.min())))), 0
    found = []
    while trees <= limits.PACKED_TREES and trees * graph.num_pairs * p <= limits.PACKING_WORK:
        restarts = max(1, min(limits.PACKING_RESTARTS, limits.RESTART_WORK // (trees * graph.num_pairs * p)))
        packing = pack_trees(graph, bandwidth, plan.root, trees, cut, restarts)
        depth = int(packing.depth.max())
        context.say(f"{plan.collective}: {trees} packed trees: {packing.per_byte / cut - 1:.1%} above the cut bound, "
                    f"{depth} deep")
        for rounds in limits.PACKED_ROUNDS:
            if rounds * trees * (p - 1) <= limits.MAX_TREE_DELIVERIES:
                blocks = rounds * trees
                found.append(priced_whole(
                    context, f"{trees} packed spanning trees ({depth} deep, {packing.per_byte / cut - 1:.1%} above "
                             f"the cut bound), {rounds} rounds pipelined", blocks,
                    rooted_maker(plan, functools.partial(packed_deliveries, graph, packing, rounds), blocks),
                    plan.graph))
        met += packing.per_byte <= cut * (1 + 1e-9)
        if met == 2:  # at the cut bound twice: more trees deepen the pipeline and start more messages
            break
        trees *= 2
    return [c for c in found if c is not None]


METHOD = Method("packed-trees", "M packed spanning trees from the root (M from the least max-flow), pipelined over "
                "4 to 1,024 rounds", WHOLE, ("broadcast", "reduce"), _points, order=80, pool="rooted",
                cites="Edmonds' arborescence packing")
