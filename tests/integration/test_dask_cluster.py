"""Whole exchanges on a Dask cluster started inside the test on the loopback address (a scheduler
and two workers, real processes): byte-identical files, a lost worker, a phase that fails twice,
an interrupted client resumed from its checkpoint."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import REPO, TABLE_3_1

if os.environ.get("CI") != "true":  # CI installs the cluster extra (make test): there these tests must run
    pytest.importorskip("distributed")
import cloudpickle  # noqa: E402
import distributed  # noqa: E402

from synth.execute import LocalExecutor, TaskFailed  # noqa: E402
from synth.execute.dask_cluster import DaskExecutor  # noqa: E402
from synth.execute.ordered import Part, ordered_results  # noqa: E402

INSTANCE = "instances/table3.1/xgft128.toml"  # 128 OPT phases, a few seconds of layered synthesis on 2 workers


@pytest.fixture
def cluster(tmp_path):
    """A Dask scheduler and two single-threaded workers without nannies (a killed worker stays
    dead), each in its own session so that no signal for the client reaches them. The scheduler
    gives up on a task after its second lost worker, as the cluster synth starts itself does."""
    scheduler_file = tmp_path / "scheduler.json"
    env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1"}
    common = ["--host", "127.0.0.1", "--no-dashboard"]
    processes = [subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--port", "0", *common, "--scheduler-file",
                                   str(scheduler_file)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)]
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists():
            assert time.monotonic() < deadline and processes[0].poll() is None, "the scheduler did not start"
            time.sleep(0.05)
        for _ in range(2):
            processes.append(subprocess.Popen(
                [sys.executable, "-m", "dask", "worker", "--scheduler-file", str(scheduler_file), "--nworkers", "1",
                 "--nthreads", "1", "--no-nanny", *common], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True))
        with distributed.Client(scheduler_file=str(scheduler_file)) as client:
            client.wait_for_workers(2, timeout=60)
        yield scheduler_file, processes[1:]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait()


def _route(*extra, out: Path, executor: str | None = None) -> list[str]:
    command = [sys.executable, "-m", "synth", "route", INSTANCE, "--router", "layered", "--out", str(out), *extra]
    return command + (["--executor", executor] if executor else [])


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> bytes:
    """The routes file of the exchange from the local pool: what every other executor must write."""
    out = tmp_path_factory.mktemp("reference") / "r.json"
    subprocess.run(_route("--quiet", out=out), cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    return out.read_bytes()


def _start(command: list[str]) -> subprocess.Popen:
    # SIGINT as from a terminal (a background test run has it ignored, and children inherit that)
    return subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_as_from_a_terminal)


def _as_from_a_terminal() -> None:
    """The child's signals as a shell gives them: default dispositions, none blocked (the pytest
    process's own may differ, and a child inherits both)."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def _after_phases(process: subprocess.Popen, count: int) -> None:
    """Read the progress until `count` phases are routed."""
    seen = 0
    for line in process.stderr:
        seen += line.startswith("  phase ")
        if seen == count:
            return
    raise AssertionError(f"the run ended after {seen} phases: exit {process.wait()}")


# ----- byte for byte ----------------------------------------------------------------------------

def test_a_whole_exchange_on_a_cluster_writes_the_local_file_byte_for_byte(cluster, tmp_path, run):
    scheduler_file, _ = cluster
    outputs = {}
    for executor in ("local", f"dask:{scheduler_file}"):
        out = tmp_path / executor.split(":")[0]
        out.mkdir()  # synth makes no parent directory (issue 41)
        code, stdout, err = run("route", TABLE_3_1[64], "--traffic", "a2a-opt", "--router", "layered", "--out",
                                out / "r.json", "--loads", out / "loads.csv", "--executor", executor)
        assert code == 0, err
        outputs[executor] = (stdout.replace(str(out), "OUT"), (out / "r.json").read_bytes(), (out / "loads.csv").read_bytes())
    local, dask = outputs.values()
    assert dask == local
    assert f"executor: dask at {scheduler_file}, 2 workers" in err
    assert json.loads(local[1])["summary"]["phases"] == 64


