"""Every lower bound synth prints for a collective schedule holds for every schedule `synth verify`
accepts (issue 40, item 3): checked against exact integer programs written here (OR-Tools CP-SAT),
over every schedule shape on tiny networks, independently of synth's synthesis code.

The programs are time-expanded over T steps, with the verifier's semantics (synth.collectives.verify):
- copy collectives (allgather, broadcast, alltoall, alltoallv): which ranks hold which blocks; a rank
  sends only blocks it holds at the start of the step, and holds a block from the step after a receipt;
- reductions (reduce-scatter, allreduce, reduce): which contributions each rank's partial of each block
  holds (one 0/1 per contribution). A `copy` replaces the receiver's partial and may not meet another
  transfer of the block into that rank in its step; a `reduce` adds the sender's partial (read at the
  start of the step) and may not count a contribution twice (the union is a sum of 0/1s, each <= 1);
  the senders keep their partials; at the end every promised partial holds all P contributions.

The printed numbers are `synth synthesize`'s bounds line (synth.synthesis.plan.plan_synthesis: the step
bound of its transfer graph, the time bound's message starts and bandwidth per byte) and the bound of
`synth schedule` / `compare` (synth.pricing.bounds). Since time = alpha x M + beta x B, each
part is checked apart:
1. steps: the step bound is printed "with <reach> transfers" and is relative to that transfer graph (a
   schedule may use any rank pair, and then takes fewer): the least steps of a schedule using only the
   graph's pairs, found by raising T until the program is feasible, is at least the bound. Exact for any
   number of blocks: one block (one part of P, or of P^2) of a schedule is a schedule of no more steps.
2. message starts: the least sum over steps of the most messages started at one port. A rank starting
   m messages in a step takes at least ceil(m / k) alpha (k = its node's ports; exact on the single-port
   networks, a relaxation where the router's paths pick the ports). Over T = bound + 1 steps; exact over
   every schedule because the optimum is <= T (a schedule of M alpha has at most M steps with messages)
   and, as for steps, over every block count.
3. bandwidth: the least sum over steps of the busiest channel's bytes over bandwidth, every transfer's
   bytes routed as any integer flow over the channels (no terminal forwards): a relaxation of every
   router's paths. Restricted honestly: at most T steps (1..3) and c equal blocks per part (1 or 2).
Each optimum's schedule is rebuilt with ScheduleBuilder and must pass `verify` (the program is no
looser than the verifier), and its priced cost (map_schedule) is at least the program's.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

ortools = pytest.importorskip("ortools")
from ortools.sat.python import cp_model  # noqa: E402

from synth.app.synthesize import plan_synthesis  # noqa: E402
from synth.collectives.schedule import COPY, REDUCE, ScheduleBuilder  # noqa: E402
from synth.collectives.verify import verify  # noqa: E402
from synth.pricing.alphabeta import node_ports  # noqa: E402
from synth.pricing.bounds import blocks_bound  # noqa: E402
from synth.pricing.schedule_cost import map_schedule  # noqa: E402
from synth.topology import parse_topology  # noqa: E402

REDUCTIONS = ("reduce-scatter", "allreduce", "reduce")
P4 = ["hyperx:3", "hyperx:4", "torus:3", "torus:4", "torus:2,2", "xgft:2:2,2:1,2", "dragonfly:2,1,1"]
ALL7 = ["allgather", "reduce-scatter", "allreduce", "broadcast", "reduce", "alltoall", "alltoallv"]


@pytest.fixture(scope="module")
def cliques(tmp_path_factory):
    """Two 4-cliques joined by a perfect matching (8 routers, a terminal each), as a graph file."""
    path = tmp_path_factory.mktemp("graphs") / "two_cliques.txt"
    edges = [(a, b) for c in (0, 4) for a in range(c, c + 4) for b in range(a + 1, c + 4)]
    path.write_text("".join(f"{a} {b}\n" for a, b in edges + [(i, i + 4) for i in range(4)]))
    # and a GPU mesh with a switch (`gpus`): ranks 0-1-2 joined in a line by NVLinks of bandwidth 2, ranks 0 and 2
    # also on a switch by links of 1; each GPU forwards (its own router, its ports its links), the switch has no rank
    (path.parent / "gpus.gml").write_text(
        "graph [\n" + "".join(f'  node [ id {g} label "g{g}" forwards 1 ]\n' for g in range(3))
        + '  node [ id 3 label "sw" ]\n'
        + "".join(f"  edge [ source {a} target {b} bandwidth {w} ]\n" for a, b, w in ((0, 1, 2), (1, 2, 2), (0, 3, 1),
                                                                                   (2, 3, 1)))
        + "]\n")
    return f"graph:{path}:p=1"


def _spec(name, cliques):
    if name == "gpus":
        return f"graph:{cliques.split(':')[1].rsplit('/', 1)[0]}/gpus.gml"
    return cliques if name == "cliques" else name


def _sizes(name: str, p: int, every: bool = False):
    """alltoallv's block sizes: varied, with some empty blocks unless `every`."""
    m = (np.arange(p * p).reshape(p, p) * 7 + 3) % (4 if not every else 3) + (1 if every else 0)
    return m.reshape(-1).astype(np.int64) if name == "alltoallv" else None


