"""`synth route`'s use case: plan a run (router, limits, the routes file's header), then route every
selected phase, stream the routes file (with lanes when asked: re-routed within a lane budget by
a router that can), and the per-channel loads."""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from synth import __version__
from synth.routing import lane_budget as lanes
from synth.core.errors import SynthError
from synth.core.interrupt import Interrupted
from synth.measure.evaluate import PhaseEvaluation
from synth.execute import TaskFailed
from synth.io.checkpoint import Checkpoint, file_digest, phases_digest
from synth.io.loads_csv import write_loads_csv
from synth.io.routes_file import open_routes_writer, routes_header
from synth.io.routes_hdf5 import wants_hdf5
from synth.render import console
from synth.render.progress import Progress
from synth.topology.paths import as_paths
from synth.routing.registry import ROUTERS, RouterCall, RouterOptions, make_router, refuse_options
from synth.traffic.patterns import Workload
from synth.workflow import check_flow_limit, exchange_loads, route_phases


@dataclass
class RoutePlan:
    """A run settled before any routing: the router made, the header the routes file and a
    checkpoint record, the flows a degraded network drops per phase."""

    topology: object
    network: object
    workload: Workload
    phases: np.ndarray
    router: RouterCall
    options: RouterOptions
    seed: int
    header: dict
    dropped: dict | None
    vls: int | None

    @property
    def within_budget(self) -> bool:
        """A router that chooses among candidates can keep to a lane budget (route --vls)."""
        return self.vls is not None and self.router.spec.lane_budget and self.options.consistency == "flow"


@dataclass
class RouteResult:
    evaluations: list[PhaseEvaluation]
    lanes_note: str | None  # the lanes line(s) of a run with --vls


def plan_route(topology, workload: Workload, selection: str, phases: np.ndarray, router: str, seed: int,
               options: RouterOptions, given: list[str], keep_routes: bool, max_flows: int | None,
               vls: int | None = None) -> RoutePlan:
    """Every check a run can fail before routing: the router and its options (`given`: the options
    named on the command line, refused when the router ignores them), the flow limit."""
    refuse_options(given, ROUTERS.get(router, topology), topology.family)
    route = make_router(router, topology, options)
    check_flow_limit(workload, phases, route, keep_routes, max_flows)
    network = topology.network()
    dropped = None if network.failed_nodes is None else dict(zip(phases.tolist(), workload.unreachable(phases).tolist()))
    header = routes_header(topology, workload, selection, router, seed, options.load_unit,
                           route.spec.recorded_synthesis(options))
    return RoutePlan(topology, network, workload, phases, route, options, seed, header, dropped, vls)


def run_route(plan: RoutePlan, routes_out, loads_out, executor, checkpoint: Checkpoint | None,
              progress: Progress, quiet: bool) -> RouteResult:
    """Route the plan's phases on the executor, writing the reserved outputs (routes_out,
    loads_out: synth.core.output targets, or None)."""
    topology, network, workload, phases = plan.topology, plan.network, plan.workload, plan.phases
    route, lanes_note = plan.router, None
    routed = route_phases(topology, network, workload, phases, route, plan.seed, progress,
                          keep_routes=routes_out is not None, load_unit=plan.options.load_unit, executor=executor,
                          checkpoint=checkpoint)

    def reroute(needed: int | None):
        """The phases again, each path among the candidates the budget's lane orders admit
        (refused when these leave a router pair without a candidate)."""
        nonlocal route, progress
        least = lanes.least_budget(topology, workload, phases, route.options.candidates)
        if least is None or least > plan.vls:
            raise SynthError(lanes.budget_refusal(plan.vls, needed, least, route.options.candidates))
        route = route.with_lanes(plan.vls)
        progress.close()
        progress = Progress(len(phases), enabled=not quiet)
        progress.say(f"  lanes: more than --vls {plan.vls} needed: routing again within {plan.vls} lane orders")
        return route, route_phases(topology, network, workload, phases, route, plan.seed, progress,
                                   load_unit=plan.options.load_unit, executor=executor, checkpoint=checkpoint, job="lanes")

    try:  # the routing stops (its workers released) before the executor closes
        with closing(routed):
            if routes_out is not None:
                evaluations, lanes_note = write_routes(routes_out, plan.header, routed, topology, network, plan.dropped,
                                                       plan.vls, reroute if plan.within_budget else None)
            else:
                evaluations = [phase.evaluation for phase in routed]
        progress.close()
        if loads_out is not None:
            loads = exchange_loads(topology, workload, phases, route, plan.seed, with_bytes=True, executor=executor,
                                   checkpoint=checkpoint)
            with loads_out.open() as handle:
                write_loads_csv(handle, network, loads)
    except (KeyboardInterrupt, Interrupted, TaskFailed, SynthError) as exc:
        if checkpoint is not None:
            exc.add_note(checkpoint.resume_note("route", len(phases)))
        raise
    finally:
        progress.close()
    return RouteResult(evaluations, lanes_note)


