"""The layered router of dragonflies (`--router layered` on a dragonfly, synth.routing.layered_dragonfly),
checked independently.

- Path space: rebuilt here from the topology JSON with networkx (per message: directly into the
  destination's group or through one other group, any global link of each bundle, and inside
  every group visited the local link or a detour through one other router of the group). Every
  path the router writes is in it.
- Optimality: the least maximum contention over that space is computed here by an integer
  program of our own (scipy's HiGHS milp over the enumerated paths). The router never goes
  below it (its paths are in the space), and where it records a proof (LP bound or the system
  layer's infeasibility) it equals it.
- All four backends give one contention; reruns give the same routes.
- The CLI: route, check, refusals.
"""

from __future__ import annotations

import itertools
import json

import networkx as nx
import numpy as np
import pytest
from scipy.optimize import LinearConstraint, milp
from scipy.sparse import coo_matrix

from synth.routing.layered_dragonfly import DragonflyLayeredOptions, route_phase_layered
from synth.routing.path_selection import route_phase_paths
from synth.routing.paths_options import PathsOptions
from synth.solve import SOLVERS
from synth.topology import parse_topology
from synth.traffic.patterns import parse_pattern


class GroupFabric:
    """Routers, groups and channels from `synth topology --format json` and the group rule of
    the dragonfly definition (router i a + x is in group i)."""

    def __init__(self, spec: str):
        topology = parse_topology(spec)
        self.doc = topology.network().to_json_dict()
        self.n = self.doc["terminals"]
        self.a = topology.a
        self.channel: dict[tuple[int, int], list[int]] = {}
        self.graph = nx.MultiDiGraph()
        self.router_of = {}
        for ch in self.doc["channels"]:
            tail, head = ch["src"], ch["dst"]
            if tail < self.n:
                self.router_of[tail] = head
            elif head >= self.n:
                self.channel.setdefault((tail, head), []).append(ch["id"])
                self.graph.add_edge(tail, head, key=ch["id"])

    def group(self, router: int) -> int:
        return (router - self.n) // self.a

    def members(self, g: int) -> list[int]:
        return [self.n + g * self.a + x for x in range(self.a)]

    def segments(self, u: int, v: int) -> list[tuple[int, ...]]:
        """Local channel sequences u -> v inside their group: the link, or through one other router."""
        if u == v:
            return [()]
        out = [(c,) for c in self.channel.get((u, v), [])]
        for w in self.members(self.group(u)):
            if w not in (u, v):
                out += [(c1, c2) for c1 in self.channel.get((u, w), []) for c2 in self.channel.get((w, v), [])]
        return out

    def globals_between(self, x: int, y: int) -> list[tuple[int, int, int]]:
        """(channel, tail router, head router) of every global channel from group x to group y."""
        return [(k, u, v) for u, v, k in self.graph.edges(keys=True) if self.group(u) == x and self.group(v) == y]

    def space(self, s: int, d: int) -> list[tuple[int, ...]]:
        """Every router-channel path of the layered path space for terminals s -> d."""
        a, b = self.router_of[s], self.router_of[d]
        S, D = self.group(a), self.group(b)
        if S == D:
            return self.segments(a, b)
        groups = len(self.doc["channels"]) and (max(self.router_of.values()) - self.n) // self.a + 1
        paths = []
        for route in [[S, D]] + [[S, I, D] for I in range(groups) if I not in (S, D)]:
            for links in itertools.product(*(self.globals_between(x, y) for x, y in zip(route, route[1:]))):
                at, parts = a, []
                for channel, tail, head in links:
                    parts.append(self.segments(at, tail))
                    parts.append([(channel,)])
                    at = head
                parts.append(self.segments(at, b))
                paths += [sum(choice, ()) for choice in itertools.product(*parts)]
        return paths


def exact_optimum(fabric: GroupFabric, src, dst) -> int:
    """The least maximum router-channel load over the path space (and the terminal links' load)."""
    options = [fabric.space(int(s), int(d)) for s, d in zip(src, dst) if s != d]
    columns, rows, variables = [], [], 0
    choice_rows = []
    for k, paths in enumerate(options):
        for path in paths:
            for c in path:
                rows.append(c)
                columns.append(variables)
            choice_rows.append((k, variables))
            variables += 1
    channels = len(fabric.doc["channels"])
    load = coo_matrix((np.ones(len(rows)), (rows, columns)), shape=(channels, variables + 1)).tolil()
    load[:, variables] = -1  # load - z <= 0
    pick = coo_matrix((np.ones(variables), ([k for k, _ in choice_rows], [v for _, v in choice_rows])),
                      shape=(len(options), variables + 1))
    cost = np.zeros(variables + 1)
    cost[-1] = 1
    result = milp(cost, integrality=np.ones(variables + 1),
                  constraints=[LinearConstraint(load.tocsr(), -np.inf, 0), LinearConstraint(pick, 1, 1)],
                  bounds=(0, np.r_[np.ones(variables), np.inf]))
    assert result.status == 0, result.message
    moving = src != dst
    terminal = max(np.bincount(src[moving]).max(initial=0), np.bincount(dst[moving]).max(initial=0))
    return max(int(round(result.x[-1])), int(terminal))


