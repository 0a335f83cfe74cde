"""A broadcast as a scatter (binomial or straight) then the synthesized allgather's points, in 1,
4, 16 or 64 pieces pipelined (synth.synthesis.scatter_allgather: van de Geijn's broadcast with
synth's allgather); a reduce the same backwards (reduce-scatter, then gather)."""

from __future__ import annotations

import functools
import itertools

from synth.core.errors import SynthError
from synth.synthesis import limits
from synth.synthesis.front import for_reduce, priced_whole, rooted_maker
from synth.synthesis.methods import WHOLE, Method
from synth.synthesis.scatter_allgather import SCATTERS, pipelined_deliveries


def _points(context):
    from synth.synthesis.plan import plan_synthesis

    plan = context.plan
    q, p = plan.graph.ranks_per_node, plan.graph.ranks
    allgather = None
    try:
        if p * (p - 1) * min(limits.SCATTER_PIECES) <= limits.MAX_TREE_DELIVERIES:  # one chunk: planned alike
            allgather_plan = plan_synthesis("allgather", plan.topology, ranks_per_node=q, router=context.router,
                                            time_limit=context.time_limit, solver=context.solver, routes=plan.routes)
            if p * allgather_plan.chunks * (p - 1) * min(limits.SCATTER_PIECES) <= limits.MAX_TREE_DELIVERIES:
                (allgather,) = context.spreading_parts(allgather_plan, context.time_limit,
                                                       lambda t: context.say(f"scatter, then {t}"))
    except SynthError as exc:  # the allgather's limits: the other constructions stand
        context.say(f"{plan.collective}: no scatter-then-allgather points: {exc}")
    found = []
    for k, point in enumerate(allgather.front if allgather is not None else []):
        if allgather.makers[k] is None:
            continue
        for pieces, scatter in itertools.product(limits.SCATTER_PIECES, SCATTERS):
            blocks = allgather.blocks_of(k) * pieces
            if blocks * (p - 1) > limits.MAX_TREE_DELIVERIES:
                continue
            deliveries = functools.partial(_scatter_then_allgather, p, plan.root, allgather.blocks_of(k),
                                           allgather.makers[k], pieces, scatter)
            found.append(priced_whole(context, for_reduce(plan, f"{scatter} scatter, then allgather {point.method}, "
                                                                f"{pieces} piece(s) pipelined"),
                                      blocks, rooted_maker(plan, deliveries, blocks)))
    return [c for c in found if c is not None]


def _scatter_then_allgather(ranks: int, root: int, allgather_blocks: int, make_allgather, pieces: int, scatter: str):
    return pipelined_deliveries(ranks, root, allgather_blocks, make_allgather().explicit(), pieces, scatter)


METHOD = Method("scatter-allgather", "a scatter (binomial or straight) then the synthesized allgather, pipelined in "
                "1 to 64 pieces; a reduce: reduce-scatter, then gather", WHOLE, ("broadcast", "reduce"), _points,
                order=60, pool="rooted", cites="van de Geijn's broadcast")
