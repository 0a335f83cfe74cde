"""`synth tune`'s rules file loaded by real Open MPI (issue 42 item 3): at a size inside each band and at
each band's edges Open MPI's coll_tuned runs the algorithm the file names.

Which algorithm ran: Debian's Open MPI 4.1.4 is a release build (ompi_info: "Internal debug support: no"),
and coll_tuned's "coll:tuned:<coll>_intra_do_this algorithm %d" line is an OPAL_OUTPUT, compiled out in
such builds (opal/util/output.h), so no verbosity prints it (coll_base_verbose shows only the component
selection). Instead coll_tuned_probe.c, preloaded into every rank, notes the ompi_coll_base_* function
coll_tuned called for each collective call (it then runs it): the function is the algorithm number by
coll_tuned's <coll>_intra_do_this switch (ompi/mca/coll/tuned/coll_tuned_<coll>_decision.c, v4.1.4).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from synth.core.sizes import parse_sizes
from synth.io.coll_tuned import algorithms, read_rules

NETWORK = "torus:2,4"  # 8 ranks; allreduce: rd-l, rd-b, ring; the others two bands each (crossovers below 1 MiB)
RANKS = 8
SIZES = "32B..1MiB"
COLLECTIVES = ("allreduce", "allgather", "alltoall", "reduce-scatter")

# coll_tuned's algorithm number -> the function its do_this runs (v4.1.4's switches)
FUNCTIONS = {
    "allreduce": {1: "basic_linear", 2: "nonoverlapping", 3: "recursivedoubling", 4: "ring", 5: "ring_segmented",
                  6: "redscat_allgather"},
    "allgather": {1: "basic_linear", 2: "bruck", 3: "recursivedoubling", 4: "ring", 5: "neighborexchange",
                  6: "two_procs"},
    "alltoall": {1: "basic_linear", 2: "pairwise", 3: "bruck", 4: "linear_sync", 5: "two_procs"},
    "reduce-scatter": {1: "nonoverlapping", 2: "basic_recursivehalving", 3: "ring", 4: "butterfly"},
}
PREFIX = {"allreduce": "allreduce", "allgather": "allgather", "alltoall": "alltoall", "reduce-scatter": "reduce_scatter"}
UNIT = {"allreduce": 8, "allgather": RANKS, "alltoall": RANKS, "reduce-scatter": 8 * RANKS}  # the sizes a call can have

# One rank's program: every (collective, bytes) of the plan in order, numpy buffers, SUM of doubles for the
# reductions, bytes for the exchanges; each result checked, so a wrong algorithm's data would show too.
PROGRAM = r"""
import json, sys
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
p, r = comm.Get_size(), comm.Get_rank()
for name, n in json.load(open(sys.argv[1])):
    if name == "allreduce":
        a = np.full(n // 8, r + 1.0); b = np.empty_like(a); comm.Allreduce(a, b)
        assert (b == p * (p + 1) / 2).all()
    elif name == "reduce-scatter":
        a = np.full(n // 8, r + 1.0); b = np.empty(n // 8 // p); comm.Reduce_scatter(a, b, [n // 8 // p] * p)
        assert (b == p * (p + 1) / 2).all()
    elif name == "allgather":
        a = np.full(n // p, r, dtype=np.uint8); b = np.empty(n, dtype=np.uint8); comm.Allgather(a, b)
        assert (b == np.repeat(np.arange(p), n // p)).all()
    elif name == "alltoall":
        a = np.repeat(np.arange(p, dtype=np.uint8) + 16 * r, n // p); b = np.empty(n, dtype=np.uint8)
        comm.Alltoall(a, b)
        assert (b == np.repeat(16 * np.arange(p) + r, n // p).astype(np.uint8)).all()
"""


def _probe(tmp_path) -> str:
    compiler = shutil.which("cc") or shutil.which("gcc")
    assert compiler is not None, "no C compiler (cc, gcc) to build the coll_tuned probe with"
    library = tmp_path / "coll_tuned_probe.so"
    source = os.path.join(os.path.dirname(__file__), "coll_tuned_probe.c")
    subprocess.run([compiler, "-shared", "-fPIC", "-O1", "-o", str(library), source, "-ldl"], check=True, timeout=60)
    return str(library)


def _plan() -> tuple[list[tuple[str, int]], list[str]]:
    """Per collective and band, in synth's own message sizes (synth.app.tune, not the file): the band's first
    and last size priced, one between, and one call unit below the next band's first; with the function
    coll_tuned must call at each (the band's algorithm's)."""
    from synth.app.tune import tune
    from synth.topology import parse_topology

    calls, expected = [], []
    for name in COLLECTIVES:
        bands = tune(name, parse_topology(NETWORK), parse_sizes(SIZES), None, 1e-6, 100e9).bands
        unit = UNIT[name]
        for i, band in enumerate(bands):
            end = bands[i + 1].first if i + 1 < len(bands) else 2 * band.last
            sizes = {max(band.first, unit), band.last, (band.first + band.last) // 2 // unit * unit, end - unit}
            for n in sorted(n for n in sizes if band.first <= n < end and n % unit == 0):
                calls.append((name, n))
                count = n // (8 if name == "allreduce" else RANKS * (8 if name == "reduce-scatter" else 1))
                expected.append(f"ompi_coll_base_{PREFIX[name]}_intra_{FUNCTIONS[name][band.algorithm.number]} {count}")
    return calls, expected


@pytest.mark.timeout(120)
def test_open_mpi_runs_the_algorithm_the_rules_file_names_at_every_band(run, tmp_path):
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun (Open MPI) is not installed")
    assert importlib.util.find_spec("mpi4py") is not None, "mpirun is here but mpi4py is not (README: Set up)"
    rules_file = tmp_path / "rules.txt"
    code, out, err = run("tune", *COLLECTIVES, "--network", NETWORK, "--bytes", SIZES, "--out", rules_file)
    assert code == 0, err
    # the bands the test is for: each collective changes its choice at least once on this network
    rules = {c.collective_id: c.rules for c in read_rules(rules_file.read_text())}
    assert [r.algorithm for r in rules[2]] == [3, 6, 4]  # recursive doubling, rabenseifner, ring
    assert all(len(rules[i]) >= 2 for i in (0, 3, 12)), rules
    calls, expected = _plan()
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(calls))
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    probe = _probe(tmp_path)

    def mpi(trace, *mca) -> tuple[list[list[str]], str]:
        """Each rank's trace of the plan's calls, and what mpirun printed."""
        env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
        done = subprocess.run([mpirun, "--oversubscribe", "-n", str(RANKS), *mca,
                               "-x", f"LD_PRELOAD={probe}", "-x", f"COLL_TUNED_PROBE={tmp_path / trace}",
                               sys.executable, str(program), str(plan)],
                              capture_output=True, text=True, timeout=50, env=env)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return [(tmp_path / f"{trace}.{rank}").read_text().splitlines() for rank in range(RANKS)], \
            done.stdout + done.stderr

    traces, shown = mpi("trace", "--mca", "coll_tuned_use_dynamic_rules", "1",
                        "--mca", "coll_tuned_dynamic_rules_filename", str(rules_file),
                        "--mca", "coll_base_verbose", "10")  # the components each communicator may select
    # coll_base's verbose lines (coll_base_comm_select.c): tuned is available to the communicators, and of the
    # others available only self (MPI_COMM_SELF's) outranks it, so MPI_COMM_WORLD's collectives are tuned's
    assert "coll:base:comm_select: component available: tuned, priority: 30" in shown
    available = re.findall(r"comm_select: component available: (\w+), priority: (\d+)", shown)
    assert {name for name, priority in available if int(priority) > 30} <= {"self"}, available
    for rank, ran in enumerate(traces):
        assert len(ran) == len(calls), (rank, ran)
        wrong = [(call, want, got) for call, want, got in zip(calls, expected, ran) if got != want]
        assert not wrong, f"rank {rank}: (collective, bytes), the algorithm synth chose, what Open MPI ran: {wrong}"
    # the control: without the file coll_tuned's fixed decisions choose otherwise at some of these calls, so
    # the agreement above is the file's doing
    fixed, _ = mpi("fixed")
    assert len(fixed[0]) == len(calls)
    assert any(got != want for want, got in zip(expected, fixed[0])), "the fixed decisions agree everywhere"


def test_the_map_names_only_numbers_open_mpi_has():
    """Every coll_tuned number in synth.io.coll_tuned.ALGORITHMS is the one its name has in Open MPI 4.1
    (FUNCTIONS above: the do_this switches), and its name is ompi_info's (checked where ompi_info runs)."""
    names = {"allreduce": {3: "recursive_doubling", 4: "ring", 6: "rabenseifner"},
             "allgather": {2: "bruck", 3: "recursive_doubling", 4: "ring"},
             "alltoall": {1: "linear", 2: "pairwise", 3: "modified_bruck"},
             "reduce-scatter": {2: "recursive_halving", 3: "ring"}}
    for name, numbers in names.items():
        for label, same in algorithms(name).items():
            assert numbers[same.number] == same.name, (name, label)
    ompi_info = shutil.which("ompi_info")
    if ompi_info is None:
        return
    text = subprocess.run([ompi_info, "--param", "coll", "tuned", "--level", "9"], capture_output=True, text=True,
                          timeout=60).stdout
    for name, numbers in names.items():
        param = f'"coll_tuned_{PREFIX[name]}_algorithm"'
        valid = text[text.index(param):].split("Valid values:", 1)[1].splitlines()[0]
        for number, algorithm in numbers.items():
            assert f'{number}:"{algorithm}"' in valid, (name, valid)
