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


MODULES = ["synth", "synth.api", "synth.api.networks", "synth.api.routes", "synth.api.collectives",
           "synth.api.outputs", "synth.topology.family"]


@pytest.mark.parametrize("module", MODULES)
def test_the_docstring_examples_run(module, tmp_path, monkeypatch):
    import importlib

    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    names = {name: getattr(synth.api, name) for name in synth.__all__}
    failures, tried = doctest.testmod(importlib.import_module(module), extraglobs=names,
                                      optionflags=doctest.ELLIPSIS)
    assert tried >= {"synth": 2, "synth.api": 6, "synth.api.networks": 5, "synth.api.routes": 14,
                     "synth.api.collectives": 19, "synth.api.outputs": 12, "synth.topology.family": 2}[module]
    assert failures == 0


def test_every_public_name_has_a_runnable_example_and_a_place_in_docs_api_md():
    from helpers import REPO

    page = (REPO / "docs" / "api.md").read_text()
    documented = {line.split("::: synth.api.", 1)[1].strip() for line in page.splitlines()
                  if line.startswith("::: synth.api.")}
    assert documented == set(synth.__all__)
    assert "::: synth.topology.family.Topology.to_networkx" in page
    for name in synth.__all__:
        examples = doctest.DocTestParser().get_examples(getattr(synth.api, name).__doc__)
        assert examples, f"{name} has no example in its docstring"


def test_help_of_synth_names_every_function():
    text = synth.__doc__
    for name in synth.__all__:
        assert f"``{name}``" in text, name


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


def test_the_files_the_api_writes_are_the_command_lines(run, tmp_path):
    """write_routes and write_schedule write the bytes synth route --out and synth schedule --out
    write; switch_tables, virtual_lanes and export the files synth tables, vls and export write."""
    routing = synth.route("dragonfly:2,4,2", "a2a-lin", "minimal", phases="0-3")
    for name in ("r.json", "r.h5"):
        synth.write_routes(routing, tmp_path / f"api-{name}")
        assert run("route", "dragonfly:2,4,2", "--traffic", "a2a-lin", "--router", "minimal", "--phase", "0-3",
                   "--out", tmp_path / f"cli-{name}", "--quiet")[0] == 0
        if name.endswith(".json"):
            assert (tmp_path / f"api-{name}").read_bytes() == (tmp_path / f"cli-{name}").read_bytes()
        assert synth.check(str(tmp_path / f"api-{name}")).ok
    assert synth.check(routing).ok

    lanes = synth.virtual_lanes(routing, tmp_path / "api-vls.json", max_vls=4)
    assert run("vls", tmp_path / "cli-r.json", "--out", tmp_path / "cli-vls.json", "--max-vls", 4)[0] == 0
    assert (tmp_path / "api-vls.json").read_bytes() == (tmp_path / "cli-vls.json").read_bytes()
    doc = json.loads((tmp_path / "api-vls.json").read_text())
    assert np.concatenate([p["vls"] for p in doc["phases"]]).tolist() == lanes.lanes.tolist()
    assert lanes.count == max(lanes.lanes) + 1 and sorted(lanes.per_phase()) == [0, 1, 2, 3]

    rendered = synth.switch_tables(tmp_path / "api-vls.json", tmp_path / "api-tables")
    assert run("tables", tmp_path / "cli-vls.json", "--out", tmp_path / "cli-tables")[0] == 0
    names = sorted(p.name for p in (tmp_path / "cli-tables").iterdir())
    assert sorted(p.name for p in (tmp_path / "api-tables").iterdir()) == names == sorted(rendered.texts)
    for name in names:
        assert (tmp_path / "api-tables" / name).read_bytes() == (tmp_path / "cli-tables" / name).read_bytes(), name
    assert "qos-policy.conf" in names and rendered.lanes_used == lanes.count

    schedule = synth.schedule("allgather", "torus:4,4", "ring", message_bytes=4096)
    for name in ("s.json", "s.h5"):
        synth.write_schedule(schedule, tmp_path / f"api-{name}")
        assert run("schedule", "allgather", "--algorithm", "ring", "--network", "torus:4,4", "--bytes", 4096,
                   "--out", tmp_path / f"cli-{name}")[0] == 0
        if name.endswith(".json"):
            assert (tmp_path / f"api-{name}").read_bytes() == (tmp_path / f"cli-{name}").read_bytes()
        assert synth.verify(str(tmp_path / f"api-{name}")).ok
    xml = synth.export(schedule, out=tmp_path / "api.xml", name="ring16")
    assert run("export", tmp_path / "cli-s.h5", "--name", "ring16", "--out", tmp_path / "cli.xml")[0] == 0
    assert (tmp_path / "api.xml").read_text() == xml == (tmp_path / "cli.xml").read_text()
    assert synth.export(str(tmp_path / "api-s.json"), name="ring16") == xml


def test_the_api_writes_all_or_nothing_and_refuses_in_one_line(tmp_path):
    from synth.core.errors import SynthError

    routing = synth.route("dragonfly:2,4,2", "a2a-lin", "valiant", phases="0-7")
    with pytest.raises(SynthError, match="lanes"):
        synth.write_routes(routing, tmp_path / "r.json", vls=1)
    with pytest.raises(SynthError, match="lanes"):
        synth.virtual_lanes(routing, tmp_path / "v.json", max_vls=1)
    with pytest.raises(SynthError):
        synth.export(synth.schedule("allgather", "torus:4", "ring"), "no-such-format")
    assert list(tmp_path.iterdir()) == []


def test_topology_to_networkx_is_the_network():
    net = synth.network("dragonfly:2,4,2")
    graph, network = net.to_networkx(), net.network()
    assert graph.graph == {"spec": net.spec, "family": "dragonfly"}
    assert graph.number_of_nodes() == network.num_nodes and graph.number_of_edges() == network.num_channels
    assert sum(kind == "terminal" for _, kind in graph.nodes(data="kind")) == network.num_terminals
    for a, b, key, data in graph.edges(keys=True, data=True):
        assert (a, b, data["src_port"], data["dst_port"]) == (
            network.channel_src[key], network.channel_dst[key], network.channel_src_port[key],
            network.channel_dst_port[key])


def test_compare_names_the_best_and_a_band_says_its_size():
    comparison = synth.compare("allgather", "torus:4,4", sizes="32B,64MiB")
    labels = [c.label for c in comparison.candidates]
    assert comparison.best == [labels[j] for j in comparison.times.argmin(axis=1)]
    assert all(isinstance(name, str) for name in comparison.best)
    (band,) = synth.synthesize("allgather", "torus:4", chunks=2, sizes="4KiB,1MiB")
    assert band.message_bytes == 4096 and band.sizes == [4096, 1 << 20]
    assert int(band.schedule.block_bytes[0]) == -(-band.message_bytes // band.schedule.blocks)
