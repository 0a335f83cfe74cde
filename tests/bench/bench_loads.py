"""Benchmark: channel loads of d-mod-k routing for every OPT phase on the 8192-leaf Table 3.1 XGFT.

    python tests/bench/bench_loads.py [--spec SPEC] [--baseline-phases K]

Prints flows per second and peak memory for
  * baseline: phase by phase, hop matrix per phase, one bincount per phase (the plain way);
  * synth, 1 worker and all workers: batched (phase, channel) keys with one bincount per batch,
    as `synth route` and `synth report` use it.
The issue's target: at least 10 M flows/s with peak memory under 2 GiB on a 2-core machine.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from synth.measure.loads import channel_loads
from synth.core.parallel import default_workers
from synth.routing.oblivious import dmodk
from synth.topology import parse_topology
from synth.traffic.patterns import parse_pattern
from synth.workflow import exchange_loads


def baseline(xgft, workload, phases):
    peaks = []
    for p in phases:
        flows = workload.flows(int(p))
        choice = dmodk(xgft, flows.src, flows.dst, None, None)
        loads = channel_loads(xgft.hop_matrix(flows.src, flows.dst, choice), xgft.num_channels)
        peaks.append(int(loads.max()))
    return np.asarray(peaks)


def peak_rss_mib() -> tuple[float, float]:
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="xgft:5:8,8,8,8,2:1,8,8,8,4")
    parser.add_argument("--baseline-phases", type=int, default=256)
    args = parser.parse_args()
    xgft = parse_topology(args.spec)
    workload = parse_pattern("a2a-opt", xgft.num_leaves, xgft.hierarchy())
    n = workload.num_ranks
    all_phases = np.arange(workload.num_phases)
    sample = all_phases[: args.baseline_phases]
    print(f"{xgft.label()}: {n} ranks, {workload.num_phases} OPT phases, {n * workload.num_phases:,} flows; d-mod-k")

    rows = []
    start = time.perf_counter()
    base_peaks = baseline(xgft, workload, sample)
    elapsed = time.perf_counter() - start
    rows.append(("baseline, per phase", len(sample), elapsed))

    start = time.perf_counter()
    single = exchange_loads(xgft, workload, sample, "dmodk", workers=1)
    rows.append(("synth, 1 worker", len(sample), time.perf_counter() - start))
    assert np.array_equal(single.max_contention, base_peaks), "batched loads differ from the baseline"

    workers = default_workers()
    start = time.perf_counter()
    full = exchange_loads(xgft, workload, all_phases, "dmodk", workers=workers)
    rows.append((f"synth, {workers} workers", len(all_phases), time.perf_counter() - start))
    assert np.array_equal(full.max_contention[: len(sample)], base_peaks)

    base_rate = rows[0][1] * n / rows[0][2]
    print(f"{'method':<22} {'phases':>7} {'flows':>12} {'seconds':>8} {'M flows/s':>10} {'vs baseline':>11}")
    for name, phases, seconds in rows:
        rate = phases * n / seconds
        print(f"{name:<22} {phases:>7} {phases * n:>12,} {seconds:>8.2f} {rate / 1e6:>10.1f} {rate / base_rate:>10.1f}x")
    self_mib, child_mib = peak_rss_mib()
    print(f"max contention over the exchange: {int(full.max_contention.max())}; "
          f"total messages on channels: {int(full.total_messages.sum()):,}")
    print(f"peak memory: main process {self_mib:.0f} MiB, largest worker {child_mib:.0f} MiB, "
          f"together at most {self_mib + workers * child_mib:.0f} MiB")


if __name__ == "__main__":
    main()
