"""Importing real fabrics (issue 26): a topology file of about 10,000 nodes read as `fabric:FILE`, as it is
(`:recognize=no`) and recognized as its family, next to building the same network from its family's spec in the
same process; and routing the imported fabric with `paths` next to routing the family.

    python tests/bench/bench_fabric_import.py

Each fabric file is written by `synth topology SPEC --format ibnetdiscover` (ibnetdiscover's format with GUIDs,
as ibsim loads it). Times are wall seconds on this machine; "command" is a whole `synth topology fabric:FILE`
process (Python's start and synth's imports included).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from synth.topology import parse_topology

IMPORTS = ("xgft:3:16,16,36:1,16,16",  # 9,216 terminals + 1,408 switches = 10,624 nodes
           "torus:48,48:p=2",  # 4,608 + 2,304 = 6,912 nodes
           "dragonfly:8,16,8",  # 129 groups: 16,512 + 2,064 nodes
           "slimfly:13",  # 3,380 + 338
           # with a few links missing (the file is written without them)
           "torus:48,48:p=2@fail=random:4:1", "dragonfly:8,16,8@fail=random:4:1", "slimfly:13@fail=random:4:1")
ROUTED = ("dragonfly:2,4,2", "slimfly:5", "hyperx:4,4:p=2")


def seconds(work) -> tuple[float, object]:
    began = time.perf_counter()
    result = work()
    return time.perf_counter() - began, result


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        print(f"{'network':<34} {'nodes':>7} {'file MB':>8} {'family build':>13} {'import as is':>13} "
              f"{'import + recognize':>19} {'command':>8}  recognized as")
        for spec in IMPORTS:
            path = Path(folder) / "fabric.net"
            subprocess.run([sys.executable, "-m", "synth", "topology", spec, "--format", "ibnetdiscover", "--out", path],
                           check=True, stdout=subprocess.DEVNULL)
            family, network = seconds(lambda: parse_topology(spec).network())
            imported, fabric = seconds(lambda: parse_topology(f"fabric:{path}:recognize=no").network())
            recognizing, topology = seconds(lambda: parse_topology(f"fabric:{path}"))
            recognized = f"{topology.base.spec} ({topology.missing() or 'complete'})" if hasattr(topology, "match") \
                else "none"
            command, _ = seconds(lambda: subprocess.run([sys.executable, "-m", "synth", "topology", f"fabric:{path}"],
                                                        check=True, stdout=subprocess.DEVNULL))
            print(f"{spec:<34} {fabric.num_nodes:>7,} {path.stat().st_size / 1e6:>8.1f} {family:>12.2f}s "
                  f"{imported:>12.2f}s {recognizing:>18.2f}s {command:>7.2f}s  {recognized}", flush=True)

        print(f"\n{'routing with paths (a2a-lin, phases 0-7)':<44} {'family':>8} {'fabric':>8}  max contention (family, fabric)")
        for spec in ROUTED:
            path = Path(folder) / "routed.net"
            subprocess.run([sys.executable, "-m", "synth", "topology", spec, "--format", "ibnetdiscover", "--out", path],
                           check=True, stdout=subprocess.DEVNULL)
            figures = []
            for target in (spec, f"fabric:{path}"):
                wall, done = seconds(lambda: subprocess.run(
                    [sys.executable, "-m", "synth", "route", target, "--traffic", "a2a-lin", "--router", "paths",
                     "--phase", "0-7", "--time-limit", "5"], check=True, capture_output=True, text=True))
                worst = max(int(line.split()[1]) for line in done.stdout.splitlines()
                            if line.split()[:1] and line.split()[0] in ("terminal", "local", "global", "link", "switch",
                                                                         "dimension", "router")
                            and len(line.split()) == 2 and line.split()[1].isdigit())
                figures.append((wall, worst))
            print(f"{spec:<44} {figures[0][0]:>7.1f}s {figures[1][0]:>7.1f}s  {figures[0][1]}, {figures[1][1]}", flush=True)


if __name__ == "__main__":
    main()
