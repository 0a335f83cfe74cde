"""The numbers of a cost report: for every exchange pattern and routing, the maximum contention
of each phase next to its lower bound, and the alpha-beta estimate of the whole exchange.

Synth's routers run through synth.workflow.route_phases, exactly as `synth route` runs them, so
a report and the CLI print the same numbers. OpenSM's engines route the network once each (their
tables do not depend on the workload); every pattern's flows are then walked through them.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from synth.cost.alphabeta import beta_of, phase_times
from synth.cost.bounds import stage_lower_bounds_batch
from synth.cost.fattree import bmin_table, ideal_exchange_time
from synth.core.errors import SynthError
from synth.core.validate import show
from synth.opensm.engines import EngineTables, engine_tables, given_tables
from synth.route.layered import LayeredOptions
from synth.topology.network import Network
from synth.topology.xgft import Xgft
from synth.traffic.patterns import Workload, parse_pattern
from synth.workflow import route_phases, router_function

# The exchanges of 003_fd372c8942ac4293.txt (sec. 2.3, 4.2) in the seed's order, with its names.
PATTERNS = {"a2a-lin": "LIN", "a2a-xor": "XOR", "a2a-opt": "OPT", "a2a-ghe": "GHE", "a2a-bgh": "BGH"}
ROUTERS = {"dmodk": "d-mod-k", "smodk": "s-mod-k", "random": "random", "layered": "synth layered",
           "layered-consistent": "synth layered, dest.-consistent", "monolithic-consistent": "synth exact, dest.-consistent"}
SYNTHESIZED = ("layered", "layered-consistent", "monolithic-consistent")  # their phases carry a status


def report_router(name: str, options: LayeredOptions) -> Callable:
    """A report's routing name as synth.workflow's router: `-consistent` routes every flow to one
    destination alike at each switch (tables without LMC), all phases of the pattern together."""
    base, _, consistent = name.partition("-")
    return router_function(base, replace(options, consistency="destination" if consistent else "flow"))


@dataclass(frozen=True)
class CostModel:
    """Per phase alpha + beta * message bytes * max contention (synth.cost.alphabeta)."""

    alpha: float
    bandwidth_bits: float
    message_bytes: int

    @property
    def beta(self) -> float:
        return beta_of(self.bandwidth_bits)

    def phase_times(self, contention: np.ndarray) -> np.ndarray:
        return phase_times(contention, self.message_bytes, self.alpha, self.bandwidth_bits)

    def exchange_time(self, contention: np.ndarray) -> float:
        return float(self.phase_times(contention).sum())


@dataclass
class Series:
    """One routing of one pattern: max contention per phase (aligned with the pattern's phases)."""

    routing: str
    max_contention: np.ndarray
    seconds: float  # to route and evaluate (OpenSM engines: walking the flows; OpenSM's run is in the notes)
    statuses: Counter = field(default_factory=Counter)  # synthesizing routers: phases per status
    note: str = ""


@dataclass
class PatternResult:
    pattern: str
    label: str
    phases: np.ndarray
    lower_bound: np.ndarray
    series: list[Series]

    def above_bound(self, series: Series) -> int:
        return int((series.max_contention > self.lower_bound).sum())


@dataclass
class Report:
    name: str
    description: str
    source: str
    xgft: Xgft
    network: Network
    cost: CostModel
    patterns: list[PatternResult]
    ideal_time: float  # 003, sec. 2.5.1, for the message size
    bmin: list[dict]
    command: str
    engine_notes: list[str]
    timings: bool = False  # run times in the tables: then two runs differ; off by default (byte-identical reruns)


def parse_patterns(text: str, num_ranks: int) -> list[str]:
    """all, or names such as opt,lin / a2a-opt,a2a-lin (the seed's exchanges only); `all` leaves
    XOR out when the number of ranks is not a power of two (it needs one)."""
    if text == "all":
        return [p for p in PATTERNS if p != "a2a-xor" or num_ranks & (num_ranks - 1) == 0]
    chosen = []
    for name in (n.lower() for n in _items(text, "--patterns")):
        key = name if name.startswith("a2a-") else f"a2a-{name}"
        if key not in PATTERNS:
            raise SynthError(f"unknown exchange '{name}' for a report (known: {', '.join(v.lower() for v in PATTERNS.values())})")
        if key in chosen:
            raise SynthError(f"--patterns names '{name}' twice")
        chosen.append(key)
    return chosen


def _items(text: str, option: str) -> list[str]:
    """A comma-separated list with no empty item (`lin,,opt` is a typo, not two names)."""
    items = [n.strip() for n in text.split(",")]
    if not all(items):
        raise SynthError(f"{option} {show(text)} has an empty item")
    return items


def parse_routers(text: str) -> list[str]:
    chosen = _items(text, "--routers")
    unknown = [n for n in chosen if n not in ROUTERS]
    if unknown:
        raise SynthError(f"unknown router '{unknown[0]}' for a report (known: {', '.join(ROUTERS)})")
    if len(set(chosen)) != len(chosen):
        raise SynthError(f"--routers {show(text)} names a router twice")
    return chosen


def _routed_series(xgft: Xgft, network: Network, workload: Workload, phases: np.ndarray, router: str,
                   options: LayeredOptions, seed: int, progress: Callable[[str], None]) -> tuple[Series, np.ndarray]:
    started = time.perf_counter()
    routed = list(route_phases(xgft, network, workload, phases, report_router(router, options), seed, keep_routes=False))
    evaluations = [r.evaluation for r in routed]
    proofs = sorted({r.report.whole_run for r in routed if r.report is not None and r.report.whole_run})
    seconds = time.perf_counter() - started
    contention = np.array([e.max_contention for e in evaluations], dtype=np.int64)
    bound = np.array([e.lower_bound for e in evaluations], dtype=np.int64)
    statuses = Counter(e.status for e in evaluations) if router in SYNTHESIZED else Counter()
    progress(f"{PATTERNS[workload.pattern]} {ROUTERS[router]}: max contention {contention.max(initial=0)}, "
             f"{int((contention > bound).sum())} of {len(phases)} phases above the bound, {seconds:.1f} s")
    return Series(ROUTERS[router], contention, seconds, statuses, "; ".join(proofs)), bound


def _table_series(network: Network, workload: Workload, phases: np.ndarray, tables: EngineTables, label: str) -> Series:
    started = time.perf_counter()
    idx, src, dst, _ = workload.batch(phases)
    contention, unrouted = tables.phase_contention(network, src, dst, idx, len(phases))
    note = "" if tables.configured_by == tables.engine else f"OpenSM fell back to {tables.configured_by}"
    if unrouted:
        note = "; ".join(filter(None, [note, f"{unrouted} flows not delivered (left out)"]))
    return Series(label, contention, time.perf_counter() - started, note=note)


def build_report(
    name: str, description: str, source: str, xgft: Xgft, cost: CostModel, patterns: list[str], routers: list[str],
    engines: list[str], options: LayeredOptions, seed: int, command: str, progress: Callable[[str], None] = lambda _: None,
    given: list[tuple[str, str]] = (), timings: bool = False,
) -> Report:
    """`engines` are run by OpenSM on ibsim; `given` are (name, directory) of tables computed
    elsewhere for the network's fabric (synth.opensm.engines.given_tables)."""
    network = xgft.network()
    engine_runs, notes = [], []
    for label, directory in given:  # read first: a bad directory fails before any routing
        engine_runs.append((label, given_tables(network, label, directory)))
        notes.append(f"{label}: tables read from {directory}")
    for engine in engines:
        tables = engine_tables(network, engine)
        engine_runs.append((f"OpenSM {engine}", tables))
        fallback = "" if tables.configured_by == engine else f" (fell back to {tables.configured_by})"
        took = f" in {tables.seconds:.1f} s" if timings else ""
        notes.append(f"OpenSM {engine}: tables computed by OpenSM{took} on ibsim{fallback}, read back with dump_fts")
        progress(f"OpenSM {engine}: tables computed by OpenSM in {tables.seconds:.1f} s on ibsim{fallback}")
    results = []
    for pattern in patterns:
        workload = parse_pattern(pattern, network.num_terminals, xgft.hierarchy(), cost.message_bytes)
        phases = np.arange(workload.num_phases, dtype=np.int64)
        series, bound = [], None
        for router in routers:
            routed, bound = _routed_series(xgft, network, workload, phases, router, options, seed, progress)
            series.append(routed)
        if bound is None:  # OpenSM engines only
            idx, src, dst, _ = workload.batch(phases)
            bound = stage_lower_bounds_batch(xgft, idx, src, dst, len(phases)).max(axis=1, initial=0)
        series += [_table_series(network, workload, phases, tables, label) for label, tables in engine_runs]
        results.append(PatternResult(pattern, PATTERNS[pattern], phases, bound, series))
    return Report(name, description, source, xgft, network, cost, results,
                  ideal_exchange_time(xgft.m, cost.message_bytes), bmin_table(xgft), command, notes, timings)
