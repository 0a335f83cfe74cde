"""`synth synthesize COLLECTIVE --network SPEC`: a schedule made by optimization (synth.app.synthesize)."""

from __future__ import annotations

from contextlib import nullcontext

from synth.cli.listings import method_names, solver_names
from synth.core.declared import constant
from synth.core.errors import SynthError
from synth.cli.options import MAX_TIME_LIMIT, SIZES_HELP, add_cost_model, node_costs, positive, workers_text
from synth.core.output import OutputSet
from synth.core.sizes import size_option
from synth.core.text import counted
from synth.core.validate import parse_int, parse_int_list, parse_int_or_range
from synth.execute import EXECUTOR_SYNTAX


def parse_methods(text: str):
    from synth.synthesis.methods import parse_methods

    return parse_methods(text)


DEFAULT_SYNTHESIS_BYTES = 1 << 20


def add_parser(sub) -> None:
    SYNTHESIZED, MODES = constant("synth.app.synthesize", "SYNTHESIZED"), constant("synth.app.synthesize", "MODES")
    p = sub.add_parser("synthesize", help="synthesize a collective's step schedule by optimization, with its bounds")
    p.add_argument("collective", metavar="COLLECTIVE", help=", ".join(SYNTHESIZED))
    p.add_argument("--network", metavar="SPEC", required=True, help="the network whose terminals are the ranks")
    p.add_argument("--bytes", type=size_option("--bytes", many=True), metavar="SIZES",
                   help="the message per rank: one size, a range A..B (powers of two times A: a schedule per size "
                        "band) or a list A,B,C; a size is bytes, or with a unit (4096, 64KiB, 1MiB; default 1MiB; not "
                        "for alltoallv, whose sizes come from --sizes)")
    p.add_argument("--sizes", metavar="SPEC", help=SIZES_HELP)
    p.add_argument("--ranks-per-node", type=lambda t: parse_int(t, "--ranks-per-node", 1, 64), default=1, metavar="Q",
                   help="ranks per terminal (default 1)")
    p.add_argument("--root", type=lambda t: parse_int(t, "--root", 0), default=0, metavar="R",
                   help="the root of broadcast and reduce (default 0)")
    p.add_argument("--chunks", type=lambda t: parse_int_or_range(t, "--chunks", 1, 16), metavar="C|A..B",
                   help="blocks per rank (allgather, reduce-scatter, allreduce) or in all (broadcast, reduce); default: "
                        "with the symmetric method the fewest (up to a rank's ports) that make the cut bound a whole "
                        "number of rounds (a 2D torus: 4), else 1; A..B: every chunk count from A to B, one front of "
                        "(steps, rounds, chunks) over all of them")
    p.add_argument("--transfers", choices=constant("synth.synthesis.transfers", "REACHES"), metavar="REACH",
                   help="the rank pairs one step may join: neighbours (at most one router-to-router link) or all "
                        "(default: neighbours where they join every rank)")
    p.add_argument("--router", metavar="NAME", help="routes the transfers take (default: the family's)")
    p.add_argument("--routes", metavar="FILE", help="a routes file (synth-routes/2, as `synth route --out` writes it "
                   "and `synth check` passes) whose paths the transfers take instead: the fabric's own routes; it "
                   "needs a path for every node pair a transfer joins (route an all-to-all to have them all)")
    p.add_argument("--method", choices=MODES, default="auto",
                   help="exact: one program over every rank's blocks (up to 64 ranks); symmetric: the program of one "
                        "rank per orbit of the network's translations (tori, HyperX, Kautz K(D,2) with D + 1 a prime "
                        "power), translated to all; trees: balanced breadth-first trees and every block sent straight, "
                        "no program (thousands of ranks); auto (default): symmetric where the network has "
                        "translations (above 4,096 ranks: the trees of one rank per orbit alone, an orbit schedule; docs/methods.md), else exact up to 64 ranks and trees above. The per-layer points (hierarchical "
                        "networks up to 2,048 ranks) and the generated algorithms are always on the front too")
    p.add_argument("--methods", metavar="NAMES", type=parse_methods,
                   help="the registered methods to run, comma-separated (default: every one that applies; "
                        "docs/methods.md): " + ", ".join(method_names()))
    p.add_argument("--solver", default="cpsat", metavar="NAME", help=f"the backend: {', '.join(solver_names())} (default cpsat)")
    p.add_argument("--time-limit", type=positive("--time-limit", MAX_TIME_LIMIT), default=60.0,
                   metavar="S", help=constant("synth.solve.budget", "SYNTHESIS_TIME_HELP") + "; an all-to-all's "
                   "multicommodity-flow LP bound is solved within S seconds too, and left out (said) where it is not")
    p.add_argument("--reproducible", action="store_true", help=constant("synth.solve.budget", "REPRODUCIBLE_HELP"))
    add_cost_model(p)
    p.add_argument("--out", metavar="FILE|DIR", help="write the schedule (synth-schedule/2 with its synthesis record and paths); "
                   "with several sizes a directory of one file per size band, named COLLECTIVE-<least size>B.json (a name "
                   "ending in .json or .h5 is refused then), written beside it and swapped in whole: an existing "
                   "directory is replaced when it holds only such files (said on stderr), else refused")
    p.add_argument("--routes-out", metavar="FILE", help="alltoall: also write the exchange's routes, one phase of every "
                   "node pair (traffic a2a-all), as a routes file (synth-routes/2; .h5 the compact form) that synth "
                   "check, synth tables and synth synthesize --routes take")
    p.add_argument("--query", metavar="S,R", type=lambda t: parse_int_list(t, "--query", 2, 1),
                   help="one point of the front: is there a schedule of S steps and at most R rounds (with --chunks "
                        "C)? satisfiable (written with --out), impossible (proven) or unknown (the budget ran out)")
    p.add_argument("--executor", metavar="WHERE",
                   help="where an orbit synthesis (above 4,096 ranks) runs its independent pieces (the trees of each "
                        "half, each orbit method, each candidate's verification): "
                        f"{EXECUTOR_SYNTAX}; default: this process. The schedule is the "
                        "same wherever they run")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_synthesize)


