"""Command-line interface: argument parsing and dispatch only."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import traceback
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import numpy as np

from synth.cost.bounds import bound_names, cut_bounds_batch
from synth.cost.loads import check_byte_sums
from synth.cost.evaluate import PhaseEvaluation
from synth.cost.fattree import ideal_exchange_time
from synth import __version__
from synth.app import model as model_command
from synth.app import compare as compare_command
from synth.app import schedule as schedule_command
from synth.app import vls as vls_command
from synth.core.text import counted
from synth.core.errors import SynthError
from synth.core import interrupt
from synth.core.interrupt import Interrupted, install_handlers
from synth.core.output import OutputSet
from synth.core.validate import parse_int, parse_positive_number, read_text
from synth.io.instance import MAX_MESSAGE_BYTES, Instance, resolve
from synth.render import console
from synth.cost.lp_bound import LP_TIME_LIMIT
from synth.io.routes_file import COMMON_DATA_VLS, MAX_FILE_BYTES, MAX_VLS, RoutesWriter, read_routes, routes_header
from synth.topology import Xgft, parse_topology, require_xgft
from synth.topology.degraded import with_failures
from synth.traffic.patterns import DEFAULT_MESSAGE_BYTES, parse_pattern, pattern_syntaxes
from synth.checking.routes import MAX_LISTED_PROBLEMS, check_routes
from synth.io.loads_csv import write_loads_csv
from synth.app.vls import lanes_for, lanes_line
from synth.routing.paths import as_paths
from synth.routing.registry import LOAD_UNITS, ROUTERS, DIRECT, XGFT, RouterOptions, make_router, refuse_options
from synth.tables.forwarding import MAX_LMC
from synth.execute import EXECUTOR_SYNTAX, LocalExecutor, TaskFailed, parse_executor
from synth.io.checkpoint import Checkpoint, file_digest, phases_digest
from synth.render.progress import Progress
from synth.workflow import (FLOWS_PER_BATCH, MAX_FLOWS_ANALYSIS, MAX_FLOWS_KEPT, check_flow_limit, exchange_loads,
                            route_phases, run_parts)


def version() -> str:
    """The installed distribution's version (pyproject.toml)."""
    from importlib.metadata import PackageNotFoundError, version as installed

    try:
        return installed("synth")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def family_list() -> str:
    """The network families and their spec syntax, for `synth topology --help`."""
    from synth.topology import FAMILIES

    lines = ["network families (SPEC):"]
    for name, family in FAMILIES.items():
        lines.append(f"  {family.syntax}")
        lines.append(f"      {family.description}")
    return "\n".join(lines)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit code 2
        raise SynthError(f"{self.prog}: {message}")


# Option values are checked by synth.core.validate: ASCII digits, no '8_0', no truncated floats,
# within 64-bit integers and the documented range; the message names the option.
MAX_THREADS = 256
MAX_TIME_LIMIT = 1e6  # seconds: about 11 days per solver call


def _integer(option: str, minimum: int = 0, maximum: int | None = None):
    return lambda text: parse_int(text, option, minimum, maximum)


def _positive(option: str, maximum: float | None = None):
    return lambda text: parse_positive_number(text, option, maximum)


def _load(args, any_family: bool = False) -> tuple[Instance, object, object]:
    instance = resolve(args.spec)
    topology = parse_topology(with_failures(instance.spec, getattr(args, "fail", None)))
    if not any_family:
        require_xgft(topology, args.command)
    return instance, topology, topology.network()


def _workload(args, instance: Instance, topology, network, kept: bool):
    """The workload, the selection text as given and the selected phase numbers."""
    pattern = args.traffic if args.traffic is not None else instance.traffic.get("pattern")
    if not pattern:
        raise SynthError("no traffic given: use --traffic PATTERN (or a [traffic] pattern in the instance file)")
    size = args.bytes if args.bytes is not None else instance.traffic.get("bytes", DEFAULT_MESSAGE_BYTES)
    csv_rows = args.max_flows if args.max_flows is not None else (MAX_FLOWS_KEPT if kept else MAX_FLOWS_ANALYSIS)
    workload = parse_pattern(pattern, network.num_terminals, topology.hierarchy(), size, max_flows=min(csv_rows, MAX_FLOWS_KEPT),
                             topology=topology)
    if args.placement is not None:
        workload = workload.place(args.placement, network.num_terminals, topology.hierarchy())
    if network.failed_nodes is not None:  # a degraded network: flows whose ends no longer meet are dropped
        workload = workload.on_network(network)
    selection = (args.phase if args.phase is not None else instance.traffic.get("phases", "all")).strip()
    return workload, selection, workload.select(selection)


def _input_files(spec: str, pattern: str) -> list[str]:
    """The files a run reads: an instance file and a CSV traffic matrix."""
    return [f for f in (spec if spec.endswith(".toml") else None,
                        pattern[len("csv:"):] if pattern.startswith("csv:") else None) if f]


def _load_workload(args) -> tuple[object, object, np.ndarray]:
    """The network and the selected phases of the workload, within the analysis flow limit."""
    instance, topology, network = _load(args, any_family=True)
    workload, _, phases = _workload(args, instance, topology, network, kept=False)
    check_flow_limit(workload, phases, None, False, args.max_flows)
    return topology, workload, phases


def _print_phases(evaluations: list[PhaseEvaluation], network, full_table: bool, names: tuple[str, ...]) -> dict:
    if full_table or len(evaluations) <= console.TABLE_PHASES:
        print(console.phase_rows(evaluations, network, names))
    else:
        print(console.distribution_lines(evaluations))
    totals = console.summary(evaluations)
    print(console.summary_line(totals))
    return totals


def add_load_unit(p, what: str) -> None:
    p.add_argument("--load-unit", choices=LOAD_UNITS, default="messages",
                   help="what a channel's load counts: messages (default), or bytes over the link's bandwidth (flows of "
                        f"different sizes, e.g. a csv: matrix); {what}")


