"""Benchmark: the routes of a whole exchange written, read and checked as JSON and in the compact HDF5 form, in one run.

    python tests/bench/bench_routes_files.py [--spec xgft:2:32,32:1,32] [--traffic a2a-lin] [--router dmodk]

Every step is the command itself (synth.cli.main), run in a fresh process so that its peak memory is its
own; the seconds are those of the command (the interpreter, numpy and numba loaded before the clock starts):

- route: `synth route SPEC ... --quiet` without --out (the routing alone), then with `--out r.json` and
  `--out r.h5`: the writing is the difference;
- read: the file read and checked for shape (synth.io.routes_file.read_routes_columnar, what check and
  tables read);
- check: `synth check FILE` (the read, then every path, load, bound and the summary recomputed).

The two checks must print the same, and the two files hold the same routes (the compact one, rendered
as JSON, is the JSON file's bytes).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

STEP = r"""
import json, resource, sys, time
from synth.core.memory import prefer_plain_pages
prefer_plain_pages()
import numpy as np
import synth.cli
from synth.io.routes_file import read_routes_columnar
kind, argv = sys.argv[1], sys.argv[2:]
start = time.perf_counter()
if kind == "read":
    doc = read_routes_columnar(argv[0])
    code = 0
else:
    code = synth.cli.main(argv)
seconds = time.perf_counter() - start
sys.stdout.flush()
print(json.dumps({"code": code, "seconds": seconds, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}),
      file=sys.stderr)
"""


def step(kind: str, *argv: str) -> tuple[dict, str]:
    done = subprocess.run([sys.executable, "-c", STEP, kind, *argv], capture_output=True, text=True)
    lines = done.stderr.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise SystemExit(f"{kind} {' '.join(argv)} failed:\n{done.stderr}")
    result = json.loads(lines[-1])
    if result["code"] != 0:
        raise SystemExit(f"{kind} {' '.join(argv)} exited {result['code']}:\n{done.stdout}{done.stderr}")
    return result, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="xgft:2:32,32:1,32")
    parser.add_argument("--traffic", default="a2a-lin")
    parser.add_argument("--router", default="dmodk")
    parser.add_argument("--phase", default="all")
    args = parser.parse_args()
    route = ["route", args.spec, "--traffic", args.traffic, "--router", args.router, "--phase", args.phase, "--quiet"]
    alone, out = step("route", *route)
    print(out.splitlines()[1] if len(out.splitlines()) > 1 else "")
    print(f"routing alone: {alone['seconds']:.2f} s, peak {alone['peak_mib']:.0f} MiB")
    print(f"{'form':6} {'route+write s':>13} {'write s':>8} {'peak MiB':>9} {'MB':>8} {'read s':>7} {'peak MiB':>9} "
          f"{'check s':>8} {'peak MiB':>9}")
    checked = {}
    with tempfile.TemporaryDirectory() as tmp:
        for form in ("json", "h5"):
            path = os.path.join(tmp, f"r.{form}")
            wrote, _ = step("route", *route, "--out", path)
            read, _ = step("read", path)
            check, checked[form] = step("check", "check", path)
            print(f"{form:6} {wrote['seconds']:>13.2f} {wrote['seconds'] - alone['seconds']:>8.2f} {wrote['peak_mib']:>9.0f} "
                  f"{os.path.getsize(path) / 1e6:>8.1f} {read['seconds']:>7.2f} {read['peak_mib']:>9.0f} "
                  f"{check['seconds']:>8.2f} {check['peak_mib']:>9.0f}", flush=True)
        assert checked["json"] == checked["h5"], "the two checks differ"
        print(checked["h5"].strip().splitlines()[-1])
        from synth.io.routes_file import read_routes_columnar, routes_json_text

        with open(os.path.join(tmp, "r.json")) as handle:
            assert routes_json_text(read_routes_columnar(os.path.join(tmp, "r.h5"))) == handle.read(), "contents differ"


if __name__ == "__main__":
    main()
