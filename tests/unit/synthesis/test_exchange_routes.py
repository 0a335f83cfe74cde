"""`synth synthesize alltoall --routes-out FILE`: the exchange's routing as a routes file (one
phase of every node pair, traffic a2a-all) that `synth check` passes, `synth tables` turns into
LFTs and `synth synthesize --routes` takes back. Checked: the file's max contention recounted here
from its paths (the program's bytes over bandwidth, or messages), every node pair once along the
path the schedule's record priced, the round trip giving the same busiest load, byte-identical
reruns, and the refusals (other collectives, alltoallv), one line and exit 2 with nothing written."""

from __future__ import annotations

import json

import numpy as np
import pytest

from synth.io.routes_file import read_routes
from synth.topology import parse_topology
from tests.helpers import assert_user_error


@pytest.mark.parametrize("spec, q, router", [("torus:4,4", 1, "minimal"), ("dragonfly:2,4,2", 2, "paths")])
def test_the_exchange_routes_pass_check_make_tables_and_come_back(run, tmp_path, spec, q, router):
    out = tmp_path / "r.json"
    code, text, err = run("synthesize", "alltoall", "--network", spec, "--ranks-per-node", str(q), "--bytes", "1MiB",
                          "--time-limit", "20", "--routes-out", out, "--quiet")
    assert code == 0, err
    doc = read_routes(out)
    assert doc["router"] == router and doc["traffic"]["pattern"] == "a2a-all" and len(doc["phases"]) == 1
    network = parse_topology(spec).network()
    n = network.num_terminals
    (phase,) = doc["phases"]
    flows = np.array(phase["flows"])
    assert sorted(map(tuple, flows[:, :2].tolist())) == [(a, b) for a in range(n) for b in range(n) if a != b]
    assert (flows[:, 2] == q * q).all()  # a node pair's Q^2 blocks, a byte each
    load = np.zeros(network.num_channels)
    for (a, b, size), path in zip(flows.tolist(), phase["paths"]):
        assert network.channel_src[path[0]] == a and network.channel_dst[path[-1]] == b
        for c in path:
            load[c] += size / network.channel_bandwidth[c] if doc.get("load_unit") == "bytes" else 1
    assert phase["max_contention"] == int(round(load.max())) and phase["max_contention"] >= phase["lower_bound"]
    assert run("check", out)[0] == 0
    code, _, err = run("tables", out, "--out", tmp_path / "tables")
    cyclic = "its channel dependencies have a cycle" in err  # (issue 41: refused without lanes, unless allowed)
    assert code == 0 or (code == 2 and cyclic and "--allow-deadlock" in err), err
    code, _, err = run("tables", out, "--out", tmp_path / "tables", *(["--allow-deadlock"] if cyclic else []))
    assert code == 0 and (tmp_path / "tables" / "lfts.dump").is_file(), err
    # the file's paths are the routing the schedule was priced along: synthesized again along them, the same front
    again = tmp_path / "again.json"
    code, text2, err = run("synthesize", "alltoall", "--network", spec, "--ranks-per-node", str(q), "--bytes", "1MiB",
                           "--routes", out, "--routes-out", again, "--quiet")
    assert code == 0, err
    one_phase = [line for line in text.splitlines() if line.startswith("front")]
    busiest = one_phase[0].split("1 step: busiest ")[1].split(" ")[0]
    assert f"1 step: busiest {busiest} " in text2
    assert json.loads(again.read_text())["phases"][0]["paths"] == phase["paths"]


def test_a_rerun_writes_the_same_bytes(run, tmp_path):
    files = []
    for name in ("a.json", "b.json"):
        code, _, err = run("synthesize", "alltoall", "--network", "kautz:3,2", "--time-limit", "10", "--routes-out",
                           tmp_path / name, "--quiet")
        assert code == 0, err
        files.append((tmp_path / name).read_bytes())
    assert files[0] == files[1]


@pytest.mark.parametrize("collective, extra, says", [
    ("allgather", (), "only an alltoall"),
    ("alltoallv", ("--sizes", "random:1000:1"), "alltoallv"),
])
def test_routes_out_of_other_collectives_is_refused(run, tmp_path, collective, extra, says):
    out = tmp_path / "r.json"
    assert_user_error(run("synthesize", collective, "--network", "torus:4,4", *extra, "--routes-out", out), says)
    assert not out.exists()


def test_an_unwritable_routes_out_is_one_line_before_any_routing(run, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = tmp_path / "schedule.json"
    assert_user_error(run("synthesize", "alltoall", "--network", "torus:4,4", "--out", out, "--routes-out",
                          blocker / "r.json"), "not a directory")
    assert not out.exists()


def test_an_empty_routes_out_is_named(run, tmp_path):
    assert_user_error(run("synthesize", "alltoall", "--network", "torus:4,4", "--routes-out", ""), "--routes-out is empty")
