"""Issue 10 on every family: `synth topology`, `route`, `bounds` and `check` on every direct network
family (and one XGFT for the router list), with the CLI contract and independent verification.

- Contract: every command works on every family; a user error (a bad spec of each family, a router
  or pattern that does not apply) is exit 2 with exactly one stderr line "synth: error: ..." and no
  output file; running a command twice with the same arguments gives byte-identical output.
- Every router that applies to a family writes routes that `synth check` accepts; routers that do
  not apply (dor without router coordinates, valiant-any without groups, XGFT routers on direct
  networks and direct routers on XGFTs) are refused.
- Independent verification, from the topology JSON only (networkx, plain Python counting): every
  path is a contiguous chain of channels from its source terminal to its destination terminal; the
  flows are the pattern's; each phase's maximum channel load equals the recorded max_contention;
  minimal routers' paths have minimal length (dragonflies: minimal in the L-G-L sense, at most
  one global hop, which can be longer than the graph's shortest path); Valiant/UGAL paths are two
  minimal segments through one router; the recorded lower bounds never exceed a routing.
- `synth check` rejects, on every family, a path through a channel that does not exist, a path
  of existing channels that is not contiguous, a contiguous but longer path where the router
  declared minimal (and, for Valiant/UGAL, a path that is not two minimal segments), and a wrong
  recorded max_contention: exit 1 with the first stdout line "FAIL: ..." naming the problem, while
  the untampered file passes.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from collections import Counter

import networkx as nx
import pytest

from helpers import REPO
from synth.routing.registry import DIRECT, MINIMAL, ROUTERS, VIA_GROUP, VIA_ONE

FAMILY_SPECS = {
    "dragonfly": ["dragonfly:1,2,1", "dragonfly:2,4,2", "dragonfly:1,4,2:groups=5",
                  "dragonfly:1,4,2:arrangement=relative", "dragonfly:1,4,2:arrangement=circulant",
                  "dragonfly:1,4,2:groups=2",  # two groups: Valiant has no intermediate group
                  # a real fabric file, recognized as the dragonfly it is (issue 26): the dragonfly's routers on it
                  f"fabric:{REPO}/instances/fabrics/dragonfly-2-4-2.ibnetdiscover"],
    "hyperx": ["hyperx:3,4", "hyperx:3,3:p=2:trunk=2"],
    "2dfc": ["2dfc:3,4"],
    "torus": ["torus:4,4", "torus:2,3"],  # a dimension of 2: two parallel links between the two routers
    "kautz": ["kautz:3"],  # directed
    "slimfly": ["slimfly:5", "slimfly:4"],  # q = 4: a prime power, GF(4)
    "mlfm": ["mlfm:3"],
    "oft": ["oft:4"],
    # the families that read files (issue 26), read as they are: a dragonfly as ibnetdiscover found it on ibsim, and
    # the Petersen graph (which recognition finds is the dragonfly (2,2,2), tests/unit/topology/test_recognition.py)
    "fabric": [f"fabric:{REPO}/instances/fabrics/dragonfly-2-4-2.ibnetdiscover:recognize=no"],
    "graph": [f"graph:{REPO}/instances/graphs/petersen.gml:p=2:recognize=no"],
}
DIRECT_SPECS = [spec for specs in FAMILY_SPECS.values() for spec in specs]
FAMILY_OF = {spec: family for family, specs in FAMILY_SPECS.items() for spec in specs}
XGFT = "xgft:2:4,4:1,2"
ALL_SPECS = DIRECT_SPECS + [XGFT]

# Bad specs of every family (kautz:1 is a valid degenerate K(1,2), documented as D >= 1).
BAD_SPECS = {
    "dragonfly": ["dragonfly:0,2,1", "dragonfly:1,2,1:groups=1", "dragonfly:1,2,1:arrangement=spiral"],
    "hyperx": ["hyperx:1", "hyperx:3,4:trunk=0"],
    "2dfc": ["2dfc:3", "2dfc:3,1"],
    "torus": ["torus:1", "torus:4,4:p=0", "torus:4,,4"],
    "kautz": ["kautz:0", "kautz:3,0"],
    "slimfly": ["slimfly:6", "slimfly:2", "slimfly:5:p=0"],
    "mlfm": ["mlfm:0", "mlfm:3:x=1"],
    "oft": ["oft:5", "oft:2", "oft:4:x=1"],
    "xgft": ["xgft:2:4,4:1", "xgft:2:4,0:1,2"],
    "fabric": ["fabric:", f"fabric:{REPO}/instances/fabrics/missing.net"],
    "graph": [f"graph:{REPO}/instances/graphs/petersen.gml", f"graph:{REPO}/instances/graphs/petersen.gml:p=0"],
}
BAD_CASES = [(family, spec) for family, specs in BAD_SPECS.items() for spec in specs]

# The router registry as issue 10 describes it, and who may refuse what (kept independent of the code).
UPDOWN = "up*/down*"  # a policy of the router's own (registry.PathPolicy), verified by tests/test_updown.py's reference
POLICY = {"minimal": MINIMAL, "minimal-random": MINIMAL, "dor": MINIMAL,
          "valiant": VIA_ONE, "valiant-any": VIA_ONE, "ugal": VIA_ONE, "paths": VIA_ONE, "layered": VIA_GROUP,
          "updown": UPDOWN}
NEEDS_FAMILY = {"dor": {"hyperx", "2dfc", "torus"}, "valiant-any": {"dragonfly"}, "layered": {"dragonfly"},
                "updown": set(FAMILY_SPECS) - {"kautz"}}  # (Kautz's links are one-way)
XGFT_ROUTERS = ["dmodk", "smodk", "random", "random-msg", "layered", "monolithic"]


def applies(router: str, family: str) -> bool:
    return family in NEEDS_FAMILY.get(router, {family})


def traffics(spec: str) -> list[tuple[str, str | None]]:
    out = [("a2a-lin", "0-3"), ("randperm:7", None)]
    if FAMILY_OF.get(spec) == "dragonfly":
        out.append(("a2a-lat", "all"))
    return out


ROUTE_CASES = [(spec, router, pattern, phases) for spec in DIRECT_SPECS for router in POLICY
               if applies(router, FAMILY_OF[spec]) for pattern, phases in traffics(spec)]
ROUTE_CASES += [(XGFT, router, pattern, phases) for router in XGFT_ROUTERS for pattern, phases in traffics(XGFT)]
REFUSED_CASES = [(spec, router) for spec in DIRECT_SPECS for router in POLICY if not applies(router, FAMILY_OF[spec])]
REFUSED_CASES += [(XGFT, router) for router in POLICY if router not in XGFT_ROUTERS]  # (layered: both)
REFUSED_CASES += [(specs[0], "dmodk") for specs in FAMILY_SPECS.values()]
ROUTER_CASES = [(spec, router) for spec in DIRECT_SPECS for router in POLICY if applies(router, FAMILY_OF[spec])]
ROUTER_CASES += [(XGFT, router) for router in XGFT_ROUTERS]
SEED = 5


def _case_id(case) -> str:
    return "-".join(str(part) for part in case if part is not None)


# ----- helpers ----------------------------------------------------------------------------------

def assert_user_error(code: int, out: str, err: str, mention: str | None = None) -> None:
    assert code == 2, f"exit {code}\nstdout:\n{out}\nstderr:\n{err}"
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("synth: error:"), err
    assert "Traceback" not in out + err
    if mention is not None:
        assert mention in lines[0], lines[0]


class Model:
    """The network as the topology JSON lists it, and minimal distances computed here."""

    def __init__(self, doc: dict):
        self.spec, self.family = doc["spec"], doc["family"]
        self.n = doc["terminals"]
        self.names = [node["name"] for node in doc["nodes"]]
        self.num_nodes = len(doc["nodes"])
        self.src = [c["src"] for c in doc["channels"]]
        self.dst = [c["dst"] for c in doc["channels"]]
        self.num_channels = len(doc["channels"])
        self.injection, self.ejection = {}, {}
        self.channel = {}  # (router, router) -> lowest channel id
        self.graph = nx.DiGraph()
        self.graph.add_nodes_from(range(self.n, self.num_nodes))
        for c, (a, b) in enumerate(zip(self.src, self.dst)):
            if a < self.n:
                assert a not in self.injection, f"terminal {a} has two links"
                self.injection[a] = c
            elif b < self.n:
                self.ejection[b] = c
            else:
                self.graph.add_edge(a, b)
                self.channel.setdefault((a, b), c)
        assert sorted(self.injection) == sorted(self.ejection) == list(range(self.n))
        self.router_of = [self.dst[self.injection[t]] for t in range(self.n)]
        self.graph_distance = dict(nx.all_pairs_shortest_path_length(self.graph))
        self.group = None
        if self.family == "dragonfly":
            self.group = {r: int(re.fullmatch(r"g(\d+)r(\d+)", self.names[r]).group(1))
                          for r in range(self.n, self.num_nodes)}
            self.distance = self._lgl_distance()
        else:
            self.distance = self.graph_distance

    def _lgl_distance(self) -> dict:
        """Dragonfly minimal routing: within a group the group's shortest paths; between groups
        local, one global link into the destination's group, local (L-G-L)."""
        group = self.group
        local_graph = nx.DiGraph([(a, b) for a, b in self.graph.edges if group[a] == group[b]])
        local_graph.add_nodes_from(self.graph.nodes)
        local = dict(nx.all_pairs_shortest_path_length(local_graph))
        globals_ = {}
        for a, b in self.graph.edges:
            if group[a] != group[b]:
                globals_.setdefault((group[a], group[b]), []).append((a, b))
        inf = float("inf")
        distance = {}
        for u in self.graph.nodes:
            row = distance[u] = {}
            for v in self.graph.nodes:
                if group[u] == group[v]:
                    row[v] = local[u].get(v, inf)
                else:
                    row[v] = min((local[u].get(x, inf) + 1 + local[y].get(v, inf)
                                  for x, y in globals_.get((group[u], group[v]), [])), default=inf)
        return distance

    def crossings(self, routers: list[int]) -> int:
        return sum(self.group[a] != self.group[b] for a, b in zip(routers, routers[1:]))

    def walk(self, src: int, dst: int, path: list[int]) -> list[int] | str:
        """The routers a channel path visits, or what is wrong with it."""
        if src == dst:
            return [] if path == [] else "a message to itself with a path"
        if not path:
            return "empty path"
        if any(not 0 <= c < self.num_channels for c in path):
            return "channel does not exist"
        if self.src[path[0]] != src or self.dst[path[-1]] != dst:
            return "wrong ends"
        for a, b in zip(path, path[1:]):
            if self.dst[a] != self.src[b]:
                return "not contiguous"
        routers = [self.dst[c] for c in path[:-1]]
        if any(r < self.n for r in routers):
            return "through a terminal"
        return routers

    def is_minimal(self, routers: list[int]) -> bool:
        if len(routers) - 1 != self.distance[routers[0]][routers[-1]]:
            return False
        return self.group is None or self.crossings(routers) <= 1

    def is_via_one(self, routers: list[int]) -> bool:
        return any(self.is_minimal(routers[: i + 1]) and self.is_minimal(routers[i:]) for i in range(len(routers)))

    def channels(self, routers: list[int]) -> list[int]:
        return [self.channel[(a, b)] for a, b in zip(routers, routers[1:])]


