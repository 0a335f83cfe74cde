"""`synth simulate SCHEDULE.json|ROUTES.json`: replay a schedule or a routes file's phases on SimGrid,
next to synth's cost model (synth.app.simulate)."""

from __future__ import annotations

from synth.core.text import figure
from synth.cli.options import add_cost_model, node_costs
from synth.core.declared import constant
from synth.core.errors import SynthError
from synth.core.output import OutputSet
from synth.core.text import counted
from synth.core.validate import parse_int, parse_non_negative_number, parse_positive_number, require_readable

SHOWN_ROWS = 48  # rows printed in full; --out has every row
PROGRESS_TRANSFERS = 50_000  # simulations from which the worker's progress is shown


def add_parser(sub) -> None:
    MODELS, DISCIPLINES = constant("synth.simulation.runner", "MODELS"), constant("synth.simulation.runner", "DISCIPLINES")
    p = sub.add_parser("simulate", help="replay a schedule or a routes file's phases on SimGrid, next to the cost model")
    p.add_argument("file", metavar="FILE", help="a schedule (synth schedule/synthesize --out) or a routes file "
                   "(synth route --out), JSON or HDF5")
    p.add_argument("--model", choices=MODELS,
                   help="SimGrid's network model: LV08 (the default, SimGrid's: latency x 13.01, bandwidth x 0.97, "
                        "calibrated on TCP; the output says so), CM02 (plain max-min sharing), SMPI (what SimGrid's MPI programs run on: piecewise "
                        "factors by message size), IB (SMPI with InfiniBand's penalties per host)")
    p.add_argument("--discipline", choices=DISCIPLINES, default="bsp",
                   help="bsp: a step starts when the previous one has ended everywhere (as the cost model assumes); "
                        "async: a rank sends its step-s messages once it holds what it received before s")
    p.add_argument("--latency", type=lambda t: parse_positive_number(t, "--latency", 1.0), metavar="S",
                   help="SimGrid latency of every link leaving a terminal, so of every route (default: --alpha)")
    p.add_argument("--hop-latency", type=lambda t: parse_non_negative_number(t, "--hop-latency", 1.0), default=0.0, metavar="S",
                   help="latency added per link between routers (default 0)")
    p.add_argument("--overhead", type=lambda t: parse_non_negative_number(t, "--overhead", 1.0), default=0.0, metavar="S",
                   help="seconds a rank spends on each message it sends, one after another (default 0)")
    p.add_argument("--router", metavar="NAME", help="schedules: routes the transfers take (default: the paths the file "
                   "records, a synthesized schedule's, else the family's router's)")
    p.add_argument("--routes", metavar="ROUTES.json", help="schedules: take the transfers' paths from a routes file")
    p.add_argument("--seed", type=lambda t: parse_int(t, "--seed", 0), default=0, help="seed of a random router")
    p.add_argument("--no-merge", dest="merge", action="store_false",
                   help="simulate every transfer as a flow of its own (by default a step's transfers between the same "
                        "nodes along one path, with the same bytes, are one flow where max-min sharing makes that exact: "
                        "docs/simulation.md)")
    add_cost_model(p)
    p.add_argument("--out", metavar="FILE", help="write the simulated times (synth-simulation/1, docs/formats.md)")
    p.set_defaults(func=cmd_simulate)


