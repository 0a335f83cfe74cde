"""The command line: outputs, the routes file round trip through `synth check`, and bad input."""

import json
import subprocess
import sys

import numpy as np
import pytest

from helpers import REPO, legacy_routes
from synth.routing import oblivious

OBLIVIOUS_ROUTERS = {spec.name: spec.build(None) for spec in oblivious.ROUTER}  # the XGFT's fixed routers

SMALL = "xgft:3:4,3,2:1,4,3"


def test_topology_summary(run):
    code, out, _ = run("topology", "xgft:3:8,4,2:1,8,2")
    assert code == 0
    assert "XGFT(3; 8,4,2; 1,8,2)" in out
    assert "terminals 64, switches 40, links 160 (320 directed channels)" in out
    assert "saves 28.6% of switches and 16.7% of links" in out


def test_topology_json(run, tmp_path):
    target = tmp_path / "net.json"
    code, out, _ = run("topology", SMALL, "--format", "json", "--out", target)
    assert code == 0 and out == ""
    doc = json.loads(target.read_text())
    assert doc["format"] == "synth-topology/1" and doc["spec"] == SMALL and doc["terminals"] == 24
    assert doc["nodes"][0] == {"id": 0, "name": "t0", "kind": "terminal", "level": 0}
    assert {n["kind"] for n in doc["nodes"][24:]} == {"switch"}
    assert set(doc["channels"][0]) == {"id", "src", "src_port", "dst", "dst_port"}
    assert len(doc["channels"]) == 2 * (24 + 24 + 24)  # E(l) = S(l) M_l = 6*4, 8*3, 12*2


@pytest.mark.parametrize("router", sorted(OBLIVIOUS_ROUTERS))
@pytest.mark.parametrize("pattern", ["a2a-opt", "a2a-xor", "a2a-bgh", "bitrev", "uniform:3"])
def test_every_router_output_passes_check(run, tmp_path, router, pattern):
    target = tmp_path / "routes.json"
    spec = "xgft:3:4,4,2:1,4,2"
    code, out, _ = run("route", spec, "--traffic", pattern, "--router", router, "--seed", 9, "--out", target, "--quiet")
    assert code == 0, out
    doc = json.loads(target.read_text())
    assert doc["format"] == "synth-routes/2" and doc["topology"] == {"spec": spec} and doc["router"] == router
    phases = doc["phases"]
    assert len(phases) == doc["traffic"]["phases"]
    assert all(len(p["flows"]) == len(p["paths"]) == 32 for p in phases)
    assert all(p["status"] == ("optimal" if p["max_contention"] == p["lower_bound"] else "feasible") for p in phases)
    code, out, _ = run("check", target)
    assert code == 0 and out.splitlines()[-1].startswith("OK:"), out


def test_route_table_and_summary(run):
    code, out, _ = run("route", "xgft:3:8,4,2:1,8,2", "--traffic", "a2a-opt", "--router", "dmodk", "--phase", "0,3,5-6")
    assert code == 0
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("phase"))
    assert [line.split()[0] for line in lines[header + 1 : header + 5]] == ["0", "3", "5", "6"]
    assert "summary: 4 phases" in out and "lower bound up to 1" in out


def test_route_many_phases_prints_a_distribution(run):
    code, out, _ = run("route", "xgft:4:8,8,4,2:1,8,8,2", "--traffic", "a2a-opt", "--router", "smodk", "--quiet")
    assert code == 0
    assert "e.g. phases" in out and "summary: 512 phases" in out


def test_instance_file_supplies_defaults(run, tmp_path):
    instance = REPO / "instances" / "table2.1" / "xgft64.toml"
    code, out, _ = run("route", instance, "--phase", "1-2")
    assert code == 0
    assert "a2a-opt: 2 of 64 phases" in out and "router    dmodk" in out
    code, out, _ = run("route", instance, "--phase", "1", "--router", "smodk", "--traffic", "a2a-lin")
    assert "a2a-lin: 1 of 64" in out and "smodk" in out


def test_every_bundled_instance_loads(run):
    # instances/sweeps holds sweep files (synth sweep), not instances: each reads as a sweep file
    from synth.app.sweep import read_sweep

    sweeps = sorted((REPO / "instances" / "sweeps").glob("*.toml"))
    assert [p.name for p in sweeps] == ["small.toml"]
    assert all(read_sweep(str(p)).cells for p in sweeps)
    files = sorted(p for p in (REPO / "instances").rglob("*.toml") if p.parent.name != "sweeps")
    per_folder = {}
    for path in files:
        folder = path.parent.name
        per_folder[folder] = per_folder.get(folder, 0) + 1
    assert per_folder == {"table2.1": 7, "table3.1": 10, "table4.1": 11, "table4.2": 9,
                          "ch7": 5, "kautz": 1, "tori": 7, "2dfc": 3}
    for path in files:
        code, out, err = run("topology", path)
        assert code == 0, err


