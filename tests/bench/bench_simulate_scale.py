"""Simulation at scale (issue 43 item 6): 16,384-rank allgather schedules on SimGrid, a step's
identical transfers merged into one flow and (for the ratio) every transfer a flow of its own, next
to the cost model, with the generated algorithms side by side on each network.

Every case runs `synth schedule` and then `synth simulate` in processes of their own under
/usr/bin/time (wall clock and peak memory of the whole command, SimGrid's worker included, start-up
included) and reads the simulated total and the model's from the command's own output.

    python tests/bench/bench_simulate_scale.py                       # the default cases
    python tests/bench/bench_simulate_scale.py --cases "torus:64,64 4 rd-b CM02 merge"
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# network, ranks per terminal, algorithm, SimGrid model, merge or no-merge
CASES = [
    ("torus:64,64", 4, "rd-b", "CM02", "merge"),
    ("torus:64,64", 4, "rd-b", "CM02", "no-merge"),
    ("torus:64,64", 4, "bruck", "CM02", "merge"),
    ("torus:64,64", 4, "rd-b", "LV08", "merge"),
    ("torus:64,64", 4, "rd-b", "SMPI", "merge"),
    ("dragonfly:8,16,8:groups=128", 1, "bruck", "CM02", "merge"),
    ("dragonfly:8,16,8:groups=128", 1, "rd-b", "CM02", "merge"),
]
BYTES = "256MiB"


def timed(command: list[str]) -> tuple[str, float, float]:
    """The command's stdout, wall seconds and peak resident GB (its children included)."""
    done = subprocess.run(["/usr/bin/time", "-f", "%e %M", *command], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    wall, peak = done.stderr.strip().splitlines()[-1].split()
    return done.stdout, float(wall), int(peak) / 1e6


def run_case(spec: str, per_node: int, algorithm: str, model: str, merge: str, directory: Path) -> dict:
    schedule = directory / f"{spec.replace(':', '_').replace(',', '_')}-{algorithm}.h5"
    generated = {}
    if not schedule.exists():
        out, wall, peak = timed(["synth", "schedule", "allgather", "--algorithm", algorithm, "--network", spec,
                                 "--ranks-per-node", str(per_node), "--bytes", BYTES, "--out", str(schedule)])
        generated = {"generate_s": wall, "generate_gb": peak}
    extra = ["--no-merge"] if merge == "no-merge" else []
    out, wall, peak = timed(["synth", "simulate", str(schedule), "--model", model, *extra])
    header = re.search(r"by \S+: (\d+) steps.*?([\d,]+) hosts", out)
    merged = re.search(r"([\d,]+) transfers as ([\d,]+) flows", out)
    transfers = sum(int(m.group(1).replace(",", "")) for m in re.finditer(r"^step \d+\s+([\d,]+)", out, re.M))
    total = re.search(r"alpha-beta ([\d,.e+]+) us \(any schedule of its blocks: >= ([\d,.e+]+) us\), "
                      r"simulated ([\d,.e+]+) us \(([\d.]+) x the model\)", out)
    if not header or not total:
        raise RuntimeError(f"unexpected output of synth simulate:\n{out}")
    number = lambda text: float(text.replace(",", ""))  # noqa: E731
    return {"steps": int(header.group(1)), "transfers": transfers,
            "flows": int(merged.group(2).replace(",", "")) if merged else transfers,
            "wall": wall, "peak": peak, "model": number(total.group(1)), "bound": number(total.group(2)),
            "simulated": number(total.group(3)), "ratio": total.group(4), **generated}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", help="cases separated by ';', each 'NETWORK Q ALGORITHM MODEL merge|no-merge'")
    args = parser.parse_args()
    cases = CASES if not args.cases else [
        (c.split()[0], int(c.split()[1]), *c.split()[2:5]) for c in args.cases.split(";")]
    print("| network | ranks/terminal | algorithm | model | transfers merged | steps | transfers | flows simulated | "
          "generate | simulate | peak memory | simulated (us) | alpha-beta (us) | ratio | bound (us) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for spec, per_node, algorithm, model, merge in cases:
            try:
                row = run_case(spec, per_node, algorithm, model, merge, Path(scratch))
            except RuntimeError as error:
                print(f"| {spec} | {per_node} | {algorithm} | {model} | {merge} | failed: {error} |", flush=True)
                continue
            generate = f"{row['generate_s']:.1f} s, {row['generate_gb']:.2f} GB" if "generate_s" in row else "(above)"
            print(f"| {spec} | {per_node} | {algorithm} | {model} | {merge} | {row['steps']} | {row['transfers']:,} | "
                  f"{row['flows']:,} | {generate} | {row['wall']:.1f} s | {row['peak']:.2f} GB | "
                  f"{row['simulated']:,.0f} | {row['model']:,.0f} | {row['ratio']} | {row['bound']:,.0f} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
