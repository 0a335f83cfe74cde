"""Benchmark: generate, verify, route and price collective schedules at scale (issue 12's targets),
next to a naive per-transfer Python loop that prices the same routed schedule in the same run.

    python tests/bench/bench_schedules.py [--case NAME ...]

Cases: Swing bandwidth-optimal allreduce on the 64x64 torus (4096 ranks, 24 steps; target 5 s),
TuNA alltoallv with P = 4096, r = 64 and with the target's P = 16384, r = 128 (533 M block sends,
generated as runs; on the 64x64 torus with 4 ranks per router, and on a 16384-terminal dragonfly;
target 10 s), Bruck alltoall on 4096 ranks (target 10 s); block sizes uniform in [0, 1 KiB] for TuNA. Every case runs in a child process so that its
peak memory (ru_maxrss, read before the baseline runs) is its own (target: under 2 GiB). The baseline loops over the transfers in
Python, adding each one's bytes to the channels of its path (the same minimal paths), and takes
each step's busiest port and channel: its time under the cost model must equal synth's "price" (which it is compared
with; generating and verifying have no baseline). The compiled kernels (numba) are loaded from
their cache: run the test suite or one `synth schedule` first on a fresh checkout.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

CASES = {
    "swing-64x64": ("allreduce", "swing-b", "torus:64,64", {}),
    "tuna-4096-r64": ("alltoallv", "tuna", "torus:64,64", {"radix": 64, "sizes": "random:1024:1"}),
    "bruck-4096": ("alltoall", "bruck", "torus:64,64", {}),
    "tuna-16384-r128": ("alltoallv", "tuna", "torus:64,64:p=4", {"radix": 128, "sizes": "random:1024:1"}),
    "tuna-16384-r128-dragonfly": ("alltoallv", "tuna", "dragonfly:8,16,8:groups=128", {"radix": 128,
                                                                                        "sizes": "random:1024:1"}),
}


def run_case(name: str) -> dict:
    from synth.core.memory import prefer_plain_pages

    prefer_plain_pages()  # as the synth command does for its own process (before numpy loads)
    from synth.pricing.alphabeta import beta_of
    from synth.pricing.schedule_cost import costs, map_schedule
    from synth.routing.minimal import minimal
    from synth.collectives.algorithms import ALGORITHMS, Request, grid_shape
    from synth.collectives.sizes import parse_sizes
    from synth.collectives.verify import expected_blocks, verify
    from synth.topology import parse_topology

    collective, algorithm_name, spec, extra = CASES[name]
    topology = parse_topology(spec)
    p = topology.network().num_terminals
    algorithm = ALGORITHMS[algorithm_name]
    dims = grid_shape(topology)
    blocks = expected_blocks(collective, p) or algorithm.default_blocks(Request(collective, p, p, 0, spec, 0, dims))
    sizes = parse_sizes(extra["sizes"], p) if "sizes" in extra else None
    request = Request(collective, p, blocks, -(-(1 << 20) // blocks), spec, 0, dims, extra.get("radix"), sizes=sizes)
    times = {}
    start = time.perf_counter()
    schedule = algorithm.generate(request)
    times["generate"] = time.perf_counter() - start
    start = time.perf_counter()
    report = verify(schedule)
    times["verify"] = time.perf_counter() - start
    start = time.perf_counter()
    paths = minimal(topology, schedule.src, schedule.dst)
    times["route"] = time.perf_counter() - start
    start = time.perf_counter()
    c = costs(map_schedule(schedule, topology, paths=paths), p)
    times["price"] = time.perf_counter() - start
    synth_total = sum(times.values())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024  # synth's, before the baseline's lists
    # the naive baseline: the same minimal paths, priced transfer by transfer in Python
    start = time.perf_counter()
    network = topology.network()
    bandwidth = network.channel_bandwidth.tolist()
    size = schedule.transfer_bytes().tolist()
    offsets, channels = paths.offsets.tolist(), paths.channels.tolist()
    total = 0.0
    hop = 1 if network.nodes_are_routers else 0  # where a message starts: its first (router) channel
    for step in range(schedule.num_steps):
        load: dict[int, float] = {}
        starts: dict[int, int] = {}
        for t in range(int(schedule.step_ptr[step]), int(schedule.step_ptr[step + 1])):
            port = channels[offsets[t] + hop]
            starts[port] = starts.get(port, 0) + 1
            for channel in channels[offsets[t]:offsets[t + 1]]:
                load[channel] = load.get(channel, 0.0) + size[t] / bandwidth[channel]
        total += c.alpha * max(starts.values(), default=0) + beta_of(100e9) * max(load.values(), default=0.0)
    naive = time.perf_counter() - start
    if schedule.size_exchange is None:
        assert abs(total - c.time) <= 1e-9 * c.time, (total, c.time)
    return {"case": name, "ranks": p, "steps": schedule.num_steps, "block_sends": int(schedule.num_block_sends),
            "verified": report.ok, **{k: round(v, 2) for k, v in times.items()}, "synth": round(synth_total, 2),
            "naive pricing loop": round(naive, 2), "peak MiB": peak,
            "alpha-beta us": round(c.time * 1e6, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_case(args.child)))
        return
    for name in args.case or list(CASES):
        out = subprocess.run([sys.executable, __file__, "--child", name], capture_output=True, text=True, check=True)
        print(json.loads(out.stdout.strip().splitlines()[-1]), flush=True)


if __name__ == "__main__":
    main()