def test_bounds_command(run):
    code, out, _ = run("bounds", "xgft:3:8,8,2:1,8,4", "--traffic", "a2a-xor")
    assert code == 0
    assert "B_min(l)" in out and "ideal exchange time" in out
    rows = [line.split() for line in out.splitlines()]
    assert ["2", "64"] in rows and ["1", "63"] in rows and ["0", "1"] in rows  # sec. 2.5.2: 2 in N/2 phases
    code, out, _ = run("bounds", "xgft:3:8,4,2:1,8,2", "--traffic", "shift:8")
    assert code == 0 and "B_min" not in out and "stage 1: 1" in out


def tamper(run, tmp_path, change, legacy=False):
    target = tmp_path / "routes.json"
    assert run("route", SMALL, "--traffic", "a2a-opt", "--router", "dmodk", "--phase", "0-3", "--out", target, "--quiet")[0] == 0
    doc = json.loads(target.read_text())
    if legacy:
        legacy_routes(doc)
    change(doc)
    target.write_text(json.dumps(doc))
    return run("check", target)


def _swap_last_two_hops(doc):
    path = next(p for p in doc["phases"][1]["paths"] if len(p) == 6)
    path[-1], path[-2] = path[-2], path[-1]


@pytest.mark.parametrize("change, message", [
    (lambda d: d["phases"][0].__setitem__("max_contention", 99), "recorded max contention 99"),
    (lambda d: d["phases"][1].__setitem__("lower_bound", 0), "recorded lower bound 0"),
    (_swap_last_two_hops, "path runs"),
    (lambda d: d["phases"][1]["paths"][5].__setitem__(1, 30), "does not leave node"),
    (lambda d: d["phases"][3]["flows"][0].__setitem__(1, 7), "flows differ"),
    (lambda d: d["phases"][0]["paths"].pop(), "flows but"),
    (lambda d: d["phases"][2].__setitem__("status", "optimal"), "recorded status 'optimal', the numbers give 'feasible'"),
    (lambda d: d["phases"][2].__setitem__("status", "great"), "recorded status 'great'"),
])
def test_check_catches_tampering(run, tmp_path, change, message):
    code, out, _ = tamper(run, tmp_path, change)
    assert code == 1 and message in out and "FAILED" in out


def _swap_last_two_nodes(doc):
    path = next(p for p in doc["phases"][1]["paths"] if len(p) == 7)
    path[-1], path[-2] = path[-2], path[-1]


@pytest.mark.parametrize("change, message", [
    (_swap_last_two_nodes, "path runs"),
    (lambda d: d["phases"][1]["paths"][5].__setitem__(1, 30), "is not a channel"),
    (lambda d: d["phases"][0].__setitem__("max_contention", 99), "recorded max contention 99"),
])
def test_check_catches_tampering_in_node_paths_of_version_1(run, tmp_path, change, message):
    assert tamper(run, tmp_path, lambda d: None, legacy=True)[0] == 0
    code, out, _ = tamper(run, tmp_path, change, legacy=True)
    assert code == 1 and message in out and "FAILED" in out


def test_check_catches_a_non_minimal_path(run, tmp_path):
    from synth.topology import parse_topology
    network = parse_topology(SMALL).network()

    def detour(doc):
        phase = doc["phases"][1]
        for i, (src, dst, _) in enumerate(phase["flows"]):
            path = phase["paths"][i]
            if len(path) == 2:  # through one leaf switch: go up to layer 2 and back down
                leaf = network.channel_dst[path[0]]
                up = int(np.flatnonzero((network.channel_src == leaf) & network.channel_is_up())[0])
                down = int(network.find_channels([network.channel_dst[up]], [leaf])[0])
                phase["paths"][i] = [path[0], up, down, path[1]]
                return
        raise AssertionError("no short path to lengthen")

    code, out, _ = tamper(run, tmp_path, detour)
    assert code == 1 and "path has 4 channels, a minimal one has 2" in out


