"""All-to-all(v) synthesis at 4,096 ranks (issue 43 item 2): uniform and skewed matrices, next to
the multicommodity-flow LP's bound in bytes, TuNA and the best generated algorithm, in the same run.

Every case runs `synth synthesize` in a process of its own under /usr/bin/time (wall clock and peak
memory of the whole command, start-up included), then prices its front and every schedule it tried
(Part.alternatives) from the API in this process, at the matrix's own sizes (alpha 1 us, 100 Gb/s).

    python tests/bench/bench_alltoall_scale.py                       # the default cases
    python tests/bench/bench_alltoall_scale.py --cases "torus:64,64 uniform 1MiB"
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

CASES = [
    ("torus:64,64", "uniform", "1MiB,256MiB"),
    ("torus:64,64", "random:64KiB:1", None),
    ("torus:64,64", "moe:64KiB:16:32:1", None),
    ("torus:64,64", "zipf:64MiB:0.5:1", None),
    ("dragonfly:6,12,6", "uniform", "1MiB,256MiB"),
    ("dragonfly:6,12,6", "moe:64KiB:16:32:1", None),
]
ALPHA, BANDWIDTH = 1e-6, 100e9


def run_case(spec: str, sizes: str, message: str | None, time_limit: float) -> dict:
    """One case in this process: the plan, the front and every alternative priced."""
    from synth.pricing.compare import REFERENCE_BYTES
    from synth.synthesis.plan import plan_synthesis
    from synth.synthesis.portfolio import choose, synthesize_parts
    from synth.topology import parse_topology

    collective = "alltoall" if sizes == "uniform" else "alltoallv"
    start = time.perf_counter()
    plan = plan_synthesis(collective, parse_topology(spec), sizes=None if sizes == "uniform" else sizes,
                          time_limit=time_limit)
    parts = synthesize_parts(plan, time_limit)
    seconds = time.perf_counter() - start
    part = next(p for p in parts if p.alternatives)
    rows = []
    for size in [part.fixed_bytes] if part.fixed_bytes else [_bytes(m) for m in message.split(",")]:
        # the alternatives were priced at the matrix's sizes, or (uniform) at REFERENCE_BYTES a block
        scale = 1.0 if part.fixed_bytes else size / plan.graph.ranks / REFERENCE_BYTES
        points, total = choose(parts, size, ALPHA, BANDWIDTH)
        used = [(p, k) for p, k in zip(parts, points) if k >= 0]
        chosen = used[0][0].front[used[0][1]] if used else None
        priced = {label: mapped.time(ALPHA, BANDWIDTH, scale) for label, mapped in part.alternatives}
        tuna = min((t, label) for label, t in priced.items() if label.startswith(("tuna", "radix")))
        generated = [(t, label) for label, t in priced.items() if label.endswith("(generated)")]
        rows.append({"spec": spec, "sizes": sizes, "ranks": plan.graph.ranks, "seconds": seconds, "message": size,
                     "synthesized": total, "label": chosen.method if chosen else "",
                     "steps": chosen.steps if chosen else 0, "tuna": tuna,
                     "generated": min(generated) if generated else None,
                     "bound": plan.time_bound.seconds(size, ALPHA, BANDWIDTH),
                     "flow": plan.exchange.lp, "flow_why": plan.exchange.lp_why})
    return rows


def _bytes(text: str) -> int:
    from synth.core.sizes import parse_size

    return parse_size(text, "size")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", help="cases separated by ';', each 'NETWORK SIZES [MESSAGE]'")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--case", nargs=3, help=argparse.SUPPRESS)  # one case, in the child process
    args = parser.parse_args()
    if args.case:
        spec, sizes, message = args.case
        print(json.dumps(run_case(spec, sizes, None if message == "-" else message, args.time_limit)))
        return 0
    cases = CASES if not args.cases else [tuple((c.split() + [None])[:3]) for c in args.cases.split(";")]
    print("| network | matrix | ranks | wall time | peak memory | message | steps | synthesized (us) | TuNA (us) | "
          "best generated (us) | bound (us) | gap | flow bound |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for spec, sizes, message in cases:
        command = ["/usr/bin/time", "-f", "%e %M", sys.executable, __file__, "--time-limit", str(args.time_limit),
                   "--case", spec, sizes, message or "-"]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"| {spec} | {sizes} | | failed: {done.stderr.strip().splitlines()[-1]} |", flush=True)
            continue
        wall, peak = done.stderr.strip().splitlines()[-1].split()
        for row in json.loads(done.stdout.strip().splitlines()[-1]):
            generated = "none" if row["generated"] is None else f"{row['generated'][0] * 1e6:.6g} ({row['generated'][1]})"
            gap = row["synthesized"] / row["bound"] - 1
            print(f"| {spec} | {sizes} | {row['ranks']} | {float(wall):.0f} s | {int(peak) / 1e6:.2f} GB | "
                  f"{row['message']:,} B | {row['steps']} | {row['synthesized'] * 1e6:.6g} ({row['label']}) | "
                  f"{row['tuna'][0] * 1e6:.6g} ({row['tuna'][1]}) | {generated} | {row['bound'] * 1e6:.6g} | "
                  f"{100 * gap:.1f}% | {row['flow']:.6g} ({row['flow_why']}) |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
