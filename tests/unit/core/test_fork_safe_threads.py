"""synth's parallel kernels under a fork (synth.core.fork_safe_threads): a process that ran one forks a child
that runs one too, as the local executor's workers do after a parent verified a schedule of runs."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import os
import numpy as np
from synth.collectives.algorithms import ALGORITHMS, Request
from synth.collectives.verify import verify
import numba

schedule = ALGORITHMS["bruck"].generate(Request("allgather", 64, 64, 8, "ring:64"))
assert verify(schedule).ok  # a schedule of runs: the parallel replay
pid = os.fork()
if pid == 0:
    os._exit(0 if verify(schedule).ok else 3)
_, status = os.waitpid(pid, 0)
print(numba.threading_layer(), os.waitstatus_to_exitcode(status))
"""


def test_a_child_forked_after_a_parallel_kernel_runs_one_too():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    layer, child = done.stdout.split()
    assert child == "0" and layer != "omp", (done.stdout, done.stderr[-2000:])
