"""`synth report`'s use case: every choice of a report checked before any routing (patterns,
routings, OpenSM's engines and tools, tables given by directory, size guards, the collectives
section), then the report built (synth.report.data) and rendered (synth.report.render)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from synth.core.sizes import parse_sizes
from synth.collectives.schedule import collective
from synth.core.errors import SynthError
from synth.opensm.engines import parse_engines
from synth.report.data import CostModel, build_report, default_routers, parse_patterns, parse_routers, report_router
from synth.report.render import render_html, render_markdown
from synth.routing.registry import RouterOptions, make_router
from synth.traffic.patterns import parse_pattern
from synth.workflow import check_flow_limit

DEFAULT_COLLECTIVE_BYTES = "1KiB..64MiB"


@dataclass
class ReportPlan:
    topology: object
    cost: CostModel
    patterns: list[str]
    routers: list[str]
    engines: list[str]
    given: list[tuple[str, str]]  # (name, directory) of tables computed elsewhere
    options: RouterOptions
    seed: int
    collectives: list[str] = field(default_factory=list)
    collective_sizes: list[int] = field(default_factory=list)
    collective_router: str | None = None
    synthesis_time_limit: float | None = None  # the synthesized schedule as one more column of the collectives (None: not)
    simulation_model: str | None = None  # the collectives also simulated on SimGrid with this network model (None: not)


def plan_report(topology, cost: CostModel, patterns: str, routers: str | None, opensm: str, lfts: list[str],
                options: RouterOptions, seed: int, max_flows: int | None, collectives: str | None,
                collective_bytes: str | None, collective_router: str | None,
                synthesis_time_limit: float | None = None, simulation_model: str | None = None) -> ReportPlan:
    network = topology.network()
    chosen_patterns = parse_patterns(patterns, network.num_terminals, topology)
    chosen = parse_routers(routers if routers is not None else default_routers(topology), topology)
    engines = parse_engines(opensm, topology)
    if engines:
        from synth.opensm.sim import find_tools
        find_tools()  # fail before any routing when OpenSM is missing
    given = []
    for text in lfts:
        name, equals, directory = text.partition("=")
        if not equals or not name or not directory:
            raise SynthError(f"--lfts takes NAME=DIR, got '{text}'")
        given.append((name, directory))
    for pattern in chosen_patterns:  # size guards before any routing
        workload = parse_pattern(pattern, network.num_terminals, topology.hierarchy(), cost.message_bytes,
                                 topology=topology)
        for router in chosen:
            check_flow_limit(workload, workload.phase_numbers, report_router(router, options, topology),
                             not topology.compact_routes, max_flows)
    names = [c.strip() for c in collectives.split(",") if c.strip()] if collectives else []
    for name in names:
        if collective(name).name == "alltoallv":  # an unknown name, or one without its matrix, fails before any routing
            raise SynthError("--collectives alltoallv: a report prices its collectives with equal blocks; an "
                             "alltoallv's come from a matrix: synth compare alltoallv --sizes SPEC")
    if not names and (collective_bytes is not None or collective_router is not None or synthesis_time_limit is not None
                      or simulation_model is not None or cost.copy_cost):
        raise SynthError("--collective-bytes, --collective-router, --synthesize, --simulate and --copy-cost apply to the "
                         "collectives section: add --collectives LIST")
    if simulation_model is not None:
        from synth.app.compare import require_simgrid

        require_simgrid(simulation_model)  # one line before any routing when SimGrid is missing
    sizes = parse_sizes(collective_bytes if collective_bytes is not None else DEFAULT_COLLECTIVE_BYTES, "--collective-bytes")
    transfers = collective_router or topology.default_router
    if names:
        make_router(transfers, topology)  # an unknown or inapplicable router fails before any routing
    return ReportPlan(topology, cost, chosen_patterns, chosen, engines, given, options, seed, names, sizes, transfers,
                      synthesis_time_limit, simulation_model)


def make_report(plan: ReportPlan, name: str, description: str, source: str, command: str, say, timings: bool,
                executor, outs: list[Path]):
    """The report and its files (path -> content), every one rendered before any is written."""
    report = build_report(name, description, source, plan.topology, plan.cost, plan.patterns, plan.routers, plan.engines,
                          plan.options, plan.seed, command, say, plan.given, timings, plan.collectives,
                          plan.collective_sizes, executor, plan.collective_router)
    if plan.synthesis_time_limit is not None:  # the synthesized schedule next to the generated algorithms
        import dataclasses

        from synth.synthesis.portfolio import compare_with_synthesis

        say("collectives: synthesizing a schedule for each")
        report = dataclasses.replace(report, collectives=[
            compare_with_synthesis(c, plan.topology, plan.cost.alpha, plan.cost.bandwidth_bits, plan.synthesis_time_limit,
                                   say, plan.cost.node) for c in report.collectives])
    if plan.simulation_model is not None:  # last: every column, the synthesized one too, is there
        import dataclasses

        from synth.app.compare import simulate_comparison

        say(f"collectives: simulating every algorithm on SimGrid ({plan.simulation_model})")
        report = dataclasses.replace(report, collectives=[
            simulate_comparison(c, plan.topology, plan.simulation_model, plan.cost.alpha, plan.cost.bandwidth_bits, say,
                                plan.cost.node) for c in report.collectives])
    files = {}
    for out in outs:
        files |= render_markdown(report, out) if out.suffix.lower() == ".md" else {out: render_html(report)}
    return report, files