_MODELS: dict[str, Model] = {}
_ROUTED: dict[tuple, tuple] = {}


def topology_doc(run, spec: str) -> dict:
    code, out, err = run("topology", spec, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def model(run, spec: str) -> Model:
    if spec not in _MODELS:
        _MODELS[spec] = Model(topology_doc(run, spec))
    return _MODELS[spec]


def route_argv(spec, router, pattern, phases, target) -> list:
    argv = ["route", spec, "--traffic", pattern, "--router", router, "--seed", SEED, "--quiet", "--out", target]
    return argv + (["--phase", phases] if phases is not None else [])


def routed(run, directory, spec, router, pattern, phases) -> tuple[object, dict, str]:
    """Route once per argument set (module-wide): the file, its document, route's stdout."""
    key = (spec, router, pattern, phases)
    if key not in _ROUTED:
        target = directory / (re.sub(r"[^A-Za-z0-9]+", "_", "-".join(str(k) for k in key)) + ".json")
        code, out, err = run(*route_argv(spec, router, pattern, phases, target))
        assert code == 0 and err == "", err
        _ROUTED[key] = (target, json.loads(target.read_text()), out)
    target, doc, out = _ROUTED[key]
    return target, copy.deepcopy(doc), out


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return tmp_path_factory.mktemp("every-family")


def check_file(run, path) -> tuple[int, str, str]:
    return run("check", path)


def assert_passes(run, path) -> None:
    code, out, err = check_file(run, path)
    assert code == 0 and err == "" and out.splitlines()[-1].startswith("OK:"), out + err


class CheckAccepted(Exception):
    """`synth check` passed a file it must reject."""


def assert_rejected(run, tmp_path, doc: dict, names: str) -> None:
    target = tmp_path / "tampered.json"
    target.write_text(json.dumps(doc))
    code, out, err = check_file(run, target)
    if code == 0:
        raise CheckAccepted(out)
    assert code == 1, f"exit {code}\nstdout:\n{out}\nstderr:\n{err}"
    assert err == "" and "Traceback" not in out
    first = out.splitlines()[0]
    assert first.startswith("FAIL:") and names in first, out


# ----- registries and coverage ------------------------------------------------------------------

def test_every_registered_family_is_covered(run):
    code, out, err = run("topology", "mesh:3")
    assert_user_error(code, out, err, "unknown network family")
    known = re.search(r"known: ([^)]*)\)", err).group(1).split(", ")
    assert set(known) == set(FAMILY_SPECS) | {"xgft"}


def test_router_registry_is_the_documented_one(run):
    assert {spec.name: getattr(spec.policy, "name", spec.policy) for spec in ROUTERS.for_kind(DIRECT)} == POLICY
    code, out, err = run("route", DIRECT_SPECS[0], "--traffic", "a2a-lin", "--router", "nosuch", "--quiet")
    assert_user_error(code, out, err, "nosuch")
    from synth.topology import parse_topology

    applicable = {name for name in POLICY if ROUTERS.find(name, DIRECT).applies(parse_topology(DIRECT_SPECS[0]))}
    assert set(re.search(r"known: ([^)]*)\)", err).group(1).split(", ")) == applicable
    code, out, err = run("route", XGFT, "--traffic", "a2a-lin", "--router", "nosuch", "--quiet")
    assert_user_error(code, out, err, "nosuch")
    assert set(re.search(r"known: ([^)]*)\)", err).group(1).split(", ")) == set(XGFT_ROUTERS)


# ----- topology ---------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", ALL_SPECS)
def test_topology_on_every_family(run, tmp_path, spec):
    code, text, err = run("topology", spec)
    assert code == 0 and err == "" and text.strip()
    assert run("topology", spec) == (0, text, "")
    code, out, err = run("topology", spec, "--format", "json")
    assert code == 0 and err == ""
    assert run("topology", spec, "--format", "json") == (0, out, "")
    target = tmp_path / "net.json"
    code, written, err = run("topology", spec, "--format", "json", "--out", target)
    assert code == 0 and written == "" and err == ""
    doc = json.loads(target.read_text())
    assert doc == json.loads(out)
    assert doc["format"] == "synth-topology/1" and doc["family"] == FAMILY_OF.get(spec, "xgft")
    n = doc["terminals"]
    assert [node["id"] for node in doc["nodes"]] == list(range(len(doc["nodes"])))
    assert [node["kind"] for node in doc["nodes"][:n]] == ["terminal"] * n
    assert all(node["kind"] != "terminal" for node in doc["nodes"][n:])
    assert [c["id"] for c in doc["channels"]] == list(range(len(doc["channels"])))
    net = Model(doc)
    assert nx.is_strongly_connected(net.graph)
    if spec != XGFT:  # docs/formats.md: injection 2t, ejection 2t+1, a router's terminals contiguous
        assert all(net.injection[t] == 2 * t and net.ejection[t] == 2 * t + 1 for t in range(n))
        assert net.router_of == sorted(net.router_of)


# ----- user errors ------------------------------------------------------------------------------

@pytest.mark.parametrize("family, bad", BAD_CASES, ids=[c[1] for c in BAD_CASES])
def test_bad_spec_is_one_line_exit_2_and_writes_nothing(run, tmp_path, store, family, bad):
    target = tmp_path / "out.json"
    router = "dmodk" if family == "xgft" else "minimal"
    code, out, line = run("topology", bad)
    assert_user_error(code, out, line)  # every command below names the spec's problem in the same line
    assert run("topology", bad, "--format", "json", "--out", target) == (2, "", line)
    assert not target.exists()
    assert run("route", bad, "--traffic", "a2a-lin", "--phase", "0-3", "--router", router, "--quiet",
               "--out", target) == (2, "", line)
    assert not target.exists()
    assert run("bounds", bad, "--traffic", "a2a-lin", "--phase", "0-3", "--quiet") == (2, "", line)
    # check: a good routes file of the family whose spec is replaced by the bad one
    good = FAMILY_SPECS[family][0] if family != "xgft" else XGFT
    _, doc, _ = routed(run, store, good, "minimal" if family != "xgft" else "dmodk", "a2a-lin", "0-3")
    doc["topology"]["spec"] = bad
    routes = tmp_path / "routes.json"
    routes.write_text(json.dumps(doc))
    assert check_file(run, routes) == (2, "", line)


@pytest.mark.parametrize("spec, router", REFUSED_CASES, ids=[_case_id(c) for c in REFUSED_CASES])
def test_router_that_does_not_apply_is_refused(run, tmp_path, spec, router):
    target = tmp_path / "out.json"
    code, out, err = run("route", spec, "--traffic", "a2a-lin", "--phase", "0-3", "--router", router, "--quiet",
                         "--out", target)
    assert_user_error(code, out, err, router)
    assert not target.exists()


@pytest.mark.parametrize("spec", [specs[0] for specs in FAMILY_SPECS.values()] + [XGFT])
def test_other_user_errors_on_every_family(run, tmp_path, spec):
    target = tmp_path / "out.json"
    router = "dmodk" if spec == XGFT else "minimal"
    route = ["route", spec, "--router", router, "--quiet", "--out", target]
    cases = [  # (argv, what the one line names)
        (route + ["--traffic", "a2a-lin", "--phase", "1000000"], "1000000"),
        (route + ["--traffic", "a2a-lin", "--phase", "3-1"], "3-1"),
        (["route", spec, "--traffic", "a2a-lin", "--router", "nosuch", "--quiet", "--out", target], "nosuch"),
        (route + ["--traffic", "nosuch"], "nosuch"),
        (["route", spec + ":nosuch=1", "--traffic", "a2a-lin", "--router", router, "--quiet", "--out", target], "nosuch"),
        (["bounds", spec, "--traffic", "a2a-lin", "--phase", "1000000", "--quiet"], "1000000"),
        (["bounds", spec, "--traffic", "nosuch", "--quiet"], "nosuch"),
        (["check", tmp_path / "absent.json"], None),
    ]
    if FAMILY_OF.get(spec) != "dragonfly":
        cases += [(route + ["--traffic", "a2a-lat"], "a2a-lat"),
                  (["bounds", spec, "--traffic", "a2a-lat", "--quiet"], "a2a-lat")]
    for argv, mention in cases:
        assert_user_error(*run(*argv), mention)
        assert not target.exists(), argv


# ----- route and check --------------------------------------------------------------------------

def expected_flows(net: Model, doc: dict, pattern: str) -> None:
    """The flows are the pattern's: a2a-lin exactly, randperm a permutation, a2a-lat every pair once."""
    n = net.n
    assert doc["traffic"]["ranks"] == n
    phases = doc["phases"]
    for record in phases:
        assert all(size == 4096 for _, _, size in record["flows"])
        src = [s for s, _, _ in record["flows"]]
        dst = [d for _, d, _ in record["flows"]]
        if pattern == "a2a-lin":
            assert sorted(zip(src, dst)) == [(s, (s + record["phase"]) % n) for s in range(n)]
        else:  # randperm, a2a-lat: every phase a permutation
            assert sorted(src) == sorted(dst) == list(range(n))
    if pattern == "a2a-lin":
        assert [p["phase"] for p in phases] == [0, 1, 2, 3]
    if pattern.startswith("randperm"):
        assert len(phases) == 1
    if pattern == "a2a-lat":
        pairs = Counter((s, d) for p in phases for s, d, _ in p["flows"])
        assert len(phases) == doc["traffic"]["phases"] == n
        assert set(pairs.values()) == {1} and len(pairs) == n * n


def verify_routes(net: Model, doc: dict, router: str) -> None:
    """Every path contiguous and of the router's policy, the contention recounted."""
    policy = POLICY.get(router, MINIMAL)  # XGFT routers: minimal (up*/down*) paths
    for record in doc["phases"]:
        loads = Counter()
        assert len(record["paths"]) == len(record["flows"])
        for (s, d, _), path in zip(record["flows"], record["paths"]):
            routers = net.walk(s, d, path)
            assert isinstance(routers, list), f"phase {record['phase']} flow {s}->{d}: {routers}: {path}"
            loads.update(path)
            if routers and policy != UPDOWN:
                ok = net.is_minimal(routers) if policy == MINIMAL else net.is_via_one(routers)
                assert ok, f"phase {record['phase']} flow {s}->{d}: not {policy}: {routers}"
        recount = max(loads.values(), default=0)
        assert record["max_contention"] == recount, record["phase"]
        assert record["lower_bound"] <= recount
        assert record["gap"] == recount - record["lower_bound"]
    assert doc["summary"]["max_contention"] == max(p["max_contention"] for p in doc["phases"])


@pytest.mark.parametrize("spec, router, pattern, phases", ROUTE_CASES, ids=[_case_id(c) for c in ROUTE_CASES])
def test_every_router_on_every_family_passes_check(run, tmp_path, store, spec, router, pattern, phases):
    target, doc, out = routed(run, store, spec, router, pattern, phases)
    assert doc["format"] == "synth-routes/2" and doc["router"] == router and doc["seed"] == SEED
    assert_passes(run, target)
    net = model(run, spec)
    expected_flows(net, doc, pattern)
    verify_routes(net, doc, router)
    # deterministic: the same command again writes the same bytes and prints the same
    again = tmp_path / target.name
    code, out_again, err = run(*route_argv(spec, router, pattern, phases, again))
    assert code == 0 and err == ""
    assert again.read_bytes() == target.read_bytes()
    assert out_again.replace(str(again), str(target)) == out
    assert check_file(run, target) == check_file(run, again)


@pytest.mark.parametrize("spec", [s for s in DIRECT_SPECS if FAMILY_OF[s] == "dragonfly"])
def test_dragonfly_minimal_is_one_global_hop(run, store, spec):
    """The L-G-L rule: minimal paths cross between groups at most once, even where a path through
    a third group is shorter in the graph; and the rule's distances are never below the graph's."""
    net = model(run, spec)
    assert all(net.distance[u][v] >= net.graph_distance[u][v] for u in net.distance for v in net.distance[u])
    longer = {(u, v) for u in net.distance for v in net.distance[u] if net.distance[u][v] > net.graph_distance[u][v]}
    # where a G-G path through a third group is shorter (these specs have such router pairs)
    assert bool(longer) == (spec in ("dragonfly:2,4,2", "dragonfly:1,4,2:arrangement=relative",
                                     "dragonfly:1,4,2:arrangement=circulant") or spec.startswith("fabric:"))
    for router in ("minimal", "minimal-random"):
        _, doc, _ = routed(run, store, spec, router, "a2a-lat", "all")  # every terminal pair once
        seen = set()
        for record in doc["phases"]:
            for (s, d, _), path in zip(record["flows"], record["paths"]):
                routers = net.walk(s, d, path)
                assert routers == [] or net.crossings(routers) == (net.group[routers[0]] != net.group[routers[-1]])
                if routers and (routers[0], routers[-1]) in longer:
                    assert len(routers) - 1 > net.graph_distance[routers[0]][routers[-1]]
                    seen.add((routers[0], routers[-1]))
        assert seen == longer


# ----- bounds -----------------------------------------------------------------------------------

def bounds_table(out: str) -> dict[int, list[str]]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("phase"))
    rows = {}
    for line in lines[start + 1:]:
        if not line.strip() or not line.split()[0].isdigit():
            break
        rows[int(line.split()[0])] = line.split()
    return rows


