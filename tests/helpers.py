"""What more than one test file uses, in one module (issue 23, item 8): test files do not import each
other, since they live in different directories (tests/unit/<package>, tests/contract,
tests/integration, and the on-demand tests/slow and tests/bench).

Imported as `helpers`: tests/ is on sys.path because tests/conftest.py lives there (in pytest's
default "prepend" import mode the directory of a conftest.py outside any package goes first on
sys.path, before any test module is imported); the scripts of tests/bench put it there themselves.
Fixtures stay in tests/conftest.py.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import re
import tempfile
from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import networkx as nx
import numpy as np
from hypothesis import HealthCheck, settings, strategies as st

from synth.cli import main
from synth.routing.candidates import build_candidates
from synth.routing.minimal import router_view
from synth.routing.path_selection import SelectionState
from synth.topology import parse_topology
from synth.topology.direct import RouterGraph, build_direct_network
from synth.topology.family import Topology

# The repository's root, whatever the depth of the file that asks.
REPO = Path(__file__).resolve().parents[1]


# ==================================================================================================
# Instances: the networks of [Prisacari20]'s tables, and paths recounted
# ==================================================================================================

# [Prisacari20] Table 2.1 (half bisection, M_L = 2) and Table 3.1.
TABLE_2_1 = {
    16: "xgft:3:4,2,2:1,4,1",
    32: "xgft:3:4,4,2:1,4,2",
    64: "xgft:3:8,4,2:1,8,2",
    128: "xgft:3:8,8,2:1,8,4",
    256: "xgft:4:8,4,4,2:1,8,4,2",
    512: "xgft:4:8,8,4,2:1,8,8,2",
    1024: "xgft:4:8,8,8,2:1,8,8,4",
}
TABLE_3_1 = {
    16: "xgft:2:8,2:1,4",
    32: "xgft:3:4,4,2:1,4,2",
    64: "xgft:3:8,4,2:1,8,2",
    128: "xgft:3:8,8,2:1,8,4",
    256: "xgft:4:8,4,4,2:1,8,4,2",
    512: "xgft:4:8,8,4,2:1,8,8,2",
    1024: "xgft:4:16,8,4,2:1,16,8,2",
    2048: "xgft:5:8,8,4,4,2:1,8,8,4,2",
    4096: "xgft:5:8,8,8,4,2:1,8,8,8,2",
    8192: "xgft:5:8,8,8,8,2:1,8,8,8,4",
}


def xgft_and_network(spec):
    xgft = parse_topology(spec)
    return xgft, xgft.network()


def hop_channels(network, paths):
    """Channel ids along node paths, found by the network's independent (src, dst) lookup."""
    out = []
    for path in paths:
        if len(path) > 1:
            hops = network.find_channels(np.asarray(path[:-1]), np.asarray(path[1:]))
            assert (hops >= 0).all()
            out.append(hops)
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def legacy_routes(doc: dict) -> dict:
    """A synth-routes/2 document as the first version recorded it: every channel path as the node
    ids it visits, from the source terminal (docs/formats.md), format synth-routes/1. For the tests
    that keep the /1 reader and checker covered."""
    network = parse_topology(doc["topology"]["spec"]).network()
    heads = network.channel_dst.tolist()
    doc["format"] = "synth-routes/1"
    for record in doc["phases"]:
        record["paths"] = [[flow[0]] + [heads[c] for c in path] for flow, path in zip(record["flows"], record["paths"])]
    return doc


# ==================================================================================================
# The bad-input contract (tests/contract/test_bad_inputs.py): the CLI in this process, one-line errors, untouched outputs
# ==================================================================================================

# Reproducible in CI: derandomized, no example database.
PROPERTY = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.filter_too_much])