def cmd_synthesize(args) -> int:
    from synth.app.exchange_routes import write_exchange_routes
    from synth.app.synthesize import BandFiles, SynthesisRequest, check, synthesize
    from synth.collectives.schedule import collective
    from synth.render.progress import progress_printer
    from synth.render.synthesis import header_lines, orbit_part_line, part_line, size_lines
    from synth.solve import check_solver
    from synth.solve.budget import reproducible
    from synth.topology import parse_topology

    check_solver(args.solver)
    if args.bytes is not None and collective(args.collective).name == "alltoallv":
        raise SynthError("--bytes: an alltoallv's block sizes come from --sizes")
    sizes = args.bytes if args.bytes is not None else [DEFAULT_SYNTHESIS_BYTES]
    topology = parse_topology(args.network)
    say = progress_printer(not args.quiet)
    routes = None
    if args.routes is not None:
        from synth.app.schedule import checked_routes

        routes = checked_routes(args.routes)
    request = SynthesisRequest(args.collective, topology, sizes, args.ranks_per_node, args.root, args.chunks,
                               args.transfers, args.router, args.method, args.sizes, args.time_limit, args.solver,
                               routes, args.alpha, args.bandwidth * 1e9, args.methods,
                               node_costs(args, args.ranks_per_node))
    # what the options say is checked before any output is reserved; an all-to-all's routing (the
    # program) runs after, so an unwritable --out is one line at once
    plan = check(request, routes_out=args.routes_out is not None)
    if plan is not None and plan.orbit is not None and args.out is not None:
        from synth.io.schedule_hdf5 import wants_hdf5

        if len(sizes) > 1:
            raise SynthError(f"--out with {len(sizes)} sizes: an orbit schedule (above 4,096 ranks) is one file of "
                             "blocks sized for one message: give one size")
        if not wants_hdf5(args.out):
            raise SynthError(f"--out {args.out}: an orbit schedule is written as HDF5 (synth-orbit-schedule/1): "
                             "name the file .h5")
    executor = None
    if args.executor is not None:
        from synth.execute import parse_executor

        if plan is None or plan.orbit is None or args.query is not None:
            raise SynthError("--executor: only an orbit synthesis (above 4,096 ranks) splits its work across workers; "
                             f"{topology.spec}'s {'query' if args.query is not None else 'synthesis'} runs in this "
                             "process")
        executor = parse_executor(args.executor)
    if args.query is not None:
        with reproducible(args.reproducible):
            return _query(args, request, say)
    with OutputSet() as outputs, reproducible(args.reproducible), executor or nullcontext():
        files = BandFiles(outputs, args.out, len(sizes)) if args.out is not None else None
        routes_target = outputs.reserve(args.routes_out, "--routes-out") if args.routes_out is not None else None
        if executor is not None:
            say(f"executor  {executor.label()}, {workers_text(executor.start())}")
        result = synthesize(request, say, plan, executor)
        plan, parts, found = result.plan, result.parts, result.bands
        print("\n".join(header_lines(topology, plan)))
        for part in parts:
            print(part_line(plan, part))
        for part in result.orbit_parts:
            print(orbit_part_line(part))
        for band in found:
            print("\n".join(size_lines(band.schedule)))
        if files is not None:
            files.write(plan.collective, found)
        print(f"verified  every send holds its blocks; every schedule delivers the {collective(plan.collective).name}")
        if routes_target is not None:
            e = write_exchange_routes(routes_target, plan)
            print(f"routes    one phase of {counted(plan.topology.network().num_terminals, 'node')}' pairs: busiest "
                  f"channel {e.max_contention}, cut bound {e.lower_bound} ({e.status})")
        if args.out is not None:
            print(f"wrote {args.out}")
        if args.routes_out is not None:
            print(f"wrote {args.routes_out}")
    return 0


def _query(args, request, say) -> int:
    from synth.app.synthesize import answer
    from synth.io.schedule_file import write_schedule_output
    from synth.render.synthesis import header_lines, query_line

    with OutputSet() as outputs:
        target = outputs.reserve(args.out) if args.out is not None else None
        plan, found, schedule = answer(request, *args.query, say)
        print("\n".join(header_lines(request.topology, plan)))
        print(query_line(plan, *args.query, found))
        if target is not None and schedule is not None:
            write_schedule_output(target, schedule)
            print(f"wrote {args.out}")
        else:  # no schedule to write: nothing is left behind
            outputs.discard()
    return 0