def test_an_orbit_synthesis_on_a_cluster_writes_the_inline_file_byte_for_byte(cluster, tmp_path, run, monkeypatch):
    """Issue 43 item 4: an orbit synthesis' pieces (each half's trees, the levels, each candidate's
    verification) on the cluster's two workers: the file of one process, byte for byte."""
    from synth.synthesis import limits

    monkeypatch.setattr(limits, "MAX_SYMMETRIC_RANKS", 8)  # the orbit path on a small dragonfly (the client plans)
    scheduler_file, _ = cluster
    common = ("synthesize", "allreduce", "--network", "dragonfly:2,4,2:arrangement=relative", "--bytes", "1MiB")
    code, _, err = run(*common, "--out", tmp_path / "inline.h5", "--quiet")
    assert code == 0, err
    code, _, err = run(*common, "--out", tmp_path / "dask.h5", "--executor", f"dask:{scheduler_file}")
    assert code == 0, err
    assert "3 piece(s) on dask" in err
    assert (tmp_path / "dask.h5").read_bytes() == (tmp_path / "inline.h5").read_bytes()


def test_an_analysis_without_routes_on_a_cluster_prints_what_the_local_pool_prints(cluster, run):
    scheduler_file, _ = cluster
    argv = ["route", TABLE_3_1[512], "--traffic", "a2a-opt", "--router", "random-msg", "--seed", "3", "--quiet"]
    local = run(*argv)
    assert local[0] == 0 and "512 of 512 phases" in local[1]
    assert run(*argv, "--executor", f"dask:{scheduler_file}") == local


def test_dask_without_an_address_starts_a_cluster_on_this_machine(tmp_path, run):
    argv = ["route", TABLE_3_1[32], "--traffic", "a2a-opt", "--router", "layered", "--quiet"]
    assert run(*argv, "--out", tmp_path / "local.json")[0] == 0
    code, _, err = run(*argv, "--out", tmp_path / "dask.json", "--executor", "dask")
    assert code == 0, err
    assert (tmp_path / "dask.json").read_bytes() == (tmp_path / "local.json").read_bytes()


# ----- failures -----------------------------------------------------------------------------------

def test_the_phases_of_a_lost_worker_are_routed_elsewhere(cluster, tmp_path, reference):
    scheduler_file, workers = cluster
    out = tmp_path / "r.json"
    process = _start(_route(out=out, executor=f"dask:{scheduler_file}"))
    try:
        _after_phases(process, 10)
        workers[0].kill()  # SIGKILL: the worker ends mid-phase, without a word to the scheduler
        stdout, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 0, stderr[-2000:]
    assert workers[0].wait() != 0
    assert out.read_bytes() == reference  # every phase, in order, as the local pool routes them
    assert "summary: 128 phases (128 optimal)" in stdout


cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this test module


def _dies_on_phase_5(phases):
    if 5 in phases.tolist():
        os._exit(3)  # the worker process ends, as under the OOM killer
    return phases.tolist()


def test_a_phase_whose_worker_dies_twice_is_reported_not_dropped(cluster):
    import numpy as np

    scheduler_file, workers = cluster
    parts = [Part(i, i + 1, np.array([i])) for i in range(8)]
    with DaskExecutor(str(scheduler_file)) as executor:
        got = []
        with pytest.raises(TaskFailed) as failure:
            for result, _ in ordered_results(executor, _dies_on_phase_5, parts):
                got.append(result)
    assert re.fullmatch(r"phase \d could not be done: its worker was lost twice \(tcp://127\.0\.0\.1:\d+ last\)",
                        str(failure.value)), failure.value
    assert got == [[i] for i in range(len(got))] and len(got) <= 5  # in order, up to the failure
    assert [w.wait(timeout=30) for w in workers] == [3, 3]  # it ran twice, on both workers


def test_a_dead_local_worker_stops_the_run_instead_of_hanging():
    import numpy as np

    parts = [Part(i, i + 1, np.array([i])) for i in range(8)]
    with pytest.raises(TaskFailed, match=r"could not be done: a worker process of this machine died"):
        list(ordered_results(LocalExecutor(2), _dies_on_phase_5, parts))


# ----- interrupt and resume -----------------------------------------------------------------------