def run(*argv) -> tuple[int, str, str]:
    """`synth ARGV` in this process: (exit code, stdout, stderr). Unlike conftest's `run` fixture (capsys)
    it needs no fixture, so Hypothesis examples and module-scoped setups can call it, and it turns
    argparse's own SystemExit into the exit code."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:  # argparse exiting by itself (bad input must come back as a return code)
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def _mentions(name: str, line: str) -> bool:
    """`name` appears in the message as given, escaped (ascii()), or cut (long values are shortened)."""
    forms = {name, ascii(name)[1:-1], repr(name)[1:-1]}
    forms |= {f[:40] for f in list(forms) if len(f) > 40}
    return any(f and f in line for f in forms)


def assert_user_error(result, *any_of: str, all_of: tuple[str, ...] = ()) -> str:
    """Exit 2, exactly one line on stderr starting 'synth: error:', no traceback; the line names at
    least one of `any_of` (file, field or value) and every one of `all_of`. Returns the line."""
    code, out, err = result
    shown = f"exit code {code!r}\n--- stderr ---\n{err[-3000:]}\n--- stdout ---\n{out[-1500:]}"
    assert "Traceback" not in err and "Traceback" not in out, "a traceback was printed:\n" + shown
    assert code == 2, "expected exit code 2 (bad input):\n" + shown
    assert err.endswith("\n") and err.count("\n") == 1 and "\r" not in err, "expected exactly one line on stderr:\n" + shown
    assert err.startswith("synth: error:"), "the line must start with 'synth: error:':\n" + shown
    line = err.rstrip("\n")
    if any_of:
        assert any(_mentions(n, line) for n in any_of), f"the message names none of {any_of!r}: {line!r}"
    for name in all_of:
        assert _mentions(name, line), f"the message does not name {name!r}: {line!r}"
    return line


def assert_ok(result) -> None:
    code, out, err = result
    assert code == 0 and "Traceback" not in err + out, f"expected success, got exit {code}:\n{err[-3000:]}\n{out[-1000:]}"


def listing(directory: Path) -> list[tuple[str, bytes | None]]:
    """Everything under `directory`, hidden files included, with file contents."""
    entries = []
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            path = Path(root, name)
            entries.append((str(path.relative_to(directory)), None if path.is_dir() else path.read_bytes()))
    return sorted(entries)


def assert_unchanged(directory: Path, before) -> None:
    after = listing(directory)
    if after != before:
        names_before = [n for n, _ in before]
        names_after = [n for n, _ in after]
        raise AssertionError(f"the output location changed on a failed run: before {names_before}, after {names_after}"
                             + ("" if names_before != names_after else " (contents differ)"))


@contextlib.contextmanager
def workspace():
    """A fresh (inputs, outputs) pair of directories, for one example."""
    with tempfile.TemporaryDirectory(prefix="sb") as root:
        inputs, outputs = Path(root, "in"), Path(root, "out")
        inputs.mkdir()
        outputs.mkdir()
        yield inputs, outputs


# ==================================================================================================
# The router graph from the topology JSON alone, and a paths-router state (path selection, bytes objective)
# ==================================================================================================

class Fabric:
    """The router graph from `synth topology --format json` alone."""

    def __init__(self, spec: str):
        doc = parse_topology(spec).network().to_json_dict()
        self.doc = doc
        self.n = doc["terminals"]
        self.channel = {}
        self.graph = nx.DiGraph()
        self.inject, self.eject, self.router_of = {}, {}, {}
        for ch in doc["channels"]:
            cid, tail, head = ch["id"], ch["src"], ch["dst"]
            if tail < self.n:
                self.inject[tail] = cid
                self.router_of[tail] = head
            elif head < self.n:
                self.eject[head] = cid
            else:
                self.channel.setdefault((tail, head), []).append(cid)  # parallel links: several
                self.graph.add_edge(tail, head)
        groups = parse_topology(spec).router_groups()
        self.group = None if groups is None else {self.n + r: int(g) for r, g in enumerate(groups)}

    def minimal(self, a: int, b: int) -> list[tuple[int, ...]]:
        """Every minimal router path a -> b as channel ids (dragonflies: at most one global hop)."""
        if self.group is None:
            node_paths = list(nx.all_shortest_paths(self.graph, a, b))
        else:
            cutoff = 5
            node_paths = [p for p in nx.all_simple_paths(self.graph, a, b, cutoff=cutoff)
                          if sum(self.group[x] != self.group[y] for x, y in zip(p, p[1:])) <= 1]
            shortest = min(len(p) for p in node_paths)
            node_paths = [p for p in node_paths if len(p) == shortest]
        return sorted(hops for p in node_paths
                      for hops in itertools.product(*(self.channel[(x, y)] for x, y in zip(p, p[1:]))))

    def head(self, channel: int) -> int:
        return self.doc["channels"][channel]["dst"]

    def cut_loops(self, a: int, hops: tuple[int, ...]) -> tuple[int, ...]:
        path, visited = [], [a]
        for c in hops:
            h = self.head(c)
            if h in visited:
                cut = visited.index(h)
                del visited[cut + 1:]
                del path[cut:]
            else:
                path.append(c)
                visited.append(h)
        return tuple(path)

    def valiant(self, a: int, b: int) -> set[tuple[int, ...]]:
        out = set()
        for m in self.graph.nodes:
            if m in (a, b) or not nx.has_path(self.graph, a, m) or not nx.has_path(self.graph, m, b):
                continue
            out.add(self.cut_loops(a, self.minimal(a, m)[0] + self.minimal(m, b)[0]))
        return out

    def candidates(self, a: int, b: int, kind: str) -> set[tuple[int, ...]]:
        out = set()
        if kind in ("minimal", "all"):
            out |= set(self.minimal(a, b))
        if kind in ("valiant", "all"):
            out |= self.valiant(a, b)
        return out


def phase_state(spec: str, kind: str, src, dst):
    """The paths router's selection state of one phase (src -> dst) over `kind` candidates: the
    terminal channels' loads as its floor."""
    topology = parse_topology(spec)
    view = router_view(topology)
    a, b = view.terminal_router[src], view.terminal_router[dst]
    moving = src != dst
    crossing = np.flatnonzero(moving & (a != b))
    floor = np.bincount(np.concatenate([view.injection[src[moving]], view.ejection[dst[moving]]]),
                        minlength=topology.network().num_channels)
    cands = build_candidates(topology, a[crossing], b[crossing], kind)
    r = len(view.distance)
    pair = np.searchsorted(cands.a * r + cands.b, a[crossing] * r + b[crossing])
    return SelectionState(cands, pair, floor)


