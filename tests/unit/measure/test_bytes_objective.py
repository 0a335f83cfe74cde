"""The bytes objective (`--load-unit bytes`): loads, bounds and path selection in bytes over bandwidth.

Checked independently:
- on tiny weighted flow sets, the least maximum of bytes over bandwidth over the candidates of an
  independent enumeration (tests/helpers.py's networkx Fabric, as in test_path_selection.py), by exhaustive search,
  equals what the paths router reaches with the bytes objective, and it records a proof;
- all four backends agree on a weighted whole-phase model;
- with equal message sizes every number of a run in bytes is the message run's times the size,
  and the paths router takes the very same paths;
- with unequal sizes the bytes objective is never worse in bytes than the message objective, and
  strictly better somewhere;
- `check` recomputes a bytes file (loads, bounds, statuses) and catches tampering; the routers
  that minimize messages refuse bytes in one line; the size guard on byte sums.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import Fabric, assert_user_error, phase_state
from synth.opensm.engines import phase_contention
from synth.routing.minimal import router_view
from synth.routing.path_selection import SelectionState, route_phase_paths, whole_phase_problem
from synth.routing.paths_options import PathsOptions
from synth.solve import SOLVERS, solve
from synth.topology import parse_topology
from synth.traffic.patterns import parse_pattern


def terminal_bandwidth(fabric: Fabric) -> dict[int, float]:
    """Per terminal channel its bandwidth, from the topology JSON (absent means 1)."""
    return {ch["id"]: ch.get("bandwidth", 1.0) for ch in fabric.doc["channels"] if min(ch["src"], ch["dst"]) < fabric.n}


def byte_brute_force(fabric: Fabric, src, dst, size, kind: str, terminals: bool = True) -> int:
    """The least maximum over channels of ceil(bytes / bandwidth) over every choice of candidates
    (router-to-router channels alone when not `terminals`)."""
    bandwidth = terminal_bandwidth(fabric)
    fixed: dict[int, int] = {}
    options, weights = [], []
    for s, d, w in zip(src.tolist(), dst.tolist(), size.tolist()):
        if s == d:
            continue
        for c in (fabric.inject[s], fabric.eject[d]) if terminals else ():
            fixed[c] = fixed.get(c, 0) + w
        a, b = fabric.router_of[s], fabric.router_of[d]
        if a != b:
            options.append(sorted(fabric.candidates(a, b, kind)))
            weights.append(w)
    floor = max((math.ceil(v / bandwidth[c]) for c, v in fixed.items()), default=0)
    best = None
    for combo in itertools.product(*options):
        load: dict[int, int] = {}
        for path, w in zip(combo, weights):
            for c in path:
                load[c] = load.get(c, 0) + w  # router-to-router links: bandwidth 1
        top = max(floor, max(load.values(), default=0))
        best = top if best is None else min(best, top)
    return floor if best is None else best


def byte_load(topology, paths, size) -> int:
    """The busiest channel's bytes over bandwidth, recomputed naively from the paths (Paths, or
    lists of channel ids as a routes file holds them)."""
    if not isinstance(paths, list):
        paths = paths.as_lists()
    network = topology.network()
    load = np.zeros(network.num_channels)
    for path, w in zip(paths, np.asarray(size).tolist()):
        for c in path:
            load[c] += w
    return int(np.ceil(load / network.channel_bandwidth - 1e-9).max(initial=0))


@pytest.mark.parametrize("spec", ["dragonfly:2,4,2", "hyperx:3,4", "kautz:3", "slimfly:5"])
@pytest.mark.parametrize("kind,flows", [("minimal", 6), ("all", 3)])
def test_bytes_optimum_equals_exhaustive_search(spec, kind, flows):
    topology = parse_topology(spec)
    fabric = Fabric(spec)
    n = topology.network().num_terminals
    rng = np.random.default_rng(5)
    for trial in range(4):
        src = rng.choice(n, flows, replace=False)
        dst = rng.choice(n, flows, replace=False)
        size = rng.integers(0, 10, flows) * 1000 + rng.integers(0, 3, flows)  # gcd 1 mostly, a zero now and then
        paths, report = route_phase_paths(topology, src, dst, PathsOptions(candidates=kind, objective="bytes"),
                                          seed=trial, weights=size)
        assert byte_load(topology, paths, size) == byte_brute_force(fabric, src, dst, size, kind), (spec, kind, trial)
        assert report.proven_by is not None
        assert report.candidate_bound <= byte_load(topology, paths, size)


@pytest.mark.parametrize("spec,kind,seed", [("dragonfly:2,4,2", "minimal", 1), ("slimfly:5", "minimal", 2),
                                            ("kautz:3", "all", 3)])
def test_every_backend_agrees_on_a_weighted_phase(spec, kind, seed):
    topology = parse_topology(spec)
    n = topology.network().num_terminals
    rng = np.random.default_rng(seed)
    src, dst = rng.choice(n, 6, replace=False), rng.choice(n, 6, replace=False)
    size = (rng.integers(1, 6, 6) * 512).astype(np.int64)  # gcd a multiple of 512: the model divides it out
    router = router_view(topology).terminal_router
    crossing = np.flatnonzero(router[src] != router[dst])
    messages = phase_state(spec, kind, src, dst)  # (its floor counts messages: the weighted state has none)
    state = SelectionState(messages.c, messages.pair, np.zeros_like(messages.floor_load), size[crossing])
    problem = whole_phase_problem(state)
    assert problem.weight is not None and np.gcd.reduce(problem.weight) == 1
    tops = set()
    for solver in SOLVERS:
        result = solve(problem, solver, time_limit=60)
        assert result.status == "optimal", solver
        tops.add(int(state.loads_of(result.choice).max()))
    assert len(tops) == 1
    # the exhaustive search over the crossing flows alone (no terminal floor here)
    assert tops.pop() == byte_brute_force(Fabric(spec), src, dst, size, kind, terminals=False)


def _routes(run, tmp_path, name, *argv):
    out = tmp_path / f"{name}.json"
    code, _, err = run("route", *argv, "--out", out, "--quiet")
    assert code == 0, err
    return json.loads(out.read_text())


@pytest.mark.parametrize("spec,router", [("slimfly:5", "paths"), ("dragonfly:2,4,2", "paths"), ("dragonfly:2,4,2", "ugal"),
                                         ("kautz:3", "paths"), ("xgft:2:4,4:1,4", "dmodk")])
def test_equal_sizes_scale_every_number(run, tmp_path, spec, router):
    """Messages of 4096 bytes each: bytes are 4096 times messages everywhere (bounds rounded to the
    byte granule), and path selection takes the same paths. (Kautz's terminal links have
    bandwidth 3: there the terminal loads are bytes / 3, so only the router links are compared.)"""
    budget = ("--time-limit", "5") if router == "paths" else ()  # (a solver option: fixed routers refuse it)
    argv = (spec, "--traffic", "randperm:2", "--bytes", "4096", "--router", router, *budget)
    messages = _routes(run, tmp_path, "messages", *argv)
    in_bytes = _routes(run, tmp_path, "bytes", *argv, "--load-unit", "bytes")
    assert in_bytes["load_unit"] == "bytes" and "load_unit" not in messages
    for m, b in zip(messages["phases"], in_bytes["phases"]):
        assert m["paths"] == b["paths"]
        if spec.startswith("kautz"):
            assert b["stage_max"][1:] == [4096 * v for v in m["stage_max"][1:]]
            continue
        for key in ("max_contention", "lower_bound", "gap"):
            assert b[key] == 4096 * m[key], key
        assert b["stage_bounds"] == [4096 * v for v in m["stage_bounds"]]
        assert b["status"] == m["status"]
        if router == "paths":
            for key in ("lp_bound", "candidate_bound", "start_contention"):
                assert b["solver"][key] == 4096 * m["solver"][key], key


def skewed_matrix(path, spec: str, pattern: str, seed: int) -> None:
    """The flows of the pattern's phase 0 as a matrix, one message in four 16 times the others."""
    topology = parse_topology(spec)
    workload = parse_pattern(pattern, topology.network().num_terminals, topology.hierarchy(), topology=topology)
    _, src, dst, _ = workload.batch(np.array([0]))
    size = np.random.default_rng(seed).choice([1000, 1000, 1000, 16000], len(src))
    path.write_text("src,dst,bytes\n" + "".join(f"{s},{d},{w}\n" for s, d, w in zip(src, dst, size)))


