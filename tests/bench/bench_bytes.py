"""Benchmark: the bytes objective of the path-selection router (`--router paths --load-unit bytes`)
on flows of unequal sizes, against the same router minimizing messages and the fixed routers, all
measured in bytes over bandwidth, with the bounds of the phase in bytes.

    python tests/bench/bench_bytes.py [--spec SPEC ...] [--perms K] [--time-limit S]

Per spec (default: dragonfly (3,6,3) and Slim Fly q = 7) and per phase (K random permutations,
and the family's adversarial pattern: the dragonfly group shift, Slim Fly's ch.7 worst case), the
message sizes are drawn two ways: uniform in [0, 1 MiB] (as in Fan24's alltoallv evaluation) and
skewed (one message in four 16 times the others). Columns: the phase's bound in bytes (the cut
bounds and the LP bound over all paths, synth.measure.lp_bound with weights), then the busiest
channel's bytes under minimal, valiant, ugal, paths minimizing messages, and paths minimizing
bytes, with the time the latter took in this process.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from synth.measure.contention_bounds import cut_bounds_batch
from synth.measure.loads import bytes_over_bandwidth, weighted_counts
from synth.measure.lp_bound import lp_bound
from synth.routing.minimal import minimal
from synth.routing.path_selection import route_phase_paths
from synth.routing.paths_options import PathsOptions
from synth.routing.ugal import ugal
from synth.routing.valiant import valiant
from synth.topology import parse_topology
from synth.traffic.patterns import parse_pattern

DEFAULT_SPECS = ("dragonfly:3,6,3", "slimfly:7")
MIB = 1 << 20


def phases(topology, perms: int):
    n = topology.network().num_terminals
    names = [f"randperm:{k}" for k in range(1, perms + 1)]
    names.append(f"shift:{n // (int(topology.router_groups().max()) + 1)}" if topology.family == "dragonfly" else "worst-case")
    for name in names:
        workload = parse_pattern(name, n, topology.hierarchy(), topology=topology)
        _, src, dst, _ = workload.batch(np.array([0]))
        yield name, src, dst


def sizes(kind: str, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        return rng.integers(0, MIB + 1, count)
    return rng.choice([4096, 4096, 4096, 16 * 4096], count)


def byte_peak(network, paths, size) -> int:
    loads = weighted_counts(paths.channels, np.repeat(size, paths.lengths()), network.num_channels)
    return int(bytes_over_bandwidth(loads, network.channel_bandwidth).max(initial=0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", action="append", help="network spec (repeatable)")
    parser.add_argument("--perms", type=int, default=2)
    parser.add_argument("--time-limit", type=float, default=None, help="paths budget per phase (default 20 s)")
    args = parser.parse_args()
    header = (f"{'phase':<16} {'sizes':<8} {'bound':>9} {'minimal':>9} {'valiant':>9} {'ugal':>9} {'paths msg':>9} "
              f"{'paths B':>9} {'gap':>6} {'s':>6}")
    for spec in args.spec or DEFAULT_SPECS:
        topology = parse_topology(spec)
        network = topology.network()
        print(f"\n{topology.label()}: {network.num_terminals} terminals")
        print(header)
        wins = total = 0
        for name, src, dst in phases(topology, args.perms):
            for seed, kind in enumerate(("uniform", "skewed")):
                size = sizes(kind, len(src), seed)
                cut = int(cut_bounds_batch(topology, np.zeros(len(src), dtype=np.int64), src, dst, 1, size).max())
                bound = max(cut, lp_bound(network, src, dst, weights=size).bound)
                fixed = [byte_peak(network, router(topology, src, dst), size) for router in (minimal, valiant, ugal)]
                by_messages, _ = route_phase_paths(topology, src, dst, PathsOptions(time_limit=args.time_limit))
                start = time.perf_counter()
                by_bytes, report = route_phase_paths(topology, src, dst, PathsOptions(objective="bytes", time_limit=args.time_limit),
                                                     weights=size)
                seconds = time.perf_counter() - start
                achieved, messages_peak = byte_peak(network, by_bytes, size), byte_peak(network, by_messages, size)
                total += 1
                wins += achieved <= min(fixed + [messages_peak])
                print(f"{name:<16} {kind:<8} {bound:>9} {fixed[0]:>9} {fixed[1]:>9} {fixed[2]:>9} {messages_peak:>9} "
                      f"{achieved:>9} {(achieved / bound - 1) * 100 if bound else 0:>5.1f}% {seconds:>6.1f}")
        print(f"paths minimizing bytes at or below every other routing in {wins} of {total} phases")


if __name__ == "__main__":
    main()
