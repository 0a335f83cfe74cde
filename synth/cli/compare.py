"""`synth compare COLLECTIVE --network SPEC [--bytes 32B..512MiB] [--out FIGURE.png]`: every algorithm
that generates the collective on the network, priced over message sizes by the alpha-beta model on
routed schedules (synth.pricing.compare), with the best per size and the sizes where the best
changes (crossovers), as a table and a figure."""

from __future__ import annotations

from synth.core.text import figure
from synth.cli.options import (MAX_TIME_LIMIT, SIZES_HELP, add_cost_model, integer, node_costs, positive,
                                refuse_unknown_family)
from synth.core.errors import SynthError
from typing import TYPE_CHECKING

from synth.core.declared import calls, constant
from synth.core.output import OutputSet
from synth.core.sizes import size_option

if TYPE_CHECKING:
    from synth.pricing.compare import Comparison


DEFAULT_NOTE = " (the family's default)"


def add_parser(sub) -> None:
    MODELS, WORK_PER_SECOND = constant("synth.simulation.runner", "MODELS"), constant("synth.solve.budget", "WORK_PER_SECOND")
    DEFAULT_SIZES = constant("synth.pricing.compare", "DEFAULT_SIZES")
    COLLECTIVES = [c.name for c in calls("synth.collectives.schedule", "COLLECTIVES", "Collective", ("name",))]
    p = sub.add_parser("compare", help="price every algorithm of a collective on a network over message sizes")
    p.add_argument("collective", metavar="COLLECTIVE", help=f"any collective synth schedule generates: {', '.join(COLLECTIVES)}")
    p.add_argument("--network", metavar="SPEC", required=True, help="the network whose terminals are the ranks (rank i "
                   "on terminal i), e.g. torus:8,8 or xgft:3:8,4,2:1,8,2")
    p.add_argument("--bytes", type=size_option("--bytes", many=True), metavar="SIZES",
                   help="message sizes: one size, A..B (powers of two times A) or A,B,...; a size is bytes, or with a "
                        f"unit B, KiB, MiB, GiB, TiB (4096, 64KiB; default {DEFAULT_SIZES}; an alltoallv's: a rank's mean "
                        "send, its --sizes matrix scaled to each in proportion, default the matrix as given)")
    p.add_argument("--sizes", metavar="SPEC", help=SIZES_HELP)
    p.add_argument("--router", metavar="NAME", help="routes the transfers take (default: the family's, dmodk on fat "
                   "trees, minimal on direct networks)")
    p.add_argument("--root", type=integer("--root"), default=0, metavar="R",
                   help="the root of a rooted collective (broadcast, reduce, scatter, gather; p2p: the source; default 0)")
    p.add_argument("--peer", type=integer("--peer"), metavar="Q", help="p2p: the destination rank")
    p.add_argument("--ranks-per-node", type=integer("--ranks-per-node", 1, 64), default=1, metavar="Q",
                   help="ranks per terminal (node): P = Q x terminals, rank r on terminal r // Q (default 1)")
    add_cost_model(p)
    p.add_argument("--out", metavar="FIGURE.png", help="the figure: time over message size, a line per algorithm")
    p.add_argument("--synthesize", action="store_true", help="also synthesize a schedule (as synth synthesize does: "
                   "up to 64 ranks, 4,096 on tori and HyperX, an all-to-all 1,024) and list it next to the algorithms, "
                   "with its bound (the cut bound; an all-to-all's flow bound) in the bound")
    p.add_argument("--time-limit", type=positive("--time-limit", MAX_TIME_LIMIT), metavar="S",
                   help="with --synthesize: wall-clock seconds for the synthesis' programs, as synth synthesize "
                   "--time-limit spends them (CP-SAT: one unit of deterministic work per "
                   f"{1 / WORK_PER_SECOND:g} s; default 60)")
    p.add_argument("--reproducible", action="store_true", help="with --synthesize: "
                   + constant("synth.solve.budget", "REPRODUCIBLE_HELP"))
    p.add_argument("--simulate", action="store_true", help="also replay every algorithm on SimGrid at every size "
                   "(bulk-synchronous, each alone on the idle network; route latency --alpha, links of --bandwidth): "
                   "a table of simulated times, and where SimGrid ranks the algorithms otherwise than the model, by how "
                   "much")
    p.add_argument("--sim-model", choices=MODELS, metavar="MODEL", help=f"SimGrid's network model for --simulate: "
                   f"{', '.join(MODELS)} (default LV08, SimGrid's: latency x 13.01, bandwidth x 0.97; CM02: plain max-min "
                   "sharing; docs/simulation.md)")
    p.set_defaults(func=cmd_compare)


