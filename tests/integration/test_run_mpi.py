"""`synth run` over real MPI (Open MPI 4.1, mpi4py): every generated algorithm of every collective
and the synthesized schedules of the seven collectives synthesis makes, on one network of every
family with at most 16 ranks, give the MPI library's own result; tampered schedules give a wrong
one that synth run reports as synth verify does; the command's contract (issue 42)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from synth.core.errors import SynthError

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None, reason="Open MPI's mpirun is not installed")

REPO = Path(__file__).resolve().parents[2]
# One network of every family with at most 16 ranks (Slim Fly's least, slimfly:3, has 18 routers: with one
# terminal each, 18 ranks; OFT's least, oft:3, has 42 terminals, and is left out: 42 processes on 2 cores)
NETWORKS = ["torus:2,2", "hyperx:2,3", "2dfc:4,4", "kautz:2", "dragonfly:1,2,1", "mlfm:2", "xgft:2:2,4:1,2",
            "slimfly:3:p=1"]
COLLECTIVES = ["allgather", "reduce-scatter", "allreduce", "broadcast", "reduce", "scatter", "gather", "alltoall",
               "alltoallv", "p2p"]
SYNTHESIZED = ["allgather", "reduce-scatter", "allreduce", "broadcast", "reduce", "alltoall", "alltoallv"]


def _job(paths, sizes=None, **extra):
    return {"schedules": [str(p) for p in paths], "sizes": sizes, "dtype": extra.get("dtype", "float32"),
            "data": extra.get("data", "dyadic"), "iterations": extra.get("iterations", 1),
            "warmup": extra.get("warmup", 0), "seed": 0}


def _generated(spec: str, folder: Path) -> list[Path]:
    """Every algorithm's schedule of every collective it generates on `spec` (refusals left out),
    rooted ones from the last rank, p2p from rank 1 to 0."""
    from synth.app.schedule import make_schedule, plan_schedule
    from synth.collectives.algorithms import ALGORITHMS
    from synth.api.outputs import write_schedule
    from synth.topology import parse_topology

    topology = parse_topology(spec)
    ranks = topology.network().num_terminals
    out = []
    for name, algorithm in ALGORITHMS.items():
        for collective in algorithm.collectives:
            extra = {}
            if collective in ("broadcast", "reduce", "scatter", "gather"):
                extra["root"] = ranks - 1
            if collective == "p2p":
                extra.update(root=1, peer=0)
            if collective == "alltoallv":
                extra["sizes"] = "random:96:3"
            if name.startswith("tuna"):
                extra["radix"] = 2
            if name == "tuna-coalesced" or name == "tuna-staggered":
                continue  # hierarchical: Q ranks a node (--ranks-per-node), tested below
            try:
                plan = plan_schedule(collective, name, topology, message_bytes=2048, **extra)
                schedule = make_schedule(plan)
            except SynthError:
                continue
            path = folder / f"{spec.replace(':', '_').replace(',', '-')}-{collective}-{name}.json"
            write_schedule(schedule, path)
            out.append(path)
    return out


def _assert_all_right(figures, paths):
    assert len(figures) == len(paths)
    for f in figures:
        for size in f["sizes"]:
            assert size["wrong"] is None, (f["schedule"], size["wrong"])


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("spec", NETWORKS)
def test_every_generated_algorithm_gives_the_librarys_result(spec, tmp_path):
    from synth.run.launch import launch
    from synth.topology import parse_topology

    paths = _generated(spec, tmp_path)
    assert len(paths) >= 12, paths  # every collective has at least one generator on every family
    ranks = parse_topology(spec).network().num_terminals
    figures = launch(_job(paths), ranks, 900)
    _assert_all_right(figures, paths)
    done = {json.loads(Path(p).read_text())["collective"] for p in paths}
    # p2p's generators (kautz-mp, single-path) run on Kautz graphs K(d,2) alone
    assert done == set(COLLECTIVES) - ({"p2p"} if not spec.startswith("kautz") else set()), set(COLLECTIVES) - done


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("spec", NETWORKS[:-1])
def test_every_synthesized_schedule_gives_the_librarys_result(spec, tmp_path):
    from synth.app.synthesize import SynthesisRequest, synthesize
    from synth.api.outputs import write_schedule
    from synth.run.launch import launch
    from synth.topology import parse_topology

    topology = parse_topology(spec)
    ranks = topology.network().num_terminals
    paths = []
    for collective in SYNTHESIZED:
        request = SynthesisRequest(collective, topology, [4096], time_limit=3.0,
                                   block_sizes="random:96:5" if collective == "alltoallv" else None,
                                   root=ranks - 1 if collective in ("broadcast", "reduce") else 0)
        for band in synthesize(request).bands:
            path = tmp_path / f"{collective}-{len(paths)}.json"
            write_schedule(band.schedule, path)
            paths.append(path)
    figures = launch(_job(paths, dtype="int32"), ranks, 900)
    _assert_all_right(figures, paths)


@pytest.mark.timeout(600)
def test_hierarchical_tuna_and_floats_within_the_stated_bound(tmp_path):
    """Q ranks a node (TuNA's hierarchical variants), float64 uniform data (reductions within the
    bound), sizes scaled from the schedule's own."""
    from synth.app.schedule import make_schedule, plan_schedule
    from synth.api.outputs import write_schedule
    from synth.run.launch import launch
    from synth.topology import parse_topology

    topology = parse_topology("torus:2,2")
    paths = []
    for name in ("tuna-coalesced", "tuna-staggered"):
        plan = plan_schedule("alltoall", name, topology, message_bytes=4096, radix=2, ranks_per_node=2)
        paths.append(tmp_path / f"{name}.json")
        write_schedule(make_schedule(plan), paths[-1])
    for name in ("ring", "rabenseifner", "swing-b"):
        plan = plan_schedule("allreduce", name, topology, message_bytes=4096, ranks_per_node=2)
        paths.append(tmp_path / f"{name}.json")
        write_schedule(make_schedule(plan), paths[-1])
    figures = launch(_job(paths, sizes=[1000, 1 << 16], dtype="float64", data="uniform"), 8, 600)
    _assert_all_right(figures, paths)
    assert [s["bytes"] for s in figures[-1]["sizes"]][1] >= 1 << 16  # rounded up to whole elements