def write_routes(target, header: dict, routed, topology, network, dropped: dict | None,
                 vls: int | None, reroute=None) -> tuple[list[PhaseEvaluation], str | None]:
    """The routes file, streamed a phase at a time; with lanes (--vls), which span every phase
    (one set of tables), the records wait for them. When the routes need more lanes than --vls
    and `reroute` is given (a router with a lane budget), it routes the phases again within the
    budget ((router, routed phases)); the budget's cost then follows the lanes line. The
    evaluations, and the lanes line(s)."""
    evaluations, lanes_note = [], None
    if vls is not None:
        records = []
        for phase in routed:
            evaluations.append(phase.evaluation)
            records.append(phase_record(topology, phase, dropped))
        try:
            chosen, how = lanes.lanes_for([p for r in records for p in r["paths"]], network.num_channels, vls,
                                          option="--vls", hint="" if reroute is not None else
                                          "; --router paths (with --consistency flow) routes within a lane budget")
            lanes_note = lanes.lanes_line(chosen, len(records), how)
        except lanes.LanesExceeded as exc:
            if reroute is None:
                raise
            without, evaluations, records, reports = evaluations, [], [], []
            router, again = reroute(exc.needed)
            with closing(again):
                for phase in again:
                    evaluations.append(phase.evaluation)
                    reports.append(phase.report)
                    records.append(phase_record(topology, phase, dropped))
            header = {**header, "synthesis": router.options.describe()}
            chosen, how = lanes.budget_lanes(topology, [p for r in records for p in r["paths"]], vls)
            lanes_note = (lanes.lanes_line(chosen, len(records), how) + "\n"
                          + lanes.budget_line(vls, exc.needed, without, evaluations, reports))
        bounds = np.cumsum([0] + [len(r["paths"]) for r in records])
        routed = ({**r, "vls": chosen[lo:hi].tolist()} for r, lo, hi in zip(records, bounds, bounds[1:]))
    compact = wants_hdf5(target.target)  # the compact form (synth.io.routes_hdf5) takes arrays
    with open_routes_writer(target, header) as writer:
        for phase in routed:
            if vls is None:
                evaluations.append(phase.evaluation)
                phase = phase_record(topology, phase, dropped, arrays=compact)
            writer.add_phase(phase)
        writer.close(console.summary(evaluations))
    return evaluations, lanes_note



def phase_record(topology, phase, dropped: dict | None = None, arrays: bool = False) -> dict:
    """A routed phase as the routes file records it: flows and paths as lists (JSON), or with
    `arrays` as an (n, 3) int64 array and Paths (the compact form)."""
    e, flows = phase.evaluation, phase.flows
    paths = as_paths(topology, flows.src, flows.dst, phase.choice)
    return {
        "phase": e.phase,
        "max_contention": e.max_contention,
        "lower_bound": e.lower_bound,
        "gap": e.gap,
        "status": e.status,
        "stage_max": e.stage_max,
        "stage_bounds": e.stage_bounds,
        **({"bound_source": e.bound_source} if e.bound_source else {}),
        **({"unreachable": dropped[e.phase]} if dropped is not None else {}),
        **({"solver": phase.report.as_dict()} if phase.report is not None else {}),
        **({"proven_by": phase.report.proven_by} if phase.report is not None and phase.report.proven_by else {}),
        "flows": np.column_stack([flows.src, flows.dst, flows.bytes]).astype(np.int64) if arrays else flows.rows(),
        "paths": paths if arrays else paths.as_lists(),
    }


def checkpoint_inputs(header: dict, workload: Workload, phases: np.ndarray, routes_kept: bool,
                      glpk_options: str | None, vls: int | None) -> dict:
    """What a checkpoint's results depend on: the routes file's header (network, traffic,
    router, options, seed), the selected phases, a traffic matrix's content, what is kept, and
    synth's version (parts are pickles of its objects)."""
    inputs = {**header, "phases": {"count": len(phases), "sha256": phases_digest(phases)},
              "routes_kept": routes_kept, "synth_version": __version__,
              "glpk_options": glpk_options,  # not in the routes file's header, and it changes results
              **({"vls": vls} if vls is not None else {})}  # a budget the paths router may route within
    if workload.pattern.startswith("csv:"):
        inputs["traffic"] = {**inputs["traffic"], "matrix_sha256": file_digest(workload.pattern[len("csv:"):])}
    return inputs


def refuse_checkpoint_overlap(checkpoint: str | None, *outputs: str | None) -> None:
    """A checkpoint directory is neither an output, nor inside one, nor holds one."""
    if checkpoint is None or not str(checkpoint).strip():
        return
    where = Path(checkpoint).resolve()
    for out in outputs:
        if out is None:
            continue
        target = Path(out).resolve()
        if target == where or where.is_relative_to(target) or target.is_relative_to(where):
            raise SynthError(f"--checkpoint '{checkpoint}' and the output '{out}' overlap: keep the checkpoint "
                             "directory apart from the files the run writes")