def test_bytes_objective_is_never_worse_in_bytes_and_sometimes_better(run, tmp_path):
    """On the ch.7 worst case of Slim Fly q = 5 with skewed sizes, minimizing messages leaves a
    channel with twice the bytes that minimizing bytes does (measured: 32000 against 16000)."""
    gains = []
    for seed in range(4):
        matrix = tmp_path / f"m{seed}.csv"
        skewed_matrix(matrix, "slimfly:5", "worst-case", seed)
        argv = ("slimfly:5", "--traffic", f"csv:{matrix}", "--router", "paths", "--time-limit", "5")
        by_messages = _routes(run, tmp_path, f"msg{seed}", *argv)
        by_bytes = _routes(run, tmp_path, f"bytes{seed}", *argv, "--load-unit", "bytes")
        topology = parse_topology("slimfly:5")
        size = np.asarray(by_bytes["phases"][0]["flows"])[:, 2]
        loads = [byte_load(topology, doc["phases"][0]["paths"], size) for doc in (by_messages, by_bytes)]
        assert loads[1] == by_bytes["phases"][0]["max_contention"]
        assert loads[1] <= loads[0], seed
        gains.append(loads[0] - loads[1])
    assert max(gains) > 0, "the bytes objective never mattered: the test instances are too easy"