def phase_flows(spec: str, pattern: str, phase: int = 0):
    topology = parse_topology(spec)
    workload = parse_pattern(pattern, topology.network().num_terminals, topology.hierarchy(), topology=topology)
    _, src, dst, _ = workload.batch(np.array([phase]))
    return topology, src, dst


def router_hops(fabric: GroupFabric, paths, flow: int) -> tuple[int, ...]:
    return tuple(int(c) for c in paths.path(flow)[1:-1])


def peak(topology, paths) -> int:
    return int(np.bincount(paths.channels, minlength=topology.network().num_channels).max(initial=0))


TINY = [("dragonfly:1,3,1", "randperm:2"), ("dragonfly:1,3,1", "randperm:3"), ("dragonfly:1,3,1", "shift:3"),
        ("dragonfly:1,3,1", "bitcomp"),
        ("dragonfly:2,3,1", "randperm:2"), ("dragonfly:2,3,1", "shift:2"), ("dragonfly:1,2,2:groups=3", "randperm:3"),
        ("dragonfly:1,2,2:groups=3", "shift:2"), ("dragonfly:2,2,1", "bitcomp")]
TINY += [("dragonfly:1,3,1", f"randperm:{k}") for k in range(4, 8)] + [("dragonfly:2,3,1", f"randperm:{k}") for k in range(3, 8)]


@pytest.mark.parametrize("spec,pattern", TINY)
def test_paths_in_space_and_optimum(spec, pattern):
    topology, src, dst = phase_flows(spec, pattern)
    fabric = GroupFabric(spec)
    paths, report = route_phase_layered(topology, src, dst, DragonflyLayeredOptions())
    for f, (s, d) in enumerate(zip(src.tolist(), dst.tolist())):
        if s != d:
            assert router_hops(fabric, paths, f) in set(fabric.space(s, d)), (s, d)
    achieved, optimum = peak(topology, paths), exact_optimum(fabric, src, dst)
    assert achieved >= optimum
    if report.proven_by is not None:
        assert achieved == optimum
    assert achieved == optimum  # on these instances the layers agree (no gap)


def test_layers_can_disagree():
    """The system layer's bounds are necessary, not sufficient: here the group layer cannot absorb
    what the system layer leaves on the local links at the optimum's target 1, so layered ends
    at 2, and says so (a gap to its system bound 1, no proof). `paths`, one program for the whole
    phase, reaches 1. 19 phases on these tiny dragonflies (TINY and randperm:1..7) have this one gap."""
    topology, src, dst = phase_flows("dragonfly:1,3,1", "randperm:1")
    paths, report = route_phase_layered(topology, src, dst, DragonflyLayeredOptions())
    assert exact_optimum(GroupFabric("dragonfly:1,3,1"), src, dst) == 1 == report.system_bound
    assert peak(topology, paths) == 2 and report.proven_by is None
    other, _ = route_phase_paths(topology, src, dst, PathsOptions())
    assert peak(topology, other) == 1


@pytest.mark.parametrize("spec,pattern", [("dragonfly:2,4,2", "randperm:1"), ("dragonfly:2,4,2", "shift:8"),
                                          ("dragonfly:2,4,2:groups=5", "shift:8"), ("dragonfly:3,6,3", "shift:18"),
                                          ("dragonfly:2,4,2", "shift:2")])
def test_proven_and_not_worse_than_paths(spec, pattern):
    """At the LP bound (or proven) on these phases; with bundles of parallel global links
    (groups=5) layered reaches what `paths`, whose candidates take the lowest-numbered link of
    a bundle, cannot."""
    topology, src, dst = phase_flows(spec, pattern)
    paths, report = route_phase_layered(topology, src, dst, DragonflyLayeredOptions())
    other, _ = route_phase_paths(topology, src, dst, PathsOptions())
    assert report.proven_by is not None or peak(topology, paths) <= report.lp_bound
    assert peak(topology, paths) <= peak(topology, other)


