"""Switch tables and the OpenSM round trip through the CLI, next to OpenSM computing its own tables.

    python tests/bench/bench_tables.py [--size 1024] [--phases 1]

Routes the first `--phases` OPT phases of the Table 3.1 XGFT with the layered router, then times
`synth tables` (colouring, LID plan, rendering and writing every file) and `synth opensm-check
--engines none` (ibsim, OpenSM's file engine, dump_fts read-back, every flow walked), each as a
whole command; the baseline is OpenSM's ftree engine computing its own tables for the same fabric
in the same process (OpenSM's run only, no read-back). Peak memory is this process's.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import resource
import sys
import tempfile
import time
from pathlib import Path

from synth.core.memory import prefer_plain_pages

prefer_plain_pages()  # as the synth command and the test run do, before numpy (the peak memory below is this process's)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for tests/helpers.py

from helpers import TABLE_3_1  # noqa: E402
from synth.cli import main  # noqa: E402
from synth.opensm.engines import engine_tables  # noqa: E402
from synth.topology import parse_topology  # noqa: E402


def timed(*argv) -> tuple[float, str]:
    out = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = main([str(a) for a in argv])
    seconds = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"synth {' '.join(map(str, argv))} failed:\n{out.getvalue()}")
    return seconds, out.getvalue()


def run(size: int, phases: int) -> None:
    spec = TABLE_3_1[size]
    with tempfile.TemporaryDirectory() as scratch:
        routes, tables = Path(scratch) / "routes.json", Path(scratch) / "tables"
        route_seconds, _ = timed("route", spec, "--traffic", "a2a-opt", "--router", "layered",
                                 "--phase", f"0-{phases - 1}", "--out", routes, "--quiet")
        tables_seconds, summary = timed("tables", routes, "--out", tables)
        check_seconds, checked = timed("opensm-check", tables, "--engines", "none")
        network = parse_topology(spec).network()
        started = time.perf_counter()
        ftree = engine_tables(network, "ftree")
        ftree_seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{size} leaves, {phases} OPT phase(s) routed by layered in {route_seconds:.1f} s")
    print(summary.splitlines()[0])
    print(checked.splitlines()[0])
    print()
    print("| step | seconds |")
    print("|---|---|")
    print(f"| synth tables (whole command) | {tables_seconds:.2f} |")
    print(f"| synth opensm-check --engines none (whole command) | {check_seconds:.2f} |")
    print(f"| baseline: OpenSM ftree computing its tables (OpenSM run {ftree.seconds:.2f} s) + ibsim + read-back | {ftree_seconds:.2f} |")
    print(f"\npeak memory of this process: {peak:.0f} MiB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024, choices=sorted(TABLE_3_1))
    parser.add_argument("--phases", type=int, default=1)
    args = parser.parse_args()
    run(args.size, args.phases)
