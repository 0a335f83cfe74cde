"""Benchmark: the path-selection router (`--router paths`) against minimal, Valiant and UGAL on issue
11's networks, phase by phase, with the LP bound of every phase.

    python tests/bench/bench_paths.py [--spec SPEC ...] [--perms K] [--candidates SET]

For every spec (default: dragonfly (3,6,3), 342 nodes; dragonfly (4,8,4), 1056 nodes; Slim Fly
q = 7; Slim Fly q = 13 with p = 9) and every phase of K random permutations (randperm:1..K) and the
adversarial patterns (Slim Fly: 003 ch.7's worst case, every phase; dragonfly: the group shift,
every terminal to the same terminal of the next group, shift:a*p), it prints side by side the
maximum contention of minimal, valiant, ugal and paths, the LP bound over all paths
(synth.cost.lp_bound, ceil(lambda*)), and the time paths took for the phase in this process
(candidates, both LPs, starts, descent, solver). Targets (issue 11): paths never above the others;
at the LP bound's ceiling in at least 90% of the phases; a 1056-node dragonfly phase within 30 s
and a Slim Fly q = 13 phase within 60 s.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from synth.cost.lp_bound import lp_bound
from synth.route.minimal import minimal
from synth.route.path_selection import PathsOptions, route_phase_paths
from synth.route.ugal import ugal
from synth.route.valiant import valiant
from synth.topology import parse_topology
from synth.traffic.patterns import parse_pattern

DEFAULT_SPECS = ("dragonfly:3,6,3", "dragonfly:4,8,4", "slimfly:7", "slimfly:13:p=9")


def workloads(topology, perms: int):
    n = topology.network().num_terminals
    names = [f"randperm:{k}" for k in range(1, perms + 1)]
    if topology.family == "dragonfly":
        names.append(f"shift:{n // (int(topology.router_groups().max()) + 1)}")  # terminals per group
    else:
        names.append("worst-case")
    for name in names:
        workload = parse_pattern(name, n, topology.hierarchy(), topology=topology)
        for phase in range(workload.num_phases):
            _, src, dst, _ = workload.batch(np.array([phase]))
            yield f"{name}#{phase}", src, dst


def peak(network, paths) -> int:
    return int(np.bincount(paths.channels, minlength=network.num_channels).max(initial=0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", action="append")
    parser.add_argument("--perms", type=int, default=5)
    parser.add_argument("--candidates", default="all")
    args = parser.parse_args()
    options = PathsOptions(candidates=args.candidates)
    print(f"{'network':18} {'phase':14} {'LP':>3} {'minimal':>7} {'valiant':>7} {'ugal':>5} {'paths':>5} "
          f"{'status':>8} {'seconds':>8}  how")
    for spec in args.spec or DEFAULT_SPECS:
        topology = parse_topology(spec)
        network = topology.network()
        rows = []
        for name, src, dst in workloads(topology, args.perms):
            others = [peak(network, router(topology, src, dst)) for router in (minimal, valiant, ugal)]
            bound = lp_bound(network, src, dst).bound
            floor = int(np.bincount(np.concatenate([src[src != dst], network.num_terminals + dst[src != dst]])).max())
            bound = max(bound, floor)
            start = time.perf_counter()
            paths, report = route_phase_paths(topology, src, dst, options)
            seconds = time.perf_counter() - start
            achieved = peak(network, paths)
            status = "optimal" if report.proven_by else "gap"
            rows.append((achieved, bound, min(others), seconds))
            print(f"{spec:18} {name:14} {bound:>3} {others[0]:>7} {others[1]:>7} {others[2]:>5} {achieved:>5} "
                  f"{status:>8} {seconds:>8.2f}  {report.progress_text()}", flush=True)
        achieved, bound, best_other, seconds = (np.array(c) for c in zip(*rows))
        print(f"{spec}: {len(rows)} phases; paths at the LP bound's ceiling in {int((achieved <= bound).sum())} "
              f"({100 * (achieved <= bound).mean():.0f}%), never above the best other router: "
              f"{bool((achieved <= best_other).all())}; slowest phase {seconds.max():.2f} s, mean {seconds.mean():.2f} s")


if __name__ == "__main__":
    main()
