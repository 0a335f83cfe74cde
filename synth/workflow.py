"""Whole runs: route the selected phases of a workload in batches, evaluate them, stream results.

Shared by the CLI and the reports so that both print the same numbers.
"""

from __future__ import annotations

import sys
import time
from math import gcd
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from synth.cost.evaluate import PhaseEvaluation, evaluate_batch
from synth.cost.loads import phase_channel_counts
from synth.core.errors import SynthError
from synth.core.parallel import default_workers, map_in_processes
from synth.route.consistent import ConsistentRouter
from synth.route.layered import LayeredOptions, LayeredRouter, PhaseReport
from synth.route.monolithic import MonolithicRouter
from synth.route.monolithic_consistent import ConsistentMonolithicRouter
from synth.route.direct_routers import DIRECT_ROUTERS, LAYERED, PATHS
from synth.route.layered_dragonfly import DragonflyLayeredOptions, DragonflyLayeredRouter
from synth.route.path_selection import LOAD_UNITS, ConsistentPathsRouter, PathSelectionRouter, PathsOptions
from synth.route.oblivious import OBLIVIOUS_ROUTERS
from synth.route.paths import Paths
from synth.topology.network import Network
from synth.topology.xgft import Xgft
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


def check_flow_limit(workload: Workload, phases: np.ndarray, router: Callable, keep_routes: bool,
                     max_flows: int | None) -> None:
    """Refuse a run whose flows would not fit memory or would run for many hours, before any is made."""
    kept = keep_routes or _is_expensive(router)
    limit = max_flows if max_flows is not None else (MAX_FLOWS_KEPT if kept else MAX_FLOWS_ANALYSIS)
    flows = workload.flow_count(phases)
    if flows > limit:
        why = "routes synthesized or kept for a file" if kept else "load analysis"
        raise SynthError(f"the run has {flows:,} flows ({len(phases):,} phases of '{workload.pattern}'), more than the "
                         f"limit of {limit:,} for {why}; select fewer phases with --phase, or lift the limit with --max-flows N")


ROUTERS = tuple(OBLIVIOUS_ROUTERS) + ("layered", "monolithic")
MESSAGE_SYNTHESIZERS = ("layered", "monolithic")  # synthesizers whose models count messages


def paths_options(layered: LayeredOptions | None, candidates: str | None = None, load_unit: str = "messages") -> PathsOptions:
    """The path-selection router's options: the candidate set (default all; minimal with
    destination consistency), the load it minimizes, and the solver options the synthesizing
    routers share."""
    o = layered or LayeredOptions()
    if candidates is None:
        candidates = "minimal" if o.consistency == "destination" else "all"
    return PathsOptions(candidates=candidates, solver=o.solver, time_limit=o.time_limit, threads=o.threads,
                        glpk_options=o.glpk_options, consistency=o.consistency, objective=load_unit)


def dragonfly_layered_options(layered: LayeredOptions | None) -> DragonflyLayeredOptions:
    """The dragonfly layered router's options: the solver options the synthesizing routers share."""
    o = layered or LayeredOptions()
    return DragonflyLayeredOptions(solver=o.solver, time_limit=o.time_limit, threads=o.threads,
                                   glpk_options=o.glpk_options)


def synthesis_options(router: str, topology, layered: LayeredOptions | None, candidates: str | None = None):
    """The options a synthesizing router records in a routes file (`synthesis`), None for the others."""
    o = layered or LayeredOptions()
    if router == PATHS:
        return paths_options(o, candidates)
    if router == LAYERED and not isinstance(topology, Xgft):
        return dragonfly_layered_options(o)
    return o if router in ("layered", "monolithic") else None


