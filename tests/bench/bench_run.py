"""Benchmark: `synth run` (issue 42 items 1-2) of ring, recursive doubling, Bruck and a synthesized
schedule next to Open MPI's own collective, at 1 KiB, 1 MiB and 64 MiB with 8 and 16 ranks, all
under mpirun --oversubscribe on this machine (2 cores: 8 and 16 processes share them, so the
figures are this machine's, not a cluster's); and the overhead figure of item 2: synth's replay of
a ring allreduce against Open MPI's own ring (coll_tuned forced to algorithm 4), and the same for
recursive doubling (3) and Bruck's allgather (2), the same messages in the same order.

    python tests/bench/bench_run.py [--iterations N] [--sizes 1KiB,1MiB,64MiB] [--ranks 8,16]

Each row: the schedule's median time over N iterations (each the slowest rank's), the library's in
the same run (its default choice, or the forced algorithm), and their ratio (synth / library).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

NETWORKS = {8: "torus:2,4", 16: "torus:4,4"}
# (collective, synth's algorithm, coll_tuned's number of the same algorithm or None: the library's default)
CASES = [("allreduce", "ring", 4), ("allreduce", "rd-l", 3), ("allgather", "bruck", 2), ("allreduce", "ring", None),
         ("allreduce", "rd-l", None), ("allgather", "bruck", None), ("allreduce", "synthesized", None)]
PARAMETERS = {"allreduce": "coll_tuned_allreduce_algorithm", "allgather": "coll_tuned_allgather_algorithm"}


def schedule_file(collective: str, algorithm: str, spec: str, folder: Path) -> str:
    from synth.api.outputs import write_schedule
    from synth.app.schedule import make_schedule, plan_schedule
    from synth.app.synthesize import SynthesisRequest, synthesize
    from synth.topology import parse_topology

    topology = parse_topology(spec)
    path = folder / f"{collective}-{algorithm}-{spec.replace(':', '_')}.h5"
    if algorithm == "synthesized":
        (band,) = synthesize(SynthesisRequest(collective, topology, [1 << 20], time_limit=30.0)).bands
        schedule = band.schedule
    else:
        schedule = make_schedule(plan_schedule(collective, algorithm, topology, message_bytes=1 << 20))
    write_schedule(schedule, path)
    return str(path)


def main() -> int:
    from synth.app.run import RunRequest, run
    from synth.core.sizes import parse_sizes, size_text

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--sizes", default="1KiB,1MiB,64MiB")
    parser.add_argument("--ranks", default="8,16")
    args = parser.parse_args()
    sizes = parse_sizes(args.sizes)
    print("| ranks | collective | schedule | library | bytes | synth run median us | library median us | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for ranks in (int(r) for r in args.ranks.split(",")):
            spec = NETWORKS[ranks]
            for collective, algorithm, forced in CASES:
                path = schedule_file(collective, algorithm, spec, Path(folder))
                mca = [] if forced is None else ["--mca", "coll_tuned_use_dynamic_rules", "1", "--mca",
                                                 PARAMETERS[collective], str(forced)]
                start = time.monotonic()
                result = run(RunRequest(path, sizes, iterations=args.iterations, warmup=2, mpi_args=mca,
                                        deadline=1800))
                assert result.wrong is None, result.wrong.wrong
                library = f"coll_tuned {forced}" if forced is not None else "default"
                name = algorithm if algorithm != "synthesized" else \
                    f"synthesized ({result.schedule.num_steps} steps)"
                for z in result.sizes:
                    ours, theirs = statistics.median(z.schedule_seconds), statistics.median(z.library_seconds)
                    print(f"| {ranks} | {collective} | {name} | {library} | {size_text(z.bytes)} | {ours * 1e6:,.1f} "
                          f"| {theirs * 1e6:,.1f} | {ours / theirs:.2f} |", flush=True)
                print(f"<!-- {collective} {algorithm} {ranks} ranks: {time.monotonic() - start:.0f} s -->", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