@pytest.mark.parametrize("spec", ALL_SPECS)
@pytest.mark.parametrize("pattern, phases", [("a2a-lin", "0-3"), ("randperm:7", None)])
def test_bounds_on_every_family(run, store, spec, pattern, phases):
    argv = ["bounds", spec, "--traffic", pattern, "--quiet"] + (["--phase", phases] if phases else [])
    code, out, err = run(*argv)
    assert code == 0 and err == ""
    assert run(*argv) == (0, out, "")
    table = bounds_table(out)
    routers = XGFT_ROUTERS[:4] if spec == XGFT else [r for r in POLICY if applies(r, FAMILY_OF[spec])]
    for router in routers:
        _, doc, _ = routed(run, store, spec, router, pattern, phases)
        assert sorted(table) == [p["phase"] for p in doc["phases"]]
        for record in doc["phases"]:
            # bounds prints the cut bounds; a synthesizing router's file may raise them to its LP bound, and says so
            assert int(table[record["phase"]][1]) == max(record["stage_bounds"], default=0), (router, record["phase"])
            if record.get("bound_source") != "LP":
                assert record["lower_bound"] == max(record["stage_bounds"], default=0), (router, record["phase"])
            else:
                assert record["lower_bound"] == record["solver"]["lp_bound"] > max(record["stage_bounds"])


