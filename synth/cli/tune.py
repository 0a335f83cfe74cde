"""`synth tune COLLECTIVE... --network SPEC [--bytes SIZES] --out FILE`: Open MPI's coll_tuned dynamic
rules file (Open MPI 4.1's format, synth.io.coll_tuned) from `synth compare`'s choice per message size
among the algorithms coll_tuned has (synth.app.tune), and the bands chosen as a table."""

from __future__ import annotations

from synth.cli.options import add_cost_model, integer, node_costs, refuse_unknown_family
from synth.core.declared import constant
from synth.core.output import OutputSet
from synth.core.sizes import size_option

HELP = "write Open MPI's coll_tuned dynamic rules file from compare's choice of algorithm per message size"


def add_parser(sub) -> None:
    DEFAULT_SIZES = constant("synth.pricing.compare", "DEFAULT_SIZES")
    TUNED = [name for name, _, _ in constant("synth.io.coll_tuned", "COLLECTIVES")]
    p = sub.add_parser("tune", help=HELP, description="Price every algorithm of each collective as synth compare "
                       "does, choose per message size the fastest of those Open MPI's coll_tuned has, and write "
                       "coll_tuned's dynamic rules file: a rule per band of sizes of one choice (docs/formats.md). "
                       "Open MPI loads it with --mca coll_tuned_use_dynamic_rules 1 --mca "
                       "coll_tuned_dynamic_rules_filename FILE.")
    p.add_argument("collectives", nargs="+", metavar="COLLECTIVE", help=f"one or more of {', '.join(TUNED)} (a "
                   "collective listed once; the file holds the rules of each)")
    p.add_argument("--network", metavar="SPEC", required=True, help="the network whose terminals are the ranks (rank i "
                   "on terminal i), e.g. torus:2,4 or xgft:2:4,2:1,4; the rules are for a communicator of its ranks")
    p.add_argument("--bytes", type=size_option("--bytes", many=True), metavar="SIZES",
                   help="message sizes priced: one size, A..B (powers of two times A) or A,B,...; a size is bytes, or "
                        f"with a unit B, KiB, MiB, GiB, TiB (default {DEFAULT_SIZES}); a band's rule starts at its "
                        "first size, the first band's at 0")
    p.add_argument("--router", metavar="NAME", help="routes the transfers take (default: the family's)")
    p.add_argument("--ranks-per-node", type=integer("--ranks-per-node", 1, 64), default=1, metavar="Q",
                   help="ranks per terminal (node): P = Q x terminals, rank r on terminal r // Q (default 1)")
    add_cost_model(p)
    p.add_argument("--out", metavar="FILE", required=True, help="the rules file (written whole, or not at all)")
    p.set_defaults(func=cmd_tune)


def cmd_tune(args) -> int:
    from synth.core.errors import SynthError

    repeated = sorted({c for c in args.collectives if args.collectives.count(c) > 1})
    if repeated:
        raise SynthError(f"collective {repeated[0]} given twice")
    refuse_unknown_family(args.network)
    with OutputSet() as outputs:
        target = outputs.reserve(args.out)
        from synth.app.tune import rules_text, tune
        from synth.core.sizes import size_text
        from synth.core.text import figure
        from synth.topology import parse_topology

        from synth.app.tune import check_collective

        for name in args.collectives:  # every one refused or taken before any is priced
            check_collective(name)
        topology = parse_topology(args.network)
        q = args.ranks_per_node
        node = node_costs(args, q)
        tuned = [tune(name, topology, args.bytes, args.router, args.alpha, args.bandwidth * 1e9, node, q)
                 for name in args.collectives]
        priced = tuned[0].sizes
        sizes = f"; {len(priced)} sizes from {size_text(priced[0])} to {size_text(priced[-1])}"
        made_by = (f"synth tune {' '.join(args.collectives)} --network {topology.spec}"
                   f"{'' if q == 1 else f' --ranks-per-node {q}'}{sizes}; {tuned[0].router} routes; alpha "
                   f"{args.alpha * 1e6:g} us, {args.bandwidth:g} Gb/s" + (f"; {node.text()}" if not node.free else ""))
        text = rules_text(tuned, made_by)
        print(f"network   {topology.label()}: {tuned[0].ranks} ranks{f' ({q} per terminal)' if q > 1 else ''}; "
              f"{tuned[0].router} routes; alpha {args.alpha * 1e6:g} us, {args.bandwidth:g} Gb/s"
              + (f"; {node.text()}" if not node.free else ""))
        for t in tuned:
            print(band_table(t, size_text, figure))
        target.write(text)
        print(f"wrote {args.out}: coll_tuned dynamic rules for {', '.join(args.collectives)} (communicator size "
              f"{tuned[0].ranks}); load with --mca coll_tuned_use_dynamic_rules 1 --mca "
              f"coll_tuned_dynamic_rules_filename {args.out}")
    return 0


def band_table(tuned, size_text, figure) -> str:
    from synth.io.coll_tuned import DECISION_BYTES, collective_id, open_mpi_name

    name = open_mpi_name(tuned.collective)
    lines = [f"{tuned.collective} (coll_tuned {name}, collective id {collective_id(tuned.collective)}; its message "
             f"size {DECISION_BYTES[tuned.collective]})",
             f"  {'rule from':>10}  {'sizes priced':>17}  {'algorithm':<30}  {'model time (us)':>19}"]
    for i, band in enumerate(tuned.bands):
        start = "0" if i == 0 else size_text(band.first)
        priced = size_text(band.first) if band.first == band.last else f"{size_text(band.first)}..{size_text(band.last)}"
        chosen = f"{band.algorithm.number} {band.algorithm.name} ({'/'.join(band.labels)})"
        first, last = (figure(t * 1e6) for t in band.times)
        times = first if band.first == band.last else f"{first}..{last}"
        lines.append(f"  {start:>10}  {priced:>17}  {chosen:<30}  {times:>19}")
    lines += [f"  left out  {line}" for line in tuned.left_out]
    return "\n".join(lines)
