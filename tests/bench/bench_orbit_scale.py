"""Orbit synthesis at 65,536 ranks (issue 43 item 1): `synth synthesize` of allgather,
reduce-scatter and allreduce on torus:256,256, each a whole command in its own process (wall
clock, and peak memory by /usr/bin/time), with the
gap to the time bound it prints, then `synth verify` of the file it wrote.

    python tests/bench/bench_orbit_scale.py                                  # the default cases
    python tests/bench/bench_orbit_scale.py --network torus:128,128 --collectives allgather

Prints one Markdown row per case (tests/bench/RESULTS.md), with, priced in this process by the same
cost model, the generated bucket allreduce (DeSensi24's baseline, the best generated allreduce on
tori) in orbit form, and for an allgather or reduce-scatter its half (the multi-dimensional ring):
synth's generators make every rank's transfers explicitly (a ring allgather of 65,536 ranks is
4.3 x 10^9 deliveries), which is what the orbit form avoids; tests/unit/synthesis/
test_orbit_synthesis.py checks the bucket's orbit form against its generator.
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", default="torus:256,256")
    parser.add_argument("--collectives", default="allgather,reduce-scatter,allreduce")
    parser.add_argument("--bytes", default="256MiB")
    args = parser.parse_args()
    from synth.core.sizes import parse_size
    from synth.pricing.bounds import time_bound
    from synth.pricing.orbit_cost import map_orbit
    from synth.synthesis.orbit_trees import generated_orbit, plan_group
    from synth.synthesis.transfers import transfer_graph
    from synth.topology import parse_topology

    topology = parse_topology(args.network)
    graph = transfer_graph(topology, 1, "neighbours")
    group = plan_group(topology, graph)
    size = parse_size(args.bytes)
    print("| network | collective | ranks | synthesize | peak | steps | rounds | time / bound (us) | gap | verify "
          "| bucket (generated, orbit form): steps, time (us), gap |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name in args.collectives.split(","):
            out = os.path.join(folder, f"{name}.h5")
            seconds, peak, text = run(["synthesize", name, "--network", args.network, "--bytes", args.bytes,
                                       "--out", out, "--quiet"])
            ranks = re.search(r"(\d+) ranks;", text).group(1)
            fronts = re.findall(r"front     (\S+): (\d+) steps: ([\d,]+) rounds", text)
            found = re.search(r"size      \S+: (\d+) steps, ([\d.e+]+) us, bound ([\d.e+]+) us, gap ([\d.]+)%", text)
            checked, _, verified = run(["verify", out])
            assert verified.startswith("OK:"), verified
            rounds = " + ".join(r for _, _, r in fronts)
            bucket = generated_orbit(topology, graph, group, collective=name)
            bucket_us = map_orbit(bucket, topology).time(1e-6, 100e9, -(-size // bucket.blocks)) * 1e6
            bound = time_bound(name, topology.network(), 1, 0, [0]).seconds(size, 1e-6, 100e9) * 1e6
            print(f"| {args.network} | {name} | {int(ranks):,} | {seconds:.0f} s | {peak:.2f} GB | {found.group(1)} | "
                  f"{rounds} | {found.group(2)} / {found.group(3)} | {found.group(4)}% | {checked:.1f} s | "
                  f"{bucket.steps}, {bucket_us:.0f}, {(bucket_us - bound) / bound:.1%} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
