"""SimGrid simulation at scale (issue 25): the Swing-B allreduce of the 64 x 64 torus (4,096 ranks, 24
steps, 393,216 transfers) and single phases of 4,096 flows, with wall time and peak memory of the
worker; the design chosen (one driver actor starting a step's transfers, bulk-synchronous) next to
one actor per rank (what the asynchronous discipline needs), in the same run; each on synth's SimGrid
(PyPI's 4.1 where the set-up built it) next to Debian's 3.32 as the baseline.

    python tests/bench/bench_simulate.py [--quick]   # --quick: leave out the per-rank actors at 4,096 ranks
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

from synth.app.schedule import make_schedule, plan_schedule
from synth.app.simulate import SimulationOptions, simulate_routes, simulate_schedule
from synth.io.routes_file import read_routes_columnar
from synth.simulation import simgrid_module
from synth.topology import parse_topology


def versions() -> list[str | None]:
    """SYNTH_SIMGRID values: synth's own choice (None), then Debian's 3.32 when that is another module."""
    os.environ.pop(simgrid_module.ENVIRONMENT, None)
    debian = simgrid_module._module_file(simgrid_module.DEBIAN_DIR)
    return [None] + ([str(debian)] if debian is not None and simgrid_module.locate() != debian else [])


def timed(label: str, run, where: str | None = None) -> None:
    """`run()` on the SimGrid module at `where` (None: synth's choice), its wall time and the worker's peak memory."""
    os.environ.pop(simgrid_module.ENVIRONMENT, None)
    if where is not None:
        os.environ[simgrid_module.ENVIRONMENT] = where
    began = time.monotonic()
    simulation = run()
    wall = time.monotonic() - began
    version = simulation.platform["simgrid"]
    print(f"{label:<58} SimGrid {version:<7} {wall:7.1f} s  worker peak {simulation.peak_bytes / 2**20:6.0f} MB  "
          f"simulated {simulation.simulated_total * 1e6:9.2f} us  alpha-beta {simulation.model_total * 1e6:9.2f} us",
          flush=True)


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
                for where in versions():
                    timed(f"4,096 flows: {what} ({model})",
                          lambda: simulate_routes(doc, net, SimulationOptions(model=model)), where)

    topology = parse_topology("torus:64,64")
    began = time.monotonic()
    schedule = make_schedule(plan_schedule("allreduce", "swing-b", topology, message_bytes=64 << 20))
    print(f"Swing-B allreduce, torus 64 x 64, 64 MiB: {schedule.num_transfers:,} transfers in {schedule.num_steps} steps "
          f"(generated and verified in {time.monotonic() - began:.1f} s)", flush=True)
    cm02 = dict(model="CM02")
    for where in versions():
        timed("  bsp, one driver actor (CM02)", lambda: simulate_schedule(schedule, topology, SimulationOptions(**cm02)),
              where)
        timed("  bsp, one driver actor (LV08)", lambda: simulate_schedule(schedule, topology, SimulationOptions()), where)
    if not args.quick:
        timed("  bsp, one actor per rank (CM02; baseline)",
              lambda: simulate_schedule(schedule, topology, SimulationOptions(engine="actors", **cm02)))
        timed("  async, one actor per rank (CM02)",
              lambda: simulate_schedule(schedule, topology, SimulationOptions(discipline="async", **cm02)))


if __name__ == "__main__":
    main()
