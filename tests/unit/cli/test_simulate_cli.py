"""`synth simulate`: the command's output and contract (exit codes, one line, all or nothing,
byte-identical reruns, interrupts, a missing SimGrid)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from helpers import REPO


@pytest.fixture(scope="module")
def schedule_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("schedule") / "swing.json"
    from synth.cli import main

    assert main(["schedule", "allreduce", "--algorithm", "swing-b", "--network", "torus:4,4", "--bytes", "1048576",
                 "--out", str(path)]) == 0
    return path


def _routes(directory, router: str):
    from synth.cli import main

    path = directory / f"{router}.json"
    assert main(["route", "xgft:2:4,4:1,4", "--traffic", "a2a-opt", "--router", router, "--out", str(path),
                 "--quiet"]) == 0
    return path


@pytest.fixture(scope="module")
def routes_file(tmp_path_factory):
    return _routes(tmp_path_factory.mktemp("routes"), "dmodk")


def test_a_schedule_is_simulated_step_by_step_next_to_the_model(run, schedule_file, tmp_path):
    code, out, err = run("simulate", schedule_file, "--model", "CM02", "--out", tmp_path / "sim.json")
    assert code == 0, err
    assert re.search(r"simulated allreduce by swing-b: 8 steps, on SimGrid \d+\.\d+\S* \(CM02, bulk-synchronous\)", out)
    doc = json.loads((tmp_path / "sim.json").read_text())
    assert doc["format"] == "synth-simulation/1" and doc["kind"] == "schedule"
    assert [r["row"] for r in doc["rows"]] == [f"step {s}" for s in range(8)]
    for row in doc["rows"]:  # no contention, one message per port: the simulation is the model (CM02)
        assert row["simulated_us"] == pytest.approx(row["model_us"], rel=1e-9)
    assert doc["total"]["ratio"] == pytest.approx(1.0, rel=1e-9)
    # the bound of any schedule of these blocks, under the same model: never above the model's time
    assert 0 < doc["total"]["bound_us"] <= doc["total"]["model_us"]
    assert (f"total     alpha-beta {doc['total']['model_us']:.6g} us (any schedule of its blocks: >= "
            f"{doc['total']['bound_us']:.6g} us), simulated") in out


def test_reruns_write_the_same_bytes(run, schedule_file, tmp_path):
    for name in ("a.json", "b.json"):
        assert run("simulate", schedule_file, "--discipline", "async", "--out", tmp_path / name)[0] == 0
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_lv08_is_slower_than_the_model_by_its_factors(run, schedule_file, tmp_path):
    code, out, _ = run("simulate", schedule_file, "--out", tmp_path / "lv08.json")
    doc = json.loads((tmp_path / "lv08.json").read_text())
    assert code == 0 and doc["simulation"]["model"] == "LV08"
    for row in doc["rows"]:  # 13.01 x the latency, 0.97 x the bandwidth: slower than the model, at most by those
        assert row["model_us"] < row["simulated_us"] <= 13.01 * 1.0 + (row["model_us"] - 1.0) / 0.97 + 1e-6


@pytest.mark.parametrize("router, contention", [("dmodk", 3), ("layered", 1)])
def test_a_routes_file_is_simulated_phase_by_phase(run, tmp_path, router, contention):
    routes_file = _routes(tmp_path, router)
    code, out, err = run("simulate", routes_file, "--model", "CM02", "--out", tmp_path / "sim.json")
    assert code == 0, err
    doc = json.loads((tmp_path / "sim.json").read_text())
    routes = json.loads(routes_file.read_text())
    assert doc["kind"] == "routes" and len(doc["rows"]) == len(routes["phases"]) == 16
    for row, phase in zip(doc["rows"], routes["phases"]):
        moving = [f for f, p in zip(phase["flows"], phase["paths"]) if p]
        assert row["transfers"] == len(moving) and row["bytes"] == sum(f[2] for f in moving)
        # the busiest channel's bytes need their time whatever the sharing: the model is a lower bound of the
        # bulk-synchronous phase (CM02, latency alpha), and is met where no channel carries two flows
        assert row["simulated_us"] >= row["model_us"] * (1 - 1e-9)
        if phase["max_contention"] == 1:
            assert row["simulated_us"] == pytest.approx(row["model_us"], rel=1e-9)
    assert {phase["max_contention"] for phase in routes["phases"]} == {contention}


@pytest.mark.parametrize("argv, message", [
    (["simulate", "{missing}"], "cannot read"),
    (["simulate", "{text}"], "is neither a schedule (synth-schedule/1 or /2) nor a routes file"),
    (["simulate", "{schedule}", "--model", "XX"], "invalid choice: 'XX'"),
    (["simulate", "{schedule}", "--latency", "0"], "--latency"),
    (["simulate", "{schedule}", "--overhead", "-1"], "--overhead must be a number of zero or more, got '-1'"),
    (["simulate", "{schedule}", "--hop-latency", "nan"], "--hop-latency must be a number of zero or more"),
    (["simulate", "{routes}", "--router", "minimal"], "--router and --routes apply to schedules"),
    (["simulate", "{schedule}", "--out", "/proc/x/y.json"], "cannot write /proc/x"),
])
def test_bad_input_is_one_line_and_exit_2(run, schedule_file, routes_file, tmp_path, argv, message):
    (tmp_path / "text.json").write_text('{"format": "something/1"}')
    names = {"missing": tmp_path / "nothing.json", "text": tmp_path / "text.json", "schedule": schedule_file,
             "routes": routes_file, "tmp": tmp_path}
    code, out, err = run(*[a.format(**names) for a in argv])
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert out == ""  # refused before anything is simulated or printed


def test_a_missing_simgrid_names_the_package(run, schedule_file, tmp_path, monkeypatch):
    from synth.simulation import simgrid_module

    monkeypatch.setattr(simgrid_module, "_importable", lambda: False)
    monkeypatch.setattr(simgrid_module, "DEBIAN_DIR", tmp_path)
    code, out, err = run("simulate", schedule_file, "--out", tmp_path / "x.json")
    assert code == 2 and "apt-get install python3-simgrid" in err and "pip install simgrid" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "x.json").exists()
    monkeypatch.setenv("SYNTH_SIMGRID", str(tmp_path))
    code, _, err = run("simulate", schedule_file)
    assert code == 2 and f"SYNTH_SIMGRID={tmp_path} holds no simgrid module" in err


def test_simgrid_named_by_its_file_or_directory_is_found(monkeypatch):
    from synth.simulation import simgrid_module

    found = simgrid_module._module_file(simgrid_module.DEBIAN_DIR)
    if found is None:
        pytest.skip("Debian's python3-simgrid is not installed")
    monkeypatch.setenv("SYNTH_SIMGRID", str(found))
    assert simgrid_module.locate() == found
    monkeypatch.setenv("SYNTH_SIMGRID", str(found.parent))
    assert simgrid_module.locate() == found


def _session(pid: int) -> list[str]:
    return subprocess.run(["pgrep", "-s", str(pid)], capture_output=True, text=True).stdout.split()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupt_stops_the_simulation_and_its_worker(tmp_path, signum):
    from synth.cli import main

    big = tmp_path / "big.json"
    assert main(["schedule", "allreduce", "--algorithm", "swing-b", "--network", "torus:32,32", "--bytes", "1048576",
                 "--out", str(big)]) == 0
    process = subprocess.Popen([sys.executable, "-m", "synth", "simulate", str(big), "--discipline", "async", "--out",
                                str(tmp_path / "out.json")], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while len(_session(process.pid)) < 2:  # the worker has started
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(1.0)
        assert process.poll() is None
        if signum == signal.SIGINT:
            os.killpg(process.pid, signum)
        else:
            process.send_signal(signum)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    time.sleep(0.3)
    name = signal.Signals(signum).name
    *progress, last = err.splitlines()
    assert (process.returncode, last) == (128 + signum, f"synth: interrupted ({name}); no output written")
    assert all(line.startswith("  ") for line in progress), err  # the progress lines of a long run
    assert _session(process.pid) == [] and not (tmp_path / "out.json").exists()


def test_a_simulation_that_would_not_fit_is_refused_before_it_starts(run, schedule_file, tmp_path, monkeypatch):
    from synth.core.memory import Budget
    from synth.simulation import platform

    monkeypatch.setattr(platform, "budget", lambda: Budget(100_000, "a test's limit"))
    code, out, err = run("simulate", schedule_file, "--out", tmp_path / "x.json")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "simulating 512 transfers on 16 hosts needs about" in err and "a test's limit" in err
    assert not (tmp_path / "x.json").exists()


def test_inputs_that_do_not_pass_their_checks_are_refused(run, schedule_file, routes_file, tmp_path):
    """A routes file is checked as `synth check` checks it, a schedule replayed as `synth verify` does."""
    routes = json.loads(routes_file.read_text())
    routes["phases"][1]["paths"][0] = [10_000]
    (tmp_path / "r.json").write_text(json.dumps(routes))
    code, _, err = run("simulate", tmp_path / "r.json")
    assert code == 2 and "does not pass synth check: phase 1, flow 0: path has 1 channels" in err
    schedule = json.loads(schedule_file.read_text())
    schedule["steps"] = schedule["steps"][::-1]  # the allgather half first: blocks sent before they are reduced
    (tmp_path / "s.json").write_text(json.dumps(schedule))
    code, _, err = run("simulate", tmp_path / "s.json")
    assert code == 2 and "does not pass synth verify" in err and len(err.strip().splitlines()) == 1


def test_an_input_is_never_overwritten_and_the_format_may_come_last(run, schedule_file, tmp_path):
    copy = tmp_path / "copy.json"
    copy.write_bytes(schedule_file.read_bytes())
    code, _, err = run("simulate", copy, "--out", copy)
    assert code == 2 and "is an input of this run" in err and copy.read_bytes() == schedule_file.read_bytes()
    doc = json.loads(schedule_file.read_text())
    late = {key: value for key, value in doc.items() if key != "format"} | {"format": doc["format"]}
    (tmp_path / "late.json").write_text(json.dumps(late))
    assert run("simulate", tmp_path / "late.json", "--model", "CM02")[0] == 0


def test_a_bandwidth_simgrid_cannot_solve_and_a_module_that_does_not_load_are_one_line(run, schedule_file, tmp_path,
                                                                                       monkeypatch):
    code, _, err = run("simulate", schedule_file, "--bandwidth", "1e-9")
    assert code == 2 and "a simulation takes links of at least 0.001 Gb/s" in err
    import importlib.machinery

    fake = tmp_path / f"simgrid{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    fake.write_text("not a module")
    monkeypatch.setenv("SYNTH_SIMGRID", str(tmp_path))
    code, _, err = run("simulate", schedule_file)
    assert code == 2 and f"cannot load SimGrid's module {fake}" in err and len(err.strip().splitlines()) == 1


def test_a_model_the_installed_simgrid_lacks_is_one_line(tmp_path):
    """A SimGrid without a model (IB needs SMPI, which PyPI's build leaves out; SYNTH_SIMGRID may name
    such a build) says so and aborts; synth passes its list of models on as a user error. Checked
    with a name no SimGrid has, through the real worker."""
    from synth.core.errors import SynthError
    from synth.simulation import runner
    from synth.simulation.platform import build_platform
    from synth.topology import parse_topology
    from synth.topology.paths import Paths

    network = parse_topology("xgft:1:2:1").network()  # channel t leaves terminal t, channel 2 + t enters it
    src, dst = np.array([0]), np.array([1])
    platform, transfers = build_platform(network, src, dst, 1, Paths(np.array([0, 2]), np.array([0, 3])),
                                         np.zeros(1, dtype=np.int64), np.array([1000]), 1e-6, 0.0, 100e9)
    source = tmp_path / "in.npz"
    np.savez(source, **runner.pack(platform, transfers, np.arange(2), runner.Settings(model="NoSuchModel")))
    with pytest.raises(SynthError, match=r"Unable to find network model 'NoSuchModel'\. Valid values are: .*LV08"):
        runner._run_worker([str(source), str(tmp_path / "out.npz"), str(os.getpid())], None)
    assert not (tmp_path / "out.npz").exists()
