"""The pipelined chain from the root, for the largest messages (synth.synthesis.scatter_allgather.
chain_deliveries): along a 2D grid's four directed Hamiltonian cycles, else the ranks in order;
it reaches a one-link node's cut bound as its pieces grow."""

from __future__ import annotations

import functools

import numpy as np

from synth.synthesis import limits
from synth.synthesis.front import for_reduce, priced_whole, rooted_maker
from synth.synthesis.methods import WHOLE, Method
from synth.synthesis.scatter_allgather import chain_deliveries


def _points(context):
    from synth.collectives.algorithms import grid_shape
    from synth.collectives.algorithms.hamiltonian import hamiltonian_cycles

    plan = context.plan
    q, p = plan.graph.ranks_per_node, plan.graph.ranks
    cycles = hamiltonian_cycles(grid_shape(plan.topology, q))
    orders = [cycles[0], cycles[0][::-1], cycles[1], cycles[1][::-1]] if cycles is not None else [np.arange(p)]
    what = ("pipelined chains along the grid's four directed Hamiltonian cycles" if cycles is not None else
            "pipelined chain of the ranks in order")
    found = []
    for pieces in limits.CHAIN_PIECES:
        if pieces * (p - 1) <= limits.MAX_TREE_DELIVERIES:
            found.append(priced_whole(context, for_reduce(plan, f"{what} from the root, {pieces} pieces"), pieces,
                                      rooted_maker(plan, functools.partial(chain_deliveries, orders, plan.root, pieces),
                                                   pieces)))
    return [c for c in found if c is not None]


METHOD = Method("chains", "pipelined chains from the root (a 2D grid's four Hamiltonian cycles, else rank order), "
                "64 to 4,096 pieces", WHOLE, ("broadcast", "reduce"), _points, order=70, pool="rooted")
