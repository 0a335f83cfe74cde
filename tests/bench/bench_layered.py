"""Benchmark: the layered router against the seed's method and the monolithic model.

    python tests/bench/bench_layered.py [--sizes 16,32,64,128,256,512] [--phases 8]
                                        [--glpk-cap 60] [--mono-cap 60] [--skip seed,mono]

On the same OPT phases of the Table 3.1 XGFTs ([Prisacari20]), one process, side by side:
  synth     layered router, prime-factor splitting, strong conditions, CP-SAT (the default);
  seed      layered router with one model per WT node (the seed's per-layer ILP, strong
            conditions) solved by glpsol with the seed's options --intopt --binarize --fpump,
            every glpsol call capped at --glpk-cap seconds (a capped call counts as the cap);
  mono      one model per phase over all paths, CP-SAT, capped at --mono-cap seconds.
Prints per size the median and maximum seconds per phase, the achieved contention against the
lower bound, and the ratios of the seed's method and of the monolithic model to synth.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import numpy as np

from synth.measure.contention_bounds import lower_bound
from synth.measure.loads import channel_loads
from synth.core.errors import SynthError
from synth.routing.xgft_layers import LayeredOptions, route_phase
from synth.routing.monolithic import route_phase_monolithic
from synth.topology import parse_topology
from synth.traffic.patterns import parse_pattern

TABLE_3_1 = {
    16: "xgft:2:8,2:1,4", 32: "xgft:3:4,4,2:1,4,2", 64: "xgft:3:8,4,2:1,8,2", 128: "xgft:3:8,8,2:1,8,4",
    256: "xgft:4:8,4,4,2:1,8,4,2", 512: "xgft:4:8,8,4,2:1,8,8,2", 1024: "xgft:4:16,8,4,2:1,16,8,2",
    2048: "xgft:5:8,8,4,4,2:1,8,8,4,2", 4096: "xgft:5:8,8,8,4,2:1,8,8,8,2", 8192: "xgft:5:8,8,8,8,2:1,8,8,8,4",
}


def run_method(name, xgft, flows, args):
    start = time.perf_counter()
    try:
        if name == "synth":
            choice, report = route_phase(xgft, flows.src, flows.dst, LayeredOptions())
        elif name == "seed":
            options = LayeredOptions(construction="ilp", solver="glpk", time_limit=args.glpk_cap)
            choice, report = route_phase(xgft, flows.src, flows.dst, options)
        else:
            choice, report = route_phase_monolithic(xgft, flows.src, flows.dst, LayeredOptions(time_limit=args.mono_cap))
    except SynthError as exc:
        return None, None, str(exc)
    seconds = time.perf_counter() - start
    achieved = int(channel_loads(xgft.hop_matrix(flows.src, flows.dst, choice), xgft.num_channels).max())
    return seconds, achieved, f"{report.timeouts} capped" if report.timeouts else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16,32,64,128,256,512")
    parser.add_argument("--phases", type=int, default=8)
    parser.add_argument("--glpk-cap", type=float, default=60.0)
    parser.add_argument("--mono-cap", type=float, default=60.0)
    parser.add_argument("--skip", default="")
    args = parser.parse_args()
    methods = [m for m in ("synth", "seed", "mono") if m not in args.skip.split(",")]
    print(f"{'leaves':>6} {'method':<6} {'phases':>6} {'median s':>9} {'max s':>8} {'at bound':>9} {'ratio':>7}  notes")
    for n in [int(v) for v in args.sizes.split(",")]:
        xgft = parse_topology(TABLE_3_1[n])
        workload = parse_pattern("a2a-opt", n, xgft.hierarchy())
        phases = np.unique(np.linspace(1, n - 1, min(args.phases, n - 1)).astype(int))
        results = {m: [] for m in methods}
        notes = {m: set() for m in methods}
        for p in phases:
            flows = workload.flows(int(p))
            bound = lower_bound(xgft, flows.src, flows.dst)
            for m in methods:
                seconds, achieved, note = run_method(m, xgft, flows, args)
                if seconds is None:
                    notes[m].add(note.split(";")[0])
                    continue
                results[m].append((seconds, achieved == bound))
                if note:
                    notes[m].add(note)
        base = statistics.median(s for s, _ in results["synth"]) if results.get("synth") else None
        for m in methods:
            if not results[m]:
                print(f"{n:>6} {m:<6} {'-':>6}  {'; '.join(sorted(notes[m]))[:90]}")
                continue
            times = [s for s, _ in results[m]]
            median = statistics.median(times)
            ratio = f"{median / base:.1f}x" if base else "-"
            print(f"{n:>6} {m:<6} {len(times):>6} {median:>9.2f} {max(times):>8.2f} "
                  f"{sum(ok for _, ok in results[m]):>5}/{len(times):<3} {ratio:>7}  {'; '.join(sorted(notes[m]))}", flush=True)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{'':>6} peak memory of the process so far: {peak:.0f} MiB", flush=True)


if __name__ == "__main__":
    main()
