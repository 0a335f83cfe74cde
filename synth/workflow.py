"""Whole runs: route the selected phases of a workload in batches, evaluate them, stream results.

Shared by the CLI and the reports so that both print the same numbers.
"""

from __future__ import annotations

from math import gcd
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from synth.measure.evaluate import PhaseEvaluation, evaluate_batch, strengthen
from synth.measure.loads import phase_channel_counts
from synth.core.errors import SynthError
from synth.execute import Executor, LocalExecutor
from synth.io.checkpoint import Checkpoint, CheckpointJob
from synth.execute.ordered import Part, ordered_results
from synth.render.progress import Progress
from synth.routing.xgft_layers import PhaseReport
from synth.topology.paths import Paths
from synth.routing.registry import Router, make_router
from synth.topology.network import Network
from synth.traffic.flows import Flows
from synth.traffic.patterns import Workload

# Batches of about 64 k flows keep the (phase, channel) count matrix and the temporaries in cache.
FLOWS_PER_BATCH = 1 << 16


@dataclass
class RoutedPhase:
    flows: Flows | None  # None when the run keeps evaluations only
    choice: np.ndarray | Paths | None  # channel paths, or per flow the XGFT WT index at the NCA layer
    evaluation: PhaseEvaluation
    report: PhaseReport | None = None  # how a synthesizing router got there


# Size guards (--max-flows lifts them). Load analysis streams batches of 64 k flows and keeps
# per-channel totals only: 67 M flows (the 8192-leaf exchange) take 11 s, 2^31 about 6 minutes.
# Routes kept for a file are written phase by phase but re-read whole by `synth check` (about
# 1 KiB of memory per flow) and synthesis takes about 2 ms per flow and core (README,
# Performance): 2^22 flows are the 2048-leaf exchange, an hour on two cores.
MAX_FLOWS_ANALYSIS = 1 << 31
MAX_FLOWS_KEPT = 1 << 22


def check_flow_limit(workload: Workload, phases: np.ndarray, router: Router | None, keep_routes: bool,
                     max_flows: int | None) -> None:
    """Refuse a run whose flows would not fit memory or would run for many hours, before any is made
    (`router` None: load analysis or bounds, no synthesis)."""
    kept = keep_routes or (router is not None and router.expensive)
    limit = max_flows if max_flows is not None else (MAX_FLOWS_KEPT if kept else MAX_FLOWS_ANALYSIS)
    flows = workload.flow_count(phases)
    if flows > limit:
        why = "routes synthesized or kept for a file" if kept else "load analysis"
        raise SynthError(f"the run has {flows:,} flows ({len(phases):,} phases of '{workload.pattern}'), more than the "
                         f"limit of {limit:,} for {why}; select fewer phases with --phase, or lift the limit with --max-flows N")