def cmd_compare(args) -> int:
    if args.sim_model is not None and not args.simulate:
        raise SynthError("--sim-model applies to --simulate: add --simulate")
    if args.time_limit is not None and not args.synthesize:
        raise SynthError("--time-limit applies to --synthesize (the synthesis' programs): add --synthesize")
    if args.reproducible and not args.synthesize:
        raise SynthError("--reproducible applies to --synthesize (the synthesis' programs): add --synthesize")
    refuse_unknown_family(args.network)  # before the families are imported
    from synth.pricing.bounds import with_strongest_bound
    from synth.pricing.compare import compare
    from synth.simulation.runner import DEFAULT_MODEL_NOTE
    from synth.topology import parse_topology

    topology = parse_topology(args.network)
    sizes = args.bytes
    node, q = node_costs(args, args.ranks_per_node), args.ranks_per_node
    if args.simulate:
        from synth.app.compare import require_simgrid

        require_simgrid(args.sim_model or "LV08")  # one line now, not after every schedule was made
    with OutputSet() as outputs:
        target = outputs.reserve(args.out) if args.out is not None else None
        result = compare(args.collective, topology, sizes, args.router, args.alpha, args.bandwidth * 1e9, node, q,
                         args.root, args.peer, args.sizes)
        result = with_strongest_bound(result, topology, args.alpha, args.bandwidth * 1e9, q, args.root, node=node)
        if args.synthesize:
            from synth.solve.budget import reproducible
            from synth.synthesis.portfolio import compare_with_synthesis

            with reproducible(args.reproducible):
                result = compare_with_synthesis(result, topology, args.alpha, args.bandwidth * 1e9,
                                                60.0 if args.time_limit is None else args.time_limit, node=node)
        if args.simulate:  # last: every column, the synthesized one too, is there
            from synth.app.compare import simulate_comparison
            from synth.render.progress import progress_printer

            result = simulate_comparison(result, topology, args.sim_model or "LV08", args.alpha, args.bandwidth * 1e9,
                                         progress_printer(True), node)
        ranks = topology.network().num_terminals * q
        print(f"network   {topology.label()}: {ranks} ranks{f' ({q} per terminal)' if q > 1 else ''}; {result.router} "
              f"routes{DEFAULT_NOTE if args.router is None else ''}; alpha {args.alpha * 1e6:g} us, {args.bandwidth:g} Gb/s" + (f"; {node.text()}" if not node.free else ""))
        if result.matrix is not None:
            print(matrix_line(result, args.sizes))
        print(table_text(result))
        if result.simulated is not None:
            print(simulated_text(result))
            if args.sim_model is None:
                print(DEFAULT_MODEL_NOTE.replace("--model", "--sim-model"))
        for line in result.skipped:
            print(f"left out  {line}")
        if target is not None:
            from synth.report.plots import collective_figure, png

            target.write(png(collective_figure(result, topology.label())))
            print(f"wrote {args.out}")
    return 0


def matrix_line(result: Comparison, spec: str) -> str:
    """An alltoallv's blocks: the matrix, its message size m and the scaling rule (synth.pricing.compare)."""
    from synth.core.sizes import size_text

    matrix, m = result.matrix, result.candidates[0].matrix_bytes
    rule = (f"; at a size n every block is scaled by n / {size_text(m)} (in proportion, not rounded)"
            if any(n != m for n in result.sizes) else "")
    return f"blocks    {spec}: {int(matrix.min()):,}-{int(matrix.max()):,} B, a rank sends {size_text(m)} on average{rule}"


def table_text(result: Comparison) -> str:
    from synth.core.sizes import size_text

    found, best = result.candidates, result.best
    width = max(10, *(len(c.label) for c in found))
    lines = [f"{'bytes':>10}  " + "  ".join(f"{c.label:>{width}}" for c in found) + f"  {'bound':>{width}}  best"]
    for i, n in enumerate(result.sizes):
        lines.append(f"{size_text(n):>10}  " + "  ".join(f"{figure(t * 1e6):>{width}}" for t in result.times[i])
                     + f"  {figure(result.bounds[i] * 1e6):>{width}}  {best[i]}")
    lines.append("times in us: synth's cost model on the routed schedules (a port starts one message per alpha; the "
                 "busiest channel's bytes per step); bound: no schedule costs less under the same model")
    lines.append("crossovers: " + result.crossover_text())
    return "\n".join(lines)


def simulated_text(result: Comparison) -> str:
    """The simulated times as a second table (the model's columns, an empty one where a candidate was
    not simulated), the simulated crossovers and where SimGrid ranks the algorithms otherwise."""
    from synth.core.sizes import size_text

    found, simulated, best = result.candidates, result.simulated, result.simulated_best
    width = max(10, *(len(c.label) for c in found))
    lines = [f"simulated on SimGrid ({simulated.model}), bulk-synchronous: each algorithm alone on the idle network, "
             "a step starts when the previous one has ended everywhere",
             f"{'bytes':>10}  " + "  ".join(f"{c.label:>{width}}" for c in found) + "  best"]
    for i, n in enumerate(result.sizes):
        lines.append(f"{size_text(n):>10}  " + "  ".join(f"{figure(t * 1e6):>{width}}" for t in simulated.times[i]) + f"  {found[best[i]].label}")
    lines.append("times in us: SimGrid's; a route's latency is alpha, a link of bandwidth 1 carries --bandwidth")
    lines += [f"not simulated: {note}" for note in simulated.notes]
    lines.append("simulated crossovers: " + result.simulated_crossover_text())
    ranking = result.ranking_lines()
    lines.append("ranking: " + ranking[0])
    lines += [f"  {line}" for line in ranking[1:]]
    return "\n".join(lines)
