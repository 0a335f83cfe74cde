"""The public API (synth.api, issue 23): its docstring examples run as tests, it gives the numbers
the command line gives for the same inputs, its results are what they say (paths walked on a
network built here, loads recounted naively), and importing synth changes nothing in the process."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys

import numpy as np
import pytest

import synth
import synth.api


@pytest.mark.parametrize("module", ["synth.api", "synth.api.networks", "synth.api.routes", "synth.api.collectives"])
def test_the_docstring_examples_run(module):
    import importlib

    failures, tried = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert tried >= {"synth.api": 6, "synth.api.networks": 5, "synth.api.routes": 7, "synth.api.collectives": 14}[module]
    assert failures == 0


def test_importing_synth_loads_nothing_heavy_and_changes_nothing():
    code = ("import os, sys; before = dict(os.environ); import synth; "
            "print(sorted(m for m in ('numpy', 'scipy', 'ortools', 'synth.api') if m in sys.modules)); "
            "print(dict(os.environ) == before); print(synth.__all__ == [n for n in synth.__all__ if n in dir(synth)])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:3] == ["[]", "True", "True"]


def test_the_public_names_are_the_api():
    assert set(synth.__all__) == set(synth.api.__all__)
    for name in synth.__all__:
        assert getattr(synth, name) is getattr(synth.api, name)
        assert getattr(synth.api, name).__doc__, name
    with pytest.raises(AttributeError):
        synth.no_such_name  # noqa: B018


@pytest.mark.parametrize("spec, pattern, router", [
    ("xgft:3:4,4,2:1,4,2", "a2a-lin", "dmodk"),
    ("dragonfly:2,4,2", "randperm:3", "valiant"),
    ("torus:4,4", "shift:3", "dor"),
    ("slimfly:5", "a2a-xor", "minimal"),
])
def test_route_gives_the_command_lines_numbers(run, tmp_path, spec, pattern, router):
    if pattern == "a2a-xor" and spec.startswith("slimfly"):
        pattern = "randperm:7"  # 50 terminals: not a power of two
    routing = synth.route(spec, pattern, router, phases="0-3" if pattern.startswith("a2a") else "all", seed=3)
    out = tmp_path / "r.json"
    code, _, err = run("route", spec, "--traffic", pattern, "--router", router, "--seed", 3, "--phase",
                       "0-3" if pattern.startswith("a2a") else "all", "--out", out, "--quiet")
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert [p.phase for p in routing.phases] == [e["phase"] for e in doc["phases"]]
    for phase, entry in zip(routing.phases, doc["phases"]):
        assert [list(f[:2]) for f in entry["flows"]] == np.stack([phase.src, phase.dst], axis=1).tolist()
        assert [phase.path(i).tolist() for i in range(len(phase.src))] == entry["paths"]
        assert (phase.max_contention, phase.lower_bound, phase.status) == \
            (entry["max_contention"], entry["lower_bound"], entry["status"])


def test_route_results_walk_the_network_and_their_loads_recount():
    """Every path starts at its flow's source, follows channels head to tail and ends at its
    destination; the contention is the busiest channel's count, recounted flow by flow."""
    routing = synth.route("dragonfly:2,4,2", "a2a-lin", "minimal", phases="1-5")
    net = routing.topology.network()
    for phase in routing.phases:
        counts = {}
        for i in range(len(phase.src)):
            path = phase.path(i).tolist()
            assert net.channel_src[path[0]] == phase.src[i] and net.channel_dst[path[-1]] == phase.dst[i]
            for a, b in zip(path, path[1:]):
                assert net.channel_dst[a] == net.channel_src[b]
            for c in path:
                counts[c] = counts.get(c, 0) + 1
        assert phase.max_contention == max(counts.values())
        assert phase.lower_bound <= phase.max_contention


def test_to_networkx_carries_the_channels_and_their_loads():
    routing = synth.route("torus:4,4", "shift:1", "minimal")
    graph = routing.to_networkx()
    net = routing.topology.network()
    assert graph.number_of_nodes() == net.num_nodes and graph.number_of_edges() == net.num_channels
    loads = routing.phases[0].loads(net.num_channels)
    for a, b, key, data in graph.edges(keys=True, data=True):
        assert (a, b) == (net.channel_src[key], net.channel_dst[key]) and data["load"] == loads[key]
    with pytest.raises(KeyError):
        routing.to_networkx(phase=7)


def test_bounds_schedule_price_and_compare_agree_with_the_command_line(run, tmp_path):
    (b,) = synth.bounds("dragonfly:2,4,2", "randperm:3", lp=True)
    code, out, _ = run("bounds", "dragonfly:2,4,2", "--traffic", "randperm:3", "--lp")
    assert code == 0 and f"  {b.lower_bound}  " in out.splitlines()[4] + "  "
    assert b.lp == 2 and b.lower_bound == max(b.lp, *b.cuts.values())

    schedule = synth.schedule("allgather", "torus:4,4", "ring", message_bytes=4096)
    code, out, _ = run("schedule", "allgather", "--algorithm", "ring", "--network", "torus:4,4", "--bytes", 4096,
                       "--out", tmp_path / "s.json")
    assert code == 0
    from synth.io.schedule_file import read_schedule

    written = read_schedule(str(tmp_path / "s.json"))
    for name in ("step_ptr", "src", "dst", "op", "block_ptr", "block_ids", "block_bytes"):
        assert np.array_equal(getattr(schedule, name), getattr(written, name)), name
    assert synth.verify(str(tmp_path / "s.json")).ok
    costs = synth.price(schedule)
    assert f"alpha-beta {costs.time * 1e6:.4g} us" in out
    assert costs.time >= costs.lower_bound

    comparison = synth.compare("allgather", "torus:4,4", sizes="1KiB,64KiB")
    assert [c.label for c in comparison.candidates][:1] and comparison.times.shape == (2, len(comparison.candidates))
    assert (comparison.times.min(axis=1) >= comparison.bounds - 1e-15).all()


def test_check_reports_a_tampered_file(run, tmp_path):
    out = tmp_path / "r.json"
    assert run("route", "torus:4,4", "--traffic", "shift:1", "--router", "minimal", "--out", out, "--quiet")[0] == 0
    assert synth.check(str(out)).ok
    doc = json.loads(out.read_text())
    doc["phases"][0]["max_contention"] += 1
    out.write_text(json.dumps(doc))
    report = synth.check(str(out))
    assert not report.ok and report.problems


def test_bad_input_is_one_synth_error():
    from synth.core.errors import SynthError

    with pytest.raises(SynthError, match="unknown"):
        synth.network("nosuchfamily:3")
    with pytest.raises(SynthError):
        synth.route("torus:4,4", "shift:1", "dmodk")
    with pytest.raises(SynthError):
        synth.schedule("allreduce", "torus:4,4", "md")
