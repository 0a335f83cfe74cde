"""Command-line interface: argument parsing and dispatch only."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from synth.cost.bounds import stage_lower_bounds_batch
from synth.cost.evaluate import PhaseEvaluation
from synth.cost.fattree import ideal_exchange_time
from synth.core.errors import SynthError
from synth.core.output import atomic_open
from synth.instance import Instance, resolve
from synth.render import console
from synth.render.routes_file import RoutesWriter, read_routes
from synth.topology import parse_topology
from synth.traffic.patterns import DEFAULT_MESSAGE_BYTES, parse_pattern
from synth.verify.routes import MAX_LISTED_PROBLEMS, check_routes
from synth.render.loads_csv import write_loads_csv
from synth.route.layered import LayeredOptions
from synth.workflow import FLOWS_PER_BATCH, Progress, exchange_loads, parse_phase_selection, route_phases, router_function


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit code 2
        raise SynthError(f"{self.prog}: {message}")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got '{text}'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got '{text}'")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'")
    return value


def _load(args) -> tuple[Instance, object, object]:
    instance = resolve(args.spec)
    xgft = parse_topology(instance.spec)
    return instance, xgft, xgft.network()


def _workload(args, instance: Instance, xgft, network):
    pattern = args.traffic or instance.traffic.get("pattern")
    if not pattern:
        raise SynthError("no traffic given: use --traffic PATTERN (or a [traffic] pattern in the instance file)")
    size = args.bytes if args.bytes is not None else int(instance.traffic.get("bytes", DEFAULT_MESSAGE_BYTES))
    workload = parse_pattern(pattern, network.num_terminals, xgft.hierarchy(), size)
    selection = args.phase or str(instance.traffic.get("phases", "all"))
    return workload, parse_phase_selection(selection, workload.num_phases)


def _print_phases(evaluations: list[PhaseEvaluation], network, full_table: bool) -> dict:
    if full_table or len(evaluations) <= console.TABLE_PHASES:
        print(console.phase_rows(evaluations, network))
    else:
        print(console.distribution_lines(evaluations))
    totals = console.summary(evaluations)
    print(console.summary_line(totals))
    return totals


# ----- commands ---------------------------------------------------------------------------------

def cmd_topology(args) -> int:
    _, xgft, network = _load(args)
    if args.format == "json":
        text = json.dumps(network.to_json_dict(), separators=(",", ":"))
        if args.out:
            with atomic_open(args.out) as handle:
                handle.write(text + "\n")
        else:
            print(text)
    else:
        print(console.topology_summary(xgft, network))
    return 0


def cmd_route(args) -> int:
    instance, xgft, network = _load(args)
    workload, phases = _workload(args, instance, xgft, network)
    router = args.router or instance.route.get("router")
    if not router:
        raise SynthError("no router given: use --router NAME (or a [route] router in the instance file)")
    seed = args.seed if args.seed is not None else int(instance.route.get("seed", 0))
    route = router_function(router, _layered_options(args))
    print(f"topology  {xgft.label()}: {network.num_terminals} terminals, {network.num_switches} switches")
    print(f"traffic   {workload.pattern}: {len(phases)} of {workload.num_phases} phases, {workload.message_bytes} B per message")
    print(f"router    {_router_label(router, args, seed)}")
    progress = Progress(len(phases), enabled=not args.quiet)
    routed = route_phases(xgft, network, workload, phases, route, seed, progress, keep_routes=bool(args.out))
    header = {
        "topology": {"spec": xgft.spec},
        "traffic": workload.describe(),
        "router": router,
        "seed": seed,
    }
    if router in ("layered", "monolithic"):
        header["synthesis"] = _layered_options(args).describe()
    evaluations = []
    if args.out:
        with atomic_open(args.out) as handle:
            writer = RoutesWriter(handle, header)
            for phase in routed:
                evaluations.append(phase.evaluation)
                writer.add_phase(_phase_record(xgft, phase))
            totals = console.summary(evaluations)
            writer.close(totals)
    else:
        evaluations = [phase.evaluation for phase in routed]
    print()
    _print_phases(evaluations, network, args.table)
    print()
    print(console.stage_lines(evaluations, network))
    if args.out:
        print(f"wrote {args.out}")
    if args.loads:
        loads = exchange_loads(xgft, workload, phases, route, seed, with_bytes=True)
        with atomic_open(args.loads) as handle:
            write_loads_csv(handle, network, loads)
        print(f"wrote {args.loads}")
    return 0


def _layered_options(args) -> LayeredOptions:
    return LayeredOptions(
        constraints=args.constraints,
        balance=args.balance,
        solver=args.solver,
        time_limit=args.time_limit,
        threads=args.threads,
        construction=args.construction,
        glpk_options=tuple(args.glpk_options.split()) if args.glpk_options else None,
        consistency=args.consistency,
    )


def _router_label(router: str, args, seed: int) -> str:
    if router == "monolithic":
        o = _layered_options(args)
        limit = f", time limit {o.time_limit:g} s" if o.time_limit else ""
        return f"monolithic (one model per phase, solver {o.solver}{limit})"
    if router == "layered":
        o = _layered_options(args)
        limit = f", time limit {o.time_limit:g} s per solve" if o.time_limit else ""
        return (f"layered ({o.construction}, {o.constraints} conditions{', balanced' if o.balance else ''}, "
                f"solver {o.solver}{limit})")
    return f"{router} (seed {seed})"


def _phase_record(xgft, phase) -> dict:
    e = phase.evaluation
    return {
        "phase": e.phase,
        "max_contention": e.max_contention,
        "lower_bound": e.lower_bound,
        "gap": e.gap,
        "status": e.status,
        "stage_max": e.stage_max,
        "stage_bounds": e.stage_bounds,
        **({"solver": phase.report.as_dict()} if phase.report is not None else {}),
        **({"proven_by": phase.report.proven_by} if phase.report is not None and phase.report.proven_by else {}),
        "flows": phase.flows.rows(),
        "paths": xgft.path_nodes(phase.flows.src, phase.flows.dst, phase.choice),
    }


def cmd_bounds(args) -> int:
    instance, xgft, network = _load(args)
    workload, phases = _workload(args, instance, xgft, network)
    print(f"topology  {xgft.label()}: {network.num_terminals} terminals")
    print(f"traffic   {workload.pattern}: {len(phases)} of {workload.num_phases} phases, {workload.message_bytes} B per message")
    print()
    per_batch = max(1, FLOWS_PER_BATCH // max(1, workload.num_ranks))
    stage_bounds = []
    for start in range(0, len(phases), per_batch):
        batch = phases[start : start + per_batch]
        idx, src, dst, _ = workload.batch(batch)
        stage_bounds.append(stage_lower_bounds_batch(xgft, idx, src, dst, len(batch)))
    bounds = np.concatenate(stage_bounds)
    evaluations = [
        PhaseEvaluation(int(p), int(b.max(initial=0)), int(b.max(initial=0)), "optimal", -1, b.tolist(), [])
        for p, b in zip(phases, bounds)
    ]
    if args.table or len(phases) <= console.TABLE_PHASES:
        rows = [[e.phase, e.lower_bound] + e.stage_bounds for e in evaluations]
        print(console.table(["phase", "lower bound"] + [f"stage {k}" for k in range(1, xgft.height + 1)], rows))
    else:
        counts = np.bincount(bounds.max(axis=1))
        rows = [[value, int(n)] for value, n in enumerate(counts) if n]
        print(console.table(["lower bound", "phases"], rows))
    print("lower bound per stage, max over the phases: " + ", ".join(
        f"stage {k}: {int(v)}" for k, v in enumerate(bounds.max(axis=0), start=1)))
    if workload.is_all_to_all:
        print()
        print("all-to-all bandwidth per layer (003, eq. 2.1): messages per phase a layer-l subtree's up links must carry")
        print(console.bmin_lines(xgft))
        ideal = ideal_exchange_time(xgft.m, workload.message_bytes)
        print()
        print(f"ideal exchange time (003, sec. 2.5.1; 10 Gb/s, 100 ns links, 50 ns switches, 500 ns adapters, 64 B flits): "
              f"{ideal * 1e6:.2f} us for {workload.message_bytes} B messages")
    return 0


def cmd_check(args) -> int:
    doc = read_routes(args.routes)
    report = check_routes(doc)
    for note in report.notes:
        print(f"note: {note}")
    if report.ok:
        print(f"OK: {report.phases} phases, {report.paths} paths valid, minimal up*/down*; "
              f"recorded contention and bounds match (max contention {report.max_contention})")
        return 0
    for problem in report.problems[:MAX_LISTED_PROBLEMS]:
        print(f"FAIL: {problem}")
    if len(report.problems) > MAX_LISTED_PROBLEMS:
        print(f"... and {len(report.problems) - MAX_LISTED_PROBLEMS} more problems")
    print(f"FAILED: {len(report.problems)} problems in {report.phases} phases")
    return 1


def cmd_tables(args) -> int:
    from synth.render import switch_tables as render
    from synth.tables.forwarding import lmc_for
    from synth.tables.from_routes import tables_for_routes

    doc = read_routes(args.routes)
    tables, flows = tables_for_routes(doc, args.lmc)
    # Everything is rendered before anything is written.
    texts = {"dlid.csv": render.render_dlid_csv(flows.src, flows.dst, tables.dlid, flows.phase)}
    if args.format == "opensm":
        texts |= {"fabric.net": render.render_fabric(tables.network),
                  "guid2lid": render.render_guid2lid(tables.network, tables.lids),
                  "lfts.dump": render.render_lfts(tables),
                  "routes.json": Path(args.routes).read_text()}
    elif args.format == "json":
        texts["tables.json"] = render.render_json(tables)
    else:
        texts["tables.csv"] = render.render_csv(tables)
    for name, text in texts.items():
        with atomic_open(Path(args.out) / name) as handle:
            handle.write(text)
    lids = tables.lids
    least = "; the least LMC possible" if lmc_for(tables.colours_bound) == lids.lmc else ""
    print(f"{tables.network.num_switches} switches, {tables.network.num_terminals} terminals, LIDs 1..{lids.max_lid}, "
          f"LMC {lids.lmc} ({tables.colours_used} LIDs used per destination at most, at least {tables.colours_bound} needed{least})")
    print(f"wrote {', '.join(sorted(texts))} to {args.out}")
    return 0


def cmd_opensm_check(args) -> int:
    from synth.opensm.check import check_file_tables, evaluate_engine, load_table_dir
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
    phases = tables.doc["phases"]
    bound = {p["phase"]: p["lower_bound"] for p in phases if "lower_bound" in p}
    rows = [(tables.doc.get("router", "synth"), {p["phase"]: p["max_contention"] for p in phases}, "", 0)]
    for engine in engines:
        result = evaluate_engine(tables, engine)
        note = "" if result.configured_by == engine else f"fell back to {result.configured_by}"
        rows.append((f"opensm {engine}", result.max_contention, note, result.unrouted))
    if rows[1:]:
        print(f"\n{'routing':<22} {'max contention':>14} {'phases above bound':>19}  notes")
        for name, contention, note, unrouted in rows:
            above = sum(contention[p] > bound.get(p, 0) for p in contention)
            extra = f"; {unrouted} flows unrouted" if unrouted else ""
            print(f"{name:<22} {max(contention.values(), default=0):>14} {above:>12} of {len(contention):<4}  {note}{extra}")
    return 0 if file_check.ok else 1


def cmd_report(args) -> int:
    import shlex

    from synth.opensm.engines import parse_engines
    from synth.report.data import CostModel, build_report, parse_patterns, parse_routers
    from synth.report.render import render_html, render_markdown

    outs = [Path(o) for o in args.out]
    for out in outs:
        if out.suffix.lower() not in (".html", ".htm", ".md"):
            raise SynthError(f"--out must name a .html or .md file, got '{out}'")
    instance, xgft, network = _load(args)
    size = args.bytes if args.bytes is not None else int(instance.traffic.get("bytes", DEFAULT_MESSAGE_BYTES))
    bandwidth = 8.0 / args.beta if args.beta is not None else args.bandwidth * 1e9
    cost = CostModel(args.alpha, bandwidth, size)
    patterns = parse_patterns(args.patterns, network.num_terminals)
    routers = parse_routers(args.routers)
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
    seed = args.seed if args.seed is not None else int(instance.route.get("seed", 0))
    command = shlex.join(["synth", *args.argv])
    say = (lambda line: None) if args.quiet else (lambda line: print(f"  {line}", file=sys.stderr, flush=True))
    report = build_report(instance.name, instance.description, instance.source, xgft, cost, patterns, routers, engines,
                          _layered_options(args), seed, command, say, given)
    files = {}
    for out in outs:
        files |= render_markdown(report, out) if out.suffix.lower() == ".md" else {out: render_html(report)}
    for path, content in files.items():  # everything rendered before anything is written
        with atomic_open(path, "wb" if isinstance(content, bytes) else "w") as handle:
            handle.write(content)
    for result in report.patterns:
        print(f"{result.label}: " + ", ".join(
            f"{s.routing} {int(s.max_contention.max(initial=0))} ({result.above_bound(s)} above bound)" for s in result.series)
            + f"; lower bound {int(result.lower_bound.max(initial=0))}")
    print(f"wrote {', '.join(str(p) for p in files)}")
    return 0


# ----- parser ---------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="synth", description="Contention-optimal routing synthesis for interconnection networks.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def add_spec(p):
        p.add_argument("spec", metavar="SPEC", help="network spec such as xgft:3:8,4,2:1,8,2, or an instance .toml file")

    def add_traffic(p):
        p.add_argument("--traffic", metavar="PATTERN", help="a2a-lin[:SHIFT], a2a-xor, a2a-opt, a2a-ghe, a2a-bgh, "
                       "shift:K, bitcomp, bitrev, randperm:SEED, uniform:SEED, csv:PATH")
        p.add_argument("--phase", metavar="SEL", help="all (default), P, P1,P2,... or A-B")
        p.add_argument("--bytes", type=_positive_int, help=f"message size in bytes (default {DEFAULT_MESSAGE_BYTES})")
        p.add_argument("--table", action="store_true", help=f"a row per phase even beyond {console.TABLE_PHASES} phases")

    p = sub.add_parser("topology", help="summarize a network or write it as JSON")
    add_spec(p)
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("--out", metavar="FILE", help="write the JSON here instead of stdout")
    p.set_defaults(func=cmd_topology)

    p = sub.add_parser("route", help="route a workload and report contention against the lower bound")
    add_spec(p)
    add_traffic(p)
    p.add_argument("--router", metavar="NAME", help="dmodk, smodk, random, random-msg, layered, monolithic")
    p.add_argument("--seed", type=_positive_int, help="seed of the random routers (default 0)")
    layered = p.add_argument_group("layered router (003, ch.3)")
    layered.add_argument("--constraints", default="strong", metavar="KIND",
                         help="strong (eq. 3.6, 3.8; default), relaxed (3.11, 3.12), strong+eliminated, relaxed+eliminated")
    layered.add_argument("--balance", action=argparse.BooleanOptionalAction, default=False,
                         help="also require floor(c/W) messages per link (eq. 3.9, 3.10)")
    layered.add_argument("--construction", default="halving", metavar="HOW",
                         help="halving (split links by prime factors, default) or ilp (one model per WT node)")
    layered.add_argument("--solver", default="cpsat", metavar="NAME", help="cpsat (default), cbc, highs, glpk")
    layered.add_argument("--time-limit", type=_positive_float, metavar="S", help="seconds per solver call")
    layered.add_argument("--threads", type=_positive_int, default=1, metavar="T", help="solver threads per call")
    layered.add_argument("--consistency", default="flow", metavar="KIND",
                         help="flow (a route per message, default) or destination (all flows to a destination agree at "
                              "every switch over all phases: tables without LMC)")
    layered.add_argument("--glpk-options", metavar="OPTS", help="glpsol options (default: --intopt --binarize --fpump)")
    p.add_argument("--out", metavar="FILE", help="write the routes file (synth-routes/1 JSON)")
    p.add_argument("--loads", metavar="FILE.csv", help="write per-channel loads (messages, bytes) over the phases")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_route)

    p = sub.add_parser("bounds", help="lower bounds on contention for a workload, B_min and ideal time for all-to-all")
    add_spec(p)
    add_traffic(p)
    p.set_defaults(func=cmd_bounds)

    p = sub.add_parser("tables", help="switch forwarding tables for a routes file (OpenSM, JSON, CSV)")
    p.add_argument("routes", metavar="ROUTES.json")
    p.add_argument("--format", choices=["opensm", "json", "csv"], default="opensm")
    p.add_argument("--out", metavar="DIR", required=True, help="directory for the files")
    p.add_argument("--lmc", type=_positive_int, help="LIDs per terminal = 2^LMC (default: the fewest that hold the routes)")
    p.set_defaults(func=cmd_tables)

    p = sub.add_parser("opensm-check", help="load tables into OpenSM on a simulated fabric, verify, compare OpenSM's engines")
    p.add_argument("dir", metavar="DIR", help="a directory written by `synth tables --format opensm`")
    p.add_argument("--engines", default="all", metavar="LIST", help="OpenSM engines to compare: all (default), none, or e.g. minhop,updn")
    p.set_defaults(func=cmd_opensm_check)

    p = sub.add_parser("report", help="analytical cost report (HTML or Markdown) of the all-to-all exchanges on an XGFT")
    add_spec(p)
    p.add_argument("--out", metavar="FILE", required=True, action="append",
                   help="NAME.html (figures inline) or NAME.md (figures as PNG files beside it); may be repeated")
    p.add_argument("--patterns", default="all", metavar="LIST", help="all (default: lin,xor,opt,ghe,bgh) or e.g. opt,lin")
    p.add_argument("--routers", default="dmodk,smodk,random,layered", metavar="LIST",
                   help="synth's routings to compare (default dmodk,smodk,random,layered)")
    p.add_argument("--opensm", default="none", metavar="ENGINES",
                   help="also OpenSM's engines, run on ibsim: none (default), all, or e.g. minhop,updn,ftree,dfsssp")
    p.add_argument("--lfts", action="append", metavar="NAME=DIR",
                   help="also tables computed elsewhere for this network's fabric (DIR with guid2lid and lfts.dump or "
                        "opensm-lfts.dump, e.g. from `synth tables` or OpenSM's --dump_files_dir); may be repeated")
    p.add_argument("--bytes", type=_positive_int, help=f"message size in bytes (default: the instance's, else {DEFAULT_MESSAGE_BYTES})")
    p.add_argument("--alpha", type=_positive_float, default=1e-6, metavar="S", help="start-up latency per phase in seconds (default 1e-6)")
    cost = p.add_mutually_exclusive_group()
    cost.add_argument("--bandwidth", type=_positive_float, default=100.0, metavar="GBPS", help="link bandwidth in Gb/s (default 100)")
    cost.add_argument("--beta", type=_positive_float, metavar="S", help="seconds per byte (instead of --bandwidth)")
    p.add_argument("--seed", type=_positive_int, help="seed of the random router (default: the instance's, else 0)")
    p.add_argument("--solver", default="cpsat", metavar="NAME", help="solver of the layered router (default cpsat)")
    p.add_argument("--time-limit", type=_positive_float, metavar="S", help="seconds per solver call of the layered router")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_report, constraints="strong", balance=False, threads=1, construction="halving",
                   glpk_options=None, consistency="flow")

    p = sub.add_parser("check", help="re-verify a routes file from scratch")
    p.add_argument("routes", metavar="ROUTES.json")
    p.set_defaults(func=cmd_check)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        args = build_parser().parse_args(argv)
        args.argv = argv
        return args.func(args)
    except SynthError as exc:
        print(f"synth: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
