"""`synth bounds`'s use case (and synth.api.bounds'): per selected phase the cut bounds, and the LP
bound when asked, in messages or in bytes over bandwidth."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from synth.measure.contention_bounds import cut_bounds_batch
from synth.measure.loads import check_byte_sums
from synth.measure.lp_bound import LP_TIME_LIMIT
from synth.execute import Executor, LocalExecutor
from synth.traffic.patterns import Workload
from synth.workflow import FLOWS_PER_BATCH, run_parts


@dataclass
class PhaseBoundsTable:
    """Bounds of the selected phases: a row per phase, a column per bound (`names`)."""

    phases: np.ndarray
    names: tuple[str, ...]
    values: np.ndarray  # (phases, bounds), int64
    lp_short: list[int]  # phases whose LP stopped at its time limit (a valid, possibly weaker bound)

    def lower_bounds(self) -> np.ndarray:
        return self.values.max(axis=1, initial=0)


def phase_bounds(topology, workload: Workload, phases: np.ndarray, weighs_bytes: bool = False, lp: bool = False,
                 lp_time_limit: float | None = None, executor: Executor | None = None,
                 say: Callable[[str], None] = lambda text: None) -> PhaseBoundsTable:
    """The cut bounds of every selected phase (in batches of about FLOWS_PER_BATCH flows), and with
    `lp` the LP bound of each (synth.measure.lp_bound; independent solves on the executor)."""
    per_batch = max(1, FLOWS_PER_BATCH // max(1, workload.num_ranks))
    stage_bounds = []
    for start in range(0, len(phases), per_batch):
        batch = phases[start : start + per_batch]
        idx, src, dst, size = workload.batch(batch)
        if weighs_bytes:
            check_byte_sums(idx, size, batch)
        stage_bounds.append(cut_bounds_batch(topology, idx, src, dst, len(batch), size if weighs_bytes else None))
    values = np.concatenate(stage_bounds) if stage_bounds else np.zeros((0, len(topology.bound_names())), dtype=np.int64)
    names, short = topology.bound_names(), []
    if lp:
        column, short = _lp_bounds(topology.network(), workload, phases, lp_time_limit or LP_TIME_LIMIT, weighs_bytes,
                                   executor, say)
        values, names = np.hstack([values, column]), names + ("lp",)
    return PhaseBoundsTable(np.asarray(phases), names, values.astype(np.int64), short)


def _lp_bounds(network, workload: Workload, phases: np.ndarray, time_limit: float, weighs_bytes: bool,
               executor: Executor | None, say: Callable[[str], None]) -> tuple[np.ndarray, list[int]]:
    from synth.measure.lp_bound import lp_bound

    def bound_task(part: np.ndarray) -> list[tuple[int, int, str]]:
        results = []
        for phase in part.tolist():
            flows = workload.flows(phase)
            result = lp_bound(network, flows.src, flows.dst, time_limit=time_limit,
                              weights=flows.bytes if weighs_bytes else None)
            results.append((phase, result.bound, result.status))
        return results

    values, short, done = np.zeros((len(phases), 1), dtype=np.int64), [], 0
    for results, _ in run_parts(executor or LocalExecutor(), bound_task, phases, 1, True):
        for phase, bound, status in results:
            values[done, 0] = bound
            done += 1
            if status == "gap":
                short.append(phase)
            if len(phases) > 1:
                say(f"  LP bound: phase {phase} ({done} of {len(phases)}): {bound}")
    return values, short


def lp_line(table: PhaseBoundsTable, time_limit: float) -> str:
    """Whether the lp column is ceil(lambda*) everywhere, or where it stopped short."""
    if not table.lp_short:
        return "lp: ceil(lambda*) of the multicommodity-flow relaxation, certified in every phase"
    short = table.lp_short
    return (f"lp: {len(short)} of {len(table.phases)} phases stopped at --lp-time-limit {time_limit:g} s (first: phase "
            f"{short[0]}); there the lp column is a valid bound that may be below ceil(lambda*)")
