"""Destination-consistent layered routes: what a fabric without LMC (one LID per terminal) holds.

A switch forwards by destination only, so all flows to one destination that meet at a switch
must leave it by the same port, in every phase. The layered method ([Prisacari20],
ch.3) is kept, with the unit of choice changed from a message to a *unit*: the flows to one
destination d that reach one XGFT switch at layer l (same MT node, same WT node). At layer l each
unit picks its up link w_{l+1}; a unit holds at most one flow per phase when every phase is a
permutation, and the seed's sets (eq. 3.1-3.4) are formed per phase over units. Each WT node is
solved like the per-flow router's (strong bounds 3.6, 3.8, links split by prime factors with Euler
pairing), with the sets of all phases at once, depth-first over the WT tree: a node whose child has
no strong solution is solved again with its units in another order (up to BACKTRACKS times in a
run); after that a node that still has none takes the least uniform excess over the bounds,
starting from d-mod-k's choice (itself destination-consistent). Measured on whole OPT exchanges
(max contention over the phases, bound 1): 64 and 128 leaves 1 (d-mod-k 7 and 8; 3 s for 128),
256 leaves 3 (5 min). The result is never worse than d-mod-k on the same phases (if it were,
d-mod-k's routes are returned).
"""

from __future__ import annotations

import numpy as np

from synth.measure.loads import phase_channel_counts
from synth.routing.oblivious import dmodk
from synth.routing.xgft_layers import (LayeredOptions, LayerSearch, LayerSets, LayerSolver, PhaseReport, WholeWorkloadRouter,
                                       layer_sets, prime_factors, set_bounds)
from synth.solve import ProblemBuilder
from synth.topology.xgft import Xgft

# Re-solutions of a WT node over the whole run when a child node's strong conditions fail.
BACKTRACKS = 8


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


def _least_excess(sets: LayerSets, units: int, width: int, solver: LayerSolver, hint: np.ndarray):
    """The smallest uniform excess z over the strong bounds: count <= ceil(c / W_{l+1}) + z."""
    builder = ProblemBuilder(np.full(units, width, dtype=np.int64))
    sizes = sets.sizes
    for k in range(len(sets.lam)):
        bound = -(-int(sizes[k]) // width)
        if sizes[k] > bound:  # a set no larger than its bound cannot exceed it on any link
            for w in range(width):
                builder.add(sets.members_of(k), w, upper=bound, capped=True)
    return solver.run(builder.build(z_upper=units), hint=hint)


def _node_solver(phase: np.ndarray):
    """A WT node's solver for synth.routing.xgft_layers.LayerSearch with units instead of messages: the
    links per flow of `order` (all flows of a unit alike), or (None, False) when the conditions
    fail and the caller may solve the parent again instead (not `fallback`)."""

    def solve(xgft: Xgft, layer: int, order: np.ndarray, src, dst, delta, options: LayeredOptions, solver: LayerSolver,
              fallback: bool) -> tuple[np.ndarray | None, bool]:
        report = solver.report
        report.subproblems += 1
        width = xgft.w[layer]
        switch_mt = src[order] // xgft.mt_span[layer]
        keys = dst[order] * (xgft.num_leaves // xgft.mt_span[layer]) + switch_mt
        _, first, unit = np.unique(keys, return_index=True, return_inverse=True)
        rank = np.empty(len(first), dtype=np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(len(first))  # units in the order of `order`
        unit = rank[unit.reshape(-1)]
        sets = _unit_sets(xgft, layer, src[order], dst[order], delta[order], phase[order], unit, switch_mt)
        if options.construction == "halving":  # the per-flow router's splits, on units
            lower, upper = set_bounds(xgft, layer, sets, options.constraints, options.balance)
            links = solver.split(np.arange(len(first)), sets, prime_factors(width), lower, upper)
            if links is not None:
                report.split_solved += 1
                return links[unit], True
        if not fallback:
            return None, False
        # The strong conditions cannot all hold: the least excess over them, from d-mod-k's links.
        unit_dst = np.empty(len(first), dtype=np.int64)
        unit_dst[unit] = dst[order]
        hint = (unit_dst // xgft.wt_span[layer]) % width
        result = _least_excess(sets, len(first), width, solver, hint)
        report.direct_solved += 1
        return (result.choice if result.solved else hint)[unit], False

    return solve


def route_consistent(xgft: Xgft, src: np.ndarray, dst: np.ndarray, phase: np.ndarray, options: LayeredOptions) -> tuple[np.ndarray, PhaseReport]:
    """Path choices (WT index at the NCA layer) for all flows at once, consistent per destination.
    Depth-first over the WT tree as the per-flow router (synth.routing.xgft_layers.LayerSearch): a node whose
    child has no strong solution is solved again in another order, up to BACKTRACKS times."""
    src, dst, phase = (np.asarray(a, dtype=np.int64) for a in (src, dst, phase))
    # The solvers see units in the order of the flows; the same flows listed in another order
    # (the CLI lists them by rank, load analyses scatter them) must give the same routes.
    canonical = np.lexsort((dst, src, phase))
    choice = np.empty(len(src), dtype=np.int64)
    choice[canonical], report = _route_canonical(xgft, src[canonical], dst[canonical], phase[canonical], options)
    return choice, report


def _route_canonical(xgft: Xgft, src: np.ndarray, dst: np.ndarray, phase: np.ndarray, options: LayeredOptions) -> tuple[np.ndarray, PhaseReport]:
    delta = xgft.nca_layer(src, dst)
    choice = np.zeros(len(src), dtype=np.int64)
    layers = [l for l in range(xgft.height) if xgft.w[l] > 1]
    search = LayerSearch(xgft, src, dst, delta, layers, choice, options, _node_solver(phase), BACKTRACKS)
    climbing = np.flatnonzero(delta > 0)
    for node in np.unique(choice[climbing]):
        search.subtree(0, climbing[choice[climbing] == node], has_parent=False)
    report = search.report
    fallback = dmodk(xgft, src, dst, phase, None)
    if _worst_phase(xgft, src, dst, phase, fallback) < _worst_phase(xgft, src, dst, phase, choice):
        report.relaxed_layers.append(-1)  # marks: d-mod-k was better and is returned
        return fallback, report
    return choice, report


def _worst_phase(xgft: Xgft, src, dst, phase, choice) -> int:
    phases, phase_index = np.unique(phase, return_inverse=True)
    return int(phase_channel_counts(xgft, phase_index, src, dst, choice, len(phases)).max(initial=0))


def ConsistentRouter(options: LayeredOptions) -> WholeWorkloadRouter:
    return WholeWorkloadRouter(route_consistent, options)
