"""Evaluate routed phases: achieved maximum contention next to the lower bound, with a status.
Contention counts messages, or bytes over bandwidth when the run weighs bytes (--load-unit bytes).

Works in batches of phases (one bincount per batch) because it is the inner loop of every
whole-exchange analysis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.measure.contention_bounds import cut_bounds_batch
from synth.measure.loads import check_byte_sums, phase_channel_counts
from synth.topology.network import Network

OPTIMAL, FEASIBLE, TIMEOUT = "optimal", "feasible", "timeout"


@dataclass
class PhaseEvaluation:
    phase: int
    max_contention: int
    lower_bound: int
    status: str  # optimal: equals the bound or proven by a solver; feasible: a valid routing with a gap
    hottest_channel: int  # -1 when no channel is used
    stage_bounds: list[int]  # cut bound per kind (XGFT: subtree cut per stage 1..H; Topology.bound_names)
    stage_max: list[int]  # achieved maximum per channel class (XGFT: stage 1..H, up and down channels)
    # What lower_bound is when more than the cut bounds: "LP" (the LP bound over all paths a
    # synthesizing router computed) or "SOLVER proof" (a solver proved no routing does better);
    # empty for the cut bounds, the binding one named by stage_bounds.
    bound_source: str = ""

    @property
    def gap(self) -> int:
        return self.max_contention - self.lower_bound


LP_SOURCE = "LP"
PROOF_SUFFIX = " proof"


def strengthen(e: PhaseEvaluation, report, timed_out: bool) -> None:
    """Raise a phase's lower bound to the strongest the run has, name it, and set the status from
    it: the LP bound over all paths the router computed (`report.lp_bound`), then a solver's proof
    that no routing does better (`report.proven_by`, where the router's proofs cover every routing:
    `report.proof_covers_all_routings`). A proof over a router's own candidates is not a bound on
    other routings: the phase stays feasible above the bound. So "optimal" never stands beside a gap."""
    lp = int(getattr(report, "lp_bound", 0) or 0)
    if lp > e.lower_bound:
        e.lower_bound, e.bound_source = lp, LP_SOURCE
    proof = getattr(report, "proven_by", None) if getattr(report, "proof_covers_all_routings", False) else None
    if proof and e.max_contention > e.lower_bound:
        e.lower_bound, e.bound_source = e.max_contention, proof + PROOF_SUFFIX
    e.status = status_of(e.max_contention, e.lower_bound, False, timed_out)


def status_of(max_contention: int, lower_bound: int, proven_optimal: bool = False, timed_out: bool = False) -> str:
    """optimal: at the bound, or a solver proved no routing does better; timeout: above the bound
    after a solver call ran out of time (a better routing may exist); feasible: above the bound."""
    if proven_optimal or max_contention <= lower_bound:
        return OPTIMAL
    return TIMEOUT if timed_out else FEASIBLE


def stage_maxima(network: Network, counts: np.ndarray) -> np.ndarray:
    """Per row of channel loads, the maximum over the channels of each class (XGFT: stage):
    (rows, classes)."""
    out = np.zeros((counts.shape[0], len(network.class_names)), dtype=np.int64)
    for k in range(len(network.class_names)):
        out[:, k] = counts[:, network.channel_class == k].max(axis=1, initial=0)
    return out


def evaluate_batch(
    topology,
    network: Network,
    phases: np.ndarray,
    phase_index: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    routing,
    proven_optimal: np.ndarray | None = None,
    timed_out: set[int] | None = None,
    weights: np.ndarray | None = None,
) -> list[PhaseEvaluation]:
    """Evaluate the flows of several phases; `phase_index` says which entry of `phases` owns a flow.
    `routing` is Paths, or an XGFT's WT indices (synth.measure.loads.phase_channel_counts). With
    per-flow `weights` (bytes) every load, bound and maximum is in bytes over bandwidth."""
    phases = np.asarray(phases)
    num = phases.shape[0]
    if weights is not None:
        check_byte_sums(phase_index, weights, phases)
    counts = phase_channel_counts(topology, phase_index, src, dst, routing, num, weights)
    hottest = counts.argmax(axis=1)
    peak = counts[np.arange(num), hottest]
    per_stage = stage_maxima(network, counts)
    bounds = cut_bounds_batch(topology, phase_index, src, dst, num, weights)
    results = []
    for i in range(num):
        bound = int(bounds[i].max(initial=0))
        achieved = int(peak[i])
        proven = bool(proven_optimal[i]) if proven_optimal is not None else False
        status = status_of(achieved, bound, proven, bool(timed_out) and int(phases[i]) in timed_out)
        results.append(PhaseEvaluation(
            phase=int(phases[i]),
            max_contention=achieved,
            lower_bound=bound,
            status=status,
            hottest_channel=int(hottest[i]) if achieved > 0 else -1,
            stage_bounds=bounds[i].tolist(),
            stage_max=per_stage[i].tolist(),
        ))
    return results