@pytest.mark.parametrize("spec", DIRECT_SPECS)
def test_lp_bound_never_beats_a_routing(run, store, spec):
    code, out, err = run("bounds", spec, "--traffic", "a2a-lin", "--phase", "3", "--lp", "--quiet")
    assert code == 0 and err == ""
    assert "certified in every phase" in out.splitlines()[-1]
    assert re.search(r"^phase .* lp$", out, re.M), out
    table = bounds_table(out)
    assert sorted(table) == [3]
    lp, bound = float(table[3][-1]), int(table[3][1])
    assert 0 < lp <= bound
    for router in (r for r in POLICY if applies(r, FAMILY_OF[spec])):
        _, doc, _ = routed(run, store, spec, router, "a2a-lin", "0-3")
        assert doc["phases"][3]["phase"] == 3
        assert bound <= doc["phases"][3]["max_contention"], router


def test_ugal_routes_a_phase_the_same_in_any_company(run, store):
    """UGAL's choices depend on the loads placed before them; they are made per phase in (src, dst)
    order, so a phase's paths do not depend on the other phases selected, on the batching (worker
    count, --out) or on the order of its flows."""
    import numpy as np

    from synth.routing.ugal import ugal
    from synth.topology import parse_topology

    spec = "dragonfly:2,4,2"
    _, alone, _ = routed(run, store, spec, "ugal", "a2a-lin", "5")
    _, some, _ = routed(run, store, spec, "ugal", "a2a-lin", "3,5")
    _, every, _ = routed(run, store, spec, "ugal", "a2a-lin", "all")
    assert alone["phases"][0]["paths"] == some["phases"][1]["paths"] == every["phases"][5]["paths"]
    topology = parse_topology(spec)
    rng = np.random.default_rng(1)
    src = np.arange(72)
    dst = rng.permutation(72)
    phase = np.repeat([0, 1], 36)
    shuffle = rng.permutation(72)
    straight = ugal(topology, src, dst, phase, seed=3)
    shuffled = ugal(topology, src[shuffle], dst[shuffle], phase[shuffle], seed=3)
    for i, j in enumerate(shuffle):
        assert shuffled.path(i).tolist() == straight.path(j).tolist()


