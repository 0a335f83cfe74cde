"""`synth synthesize COLLECTIVE --network SPEC`: a schedule made by optimization (synth.app.synthesize)."""

from __future__ import annotations

from synth.app.exchange_routes import write_exchange_routes
from synth.app.schedule import progress_printer
from synth.app.synthesize import METHODS, SYNTHESIZED, bands, exchange_message_bytes, plan_synthesis, synthesize_parts
from synth.core.errors import SynthError
from synth.collectives.schedule import collective
from synth.cli.options import MAX_TIME_LIMIT, add_cost_model, positive
from synth.core.output import OutputSet
from synth.core.text import counted
from synth.core.validate import parse_int
from synth.io.schedule_file import write_schedule
from synth.io.schedule_hdf5 import wants_hdf5, write_schedule_hdf5
from synth.pricing.compare import parse_sizes, size_text
from synth.solve import SOLVERS, check_solver
from synth.synthesis.transfers import REACHES
from synth.topology import parse_topology


def add_parser(sub) -> None:
    p = sub.add_parser("synthesize", help="synthesize a collective's step schedule by optimization, with its bounds")
    p.add_argument("collective", metavar="COLLECTIVE", help=", ".join(SYNTHESIZED))
    p.add_argument("--network", metavar="SPEC", required=True, help="the network whose terminals are the ranks")
    p.add_argument("--bytes", metavar="N|RANGE",
                   help="the message per rank: one size, a range A..B (powers of two: a schedule per size band) or a "
                        "list A,B,C (default 1MiB; not for alltoallv, whose sizes come from --sizes)")
    p.add_argument("--sizes", metavar="SPEC", help="alltoallv block sizes: random:S:SEED (uniform in [0, S] bytes) or "
                   "csv:PATH (a P x P matrix, row s column d the bytes s sends to d)")
    p.add_argument("--ranks-per-node", type=lambda t: parse_int(t, "--ranks-per-node", 1, 64), default=1, metavar="Q",
                   help="ranks per terminal (default 1)")
    p.add_argument("--root", type=lambda t: parse_int(t, "--root", 0), default=0, metavar="R",
                   help="the root of broadcast and reduce (default 0)")
    p.add_argument("--chunks", type=lambda t: parse_int(t, "--chunks", 1, 16), metavar="C",
                   help="blocks per rank (allgather, reduce-scatter, allreduce) or in all (broadcast, reduce); default: "
                        "with the symmetric method the fewest (up to a rank's ports) that make the cut bound a whole "
                        "number of rounds (a 2D torus: 4), else 1")
    p.add_argument("--transfers", choices=REACHES, metavar="REACH",
                   help="the rank pairs one step may join: neighbours (at most one router-to-router link) or all "
                        "(default: neighbours where they join every rank)")
    p.add_argument("--router", metavar="NAME", help="routes the transfers take (default: the family's)")
    p.add_argument("--routes", metavar="FILE", help="a routes file (synth-routes/2, as `synth route --out` writes it "
                   "and `synth check` passes) whose paths the transfers take instead: the fabric's own routes; it "
                   "needs a path for every node pair a transfer joins (route an all-to-all to have them all)")
    p.add_argument("--method", choices=METHODS, default="auto",
                   help="exact: one program over every rank's blocks (up to 64 ranks); symmetric: the program of one "
                        "rank per orbit of the network's translations (tori, HyperX, Kautz K(D,2) with D + 1 a prime "
                        "power), translated to all; trees: balanced breadth-first trees and every block sent straight, "
                        "no program (thousands of ranks); auto (default): symmetric where the network has "
                        "translations, else exact up to 64 ranks and trees above. The per-layer points (hierarchical "
                        "networks up to 2,048 ranks) and the generated algorithms are always on the front too")
    p.add_argument("--solver", default="cpsat", metavar="NAME", help=f"the backend: {', '.join(SOLVERS)} (default cpsat)")
    p.add_argument("--time-limit", type=positive("--time-limit", MAX_TIME_LIMIT), default=60.0,
                   metavar="S", help="the solver's time for the whole synthesis, shared equally by the step counts tried "
                   "(CP-SAT's deterministic time, about seconds here: reruns give the same schedule; default 60)")
    add_cost_model(p)
    p.add_argument("--out", metavar="FILE|DIR", help="write the schedule (synth-schedule/2 with its synthesis record and paths); "
                   "with several sizes a directory of one file per size band, named COLLECTIVE-<least size>B.json")
    p.add_argument("--routes-out", metavar="FILE", help="alltoall: also write the exchange's routes, one phase of every "
                   "node pair (traffic a2a-all), as a routes file (synth-routes/2; .h5 the compact form) that synth "
                   "check, synth tables and synth synthesize --routes take")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_synthesize)