def test_reruns_are_byte_identical(run, tmp_path):
    matrix = tmp_path / "m.csv"
    skewed_matrix(matrix, "slimfly:5", "worst-case", 3)
    argv = ("slimfly:5", "--traffic", f"csv:{matrix}", "--router", "paths", "--load-unit", "bytes", "--time-limit", "2")
    _routes(run, tmp_path, "first", *argv)
    _routes(run, tmp_path, "second", *argv)
    assert (tmp_path / "first.json").read_bytes() == (tmp_path / "second.json").read_bytes()


def test_check_recomputes_a_bytes_file_and_catches_tampering(run, tmp_path):
    matrix = tmp_path / "m.csv"
    skewed_matrix(matrix, "dragonfly:2,4,2", "randperm:1", 1)
    doc = _routes(run, tmp_path, "r", "dragonfly:2,4,2", "--traffic", f"csv:{matrix}", "--router", "paths",
                  "--load-unit", "bytes", "--time-limit", "5")
    good = tmp_path / "r.json"
    code, out, _ = run("check", good)
    assert code == 0 and "bytes over bandwidth" in out
    tampered = {
        "max_contention": lambda d: d["phases"][0].update(max_contention=d["phases"][0]["max_contention"] - 1),
        "flow bytes": lambda d: d["phases"][0]["flows"][0].__setitem__(2, d["phases"][0]["flows"][0][2] + 4096),
        "load unit dropped": lambda d: d.pop("load_unit"),
    }
    for name, change in tampered.items():
        bad = json.loads(json.dumps(doc))
        change(bad)
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(bad))
        code, out, _ = run("check", path)
        assert code == 1 and "FAIL" in out, name
    bad = json.loads(json.dumps(doc))
    bad["load_unit"] = "kilobytes"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    assert_user_error(run("check", path), "load_unit")