def test_an_interrupted_client_resumes_from_its_checkpoint_and_writes_the_same_file(cluster, tmp_path, reference):
    scheduler_file, _ = cluster
    out, checkpoint = tmp_path / "out" / "r.json", tmp_path / "checkpoint"
    out.parent.mkdir()  # (an output's directory must exist: synth makes none)
    command = _route("--checkpoint", str(checkpoint), out=out, executor=f"dask:{scheduler_file}")
    process = _start(command)
    try:
        _after_phases(process, 20)
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130
    last = [line for line in stderr.splitlines() if not line.startswith("  ")]
    kept = re.fullmatch(r"synth: interrupted \(SIGINT\); no output written; (\d+) of 128 phases are kept in checkpoint "
                        rf"'{checkpoint}': the same command goes on from there", last[-1])
    assert kept and 20 <= int(kept[1]) < 128, stderr[-2000:]
    assert not out.exists()
    resumed = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"  checkpoint {checkpoint}: {kept[1]} of 128 phases done before, {128 - int(kept[1])} to go" in resumed.stderr
    assert resumed.stderr.count("  phase ") == 128 - int(kept[1])  # only the others were routed
    assert out.read_bytes() == reference
    # The executor is not an input: the local pool finishes from the same checkpoint, routing nothing.
    again = subprocess.run(_route("--checkpoint", str(checkpoint), out=out), cwd=REPO, capture_output=True, text=True)
    assert again.returncode == 0 and "128 of 128 phases done before, 0 to go" in again.stderr
    assert out.read_bytes() == reference


def test_a_killed_client_resumes_from_its_checkpoint(tmp_path, reference):
    out, checkpoint = tmp_path / "r.json", tmp_path / "checkpoint"
    command = _route("--checkpoint", str(checkpoint), out=out)
    process = _start(command)
    try:
        _after_phases(process, 30)
        os.killpg(process.pid, signal.SIGKILL)  # no chance to clean up: a power cut, the OOM killer
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    parts = sorted(p.name for p in checkpoint.iterdir() if not p.name.startswith("."))
    assert "checkpoint.json" in parts and len(parts) > 30  # whole parts only (temporaries are hidden)
    resumed = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert out.read_bytes() == reference


def test_report_cells_and_lp_bounds_run_on_the_cluster_with_the_local_results(cluster, tmp_path, run):
    scheduler_file, _ = cluster
    pages = {}
    for executor in ("local", f"dask:{scheduler_file}"):
        out = tmp_path / executor.split(":")[0] / "report.md"
        out.parent.mkdir()  # synth makes no parent directory (issue 41)
        code, _, err = run("report", TABLE_3_1[32], "--patterns", "opt,lin", "--routers", "dmodk,layered", "--out", out,
                           "--executor", executor, "--quiet")
        assert code == 0, err
        # the page names the command that made it, --executor included; everything else is the same
        pages[executor] = [line for line in out.read_text().splitlines() if "Generated by synth" not in line]
    assert pages[f"dask:{scheduler_file}"] == pages["local"]
    argv = ["bounds", "dragonfly:2,4,2", "--traffic", "a2a-lin", "--phase", "0-11", "--lp", "--quiet"]
    local = run(*argv)
    assert local[0] == 0 and "lp: ceil(lambda*) of the multicommodity-flow relaxation, certified in every phase" in local[1]
    assert run(*argv, "--executor", f"dask:{scheduler_file}") == local


def _refuses_phase_3(phases):
    from synth.core.errors import SynthError

    if 3 in phases.tolist():
        raise SynthError("phase 3 is refused")
    return phases.tolist()


def test_an_error_of_the_task_comes_back_as_itself_after_one_retry(cluster):
    import numpy as np

    from synth.core.errors import SynthError

    scheduler_file, workers = cluster
    parts = [Part(i, i + 1, np.array([i])) for i in range(6)]
    got = []
    with DaskExecutor(str(scheduler_file)) as executor, pytest.raises(SynthError, match="phase 3 is refused"):
        for result, _ in ordered_results(executor, _refuses_phase_3, parts):
            got.append(result)
    assert got == [[0], [1], [2]][: len(got)]  # in order, up to the failure
    assert all(w.poll() is None for w in workers)  # nobody died