def _ring(tmp_path, spec="torus:2,2", collective="allreduce", algorithm="ring"):
    from synth.app.schedule import make_schedule, plan_schedule
    from synth.topology import parse_topology

    return make_schedule(plan_schedule(collective, algorithm, parse_topology(spec), message_bytes=4096))


def _tampered(schedule, keep=None, add=None):
    """`schedule` with the transfers of `keep` (a mask) and `add` (indices, repeated in their step)."""
    import dataclasses

    s = schedule.explicit()
    order = np.arange(s.num_transfers) if keep is None else np.flatnonzero(keep)
    if add is not None:
        order = np.sort(np.concatenate([order, np.asarray(add)]), kind="stable")
    step = s.transfer_step()[order]
    counts = np.diff(s.block_ptr)[order]
    ids = np.concatenate([s.block_ids[s.block_ptr[t]:s.block_ptr[t + 1]] for t in order.tolist()])
    return dataclasses.replace(s, src=s.src[order], dst=s.dst[order], op=s.op[order],
                               step_ptr=np.concatenate([[0], np.cumsum(np.bincount(step, minlength=s.num_steps))]),
                               block_ptr=np.concatenate([[0], np.cumsum(counts)]), block_ids=ids, synthesis=None)


@pytest.mark.timeout(300)
def test_a_tampered_schedule_is_wrong_over_mpi_as_verify_says(run, tmp_path):
    from synth.collectives.schedule import REDUCE
    from synth.api.outputs import write_schedule

    ring = _ring(tmp_path)
    dropped = _tampered(ring, keep=np.arange(ring.num_transfers) != 5)  # a transfer of the allgather half
    reduce_at = int(np.flatnonzero(ring.op == REDUCE)[0])
    doubled = _tampered(ring, add=[reduce_at])  # one reduction applied twice
    for name, schedule in (("dropped", dropped), ("doubled", doubled)):
        path = tmp_path / f"{name}.json"
        write_schedule(schedule, path)
        code, out, err = run("verify", path)
        assert code == 1, (name, out, err)
        code, out, err = run("run", path, "--iterations", "1", "--warmup", "0")
        assert code == 2 and "not run (--unverified" in err and err.count("\n") == 1, err
        out_file = tmp_path / f"{name}-result.json"
        code, out, err = run("run", path, "--unverified", "--iterations", "1", "--warmup", "0", "--out", out_file)
        assert code == 1 and "differs from MPI_Allreduce's" in err and err.count("\n") == 1, err
        assert out == "" and not out_file.exists()
        if name == "doubled":
            assert "the library's collective" in err


@pytest.mark.timeout(300)
def test_the_command_prints_and_writes(run, tmp_path):
    from synth.api.outputs import write_schedule

    path = tmp_path / "ring.h5"
    write_schedule(_ring(tmp_path), path)
    out_file = tmp_path / "r.json"
    code, out, err = run("run", path, "--bytes", "1KiB..4KiB", "--iterations", "3", "--warmup", "1", "--out", out_file)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("schedule  allreduce by ring on torus:2,2: 4 ranks, 6 steps")
    assert "Open MPI" in lines[1] and "MPI_Allreduce" in lines[2]
    assert [l.split()[0] for l in lines[4:7]] == ["1KiB", "2KiB", "4KiB"]
    record = json.loads(out_file.read_text())
    assert record["format"] == "synth-run/1" and [s["bytes"] for s in record["sizes"]] == [1024, 2048, 4096]
    assert all(len(s["schedule_seconds"]) == 3 and s["correct"] for s in record["sizes"])
    # algbw = S / t, busbw = algbw x 2 (P - 1) / P for allreduce (nccl-tests)
    median = float(np.median(record["sizes"][0]["schedule_seconds"]))
    algbw, busbw = (float(v.replace(",", "")) for v in lines[4].split()[4:6])
    assert algbw == pytest.approx(1024 / median / 1e9, rel=2e-3) and busbw == pytest.approx(algbw * 1.5, rel=2e-3)


