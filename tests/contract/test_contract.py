"""The contract of every command (docs/architecture.md, DESIGN.md): exit codes, all-or-nothing
outputs, signals, size guards and byte-identical reruns."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import synth.app.route
import synth.cli
from helpers import REPO, TABLE_3_1

SMALL = "xgft:3:4,4,2:1,4,2"  # 32 leaves


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


# ----- exit codes ----------------------------------------------------------------------------------

def test_an_internal_error_is_one_line_exit_70_and_the_traceback_only_with_debug(run, monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("a deliberate bug")

    monkeypatch.setattr(synth.app.route, "check_flow_limit", broken)
    code, _, err = run("route", SMALL, "--traffic", "a2a-opt", "--router", "dmodk", "--phase", "0")
    assert code == 70
    assert err.strip().splitlines() == ["synth: internal error (a bug in synth; please report it with the command): "
                                        "ZeroDivisionError: a deliberate bug (rerun with --debug for the traceback)"]
    code, _, err = run("--debug", "route", SMALL, "--traffic", "a2a-opt", "--router", "dmodk", "--phase", "0")
    assert code == 70 and "Traceback (most recent call last)" in err and "ZeroDivisionError" in err
    assert err.strip().splitlines()[-1].startswith("synth: internal error")


def test_exit_codes_are_in_the_help():
    assert "0 ok, 1 a check found a difference, 2 bad input, 70 internal error" in synth.cli.build_parser().format_help()


# ----- all-or-nothing outputs ---------------------------------------------------------------------

def test_route_writes_neither_file_when_one_target_cannot_be_written(run, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("in the way")
    code, _, err = run("route", SMALL, "--traffic", "a2a-opt", "--router", "dmodk", "--phase", "0-3",
                       "--out", tmp_path / "r.json", "--loads", blocker / "loads.csv")
    assert code == 2
    assert err.strip().splitlines() == [f"synth: error: cannot write {blocker}: {blocker} is not a directory"]
    assert files_under(tmp_path) == ["file"]


def test_route_into_a_missing_directory_is_one_line_and_writes_nothing(run, tmp_path):
    """A missing directory is a mistyped path: refused, not made (issue 41)."""
    code, _, err = run("route", SMALL, "--traffic", "a2a-opt", "--router", "dmodk", "--phase", "0-3", "--quiet",
                       "--out", tmp_path / "r.json", "--loads", tmp_path / "b" / "c" / "loads.csv")
    assert code == 2
    assert err.strip().splitlines() == [f"synth: error: cannot write {tmp_path / 'b' / 'c' / 'loads.csv'}: no directory "
                                        f"{tmp_path / 'b' / 'c'}"]
    assert files_under(tmp_path) == []
    (tmp_path / "a").mkdir()
    code, _, _ = run("route", SMALL, "--traffic", "a2a-opt", "--router", "dmodk", "--phase", "0-3", "--quiet",
                     "--out", tmp_path / "a" / "r.json")
    assert code == 0 and files_under(tmp_path) == ["a", "a/r.json"]
    assert oct((tmp_path / "a" / "r.json").stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("argv, message", [
    (["route", SMALL, "--traffic", "a2a-opt", "--router", "dmodk", "--out", "{d}/same", "--loads", "{d}/same"],
     "is given as two outputs of one run"),
    (["route", SMALL, "--traffic", "a2a-opt", "--router", "dmodk", "--out", "{d}/same", "--loads", "{d}/x/../same"],
     "is given as two outputs of one run"),  # one file, spelled two ways
    (["route", SMALL, "--traffic", "a2a-opt", "--router", "dmodk", "--out", ""], "--out is empty"),
    (["route", SMALL, "--traffic", "a2a-opt", "--router", "dmodk", "--out", "{d}"], "cannot write {d}: it is a directory"),
    (["topology", SMALL, "--out", "{d}/t.json"], "--out writes the network as a file: add --format json or --format ibnetdiscover"),
    (["report", SMALL, "--patterns", "opt", "--routers", "dmodk", "--out", "{d}/r.html", "--out", "{d}/f/r.md"],
     "cannot write {d}/f: {d}/f is not a directory"),
])
def test_unwritable_or_contradictory_outputs(run, tmp_path, argv, message):
    (tmp_path / "f").write_text("a file where a directory goes")
    before = files_under(tmp_path)
    code, _, err = run(*[a.format(d=tmp_path) for a in argv])
    assert code == 2 and message.format(d=tmp_path) in err and len(err.strip().splitlines()) == 1
    assert files_under(tmp_path) == before


def test_tables_into_a_file_writes_nothing(run, tmp_path):
    routes = tmp_path / "r.json"
    assert run("route", SMALL, "--traffic", "a2a-opt", "--router", "dmodk", "--phase", "0", "--out", routes, "--quiet")[0] == 0
    (tmp_path / "t").write_text("not a directory")
    code, _, err = run("tables", routes, "--out", tmp_path / "t")
    assert code == 2 and f"cannot write {tmp_path / 't'}: it is not a directory" in err
    code, _, err = run("tables", routes, "--out", tmp_path / "t" / "sub")
    assert code == 2 and "is not a directory" in err
    assert files_under(tmp_path) == ["r.json", "t"]


# ----- signals ------------------------------------------------------------------------------------

def test_cp_sat_leaves_an_ignored_sigint_ignored():
    """Workers ignore SIGINT. CP-SAT by default catches SIGINT during a solve and then resets it to
    the default action (death), so a Ctrl-C after a worker's first solve killed the worker and hung
    the pool (the test below, now and then). Checked on the process's real signal mask."""
    script = """
import signal
from ortools.sat.python import cp_model
from synth.solve.cpsat import configure
def ignored():
    mask = int([l for l in open("/proc/self/status") if l.startswith("SigIgn")][0].split()[1], 16)
    return bool(mask & (1 << (signal.SIGINT - 1)))
signal.signal(signal.SIGINT, signal.SIG_IGN)
model = cp_model.CpModel()
model.maximize(model.new_bool_var("x"))
solver = cp_model.CpSolver()
configure(solver.parameters, None, 1)
solver.solve(model)
print(ignored())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr


def test_an_output_never_overwrites_an_input(run, tmp_path):
    matrix = tmp_path / "traffic.csv"
    matrix.write_text("src,dst\n0,5\n5,0\n")
    (tmp_path / "link").symlink_to(tmp_path)
    instance = tmp_path / "net.toml"
    instance.write_text('[topology]\nspec = "dragonfly:1,2,1"\n')
    before = {p: p.read_bytes() for p in (matrix, instance)}
    for argv in (["route", "dragonfly:1,2,1", "--traffic", f"csv:{matrix}", "--router", "minimal", "--loads",
                  tmp_path / "link" / "traffic.csv"],
                 ["route", instance, "--traffic", "a2a-lin", "--router", "minimal", "--out", instance]):
        code, _, err = run(*argv)
        assert code == 2 and "is an input of this run" in err and len(err.strip().splitlines()) == 1, err
    assert {p: p.read_bytes() for p in (matrix, instance)} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "net.toml", "traffic.csv"]


@pytest.mark.parametrize("signum, code, whole_group", [(signal.SIGTERM, 143, False), (signal.SIGINT, 130, True)])
def test_a_signal_stops_the_run_with_one_line_and_leaves_nothing(tmp_path, signum, code, whole_group):
    """A long synthesis with two outputs, stopped once phases are streaming into the routes file:
    SIGTERM to the process (what kill and schedulers send), SIGINT to the whole process group
    (what Ctrl-C does, workers included)."""
    out = tmp_path / "out"
    out.mkdir()
    command = [sys.executable, "-m", "synth", "route", "instances/table3.1/xgft256.toml", "--router", "layered",
               "--out", str(out / "r.json"), "--loads", str(out / "loads.csv")]
    # Ctrl-C as from a terminal: a test run started in the background (`pytest &` from a script) has
    # SIGINT ignored, and a child inherits that (as it should: synth keeps an ignored SIGINT ignored)
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               cwd=REPO, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        for line in process.stderr:  # progress lines: routing has started in the workers
            if line.startswith("  phase"):
                break
        hidden = [p.name for p in out.rglob(".*.tmp")]
        assert len(hidden) == 2  # both targets reserved while routing
        if whole_group:
            os.killpg(process.pid, signum)
        else:
            process.send_signal(signum)
        rest = process.stderr.read()
        status = process.wait(timeout=60)
        assert status == code, f"exit {status}; stderr after the signal:\n{rest[-3000:]}"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    lines = [line for line in rest.splitlines() if not line.startswith("  ")]  # progress lines
    assert lines == [f"synth: interrupted ({signal.Signals(signum).name}); no output written"]
    assert "Traceback" not in rest
    assert files_under(out) == []  # no routes file, no loads, no temporaries, no directory made for them
    time.sleep(0.5)
    leftover = subprocess.run(["pgrep", "-s", str(process.pid)], capture_output=True, text=True).stdout.split()
    assert leftover == []  # the worker processes stopped too


# ----- size guards --------------------------------------------------------------------------------

def test_runs_above_the_flow_limit_are_refused_before_any_work(run, tmp_path):
    code, _, err = run("route", TABLE_3_1[8192], "--traffic", "a2a-opt", "--router", "layered", "--out", tmp_path / "r.json")
    assert code == 2
    assert ("the run has 67,108,864 flows (8,192 phases of 'a2a-opt'), more than the limit of 4,194,304 for routes "
            "synthesized or kept for a file; select fewer phases with --phase, or lift the limit with --max-flows N") in err
    code, _, err = run("bounds", SMALL, "--traffic", "a2a-opt", "--max-flows", "100")
    assert code == 2 and "the run has 1,024 flows" in err and "limit of 100 for load analysis" in err
    assert run("bounds", SMALL, "--traffic", "a2a-opt", "--max-flows", "1024")[0] == 0
    assert files_under(tmp_path) == []


def test_a_huge_phase_number_in_a_traffic_matrix_is_one_sparse_phase(run, tmp_path):
    matrix = tmp_path / "m.csv"
    matrix.write_text(f"src,dst,bytes,phase\n0,5,100,{10**15}\n1,2,100,0\n3,4,100,{10**15}\n")
    code, out, _ = run("route", SMALL, "--traffic", f"csv:{matrix}", "--router", "dmodk", "--out", tmp_path / "r.json")
    assert code == 0 and "2 of 2 phases" in out
    code, out, _ = run("route", SMALL, "--traffic", f"csv:{matrix}", "--router", "dmodk", "--phase", str(10**15))
    assert code == 0 and "1 of 2 phases" in out
    code, _, err = run("route", SMALL, "--traffic", f"csv:{matrix}", "--router", "dmodk", "--phase", "7")
    assert code == 2 and "phase 7 is not a phase of" in err
    assert run("check", tmp_path / "r.json")[0] == 0


# ----- byte-identical reruns ----------------------------------------------------------------------

def _twice(run, folder, make) -> tuple[dict, dict]:
    """The files one command writes, run twice with the same arguments (paths included: a
    report names its command)."""
    import shutil

    outputs = []
    for _ in range(2):
        folder.mkdir(parents=True)
        code, _, _ = run(*make(folder))
        assert code == 0
        outputs.append({p: (folder / p).read_bytes() for p in files_under(folder) if (folder / p).is_file()})
        shutil.rmtree(folder)
    return outputs[0], outputs[1]


@pytest.mark.parametrize("options", [
    ["--router", "layered", "--threads", "2"],
    ["--router", "layered", "--consistency", "destination", "--threads", "2"],
    ["--router", "monolithic", "--threads", "2", "--time-limit", "0.2", "--phase", "0-1"],  # stops at its limit
    ["--router", "random", "--seed", "5"],
])
def test_routes_files_are_byte_identical_between_runs(run, tmp_path, options):
    first, second = _twice(run, tmp_path / "out", lambda d: ["route", TABLE_3_1[64], "--traffic", "a2a-opt", *options,
                                                     "--out", d / "r.json", "--loads", d / "l.csv", "--quiet"])
    assert set(first) == {"r.json", "l.csv"} and first == second
    assert b"seconds" not in first["r.json"]


def test_tables_and_reports_are_byte_identical_between_runs(run, tmp_path):
    routes = tmp_path / "r.json"
    assert run("route", TABLE_3_1[64], "--traffic", "a2a-opt", "--router", "layered", "--out", routes, "--quiet")[0] == 0
    first, second = _twice(run, tmp_path / "tables", lambda d: ["tables", routes, "--out", d / "t"])
    assert "t/lfts.dump" in first and first == second
    first, second = _twice(run, tmp_path / "reports", lambda d: [
        "report", TABLE_3_1[32], "--patterns", "opt,lin", "--routers", "dmodk,random,layered", "--quiet",
        "--out", d / "r.html", "--out", d / "r.md"])
    assert {"r.html", "r.md", "r-opt.png", "r-time.png"} <= set(first) and first == second


@pytest.mark.parametrize("name", ["fabric.net", "guid2lid", "lfts.dump", "dlid.csv", "routes.json"])
@pytest.mark.parametrize("content", [b"\x00\xff\xfe binary \x89PNG", b"", b"0x1 2 3\n"])
def test_opensm_check_refuses_a_damaged_table_directory_in_one_line(run, tmp_path, name, content):
    routes = tmp_path / "r.json"
    assert run("route", SMALL, "--traffic", "a2a-opt", "--router", "dmodk", "--phase", "0", "--out", routes, "--quiet")[0] == 0
    assert run("tables", routes, "--out", tmp_path / "t")[0] == 0
    (tmp_path / "t" / name).write_bytes(content)
    code, _, err = run("opensm-check", tmp_path / "t", "--engines", "none")
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("synth: error:"), err


# ----- the path-selection router, route --vls, tables with lanes (issue 11) -----------------------

@pytest.mark.parametrize("options", [
    ["--router", "paths", "--traffic", "randperm:2"],
    ["--router", "paths", "--candidates", "minimal", "--traffic", "worst-case"],  # the whole-phase model
    ["--router", "paths", "--consistency", "destination", "--traffic", "a2a-lin", "--phase", "1-6"],
    ["--router", "minimal", "--traffic", "a2a-lin", "--vls", "4"],
])
def test_direct_network_routes_and_tables_are_byte_identical_between_runs(run, tmp_path, options):
    first, second = _twice(run, tmp_path / "out", lambda d: ["route", "slimfly:5", *options, "--out", d / "r.json",
                                                             "--loads", d / "l.csv", "--quiet"])
    assert set(first) == {"r.json", "l.csv"} and first == second
    routes = tmp_path / "r.json"
    routes.write_bytes(first["r.json"])
    first, second = _twice(run, tmp_path / "tables", lambda d: ["tables", routes, "--out", d / "t"])
    assert "t/lfts.dump" in first and first == second
    assert ("t/qos-policy.conf" in first) == ("--vls" in options)


@pytest.mark.parametrize("argv, message", [
    (["--router", "paths", "--time-limit", "-1"], "--time-limit"),
    (["--router", "paths", "--candidates", ""], "unknown candidate set ''"),
    (["--router", "paths", "--out", "{d}/f/r.json"], "cannot write {d}/f"),
    (["--router", "paths", "--out", "{d}"], "cannot write {d}: it is a directory"),
    (["--router", "minimal", "--vls", "two", "--out", "{d}/r.json"], "--vls"),
    (["--router", "minimal", "--vls", "3", "--out", "{d}/f/r.json"], "cannot write {d}/f"),
])
def test_paths_and_vls_refuse_bad_values_and_unwritable_outputs(run, tmp_path, argv, message):
    (tmp_path / "f").write_text("a file where a directory goes")
    before = files_under(tmp_path)
    code, _, err = run("route", "slimfly:5", "--traffic", "randperm:1", "--quiet", *[a.format(d=tmp_path) for a in argv])
    assert code == 2 and message.format(d=tmp_path) in err and len(err.strip().splitlines()) == 1, err
    assert files_under(tmp_path) == before


def test_sigterm_stops_the_paths_router_and_leaves_nothing(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    command = [sys.executable, "-m", "synth", "route", "slimfly:7", "--router", "paths", "--traffic", "a2a-lin",
               "--out", str(out / "r.json"), "--vls", "8"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               cwd=REPO, start_new_session=True)
    try:
        for line in process.stderr:  # a phase routed: synthesis is under way in the workers
            if line.startswith("  phase"):
                break
        process.send_signal(signal.SIGTERM)
        rest = process.stderr.read()
        assert process.wait(timeout=60) == 143
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    lines = [line for line in rest.splitlines() if not line.startswith("  ")]  # progress lines
    assert lines == ["synth: interrupted (SIGTERM); no output written"]
    assert files_under(out) == []


def test_a_signal_that_an_extension_turns_into_its_own_error_is_still_an_interrupt(run, monkeypatch):
    """OR-Tools, loaded lazily, turns a KeyboardInterrupt during its initialization into
    `ImportError: initialization failed`: still an interrupted run (130), not a bug (70)."""
    import synth.cli.topology
    from synth.core import interrupt

    def loading_an_extension(args):
        try:
            signal.getsignal(signal.SIGINT)(signal.SIGINT, None)  # Ctrl-C arrives while it loads
        except KeyboardInterrupt:
            raise ImportError("initialization failed") from None

    monkeypatch.setattr(synth.cli.topology, "cmd_topology", loading_an_extension)
    code, out, err = run("topology", "xgft:2:4,4:1,4")
    assert (code, out, err) == (130, "", "synth: interrupted (SIGINT); no output written\n")
    assert interrupt.received == signal.SIGINT
    monkeypatch.undo()
    assert run("topology", "xgft:2:4,4:1,4")[0] == 0  # the next command starts afresh
    assert interrupt.received is None and signal.getsignal(signal.SIGINT) is signal.default_int_handler
