"""Dissemination by translations (synth.synthesis.dissemination): on a network whose translations
act regularly and commute (a torus, a HyperX, one rank a node), schedules of fewer steps than the
transfer graph's diameter over longer paths, the latency end of the front."""

from __future__ import annotations

import math

from synth.core.errors import SynthError
from synth.pricing.alphabeta import node_ports
from synth.synthesis.dissemination import abelian_regular, dissemination_points
from synth.synthesis.methods import HALF, Method


def _points(half, found):
    plan = half.plan
    if half.symmetry is None or not abelian_regular(half.symmetry, plan.graph.ranks_per_node):
        return []
    try:
        extra = dissemination_points(half.symmetry, plan.topology, plan.graph.router, plan.chunks, half.reverse,
                                     node_ports(half.network, plan.graph.ranks_per_node), routes=plan.routes,
                                     say=half.say)
    except SynthError as exc:  # a routes file without the longer paths dissemination takes
        half.say(f"no dissemination points: {exc}")
        return []
    fewest = found[0].steps if found else math.inf  # only where fewer steps than the program's least
    return [e for e in extra if e.steps < fewest]


METHOD = Method("dissemination", "dissemination by translations: fewer steps than the transfer graph's diameter "
                "over longer paths (tori, HyperX; Bruck's dissemination on any abelian group)", HALF,
                ("allgather", "reduce-scatter"), _points, order=20, cites="Bruck et al. 1997")
