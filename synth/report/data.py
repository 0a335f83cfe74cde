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

from synth.core.text import counted
from synth.pricing.alphabeta import beta_of, message_ports, most_per_port, node_ports, phase_times, single_port
from synth.measure.contention_bounds import cut_bounds_batch
from synth.pricing.fattree import LinkTimings, bmin_table, ideal_exchange_time
from synth.core.errors import SynthError
from synth.core.validate import show
from synth.opensm.engines import EngineTables, engine_tables, given_tables
from synth.routing.registry import ROUTERS, RouterCall, RouterOptions, RouterSpec, make_router
from synth.topology.paths import as_paths
from synth.topology.network import Network
from synth.traffic.patterns import Workload, parse_pattern
from synth.execute import Executor
from synth.workflow import route_phases
from synth.topology.family import FAT_TREE_FORMS

# The exchanges of [Prisacari20] (sec. 2.3, 4.2) in the seed's order, with its names.
PATTERNS = {"a2a-lin": "LIN", "a2a-xor": "XOR", "a2a-opt": "OPT", "a2a-ghe": "GHE", "a2a-bgh": "BGH"}
LABELS = {**PATTERNS, "a2a-lat": "LAT"}  # (LAT: Prisacari20 ch.4's exchange of dragonflies)
LANES_LIMIT = 15  # InfiniBand's data lanes: a routing that needs more is reported as such


def report_routings(topology) -> dict[str, RouterSpec]:
    """The routings a report can compare on `topology`, by name: every applicable router's report
    columns (synth.routing.registry), e.g. `layered-consistent` for destination-consistent routes."""
    return {name: spec for spec in ROUTERS.applicable(topology) for name in spec.report}


def report_router(name: str, options: RouterOptions, topology) -> RouterCall:
    """A report's routing as the router synth route runs (with the column's consistency: a
    `-consistent` column routes every flow to one destination alike at each switch, all phases of
    the pattern together)."""
    spec = report_routings(topology)[name]
    return make_router(spec.name, topology, replace(options, consistency=spec.report[name][1]))


def router_label(name: str, topology) -> str:
    return report_routings(topology)[name].report[name][0]


def pattern_label(pattern: str) -> str:
    return LABELS.get(pattern, pattern)


def default_routers(topology) -> str:
    """The routers a report compares unless told: the ones marked for it that apply."""
    return ",".join(next(iter(spec.report)) for spec in ROUTERS.applicable(topology) if spec.report_default)


@dataclass(frozen=True)
class CostModel:
    """Per phase alpha x (most messages one port starts) + beta x message bytes x max contention
    (synth.pricing.alphabeta, the one model)."""

    alpha: float
    bandwidth_bits: float
    message_bytes: int
    copy_cost: float = 0.0  # seconds per byte a rank copies (the collectives' schedules: NodeCosts.copy_cost)

    @property
    def beta(self) -> float:
        return beta_of(self.bandwidth_bits)

    @property
    def node(self):
        """What a node adds to the model of the collectives' schedules (one rank a node: the copy cost)."""
        from synth.pricing.alphabeta import NodeCosts

        return NodeCosts(copy_cost=self.copy_cost)

    def phase_times(self, contention: np.ndarray, port_messages=1) -> np.ndarray:
        return phase_times(contention, self.message_bytes, self.alpha, self.bandwidth_bits, port_messages)

    def exchange_time(self, contention: np.ndarray, port_messages=1) -> float:
        return float(self.phase_times(contention, port_messages).sum())


@dataclass
class Series:
    """One routing of one pattern: max contention per phase (aligned with the pattern's phases)."""

    routing: str
    max_contention: np.ndarray
    seconds: float  # to route and evaluate (OpenSM engines: walking the flows; OpenSM's run is in the notes)
    statuses: Counter = field(default_factory=Counter)  # synthesizing routers: phases per status
    note: str = ""
    lanes: str = ""  # direct networks: virtual lanes the routes need (synth: the lane heuristics over all phases)
    port_messages: np.ndarray | int = 1  # per phase, the most messages one port starts (the model's alpha terms)

    def time(self, cost: CostModel) -> float:
        """The exchange's estimate under the cost model (seconds)."""
        return cost.exchange_time(self.max_contention, self.port_messages)


@dataclass
class PatternResult:
    pattern: str
    label: str
    phases: np.ndarray
    lower_bound: np.ndarray
    series: list[Series]
    port_bound: np.ndarray | int = 1  # per phase, the fewest messages the busiest port can start (any routing)

    def bound_time(self, cost: CostModel) -> float:
        """The exchange's lower bound under the cost model (seconds)."""
        return cost.exchange_time(self.lower_bound, self.port_bound)

    def above_bound(self, series: Series) -> int:
        return int((series.max_contention > self.lower_bound).sum())