def cmd_synthesize(args) -> int:
    check_solver(args.solver)
    if args.bytes is not None and collective(args.collective).name == "alltoallv":
        raise SynthError("--bytes: an alltoallv's block sizes come from --sizes")
    sizes = parse_sizes(args.bytes or "1MiB")
    topology = parse_topology(args.network)
    say = progress_printer(not args.quiet)
    routes = None
    if args.routes is not None:
        from synth.app.schedule import checked_routes

        routes = checked_routes(args.routes)
    plan_args = dict(ranks_per_node=args.ranks_per_node, root=args.root, chunks=args.chunks, reach=args.transfers,
                     router=args.router, method=args.method, sizes=args.sizes, time_limit=args.time_limit,
                     solver=args.solver, say=say, routes=routes)
    # what the options say is checked before any output is reserved; an all-to-all's routing (the
    # program) runs after, so an unwritable --out is one line at once
    plan = plan_synthesis(args.collective, topology, **plan_args, check_only=True)
    if args.routes_out is not None and collective(args.collective).name != "alltoall":
        raise SynthError(f"--routes-out: only an alltoall's synthesis routes its pairs as one phase, not "
                         f"{collective(args.collective).name}'s" + (" (its routes weigh the matrix's bytes, which a "
                                                                      "routes file's traffic cannot name)"
                                                                      if collective(args.collective).name == "alltoallv"
                                                                      else ""))
    bandwidth_bits = args.bandwidth * 1e9
    with OutputSet() as outputs:
        # The output is reserved before the solver runs: an unwritable --out is one line at once. The
        # files of a size range are named by their bands, known after it: the directory comes first.
        single = outputs.reserve(args.out) if args.out is not None and len(sizes) == 1 else None
        if args.out is not None and single is None:
            outputs.reserve_dir(args.out, [])
        routes_target = outputs.reserve(args.routes_out, "--routes-out") if args.routes_out is not None else None
        if plan is None:
            plan = plan_synthesis(args.collective, topology, **plan_args)
        if plan.sizes is not None:  # one band: the matrix's own sizes, shown as a rank's average
            sizes = [exchange_message_bytes(plan.sizes, plan.graph.ranks)]
        parts = synthesize_parts(plan, args.time_limit, args.solver, say)
        found = bands(plan, parts, sizes, args.alpha, bandwidth_bits)
        targets = {0: single} if single is not None else {}
        if args.out is not None and single is None:
            names = [f"{plan.collective}-{band.sizes[0]}B.json" for band in found]
            reserved = outputs.reserve_dir(args.out, names)
            targets = {i: reserved[name] for i, name in enumerate(names)}
        graph, bound = plan.graph, plan.time_bound
        print(f"network   {topology.label()}: {graph.ranks} ranks; transfers: {graph.reach} "
              f"({counted(graph.num_pairs, 'rank pair')}, routed by {graph.router})")
        print(f"method    {plan.method}")
        print(f"bounds    steps >= {plan.step_bound.steps} with {graph.reach} transfers ({plan.step_bound.why}; points "
              f"over every pair and generated ones may take fewer); any schedule: "
              f">= {bound.messages} x alpha, >= {bound.bandwidth.per_byte:.4g} B over bandwidth per byte "
              f"({bound.bandwidth.why})")
        for part in parts:
            if plan.exchange is not None:
                unit = "B" if plan.sizes is not None else "blocks"
                front = "; ".join(f"{counted(f.steps, 'step')}: busiest {f.rounds:g} {unit} ({f.method}"
                                  + (f" along {f.graph.router}'s paths" if f.graph is not None else "") + f", {f.status})"
                                  for f in part.front)
                print(f"front     {part.collective}: {front}")
                continue
            if part.whole:  # the generated algorithms, priced along the same paths
                front = "; ".join(f"{f.method.removeprefix('generated: ')} {counted(f.steps, 'step')}, {f.rounds:g} "
                                  f"rounds ({f.status})" for f in part.front)
                print(f"generated {part.collective} along {graph.router}'s paths: {front}")
                continue
            front = "; ".join(f"{counted(f.steps, 'step')}: " + (counted(f.rounds, "round") if f.rounds is not None
                                                                  else "none") + f" ({f.method}, {f.status})"
                              for f in part.front)
            one = f"{part.one_round} ({part.one_round_status})" if part.one_round is not None else "not on the front"
            least = (f"{part.least_steps} ({part.least_status})" if part.least_steps is not None
                     else "not reached by a point over them")
            print(f"front     {part.collective}: least steps with {graph.reach} transfers {least}, "
                  f"of one round each {one}; {front}")
        for i, band in enumerate(found):
            s = band.schedule
            how = " then ".join(part["method"] + (f" over {part['transfers']} transfers" if part["transfers"] in REACHES
                                                  else "") for part in s.synthesis["parts"])
            for entry in s.synthesis["sizes"]:
                print(f"size      {size_text(entry['bytes'])}: {counted(s.num_steps, 'step')}, "
                      f"{entry['seconds'] * 1e6:.4g} us, bound {entry['bound_seconds'] * 1e6:.4g} us, gap "
                      f"{entry['gap'] * 100:.1f}%; {how}: " + (
                          f"busiest load {s.synthesis['status']} among {s.synthesis['parts'][0]['optimal_among']}"
                          if plan.exchange is not None else
                          ("optimal: at the bounds of any schedule, but for blocks rounded up to whole bytes"
                           if s.synthesis["status"] == "optimal" else
                           f"{s.synthesis['status']}, above the bounds of any schedule")
                          if s.synthesis["parts"][0]["method"].startswith("generated") else
                          f"rounds {s.synthesis['status']} for its steps"))
            if i in targets:
                if wants_hdf5(targets[i].target):  # the compact form, as synth schedule writes it
                    write_schedule_hdf5(targets[i].tmp, s, shown=targets[i].target)
                else:
                    with targets[i].open() as handle:
                        write_schedule(handle, s)
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