@pytest.mark.parametrize("spec, router", [(specs[0], "valiant") for specs in FAMILY_SPECS.values()]
                         + [("dragonfly:2,4,2", "ugal"), ("slimfly:5", "ugal"), (XGFT, "dmodk")])
def test_loads_csv_recounts_the_routes(run, tmp_path, spec, router):
    """`route --out --loads` on every family: every channel's messages, per-phase peak and bytes,
    recounted from the paths of the routes file written by the same run."""
    routes, loads = tmp_path / "r.json", tmp_path / "l.csv"
    code, _, err = run("route", spec, "--traffic", "a2a-lin", "--phase", "1-3", "--router", router, "--seed", SEED,
                       "--bytes", 100, "--quiet", "--out", routes, "--loads", loads)
    assert code == 0 and err == "", err
    doc = json.loads(routes.read_text())
    total, peak, size = Counter(), Counter(), Counter()
    for record in doc["phases"]:
        here = Counter()
        for (_, _, nbytes), path in zip(record["flows"], record["paths"]):
            channels = path if doc["format"] == "synth-routes/2" else []
            here.update(channels)
            for c in channels:  # (a Valiant path may cross a channel twice: once per segment)
                size[c] += nbytes
        total.update(here)
        for c, k in here.items():
            peak[c] = max(peak[c], k)
    rows = loads.read_text().splitlines()
    header = rows[0].split(",")
    assert header[-3:] == ["messages", "peak_messages_per_phase", "bytes"]
    assert header[5:-3] == (["stage", "direction"] if spec == XGFT else ["class"])
    net = model(run, spec)
    assert len(rows) - 1 == net.num_channels
    for line in rows[1:]:
        fields = line.split(",")
        c = int(fields[0])
        assert (fields[1], fields[3]) == (net.names[net.src[c]], net.names[net.dst[c]])
        assert [int(x) for x in fields[-3:]] == [total[c], peak[c], size[c]], line
    if spec != XGFT:
        classes = {line.split(",")[5] for line in rows[1:]}
        assert "terminal" in classes and len(classes) >= 2


