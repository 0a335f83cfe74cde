"""SimGrid simulation at scale (issue 25): the Swing-B allreduce of the 64 x 64 torus (4,096 ranks, 24
steps, 393,216 transfers) and single phases of 4,096 flows, with wall time and peak memory of the
worker; the design chosen (one driver actor starting a step's transfers, bulk-synchronous) next to
one actor per rank (what the asynchronous discipline needs), in the same run.

    python tests/bench/bench_simulate.py [--quick]   # --quick: leave out the per-rank actors at 4,096 ranks (4 min)
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time

from synth.app.schedule import make_schedule, plan_schedule
from synth.app.simulate import SimulationOptions, simulate_routes, simulate_schedule
from synth.io.routes_file import read_routes_columnar
from synth.topology import parse_topology


def worker_peak_mb() -> float:
    """The largest resident set of any finished child so far (the worker processes; the runs go from
    small to large, so each line's figure is its own run's), MB."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def timed(label: str, run) -> None:
    began = time.monotonic()
    simulation = run()
    wall = time.monotonic() - began
    print(f"{label:<64} {wall:7.1f} s  worker peak {worker_peak_mb():6.0f} MB  simulated {simulation.simulated_total * 1e6:9.2f} us"
          f"  alpha-beta {simulation.model_total * 1e6:9.2f} us", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for spec, traffic, router, phase, what in (
                ("xgft:3:16,16,16:1,16,16", "a2a-opt", "dmodk", "1", "4,096-leaf XGFT, a2a-opt phase 1, d-mod-k"),
                ("torus:64,64", "randperm:1", "minimal", "0", "64 x 64 torus, a random permutation, minimal")):
            path = f"{folder}/{router}.h5"
            subprocess.run([sys.executable, "-m", "synth", "route", spec, "--traffic", traffic, "--router", router,
                            "--phase", phase, "--out", path, "--quiet"], check=True, stdout=subprocess.DEVNULL)
            doc = read_routes_columnar(path)
            net = parse_topology(spec)
            for model in ("CM02", "LV08"):
                timed(f"4,096 flows: {what} ({model})", lambda: simulate_routes(doc, net, SimulationOptions(model=model)))

    topology = parse_topology("torus:64,64")
    began = time.monotonic()
    schedule = make_schedule(plan_schedule("allreduce", "swing-b", topology, message_bytes=64 << 20))
    print(f"Swing-B allreduce, torus 64 x 64, 64 MiB: {schedule.num_transfers:,} transfers in {schedule.num_steps} steps "
          f"(generated and verified in {time.monotonic() - began:.1f} s)", flush=True)
    cm02 = dict(model="CM02")
    timed("  bsp, one driver actor (CM02)", lambda: simulate_schedule(schedule, topology, SimulationOptions(**cm02)))
    timed("  bsp, one driver actor (LV08)", lambda: simulate_schedule(schedule, topology, SimulationOptions()))
    if not args.quick:
        timed("  bsp, one actor per rank (CM02; baseline)",
              lambda: simulate_schedule(schedule, topology, SimulationOptions(engine="actors", **cm02)))
        timed("  async, one actor per rank (CM02)",
              lambda: simulate_schedule(schedule, topology, SimulationOptions(discipline="async", **cm02)))


if __name__ == "__main__":
    main()
