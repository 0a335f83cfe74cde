"""mpirun around the executor (`synth run`): one MPI process per rank of the schedule, started by
Open MPI's `mpirun` (or the one `--mpirun` names), bounded by a deadline; every failure of the run
(a rank that dies, a hang past the deadline, the executor's own error) becomes one line.

As root, Open MPI refuses to start unless told: OMPI_ALLOW_RUN_AS_ROOT=1 and
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 are set for it then (a container's usual user; docs/run.md).
`--oversubscribe` lets more ranks than cores run (16 ranks on 2 cores: their times are then the
machine's, shared, not a cluster's).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

from synth.core.errors import SynthError
from synth.run.executor import ERROR_PREFIX, PROGRESS_PREFIX

class RunFailed(SynthError):
    """The run itself failed (a rank died, the deadline passed, the executor stopped): exit 1, not
    a user error."""


UNDER_LAUNCHER = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")  # set in every rank by mpirun, hydra, srun


def under_launcher() -> bool:
    """Whether this process is one rank of an MPI launch already (the user's own mpirun)."""
    return any(name in os.environ for name in UNDER_LAUNCHER)


def mpirun_command(mpirun: str, ranks: int, job_path: str, extra: list[str]) -> list[str]:
    program = shutil.which(mpirun)
    if program is None:
        raise SynthError(f"'{mpirun}' is not on PATH: synth run starts the ranks with Open MPI's mpirun (make install "
                         "puts Debian's openmpi-bin in place), or run synth run under your own launcher")
    return [program, "--oversubscribe", "-n", str(ranks), *extra, sys.executable, "-m", "synth.run.executor", job_path]


def environment() -> dict:
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def launch(job: dict, ranks: int, deadline: float, mpirun: str = "mpirun", extra: list[str] | None = None,
           say=lambda text: None) -> list[dict]:
    """Run `job` (synth.run.executor) on `ranks` MPI processes: its figures per schedule, or one
    RunFailed line."""
    with tempfile.TemporaryDirectory(prefix="synth-run-") as scratch:
        job = dict(job, result=os.path.join(scratch, "result.json"), pids=scratch)
        job_path = os.path.join(scratch, "job.json")
        with open(job_path, "w", encoding="utf-8") as f:
            json.dump(job, f)
        command = mpirun_command(mpirun, ranks, job_path, list(extra or []))
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, errors="replace", env=environment(),
                                   start_new_session=True)  # its own process group: killed whole
        kept: list[str] = []

        def read() -> None:  # rank 0's progress to `say`, the rest kept for a failure's line
            for line in process.stdout:
                if line.startswith(PROGRESS_PREFIX):
                    say(line[len(PROGRESS_PREFIX):].rstrip("\n"))
                else:
                    kept.append(line)
                    del kept[:-200]

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            code = process.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            _kill(process, scratch)
            raise RunFailed(f"the run did not end within its deadline of {deadline:g} s (--deadline): a rank hangs or "
                             f"the sizes are too large for {ranks} ranks here; killed, nothing written") from None
        except BaseException:
            _kill(process, scratch)
            raise
        reader.join(timeout=5)
        if code != 0 or not os.path.exists(job["result"]):
            _kill(process, scratch)  # a rank mpirun left behind
            raise RunFailed(_failure(kept, code))
        with open(job["result"], encoding="utf-8") as f:
            return json.load(f)


def _kill(process: subprocess.Popen, scratch: str, patience: float = 5.0) -> None:
    """mpirun and every rank stopped and awaited: none outlives synth run. Open MPI puts its ranks
    in process groups of their own, so mpirun is asked first (SIGTERM: it ends its job), then
    mpirun's group and every rank that wrote its pid in `scratch` are killed."""
    import glob
    import time

    def ranks() -> list[int]:
        pids = []
        for name in glob.glob(os.path.join(scratch, "rank-*.pid")):
            try:
                with open(name, encoding="utf-8") as f:
                    pids.append(int(f.read().strip() or 0))
            except (OSError, ValueError):
                continue
        return [p for p in pids if p > 0 and _alive(p)]

    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    end = time.monotonic() + patience
    while time.monotonic() < end and (process.poll() is None or ranks()):
        time.sleep(0.02)
    for pid in [process.pid, *ranks()]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL) if pid == process.pid else os.kill(pid, signal.SIGKILL)
    process.wait()
    end = time.monotonic() + patience
    while time.monotonic() < end and ranks():
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except (OSError, IndexError):
        return False


def _failure(lines: list[str], code: int) -> str:
    """The run's failure in one line: the executor's own error, else what mpirun said of a rank."""
    own = next((line for line in lines if line.startswith(ERROR_PREFIX)), None)
    if own is not None:
        return f"the run failed at {own[len(ERROR_PREFIX):].strip()}"
    said = [line.strip() for line in lines if line.strip() and not set(line.strip()) <= set("-")]
    rank_line = next((line for line in said if "exited on signal" in line or "rank" in line.lower()
                      and ("exit" in line.lower() or "signal" in line.lower())), None)
    detail = rank_line or (said[-1] if said else "no output")
    return f"the MPI run ended with exit code {code}: {' '.join(detail.split())[:300]}"
