"""Benchmark: a large schedule written and read as JSON and in the compact HDF5 form, in one run.

    python tests/bench/bench_schedule_files.py [--network torus:64,64] [--algorithm swing-b]

The schedule is generated once (not timed); then each form is written (what `synth schedule --out`
does) and read back (what `synth verify` reads before its replay), timed, with its size on disk.
The two reads must give the same arrays.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", default="torus:64,64")
    parser.add_argument("--algorithm", default="swing-b")
    parser.add_argument("--collective", default="allreduce")
    args = parser.parse_args()
    from synth.core.memory import prefer_plain_pages

    prefer_plain_pages()
    import numpy as np

    import synth
    from synth.io.schedule_file import read_schedule, write_schedule
    from synth.io.schedule_hdf5 import write_schedule_hdf5

    schedule = synth.schedule(args.collective, args.network, args.algorithm)
    print(f"{args.collective} by {args.algorithm} on {args.network}: {schedule.num_transfers:,} transfers, "
          f"{schedule.num_block_sends:,} block sends")
    print(f"{'form':6} {'write s':>8} {'read s':>8} {'MB':>9}")
    read = {}
    with tempfile.TemporaryDirectory() as tmp:
        for form in ("json", "hdf5"):
            path = os.path.join(tmp, f"s.{form}")
            start = time.perf_counter()
            if form == "json":
                with open(path, "w") as handle:
                    write_schedule(handle, schedule)
            else:
                write_schedule_hdf5(path, schedule)
            wrote = time.perf_counter() - start
            start = time.perf_counter()
            read[form] = read_schedule(path)
            took = time.perf_counter() - start
            print(f"{form:6} {wrote:>8.2f} {took:>8.2f} {os.path.getsize(path) / 1e6:>9.1f}", flush=True)
    a, b = read["json"], read["hdf5"]
    assert all(np.array_equal(getattr(a, k), getattr(b, k)) for k in ("step_ptr", "src", "dst", "op", "block_ptr",
                                                                       "block_ids", "block_bytes"))


if __name__ == "__main__":
    main()