# ==================================================================================================
# Random router graphs as a topology (direct routers, the LP bound)
# ==================================================================================================

@dataclass(frozen=True, eq=False)
class GraphTopology(Topology):
    """A test-only topology around a RouterGraph."""

    family = "testgraph"
    edges: tuple
    routers: int
    per_router: int
    directed: bool = False
    groups: tuple | None = None  # group of every router, for Valiant's intermediate group

    def router_groups(self):
        return None if self.groups is None else np.asarray(self.groups, dtype=np.int64)

    @property
    def spec(self) -> str:
        return f"testgraph:{self.routers}"

    def label(self) -> str:
        return self.spec

    @property
    def num_terminals(self) -> int:
        return self.routers * self.per_router

    def facts(self):
        return []

    @cached_property
    def graph(self) -> RouterGraph:
        src, dst = (np.array([e[i] for e in self.edges], dtype=np.int64) for i in (0, 1))
        return RouterGraph([f"r{i}" for i in range(self.routers)], np.full(self.routers, self.per_router), src, dst,
                           np.zeros(len(src), dtype=np.int64), ("link",), directed=self.directed)

    def build_network(self):
        return build_direct_network(self.spec, self.family, self.graph)

    def nx_graph(self):
        g = nx.MultiDiGraph()
        g.add_nodes_from(range(self.routers))
        for a, b in self.edges:
            g.add_edge(a, b)
            if not self.directed:
                g.add_edge(b, a)
        return g