def router_function(name: str, layered: LayeredOptions | None = None, topology=None, candidates: str | None = None,
                    load_unit: str = "messages") -> Callable:
    """The router called as router(topology, src, dst, phase=, occurrence=, seed=) (and size=, the
    bytes of every flow, when its `weighs_bytes` is true). It returns the routes (XGFT WT indices,
    or Paths), or (routes, {phase: PhaseReport}) when it has more to say. With load_unit "bytes"
    loads are bytes over bandwidth: the paths router minimizes them, and the routers that minimize
    messages (layered, monolithic) are refused."""
    if load_unit not in LOAD_UNITS:
        raise SynthError(f"unknown load unit '{load_unit}' (known: {', '.join(LOAD_UNITS)})")
    if load_unit == "bytes" and name in MESSAGE_SYNTHESIZERS:
        raise SynthError(f"the {name} router minimizes messages per channel: with --load-unit bytes use --router paths "
                         "(it minimizes bytes), or a fixed router")
    if topology is not None and not isinstance(topology, Xgft):
        router = DIRECT_ROUTERS.get(name, f"a {topology.family} network")
        if layered is not None and layered.consistency == "destination" and name not in (PATHS, "minimal", "dor"):
            raise SynthError(f"--consistency destination is implemented for the paths router on {topology.family} networks "
                             f"(and minimal and dor are destination-consistent by definition), not for '{name}'")
        refusal = router.refusal(topology)
        if refusal is not None:
            raise SynthError(refusal)
        if name == PATHS:
            options = paths_options(layered, candidates, load_unit)
            return ConsistentPathsRouter(options) if options.consistency == "destination" else PathSelectionRouter(options)
        if name == LAYERED:
            return DragonflyLayeredRouter(dragonfly_layered_options(layered))
        return router.route
    if name == PATHS:
        raise SynthError("the paths router is for direct networks; on an xgft the path-selection program over every "
                         "minimal path is --router monolithic (and --router layered its decomposition)")
    if name == "layered":
        options = layered or LayeredOptions()
        return ConsistentRouter(options) if options.consistency == "destination" else LayeredRouter(options)
    if name == "monolithic":
        options = layered or LayeredOptions()
        return ConsistentMonolithicRouter(options) if options.consistency == "destination" else MonolithicRouter(options)
    if layered is not None and layered.consistency == "destination" and name != "dmodk":  # d-mod-k is consistent
        raise SynthError(f"--consistency destination is implemented for the layered and monolithic routers (and d-mod-k "
                         f"is destination-consistent by definition), not for '{name}'")
    try:
        return OBLIVIOUS_ROUTERS[name]
    except KeyError:
        raise SynthError(f"unknown router '{name}' (known: {', '.join(ROUTERS)})") from None


def _is_expensive(router: Callable) -> bool:
    return getattr(router, "expensive", False)


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


class Progress:
    """Progress on stderr for runs longer than a moment: phases done, elapsed, achieved vs bound."""

    def __init__(self, total: int, enabled: bool = True, every: float = 2.0):
        self.total, self.enabled, self.every = total, enabled, every
        self.start = self.last = time.monotonic()
        self.done = self.above = 0

    def update(self, evaluations: list[PhaseEvaluation], reports: dict | None = None) -> None:
        self.done += len(evaluations)
        self.above += sum(e.max_contention > e.lower_bound for e in evaluations)
        now = time.monotonic()
        if self.enabled and reports and len(evaluations) > 1 and len({id(r) for r in reports.values()}) == 1:
            # Phases routed together (destination-consistent): one line for all of them.
            report = next(iter(reports.values()))
            worst = max(evaluations, key=lambda e: e.max_contention)
            print(f"  {len(evaluations)} phases routed together: max contention {worst.max_contention} (phase {worst.phase}), "
                  f"{sum(e.max_contention > e.lower_bound for e in evaluations)} above the bound; {report.progress_text()} "
                  f"[{now - self.start:.1f} s]", file=sys.stderr, flush=True)
            self.last = now
            return
        if self.enabled and reports:  # synthesis: a line per phase
            for e in evaluations:
                report = reports.get(e.phase)
                detail = f"; {report.progress_text()}" if report is not None else ""
                print(f"  phase {e.phase}: contention {e.max_contention}, bound {e.lower_bound}, {e.status}{detail} "
                      f"[{self.done}/{self.total}, {now - self.start:.1f} s]", file=sys.stderr, flush=True)
            self.last = now
            return
        if self.enabled and now - self.last >= self.every and self.done < self.total:
            self.last = now
            print(f"  {self.done}/{self.total} phases, {now - self.start:.1f} s, {self.above} above the lower bound",
                  file=sys.stderr, flush=True)


def route_phases(
    xgft,
    network: Network,
    workload: Workload,
    phases: np.ndarray,
    router: Callable | str,
    seed: int = 0,
    progress: Progress | None = None,
    workers: int | None = None,
    keep_routes: bool = True,
    load_unit: str = "messages",
) -> Iterator[RoutedPhase]:
    """Route and evaluate the selected phases in order, batches spread over worker processes;
    loads in messages, or bytes over bandwidth (`load_unit` "bytes")."""
    router = router_function(router, topology=xgft) if isinstance(router, str) else router
    per_batch = _phases_per_batch(workload, router)
    # Flows of kept routes stay in rank order; otherwise a scattered order speeds up the counts.
    ranks = None if keep_routes else scattered_ranks(workload.num_ranks)

    def route_task(task_phases: np.ndarray) -> list:
        results = []
        for batch, idx, src, dst, size, choice, reports in _routed_batches(xgft, workload, task_phases, router, seed, ranks):
            timed_out = {p for p, r in reports.items() if r.timeouts}
            proven = np.array([bool(reports.get(int(p)) and reports[int(p)].proven_by) for p in batch])
            evaluations = evaluate_batch(xgft, network, batch, idx, src, dst, choice, proven, timed_out,
                                         size if load_unit == "bytes" else None)
            # Flows and paths cross the process boundary only when the caller keeps them.
            results.append((evaluations, reports, (idx, src, dst, size, choice) if keep_routes else None))
        return results

    large = keep_routes or _is_expensive(router)
    for task_results in map_in_processes(route_task, _tasks(phases, per_batch, large, workers), workers):
        for evaluations, reports, arrays in task_results:
            if progress is not None:
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


