"""Benchmark: minimal routing, loads and cut bounds of a whole all-to-all on direct networks, the
LP bound of one random permutation, and the time to build each network (issue 10's targets).

    python tests/bench/bench_direct.py [--spec SPEC ...] [--baseline-phases K]

For every spec (default: Slim Fly q = 13 with p = 9, 3042 terminals, and the 1056-node dragonfly
(4,8,4)) it prints, side by side:
  * baseline: phase by phase, route the phase, one bincount per phase, bounds per phase (the plain
    way), on the first K phases, extrapolated to the whole exchange;
  * synth: `route_phases` over every phase of a2a-lin (N shifts, N^2 flows), batched keys, one
    bincount per batch, cut bounds per batch, spread over the worker processes;
  * peak memory (this process and its workers) and the network build time (and at the end the
    slowest builds among every bundled instance);
  * the LP bound of one random permutation: synth's (load spreading, then column generation,
    until ceil(lambda*) is certain), the same run to the exact lambda*, and the baseline, the arc
    formulation aggregated by destination router (commodities x channels variables) in one HiGHS
    call through scipy's linprog, stopped at --lp-baseline-limit seconds.
Targets: the whole exchange within 20 s and 2 GiB; the LP bound within 30 s; building under 1 s.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix, hstack

from synth.measure.contention_bounds import cut_bounds_batch
from synth.measure.lp_bound import lp_bound
from synth.routing.minimal import minimal
from synth.topology import parse_topology
from synth.traffic.patterns import parse_pattern
from synth.workflow import route_phases

DEFAULT_SPECS = ("slimfly:13:p=9", "dragonfly:4,8,4")


def peak_rss_mib() -> tuple[float, float]:
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)


def baseline(topology, workload, phases) -> np.ndarray:
    network = topology.network()
    peaks = []
    for p in phases:
        flows = workload.flows(int(p))
        paths = minimal(topology, flows.src, flows.dst)
        peaks.append(int(np.bincount(paths.channels, minlength=network.num_channels).max()))
        cut_bounds_batch(topology, np.zeros(len(flows.src), dtype=np.int64), flows.src, flows.dst, 1)
    return np.asarray(peaks)


def arc_lp(network, src, dst, time_limit: float) -> tuple[float | None, str]:
    """The baseline LP: minimize lambda over flows f[k, c] per destination router k and router
    channel c, conserved at every router but k, sum over k of f[k, c] <= bandwidth(c) lambda."""
    n = network.num_terminals
    routers = network.num_nodes - n
    injection = np.flatnonzero(network.channel_src < n)
    to_router = np.empty(n, dtype=np.int64)
    to_router[network.channel_src[injection]] = network.channel_dst[injection] - n
    links = np.flatnonzero((network.channel_src >= n) & (network.channel_dst >= n))
    tail, head = network.channel_src[links] - n, network.channel_dst[links] - n
    a, b = to_router[src], to_router[dst]
    demand = np.zeros((routers, routers))
    np.add.at(demand, (a[a != b], b[a != b]), 1.0)
    targets = np.flatnonzero(demand.sum(axis=0) > 0)
    k, c = len(targets), len(links)
    i, j = np.repeat(np.arange(k), c), np.tile(np.arange(c), k)
    col = i * c + j
    flow = coo_matrix((np.concatenate([np.ones(k * c), -np.ones(k * c)]),
                       (np.concatenate([i * routers + tail[j], i * routers + head[j]]), np.concatenate([col, col]))),
                      shape=(k * routers, k * c)).tocsr()
    keep = np.ones(k * routers, dtype=bool)
    keep[np.arange(k) * routers + targets] = False
    a_eq = hstack([flow[keep], coo_matrix((int(keep.sum()), 1))]).tocsr()
    capacity = coo_matrix((np.ones(k * c), (j, col)), shape=(c, k * c))
    a_ub = hstack([capacity, coo_matrix(-network.channel_bandwidth[links][:, None].astype(float))]).tocsr()
    cost = np.zeros(k * c + 1)
    cost[-1] = 1.0
    result = linprog(cost, A_ub=a_ub, b_ub=np.zeros(c), A_eq=a_eq, b_eq=demand[:, targets].T.ravel()[keep],
                     method="highs", options={"time_limit": time_limit})
    return (float(result.x[-1]) if result.status == 0 else None), f"{k * c:,} variables"


def bench(spec: str, baseline_phases: int, lp_baseline_limit: float) -> None:
    started = time.perf_counter()
    topology = parse_topology(spec)
    network = topology.network()
    built = time.perf_counter() - started
    workload = parse_pattern("a2a-lin", network.num_terminals, topology.hierarchy())
    n = workload.num_ranks
    phases = np.arange(workload.num_phases)
    print(f"{topology.label()}: {n} terminals, {network.num_switches} routers, {network.num_channels} channels; "
          f"built in {built:.3f} s; a2a-lin: {len(phases)} phases, {n * len(phases):,} flows; minimal routing")

    sample = phases[:baseline_phases]
    started = time.perf_counter()
    base_peaks = baseline(topology, workload, sample)
    base = time.perf_counter() - started
    started = time.perf_counter()
    evaluations = [r.evaluation for r in route_phases(topology, network, workload, phases, "minimal",
                                                      keep_routes=False)]
    whole = time.perf_counter() - started
    peaks = np.array([e.max_contention for e in evaluations])
    assert np.array_equal(peaks[: len(sample)], base_peaks), "baseline and synth disagree"
    flows = n * len(phases)
    print(f"  baseline, per phase  {len(sample):>6} phases  {base:8.2f} s  -> whole exchange ~{base * len(phases) / len(sample):8.1f} s")
    print(f"  synth, route_phases  {len(phases):>6} phases  {whole:8.2f} s  ({flows / whole / 1e6:.1f} M flows/s); "
          f"max contention {peaks.max()}, bound up to {max(e.lower_bound for e in evaluations)}")
    own, children = peak_rss_mib()
    print(f"  peak memory: {own:.0f} MiB (this process), {children:.0f} MiB (largest worker)")

    permutation = parse_pattern("randperm:1", n, None).flows(0)
    started = time.perf_counter()
    result = lp_bound(network, permutation.src, permutation.dst)
    print(f"  LP bound of randperm:1, synth: {result.bound} ({result.status}: lambda* in [{result.lower:.4f}, "
          f"{result.upper:.4f}], {result.steps} spreading steps, {result.rounds} pricing rounds) in "
          f"{time.perf_counter() - started:.2f} s")
    started = time.perf_counter()
    exact = lp_bound(network, permutation.src, permutation.dst, exact=True)
    assert exact.bound == result.bound, "the exact LP disagrees"
    print(f"  LP bound of randperm:1, synth exact: lambda* = {exact.value:.6f} ({exact.status}, {exact.steps} steps, "
          f"{exact.rounds} rounds) in {time.perf_counter() - started:.2f} s")
    started = time.perf_counter()
    value, size = arc_lp(network, permutation.src, permutation.dst, lp_baseline_limit)
    took = time.perf_counter() - started
    if value is None:
        print(f"  LP bound of randperm:1, baseline arc LP ({size}): not solved within {lp_baseline_limit:g} s")
    else:
        assert abs(value - exact.value) < 1e-6 * max(1.0, value), "the baseline LP disagrees"
        print(f"  LP bound of randperm:1, baseline arc LP ({size}): lambda* = {value:.6f} in {took:.2f} s")


def build_every_instance() -> None:
    """The build time of every bundled instance's network (the target: under 1 s each)."""
    from pathlib import Path

    from synth.io.instance import load_instance

    times = []
    for path in sorted(Path(__file__).resolve().parents[2].joinpath("instances").rglob("*.toml")):
        if path.parent.name == "sweeps":  # sweep files (synth sweep), not instances
            continue
        started = time.perf_counter()
        parse_topology(load_instance(str(path)).spec).network()
        times.append((time.perf_counter() - started, path.relative_to(path.parents[1]).as_posix()))
    times.sort(reverse=True)
    print(f"Building every bundled instance's network: {len(times)} instances, the slowest "
          + ", ".join(f"{name} {took:.3f} s" for took, name in times[:3]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", action="append", help=f"network spec (repeatable; default {', '.join(DEFAULT_SPECS)})")
    parser.add_argument("--baseline-phases", type=int, default=64)
    parser.add_argument("--lp-baseline-limit", type=float, default=300.0, help="seconds for the baseline LP")
    parser.add_argument("--no-instances", action="store_true", help="skip timing the build of every bundled instance")
    args = parser.parse_args()
    specs = args.spec or DEFAULT_SPECS
    if len(specs) == 1:
        bench(specs[0], args.baseline_phases, args.lp_baseline_limit)
    else:  # one process per spec: peak memory is per process, and the baseline LP's would hide the next spec's
        for spec in specs:
            subprocess.run([sys.executable, __file__, "--spec", spec, "--baseline-phases", str(args.baseline_phases),
                            "--lp-baseline-limit", str(args.lp_baseline_limit), "--no-instances"], check=True)
    if not args.no_instances:
        build_every_instance()


if __name__ == "__main__":
    main()
