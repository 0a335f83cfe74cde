"""The seeds' simulated results (Pham26 ch.3 and ch.4, PhamNK: SimGrid 3.28) rerun on SimGrid with
synth's schedules and paths (issue 25): prints every ratio next to the seed's, for
docs/simulation.md and tests/bench/RESULTS.md.

    python tests/bench/bench_simulate_seeds.py [--model SMPI] [--discipline async]

The seeds ran MPI programs (non-blocking isend/irecv per step) on SimGrid, whose MPI runs use the
SMPI network model: the defaults here. Parameters as the seeds give them: 1 us start-up (the
route latency), 100 Gb/s links on the 2dfc; K(16,2) at 12.5 GB/s per link against the 16x17
dragonfly (the 2dfc 16 x 17, Pham26 Fig. 2.5c) at 6.45 GB/s per link. "M" is the block per rank
(allgather) or per destination (alltoall) in the seeds' simulations (errata).
"""

from __future__ import annotations

import argparse
import sys
import time

from synth.app.schedule import make_schedule, plan_schedule
from synth.app.simulate import SimulationOptions, simulate_schedule
from synth.topology import parse_topology

KB, MB = 1 << 10, 1 << 20


def simulated(collective, algorithm, spec, message_bytes, bandwidth_gbps, options, root=0, peer=None, blocks=None):
    topology = parse_topology(spec)
    plan = plan_schedule(collective, algorithm, topology, message_bytes=message_bytes, root=root, peer=peer, blocks=blocks)
    schedule = make_schedule(plan)
    run = SimulationOptions(model=options.model, discipline=options.discipline, bandwidth_bits=bandwidth_gbps * 1e9)
    simulation = simulate_schedule(schedule, topology, run)
    return simulation.simulated_total, simulation.model_total


def ratio_line(label, seed, times):
    (slow, slow_model), (fast, fast_model) = times
    print(f"{label:<58} simulated {slow / fast:6.2f}x  alpha-beta {slow_model / fast_model:6.2f}x  seed {seed}")
    sys.stdout.flush()
    return slow / fast


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="SMPI")
    parser.add_argument("--discipline", default="async")
    parser.add_argument("--only", choices=["2dfc", "kautz"], help="one chapter")
    options = parser.parse_args()
    began = time.monotonic()
    print(f"SimGrid model {options.model}, {options.discipline}; ratios are slower / faster")
    if options.only in (None, "2dfc"):
        # Pham26 ch.4 / PhamNK: alltoall, 32 KB per destination, against Bruck
        for m, seeds in ((8, {"do": "8.78x", "multitree": "9.60x", "md": "11.98x"}), (16, {})):
            spec = f"2dfc:{m},{m}"
            ranks = m * m
            bruck = simulated("alltoall", "bruck", spec, 32 * KB * ranks, 100, options)
            got = {name: simulated("alltoall", name, spec, 32 * KB * ranks, 100, options) for name in ("do", "multitree", "md")}
            for name in ("do", "multitree", "md"):
                ratio_line(f"{m}x{m} alltoall 32 KB: {name} over bruck", seeds.get(name, "-"), (bruck, got[name]))
            if m == 16:
                ratio_line("16x16 alltoall 32 KB: md over multitree", "up to 1.58x", (got["multitree"], got["md"]))
                ratio_line("16x16 alltoall 32 KB: md over do", "up to 1.66x", (got["do"], got["md"]))
        spec = "2dfc:16,16"  # allgather: 4 MB per rank, 256 x 4 MB gathered
        md = simulated("allgather", "md", spec, 4 * MB * 256, 100, options)
        ratio_line("16x16 allgather 4 MB: md over bruck", "6.83x",
                   (simulated("allgather", "bruck", spec, 4 * MB * 256, 100, options), md))
        print(f"{'16x16 allgather 4 MB: md simulated':<58} {md[0] * 1e3:.2f} ms (alpha-beta {md[1] * 1e3:.2f} ms)  seed 44.5 ms")
        for m, seed in ((4, "1.38x"), (8, "1.30x"), (16, "1.17x")):
            spec = f"2dfc:{m},{m}"
            ratio_line(f"{m}x{m} allreduce 32 MB: md over do", seed,
                       (simulated("allreduce", "do", spec, 32 * MB, 100, options),
                        simulated("allreduce", "md", spec, 32 * MB, 100, options)))
    if options.only in (None, "kautz"):
        # Pham26 ch.3: K(16,2) at 12.5 GB/s (100 Gb/s) per link against the 16x17 dragonfly at 6.45 GB/s (51.6 Gb/s);
        # DF-C: dimension order on it (message combining in each of its two dimensions)
        kautz, dragonfly, ranks = "kautz:16", "2dfc:17,16", 272
        dfc = simulated("allgather", "df-c", dragonfly, 32 * MB * ranks, 51.6, options)
        for name in ("kautz-c", "kautz-m"):
            ratio_line(f"allgather 32 MB: {name} on K(16,2) over DF-C", "7x",
                       (dfc, simulated("allgather", name, kautz, 32 * MB * ranks, 100, options)))
        dfc = simulated("alltoall", "df-c", dragonfly, 64 * MB * ranks, 51.6, options)
        for name in ("kautz-c", "kautz-m"):
            ratio_line(f"alltoall 64 MB: {name} on K(16,2) over DF-C", "11x",
                       (dfc, simulated("alltoall", name, kautz, 64 * MB * ranks, 100, options)))
        for size in (2 * MB, 500 * MB):
            single = simulated("p2p", "single-path", kautz, size, 100, options, root=0, peer=100)
            multi = simulated("p2p", "kautz-mp", kautz, size, 100, options, root=0, peer=100)
            ratio_line(f"p2p {size // MB} MB: kautz-mp over single-path, 0 -> 100", "6.1x-10.3x", (single, multi))
    print(f"[{time.monotonic() - began:.0f} s]")


if __name__ == "__main__":
    main()