def _plan(name, topology, reach=None, sizes=None):
    return plan_synthesis(name, topology, reach=reach, sizes=sizes, time_limit=5)


class Program:
    """One collective over T steps on P ranks as a CP-SAT model (module docstring), transfers only
    between `pairs`; `units[b]`: block b's bytes (flows and loads in bytes)."""

    def __init__(self, name: str, p: int, steps: int, pairs, chunks: int = 1, root: int = 0, units=None):
        self.name, self.p, self.T, self.root = name, p, steps, root
        self.pairs = sorted(set(map(tuple, pairs)))
        self.red = name in REDUCTIONS
        per = p * p if name in ("alltoall", "alltoallv") else p if name in ("allgather", "reduce-scatter") else 1
        self.blocks = per * chunks
        self.units = [1] * self.blocks if units is None else [int(u) for u in np.resize(units, self.blocks)]
        m = self.m = cp_model.CpModel()
        B, R, T = range(self.blocks), range(p), range(steps)
        self.send = {}  # (i, j, b, t, op) -> bool
        ops = (COPY, REDUCE) if self.red else (COPY,)
        for (i, j) in self.pairs:
            for b in B:
                for t in T:
                    for op in ops:
                        self.send[i, j, b, t, op] = m.NewBoolVar("")
        self.msg = {(i, j, t): m.NewBoolVar("") for (i, j) in self.pairs for t in T}
        for (i, j, b, t, op), v in self.send.items():
            m.AddImplication(v, self.msg[i, j, t])
        for (i, j, t), v in self.msg.items():  # a message carries a block
            m.AddBoolOr([self.send[i, j, b, t, op] for b in B for op in ops] + [v.Not()])
        into = {j: [i for (i, jj) in self.pairs if jj == j] for j in R}
        if not self.red:
            start = [({b % p} if per == p else {b // p % p} if per == p * p else {root}) for b in B]
            goal = [(set(R) if name in ("allgather", "broadcast") else {b % p}) for b in B]
            h = [[[m.NewBoolVar("") for _ in range(steps + 1)] for _ in R] for _ in B]
            for b in B:
                for r in R:
                    m.Add(h[b][r][0] == int(r in start[b]))
                    m.Add(h[b][r][steps] == 1) if r in goal[b] else None
                    for t in T:
                        got = [self.send[i, r, b, t, COPY] for i in into[r]]
                        m.Add(h[b][r][t + 1] <= h[b][r][t] + sum(got))
                        m.Add(h[b][r][t + 1] >= h[b][r][t])
                for (i, j) in self.pairs:
                    for t in T:
                        m.AddImplication(self.send[i, j, b, t, COPY], h[b][i][t])
            self.hold = h
            return
        promised = [(set(R) if name == "allreduce" else {b % p} if name == "reduce-scatter" else {root}) for b in B]
        has = [[[[m.NewBoolVar("") for _ in range(steps + 1)] for _ in R] for _ in R] for _ in B]  # b, rank, c, t
        for b in B:
            for r in R:
                for c in R:
                    m.Add(has[b][r][c][0] == int(r == c))
                    m.Add(has[b][r][c][steps] == 1) if r in promised[b] else None
            for t in T:
                for j in R:
                    copies = [self.send[i, j, b, t, COPY] for i in into[j]]
                    reduces = [self.send[i, j, b, t, REDUCE] for i in into[j]]
                    cin = sum(copies)
                    m.Add(cin <= 1)
                    m.Add(sum(reduces) <= len(reduces) * (1 - cin))  # a copy meets no other transfer in
                    for c in R:
                        z = [self._and(v, has[b][i][c][t]) for v, i in zip(copies, into[j])]
                        y = [self._and(v, has[b][i][c][t]) for v, i in zip(reduces, into[j])]
                        w = m.NewBoolVar("")  # j's own partial, replaced by a copy
                        m.Add(w <= cin)
                        m.Add(w <= has[b][j][c][t])
                        m.Add(w >= cin + has[b][j][c][t] - 1)
                        m.Add(has[b][j][c][t] + sum(y) <= 1)  # counted once
                        m.Add(has[b][j][c][t + 1] == sum(z) + has[b][j][c][t] + sum(y) - w)
        self.has = has

    def _and(self, a, b):
        v = self.m.NewBoolVar("")
        self.m.AddImplication(v, a)
        self.m.AddImplication(v, b)
        self.m.AddBoolOr([a.Not(), b.Not(), v])
        return v

    def alpha_terms(self, k: int):
        """Per step a >= ceil(messages a rank starts / k); their sum."""
        a = []
        for t in range(self.T):
            at = self.m.NewIntVar(0, self.p, "")
            for i in range(self.p):
                self.m.Add(k * at >= sum(v for (s, _, tt), v in self.msg.items() if s == i and tt == t))
            a.append(at)
        return sum(a)

    def beta_terms(self, network):
        """Per step the busiest channel's bytes over bandwidth (times L, the bandwidths' common multiple),
        the bytes of every transfer an integer flow from its sender to its receiver; their sum over L."""
        m, n = self.m, network.num_terminals
        src, dst = network.channel_src.tolist(), network.channel_dst.tolist()
        bw = [Fraction(x).limit_denominator(1000) for x in network.channel_bandwidth.tolist()]
        L = math.lcm(*(f.numerator for f in bw)) * math.lcm(*(f.denominator for f in bw))
        total = sum(self.units) * self.p
        z = []
        for t in range(self.T):
            zt = m.NewIntVar(0, total * L, "")
            load = [[] for _ in src]
            for i in range(self.p):
                out = {j: sum(u * v for (s, d, b, tt, _), v in self.send.items() for u in [self.units[b]]
                              if s == i and d == j and tt == t) for j in range(self.p) if (i, j) in self.pairs}
                if not out:
                    continue
                f = [m.NewIntVar(0, 0 if (a < n and a != i) or b == i else total, "") for a, b in zip(src, dst)]
                for v in range(network.num_nodes):
                    net = sum(f[c] for c in range(len(src)) if src[c] == v) - sum(f[c] for c in range(len(src))
                                                                               if dst[c] == v)
                    m.Add(net == (sum(out.values()) if v == i else -out[v] if v in out else 0))
                for c in range(len(src)):
                    load[c].append(f[c])
            for c in range(len(src)):
                if load[c]:
                    m.Add(zt * bw[c].numerator >= sum(load[c]) * L * bw[c].denominator)
            z.append(zt)
        return sum(z), L

    def solve(self, objective=None, seconds: float = 15.0, proven: bool = True):
        if objective is not None:
            self.m.Minimize(objective)
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = seconds
        solver.parameters.num_search_workers = 2
        status = solver.Solve(self.m)
        assert status != cp_model.UNKNOWN and status != cp_model.MODEL_INVALID, "the program was not decided in time"
        if status == cp_model.INFEASIBLE:
            return None
        assert objective is None or not proven or status == cp_model.OPTIMAL, "the optimum was not proven in time"
        self.solver = solver
        return solver.ObjectiveValue() if objective is not None else True

    def schedule(self, spec: str):
        """The program's schedule, by ScheduleBuilder (a transfer per pair, step and op)."""
        rooted = self.name in ("broadcast", "reduce")
        sb = ScheduleBuilder(self.name, "exact-test", spec, self.p, self.blocks, self.units,
                             root=self.root if rooted else None)
        for t in range(self.T):
            src, dst, blocks, ops = [], [], [], []
            for op in ((COPY, REDUCE) if self.red else (COPY,)):
                for (i, j) in self.pairs:
                    got = [b for b in range(self.blocks) if self.solver.Value(self.send[i, j, b, t, op])]
                    if got:
                        src.append(i), dst.append(j), blocks.append(np.array(got)), ops.append(op)
            sb.add_step(src, dst, blocks, np.array(ops, dtype=np.int8))
        return sb.build()


def _all_pairs(p):
    return [(i, j) for i in range(p) for j in range(p) if i != j]


def _checked(program, spec):
    """The program's schedule passes synth's verifier."""
    s = program.schedule(spec)
    report = verify(s)
    assert report.ok, report.violation
    return s


def _least_steps(name, graph, spec, most: int):
    """The least steps of a verified schedule over the graph's pairs (most + 1: more than `most`)."""
    pairs = list(zip(graph.src.tolist(), graph.dst.tolist()))
    for steps in range(0, most + 1):
        if steps == 0 and graph.ranks > 1:
            continue
        prog = Program(name, graph.ranks, steps, pairs)
        if prog.solve(seconds=15):
            _checked(prog, spec)
            return steps
    return most + 1


def _step_cases():
    cases = []
    for net in P4 + ["cliques"]:
        for name in ALL7:
            for reach in ([None, "all"] if name not in ("alltoall", "alltoallv") else [None]):
                if net == "cliques" and name in ("reduce-scatter", "alltoall", "alltoallv") and reach == "all":
                    continue
                cases.append(pytest.param(net, name, reach, id=f"{net}-{name}-{reach or 'default'}"))
    return cases


@pytest.mark.timeout(60)
@pytest.mark.parametrize("net, name, reach", _step_cases())
def test_step_bound_holds_for_every_schedule_over_its_transfers(net, name, reach, cliques):
    """The printed `steps >= S with <reach> transfers` is at most the least steps of any verified
    schedule whose transfers are the graph's pairs (found exactly: the least T the program allows).
    An allreduce's bound is one half's, not twice it: a schedule need not be two halves (an earlier
    doubled bound failed here on every instance)."""
    spec = _spec(net, cliques)
    topology = parse_topology(spec)
    plan = _plan(name, topology, reach, _sizes(name, topology.network().num_terminals))
    bound = plan.step_bound.steps
    least = _least_steps(name, plan.graph, spec, bound)
    assert bound <= least, f"{spec} {name}: steps >= {bound} printed, a verified schedule takes {least}"


def _message_cases():
    out = []
    for net in P4 + ["cliques", "gpus"]:
        for name in ALL7 + ["alltoallv-dense"]:
            if net == "cliques" and name in ("reduce-scatter", "alltoallv", "alltoallv-dense"):
                continue  # 8 ranks: a reduce-scatter's 8 x 8 contributions per rank are not solved in time; the
                # alltoall stands for the alltoallv (the same program, other block bytes)
            out.append(pytest.param(net, name, id=f"{net}-{name}"))
    return out


def _empty(name, p, units, spec):
    """A schedule of no steps with the program's blocks: what blocks_bound reads (collective, ranks, blocks)."""
    blocks = p * p if name in ("alltoall", "alltoallv") else p if name in ("allgather", "reduce-scatter") else 1
    return ScheduleBuilder(name, "none", spec, p, blocks, 1 if units is None else units,
                           root=0 if name in ("broadcast", "reduce") else None).build()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("net, name", _message_cases())
def test_message_bound_holds_for_every_schedule(net, name, cliques):
    """The printed `>= M x alpha` (synthesize's time bound, and blocks_bound's messages for the
    same blocks) is at most the least alpha terms of any verified schedule over any rank pairs: no
    schedule of M - 1 steps has M - 1 alpha terms or fewer (which covers every schedule of fewer
    alpha terms). `alltoallv-dense`: an alltoallv whose blocks between ranks all have bytes (the bound
    is log then). The program is shown not vacuous: a schedule it finds at M + 1 steps verifies, and
    its priced alpha terms are at least the program's count."""
    spec = _spec(net, cliques)
    topology = parse_topology(spec)
    network = topology.network()
    p, k = network.num_terminals, node_ports(network)
    collective = "alltoallv" if name == "alltoallv-dense" else name
    sizes = _sizes(collective, p, every=name == "alltoallv-dense")
    printed = _plan(collective, topology, sizes=sizes).time_bound.messages
    bound = max(printed, blocks_bound(_empty(collective, p, sizes, spec), network).messages)
    below = Program(collective, p, bound - 1, _all_pairs(p), units=sizes)
    below.m.Add(below.alpha_terms(k) <= bound - 1)
    assert below.solve(seconds=40) is None, (f"{spec} {collective}: >= {printed} x alpha printed, the program "
                                             f"finds a verified schedule of {bound - 1}")
    found = Program(collective, p, bound + 1, _all_pairs(p), units=sizes)
    found.solve(found.alpha_terms(k), seconds=5, proven=False)
    schedule = _checked(found, spec)
    sends = np.zeros((bound + 1, p), dtype=np.int64)
    np.add.at(sends, (schedule.transfer_step(), schedule.src), 1)
    counted = int(np.ceil(sends / k).max(axis=1).sum())
    assert map_schedule(schedule, topology).messages >= counted >= bound


def _bandwidth_cases():
    out = []
    for net in P4:
        for name in ALL7:
            for steps, chunks in ((1, 1), (2, 1), (2, 2)):
                if chunks == 2 and name in ("alltoall", "alltoallv"):
                    continue  # P^2 blocks already
                out.append(pytest.param(net, name, steps, chunks, id=f"{net}-{name}-T{steps}-c{chunks}"))
    out += [pytest.param("cliques", name, 2, 1, id=f"cliques-{name}-T2-c1") for name in ("allreduce", "broadcast")]
    out += [pytest.param("gpus", name, steps, 1, id=f"gpus-{name}-T{steps}-c1") for name in ALL7 for steps in (1, 2)]
    out += [pytest.param(net, name, 3, 1, id=f"{net}-{name}-T3-c1") for net in ("torus:4", "xgft:2:2,2:1,2")
            for name in ("allgather", "allreduce", "broadcast", "reduce")]
    return out


@pytest.mark.timeout(90)
@pytest.mark.parametrize("net, name, steps, chunks", _bandwidth_cases())
def test_bandwidth_bound_holds_for_every_schedule(net, name, steps, chunks, cliques):
    """The printed `>= X B over bandwidth per byte` times the message's bytes (and blocks_bound's
    busiest bytes for the same blocks) is at most the least sum over steps of the busiest channel's
    bytes over bandwidth of any verified schedule of at most `steps` steps and `chunks` equal blocks
    per part, its transfers routed as any integer flows (every router's paths among them)."""
    spec = _spec(net, cliques)
    topology = parse_topology(spec)
    network = topology.network()
    p = network.num_terminals
    sizes = _sizes(name, p)
    per_byte = _plan(name, topology, sizes=sizes).time_bound.bandwidth.per_byte
    prog = Program(name, p, steps, _all_pairs(p), chunks=chunks, units=sizes)
    objective, scale = prog.beta_terms(network)
    best = prog.solve(objective, seconds=60)
    assert best is not None
    best /= scale
    schedule = _checked(prog, spec)
    assert float(map_schedule(schedule, topology).channel_bytes.sum()) >= best - 1e-9
    # the message: the vector, or a rank's P blocks of an all-to-all (alltoallv: their average, as printed)
    message = max(1, int(schedule.block_bytes.sum()) // (p if name in ("alltoall", "alltoallv") else 1))
    assert blocks_bound(schedule, network).bandwidth.busiest <= best + 1e-9
    assert per_byte * message <= best + 1e-9, (f"{spec} {name}: {per_byte:.4g} B per byte x {message} B printed, a "
                                               f"verified schedule of {steps} steps takes {best:g}")


# ----- the explicit allreduces below the doubled step bound (issue 40) ------------------------------------


def _one_step_allreduce(spec):
    sb = ScheduleBuilder("allreduce", "all-pairs", spec, 4, 1, 4)
    pairs = _all_pairs(4)
    sb.add_step([a for a, _ in pairs], [b for _, b in pairs], [[0]] * len(pairs), REDUCE)
    return sb.build()


def _two_clique_allreduce(spec):
    sb = ScheduleBuilder("allreduce", "cliques-then-matching", spec, 8, 1, 8)
    inside = [(a, b) for c in (0, 4) for a in range(c, c + 4) for b in range(c, c + 4) if a != b]
    sb.add_step([a for a, _ in inside], [b for _, b in inside], [[0]] * len(inside), REDUCE)
    sb.add_step(list(range(8)), [(r + 4) % 8 for r in range(8)], [[0]] * 8, REDUCE)
    return sb.build()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("which", ["hyperx4", "cliques"])
def test_explicit_allreduces_verify_and_meet_the_time_bounds(which, cliques):
    """The 1-step all-pairs allreduce on hyperx:4 and the 2-step one on two cliques (reduce in each
    clique, then across the matching) verify, and no printed alpha or bandwidth bound exceeds them."""
    spec = "hyperx:4" if which == "hyperx4" else cliques
    topology = parse_topology(spec)
    schedule = (_one_step_allreduce if which == "hyperx4" else _two_clique_allreduce)(spec)
    assert verify(schedule).ok, verify(schedule).violation
    mapped = map_schedule(schedule, topology)
    bound = _plan("allreduce", topology).time_bound
    n = int(schedule.block_bytes.sum())
    assert bound.messages <= mapped.messages and mapped.bound.messages <= mapped.messages
    assert bound.bandwidth.per_byte * n <= mapped.channel_bytes.sum() + 1e-9
    assert mapped.bound.bandwidth.busiest <= mapped.channel_bytes.sum() + 1e-9


@pytest.mark.timeout(60)
@pytest.mark.parametrize("which", ["hyperx4", "cliques"])
def test_explicit_allreduces_meet_the_step_bound(which, cliques):
    """Their steps (1 and 2, every transfer between neighbours) are at least the printed step bound:
    synth prints 2 and 4 ("twice: reduce-scatter then allgather")."""
    spec = "hyperx:4" if which == "hyperx4" else cliques
    topology = parse_topology(spec)
    schedule = (_one_step_allreduce if which == "hyperx4" else _two_clique_allreduce)(spec)
    plan = _plan("allreduce", topology)
    assert plan.graph.reach == "neighbours"
    plan.graph.pair_index(schedule.src, schedule.dst)  # every transfer is one of the graph's pairs
    assert plan.step_bound.steps <= schedule.num_steps, plan.step_bound.why


@pytest.mark.timeout(60)
def test_reduce_step_bound_on_a_one_way_network(tmp_path):
    """A directed graph (ring 0->1->2->3->0 plus 1->0 and 2->0): every rank sends straight to rank 0, so
    a reduce takes 1 step over the neighbour transfers; synth prints `steps >= 2` (the spread term with
    the out-degree). The exact least steps are found as in the tests above."""
    import networkx as nx

    g = nx.DiGraph([(0, 1), (1, 2), (2, 3), (3, 0), (1, 0), (2, 0)])
    nx.write_gml(g, tmp_path / "one_way.gml")
    spec = f"graph:{tmp_path / 'one_way.gml'}:p=1"
    topology = parse_topology(spec)
    plan = _plan("reduce", topology)
    least = _least_steps("reduce", plan.graph, spec, plan.step_bound.steps)
    assert least == 1
    assert plan.step_bound.steps <= least, plan.step_bound.why