def repeat_ordinals(phase_index: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """For every flow, how many earlier flows of its phase have the same (src, dst)."""
    order = np.lexsort((dst, src, phase_index))
    keys = np.stack([phase_index[order], src[order], dst[order]])
    starts = np.concatenate([[True], (np.diff(keys, axis=1) != 0).any(axis=0)]) if len(order) else np.zeros(0, bool)
    position = np.arange(len(order))
    group_start = np.maximum.accumulate(np.where(starts, position, 0))
    ordinals = np.empty(len(order), dtype=np.int64)
    ordinals[order] = position - group_start
    return ordinals


def _occurrences(workload: Workload, idx: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    # Generated patterns send one message per source and phase; only explicit matrices repeat pairs.
    return repeat_ordinals(idx, src, dst) if workload.explicit is not None else np.zeros(len(src), dtype=np.int64)


def route_phases(
    topology,
    network: Network,
    workload: Workload,
    phases: np.ndarray,
    router: Router | str,
    seed: int = 0,
    progress: Progress | None = None,
    workers: int | None = None,
    keep_routes: bool = True,
    load_unit: str = "messages",
    executor: Executor | None = None,
    checkpoint: Checkpoint | None = None,
    job: str = "route",
) -> Iterator[RoutedPhase]:
    """Route and evaluate the selected phases in order, parts spread over the executor's workers
    (default: `workers` local processes); loads in messages, or bytes over bandwidth (`load_unit`
    "bytes"). With a checkpoint, finished parts are kept as they arrive (as `job`) and read back on a rerun."""
    router = make_router(router, topology) if isinstance(router, str) else router
    per_batch = _phases_per_batch(workload, router)
    # Flows of kept routes stay in rank order; otherwise a scattered order speeds up the counts.
    ranks = None if keep_routes else scattered_ranks(workload.num_ranks)

    def route_task(task_phases: np.ndarray) -> list:
        results = []
        for batch, idx, src, dst, size, choice, reports in _routed_batches(topology, workload, task_phases, router, seed, ranks):
            timed_out = {p for p, r in reports.items() if r.timeouts}
            evaluations = evaluate_batch(topology, network, batch, idx, src, dst, choice, None, timed_out,
                                         size if load_unit == "bytes" else None)
            for e in evaluations:
                strengthen(e, reports.get(e.phase), e.phase in timed_out)
            # Flows and paths cross the process boundary only when the caller keeps them.
            results.append((evaluations, reports, (idx, src, dst, size, choice) if keep_routes else None))
        return results

    large = keep_routes or router.expensive
    executor = executor if executor is not None else LocalExecutor(workers)
    store = checkpoint.job(job, lambda result, part: _route_part_problem(result, part, keep_routes)) \
        if checkpoint is not None else None
    for task_results, resumed in run_parts(executor, route_task, phases, per_batch, large, store, progress):
        for evaluations, reports, arrays in task_results:
            if progress is not None and resumed:
                progress.resume(evaluations)
            elif progress is not None:
                progress.update(evaluations, reports)
            if arrays is None:
                yield from (RoutedPhase(None, None, e, reports.get(e.phase)) for e in evaluations)
                continue
            idx, src, dst, size, choice = arrays
            bounds = np.searchsorted(idx, np.arange(len(evaluations) + 1))
            for i, evaluation in enumerate(evaluations):
                part = slice(bounds[i], bounds[i + 1])
                routes = choice.take(bounds[i], bounds[i + 1]) if isinstance(choice, Paths) else choice[part]
                yield RoutedPhase(Flows(src[part], dst[part], size[part]), routes, evaluation, reports.get(evaluation.phase))


def _route_part_problem(result, phases: np.ndarray, keep_routes: bool) -> str | None:
    """What is wrong with a checkpoint part of route_phases for `phases` (None: it is what the task makes)."""
    if not isinstance(result, list) or not all(isinstance(r, tuple) and len(r) == 3 for r in result):
        return f"its result is a {type(result).__name__}, not the route task's list of (evaluations, reports, routes)"
    evaluations = [e for r in result for e in (r[0] if isinstance(r[0], list) else [None])]
    if not all(isinstance(e, PhaseEvaluation) for e in evaluations):
        return "its evaluations are not phase evaluations"
    if [e.phase for e in evaluations] != [int(p) for p in phases]:
        return "its evaluations are not of its phases"
    if not all(isinstance(r[1], dict) for r in result):
        return "its solver reports are not a table"
    if any((r[2] is None) == keep_routes for r in result):
        return "it keeps routes where the run does not, or the other way round"
    for _, _, arrays in result:
        if arrays is not None and not (isinstance(arrays, tuple) and len(arrays) == 5
                                       and all(isinstance(a, np.ndarray) and a.shape == arrays[0].shape for a in arrays[1:4])):
            return "its routes are not the route task's arrays"
    return None


def _loads_part_problem(result, phases: np.ndarray, channels: int, with_bytes: bool) -> str | None:
    """What is wrong with a checkpoint part of exchange_loads for `phases`."""
    if not isinstance(result, tuple) or len(result) != 4:
        return f"its result is a {type(result).__name__}, not the loads task's (peaks, totals, peaks, bytes)"
    peaks, total, peak, total_bytes = result
    shapes = [(peaks, (len(phases),)), (total, (channels,)), (peak, (channels,))]
    if with_bytes:
        shapes.append((total_bytes, (channels,)))
    elif total_bytes is not None:
        return "it counts bytes the run does not"
    if not all(isinstance(a, np.ndarray) and a.shape == shape and a.dtype.kind in "iu" for a, shape in shapes):
        return "its loads are not integer arrays of its phases and the network's channels"
    return None


def _phases_per_batch(workload: Workload, router: Router) -> int:
    if router.whole_workload:
        return workload.num_phases  # the phases share one solution (destination-consistent tables)
    if router.expensive:
        return 1  # synthesis: one phase per task keeps all workers busy
    return max(1, FLOWS_PER_BATCH // max(1, workload.num_ranks))


def _routed_batches(topology, workload: Workload, phases: np.ndarray, router: Router, seed: int, ranks):
    """(batch, phase index, src, dst, bytes, choice, reports) for consecutive batches of the phases."""
    per_batch = _phases_per_batch(workload, router)
    for start in range(0, len(phases), per_batch):
        batch = phases[start : start + per_batch]
        idx, src, dst, size = workload.batch(batch, ranks)
        routed = router(topology, src, dst, phase=batch[idx], occurrence=_occurrences(workload, idx, src, dst), seed=seed,
                        size=size)
        yield batch, idx, src, dst, size, routed.routes, routed.reports


def plan_parts(count: int, per_batch: int, large_results: bool, workers: int,
               done: list[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """The positions 0..count-1 of a run's phases as parts for the workers, around the parts a
    checkpoint holds (`done`): one batch each when results are large (kept routes, streamed in
    order), otherwise a few parts per worker so that little crosses processes."""
    gaps, at = [], 0
    for start, stop in sorted(done):
        if start > at:
            gaps.append((at, start))
        at = max(at, stop)
    if at < count:
        gaps.append((at, count))
    if large_results:
        todo = [(lo, min(lo + per_batch, b)) for a, b in gaps for lo in range(a, b, per_batch)]
    else:
        remaining = np.concatenate([np.arange(a, b) for a, b in gaps]) if gaps else np.zeros(0, dtype=np.int64)
        todo = []
        for piece in np.array_split(remaining, min(len(remaining), 4 * workers)) if len(remaining) else []:
            jumps = np.flatnonzero(np.diff(piece) != 1) + 1  # a piece spanning a kept part is two parts
            todo += [(int(run[0]), int(run[-1]) + 1) for run in np.split(piece, jumps)]
    return sorted(todo + [tuple(d) for d in done])


def run_parts(executor: Executor, task: Callable, phases: np.ndarray, per_batch: int, large_results: bool,
              store: CheckpointJob | None = None, progress: Progress | None = None) -> Iterator[tuple[object, bool]]:
    """task(phases of a part) for every part, in order, from the executor or the checkpoint."""
    phases = np.asarray(phases)
    done = store.parts(len(phases)) if store is not None else []
    kept = sum(b - a for a, b in done)
    workers = executor.capacity() if kept < len(phases) else 1  # a finished checkpoint needs no workers
    keys = plan_parts(len(phases), per_batch, large_results, workers, done)
    parts = [Part(a, b, phases[a:b]) for a, b in keys]
    if done and progress is not None:
        progress.say(f"  checkpoint {store.checkpoint.directory}: {kept} of {len(phases)} phases done before, "
                     f"{len(phases) - kept} to go")
    yield from ordered_results(executor, task, parts, store, set(done))


@dataclass
class ExchangeLoads:
    """Channel loads of a whole exchange: the per-phase maximum and the total per channel."""

    phases: np.ndarray
    max_contention: np.ndarray  # per phase
    total_messages: np.ndarray  # per channel, summed over the phases
    peak_messages: np.ndarray  # per channel, the largest load in any one phase
    total_bytes: np.ndarray | None  # per channel, summed over the phases (when asked for)


def exchange_loads(
    topology,
    workload: Workload,
    phases: np.ndarray,
    router: Router | str,
    seed: int = 0,
    workers: int | None = None,
    with_bytes: bool = False,
    executor: Executor | None = None,
    checkpoint: Checkpoint | None = None,
) -> ExchangeLoads:
    """Route the selected phases and compute their channel loads, nothing else (no bounds):
    the inner loop of whole-exchange analyses, batched and spread over the executor's workers."""
    router = make_router(router, topology) if isinstance(router, str) else router
    per_batch = _phases_per_batch(workload, router)
    ranks = scattered_ranks(workload.num_ranks)

    def load_task(task_phases: np.ndarray):
        # A task runs many batches and returns per-channel totals: little crosses processes.
        channels = topology.network().num_channels
        peaks, total, peak = [], np.zeros(channels, dtype=np.int64), np.zeros(channels, dtype=np.int64)
        total_bytes = np.zeros(channels, dtype=np.int64) if with_bytes else None
        for batch, idx, src, dst, size, choice, _ in _routed_batches(topology, workload, task_phases, router, seed, ranks):
            counts = phase_channel_counts(topology, idx, src, dst, choice, len(batch))
            peaks.append(counts.max(axis=1))
            total += counts.sum(axis=0)
            np.maximum(peak, counts.max(axis=0), out=peak)
            if with_bytes:
                total_bytes += _channel_bytes(topology, src, dst, size, choice, channels)
        return np.concatenate(peaks), total, peak, total_bytes

    peaks, channels = [], topology.network().num_channels
    total, peak = np.zeros(channels, dtype=np.int64), np.zeros(channels, dtype=np.int64)
    total_bytes = np.zeros(channels, dtype=np.int64) if with_bytes else None
    executor = executor if executor is not None else LocalExecutor(workers)
    channels_of = topology.network().num_channels
    store = checkpoint.job("loads", lambda result, part: _loads_part_problem(result, part, channels_of, with_bytes)) \
        if checkpoint is not None else None
    for (task_peaks, task_total, task_peak, task_bytes), _ in run_parts(executor, load_task, phases, per_batch, False, store):
        peaks.append(task_peaks)
        total += task_total
        np.maximum(peak, task_peak, out=peak)
        if with_bytes:
            total_bytes += task_bytes
    return ExchangeLoads(np.asarray(phases), np.concatenate(peaks), total, peak, total_bytes)


def _channel_bytes(topology, src, dst, size, routes, channels: int) -> np.ndarray:
    if isinstance(routes, Paths):
        weights = np.repeat(np.asarray(size, dtype=np.float64), routes.lengths())
        return np.bincount(routes.channels, weights=weights, minlength=channels).astype(np.int64)
    keys = topology.channel_keys(src, dst, routes, missing=channels)
    weights = np.broadcast_to(size, keys.shape).ravel()
    return np.bincount(keys.ravel(), weights=weights, minlength=channels + 1)[:channels].astype(np.int64)


def scattered_ranks(n: int) -> np.ndarray:
    """0..n-1 visited with a stride near n/phi coprime to n: neighbouring ranks share switches,
    so a scattered order avoids runs of increments to one counter in bincount (about 2x)."""
    stride = max(1, int(n * 0.6180339887))
    while gcd(stride, n) != 1:
        stride += 1
    return (np.arange(n, dtype=np.int64) * stride) % n