@dataclass
class Report:
    name: str
    description: str
    source: str
    topology: object  # the network (any family)
    network: Network
    cost: CostModel
    patterns: list[PatternResult]
    ideal_time: float | None  # Prisacari20, sec. 2.5.1, for the message size at the cost model's bandwidth (XGFT only)
    bmin: list[dict]  # XGFT only
    command: str
    engine_notes: list[str]
    timings: bool = False  # run times in the tables: then two runs differ; off by default (byte-identical reruns)
    bound_note: str = "subtree cut bound"
    facts: list[tuple[str, str]] = field(default_factory=list)  # direct networks: the family's facts
    collectives: list = field(default_factory=list)  # synth.pricing.compare.Comparison per collective asked for


def parse_patterns(text: str, num_ranks: int, topology=None) -> list[str]:
    """Families that report the seed's exchanges (XGFT, Topology.reports_seed_exchanges): all, or
    names such as opt,lin / a2a-opt,a2a-lin; `all` leaves XOR out when the number of ranks is not a
    power of two (it needs one). Others: all (the family's Topology.report_patterns), or any
    traffic patterns, comma-separated."""
    if topology is not None and not topology.reports_seed_exchanges:
        chosen = topology.report_patterns() if text == "all" else _items(text, "--patterns")
        for pattern in chosen:
            parse_pattern(pattern, topology.num_terminals, topology.hierarchy(), topology=topology)  # one line if bad
        if len(set(chosen)) != len(chosen):
            raise SynthError(f"--patterns {show(text)} names a pattern twice")
        return chosen
    if text == "all":
        return topology.report_patterns() if topology is not None else \
            [p for p in PATTERNS if p != "a2a-xor" or num_ranks & (num_ranks - 1) == 0]
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


def parse_routers(text: str, topology) -> list[str]:
    chosen = _items(text, "--routers")
    known = list(report_routings(topology))
    unknown = [n for n in chosen if n not in known]
    if unknown:
        raise SynthError(f"unknown router '{unknown[0]}' for a report on {topology.family} (known: {', '.join(known)})")
    if len(set(chosen)) != len(chosen):
        raise SynthError(f"--routers {show(text)} names a router twice")
    return chosen


def _routed_series(topology, network: Network, workload: Workload, phases: np.ndarray, router: str,
                   options: RouterOptions, seed: int, progress: Callable[[str], None],
                   executor: Executor | None = None) -> tuple[Series, np.ndarray]:
    """One routing of one pattern, and per phase the lower bound: the cut bounds, and on a direct
    network the LP bound where the synthesizing router computed it."""
    started = time.perf_counter()
    routed = list(route_phases(topology, network, workload, phases, report_router(router, options, topology), seed,
                               keep_routes=not topology.compact_routes or not single_port(network), executor=executor))
    evaluations = [r.evaluation for r in routed]
    proofs = sorted({r.report.whole_run for r in routed if r.report is not None and getattr(r.report, "whole_run", None)})
    seconds = time.perf_counter() - started
    contention = np.array([e.max_contention for e in evaluations], dtype=np.int64)
    bound = np.array([max(e.lower_bound, (getattr(r.report, "lp_bound", 0) or 0) if r.report is not None else 0)
                      for e, r in zip(evaluations, routed)], dtype=np.int64)
    statuses = Counter(e.status for e in evaluations) if report_routings(topology)[router].synthesizes else Counter()
    lanes = "" if topology.up_down_routes else \
        _lanes([p for r in routed for p in as_paths(topology, r.flows.src, r.flows.dst, r.choice).as_lists()], network)
    if single_port(network):
        ports = _source_messages(workload, phases)
    else:  # the start ports follow the routes (kept: `single_port` is false only on direct networks)
        ports = np.array([most_per_port(np.zeros(len(r.flows), dtype=np.int64),
                                        message_ports(network, as_paths(topology, r.flows.src, r.flows.dst, r.choice),
                                                      r.flows.src), 1)[0] for r in routed], dtype=np.int64)
    label = router_label(router, topology)
    progress(f"{pattern_label(workload.pattern)} {label}: max contention {contention.max(initial=0)}, "
             f"{int((contention > bound).sum())} of {counted(len(phases), 'phase')} above the bound known so far, {seconds:.1f} s")
    return Series(label, contention, seconds, statuses, "; ".join(proofs), lanes, ports), bound


def _source_messages(workload: Workload, phases: np.ndarray) -> np.ndarray:
    """Per phase, the most messages one terminal sends: what its one port starts."""
    idx, src, _, _ = workload.batch(phases)
    return most_per_port(idx, src, len(phases))


