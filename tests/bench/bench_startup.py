"""Benchmark: start-up, the CPU time (user + sys) of a whole `python -m synth` process that only
parses or refuses (issue 41, item 1: at most 0.3 s on the 2-core development machine).

    python tests/bench/bench_startup.py [--runs N] [--markdown]

Each row is the median over N runs (default 7, after one warm-up) of the child process's own CPU
time (resource.getrusage(RUSAGE_CHILDREN) before and after it), next to `python -c pass` measured
in the same run and the same way, so that a busy machine shifts both. The rows: `synth --version`,
`synth --help`, every subcommand's `--help`, and one user error per subcommand (a missing input
file, an option that is refused before any work, an unknown network family), each checked to exit
2 with one line. Run from a source tree: the tree this file is in goes first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# One user error per subcommand: what a user gets wrong first, refused in one line with exit 2.
USER_ERRORS = {
    "topology": ["topology", "nosuch:4"],
    "route": ["route", "nope.toml", "--traffic", "a2a-lin", "--router", "dmodk"],
    "bounds": ["bounds", "nope.toml", "--traffic", "a2a-lin"],
    "tables": ["tables", "nope.json", "--out", "{tmp}/tables"],
    "opensm-check": ["opensm-check", "{tmp}/nope"],
    "model": ["model", "diameter2", "--radix", "2"],
    "vls": ["vls", "nope.json", "--out", "{tmp}/lanes.json"],
    "schedule": ["schedule", "allgather", "--network", "torus:4,4"],
    "synthesize": ["synthesize", "allgather", "--network", "torus:4,4", "--bytes", "1XB"],
    "export": ["export", "nope.json"],
    "verify": ["verify", "nope.json"],
    "simulate": ["simulate", "nope.json"],
    "compare": ["compare", "allgather", "--network", "torus:4,4", "--sim-model", "CM02"],
    "tune": ["tune", "allreduce", "--network", "nosuch:4", "--out", "{tmp}/r.rules"],
    "run": ["run", "nope.json"],
    "report": ["report", "nope.toml", "--out", "{tmp}/report.pdf"],
    "check": ["check", "nope.json"],
}


def cpu_seconds(argv: list[str], env: dict, expect: int | None) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if expect is not None and (done.returncode != expect or expect == 2 and len(done.stderr.splitlines()) != 1):
        raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}, expected {expect}:\n{done.stderr}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median_cpu(argv: list[str], env: dict, runs: int, expect: int | None) -> float:
    cpu_seconds(argv, env, expect)  # warm-up: the page cache and __pycache__
    return statistics.median(cpu_seconds(argv, env, expect) for _ in range(runs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--markdown", action="store_true", help="print the rows as a Markdown table")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    synth = [sys.executable, "-m", "synth"]
    with tempfile.TemporaryDirectory() as tmp:
        rows = [("python -c pass", median_cpu([sys.executable, "-c", "pass"], env, args.runs, 0), "")]
        rows.append(("synth --version", median_cpu([*synth, "--version"], env, args.runs, 0), ""))
        rows.append(("synth --help", median_cpu([*synth, "--help"], env, args.runs, 0), ""))
        for command, error in USER_ERRORS.items():
            shown = " ".join(a.replace("{tmp}/", "") for a in error)
            help_time = median_cpu([*synth, command, "--help"], env, args.runs, 0)
            error_time = median_cpu([*synth, *[a.format(tmp=tmp) for a in error]], env, args.runs, 2)
            rows.append((f"synth {command} --help", help_time, ""))
            rows.append((f"synth {shown}", error_time, "user error"))
    if args.markdown:
        print("| command | CPU s (median) | vs python -c pass |\n|---|---|---|")
    base = rows[0][1]
    for name, seconds, note in rows:
        if args.markdown:
            print(f"| `{name}` | {seconds:.3f} | {seconds / base:.1f}x |")
        else:
            print(f"{name:<72} {seconds:7.3f} s  {seconds / base:5.1f}x" + (f"  ({note})" if note else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