def _children(pid: int) -> list[str]:
    return subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()


@pytest.mark.parametrize("signum, code, when", [(signal.SIGINT, 130, "starting"), (signal.SIGINT, 130, "routing"),
                                                (signal.SIGTERM, 143, "routing")])
def test_a_signal_stops_a_run_on_its_own_cluster_with_one_line(tmp_path, signum, code, when):
    """Ctrl-C (to the whole group, the workers included) or SIGTERM, while synth starts its Dask
    cluster (its first worker process exists) or while the workers route (a phase is done): one
    line, nothing written, no process left."""
    process = _start(_route(out=tmp_path / "r.json", executor="dask"))
    try:
        if when == "starting":
            deadline = time.monotonic() + 60
            while not _children(process.pid) and time.monotonic() < deadline and process.poll() is None:
                time.sleep(0.01)
        else:
            _after_phases(process, 1)
        os.killpg(process.pid, signum)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == code, stderr[-2000:]
    assert [line for line in stderr.splitlines() if not line.startswith("  ")] == [
        f"synth: interrupted ({signal.Signals(signum).name}); no output written"]
    assert list(tmp_path.iterdir()) == []
    time.sleep(1)
    left = subprocess.run(["pgrep", "-s", str(process.pid)], capture_output=True, text=True).stdout.split()
    alive = [pid for pid in left if Path(f"/proc/{pid}/stat").exists()
             and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"]
    assert alive == []


# ----- sweeps (synth sweep, issue 43 item 4) ------------------------------------------------------

# Four cells of a few seconds each: long enough to interrupt between them.
SWEEP = """networks = ["torus:4,4", "kautz:3,2"]
collectives = ["allgather", "allreduce"]
bytes = "32B,1MiB"
synthesize = true
time_limit = 2
"""


def _sweep(path: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "synth", "sweep", str(path), "--out", str(out), *extra]


@pytest.fixture(scope="module")
def sweep_reference(tmp_path_factory) -> tuple[Path, bytes, str]:
    """The sweep file and its results from one local worker: what every executor and resume must write."""
    where = tmp_path_factory.mktemp("sweep")
    (where / "sweep.toml").write_text(SWEEP)
    done = subprocess.run(_sweep(where / "sweep.toml", where / "r.csv", "--executor", "local:1", "--quiet"), cwd=REPO,
                          check=True, capture_output=True, text=True)
    return where / "sweep.toml", (where / "r.csv").read_bytes(), done.stdout.replace(str(where / "r.csv"), "OUT")


def test_a_sweep_on_a_cluster_writes_the_local_results_byte_for_byte(cluster, tmp_path, sweep_reference):
    scheduler_file, _ = cluster
    path, reference, printed = sweep_reference
    for executor in ("local:2", f"dask:{scheduler_file}"):
        out = tmp_path / f"{executor[:4]}.csv"
        done = subprocess.run(_sweep(path, out, "--executor", executor), cwd=REPO, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        assert out.read_bytes() == reference and done.stdout.replace(str(out), "OUT") == printed
    assert f"on dask at {scheduler_file}, 2 workers" in done.stderr


def test_an_interrupted_sweep_resumes_from_its_checkpoint_and_writes_the_same_results(tmp_path, sweep_reference):
    path, reference, _ = sweep_reference
    out, checkpoint = tmp_path / "r.csv", tmp_path / "ck"
    command = _sweep(path, out, "--executor", "local:1", "--checkpoint", str(checkpoint))
    process = _start(command)
    try:
        for line in process.stderr:
            if line.startswith("    cell 1/4"):
                break
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C after the first cell
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, stderr[-2000:]
    kept = re.search(r"no output written; (\d) of 4 cells are kept in checkpoint '" + re.escape(str(checkpoint))
                     + "': the same command goes on from there", stderr)
    assert kept and 1 <= int(kept[1]) < 4, stderr[-2000:]
    assert not out.exists()
    resumed = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"checkpoint {checkpoint}: {kept[1]} of 4 cells done before, {4 - int(kept[1])} to go" in resumed.stderr
    assert resumed.stderr.count("(from the checkpoint)") == int(kept[1])
    assert out.read_bytes() == reference