# ----- commands ---------------------------------------------------------------------------------

def cmd_topology(args) -> int:
    if args.out is not None and args.format != "json":
        raise SynthError("--out writes the JSON form of the network: add --format json")
    _, topology, network = _load(args, any_family=True)
    if args.format != "json":
        print(console.topology_summary(topology, network))
        return 0
    with OutputSet() as outputs:
        target = outputs.reserve(args.out) if args.out is not None else None
        text = json.dumps(network.to_json_dict(), separators=(",", ":")) + "\n"
        if target is None:
            sys.stdout.write(text)
        else:
            target.write(text)
    return 0


def cmd_route(args) -> int:
    instance, topology, network = _load(args, any_family=True)
    if args.vls is not None and args.out is None:
        raise SynthError("--vls records virtual lanes in the routes file: add --out FILE")
    lanes_note = None
    workload, selection, phases = _workload(args, instance, topology, network, kept=args.out is not None)
    router = args.router if args.router is not None else instance.route.get("router")
    if not router:
        raise SynthError("no router given: use --router NAME (or a [route] router in the instance file)")
    seed = args.seed if args.seed is not None else instance.route.get("seed", 0)
    options = _router_options(args)
    refuse_options([a.split("=", 1)[0] for a in args.argv if a.startswith("--")], ROUTERS.get(router, topology),
                   topology.family)
    route = make_router(router, topology, options)
    check_flow_limit(workload, phases, route, args.out is not None, args.max_flows)
    # a router that chooses among candidates can keep to a lane budget (_write_routes)
    within_budget = args.vls is not None and route.spec.lane_budget and options.consistency == "flow"
    executor = parse_executor(args.executor)
    _refuse_checkpoint_overlap(args.checkpoint, args.out, args.loads)
    if args.load_unit == "messages" and workload.sizes_differ(phases):
        print("note: flow sizes differ; contention counts messages (--load-unit bytes weighs bytes over bandwidth)",
              file=sys.stderr)
    dropped = None if network.failed_nodes is None else dict(zip(phases.tolist(), workload.unreachable(phases).tolist()))
    header = routes_header(topology, workload, selection, router, seed, args.load_unit,
                           route.spec.recorded_synthesis(options))
    with OutputSet() as outputs, executor:  # both targets checked (and reserved) before any routing
        outputs.protect(*_input_files(args.spec, workload.pattern))
        routes_out = outputs.reserve(args.out) if args.out is not None else None
        loads_out = outputs.reserve(args.loads, "--loads") if args.loads is not None else None
        checkpoint = None
        if args.checkpoint is not None:
            checkpoint = Checkpoint(args.checkpoint, _checkpoint_inputs(header, workload, phases, args))
        workers = executor.start()  # a cluster is reached (or started) before anything is printed
        if checkpoint is not None:
            checkpoint.create()
        print(f"topology  {topology.label()}: {network.num_terminals} terminals, {network.num_switches} switches")
        print(f"traffic   {workload.pattern}: {len(phases)} of {counted(workload.num_phases, 'phase')}, {workload.message_bytes} B per message")
        print(f"router    {route.spec.describe(options, seed)}")
        if args.load_unit == "bytes":
            print("load      bytes over bandwidth per channel (contention, bounds and gaps in bytes)")
        sys.stdout.flush()
        progress = Progress(len(phases), enabled=not args.quiet)
        if args.executor is not None and not args.quiet:
            progress.say(f"  executor: {executor.label()}, {_workers(workers)}")
        routed = route_phases(topology, network, workload, phases, route, seed, progress, keep_routes=routes_out is not None,
                              load_unit=args.load_unit, executor=executor, checkpoint=checkpoint)

        def reroute(needed: int | None):
            """The phases again, each path among the candidates the budget's lane orders admit
            (refused when these leave a router pair without a candidate)."""
            nonlocal route, progress
            least = vls_command.least_budget(topology, workload, phases, route.options.candidates)
            if least is None or least > args.vls:
                raise SynthError(vls_command.budget_refusal(args.vls, needed, least, route.options.candidates))
            route = route.with_lanes(args.vls)
            progress.close()
            progress = Progress(len(phases), enabled=not args.quiet)
            progress.say(f"  lanes: more than --vls {args.vls} needed: routing again within {args.vls} lane orders")
            return route, route_phases(topology, network, workload, phases, route, seed, progress, load_unit=args.load_unit,
                                       executor=executor, checkpoint=checkpoint, job="lanes")

        try:  # the routing stops (its workers released) before the executor closes
            with closing(routed):
                if routes_out is not None:
                    evaluations, lanes_note = _write_routes(routes_out, header, routed, topology, network, dropped, args.vls,
                                                            reroute if within_budget else None)
                else:
                    evaluations = [phase.evaluation for phase in routed]
            progress.close()
            if loads_out is not None:
                loads = exchange_loads(topology, workload, phases, route, seed, with_bytes=True, executor=executor,
                                       checkpoint=checkpoint)
                with loads_out.open() as handle:
                    write_loads_csv(handle, network, loads)
        except (KeyboardInterrupt, Interrupted, TaskFailed, SynthError) as exc:
            if checkpoint is not None:
                exc.add_note(checkpoint.resume_note("route", len(phases)))
            raise
        finally:
            progress.close()
    print()
    _print_phases(evaluations, network, args.table, bound_names(topology))
    print()
    print(console.stage_lines(evaluations, network, bound_names(topology)))
    if lanes_note is not None:
        print("\n".join(f"{label:<10}{text}" for label, text in zip(("lanes", "budget"), lanes_note.split("\n"))))
    if dropped is not None:
        print(f"unreachable {console.unreachable_line(topology, workload, phases, dropped)}")
    for out in (args.out, args.loads):
        if out is not None:
            print(f"wrote {out}")
    return 0


