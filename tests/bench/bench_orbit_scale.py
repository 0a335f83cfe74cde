"""Orbit synthesis above 4,096 ranks (issue 43 item 1): `synth synthesize` of allgather,
reduce-scatter and allreduce on torus:256,256 (65,536 ranks) and on
dragonfly:8,16,8:arrangement=relative (16,512), xgft:3:32,32,32:1,32,32 (32,768) and slimfly:27 (30,618),
each a whole command in its own process (wall
clock, and peak memory by /usr/bin/time), with the gap to the time bound it prints and the orbit
method it kept, then `synth verify` of the file it wrote.

    python tests/bench/bench_orbit_scale.py                                  # the default cases
    python tests/bench/bench_orbit_scale.py --networks torus:128,128 --collectives allgather
    python tests/bench/bench_orbit_scale.py --collectives allreduce --executor local:2   # pieces on 2 workers

Prints one Markdown row per case (tests/bench/RESULTS.md), with the best generated algorithm of the
same run under the same cost model: on the torus the bucket allreduce (DeSensi24's baseline, the
best generated allreduce on tori) in orbit form, and for an allgather or reduce-scatter its half
(the multi-dimensional ring), priced in this process: synth's generators make every rank's
transfers explicitly (a ring allgather of 65,536 ranks is 4.3 x 10^9 deliveries), which is what
the orbit form avoids (tests/unit/synthesis/test_orbit_synthesis.py checks the bucket's orbit
form against its generator); elsewhere the better of the ring, priced from one of its identical
steps (its explicit form, 68.5 GiB of transfers at 16,512 ranks, is refused), and the best that
`synth compare` prices at that size.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time


def run(argv: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS GB, stdout) of `python -m synth ARGV`, measured by /usr/bin/time."""
    with tempfile.NamedTemporaryFile("r") as figures:
        start = time.perf_counter()
        done = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", figures.name, sys.executable, "-m", "synth", *argv],
                              capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - start
        peak_kb = int(figures.read().split()[-1])
    if done.returncode != 0:
        raise SystemExit(f"synth {' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return seconds, peak_kb / 1e6, done.stdout


def ring_us(topology, name: str, size: int) -> float:
    """The ring (allgather, reduce-scatter; an allreduce: the two) priced from one of its steps: all
    its P - 1 steps (2 (P - 1)) are the same transfers, rank r to r + 1 with one block of size / P,
    so their times are equal; one step's schedule is routed by the family's router and priced by
    the cost model (its explicit form, P (P - 1) transfers, is what synth's generator would make)."""
    import numpy as np

    from synth.collectives.schedule import ScheduleBuilder
    from synth.pricing.schedule_cost import map_schedule

    p = topology.network().num_terminals
    block = -(-size // p)
    one = ScheduleBuilder("allgather", "ring", topology.spec, p, p, np.full(p, block, dtype=np.int64))
    ranks = np.arange(p, dtype=np.int64)
    one.add_step(ranks, (ranks + 1) % p, (np.ones(p, dtype=np.int64), ranks))
    step = map_schedule(one.build(), topology).time(1e-6, 100e9)
    return step * (p - 1) * (2 if name == "allreduce" else 1) * 1e6


def generated_best(network: str, name: str, size: str) -> tuple[str, float] | None:
    """The best generated algorithm `synth compare` prices at this size (its own process), or None
    where it prices none (every generator refused: too large, or not for this network)."""
    code = subprocess.run([sys.executable, "-m", "synth", "compare", name, "--network", network, "--bytes", size],
                          capture_output=True, text=True, check=False)
    if code.returncode == 2 and "no algorithm generates" in code.stderr:
        return None
    _, _, text = run(["compare", name, "--network", network, "--bytes", size])
    row = re.search(r"^\s+\S+\s+([\d,\s]+?)\s+([\d,]+)\s+(\S+)\s*$", text, re.M)
    header = re.search(r"^\s+bytes\s+(.+?)\s+bound\s+best", text, re.M)
    names, values = header.group(1).split(), row.group(1).split()
    best = row.group(3)
    return best, float(values[names.index(best)].replace(",", ""))


def gap(us: float, bound: float) -> str:
    """The gap to the bound; `synth compare`'s table rounds to the microsecond, so a figure within
    half of one of the bound is at it (not below: no schedule is)."""
    if abs(us - bound) < 0.5:
        return "at the bound (to the microsecond)"
    return f"{(us - bound) / bound:.1%}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default="torus:256,256,dragonfly:8,16,8:arrangement=relative,"
                                              "xgft:3:32,32,32:1,32,32,slimfly:27")
    parser.add_argument("--collectives", default="allgather,reduce-scatter,allreduce")
    parser.add_argument("--bytes", default="256MiB")
    parser.add_argument("--executor", metavar="WHERE",
                        help="also run each case with `--executor WHERE` (issue 43 item 4): its wall time and peak "
                             "beside the one-process run's, and whether the files are the same bytes")
    args = parser.parse_args()
    from synth.core.sizes import parse_size
    from synth.pricing.bounds import time_bound
    from synth.pricing.orbit_cost import map_orbit
    from synth.synthesis.orbit_trees import generated_orbit, plan_group
    from synth.synthesis.transfers import transfer_graph
    from synth.topology import parse_topology

    size = parse_size(args.bytes)
    split = f" {args.executor}: synthesize, peak, same file |" if args.executor else ""
    print("| network | collective | ranks | synthesize | peak | method | steps | rounds | time / bound (us) | gap | "
          f"verify | best generated, same run: algorithm, time (us), gap |{split}")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if args.executor else ""))
    for network in re.split(r",(?=[a-z]+:)", args.networks):
        topology = parse_topology(network)
        with tempfile.TemporaryDirectory() as folder:
            for name in args.collectives.split(","):
                out = os.path.join(folder, f"{name}.h5")
                seconds, peak, text = run(["synthesize", name, "--network", network, "--bytes", args.bytes,
                                           "--out", out, "--quiet"])
                ranks = re.search(r"(\d+) ranks;", text).group(1)
                found = re.search(r"size      \S+: (\d+) steps, ([\d.e+]+) us, bound ([\d.e+]+) us, gap ([\d.]+)%; "
                                  r"(orbit (?:digit Bruck|\w+))", text)
                fronts = re.findall(r"front     (\S+): (\d+) steps: ([\d,]+) rounds \((\w+)", text)
                kept = {"orbit levels": "levels", "orbit digit Bruck": "digit"}.get(found.group(5), "balanced")
                rounds = " + ".join(r for _, _, r, how in fronts if how == kept)
                pieces = ""
                if args.executor:  # the same command with its pieces on the executor's workers
                    other = os.path.join(folder, f"{name}-split.h5")
                    split_seconds, split_peak, _ = run(["synthesize", name, "--network", network, "--bytes",
                                                        args.bytes, "--out", other, "--quiet", "--executor",
                                                        args.executor])
                    with open(out, "rb") as a, open(other, "rb") as b:
                        same = a.read() == b.read()
                    pieces = f" {split_seconds:.0f} s, {split_peak:.2f} GB, {'yes' if same else 'NO'} |"
                checked, _, verified = run(["verify", out])
                assert verified.startswith("OK:"), verified
                bound = time_bound(name, topology.network(), 1, 0, [0]).seconds(size, 1e-6, 100e9) * 1e6
                if topology.family == "torus":  # the bucket in orbit form: synth's generators would make it whole
                    graph = transfer_graph(topology, 1, "neighbours")
                    bucket = generated_orbit(topology, graph, plan_group(topology, graph), collective=name)
                    us = map_orbit(bucket, topology).time(1e-6, 100e9, -(-size // bucket.blocks)) * 1e6
                    generated = f"bucket (orbit form, {bucket.steps} steps), {us:,.0f}"
                else:  # the ring, priced from one step, and the best `synth compare` prices (if any)
                    options = [("ring (one step priced, x its steps)", ring_us(topology, name, size))]
                    best = generated_best(network, name, args.bytes)
                    options += [best] if best is not None else []
                    algorithm, us = min(options, key=lambda o: o[1])
                    generated = f"{algorithm}, {us:,.0f}"
                print(f"| {network} | {name} | {int(ranks):,} | {seconds:.0f} s | {peak:.2f} GB | {found.group(5)} | "
                      f"{found.group(1)} | {rounds} | {found.group(2)} / {found.group(3)} | {found.group(4)}% | "
                      f"{checked:.1f} s | {generated}, {gap(us, bound)} |{pieces}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