def _phases_per_batch(workload: Workload, router: Callable) -> int:
    if getattr(router, "whole_workload", False):
        return workload.num_phases  # the phases share one solution (destination-consistent tables)
    if _is_expensive(router):
        return 1  # synthesis: one phase per task keeps all workers busy
    return max(1, FLOWS_PER_BATCH // max(1, workload.num_ranks))


def _routed_batches(xgft, workload: Workload, phases: np.ndarray, router: Callable, seed: int, ranks):
    """(batch, phase index, src, dst, bytes, choice, reports) for consecutive batches of the phases."""
    per_batch = _phases_per_batch(workload, router)
    for start in range(0, len(phases), per_batch):
        batch = phases[start : start + per_batch]
        idx, src, dst, size = workload.batch(batch, ranks)
        weighed = {"size": size} if getattr(router, "weighs_bytes", False) else {}
        routed = router(xgft, src, dst, phase=batch[idx], occurrence=_occurrences(workload, idx, src, dst), seed=seed, **weighed)
        choice, reports = routed if isinstance(routed, tuple) else (routed, {})
        yield batch, idx, src, dst, size, choice, reports


def _tasks(phases: np.ndarray, per_batch: int, large_results: bool, workers: int | None) -> list[np.ndarray]:
    """Split phases into tasks for the workers: one batch each when results are large (kept
    routes, streamed in order), otherwise a few tasks per worker so little crosses processes."""
    phases = np.asarray(phases)
    if large_results:
        return [phases[i : i + per_batch] for i in range(0, len(phases), per_batch)]
    num_tasks = min(len(phases), 4 * (workers or default_workers()))
    return [t for t in np.array_split(phases, num_tasks) if len(t)]


@dataclass
class ExchangeLoads:
    """Channel loads of a whole exchange: the per-phase maximum and the total per channel."""

    phases: np.ndarray
    max_contention: np.ndarray  # per phase
    total_messages: np.ndarray  # per channel, summed over the phases
    peak_messages: np.ndarray  # per channel, the largest load in any one phase
    total_bytes: np.ndarray | None  # per channel, summed over the phases (when asked for)


def exchange_loads(
    xgft,
    workload: Workload,
    phases: np.ndarray,
    router: Callable | str,
    seed: int = 0,
    workers: int | None = None,
    with_bytes: bool = False,
) -> ExchangeLoads:
    """Route the selected phases and compute their channel loads, nothing else (no bounds):
    the inner loop of whole-exchange analyses, batched and spread over worker processes."""
    router = router_function(router, topology=xgft) if isinstance(router, str) else router
    per_batch = _phases_per_batch(workload, router)
    ranks = scattered_ranks(workload.num_ranks)

    def load_task(task_phases: np.ndarray):
        # A task runs many batches and returns per-channel totals: little crosses processes.
        channels = xgft.network().num_channels
        peaks, total, peak = [], np.zeros(channels, dtype=np.int64), np.zeros(channels, dtype=np.int64)
        total_bytes = np.zeros(channels, dtype=np.int64) if with_bytes else None
        for batch, idx, src, dst, size, choice, _ in _routed_batches(xgft, workload, task_phases, router, seed, ranks):
            counts = phase_channel_counts(xgft, idx, src, dst, choice, len(batch))
            peaks.append(counts.max(axis=1))
            total += counts.sum(axis=0)
            np.maximum(peak, counts.max(axis=0), out=peak)
            if with_bytes:
                total_bytes += _channel_bytes(xgft, src, dst, size, choice, channels)
        return np.concatenate(peaks), total, peak, total_bytes

    peaks, channels = [], xgft.network().num_channels
    total, peak = np.zeros(channels, dtype=np.int64), np.zeros(channels, dtype=np.int64)
    total_bytes = np.zeros(channels, dtype=np.int64) if with_bytes else None
    for task_peaks, task_total, task_peak, task_bytes in map_in_processes(load_task, _tasks(phases, per_batch, False, workers), workers):
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