def _workers(count: int) -> str:
    return f"{count} worker{'s' * (count != 1)}"


def _refuse_checkpoint_overlap(checkpoint: str | None, *outputs: str | None) -> None:
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


def _write_routes(target, header: dict, routed, topology, network, dropped: dict | None,
                  vls: int | None, reroute=None) -> tuple[list[PhaseEvaluation], str | None]:
    """The routes file, streamed a phase at a time; with lanes (--vls), which span every phase
    (one set of tables), the records wait for them. When the routes need more lanes than --vls
    and `reroute` is given (the paths router), it routes the phases again within the budget
    ((router, routed phases)); the budget's cost then follows the lanes line. The evaluations,
    and the lanes line(s)."""
    evaluations, lanes_note = [], None
    if vls is not None:
        records = []
        for phase in routed:
            evaluations.append(phase.evaluation)
            records.append(_phase_record(topology, phase, dropped))
        try:
            lanes, how = lanes_for([p for r in records for p in r["paths"].as_lists()], network.num_channels, vls, option="--vls",
                                   hint="" if reroute is not None else
                                   "; --router paths (with --consistency flow) routes within a lane budget")
            lanes_note = lanes_line(lanes, len(records), how)
        except vls_command.LanesExceeded as exc:
            if reroute is None:
                raise
            without, evaluations, records, reports = evaluations, [], [], []
            router, again = reroute(exc.needed)
            with closing(again):
                for phase in again:
                    evaluations.append(phase.evaluation)
                    reports.append(phase.report)
                    records.append(_phase_record(topology, phase, dropped))
            header = {**header, "synthesis": router.options.describe()}
            lanes, how = vls_command.budget_lanes(topology, [p for r in records for p in r["paths"].as_lists()], vls)
            lanes_note = (lanes_line(lanes, len(records), how) + "\n"
                          + vls_command.budget_line(vls, exc.needed, without, evaluations, reports))
        bounds = np.cumsum([0] + [r["paths"].num_flows for r in records])
        routed = ({**r, "vls": lanes[lo:hi]} for r, lo, hi in zip(records, bounds, bounds[1:]))
    from synth.io.routes_file import open_routes_writer

    with open_routes_writer(target, header) as writer:  # JSON, or the compact form for FILE.h5
        for phase in routed:
            if vls is None:
                evaluations.append(phase.evaluation)
                phase = _phase_record(topology, phase, dropped)
            writer.add_phase(phase)
        writer.close(console.summary(evaluations))
    return evaluations, lanes_note


def _checkpoint_inputs(header: dict, workload, phases: np.ndarray, args) -> dict:
    """What a checkpoint's results depend on: the routes file's header (network, traffic,
    router, options, seed), the selected phases, a traffic matrix's content, what is kept, and
    synth's version (parts are pickles of its objects)."""
    inputs = {**header, "phases": {"count": len(phases), "sha256": phases_digest(phases)},
              "routes_kept": args.out is not None, "synth_version": __version__,
              "glpk_options": args.glpk_options,  # not in the routes file's header, and it changes results
              **({"vls": args.vls} if args.vls is not None else {})}  # a budget the paths router may route within
    if workload.pattern.startswith("csv:"):
        inputs["traffic"] = {**inputs["traffic"], "matrix_sha256": file_digest(workload.pattern[len("csv:"):])}
    return inputs


def _router_options(args) -> RouterOptions:
    return RouterOptions(
        constraints=args.constraints,
        balance=args.balance,
        solver=args.solver,
        time_limit=args.time_limit,
        threads=args.threads,
        construction=args.construction,
        glpk_options=tuple(args.glpk_options.split()) if args.glpk_options else None,
        consistency=args.consistency,
        candidates=getattr(args, "candidates", None),
        load_unit=getattr(args, "load_unit", "messages"),
    )


def _phase_record(topology, phase, dropped: dict | None = None) -> dict:
    e = phase.evaluation
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
        # arrays, not lists: the compact writer takes them as they are, the JSON writer lists them
        "flows": np.stack([phase.flows.src, phase.flows.dst, phase.flows.bytes], axis=1).astype(np.int64, copy=False),
        "paths": as_paths(topology, phase.flows.src, phase.flows.dst, phase.choice),
    }


