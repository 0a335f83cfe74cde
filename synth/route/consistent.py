"""Destination-consistent layered routes: what a fabric without LMC (one LID per terminal) holds.

A switch forwards by destination only, so all flows to one destination that meet at a switch
must leave it by the same port, in every phase. The layered method (003_fd372c8942ac4293.txt,
ch.3) is kept, with the unit of choice changed from a message to a *unit*: the flows to one
destination d that reach one XGFT switch at layer l (same MT node, same WT node). At layer l each
unit picks its up link w_{l+1}; a unit holds at most one flow per phase when every phase is a
permutation, and the seed's sets (eq. 3.1-3.4) are formed per phase over units. The conditions
usually cannot all hold for every phase at once, so each WT node's model minimizes the uniform
excess z over the strong bounds (3.6, 3.8) of all its phases' sets, starting from d-mod-k's choice
(itself destination-consistent) as a hint. All phases are routed in one run; the result is never
worse than d-mod-k on the same phases (if it were, d-mod-k's routes are returned).
"""

from __future__ import annotations

import time

import numpy as np

from synth.cost.loads import phase_channel_counts
from synth.route.layered import LayeredOptions, PhaseReport, _Solver, layer_sets
from synth.route.oblivious import dmodk
from synth.solve import ProblemBuilder
from synth.topology.xgft import Xgft


def _unit_groups(xgft: Xgft, layer: int, src, dst, delta, phase, unit, width: int, builder: ProblemBuilder) -> None:
    """For every phase and every set of eq. 3.1-3.4 among the flows of one WT node, the units of
    the set's flows on each link: count <= ceil(c / W_{l+1}) + z."""
    for p in np.unique(phase):
        mine = np.flatnonzero(phase == p)
        sets = layer_sets(xgft, layer, src[mine], dst[mine], delta[mine])
        for s in range(len(sets.lam)):
            members = unit[mine[sets.members_of(s)]]
            bound = -(-len(members) // width)
            if len(members) <= bound:
                continue  # cannot exceed its bound on any link
            for w in range(width):
                builder.add(members, w, upper=bound, capped=True)


def route_consistent(xgft: Xgft, src: np.ndarray, dst: np.ndarray, phase: np.ndarray, options: LayeredOptions) -> tuple[np.ndarray, PhaseReport]:
    """Path choices (WT index at the NCA layer) for all flows at once, consistent per destination."""
    src, dst, phase = (np.asarray(a, dtype=np.int64) for a in (src, dst, phase))
    delta = xgft.nca_layer(src, dst)
    report = PhaseReport()
    solver = _Solver(options, report)
    choice = np.zeros(len(src), dtype=np.int64)
    for layer in range(xgft.height):
        climbing = np.flatnonzero(delta > layer)
        width = xgft.w[layer]
        if width == 1 or climbing.size == 0:
            continue
        started = time.perf_counter()
        wt = choice[climbing]
        switch_mt = src[climbing] // xgft.mt_span[layer]
        for node in np.unique(wt):
            flows = climbing[wt == node]
            keys = np.stack([dst[flows], switch_mt[wt == node]], axis=1)
            units, unit = np.unique(keys, axis=0, return_inverse=True)
            unit = unit.reshape(-1)
            report.subproblems += 1
            builder = ProblemBuilder(np.full(len(units), width, dtype=np.int64))
            _unit_groups(xgft, layer, src[flows], dst[flows], delta[flows], phase[flows], unit, width, builder)
            hint = (units[:, 0] // xgft.wt_span[layer]) % width  # d-mod-k's up link at this layer
            result = solver.run(builder.build(z_upper=len(flows)), hint=hint)
            links = result.choice if result.solved else hint
            if not result.solved or result.status != "optimal":
                report.direct_solved += 1  # a model not solved to proven optimality
            choice[flows] += links[unit] * xgft.wt_span[layer]
        report.layer_seconds[layer] = time.perf_counter() - started
    fallback = dmodk(xgft, src, dst, phase, None)
    if _worst_phase(xgft, src, dst, phase, fallback) < _worst_phase(xgft, src, dst, phase, choice):
        report.relaxed_layers.append(-1)  # marks: d-mod-k was better and is returned
        return fallback, report
    return choice, report


def _worst_phase(xgft: Xgft, src, dst, phase, choice) -> int:
    phases, phase_index = np.unique(phase, return_inverse=True)
    return int(phase_channel_counts(xgft, phase_index, src, dst, choice, len(phases)).max(initial=0))


class ConsistentRouter:
    """Router interface of synth.workflow: all selected phases in one call (they share the tables)."""

    expensive = True
    whole_workload = True

    def __init__(self, options: LayeredOptions):
        self.options = options

    def __call__(self, xgft: Xgft, src, dst, phase, occurrence, seed=0):
        choice, report = route_consistent(xgft, src, dst, phase, self.options)
        return choice, {int(p): report for p in np.unique(phase)}
