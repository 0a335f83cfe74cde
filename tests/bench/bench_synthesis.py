"""Schedule synthesis against the generated algorithms, in the same run (issue 24).

For each network and collective: the synthesis' run time (wall clock, model building included),
the front's status, and at a few message sizes the synthesized schedule's time next to the best
generated algorithm's and the bound of any schedule (synth's cost model, alpha 1 us, 100 Gb/s).

    python tests/bench/bench_synthesis.py                     # the default set
    python tests/bench/bench_synthesis.py --networks torus:8,8 --collectives allgather --time-limit 120
    python tests/bench/bench_synthesis.py --networks "torus:4,4;dragonfly:2,4,2" --ranks-per-node 4
    python tests/bench/bench_synthesis.py --seeds --collectives broadcast --sizes 32B,1MiB,64MiB,256MiB

With Q ranks a node (`--ranks-per-node`; `synth compare` prices one rank a terminal) the generated
algorithms are those of the synthesis' own front, priced the same way.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for helpers (as the tests have it)

import synth  # noqa: E402

DEFAULT_NETWORKS = ["kautz:2,2", "kautz:3,2", "hyperx:4,4", "torus:4,4", "torus:8", "xgft:2:4,4:1,2"]
# issue 24's seed networks (over 64 ranks without translations: the trees, relay and per-layer points)
SEED_NETWORKS = ["kautz:2,2", "kautz:3,2", "kautz:4,2", "kautz:5,2", "kautz:6,2", "kautz:7,2", "kautz:8,2", "2dfc:4,4",
                 "2dfc:8,8", "torus:8,8", "torus:4,4,4", "dragonfly:2,4,2", "dragonfly:3,6,3", "xgft:2:8,8:1,8",
                 "slimfly:5"]
DEFAULT_COLLECTIVES = ["allgather", "reduce-scatter", "allreduce"]
SIZES = "1KiB,1MiB,64MiB"
ROOTED = ("broadcast", "reduce")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default=";".join(DEFAULT_NETWORKS),
                        help="networks separated by ';' (default: %(default)s)")
    parser.add_argument("--collectives", default=",".join(DEFAULT_COLLECTIVES))
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--sizes", default=SIZES)
    parser.add_argument("--seeds", action="store_true", help="the seeds' networks (issue 24's list) instead")
    parser.add_argument("--ranks-per-node", type=int, default=1, metavar="Q")
    args = parser.parse_args()
    networks = SEED_NETWORKS if args.seeds else args.networks.split(";")
    sizes = args.sizes
    print("| network | collective | ranks | synthesis | status | " + " | ".join(
        f"{s}: synthesized / best generated / bound (us)" for s in sizes.split(",")) + " |")
    print("|---|---|---|---|---|" + "---|" * len(sizes.split(",")))
    for spec in networks:
        for collective in args.collectives.split(","):
            if args.ranks_per_node > 1 or collective in ROOTED:  # `synth compare` prices neither
                print(with_ranks_per_node(spec, collective, args.ranks_per_node, sizes, args.time_limit), flush=True)
                continue
            start = time.perf_counter()
            result = synth.compare(collective, spec, sizes=sizes, synthesized=True, time_limit=args.time_limit)
            seconds = time.perf_counter() - start
            labels = [c.label for c in result.candidates]
            if labels[-1] != "synthesized":
                print(f"| {spec} | {collective} | | left out | {result.skipped[-1]} |")
                continue
            synthesized = result.candidates[-1]
            status = _claims(synthesized.plan, synthesized.parts)
            cells = []
            for i in range(len(result.sizes)):
                generated = result.times[i, :-1]
                best = int(generated.argmin())
                cells.append(f"{result.times[i, -1] * 1e6:.4g} / {generated[best] * 1e6:.4g} ({labels[best]}) / "
                             f"{result.bounds[i] * 1e6:.4g}")
            ranks = synthesized.plan.graph.ranks
            print(f"| {spec} | {collective} | {ranks} | {seconds:.1f} s | {status} | " + " | ".join(cells) + " |",
                  flush=True)
    return 0


def with_ranks_per_node(spec: str, collective: str, q: int, sizes: str, time_limit: float) -> str:
    """A table row with Q ranks a node (or a broadcast or reduce): the synthesized schedule's time (every point of its front,
    the generated algorithms' among them) next to the best generated algorithm's and the bound."""
    from synth.synthesis.plan import plan_synthesis
    from synth.synthesis.claims import at_least
    from synth.synthesis.portfolio import choose, synthesize_parts
    from synth.core.sizes import parse_sizes
    from synth.topology import parse_topology

    alpha, bandwidth_bits = 1e-6, 100e9
    start = time.perf_counter()
    plan = plan_synthesis(collective, parse_topology(spec), ranks_per_node=q, time_limit=time_limit)
    parts = synthesize_parts(plan, time_limit)
    seconds = time.perf_counter() - start
    generated = [part for part in parts if part.whole and part.front and part.front[0].method.startswith("generated: ")]
    status = _claims(plan, [part for part in parts if not part.whole])
    cells = []
    for size in parse_sizes(sizes):
        _, total = choose(parts, size, alpha, bandwidth_bits)
        bound = plan.time_bound.seconds(size, alpha, bandwidth_bits)
        if generated:
            k, best = generated[0].best(size, alpha, bandwidth_bits)
            label = generated[0].front[k].method.removeprefix("generated: ")
            cells.append(f"{at_least(total, bound) * 1e6:.4g} / {best * 1e6:.4g} ({label}) / {bound * 1e6:.4g}")
        else:
            cells.append(f"{at_least(total, bound) * 1e6:.4g} / none / {bound * 1e6:.4g}")
    return (f"| {spec}{f', Q = {q}' if q > 1 else ''} | {collective} | {plan.graph.ranks} | {seconds:.1f} s | {status} | "
            + " | ".join(cells) + " |")


def _claims(plan, parts) -> str:
    """What the front's points claim (synth.synthesis.claims: optimal, proven, feasible, timeout)."""
    from synth.synthesis.claims import point_claim

    return "/".join(sorted({point_claim(plan, part, k)[0] for part in parts for k in range(len(part.front))}))


if __name__ == "__main__":
    sys.exit(main())