def test_bundles_beat_paths_candidates():
    topology, src, dst = phase_flows("dragonfly:2,4,2:groups=5", "shift:8")
    paths, _ = route_phase_layered(topology, src, dst, DragonflyLayeredOptions())
    other, _ = route_phase_paths(topology, src, dst, PathsOptions())
    assert peak(topology, paths) == 2 < peak(topology, other) == 3


def test_group_layer_detours_intra_group_traffic():
    """Every terminal to the next router of its group (shift by p): p messages on one local link
    unless the group layer detours them; the LP bound is met with detours."""
    topology, src, dst = phase_flows("dragonfly:3,6,3", "shift:3")
    paths, report = route_phase_layered(topology, src, dst, DragonflyLayeredOptions())
    assert report.detours > 0 and report.group_models > 0
    assert peak(topology, paths) == report.lp_bound == 2


@pytest.mark.parametrize("solver", SOLVERS)
def test_backends_agree(solver):
    topology, src, dst = phase_flows("dragonfly:1,3,1", "bitcomp")
    paths, report = route_phase_layered(topology, src, dst, DragonflyLayeredOptions(solver=solver))
    assert peak(topology, paths) == exact_optimum(GroupFabric("dragonfly:1,3,1"), src, dst)


def test_rerun_identical():
    topology, src, dst = phase_flows("dragonfly:3,6,3", "bitcomp")
    first, r1 = route_phase_layered(topology, src, dst, DragonflyLayeredOptions(time_limit=3))
    second, r2 = route_phase_layered(topology, src, dst, DragonflyLayeredOptions(time_limit=3))
    assert np.array_equal(first.channels, second.channels) and r1.as_dict() == r2.as_dict()


def test_cli_route_and_check(run, tmp_path):
    out = tmp_path / "r.json"
    code, text, _ = run("route", "dragonfly:2,4,2", "--traffic", "bitcomp", "--router", "layered", "--out", out, "--quiet")
    assert code == 0 and "layered (system layer" in text
    doc = json.loads(out.read_text())
    assert doc["synthesis"] == {"method": "dragonfly-layers", "solver": "cpsat", "time_limit": None, "threads": 1}
    assert set(doc["phases"][0]["solver"]) >= {"messages", "lp_bound", "system_bound", "target", "detours"}
    code, text, _ = run("check", out)
    assert code == 0 and "at most three groups" in text


def routed_doc(run, tmp_path):
    out = tmp_path / "r.json"
    assert run("route", "dragonfly:2,4,2", "--traffic", "shift:8", "--router", "layered", "--out", out, "--quiet")[0] == 0
    return out, json.loads(out.read_text())


def check_tampered(run, out, doc) -> tuple[int, str]:
    out.write_text(json.dumps(doc))
    code, text, _ = run("check", out)
    return code, text


def test_check_rejects_path_outside_space(run, tmp_path):
    out, doc = routed_doc(run, tmp_path)
    fabric = GroupFabric("dragonfly:2,4,2")
    src, dst = doc["phases"][0]["flows"][0][:2]
    a, b = fabric.router_of[src], fabric.router_of[dst]
    # through two intermediate groups: four groups visited
    S, D = fabric.group(a), fabric.group(b)
    I, J = [g for g in range(9) if g not in (S, D)][:2]
    route, at, hops = [S, I, J, D], a, []
    for x, y in zip(route, route[1:]):
        channel, tail, head = fabric.globals_between(x, y)[0]
        hops += list(fabric.segments(at, tail)[0]) + [channel]
        at = head
    hops += list(fabric.segments(at, b)[0])
    path = doc["phases"][0]["paths"][0]
    doc["phases"][0]["paths"][0] = [path[0], *hops, path[-1]]
    code, text = check_tampered(run, out, doc)
    assert code == 1 and "at most three groups" in text


def test_check_rejects_false_proof(run, tmp_path):
    out, doc = routed_doc(run, tmp_path)
    phase = doc["phases"][0]
    assert phase["proven_by"] == "lp"
    phase["solver"]["lp_bound"] = phase["max_contention"] - 1
    code, text = check_tampered(run, out, doc)
    assert code == 1 and "above the LP bound" in text


def test_refusals(run):
    code, _, err = run("route", "slimfly:5", "--traffic", "randperm:1", "--router", "layered")
    assert code == 2 and "needs a network with groups" in err and len(err.strip().splitlines()) == 1
    code, _, err = run("route", "dragonfly:2,4,2", "--traffic", "randperm:1", "--router", "layered",
                       "--consistency", "destination")
    assert code == 2 and "--consistency destination" in err
