"""`synth bounds SPEC --traffic PATTERN [--lp]` (synth.app.bounds)."""

from __future__ import annotations

import sys

from synth.cli import options as o
from synth.core.declared import constant
from synth.core.errors import SynthError
from synth.core.text import counted
from synth.execute import parse_executor


def add_parser(sub) -> None:
    p = sub.add_parser("bounds", help="lower bounds on contention for a workload, B_min and ideal time for all-to-all")
    o.add_spec(p)
    o.add_traffic(p)
    p.add_argument("--lp", action="store_true", help="also the LP bound of every phase (minimum-congestion multicommodity "
                   "flow, HiGHS; any network): slower, at least as strong as the cut bounds on router links")
    p.add_argument("--lp-time-limit", type=o.positive("--lp-time-limit", o.MAX_TIME_LIMIT), metavar="S",
                   help=f"seconds per phase for the LP bound (default {constant('synth.measure.lp_bound', 'LP_TIME_LIMIT'):g}); a phase stopped there keeps a valid, "
                   "possibly weaker bound, and the output says so")
    o.add_load_unit(p, "bounds on it")
    o.add_executor(p)
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_bounds)


def cmd_bounds(args) -> int:
    if args.lp_time_limit is not None and not args.lp:
        raise SynthError("--lp-time-limit applies to the LP bound: add --lp")
    if args.executor is not None and not args.lp:
        raise SynthError("--executor runs the LP bounds: add --lp (the cut bounds take a moment on this machine)")
    executor = parse_executor(args.executor)  # a bad --executor fails before any work
    topology, workload, phases = o.load_workload(args)
    import numpy as np

    from synth.app.bounds import lp_line, phase_bounds
    from synth.measure.lp_bound import LP_TIME_LIMIT
    from synth.pricing.fattree import ideal_exchange_time
    from synth.render import console
    from synth.topology.family import FAT_TREE_FORMS

    network = topology.network()
    print(f"topology  {topology.label()}: {network.num_terminals} terminals")
    print(f"traffic   {workload.pattern}: {len(phases)} of {counted(workload.num_phases, 'phase')}, {workload.message_bytes} B per message")
    if network.failed_nodes is not None:
        dropped = dict(zip(phases.tolist(), workload.unreachable(phases).tolist()))
        print(f"unreachable {console.unreachable_line(topology, workload, phases, dropped, 'the bounds')}")
    why_unit = o.resolve_load_unit(args, network)
    weighs_bytes = args.load_unit == "bytes"
    if weighs_bytes:
        print("load      bytes over bandwidth per channel (every bound in bytes)" + (f"; {why_unit}" if why_unit else ""))
    print()
    say = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr, flush=True))
    limit = args.lp_time_limit if args.lp_time_limit is not None else LP_TIME_LIMIT
    if not args.lp:
        table = phase_bounds(topology, workload, phases, weighs_bytes)
    else:
        with executor:
            if args.executor is not None:
                say(f"  executor: {executor.label()}, {o.workers_text(executor.start())}")
            table = phase_bounds(topology, workload, phases, weighs_bytes, True, limit, executor, say)
    bounds, names, lower = table.values, table.names, table.lower_bounds()
    if args.table or len(phases) <= console.TABLE_PHASES:
        rows = [[int(p), int(b), names[int(np.argmax(row))]] + row.tolist() for p, b, row in zip(phases, lower, bounds)]
        print(console.table(["phase", "lower bound", "binding"] + list(names), rows, "rrl" + "r" * len(names)))
    else:
        counts = np.bincount(lower)
        print(console.table(["lower bound", "phases"], [[value, int(n)] for value, n in enumerate(counts) if n]))
    what = "per stage" if topology.bounds_per_stage else "per cut"
    print(f"lower bound {what}, max over the phases: " + ", ".join(
        f"{name}: {int(v)}" for name, v in zip(names, bounds.max(axis=0))))
    if args.lp:
        print(lp_line(table, limit))
    if workload.is_all_to_all and FAT_TREE_FORMS in topology.closed_forms() and not weighs_bytes:
        print()
        print("all-to-all bandwidth per layer (Prisacari20, eq. 2.1): messages per phase a layer-l subtree's up links must carry")
        print(console.bmin_lines(topology))
        ideal = ideal_exchange_time(topology.m, workload.message_bytes)
        print()
        print(f"ideal exchange time (Prisacari20, sec. 2.5.1; 10 Gb/s, 100 ns links, 50 ns switches, 500 ns adapters, 64 B flits): "
              f"{ideal * 1e6:.2f} us for {workload.message_bytes} B messages")
    return 0