@pytest.mark.timeout(300)
def test_bad_input_is_one_line(run, tmp_path):
    from synth.api.outputs import write_schedule

    path = tmp_path / "ring.json"
    write_schedule(_ring(tmp_path), path)
    for argv, message in (((tmp_path / "none.json",), "cannot read schedule file"),
                          ((path, "--dtype", "int8"), "invalid choice"),
                          ((path, "--data", "uniform", "--dtype", "int32"), "--data uniform is for float32"),
                          ((path, "--bytes", "1XB"), "--bytes"),
                          ((path, "--mpirun", "no-such-launcher"), "'no-such-launcher' is not on PATH"),
                          ((path, "--out", tmp_path / "no" / "r.json"), "no"),
                          ((path, "--bytes", "1TiB"), "of memory on this machine, more than")):
        code, out, err = run("run", *argv)
        assert code == 2 and message in err and err.count("\n") == 1, (argv, err)


@pytest.mark.timeout(300)
def test_a_hang_past_the_deadline_and_a_rank_that_dies(run, tmp_path):
    """A launcher that never ends is killed at --deadline; a rank killed mid-run ends the run: one
    line each, exit 1, nothing written."""
    from synth.api.outputs import write_schedule

    path = tmp_path / "ring.json"
    write_schedule(_ring(tmp_path), path)
    hang = tmp_path / "hang"
    hang.write_text("#!/bin/sh\nsleep 600\n")
    hang.chmod(0o755)
    start = time.monotonic()
    code, out, err = run("run", path, "--mpirun", hang, "--deadline", "2", "--out", tmp_path / "a.json")
    assert code == 1 and "deadline of 2 s" in err and err.count("\n") == 1, err
    assert time.monotonic() - start < 30 and not (tmp_path / "a.json").exists()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    process = subprocess.Popen([sys.executable, "-m", "synth", "run", str(path), "--bytes", "64MiB", "--iterations",
                                "100000", "--out", str(tmp_path / "b.json")], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env)
    for _ in range(600):  # the ranks started
        found = subprocess.run(["pgrep", "-f", "synth.run.executor"], capture_output=True, text=True).stdout.split()
        if len(found) >= 4:
            break
        time.sleep(0.1)
    time.sleep(1.0)
    os.kill(int(found[-1]), signal.SIGKILL)
    out, err = process.communicate(timeout=120)
    said = [line for line in err.splitlines() if not line.startswith("  ")]  # (a long run's progress lines)
    assert process.returncode == 1 and len(said) == 1 and "the MPI run ended with exit code" in said[0], err
    assert out == "" and not (tmp_path / "b.json").exists()


@pytest.mark.timeout(300)
def test_under_the_users_own_launcher(tmp_path):
    from synth.api.outputs import write_schedule
    from synth.run.launch import environment

    path = tmp_path / "ring.json"
    write_schedule(_ring(tmp_path), path)
    done = subprocess.run(["mpirun", "--oversubscribe", "-n", "4", sys.executable, "-m", "synth", "run", str(path),
                           "--iterations", "2", "--warmup", "0"], capture_output=True, text=True, env=environment(),
                          timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("schedule  allreduce by ring") == 1  # rank 0 alone prints
    done = subprocess.run(["mpirun", "--oversubscribe", "-n", "3", sys.executable, "-m", "synth", "run", str(path)],
                          capture_output=True, text=True, env=environment(), timeout=240)
    assert done.returncode != 0 and "this MPI run has 3 processes, the schedule 4 ranks" in done.stderr


@pytest.mark.timeout(300)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_run_and_its_ranks(tmp_path, signum):
    """Ctrl-C (SIGINT to the process group) or SIGTERM mid-run: exit 130 or 143 within seconds, one
    line, no rank left running, nothing written."""
    from synth.api.outputs import write_schedule

    path = tmp_path / "ring.json"
    write_schedule(_ring(tmp_path), path)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    process = subprocess.Popen([sys.executable, "-m", "synth", "run", str(path), "--iterations", "100000",
                                "--out", str(tmp_path / "r.json")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env, start_new_session=True)
    for _ in range(600):
        if len(subprocess.run(["pgrep", "-f", "synth.run.executor"], capture_output=True, text=True).stdout.split()) >= 4:
            break
        time.sleep(0.1)
    time.sleep(1.0)
    start = time.monotonic()
    if signum == signal.SIGINT:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    out, err = process.communicate(timeout=60)
    assert time.monotonic() - start < 10
    assert process.returncode == 128 + signum and err.count("\n") == 1 and "interrupted" in err, err
    assert subprocess.run(["pgrep", "-f", "synth.run.executor"], capture_output=True).returncode == 1  # none left
    assert not (tmp_path / "r.json").exists()