@st.composite
def connected_graphs(draw, directed=False):
    routers = draw(st.integers(2, 9))
    order = draw(st.permutations(range(routers)))
    edges = [(order[i], order[i + 1]) for i in range(routers - 1)]  # a spanning path keeps it connected
    if directed:
        edges.append((order[-1], order[0]))  # and a cycle keeps it strongly connected
    extra = draw(st.lists(st.tuples(st.integers(0, routers - 1), st.integers(0, routers - 1)), max_size=12))
    edges += [(a, b) for a, b in extra if a != b]  # repeats are parallel links
    return GraphTopology(tuple(edges), routers, draw(st.integers(1, 3)), directed)


# ==================================================================================================
# Routes within a budget of virtual lanes (the lane budget tests and the slow suite's whole exchange)
# ==================================================================================================

LANES_SPEC = "dragonfly:2,4,2"


def route_with_lanes(out, *extra) -> tuple[int, str, str]:
    """`synth route LANES_SPEC --traffic a2a-lin --router paths` (1 s per phase) into `out`, in this
    process, with `extra` options (--vls N, --phase ...): (exit code, stdout, stderr)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["route", LANES_SPEC, "--traffic", "a2a-lin", "--router", "paths", "--quiet", "--time-limit", "1",
                     "--out", str(out), *map(str, extra)])
    return code, stdout.getvalue(), stderr.getvalue()


def lane_graphs(doc: dict) -> dict[int, nx.DiGraph]:
    """Per lane, the channel dependency graph of the routes file's paths on that lane (networkx)."""
    graphs: dict[int, nx.DiGraph] = {}
    for entry in doc["phases"]:
        assert len(entry["vls"]) == len(entry["paths"])
        for path, lane in zip(entry["paths"], entry["vls"]):
            graph = graphs.setdefault(lane, nx.DiGraph())
            graph.add_nodes_from(path)
            graph.add_edges_from(zip(path, path[1:]))
    return graphs


def verify_lanes(doc: dict, budget: int) -> list[int]:
    """Independent checks of a routes file with lanes; the per-phase contention recounted."""
    network = parse_topology(doc["topology"]["spec"]).network()
    src, dst = network.channel_src, network.channel_dst
    graphs = lane_graphs(doc)
    assert graphs and max(graphs) < budget and min(graphs) >= 0
    for lane, graph in graphs.items():
        assert nx.is_directed_acyclic_graph(graph), (lane, nx.find_cycle(graph))
    contention = []
    for entry in doc["phases"]:
        loads = np.zeros(network.num_channels, dtype=np.int64)
        for (s, d, _), path in zip(entry["flows"], entry["paths"]):
            if s == d:
                assert path == []
                continue
            assert src[path[0]] == s and dst[path[-1]] == d
            assert all(dst[a] == src[b] for a, b in zip(path, path[1:]))
            assert len(set(path)) == len(path)
            np.add.at(loads, path, 1)
        assert entry["max_contention"] == loads.max()
        contention.append(int(loads.max()))
    return contention


def budget_figures(out: str) -> dict[str, tuple[int, int]]:
    """The `budget` line of route's output: {what: (max, sum)} within the budget, without it, and the LP bound."""
    line = next(l for l in out.splitlines() if l.startswith("budget "))
    found = dict((k, (int(m), int(s))) for k, m, s in
                 re.findall(r"(within the budget|without it|LP bound over all routings) max (\d+), sum (\d+)", line))
    assert set(found) == {"within the budget", "without it", "LP bound over all routings"}, line
    return found


