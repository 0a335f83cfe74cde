"""mpirun around the executor (`synth run`): one MPI process per rank of the schedule, started by
Open MPI's `mpirun` (or the one `--mpirun` names), bounded by a deadline; every failure of the run
(a rank that dies, a hang past the deadline, the executor's own error) becomes one line.

As root, Open MPI refuses to start unless told: OMPI_ALLOW_RUN_AS_ROOT=1 and
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 are set for it then (a container's usual user; docs/run.md).
`--oversubscribe` lets more ranks than cores run (16 ranks on 2 cores: their times are then the
machine's, shared, not a cluster's).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

from synth.core.errors import SynthError
from synth.run.executor import ERROR_PREFIX

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


def launch(job: dict, ranks: int, deadline: float, mpirun: str = "mpirun", extra: list[str] | None = None) -> list[dict]:
    """Run `job` (synth.run.executor) on `ranks` MPI processes: its figures per schedule, or one
    RunFailed line."""
    with tempfile.TemporaryDirectory(prefix="synth-run-") as scratch:
        job = dict(job, result=os.path.join(scratch, "result.json"))
        job_path = os.path.join(scratch, "job.json")
        with open(job_path, "w", encoding="utf-8") as f:
            json.dump(job, f)
        command = mpirun_command(mpirun, ranks, job_path, list(extra or []))
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, errors="replace", env=environment(),
                                   start_new_session=True)  # its own process group: killed whole
        kept: list[str] = []
        reader = threading.Thread(target=lambda: kept.extend(process.stdout), daemon=True)
        reader.start()
        try:
            code = process.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            _kill(process)
            raise RunFailed(f"the run did not end within its deadline of {deadline:g} s (--deadline): a rank hangs or "
                             f"the sizes are too large for {ranks} ranks here; killed, nothing written") from None
        except BaseException:
            _kill(process)
            raise
        reader.join(timeout=5)
        if code != 0 or not os.path.exists(job["result"]):
            raise RunFailed(_failure(kept, code))
        with open(job["result"], encoding="utf-8") as f:
            return json.load(f)


def _kill(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


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