@pytest.mark.parametrize("argv,names", [
    (("dragonfly:2,4,2", "--traffic", "randperm:1", "--router", "layered", "--load-unit", "bytes"), ("layered", "messages")),
    (("xgft:2:4,4:1,4", "--traffic", "randperm:1", "--router", "monolithic", "--load-unit", "bytes"), ("monolithic",)),
    (("slimfly:5", "--traffic", "randperm:1", "--router", "paths", "--consistency", "destination", "--load-unit", "bytes"),
     ("destination",)),
])
def test_routers_that_count_messages_refuse_bytes(run, argv, names):
    assert_user_error(run("route", *argv), all_of=names)


def test_byte_sums_are_guarded(run, tmp_path):
    """8200 messages of 2^40 bytes in one phase pass 2^53 bytes: refused before any sum is taken."""
    matrix = tmp_path / "huge.csv"
    matrix.write_text("src,dst,bytes\n" + f"0,1,{1 << 40}\n" * 8200)
    assert_user_error(run("route", "slimfly:5", "--traffic", f"csv:{matrix}", "--router", "minimal",
                          "--load-unit", "bytes"), "2^53")
    code, _, _ = run("route", "slimfly:5", "--traffic", f"csv:{matrix}", "--router", "minimal")
    assert code == 0  # in messages the same matrix is fine


def test_unequal_sizes_in_messages_say_so(run, tmp_path):
    matrix = tmp_path / "m.csv"
    skewed_matrix(matrix, "slimfly:5", "randperm:1", 0)
    code, _, err = run("route", "slimfly:5", "--traffic", f"csv:{matrix}", "--router", "minimal", "--quiet")
    assert code == 0 and "flow sizes differ" in err and "--load-unit bytes" in err


def test_engine_contention_weighs_bytes():
    """OpenSM engines' walked paths are priced like synth's: bytes over bandwidth per phase."""
    network = parse_topology("kautz:3").network()
    rng = np.random.default_rng(2)
    channels = np.full((40, 4), -1)
    for row in channels:  # any channels will do: phase_contention only counts them (padding at the end)
        length = rng.integers(1, 5)
        row[:length] = rng.choice(network.num_channels, length, replace=False)
    phase = rng.integers(0, 3, 40)
    size = rng.integers(0, 5000, 40)
    got = phase_contention(network, channels, phase, 3, size)
    for p in range(3):
        load = np.zeros(network.num_channels)
        for row, w in zip(channels[phase == p], size[phase == p]):
            for c in row[row >= 0]:
                load[c] += w
        assert got[p] == int(np.ceil(load / network.channel_bandwidth - 1e-9).max(initial=0))


@settings(max_examples=15, deadline=None)
@given(sizes=st.lists(st.sampled_from([0, 0, 0, 1, 7, 4096]), min_size=6, max_size=6))
def test_empty_messages_leave_stderr_quiet(tmp_path_factory, sizes):
    """Flows of zero bytes (all of them, or some) under --load-unit bytes: no numpy warning on stderr
    under --quiet (a RuntimeWarning of a division by the zero maximum load was printed)."""
    import contextlib
    import io
    import warnings

    from synth.cli import main

    matrix = tmp_path_factory.mktemp("zero") / "t.csv"
    matrix.write_text("".join(f"{s},{(s + 1) % 6},{b}\n" for s, b in enumerate(sizes)))
    for argv in (["bounds", "dragonfly:1,2,1", "--traffic", f"csv:{matrix}", "--lp", "--load-unit", "bytes", "--quiet"],
                 ["route", "dragonfly:1,2,1", "--traffic", f"csv:{matrix}", "--router", "paths", "--load-unit", "bytes",
                  "--quiet"]):
        err = io.StringIO()
        with warnings.catch_warnings(), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("error")
            code = main(argv)
        assert code == 0 and err.getvalue() == "", err.getvalue()
