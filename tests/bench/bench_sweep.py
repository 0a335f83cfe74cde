"""Benchmark: `synth sweep` (issue 43 item 4) on one local worker, the local pool and a Dask cluster.

    python tests/bench/bench_sweep.py [--workers 2] [--time-limit 5]
                                      [--networks "torus:8,8;kautz:4,2;dragonfly:2,4,2;xgft:2:8,8:1,8"]
                                      [--collectives allgather,reduce-scatter,allreduce] [--bytes 32B..256MiB]

The same sweep (compare with --synthesize over every network and collective) run as `synth sweep FILE.toml --out
FILE.csv --executor WHERE` runs it, through synth.app.sweep in this process: inline (one cell after another, the
baseline), the local pool of W forked workers, and a Dask LocalCluster of W single-threaded workers (its start-up
reported apart), after a one-cell warm-up that loads the solvers. Prints each run's wall time, its speedup over inline, and whether its CSV equals the inline one
byte for byte (every cell's synthesis ends at its solver work, so it must).
"""

from __future__ import annotations

import argparse
import time

from synth.app.sweep import SweepSpec, csv_text, sweep
from synth.core.sizes import parse_sizes
from synth.execute import LocalExecutor


def run(spec: SweepSpec, executor) -> tuple[float, str]:
    start = time.perf_counter()
    with executor:
        results = sweep(spec, executor)
    return time.perf_counter() - start, csv_text(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--time-limit", type=float, default=5.0)
    parser.add_argument("--networks", default="torus:8,8;kautz:4,2;dragonfly:2,4,2;xgft:2:8,8:1,8")
    parser.add_argument("--collectives", default="allgather,reduce-scatter,allreduce")
    parser.add_argument("--bytes", default="32B..256MiB")
    args = parser.parse_args()
    spec = SweepSpec(tuple(args.networks.split(";")), tuple(args.collectives.split(",")),
                     tuple(parse_sizes(args.bytes)), synthesize=True, time_limit=args.time_limit)
    cells = len(spec.cells)
    print(f"{cells} cells ({len(spec.networks)} networks x {len(spec.collectives)} collectives), sizes {args.bytes}, "
          f"synthesis {args.time_limit:g} s of work per cell")
    run(SweepSpec(("torus:2,2",), ("allgather",), (1024,), synthesize=True, time_limit=0.5), LocalExecutor(1))  # imports
    base, reference = run(spec, LocalExecutor(1))
    print(f"{'inline':<16} {base:8.1f} s  1.00x  (the reference CSV: {reference.count(chr(10)) - 1} rows)", flush=True)
    wall, text = run(spec, LocalExecutor(args.workers))
    print(f"{'local ' + str(args.workers):<16} {wall:8.1f} s  {base / wall:.2f}x  same bytes: {text == reference}",
          flush=True)
    try:
        import distributed

        from synth.execute.dask_cluster import DaskExecutor
    except ImportError:
        print("dask: not installed (pip install 'synth[cluster]')")
        return
    started = time.perf_counter()
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        startup = time.perf_counter() - started
        wall, text = run(spec, DaskExecutor(cluster.scheduler_address))
    print(f"{'dask ' + str(args.workers):<16} {wall:8.1f} s  {base / wall:.2f}x  same bytes: {text == reference}  "
          f"(cluster start-up {startup:.1f} s, not counted)", flush=True)


if __name__ == "__main__":
    main()
