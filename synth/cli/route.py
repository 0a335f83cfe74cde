"""`synth route SPEC --traffic PATTERN --router NAME [--out ROUTES.json] ...` (synth.app.route)."""

from __future__ import annotations

import argparse
import sys

from synth.cli import options as o
from synth.cli.listings import router_names
from synth.core.declared import constant
from synth.core.errors import SynthError
from synth.core.output import OutputSet
from synth.core.text import counted
from synth.execute import parse_executor


def add_parser(sub) -> None:
    p = sub.add_parser("route", help="route a workload and report contention against the lower bound")
    o.add_spec(p)
    o.add_traffic(p)
    xgft, direct = (constant("synth.routing.registry", kind) for kind in ("XGFT", "DIRECT"))
    p.add_argument("--router", metavar="NAME", help=f"xgft: {', '.join(router_names(xgft))}; other families: "
                   f"{', '.join(router_names(direct))} (docs/routers.md; default: the instance's, else the family's: "
                   "dmodk on fat trees, minimal on direct networks)")
    p.add_argument("--seed", type=o.integer("--seed"), help="seed of the random routers (default 0)")
    layered = p.add_argument_group("layered router (Prisacari20, ch.3)")
    layered.add_argument("--constraints", default="strong", metavar="KIND",
                         help="strong (eq. 3.6, 3.8; default), relaxed (3.11, 3.12), strong+eliminated, relaxed+eliminated")
    layered.add_argument("--balance", action=argparse.BooleanOptionalAction, default=False,
                         help="also require floor(c/W) messages per link (eq. 3.9, 3.10)")
    layered.add_argument("--construction", default="halving", metavar="HOW",
                         help="halving (split links by prime factors, default) or ilp (one model per WT node)")
    layered.add_argument("--solver", default="cpsat", metavar="NAME", help="cpsat (default), cbc, highs, glpk")
    layered.add_argument("--time-limit", type=o.positive("--time-limit", o.MAX_TIME_LIMIT), metavar="S",
                         help="per solver call: CP-SAT's deterministic time (reproducible), wall seconds for the others")
    layered.add_argument("--threads", type=o.integer("--threads", 1, o.MAX_THREADS), default=1, metavar="T",
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
    o.add_load_unit(p, "--router paths minimizes it")
    p.add_argument("--out", metavar="FILE", help="write the routes file (synth-routes/2, docs/formats.md): JSON, or the "
                   "compact HDF5 form for a FILE ending in .h5 or .hdf5 (synth check and synth tables read both)")
    p.add_argument("--loads", metavar="FILE.csv", help="write per-channel loads (messages, bytes) over the phases")
    p.add_argument("--vls", type=o.integer("--vls", 1, constant("synth.io.routes_file", "MAX_VLS")), metavar="N",
                   help="also give every path a virtual lane so that no lane can deadlock, with at most N lanes (as synth "
                        "vls; recorded in the routes file); --router paths re-chooses paths to fit N when the routes need "
                        "more, and prints what that costs in contention (common switches run 8 data VLs)")
    o.add_executor(p)
    p.add_argument("--checkpoint", metavar="DIR", help="keep finished phases in DIR as they arrive; the same command with "
                   "the same DIR skips them and goes on (after a kill, a lost worker or a reboot); docs/formats.md")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_route)


def cmd_route(args) -> int:
    instance, topology, network = o.load(args)
    from synth.app.route import checkpoint_inputs, plan_route, refuse_checkpoint_overlap, run_route
    from synth.io.checkpoint import Checkpoint
    from synth.render import console
    from synth.render.progress import Progress
    from synth.routing.registry import ROUTERS

    if args.vls is not None and args.out is None:
        raise SynthError("--vls records virtual lanes in the routes file: add --out FILE")
    workload, selection, phases = o.workload_of(args, instance, topology, network, kept=args.out is not None)
    router = args.router if args.router is not None else instance.route.get("router")
    if router is not None and not router.strip():
        raise SynthError("--router '' names no router: give a router name, or leave --router out for the family's "
                         "default")
    chosen_by = "" if router else f"; the {topology.family} family's default (--router NAME for another)"
    router = router or topology.default_router  # as synth schedule, compare and synth.route() choose
    seed = args.seed if args.seed is not None else instance.route.get("seed", 0)
    why_unit = o.resolve_load_unit(args, network, ROUTERS.get(router, topology).minimizes_messages)
    given = [a.split("=", 1)[0] for a in args.argv if a.startswith("--")]
    plan = plan_route(topology, workload, selection, phases, router, seed, o.router_options(args), given,
                      args.out is not None, args.max_flows, args.vls)
    executor = parse_executor(args.executor)
    refuse_checkpoint_overlap(args.checkpoint, args.out, args.loads)
    if args.load_unit == "messages" and workload.sizes_differ(phases):
        print("note: flow sizes differ; contention counts messages (--load-unit bytes weighs bytes over bandwidth)",
              file=sys.stderr)
    with OutputSet() as outputs, executor:  # both targets checked (and reserved) before any routing
        outputs.protect(*(f for f in (args.spec if args.spec.endswith(".toml") else None,
                                      workload.pattern[4:] if workload.pattern.startswith("csv:") else None) if f))
        routes_out = outputs.reserve(args.out) if args.out is not None else None
        loads_out = outputs.reserve(args.loads, "--loads") if args.loads is not None else None
        checkpoint = None
        if args.checkpoint is not None:
            checkpoint = Checkpoint(args.checkpoint, checkpoint_inputs(plan.header, workload, phases, args.out is not None,
                                                                       args.glpk_options, args.vls))
        workers = executor.start()  # a cluster is reached (or started) before anything is printed
        if checkpoint is not None:
            checkpoint.create()
        print(f"topology  {topology.label()}: {network.num_terminals} terminals, {network.num_switches} switches")
        print(f"traffic   {workload.pattern}: {len(phases)} of {counted(workload.num_phases, 'phase')}, {workload.message_bytes} B per message")
        print(f"router    {plan.router.spec.describe(plan.options, seed)}{chosen_by}")
        if args.load_unit == "bytes":
            print("load      bytes over bandwidth per channel (contention, bounds and gaps in bytes)"
                  + (f"; {why_unit}" if why_unit else ""))
        elif why_unit:
            print(why_unit, file=sys.stderr)
        sys.stdout.flush()
        progress = Progress(len(phases), enabled=not args.quiet)
        if args.executor is not None and not args.quiet:
            progress.say(f"  executor: {executor.label()}, {o.workers_text(workers)}")
        result = run_route(plan, routes_out, loads_out, executor, checkpoint, progress, args.quiet)
    evaluations, names = result.evaluations, topology.bound_names()
    print()
    o.print_phases(evaluations, network, args.table, names)
    print()
    print(console.stage_lines(evaluations, network, names))
    if result.lanes_note is not None:
        print("\n".join(f"{label:<10}{text}" for label, text in zip(("lanes", "budget"), result.lanes_note.split("\n"))))
    if plan.dropped is not None:
        print(f"unreachable {console.unreachable_line(topology, workload, phases, plan.dropped)}")
    for out in (args.out, args.loads):
        if out is not None:
            print(f"wrote {out}")
    return 0