def cmd_simulate(args) -> int:
    if args.router is not None and args.routes is not None:  # as synth synthesize refuses the pair
        raise SynthError("--routes and --router: the transfers take one or the other")
    require_readable(args.file, f"'{args.file}'")  # as file_kind says it, before the readers are imported
    from synth.app.schedule import checked_routes
    from synth.app.simulate import SimulationOptions, file_kind, simulate_routes, simulate_schedule
    from synth.io.routes_file import routes_topology
    from synth.io.simulation_file import write_simulation
    from synth.render.progress import progress_printer
    from synth.simulation.runner import DEFAULT_MODEL, DEFAULT_MODEL_NOTE
    from synth.topology import parse_topology

    options = SimulationOptions(model=args.model or DEFAULT_MODEL, discipline=args.discipline, alpha=args.alpha,
                                bandwidth_bits=args.bandwidth * 1e9, latency=args.latency, hop_latency=args.hop_latency,
                                overhead=args.overhead, node=node_costs(args), merge=args.merge)
    kind = file_kind(args.file)
    with OutputSet() as outputs:
        outputs.protect(args.file, args.routes)
        target = outputs.reserve(args.out) if args.out is not None else None
        if kind == "schedule":
            from synth.collectives.verify import verify
            from synth.io.schedule_file import read_schedule

            schedule = read_schedule(args.file)
            report = verify(schedule)  # a schedule that does not deliver is not simulated
            if not report.ok:
                raise SynthError(f"schedule file '{args.file}' does not pass synth verify: {report.violation}")
            node_costs(args, schedule.ranks_per_node)  # the intra-node options need ranks sharing a node
            routes = checked_routes(args.routes) if args.routes is not None else None
            topology = parse_topology(schedule.spec)
            say = progress_printer(schedule.num_transfers >= PROGRESS_TRANSFERS)
            say(f"simulating {schedule.num_transfers:,} transfers")
            simulation = simulate_schedule(schedule, topology, options, args.router, args.seed, routes,
                                           progress=say if schedule.num_transfers >= PROGRESS_TRANSFERS else None)
            what = f"{schedule.collective} by {schedule.algorithm}: {counted(schedule.num_steps, 'step')}"
        else:
            if args.router is not None or args.routes is not None:
                raise SynthError("--router and --routes apply to schedules: a routes file has its own paths")
            from synth.checking.routes import check_routes
            from synth.io.routes_file import read_routes_columnar

            doc = read_routes_columnar(args.file)
            verified = check_routes(doc)  # paths that leave the network or miss their flows are not simulated
            if not verified.ok:
                raise SynthError(f"routes file '{args.file}' does not pass synth check: {verified.problems[0]}")
            if not doc["phases"]:
                raise SynthError(f"routes file '{args.file}' has no phases to simulate")
            topology = routes_topology(doc)
            flows = sum(len(phase["flows"]) for phase in doc["phases"])
            say = progress_printer(flows >= PROGRESS_TRANSFERS)
            simulation = simulate_routes(doc, topology, options, progress=say if flows >= PROGRESS_TRANSFERS else None)
            what = f"{doc['traffic'].get('pattern')} routed by {doc.get('router')}: {counted(len(doc['phases']), 'phase')}"
        print(f"network   {topology.label()}")
        print(f"simulated {what}, on SimGrid {simulation.platform['simgrid']} ({options.model}, "
              f"{'bulk-synchronous' if options.discipline == 'bsp' else 'asynchronous'}): "
              f"{simulation.platform['hosts']:,} hosts, {simulation.platform['links']:,} links, "
              f"{simulation.platform['routes']:,} routes"
              + (f", {int(simulation.transfers.sum()):,} transfers as {simulation.platform['flows']:,} flows (a step's "
                 "identical transfers merged, exactly)" if "flows" in simulation.platform else "")
              + f"; latency {options.route_latency * 1e6:g} us"
              + (f" + {options.hop_latency * 1e6:g} us per hop" if options.hop_latency else "")
              + f", {options.bandwidth_bits / 1e9:g} Gb/s per link of bandwidth 1"
              + (f", overhead {options.overhead * 1e6:g} us per message" if options.overhead else "")
              + (f"; {options.node.text()}" if not options.node.free else ""))
        if args.model is None:
            print(DEFAULT_MODEL_NOTE)
        print(rows_text(simulation))
        model, simulated = simulation.model_total, simulation.simulated_total
        bound = "" if simulation.bound is None else f" (any schedule of its blocks: >= {figure(simulation.bound * 1e6, 6)} us)"
        print(f"total     alpha-beta {figure(model * 1e6, 6)} us{bound}, simulated {figure(simulated * 1e6, 6)} us"
              + (f" ({simulated / model:.4f} x the model)" if model > 0 else ""))
        if target is not None:
            with target.open() as handle:
                write_simulation(handle, simulation)
            print(f"wrote {args.out}")
    return 0


def rows_text(simulation) -> str:
    from synth.render.console import table

    asynchronous = simulation.options.discipline == "async"
    rows = []
    shown = range(len(simulation.labels)) if len(simulation.labels) <= SHOWN_ROWS else range(SHOWN_ROWS)
    for i in shown:
        model, sim = simulation.model[i], simulation.simulated[i]
        rows.append([simulation.labels[i], f"{int(simulation.transfers[i]):,}", f"{int(simulation.bytes[i]):,}",
                     figure(model * 1e6, 6), figure(sim * 1e6, 6), f"{sim / model:.4f}" if model > 0 else "-",
                     figure(simulation.ends[i] * 1e6, 6)])
    header = ["row", "transfers", "bytes", "alpha-beta us", "simulated us" + (" (after the previous end)" if asynchronous else ""),
              "ratio", "ends at us"]
    text = table(header, rows, "lrrrrrr")
    if len(simulation.labels) > SHOWN_ROWS:
        text += f"\n... {len(simulation.labels) - SHOWN_ROWS:,} more rows (--out writes them all)"
    return text
