"""Destination-consistent routes on direct networks (`--router paths --consistency destination`):
one channel per (node, destination) over every phase, checked here from the file alone; never worse
than minimal routing; tables without LMC; refusals."""

import json

import numpy as np
import pytest

from synth.routing.consistent_direct import route_consistent
from synth.routing.minimal import minimal
from synth.topology import parse_topology
from synth.traffic.patterns import parse_pattern

SPECS = ["slimfly:5", "hyperx:4,4:p=2", "torus:4,4", "dragonfly:2,4,2", "kautz:3", "2dfc:3,4"]


def _one_channel_per_node_and_destination(network, flows, paths) -> bool:
    seen: dict[tuple[int, int], int] = {}
    for (s, d, _), path in zip(flows, paths):
        for c in path:
            key = (d, int(network.channel_src[c]))
            if seen.setdefault(key, c) != c:
                return False
    return True


def _peak(network, phase, paths) -> int:
    keys = np.repeat(phase, paths.lengths()) * network.num_channels + paths.channels
    return int(np.bincount(keys).max(initial=0))


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("pattern", ["a2a-lin", "randperm:3", "uniform:2"])
def test_consistent_and_never_worse_than_minimal(spec, pattern):
    topology = parse_topology(spec)
    network = topology.network()
    workload = parse_pattern(pattern, network.num_terminals, topology.hierarchy(), topology=topology)
    phases = np.arange(min(workload.num_phases, 12))
    idx, src, dst, size = workload.batch(phases)
    paths, _ = route_consistent(topology, src, dst, idx)
    rows = [(int(s), int(d), 0) for s, d in zip(src, dst)]
    assert _one_channel_per_node_and_destination(network, rows, paths.as_lists())
    assert _peak(network, idx, paths) <= _peak(network, idx, minimal(topology, src, dst))


def test_check_and_tables_hold_consistent_routes_without_lmc(run, tmp_path):
    routes = tmp_path / "routes.json"
    code, out, err = run("route", "slimfly:5", "--router", "paths", "--consistency", "destination", "--traffic", "a2a-lin",
                         "--phase", "1-20", "--out", routes, "--quiet")
    assert code == 0, out + err
    code, out, _ = run("check", routes)
    assert code == 0 and "destination-consistent (one channel per node and destination)" in out
    code, out, err = run("tables", routes, "--out", tmp_path / "tables")
    assert code == 0 and "LMC 0" in out, out + err
    doc = json.loads(routes.read_text())
    assert doc["synthesis"]["consistency"] == "destination" and doc["synthesis"]["candidates"] == "minimal"


def test_a_node_forwarding_one_destination_two_ways_is_found():
    """Two flows to terminal 3 that leave router r0 by different channels (hyperx 4x4: r0 -> r1
    and r0 -> r4 both lead towards r5; routers are named by coordinates, r0.0 first)."""
    from synth.routing.consistent_direct import is_destination_consistent
    from synth.topology.paths import Paths

    network = parse_topology("hyperx:4,4").network()
    n = network.num_terminals
    channel = {(int(a), int(b)): c for c, (a, b) in enumerate(zip(network.channel_src, network.channel_dst))}
    via = lambda s, m: [channel[(s, n)], channel[(n, n + m)], channel[(n + m, n + 5)], channel[(n + 5, 5)]]  # noqa: E731
    same = Paths.concatenate([Paths.from_padded(np.array([via(0, 1)])), Paths.from_padded(np.array([via(0, 1)]))])
    assert is_destination_consistent(network, np.array([0, 0]), np.array([5, 5]), same)[0]
    split = Paths.concatenate([Paths.from_padded(np.array([via(0, 1)])), Paths.from_padded(np.array([via(0, 4)]))])
    ok, why = is_destination_consistent(network, np.array([0, 0]), np.array([5, 5]), split)
    assert not ok and "flows to terminal 5 leave r0.0 by channels" in why


@pytest.mark.parametrize("argv,message", [
    (["--router", "valiant", "--consistency", "destination"], "--consistency destination is implemented for the paths router"),
    (["--router", "paths", "--consistency", "destination", "--candidates", "all"], "use --candidates minimal, not all"),
])
def test_refusals(run, argv, message):
    code, out, err = run("route", "slimfly:5", "--traffic", "shift:1", *argv)
    assert code == 2 and message in err and len(err.splitlines()) == 1