def test_lp_time_limit(run):
    argv = ["bounds", "dragonfly:1,4,2", "--traffic", "a2a-lin", "--phase", "1-2", "--quiet"]
    assert_user_error(*run(*argv, "--lp-time-limit", "5"), "--lp")
    assert_user_error(*run(*argv, "--lp", "--lp-time-limit", "0"), "--lp-time-limit")
    code, out, err = run(*argv, "--lp", "--lp-time-limit", "1e-9")  # stops every phase after its first step
    assert code == 0 and err == ""
    assert out.splitlines()[-1].startswith("lp: 2 of 2 phases stopped at --lp-time-limit 1e-09 s (first: phase 1)")


def test_lp_bound_is_deterministic(run):
    argv = ["bounds", "dragonfly:1,2,1", "--traffic", "a2a-lin", "--phase", "0-5", "--lp", "--quiet"]
    code, out, err = run(*argv)
    assert code == 0 and err == "" and len(bounds_table(out)) == 6
    assert run(*argv) == (0, out, "")


# ----- check rejects tampering ------------------------------------------------------------------

def pick_flow(net: Model, doc: dict) -> tuple[dict, int, list[int]]:
    """Phase 3 of a2a-lin and its first flow between two different routers: (record, index, routers)."""
    record = doc["phases"][3]
    for i, ((s, d, _), path) in enumerate(zip(record["flows"], record["paths"])):
        if net.router_of[s] != net.router_of[d]:
            routers = net.walk(s, d, path)
            assert isinstance(routers, list) and len(path) >= 3
            return record, i, routers
    raise AssertionError("no flow between two routers")


def longer_path(net: Model, a: int, b: int) -> list[int]:
    """A simple router path from a to b longer than a minimal one."""
    target = net.distance[a][b]
    for path in nx.all_simple_paths(net.graph, a, b, cutoff=target + 3):
        if len(path) - 1 > target:
            return path
    raise AssertionError(f"no path from {a} to {b} longer than {target}")


def tamper_missing_channel(net, doc, router):
    record, i, _ = pick_flow(net, doc)
    record["paths"][i][1] = net.num_channels
    return "does not exist"


def tamper_missing_channel_far(net, doc, router):
    record, i, _ = pick_flow(net, doc)
    record["paths"][i][-2] = net.num_channels + 1000
    return "does not exist"