def replay_contributions(schedule) -> list[list[set]]:
    """A collective schedule replayed without synth's code: per rank, per block, the contributions
    it holds at the end (copies replace a partial with the sender's, reductions add the sender's),
    every send from what its sender held at the start of the step."""
    schedule = schedule.explicit()  # blocks as runs (TuNA's, Bruck's) listed one by one
    p, blocks = schedule.ranks, schedule.blocks
    reduction = schedule.collective in ("reduce-scatter", "allreduce", "reduce")
    if reduction:
        held = [[{r} for _ in range(blocks)] for r in range(p)]
    elif schedule.collective == "allgather":
        held = [[{b % p} if b % p == r else None for b in range(blocks)] for r in range(p)]
    elif schedule.collective in ("alltoall", "alltoallv"):  # block s P + d (its part k: k P^2 + s P + d) at rank s
        held = [[{r} if b % (p * p) // p == r else None for b in range(blocks)] for r in range(p)]
    else:  # broadcast
        held = [[{schedule.root} if r == schedule.root else None for _ in range(blocks)] for r in range(p)]
    for s in range(schedule.num_steps):
        before = [[None if h is None else set(h) for h in row] for row in held]
        for t in range(schedule.step_ptr[s], schedule.step_ptr[s + 1]):
            u, v = int(schedule.src[t]), int(schedule.dst[t])
            for b in schedule.block_ids[schedule.block_ptr[t]:schedule.block_ptr[t + 1]].tolist():
                assert before[u][b] is not None, f"step {s}: rank {u} sends block {b} it does not hold"
                if schedule.op[t] == 1:  # reduce
                    assert not (held[v][b] & before[u][b]), "a contribution counted twice"
                    held[v][b] = held[v][b] | before[u][b]
                else:
                    held[v][b] = set(before[u][b])
    return held


def delivers(schedule) -> bool:
    p, held = schedule.ranks, replay_contributions(schedule)
    everyone = set(range(p))
    if schedule.collective == "allgather" or schedule.collective == "broadcast":
        return all(h is not None for row in held for h in row)
    if schedule.collective == "reduce-scatter":
        return all(held[b % p][b] == everyone for b in range(schedule.blocks))
    if schedule.collective == "reduce":
        return all(h == everyone for h in held[schedule.root])
    if schedule.collective in ("alltoall", "alltoallv"):  # and ends at rank d
        return all(held[b % p][b] == {b % (p * p) // p} for b in range(schedule.blocks))
    return all(h == everyone for row in held for h in row)  # allreduce


def edge_lp(num_nodes: int, edges: list[tuple[int, int]], pairs: list[tuple[int, int]]) -> float:
    """lambda* of unit messages between node pairs (a, b) over directed `edges` (a list of (u, v), parallel
    ones apart): one commodity per message, every edge carrying at most lambda in all, lambda minimized
    (dense matrices, scipy's HiGHS). The LP bound's independent check."""
    from scipy.optimize import linprog

    m, e = len(pairs), len(edges)
    if not m:
        return 0.0
    variables = m * e + 1
    a_eq, b_eq = [], []
    for i, (a, b) in enumerate(pairs):
        for node in range(num_nodes):
            row = np.zeros(variables)
            for j, (x, y) in enumerate(edges):
                if x == node:
                    row[i * e + j] += 1
                if y == node:
                    row[i * e + j] -= 1
            a_eq.append(row)
            b_eq.append(1.0 if node == a else -1.0 if node == b else 0.0)
    a_ub = np.zeros((e, variables))
    for j in range(e):
        a_ub[j, [i * e + j for i in range(m)]] = 1
        a_ub[j, -1] = -1
    cost = np.zeros(variables)
    cost[-1] = 1
    result = linprog(cost, A_ub=a_ub, b_ub=np.zeros(e), A_eq=np.array(a_eq), b_eq=b_eq, method="highs")
    assert result.status == 0
    return float(result.x[-1])


def cabling(network) -> Counter:
    """A network's channels as the multiset of (node name, port, node name, port): its cabling, whatever the node
    and channel order (the fabric-file tests compare networks read back this way)."""
    names = network.node_names
    return Counter((names[s], sp, names[d], dp) for s, sp, d, dp in zip(
        network.channel_src.tolist(), network.channel_src_port.tolist(), network.channel_dst.tolist(),
        network.channel_dst_port.tolist()))


def spreading_halves(parts) -> list:
    """The spreading halves among synthesize_parts' parts: the whole alternatives (the generated
    algorithms, recursive combining and multiplying) left out."""
    return [part for part in parts if not part.whole]