def _port_bound(network: Network, workload: Workload, phases: np.ndarray) -> np.ndarray:
    """Per phase, the fewest messages the busiest port starts under any routing: a terminal's
    messages over its node's ports."""
    return -(-_source_messages(workload, phases) // node_ports(network))


def _lanes(paths: list[list[int]], network: Network) -> str:
    """Lanes that make every lane's channel dependencies acyclic over all of a pattern's paths (one
    set of tables): the lane heuristics' count, an upper bound on the least."""
    from synth.routing.lane_budget import lanes_for

    try:
        lanes, _ = lanes_for(paths, network.num_channels, LANES_LIMIT)
    except SynthError:
        return f"more than {LANES_LIMIT}"
    return str(int(lanes.max(initial=-1)) + 1)


def _table_series(network: Network, workload: Workload, phases: np.ndarray, tables: EngineTables, label: str) -> Series:
    started = time.perf_counter()
    idx, src, dst, _ = workload.batch(phases)
    contention, unrouted = tables.phase_contention(network, src, dst, idx, len(phases))
    note = "" if tables.configured_by == tables.engine else f"OpenSM fell back to {tables.configured_by}"
    if unrouted:
        note = "; ".join(filter(None, [note, f"{counted(unrouted, 'flow')} not delivered (left out)"]))
    ports = _source_messages(workload, phases) if single_port(network) else tables.phase_port_messages(network, src, dst, idx, len(phases))
    return Series(label, contention, time.perf_counter() - started, note=note, lanes=tables.lanes, port_messages=ports)


def _cut_bounds(topology, workload: Workload, phases: np.ndarray) -> np.ndarray:
    idx, src, dst, _ = workload.batch(phases)
    return cut_bounds_batch(topology, idx, src, dst, len(phases)).max(axis=1, initial=0)


def build_report(
    name: str, description: str, source: str, topology, cost: CostModel, patterns: list[str], routers: list[str],
    engines: list[str], options: RouterOptions, seed: int, command: str, progress: Callable[[str], None] = lambda _: None,
    given: list[tuple[str, str]] = (), timings: bool = False, collectives: list[str] = (), collective_sizes: list[int] = (),
    executor: Executor | None = None, collective_router: str | None = None,
) -> Report:
    """`engines` are run by OpenSM on ibsim; `given` are (name, directory) of tables computed
    elsewhere for the network's fabric (synth.opensm.engines.given_tables). `xgft` is the
    network's topology, of any family. The phases of synth's routings run on `executor`."""
    network = topology.network()
    report_name = name  # (the collectives' loop below reuses `name`)
    engine_runs, notes = [], []
    for label, directory in given:  # read first: a bad directory fails before any routing
        engine_runs.append((label, given_tables(network, label, directory)))
        notes.append(f"{label}: tables read from {directory}")
    for engine in engines:
        tables = engine_tables(network, engine, topology=topology)
        engine_runs.append((f"OpenSM {engine}", tables))
        fallback = "" if tables.configured_by == engine else f" (fell back to {tables.configured_by})"
        took = f" in {tables.seconds:.1f} s" if timings else ""
        notes.append(f"OpenSM {engine}: tables computed by OpenSM{took} on ibsim{fallback}, read back with dump_fts")
        progress(f"OpenSM {engine}: tables computed by OpenSM in {tables.seconds:.1f} s on ibsim{fallback}")
    results = []
    for pattern in patterns:
        workload = parse_pattern(pattern, network.num_terminals, topology.hierarchy(), cost.message_bytes, topology=topology)
        phases = workload.phase_numbers.copy()
        if network.failed_nodes is not None:
            workload = workload.on_network(network)
            lost = int(workload.unreachable(phases).sum())
            notes.append(f"{pattern_label(pattern)}: {counted(lost, 'flow')} left out, their ends no longer meet on the degraded "
                         f"network")
        series, bound = [], _cut_bounds(topology, workload, phases)
        for router in routers:
            routed, routed_bound = _routed_series(topology, network, workload, phases, router, options, seed, progress,
                                                  executor)
            series.append(routed)
            bound = np.maximum(bound, routed_bound)
        series += [_table_series(network, workload, phases, tables, label) for label, tables in engine_runs]
        results.append(PatternResult(pattern, pattern_label(pattern), phases, bound, series,
                                     _port_bound(network, workload, phases)))
    compared = []
    for name in collectives:
        from synth.pricing.compare import compare
        from synth.pricing.bounds import with_strongest_bound

        progress(f"collective {name}: every algorithm generated, verified, routed and priced")
        compared.append(with_strongest_bound(compare(name, topology, list(collective_sizes), collective_router,
                                                     cost.alpha, cost.bandwidth_bits, cost.node), topology, cost.alpha,
                                             cost.bandwidth_bits, node=cost.node))
    if FAT_TREE_FORMS in topology.closed_forms():  # Prisacari20 ch.2: the ideal exchange time and B_min per layer
        return Report(report_name, description, source, topology, network, cost, results,
                      ideal_exchange_time(topology.m, cost.message_bytes, LinkTimings(link_bandwidth_bps=cost.bandwidth_bits)),
                      bmin_table(topology), command, notes, timings,
                      collectives=compared)
    lp = any(report_routings(topology)[r].records_lp_bound for r in routers)
    bound_note = "the cut bounds (terminal links" + (", group cut" if topology.router_groups() is not None else "") + ")" \
        + (" and the LP bound over all paths (computed by synth's path-selection and layered routers)" if lp else "")
    return Report(report_name, description or topology.label(), source, topology, network, cost, results, None, [], command, notes, timings,
                  bound_note, topology.facts(), compared)