def tamper_not_contiguous(net, doc, router):
    record, i, _ = pick_flow(net, doc)
    path = record["paths"][i]
    at = net.dst[path[0]]
    path[1] = min(c for c in range(net.num_channels) if net.src[c] >= net.n and net.dst[c] >= net.n and net.src[c] != at)
    (s, d, _) = record["flows"][i]
    assert net.walk(s, d, path) == "not contiguous"
    return "does not leave node"


def tamper_not_minimal(net, doc, router):
    record, i, routers = pick_flow(net, doc)
    (s, d, _) = record["flows"][i]
    detour = longer_path(net, routers[0], routers[-1])
    path = [net.injection[s]] + net.channels(detour) + [net.ejection[d]]
    assert net.walk(s, d, path) == detour and not net.is_minimal(detour)
    record["paths"][i] = path
    return "minimal"


def tamper_not_via_one(net, doc, router):
    """Around a cycle through the source router twice, then the recorded path: contiguous, but no
    split into two minimal segments (each split leaves a repeated router in one segment)."""
    record, i, routers = pick_flow(net, doc)
    (s, d, _) = record["flows"][i]
    a = routers[0]
    cycle = [a] + nx.shortest_path(net.graph, next(iter(sorted(net.graph.successors(a)))), a)
    walk = cycle + cycle[1:] + routers[1:]
    path = [net.injection[s]] + net.channels(walk) + [net.ejection[d]]
    assert net.walk(s, d, path) == walk and not net.is_via_one(walk)
    record["paths"][i] = path
    return "two minimal segments"


def tamper_contention(net, doc, router):
    record = max(doc["phases"], key=lambda p: p["max_contention"])
    record["max_contention"] += 1
    return "max contention"


def tamper_contention_lower(net, doc, router):
    record = max(doc["phases"], key=lambda p: p["max_contention"])
    assert record["max_contention"] > 0
    record["max_contention"] -= 1
    return "max contention"


TAMPERS = {"missing-channel": tamper_missing_channel, "missing-channel-far": tamper_missing_channel_far,
           "not-contiguous": tamper_not_contiguous, "not-minimal": tamper_not_minimal,
           "not-via-one": tamper_not_via_one, "contention-up": tamper_contention,
           "contention-down": tamper_contention_lower}
TAMPER_CASES = [(spec, router, kind) for spec, router in ROUTER_CASES for kind in TAMPERS
                if not (kind == "not-minimal" and POLICY.get(router, MINIMAL) != MINIMAL)
                and not (kind == "not-via-one" and POLICY.get(router, MINIMAL) != VIA_ONE)]


@pytest.mark.parametrize("spec, router, kind", TAMPER_CASES, ids=[_case_id(c) for c in TAMPER_CASES])
def test_check_rejects_tampering_on_every_family(run, tmp_path, store, spec, router, kind):
    target, doc, _ = routed(run, store, spec, router, "a2a-lin", "0-3")
    assert_passes(run, target)
    untouched = copy.deepcopy(doc)
    names = TAMPERS[kind](model(run, spec), doc, router)
    assert doc != untouched
    assert_rejected(run, tmp_path, doc, names)


TWO_GROUPS = "dragonfly:1,4,2:groups=2"
VALIANT_CASES = [c for c in ROUTER_CASES if c[1] in ("valiant", "valiant-any") and c[0] != TWO_GROUPS]


def test_valiant_on_two_groups_is_minimal(run, store):
    """With two groups there is no intermediate group: Valiant routes every message minimally."""
    for router in ("valiant", "valiant-any", "ugal"):
        _, doc, _ = routed(run, store, TWO_GROUPS, router, "a2a-lin", "0-3")
        net = model(run, TWO_GROUPS)
        assert all(net.is_minimal(routers) for p in doc["phases"] for (s, d, _), path in zip(p["flows"], p["paths"])
                   if (routers := net.walk(s, d, path)))


@pytest.mark.parametrize("spec, router", VALIANT_CASES, ids=[_case_id(c) for c in VALIANT_CASES])
def test_valiant_routes_relabelled_minimal_are_rejected(run, tmp_path, store, spec, router):
    """A Valiant file declares two minimal segments; the same paths under a minimal router's name
    must fail the minimal policy (the files hold non-minimal paths: verified here)."""
    target, doc, _ = routed(run, store, spec, router, "a2a-lin", "0-3")
    net = model(run, spec)
    detours = sum(not net.is_minimal(routers) for p in doc["phases"] for (s, d, _), path in zip(p["flows"], p["paths"])
                  if (routers := net.walk(s, d, path)))
    assert detours > 0
    doc["router"] = "minimal"
    assert_rejected(run, tmp_path, doc, "minimal")


VERIFIER_CASES = [("dragonfly:2,4,2", "minimal"), ("dragonfly:2,4,2", "valiant"), ("kautz:3", "minimal"),
                  ("kautz:3", "ugal"), ("torus:2,3", "dor"), (XGFT, "dmodk")]


@pytest.mark.parametrize("spec, router", VERIFIER_CASES, ids=[_case_id(c) for c in VERIFIER_CASES])
def test_the_independent_verifier_catches_the_tampers(run, store, spec, router):
    """verify_routes is the independent check above: it must fail on what `synth check` must reject."""
    _, doc, _ = routed(run, store, spec, router, "a2a-lin", "0-3")
    net = model(run, spec)
    verify_routes(net, doc, router)
    for kind in ("missing-channel", "not-contiguous", "contention-up", "contention-down",
                 "not-minimal" if POLICY.get(router, MINIMAL) == MINIMAL else "not-via-one"):
        tampered = copy.deepcopy(doc)
        TAMPERS[kind](net, tampered, router)
        with pytest.raises(AssertionError):
            verify_routes(net, tampered, router)