@pytest.mark.parametrize("argv, message", [
    (["topology", "xgft:3:8,0,2:1,8,2"], "M_2 in 'xgft:3:8,0,2:1,8,2' must be between 1 and 65536, got 0"),
    (["topology", "xgft:3:8,4:1,8,2"], "needs 3 M and 3 W"),
    (["route", SMALL, "--traffic", "a2a-nope", "--router", "dmodk"], "unknown traffic pattern"),
    (["route", SMALL, "--traffic", "a2a-opt", "--router", "magic"], "unknown router 'magic'"),
    (["route", SMALL, "--traffic", "a2a-opt", "--router", "dmodk", "--phase", "24"], "phase 24 out of range"),
    (["route", SMALL, "--traffic", "a2a-opt", "--router", "dmodk", "--phase", "x"], "expected all, P, P1,P2,... or A-B"),
    (["route", SMALL, "--traffic", "a2a-xor", "--router", "dmodk"], "power-of-two"),
    (["route", SMALL, "--traffic", "csv:/no/such.csv", "--router", "dmodk"], "cannot read traffic file"),
    (["route", SMALL, "--router", "dmodk"], "no traffic given"),
    (["route", SMALL, "--traffic", "a2a-opt", "--router", "dmodk", "--seed", "-1"], "--seed must be at least 0, got -1"),
    (["bounds", "nope.toml", "--traffic", "a2a-opt"], "cannot read instance file"),
    (["check", "/no/such/routes.json"], "cannot read routes file"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_input_is_one_line_and_exit_2(run, tmp_path, argv, message):
    target = tmp_path / "out.json"
    code, out, err = run(*argv, "--out", target) if argv[0] == "route" else run(*argv)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1 and err.startswith("synth: error:")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_malformed_csv_and_foreign_routes_file(run, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("0,1,2\nthree,4,5\n")
    code, _, err = run("route", SMALL, "--traffic", f"csv:{bad}", "--router", "dmodk", "--out", tmp_path / "r.json")
    assert code == 2 and "line 2: src must be an integer, got 'three'" in err and not (tmp_path / "r.json").exists()
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": "synth-routes/9", "phases": []}))
    code, _, err = run("check", other)
    assert code == 2 and "expected one of synth-routes/1, synth-routes/2" in err
    other.write_text("{not json")
    assert run("check", other)[0] == 2


def test_csv_traffic_end_to_end(run, tmp_path):
    matrix = tmp_path / "m.csv"
    matrix.write_text("src,dst,bytes,phase\n0,23,1000,0\n0,23,1000,0\n5,6,10,1\n")
    target = tmp_path / "r.json"
    code, out, _ = run("route", SMALL, "--traffic", f"csv:{matrix}", "--router", "random-msg", "--out", target, "--quiet")
    assert code == 0
    code, out, _ = run("check", target)
    assert code == 0 and "not compared" not in out  # the matrix is there: reread and compared
    matrix.write_text("src,dst,bytes,phase\n0,23,1000,0\n5,6,10,1\n")  # one flow fewer than routed
    code, out, _ = run("check", target)
    assert code == 1 and "flows differ from those of" in out
    matrix.unlink()
    code, out, _ = run("check", target)
    assert code == 0 and "flows not compared with" in out and "(the file is not there)" in out


def test_no_traceback_from_the_installed_command(tmp_path):
    result = subprocess.run([sys.executable, "-m", "synth", "route", "xgft:3:8,0,2:1,8,2", "--traffic", "a2a-opt",
                             "--router", "dmodk", "--out", str(tmp_path / "x.json")], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "synth: error: XGFT M_2 in 'xgft:3:8,0,2:1,8,2' must be between 1 and 65536, got 0"]
    assert "Traceback" not in result.stderr and not (tmp_path / "x.json").exists()


def test_loads_csv(run, tmp_path):
    import csv
    target = tmp_path / "loads.csv"
    code, out, _ = run("route", "xgft:3:8,4,2:1,8,2", "--traffic", "a2a-opt", "--router", "dmodk", "--phase", "0-7",
                       "--bytes", 1000, "--loads", target, "--quiet")
    assert code == 0 and "stage" in out
    rows = list(csv.DictReader(target.open()))
    assert len(rows) == 320
    from synth.topology import parse_topology
    from synth.traffic.patterns import parse_pattern
    xgft = parse_topology("xgft:3:8,4,2:1,8,2")
    workload = parse_pattern("a2a-opt", 64, xgft.hierarchy())
    hops = sum(int(2 * xgft.nca_layer(f.src, f.dst).sum()) for f in map(workload.flows, range(8)))
    assert sum(int(r["messages"]) for r in rows) == hops
    assert all(int(r["bytes"]) == 1000 * int(r["messages"]) for r in rows)
    assert max(int(r["peak_messages_per_phase"]) for r in rows) == 7
    assert {r["direction"] for r in rows} == {"up", "down"}


def test_route_and_bounds_name_the_binding_bound(run):
    """Issue 10: both commands say which bound is binding, per phase and over the phases."""
    # dragonfly(2,2,1): the 4 terminals of a group all send to the next group over its 2 global links.
    code, out, _ = run("route", "dragonfly:2,2,1", "--traffic", "shift:4", "--router", "minimal")
    assert code == 0
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("phase "))
    assert "binding" in lines[header].split()
    assert lines[header + 1].split()[:7] == ["0", "4", "2", "group", "cut", "2", "feasible"]
    assert "binding bound: group cut in 1 phase\n" in out
    code, out, _ = run("bounds", "dragonfly:2,2,1", "--traffic", "shift:4")
    assert ["0", "2", "group", "cut", "1", "2"] in [line.split() for line in out.splitlines()]
    # XGFT: a2a-lin phase 0 sends to itself (no bound binds); the others are bound by stage 1 or 3.
    code, out, _ = run("route", "xgft:3:8,4,2:1,8,2", "--traffic", "a2a-lin", "--router", "dmodk", "--table")
    assert "binding bound: stage 1 in 32 phases, stage 3 in 31 phases" in out
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("phase "))
    assert lines[header + 1].split()[:4] == ["0", "0", "0", "-"]


@pytest.mark.parametrize("argv, message", [
    (["--traffic", "a2a-lin:"], "traffic pattern 'a2a-lin:': nothing after ':' (a2a-lin[:SHIFT])"),
    (["--traffic", "randperm:"], "nothing after ':' (randperm:SEED)"),
    (["--traffic", "a2a-lin", "--phase", "99999999999999999999"], "must be within 64-bit integers"),
    (["--traffic", "a2a-lin", "--seed", "99999999999999999999"], "must be within 64-bit integers"),
])
def test_empty_pattern_arguments_and_huge_numbers(run, argv, message):
    code, out, err = run("route", "dragonfly:1,2,1", "--router", "minimal", *argv)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and message in err, err


# ----- the command line's own texts (issue 22, CLI items) ---------------------------------------

def _help(*argv) -> str:
    from synth.cli import main

    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        main([*argv, "--help"])
    assert exited.value.code == 0
    return out.getvalue()


def test_version():
    from synth.cli import main
    import contextlib
    import io
    from importlib.metadata import version

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0 and out.getvalue() == f"synth {version('synth')}\n"


def test_bare_synth_names_the_commands(run):
    code, out, err = run()
    assert code == 2 and out == "" and err.count("\n") == 1
    for command in ("topology", "route", "check", "schedule", "verify", "compare", "report"):
        assert command in err
    assert "synth: error: synth:" not in err


def test_topology_help_lists_every_family():
    text = _help("topology")
    for syntax in ("xgft:H:", "dragonfly:P,A,H", "hyperx:S1,S2", "2dfc:M2,M1", "kautz:D", "slimfly:Q", "mlfm:H", "oft:K",
                   "torus:D0,D1"):
        assert syntax in text


@pytest.mark.parametrize("argv,described", [
    (("compare",), ("COLLECTIVE  ", "--network SPEC  ", "--alpha S  ", "--bandwidth GBPS")),
    (("check",), ("ROUTES.json  ",)),
    (("verify",), ("SCHEDULE.json  ",)),
    (("tables",), ("ROUTES.json  ", "--format {opensm,json,csv}")),
])
def test_arguments_are_described(argv, described):
    text = " ".join(_help(*argv).split("\n"))
    for name in described:
        at = text.index(name.strip())
        after = text[at + len(name.strip()):].lstrip()
        assert after and not after.startswith(("-", "options:")), f"{name} has no description"


def test_schedule_list_columns_align(run):
    code, out, _ = run("schedule", "--list")
    lines = out.splitlines()
    starts = {len(line) - len(line[len(line.split()[0]):].lstrip()) for line in lines}
    assert len(lines) > 20 and len(starts) == 1  # the second column starts at one place on every line
    third = lines[0].index("what it does")
    assert all(line[third - 2:third] == "  " for line in lines)


def test_one_phase_is_singular(run):
    code, out, _ = run("route", "dragonfly:1,2,1", "--traffic", "randperm:1", "--router", "minimal")
    assert code == 0 and "summary: 1 phase (" in out and "1 phases" not in out


def test_stencil_without_a_fitting_task_grid_says_which_fit(run):
    code, out, err = run("model", "stencil", "dragonfly:3,6,3", "--alpha", "64x64x64", "--tasks", "342")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "no grid of 342 tasks divides the domain 64x64x64" in err and "256 tasks fit" in err
