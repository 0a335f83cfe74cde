"""`synth schedule COLLECTIVE --algorithm NAME --network SPEC [--bytes N] [--out FILE]` and `synth
schedule --list` (synth.app.schedule)."""

from __future__ import annotations

from synth.cli.options import SIZES_HELP, add_cost_model, node_costs
from synth.core.declared import calls, constant
from synth.core.errors import SynthError
from synth.core.output import OutputSet
from synth.core.sizes import size_option, size_text
from synth.core.text import counted
from synth.core.validate import parse_int


def add_parser(sub) -> None:
    DEFAULT_BYTES = constant("synth.app.schedule", "DEFAULT_BYTES")
    COLLECTIVES = [c.name for c in calls("synth.collectives.schedule", "COLLECTIVES", "Collective", ("name",))]
    p = sub.add_parser("schedule", help="generate and verify a collective's step schedule (synth-schedule/1)")
    p.add_argument("collective", nargs="?", metavar="COLLECTIVE", help=", ".join(COLLECTIVES))
    p.add_argument("--algorithm", metavar="NAME", help="the generator (synth schedule --list)")
    p.add_argument("--network", metavar="SPEC", help="the network whose terminals are the ranks")
    p.add_argument("--bytes", type=size_option("--bytes"), default=DEFAULT_BYTES, metavar="SIZE",
                   help=f"the message per rank: bytes, or with a unit (4096, 64KiB, 1MiB; default {size_text(DEFAULT_BYTES)})")
    p.add_argument("--blocks", type=lambda t: parse_int(t, "--blocks", 1, 1 << 20), metavar="B",
                   help="blocks of a freely split message (broadcast, reduce, allreduce; default one per rank)")
    p.add_argument("--root", type=lambda t: parse_int(t, "--root", 0), default=0, metavar="R",
                   help="the root of a rooted collective (default 0)")
    p.add_argument("--peer", type=lambda t: parse_int(t, "--peer", 0), metavar="Q", help="p2p: the destination rank")
    p.add_argument("--radix", type=lambda t: parse_int(t, "--radix", 2), metavar="R", help="TuNA's radix (tuna, tuna-*)")
    p.add_argument("--batch", type=lambda t: parse_int(t, "--batch", 1), metavar="B",
                   help="hierarchical TuNA: inter-node rounds (coalesced) or messages (staggered) per step (default 1)")
    p.add_argument("--ranks-per-node", type=lambda t: parse_int(t, "--ranks-per-node", 1, 1 << 16), default=1, metavar="Q",
                   help="ranks per terminal (node): P = Q x terminals, rank r on terminal r // Q; transfers within a "
                        "node move through memory, over its internal link (--intra-bandwidth; default 1)")
    p.add_argument("--sizes", metavar="SPEC", help=SIZES_HELP)
    p.add_argument("--router", metavar="NAME",
                   help="routes the transfers take (default: the family's, dmodk on fat trees, minimal on direct "
                        "networks; any router of synth route)")
    p.add_argument("--routes", metavar="ROUTES.json", help="take the transfers' paths from a routes file (synth route "
                   "--out, for the same network) instead of --router")
    p.add_argument("--seed", type=lambda t: parse_int(t, "--seed", 0), default=0, help="seed of a random router")
    add_cost_model(p)
    p.add_argument("--out", metavar="FILE", help="write the schedule (synth-schedule/1, docs/formats.md): JSON, or the "
                   "compact HDF5 form for a FILE ending in .h5 or .hdf5 (synth verify reads both)")
    p.add_argument("--list", action="store_true", help="the algorithms and the collectives each one generates")
    p.set_defaults(func=cmd_schedule)


def cmd_schedule(args) -> int:
    if args.list:
        from synth.collectives.algorithms import ALGORITHMS
        from synth.render.console import table

        rows = [[name, ", ".join(algorithm.collectives), algorithm.summary] for name, algorithm in ALGORITHMS.items()]
        print(table(["algorithm", "collectives", "what it does"], rows, "lll"))
        return 0
    for option, value in (("COLLECTIVE", args.collective), ("--algorithm", args.algorithm), ("--network", args.network)):
        if value is None:
            raise SynthError(f"synth schedule needs {option} (or --list)")
    from synth.app.schedule import PROGRESS_BLOCK_SENDS, cost_lines, make_schedule, plan_schedule, promise
    from synth.collectives.algorithms import expected_block_sends
    from synth.io.schedule_file import write_schedule_output
    from synth.render.progress import progress_printer
    from synth.topology import parse_topology

    node = node_costs(args, args.ranks_per_node)
    plan = plan_schedule(args.collective, args.algorithm, parse_topology(args.network), message_bytes=args.bytes,
                         blocks=args.blocks, root=args.root, peer=args.peer, radix=args.radix, batch=args.batch,
                         ranks_per_node=args.ranks_per_node, sizes=args.sizes, router=args.router,
                         routes_path=args.routes)
    info, algorithm, topology, request, routes = plan.info, plan.algorithm, plan.topology, plan.request, plan.routes
    ranks, per_block, rounding = request.ranks, request.block_bytes, plan.rounding
    say = progress_printer(expected_block_sends(algorithm, request) >= PROGRESS_BLOCK_SENDS)
    with OutputSet() as outputs:
        target = outputs.reserve(args.out) if args.out is not None else None
        schedule = make_schedule(plan, args.router, say)
        say(f"routing and pricing {schedule.num_transfers:,} transfers")
        priced = cost_lines(schedule, topology, args.router, args.seed, args.alpha, args.bandwidth * 1e9, routes, node)
        where = "rank i on terminal i" if args.ranks_per_node == 1 else f"{args.ranks_per_node} per terminal, rank r on terminal r // {args.ranks_per_node}"
        print(f"network   {topology.label()}: {ranks} ranks ({where})")
        print(f"schedule  {info.name} by {algorithm.name}: {counted(schedule.num_steps, 'step')}, "
              f"{counted(schedule.num_transfers, 'transfer')}, "
              f"{schedule.num_block_sends:,} block sends, {schedule.blocks:,} blocks of "
              + (f"{per_block:,} B" if request.sizes is None else f"{int(request.sizes.min()):,}-{int(request.sizes.max()):,} B ({args.sizes})")
              + (f"; {counted(len(schedule.size_exchange), 'size exchange')}" if schedule.size_exchange is not None else "")
              + rounding)
        print(f"verified  every send holds its blocks; {promise(info.name)}")
        print(priced)
        if target is not None:
            write_schedule_output(target, schedule)  # JSON, or the compact HDF5 form for .h5
            print(f"wrote {args.out}")
    return 0