LONGER_DRAGONFLIES = ["dragonfly:2,4,2", "dragonfly:1,4,2:arrangement=relative", "dragonfly:1,4,2:arrangement=circulant"]


@pytest.mark.parametrize("spec", LONGER_DRAGONFLIES)
@pytest.mark.parametrize("router", ["minimal", "minimal-random"])
def test_check_rejects_a_shorter_path_through_a_third_group(run, tmp_path, store, spec, router):
    """On a dragonfly a minimal router declares L-G-L paths: a path with two global hops is refused
    even where it is shorter in the graph than the L-G-L path it replaces."""
    target, doc, _ = routed(run, store, spec, router, "a2a-lat", "all")
    assert_passes(run, target)
    net = model(run, spec)
    for record in doc["phases"]:
        for i, (s, d, _) in enumerate(record["flows"]):
            a, b = net.router_of[s], net.router_of[d]
            if net.distance[a][b] > net.graph_distance[a][b]:
                shortcut = nx.shortest_path(net.graph, a, b)
                assert net.crossings(shortcut) >= 2 and len(shortcut) < len(net.walk(s, d, record["paths"][i]))
                record["paths"][i] = [net.injection[s]] + net.channels(shortcut) + [net.ejection[d]]
                assert net.walk(s, d, record["paths"][i]) == shortcut
                assert_rejected(run, tmp_path, doc, "minimal")
                return
    raise AssertionError("no router pair whose L-G-L path is longer than the graph's shortest path")


@pytest.mark.parametrize("spec, router", [("dragonfly:1,4,2:groups=5", "ugal"), ("kautz:3", "valiant")],
                         ids=["dragonfly-ugal", "kautz-valiant"])
def test_route_is_deterministic_across_processes(tmp_path, spec, router):
    """Two separate processes (different hash seeds) write the same bytes."""
    outputs = []
    for hash_seed in ("1", "2"):
        target = tmp_path / f"routes-{hash_seed}.json"
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        result = subprocess.run([sys.executable, "-m", "synth", "route", spec, "--traffic", "randperm:3", "--router",
                                 router, "--seed", "9", "--quiet", "--out", str(target)], env=env, capture_output=True)
        assert result.returncode == 0, result.stderr
        outputs.append(target.read_bytes())
    assert outputs[0] == outputs[1]


RELABEL_CASES = [(spec, router) for spec, router in REFUSED_CASES if spec != XGFT and router in POLICY]


@pytest.mark.parametrize("spec, router", RELABEL_CASES, ids=[_case_id(c) for c in RELABEL_CASES])
def test_check_rejects_a_router_that_does_not_apply(run, tmp_path, store, spec, router):
    target, doc, _ = routed(run, store, spec, "minimal", "a2a-lin", "0-3")
    assert_passes(run, target)
    code, out, err = run("route", spec, "--traffic", "a2a-lin", "--phase", "0-3", "--router", router, "--quiet")
    assert_user_error(code, out, err, router)  # route refuses it ...
    doc["router"] = router
    target = tmp_path / "relabelled.json"
    target.write_text(json.dumps(doc))
    code, out, err = check_file(run, target)  # ... so check must not accept a file that claims it
    if code == 0:
        raise CheckAccepted(out)
    assert code in (1, 2), out
    assert router in (out + err).splitlines()[0]


def self_message_case(run, store, spec, router) -> tuple[object, dict, int]:
    """A randperm file with a fixed point (a message to itself): the file, its document, the flow."""
    for seed in range(1, 60):
        _, doc, _ = routed(run, store, spec, "dmodk" if spec == XGFT else "minimal", f"randperm:{seed}", None)
        fixed = [i for i, (s, d, _) in enumerate(doc["phases"][0]["flows"]) if s == d]
        if fixed and len(fixed) < len(doc["phases"][0]["flows"]):
            target, doc, _ = routed(run, store, spec, router, f"randperm:{seed}", None)
            return target, doc, fixed[0]
    raise AssertionError("no randperm seed with a fixed point")


def tamper_self_message(run, store, spec, router) -> dict:
    """Give a message to itself the path out to its router and back, [injection, ejection]: a
    contiguous chain from the terminal to itself. In a permutation that terminal's two links carry
    nothing else and every other terminal link at most one message, so every recorded number still
    holds (recounted here): the only fault is the path of a message to itself, which must be []."""
    target, doc, i = self_message_case(run, store, spec, router)
    assert_passes(run, target)
    net = model(run, spec)
    record = doc["phases"][0]
    t = record["flows"][i][0]
    assert record["paths"][i] == []
    record["paths"][i] = [net.injection[t], net.ejection[t]]
    loads = Counter(c for path in record["paths"] for c in path)
    assert record["max_contention"] == max(loads.values()) >= 1
    assert record["stage_max"][0] == max(loads[c] for c in [*net.injection.values(), *net.ejection.values()]) == 1
    return doc


SELF_CASES = [(spec, router) for spec, router in ROUTER_CASES if spec != XGFT] + [(XGFT, "dmodk")]


@pytest.mark.parametrize("spec, router", SELF_CASES, ids=[_case_id(c) for c in SELF_CASES])
def test_check_rejects_a_path_for_a_message_to_itself(run, tmp_path, store, spec, router):
    """Under every policy: minimal ones by length, Valiant/UGAL and dragonfly ones explicitly."""
    assert_rejected(run, tmp_path, tamper_self_message(run, store, spec, router), "flow")
