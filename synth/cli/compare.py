"""`synth compare COLLECTIVE --network SPEC [--bytes 32B..512MiB] [--out FIGURE.png]`: every algorithm
that generates the collective on the network, priced over message sizes by the alpha-beta model on
routed schedules (synth.pricing.compare), with the best per size and the sizes where the best
changes (crossovers), as a table and a figure."""

from __future__ import annotations

from synth.cli.options import MAX_TIME_LIMIT, add_cost_model, positive
from synth.core.output import OutputSet
from synth.pricing.compare import Comparison, compare, parse_sizes, size_text
from synth.topology import parse_topology


def add_parser(sub) -> None:
    p = sub.add_parser("compare", help="price every algorithm of a collective on a network over message sizes")
    p.add_argument("collective", metavar="COLLECTIVE", help="an unrooted collective with equal blocks: allgather, "
                   "reduce-scatter, allreduce, alltoall")
    p.add_argument("--network", metavar="SPEC", required=True, help="the network whose terminals are the ranks (rank i "
                   "on terminal i), e.g. torus:8,8 or xgft:3:8,4,2:1,8,2")
    p.add_argument("--bytes", default="32B..512MiB", metavar="RANGE",
                   help="message sizes: A..B (powers of two) or A,B,... with units B, KiB, MiB, GiB, TiB (default 32B..512MiB)")
    p.add_argument("--router", metavar="NAME", help="routes the transfers take (default: the family's, dmodk on fat "
                   "trees, minimal on direct networks)")
    add_cost_model(p)
    p.add_argument("--out", metavar="FIGURE.png", help="the figure: time over message size, a line per algorithm")
    p.add_argument("--synthesize", action="store_true", help="also synthesize a schedule (as synth synthesize does: "
                   "up to 64 ranks, 4,096 on tori and HyperX, an all-to-all 1,024) and list it next to the algorithms, "
                   "with its bound (the cut bound; an all-to-all's flow bound) in the bound")
    p.add_argument("--time-limit", type=positive("--time-limit", MAX_TIME_LIMIT), default=60.0,
                   metavar="S", help="seconds for the synthesis (default 60)")
    p.set_defaults(func=cmd_compare)


def cmd_compare(args) -> int:
    topology = parse_topology(args.network)
    sizes = parse_sizes(args.bytes)
    with OutputSet() as outputs:
        target = outputs.reserve(args.out) if args.out is not None else None
        result = compare(args.collective, topology, sizes, args.router, args.alpha, args.bandwidth * 1e9)
        if args.synthesize:
            from synth.app.synthesize import compare_with_synthesis

            result = compare_with_synthesis(result, topology, args.alpha, args.bandwidth * 1e9, args.time_limit)
        print(f"network   {topology.label()}: {topology.network().num_terminals} ranks; {result.router} routes; "
              f"alpha {args.alpha * 1e6:g} us, {args.bandwidth:g} Gb/s")
        print(table_text(result))
        for line in result.skipped:
            print(f"left out  {line}")
        if target is not None:
            from synth.report.plots import collective_figure, png

            target.write(png(collective_figure(result, topology.label())))
            print(f"wrote {args.out}")
    return 0


def table_text(result: Comparison) -> str:
    found, best = result.candidates, result.best
    width = max(10, *(len(c.label) for c in found))
    lines = [f"{'bytes':>10}  " + "  ".join(f"{c.label:>{width}}" for c in found) + f"  {'bound':>{width}}  best"]
    for i, n in enumerate(result.sizes):
        lines.append(f"{size_text(n):>10}  " + "  ".join(f"{t * 1e6:>{width}.4g}" for t in result.times[i])
                     + f"  {result.bounds[i] * 1e6:>{width}.4g}  {found[best[i]].label}")
    lines.append("times in us: synth's cost model on the routed schedules (a port starts one message per alpha; the "
                 "busiest channel's bytes per step); bound: no schedule costs less under the same model")
    lines.append("crossovers: " + result.crossover_text())
    return "\n".join(lines)
