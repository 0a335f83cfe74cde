"""Destination-consistent layered routes: what a fabric without LMC (one LID per terminal) holds.

A switch forwards by destination only, so all flows to one destination that meet at a switch
must leave it by the same port, in every phase. The layered method (003_fd372c8942ac4293.txt,
ch.3) is kept, with the unit of choice changed from a message to a *unit*: the flows to one
destination d that reach one XGFT switch at layer l (same MT node, same WT node). At layer l each
unit picks its up link w_{l+1}; a unit holds at most one flow per phase when every phase is a
permutation, and the seed's sets (eq. 3.1-3.4) are formed per phase over units. Each WT node is
first solved like the per-flow router's (strong bounds 3.6, 3.8, links split by prime factors with
Euler pairing), the sets of all phases at once; where the strong conditions cannot all hold, the
node's model minimizes the uniform excess z over them instead, from d-mod-k's choice (itself
destination-consistent) as a hint. Measured on whole OPT exchanges (max contention over phases,
bound 1): 64 leaves 1, 128 leaves 2 (d-mod-k 7 and 8); with the excess model alone 128 leaves
reached only 8. All phases are routed in one run; the result is never worse than d-mod-k on the
same phases (if it were, d-mod-k's routes are returned).
"""

from __future__ import annotations

import time

import numpy as np

from synth.cost.loads import phase_channel_counts
from synth.route.layered import LayeredOptions, LayerSets, PhaseReport, _prime_factors, _Solver, layer_sets, set_bounds
from synth.route.oblivious import dmodk
from synth.solve import ProblemBuilder
from synth.topology.xgft import Xgft


def _unit_sets(xgft: Xgft, layer: int, src, dst, delta, phase, unit, switch_mt) -> LayerSets:
    """The sets of eq. 3.1-3.4 of every phase among the flows of one WT node, with units as
    members. A unit's switch fixes its up-side MT node, its destination the down side, and the
    two fix its NCA layer, so the per-item data of LayerSets is well defined for units."""
    ptr, members, lams, sides, ancestors = [0], [], [], [], []
    for p in np.unique(phase):
        mine = np.flatnonzero(phase == p)
        sets = layer_sets(xgft, layer, src[mine], dst[mine], delta[mine])
        for k in range(len(sets.lam)):
            members.append(unit[mine[sets.members_of(k)]])
            ptr.append(ptr[-1] + len(members[-1]))
        lams.append(sets.lam)
        sides.append(sets.side)
        ancestors.append(sets.ancestor)
    units = int(unit.max(initial=-1)) + 1
    vertex, unit_delta = np.zeros((2, units), dtype=np.int64), np.zeros(units, dtype=np.int64)
    vertex[0, unit], vertex[1, unit], unit_delta[unit] = switch_mt, dst // xgft.mt_span[layer], delta
    return LayerSets(np.asarray(ptr, dtype=np.int64), np.concatenate(members), np.concatenate(lams),
                     np.concatenate(sides), np.concatenate(ancestors), vertex, unit_delta)


def _least_excess(sets: LayerSets, units: int, width: int, solver: _Solver, hint: np.ndarray):
    """The smallest uniform excess z over the strong bounds: count <= ceil(c / W_{l+1}) + z."""
    builder = ProblemBuilder(np.full(units, width, dtype=np.int64))
    sizes = sets.sizes
    for k in range(len(sets.lam)):
        bound = -(-int(sizes[k]) // width)
        if sizes[k] > bound:  # a set no larger than its bound cannot exceed it on any link
            for w in range(width):
                builder.add(sets.members_of(k), w, upper=bound, capped=True)
    return solver.run(builder.build(z_upper=units), hint=hint)


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
            sets = _unit_sets(xgft, layer, src[flows], dst[flows], delta[flows], phase[flows], unit, switch_mt[wt == node])
            links = None
            if options.construction == "halving":  # the per-flow router's splits, on units
                lower, upper = set_bounds(xgft, layer, sets, options.constraints, options.balance)
                links = solver.split(np.arange(len(units)), sets, _prime_factors(width), lower, upper)
                report.split_solved += links is not None
            if links is None:  # the strong conditions cannot all hold: the least excess over them
                hint = (units[:, 0] // xgft.wt_span[layer]) % width  # d-mod-k's up link at this layer
                result = _least_excess(sets, len(units), width, solver, hint)
                links = result.choice if result.solved else hint
                report.direct_solved += 1
                if layer not in report.relaxed_layers:
                    report.relaxed_layers.append(layer)
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