def cmd_bounds(args) -> int:
    if args.lp_time_limit is not None and not args.lp:
        raise SynthError("--lp-time-limit applies to the LP bound: add --lp")
    if args.executor is not None and not args.lp:
        raise SynthError("--executor runs the LP bounds: add --lp (the cut bounds take a moment on this machine)")
    executor = parse_executor(args.executor)  # a bad --executor fails before any work
    topology, workload, phases = _load_workload(args)
    network = topology.network()
    print(f"topology  {topology.label()}: {network.num_terminals} terminals")
    print(f"traffic   {workload.pattern}: {len(phases)} of {counted(workload.num_phases, 'phase')}, {workload.message_bytes} B per message")
    if network.failed_nodes is not None:
        dropped = dict(zip(phases.tolist(), workload.unreachable(phases).tolist()))
        print(f"unreachable {console.unreachable_line(topology, workload, phases, dropped, 'the bounds')}")
    weighs_bytes = args.load_unit == "bytes"
    if weighs_bytes:
        print("load      bytes over bandwidth per channel (every bound in bytes)")
    print()
    per_batch = max(1, FLOWS_PER_BATCH // max(1, workload.num_ranks))
    stage_bounds = []
    for start in range(0, len(phases), per_batch):
        batch = phases[start : start + per_batch]
        idx, src, dst, size = workload.batch(batch)
        if weighs_bytes:
            check_byte_sums(idx, size, batch)
        stage_bounds.append(cut_bounds_batch(topology, idx, src, dst, len(batch), size if weighs_bytes else None))
    bounds, names = np.concatenate(stage_bounds), bound_names(topology)
    lp_note = None
    if args.lp:
        limit = args.lp_time_limit if args.lp_time_limit is not None else LP_TIME_LIMIT
        with executor:
            if args.executor is not None and not args.quiet:
                print(f"  executor: {executor.label()}, {_workers(executor.start())}", file=sys.stderr, flush=True)
            lp_column, lp_note = _lp_bounds(workload, phases, network, args.quiet, limit, weighs_bytes, executor)
        bounds, names = np.hstack([bounds, lp_column]), names + ("lp",)
    evaluations = [
        PhaseEvaluation(int(p), int(b.max(initial=0)), int(b.max(initial=0)), "optimal", -1, b.tolist(), [])
        for p, b in zip(phases, bounds)
    ]
    if args.table or len(phases) <= console.TABLE_PHASES:
        rows = [[e.phase, e.lower_bound, names[int(np.argmax(e.stage_bounds))]] + e.stage_bounds for e in evaluations]
        print(console.table(["phase", "lower bound", "binding"] + list(names), rows, "rrl" + "r" * len(names)))
    else:
        counts = np.bincount(bounds.max(axis=1))
        rows = [[value, int(n)] for value, n in enumerate(counts) if n]
        print(console.table(["lower bound", "phases"], rows))
    what = "per stage" if isinstance(topology, Xgft) else "per cut"
    print(f"lower bound {what}, max over the phases: " + ", ".join(
        f"{name}: {int(v)}" for name, v in zip(names, bounds.max(axis=0))))
    if lp_note is not None:
        print(lp_note)
    if workload.is_all_to_all and isinstance(topology, Xgft) and not weighs_bytes:
        print()
        print("all-to-all bandwidth per layer (003, eq. 2.1): messages per phase a layer-l subtree's up links must carry")
        print(console.bmin_lines(topology))
        ideal = ideal_exchange_time(topology.m, workload.message_bytes)
        print()
        print(f"ideal exchange time (003, sec. 2.5.1; 10 Gb/s, 100 ns links, 50 ns switches, 500 ns adapters, 64 B flits): "
              f"{ideal * 1e6:.2f} us for {workload.message_bytes} B messages")
    return 0


def _lp_bounds(workload, phases: np.ndarray, network, quiet: bool, time_limit: float,
               weighs_bytes: bool = False, executor=None) -> tuple[np.ndarray, str]:
    """The LP bound of every selected phase (synth.cost.lp_bound), one column, and a line saying
    in how many phases it is certainly ceil(lambda*); in bytes with `weighs_bytes`. The phases
    are independent solves: they run on the executor (default: this machine's cores)."""
    from synth.cost.lp_bound import lp_bound

    def bound_task(part: np.ndarray) -> list[tuple[int, int, str]]:
        results = []
        for phase in part.tolist():
            flows = workload.flows(phase)
            result = lp_bound(network, flows.src, flows.dst, time_limit=time_limit,
                              weights=flows.bytes if weighs_bytes else None)
            results.append((phase, result.bound, result.status))
        return results

    values = np.zeros((len(phases), 1), dtype=np.int64)
    short = []
    done = 0
    for results, _ in run_parts(executor or LocalExecutor(), bound_task, phases, 1, True):
        for phase, bound, status in results:
            values[done, 0] = bound
            done += 1
            if status == "gap":
                short.append(phase)
            if not quiet and len(phases) > 1:
                print(f"  LP bound: phase {phase} ({done} of {len(phases)}): {bound}", file=sys.stderr, flush=True)
    if not short:
        return values, "lp: ceil(lambda*) of the multicommodity-flow relaxation, certified in every phase"
    return values, (f"lp: {len(short)} of {len(phases)} phases stopped at --lp-time-limit {time_limit:g} s (first: phase "
                    f"{short[0]}); there the lp column is a valid bound that may be below ceil(lambda*)")


def cmd_check(args) -> int:
    from synth.io.routes_file import read_routes_columnar

    doc = read_routes_columnar(args.routes)  # either form; flows and paths as arrays
    report = check_routes(doc)
    if not report.ok:
        print(f"FAIL: {report.problems[0]}")  # the first difference, named first
        report.problems = report.problems[1:]
        for problem in report.problems[: MAX_LISTED_PROBLEMS - 1]:
            print(f"FAIL: {problem}")
        more = len(report.problems) - (MAX_LISTED_PROBLEMS - 1)
        if more > 0:
            print(f"... and {more} more problems")
        count = len(report.problems) + 1
        print(f"FAILED: {count} problem{'s' if count > 1 else ''} ({counted(report.phases, 'phase')} checked)")
        return 1
    for note in report.note_lines():
        print(f"note: {note}")
    if report.dependencies is not None:
        print(f"channel dependencies: {report.dependencies}")
    unit = " bytes over bandwidth" if doc.get("load_unit") == "bytes" else ""
    print(f"OK: {counted(report.phases, 'phase')}, {counted(report.paths, 'path')} valid and {report.policy}; recorded contention, bounds, "
          f"statuses, stages and summary match (max contention {report.max_contention}{unit})")
    return 0


def cmd_tables(args) -> int:
    from synth.io import qos_policy as qos
    from synth.io import switch_tables as render
    from synth.tables.forwarding import lmc_for
    from synth.tables.from_routes import tables_for_routes
    from synth.io.routes_file import read_routes_columnar, routes_json_text
    from synth.io.routes_hdf5 import is_hdf5

    doc = read_routes_columnar(args.routes)  # either form; flows and paths as arrays
    verified = check_routes(doc)  # tables only for routes that re-verify, before anything is written
    if not verified.ok:
        raise SynthError(f"routes file '{args.routes}' does not pass synth check: {verified.problems[0]}")
    names = {"opensm": ["fabric.net", "guid2lid", "lfts.dump", "routes.json"], "json": ["tables.json"],
             "csv": ["tables.csv"]}[args.format] + ["dlid.csv"]
    laned = bool(doc["phases"]) and "vls" in doc["phases"][0] and args.format == "opensm"
    if laned:
        names += [qos.POLICY_FILE, qos.OPTIONS_FILE]
    with OutputSet() as outputs:
        targets = outputs.reserve_dir(args.out, names)
        tables, flows = tables_for_routes(doc, args.lmc)
        # Everything is rendered before anything is written.
        texts = {"dlid.csv": render.render_dlid_csv(flows.src, flows.dst, tables.dlid, flows.phase)}
        if args.format == "opensm":
            texts |= {"fabric.net": render.render_fabric(tables.network),
                      "guid2lid": render.render_guid2lid(tables.network, tables.lids),
                      "lfts.dump": render.render_lfts(tables),
                      # the routes as JSON: the file itself, or the JSON form of a compact one (the same bytes)
                      "routes.json": routes_json_text(doc) if is_hdf5(args.routes) else
                      read_text(args.routes, "routes file", MAX_FILE_BYTES)}
            if laned:
                lanes = np.concatenate([p["vls"] for p in doc["phases"]]).astype(np.int64)
                pair_lanes = qos.lanes_by_pair(flows.src, flows.dst, lanes)
                texts[qos.POLICY_FILE] = qos.render_policy(tables.network, pair_lanes)
                texts[qos.OPTIONS_FILE] = qos.render_options(int(lanes.max(initial=0)) + 1)
        elif args.format == "json":
            texts["tables.json"] = render.render_json(tables)
        else:
            texts["tables.csv"] = render.render_csv(tables)
        for name, text in texts.items():
            targets[name].write(text)
    lids = tables.lids
    least = "; the least LMC possible" if lmc_for(tables.colours_bound) == lids.lmc else ""
    print(f"{tables.network.num_switches} switches, {tables.network.num_terminals} terminals, LIDs 1..{lids.max_lid}, "
          f"LMC {lids.lmc} ({tables.colours_used} LIDs used per destination at most, at least {tables.colours_bound} needed{least})")
    print(f"wrote {', '.join(sorted(texts))} to {args.out}")
    if laned and int(lanes.max(initial=0)) + 1 > COMMON_DATA_VLS:
        print(f"note: the routes use {int(lanes.max()) + 1} virtual lanes; switches commonly run {COMMON_DATA_VLS} data VLs "
              f"(ibsim's VL0-{COMMON_DATA_VLS - 1}), and OpenSM maps an SL past them onto a VL the port runs, so those "
              f"flows would share lanes: check with synth opensm-check, or route within --vls {COMMON_DATA_VLS}")
    return 0


def cmd_opensm_check(args) -> int:
    from synth.opensm.check import check_file_tables, evaluate_engine, lanes_verdict, load_table_dir, synth_lanes
    from synth.opensm.engines import parse_engines

    engines = parse_engines(args.engines)
    tables = load_table_dir(args.dir)
    file_check = check_file_tables(tables)
    moving = int((tables.flows.src != tables.flows.dst).sum())
    print(f"OpenSM file engine ({file_check.seconds:.1f} s, LMC {tables.lmc}): "
          + ("tables loaded" if file_check.engine == "file" else f"REFUSED, OpenSM fell back to {file_check.engine}")
          + (", LIDs kept" if file_check.lids_kept else ", LIDs CHANGED by OpenSM")
          + f"; {moving - len(file_check.mismatches)} of {moving} flows follow their synthesized paths through the read-back tables")
    for k in file_check.mismatches[:5]:
        print(f"FAIL: flow {k} ({tables.flows.src[k]} -> {tables.flows.dst[k]}, phase {tables.flows.phase[k]}) leaves the synthesized path")
    lanes = file_check.lanes
    if lanes is not None:
        print(lanes_verdict(lanes))
        print("lanes not observed: the SL the subnet administrator hands out per path record (OpenSM runs once, with "
              "no resident SA to query)")
        for k in lanes.mismatches[:5]:
            print(f"FAIL: flow {k} ({tables.flows.src[k]} -> {tables.flows.dst[k]}) gets another lane than recorded")
    phases = tables.doc["phases"]
    bound = {p["phase"]: p["lower_bound"] for p in phases if "lower_bound" in p}
    rows = [(f"synth {tables.doc.get('router', '')}", {p["phase"]: p["max_contention"] for p in phases}, "", 0,
             synth_lanes(tables) if engines else "", None)]
    for engine in engines:
        result = evaluate_engine(tables, engine)
        note = "" if result.configured_by == engine else f"fell back to {result.configured_by}"
        rows.append((f"opensm {engine}", result.max_contention, note, result.unrouted, result.lanes, result.seconds))
    if rows[1:]:
        if tables.doc.get("load_unit") == "bytes":
            print("\ncontention and bounds in bytes over bandwidth (the routes file's load_unit)", end="")
        print(f"\n{'routing':<22} {'max contention':>14} {'phases above bound':>19}  {'lanes':<36} {'seconds':>7}  notes")
        for name, contention, note, unrouted, lanes, seconds in rows:
            above = sum(contention[p] > bound.get(p, 0) for p in contention)
            extra = f"; {unrouted} flows unrouted" if unrouted else ""
            timing = f"{seconds:7.2f}" if seconds is not None else f"{'-':>7}"
            print(f"{name:<22} {max(contention.values(), default=0):>14} {above:>12} of {len(contention):<4}  {lanes:<36} "
                  f"{timing}  {note}{extra}")
        print("lanes: synth's cover the workload's paths (table entries no flow uses hold minimum-hop or d-mod-k fill); "
              "OpenSM's engines route every pair of LIDs")
    return 0 if file_check.ok else 1


DEFAULT_COLLECTIVE_BYTES = "1KiB..64MiB"


def cmd_report(args) -> int:
    import shlex

    from synth.opensm.engines import parse_engines
    from synth.report.data import CostModel, build_report, default_routers, parse_patterns, parse_routers, report_router
    from synth.report.render import render_html, render_markdown
    from synth.collectives.compare import parse_sizes
    from synth.collectives.schedule import collective

    outs = [Path(o) for o in args.out]
    for out in outs:
        if out.suffix.lower() not in (".html", ".htm", ".md"):
            raise SynthError(f"--out must name a .html or .md file, got '{out}'")
    instance, topology, network = _load(args, any_family=True)
    size = args.bytes if args.bytes is not None else instance.traffic.get("bytes", DEFAULT_MESSAGE_BYTES)
    bandwidth = 8.0 / args.beta if args.beta is not None else args.bandwidth * 1e9
    cost = CostModel(args.alpha, bandwidth, size)
    patterns = parse_patterns(args.patterns, network.num_terminals, topology)
    routers = parse_routers(args.routers if args.routers is not None else default_routers(topology), topology)
    engines = parse_engines(args.opensm)
    if engines:
        from synth.opensm.sim import find_tools
        find_tools()  # fail before any routing when OpenSM is missing
    given = []
    for text in args.lfts or []:
        name, equals, directory = text.partition("=")
        if not equals or not name or not directory:
            raise SynthError(f"--lfts takes NAME=DIR, got '{text}'")
        given.append((name, directory))
    seed = args.seed if args.seed is not None else instance.route.get("seed", 0)
    for pattern in patterns:  # size guards before any routing
        workload = parse_pattern(pattern, network.num_terminals, topology.hierarchy(), size, topology=topology)
        for router in routers:
            check_flow_limit(workload, workload.phase_numbers, report_router(router, _router_options(args), topology),
                             topology.routing_kind == DIRECT, args.max_flows)
    collectives = [c.strip() for c in args.collectives.split(",") if c.strip()] if args.collectives else []
    for name in collectives:
        collective(name)  # an unknown name fails before any routing
    if not collectives and (args.collective_bytes is not None or args.collective_router is not None):
        raise SynthError("--collective-bytes and --collective-router apply to the collectives section: add --collectives LIST")
    collective_sizes = parse_sizes(args.collective_bytes or DEFAULT_COLLECTIVE_BYTES)
    collective_router = args.collective_router or topology.default_router
    if collectives:
        make_router(collective_router, topology)  # an unknown or inapplicable router fails before any routing
    command = shlex.join(["synth", *args.argv])
    say = (lambda line: None) if args.quiet else (lambda line: print(f"  {line}", file=sys.stderr, flush=True))
    executor = parse_executor(args.executor)
    with OutputSet() as outputs, executor:
        pages = {out: outputs.reserve(out) for out in outs}  # every target checked before hours of routing
        workers = executor.start()
        if args.executor is not None:
            say(f"executor: {executor.label()}, {_workers(workers)}")
        report = build_report(instance.name, instance.description, instance.source, topology, cost, patterns, routers, engines,
                              _router_options(args), seed, command, say, given, args.timings, collectives,
                              collective_sizes, executor, collective_router)
        files = {}
        for out in outs:
            files |= render_markdown(report, out) if out.suffix.lower() == ".md" else {out: render_html(report)}
        for path, content in files.items():  # everything rendered before anything is written
            (pages.get(path) or outputs.reserve(path)).write(content)
    for result in report.patterns:
        print(f"{result.label}: " + ", ".join(
            f"{s.routing} {int(s.max_contention.max(initial=0))} ({result.above_bound(s)} above bound)" for s in result.series)
            + f"; lower bound {int(result.lower_bound.max(initial=0))}")
    print(f"wrote {', '.join(str(p) for p in files)}")
    return 0


# ----- parser ---------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="synth", description="Contention-optimal routing synthesis for interconnection networks.",
                     epilog="Exit codes: 0 ok, 1 a check found a difference, 2 bad input, 70 internal error (a bug), "
                            "130/143 interrupted.")
    parser.add_argument("--debug", action="store_true", help="print the traceback of an internal error")
    parser.add_argument("--version", action="version", version=f"synth {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def add_spec(p):
        p.add_argument("spec", metavar="SPEC", help="network spec such as xgft:3:8,4,2:1,8,2, or an instance .toml file")
        p.add_argument("--fail", metavar="ITEMS", help="a degraded network: failed links A-B, switches A, or random:K:SEED "
                       "(K random router links), joined by + (the spec then reads SPEC@fail=ITEMS; docs/formats.md)")

    def add_max_flows(p):
        p.add_argument("--max-flows", type=_integer("--max-flows", 1), metavar="N",
                       help=f"refuse runs with more flows (default {MAX_FLOWS_KEPT:,} when routes are synthesized or "
                            f"written, {MAX_FLOWS_ANALYSIS:,} for load analysis)")

    def add_executor(p):
        p.add_argument("--executor", metavar="WHERE", help=f"where the phases run: {EXECUTOR_SYNTAX}")

    def add_workload(p):
        """The options that select a workload (also for `synth model demand`, via _load_workload)."""
        p.add_argument("--traffic", metavar="PATTERN", help=pattern_syntaxes())
        p.add_argument("--phase", metavar="SEL", help="all (default), P, P1,P2,... or A-B")
        p.add_argument("--placement", metavar="HOW", help="which terminal runs each task: contiguous (default, task i on "
                       "terminal i), random:SEED, or cartesian:G1xG2x... (a stencil's blocks of tasks per group)")
        add_max_flows(p)
        p.set_defaults(bytes=None, load_workload=_load_workload)

    def add_traffic(p):
        add_workload(p)
        p.add_argument("--bytes", type=_integer("--bytes", 0, MAX_MESSAGE_BYTES),
                       help=f"message size in bytes (default {DEFAULT_MESSAGE_BYTES})")
        p.add_argument("--table", action="store_true", help=f"a row per phase even beyond {console.TABLE_PHASES} phases")

    p = sub.add_parser("topology", help="summarize a network or write it as JSON", epilog=family_list(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_spec(p)
    p.add_argument("--format", choices=["text", "json"], default="text",
                   help="text (default): the family's facts; json: nodes, ports and channels (docs/formats.md)")
    p.add_argument("--out", metavar="FILE", help="write the JSON (with --format json) here instead of stdout")
    p.set_defaults(func=cmd_topology)

    p = sub.add_parser("route", help="route a workload and report contention against the lower bound")
    add_spec(p)
    add_traffic(p)
    p.add_argument("--router", metavar="NAME", help=f"xgft: {', '.join(ROUTERS.names(XGFT))}; other families: "
                   f"{', '.join(ROUTERS.names(DIRECT))} (docs/routers.md)")
    p.add_argument("--seed", type=_integer("--seed"), help="seed of the random routers (default 0)")
    layered = p.add_argument_group("layered router (003, ch.3)")
    layered.add_argument("--constraints", default="strong", metavar="KIND",
                         help="strong (eq. 3.6, 3.8; default), relaxed (3.11, 3.12), strong+eliminated, relaxed+eliminated")
    layered.add_argument("--balance", action=argparse.BooleanOptionalAction, default=False,
                         help="also require floor(c/W) messages per link (eq. 3.9, 3.10)")
    layered.add_argument("--construction", default="halving", metavar="HOW",
                         help="halving (split links by prime factors, default) or ilp (one model per WT node)")
    layered.add_argument("--solver", default="cpsat", metavar="NAME", help="cpsat (default), cbc, highs, glpk")
    layered.add_argument("--time-limit", type=_positive("--time-limit", MAX_TIME_LIMIT), metavar="S",
                         help="per solver call: CP-SAT's deterministic time (reproducible), wall seconds for the others")
    layered.add_argument("--threads", type=_integer("--threads", 1, MAX_THREADS), default=1, metavar="T",
                         help="solver threads per call (CP-SAT: interleaved, deterministic)")
    layered.add_argument("--consistency", default="flow", metavar="KIND",
                         help="flow (a route per message, default) or destination (all flows to a destination agree at "
                              "every switch over all phases: tables without LMC)")
    layered.add_argument("--glpk-options", metavar="OPTS", help="glpsol options (default: --intopt --binarize --fpump)")
    selection = p.add_argument_group("path-selection router (--router paths; also --solver, --time-limit as the solver "
                                     "budget per phase, --threads, --glpk-options)")
    selection.add_argument("--candidates", metavar="SET",
                           help="minimal (every minimal path), valiant (through one intermediate router), all (both; "
                                "default); docs/formats.md")
    add_load_unit(p, "--router paths minimizes it")
    p.add_argument("--out", metavar="FILE", help="write the routes file (synth-routes/2, docs/formats.md): JSON, or the "
                   "compact HDF5 form for a FILE ending in .h5 or .hdf5 (synth check and synth tables read both)")
    p.add_argument("--loads", metavar="FILE.csv", help="write per-channel loads (messages, bytes) over the phases")
    p.add_argument("--vls", type=_integer("--vls", 1, MAX_VLS), metavar="N",
                   help="also give every path a virtual lane so that no lane can deadlock, with at most N lanes (as synth "
                        "vls; recorded in the routes file); --router paths re-chooses paths to fit N when the routes need "
                        "more, and prints what that costs in contention (common switches run 8 data VLs)")
    add_executor(p)
    p.add_argument("--checkpoint", metavar="DIR", help="keep finished phases in DIR as they arrive; the same command with "
                   "the same DIR skips them and goes on (after a kill, a lost worker or a reboot); docs/formats.md")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_route)

    p = sub.add_parser("bounds", help="lower bounds on contention for a workload, B_min and ideal time for all-to-all")
    add_spec(p)
    add_traffic(p)
    p.add_argument("--lp", action="store_true", help="also the LP bound of every phase (minimum-congestion multicommodity "
                   "flow, HiGHS; any network): slower, at least as strong as the cut bounds on router links")
    p.add_argument("--lp-time-limit", type=_positive("--lp-time-limit", MAX_TIME_LIMIT), metavar="S",
                   help=f"seconds per phase for the LP bound (default {LP_TIME_LIMIT:g}); a phase stopped there keeps a valid, "
                   "possibly weaker bound, and the output says so")
    add_load_unit(p, "bounds on it")
    add_executor(p)
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_bounds)

    p = sub.add_parser("tables", help="switch forwarding tables for a routes file (OpenSM, JSON, CSV)")
    p.add_argument("routes", metavar="ROUTES.json", help="a routes file (synth route --out) that passes synth check")
    p.add_argument("--format", choices=["opensm", "json", "csv"], default="opensm",
                   help="opensm (default): fabric.net, guid2lid, lfts.dump for OpenSM's file engine, dlid.csv and the "
                        "routes; json, csv: the per-switch tables for other fabrics (docs/formats.md)")
    p.add_argument("--out", metavar="DIR", required=True, help="directory for the files")
    p.add_argument("--lmc", type=_integer("--lmc", 0, MAX_LMC),
                   help="LIDs per terminal = 2^LMC, 0..7 (default: the fewest that hold the routes)")
    p.set_defaults(func=cmd_tables)

    p = sub.add_parser("opensm-check", help="load tables into OpenSM on a simulated fabric, verify, compare OpenSM's engines")
    p.add_argument("dir", metavar="DIR", help="a directory written by `synth tables --format opensm`")
    p.add_argument("--engines", default="all", metavar="LIST", help="OpenSM engines to compare: all (default), none, or e.g. minhop,updn")
    p.set_defaults(func=cmd_opensm_check)

    model_command.add_parser(sub, add_spec, add_workload)
    vls_command.add_parser(sub)
    schedule_command.add_parsers(sub)
    compare_command.add_parser(sub)

    p = sub.add_parser("report", help="analytical cost report (HTML or Markdown): patterns x routings on any network")
    add_spec(p)
    p.add_argument("--out", metavar="FILE", required=True, action="append",
                   help="NAME.html (figures inline) or NAME.md (figures as PNG files beside it); may be repeated")
    p.add_argument("--patterns", default="all", metavar="LIST", help="xgft: all (default: lin,xor,opt,ghe,bgh) or e.g. "
                   "opt,lin; other families: all (default: a2a-lin, a random permutation, the family's adversarial "
                   "pattern; dragonflies also a2a-lat) or any traffic patterns, comma-separated")
    p.add_argument("--routers", metavar="LIST",
                   help="synth's routings to compare (default: xgft dmodk,smodk,random,layered; other families minimal,"
                        "valiant,ugal,paths and layered on dragonflies)")
    p.add_argument("--opensm", default="none", metavar="ENGINES",
                   help="also OpenSM's engines, run on ibsim: none (default), all, or e.g. minhop,updn,ftree,dfsssp")
    p.add_argument("--lfts", action="append", metavar="NAME=DIR",
                   help="also tables computed elsewhere for this network's fabric (DIR with guid2lid and lfts.dump or "
                        "opensm-lfts.dump, e.g. from `synth tables` or OpenSM's --dump_files_dir); may be repeated")
    p.add_argument("--bytes", type=_integer("--bytes", 0, MAX_MESSAGE_BYTES),
                   help=f"message size in bytes (default: the instance's, else {DEFAULT_MESSAGE_BYTES})")
    p.add_argument("--alpha", type=_positive("--alpha"), default=1e-6, metavar="S", help="start-up latency per phase in seconds (default 1e-6)")
    cost = p.add_mutually_exclusive_group()
    cost.add_argument("--bandwidth", type=_positive("--bandwidth"), default=100.0, metavar="GBPS", help="link bandwidth in Gb/s (default 100)")
    cost.add_argument("--beta", type=_positive("--beta"), metavar="S", help="seconds per byte (instead of --bandwidth)")
    p.add_argument("--seed", type=_integer("--seed"), help="seed of the random router (default: the instance's, else 0)")
    p.add_argument("--solver", default="cpsat", metavar="NAME", help="solver of the synthesizing routers (default cpsat)")
    p.add_argument("--time-limit", type=_positive("--time-limit", MAX_TIME_LIMIT), metavar="S",
                   help="per solver call of the xgft layered router, per phase for paths and the dragonfly layered "
                        "router (CP-SAT: deterministic time)")
    p.add_argument("--timings", action="store_true", help="add each routing's run time to the tables (reruns then differ)")
    p.add_argument("--collectives", metavar="LIST", help="also a section per collective (e.g. allreduce,alltoall): every "
                   "algorithm of synth compare, priced over message sizes")
    p.add_argument("--collective-bytes", metavar="RANGE",
                   help=f"the message sizes of the collectives section (default {DEFAULT_COLLECTIVE_BYTES}, powers of two)")
    p.add_argument("--collective-router", metavar="NAME", help="the routes the collectives' transfers take (default: the "
                   "family's, dmodk on fat trees, minimal on direct networks)")
    add_max_flows(p)
    add_executor(p)
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_report, constraints="strong", balance=False, threads=1, construction="halving",
                   glpk_options=None, consistency="flow")

    p = sub.add_parser("check", help="re-verify a routes file from scratch (exit 1 on a difference)")
    p.add_argument("routes", metavar="ROUTES.json", help="a routes file (synth route --out): its paths, contention, "
                   "bounds, statuses and summary are recomputed from the network and the traffic")
    p.set_defaults(func=cmd_check)
    return parser


