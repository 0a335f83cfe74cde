"""Benchmark: the path-selection router (`--router paths`) and, on dragonflies, the layered router
(`--router layered`) against minimal, Valiant, UGAL and OpenSM's engines on issue 11's networks,
phase by phase, with the LP bound of every phase.

    python tests/bench/bench_paths.py [--spec SPEC ...] [--perms K] [--candidates SET] [--engines LIST]

For every spec (default: dragonfly (3,6,3), 342 nodes; dragonfly (4,8,4), 1056 nodes; Slim Fly
q = 7; Slim Fly q = 13 with p = 9) and every phase of K random permutations (randperm:1..K) and the
adversarial patterns (Slim Fly: Prisacari20 ch.7's worst case, every phase; dragonfly: the group shift,
every terminal to the same terminal of the next group, shift:a*p), it prints side by side the
maximum contention of minimal, valiant, ugal and paths, the LP bound over all paths
(synth.measure.lp_bound, ceil(lambda*)), and the time paths took for the phase in this process
(candidates, both LPs, starts, descent, solver). Targets (issue 11): paths never above the others;
at the LP bound's ceiling in at least 90% of the phases; a 1056-node dragonfly phase within 30 s
and a Slim Fly q = 13 phase within 60 s. The layered router's time is per phase as well.

OpenSM's engines (default minhop, updn, dfsssp, nue, lash; `--engines none` skips them) route the
same fabric once on ibsim (their tables do not depend on the workload); every phase's flows are
walked through the tables read back, and the columns show their maximum contention ('-' where an
engine did not deliver every flow). Their lane counts and run times are printed per spec.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from synth.routing.lane_budget import lanes_for
from synth.measure.lp_bound import lp_bound
from synth.io.routes_file import MAX_VLS
from synth.opensm.engines import engine_tables
from synth.routing.layered_dragonfly import DragonflyLayeredOptions, route_phase_layered
from synth.routing.minimal import minimal
from synth.routing.path_selection import route_phase_paths
from synth.routing.paths_options import PathsOptions
from synth.routing.ugal import ugal
from synth.routing.valiant import valiant
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


def engines_for(network, names: list[str]):
    """{engine: EngineTables} for the engines that ran on this fabric (a failure is printed)."""
    tables = {}
    for engine in names:
        try:
            tables[engine] = engine_tables(network, engine)
        except Exception as exc:  # (a missing tool or an engine that gives up: reported, not fatal)
            print(f"  {engine}: not run ({str(exc).splitlines()[0]})", flush=True)
    return tables


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", action="append")
    parser.add_argument("--perms", type=int, default=5)
    parser.add_argument("--candidates", default="all")
    parser.add_argument("--engines", default="minhop,updn,dfsssp,nue,lash")
    args = parser.parse_args()
    options = PathsOptions(candidates=args.candidates)
    engine_names = [] if args.engines == "none" else args.engines.split(",")
    for spec in args.spec or DEFAULT_SPECS:
        topology = parse_topology(spec)
        network = topology.network()
        engines = engines_for(network, engine_names)
        for engine, tables in engines.items():
            print(f"  {spec} {engine}: {tables.seconds:.2f} s in OpenSM, lanes {tables.lanes}", flush=True)
        layered = topology.family == "dragonfly"
        print(f"{'network':18} {'phase':14} {'LP':>3} {'minimal':>7} {'valiant':>7} {'ugal':>5} "
              + "".join(f"{e:>7} " for e in engines)
              + f"{'paths':>5} {'status':>8} {'seconds':>8}" + (f" {'layered':>7} {'status':>8} {'seconds':>8}" if layered else "")
              + "  how (paths)", flush=True)
        rows, routed = [], {"paths": [], "layered": []}
        for name, src, dst in workloads(topology, args.perms):
            others = [peak(network, router(topology, src, dst)) for router in (minimal, valiant, ugal)]
            engine_peaks = []
            for tables in engines.values():
                contention, unrouted = tables.phase_contention(network, src, dst, np.zeros(len(src), dtype=np.int64), 1)
                engine_peaks.append(None if unrouted else int(contention[0]))
            bound = lp_bound(network, src, dst).bound
            floor = int(np.bincount(np.concatenate([src[src != dst], network.num_terminals + dst[src != dst]])).max())
            bound = max(bound, floor)
            start = time.perf_counter()
            paths, report = route_phase_paths(topology, src, dst, options)
            seconds = time.perf_counter() - start
            achieved = peak(network, paths)
            routed["paths"] += paths.as_lists()
            status = "optimal" if report.proven_by else "gap"
            line = (f"{spec:18} {name:14} {bound:>3} {others[0]:>7} {others[1]:>7} {others[2]:>5} "
                    + "".join(f"{'-' if p is None else p:>7} " for p in engine_peaks)
                    + f"{achieved:>5} {status:>8} {seconds:>8.2f}")
            best_other = min([*others, *(p for p in engine_peaks if p is not None)])
            if layered:
                start = time.perf_counter()
                layered_paths, layered_report = route_phase_layered(topology, src, dst, DragonflyLayeredOptions())
                layered_seconds = time.perf_counter() - start
                layered_achieved = peak(network, layered_paths)
                routed["layered"] += layered_paths.as_lists()
                layered_status = "optimal" if layered_report.proven_by else "gap"
                line += f" {layered_achieved:>7} {layered_status:>8} {layered_seconds:>8.2f}"
            else:
                layered_achieved, layered_seconds = None, None
            rows.append((achieved, bound, best_other, seconds, layered_achieved, layered_seconds))
            print(f"{line}  {report.progress_text()}", flush=True)
        achieved, bound, best_other, seconds, layered_achieved, layered_seconds = (np.array(c) for c in zip(*rows))
        print(f"{spec}: {len(rows)} phases; paths at the LP bound's ceiling in {int((achieved <= bound).sum())} "
              f"({100 * (achieved <= bound).mean():.0f}%), never above the best other router: "
              f"{bool((achieved <= best_other).all())}; slowest phase {seconds.max():.2f} s, mean {seconds.mean():.2f} s")
        for router, lists in routed.items():  # one set of tables for all the phases: one lane assignment
            if lists:
                start = time.perf_counter()
                try:
                    lanes, _ = lanes_for(lists, network.num_channels, MAX_VLS)
                    text = f"{int(lanes.max(initial=-1)) + 1}"
                except Exception as exc:  # (more than IB's 15 lanes: the message says how many)
                    text = str(exc).splitlines()[0]
                print(f"{spec}: lanes for {router}'s {len(lists):,} paths of all {len(rows)} phases: {text} "
                      f"(the layered heuristic, an upper bound; {time.perf_counter() - start:.1f} s)"
                      + (f"; dfsssp (every pair of LIDs): {engines['dfsssp'].lanes}" if "dfsssp" in engines else ""))
        if layered:
            at_bound = layered_achieved.astype(int) <= bound
            print(f"{spec}: layered at the LP bound's ceiling in {int(at_bound.sum())} ({100 * at_bound.mean():.0f}%), "
                  f"above paths in {int((layered_achieved.astype(int) > achieved).sum())}, below paths in "
                  f"{int((layered_achieved.astype(int) < achieved).sum())}; slowest phase "
                  f"{np.max(layered_seconds.astype(float)):.2f} s, mean {np.mean(layered_seconds.astype(float)):.2f} s")


if __name__ == "__main__":
    main()