def _say(text: str) -> None:
    """One line on stderr, whatever the message holds."""
    print("synth: " + " ".join(str(text).split()), file=sys.stderr, flush=True)


def _notes(exc: BaseException) -> str:
    """What the run adds to a failure it cannot undo (a checkpoint that resumes it)."""
    return "".join(f"; {note}" for note in getattr(exc, "__notes__", ()))


def main(argv: list[str] | None = None) -> int:
    """Exit codes: 0 ok, 1 a check found a difference, 2 bad input (one line), 70 internal error
    (one line; the traceback with --debug), 128 + signal number when interrupted (130, 143)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv  # known before parsing, so that errors in parsing honour it too
    previous, previous_int = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    install_handlers()
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
            raise SynthError(f"synth needs a command: {', '.join(commands)} (synth COMMAND --help for one, synth --help "
                             "for all)")
        args.argv = [a for a in argv if a != "--debug"]
        return args.func(args)
    except SynthError as exc:
        _say(f"error: {exc}{_notes(exc)}")
        return 2
    except KeyboardInterrupt as exc:
        _say(f"interrupted (SIGINT); no output written{_notes(exc)}")
        return 130
    except Interrupted as exc:
        _say(f"interrupted ({exc}); no output written{_notes(exc)}")
        return exc.exit_code
    except TaskFailed as exc:
        _say(f"error: {exc}; no output written{_notes(exc)}")
        return 70
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away (synth ... | head): not an error
        return 0
    except Exception as exc:  # noqa: BLE001 - the last line of defence: a bug, said as one
        if interrupt.received is not None:  # a signal turned into another error on its way up
            _say(f"interrupted ({signal.Signals(interrupt.received).name}); no output written")
            return 128 + interrupt.received
        if debug:
            traceback.print_exc()
        _say(f"internal error (a bug in synth; please report it with the command): {type(exc).__name__}: {exc}"
             + ("" if debug else " (rerun with --debug for the traceback)"))
        return 70
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)


if __name__ == "__main__":
    sys.exit(main())
