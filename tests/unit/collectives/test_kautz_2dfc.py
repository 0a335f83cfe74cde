"""Kautz K(d,2) and 2dfc collectives ([Pham26], [PhamNK]) with the seeds' numbers, every
cost taken from the generated schedule's alpha-beta evaluation on the network (not from a formula):

- Table 3.2, Kautz-C for d = 2..16 and Kautz-M (MULTITREE): the alpha and beta coefficients;
- MULTITREE's greedy step counts 3, 4, 5 for d = 2, 3, 4 (d + 1, the lower bound), and its d + 2 at d = 10;
- Kautz-M in d + 1 steps (allreduce 2 (d + 1), rooted ones 2) for every d = 2..16, its per-step per-link
  loads recomputed on a K(d,2) built here from the definition;
- 2dfc (4.5) t_DO = 2 alpha + (m1 + m2) b beta and (4.6) t_MD = 2 alpha + max(m1, m2) b beta on square
  and rectangular grids, the digest's model values (8x8 DO 43.9 us, MD 23.0; 16x16 85.9, 43.9), DO's
  bytes per node equal to the minimum (4.1 = 4.2), and MULTITREE's steps against the bound (4.4).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from synth.pricing.schedule_cost import costs, map_schedule
from synth.collectives.algorithms import ALGORITHMS, Request, grid_shape
from synth.collectives.algorithms.multitree import build_trees, two_level_trees
from synth.collectives.algorithms.rank_graph import rank_graph
from synth.collectives.verify import verify
from synth.topology import parse_topology

ALPHA, BANDWIDTH = 1e-6, 100e9
BETA = 8 / BANDWIDTH


def priced(name: str, collective: str, spec: str, blocks: int, block_bytes: int):
    topology = parse_topology(spec)
    p = topology.network().num_terminals
    schedule = ALGORITHMS[name].generate(Request(collective, p, blocks, block_bytes, spec, 0, grid_shape(topology)))
    assert verify(schedule).ok
    c = costs(map_schedule(schedule, topology), p, ALPHA, BANDWIDTH)
    return schedule, c


def coefficients(name, collective, d):
    """(alpha coefficient, beta coefficient in units of M) of a Kautz collective on K(d,2), M the
    table's message (broadcast: the vector; scatter, allreduce, alltoall: the total buffer in n
    blocks; allgather: each node's block)."""
    spec, n = f"kautz:{d}", d * (d + 1)
    m = n * 1024
    blocks, size = {"broadcast": (1, m), "scatter": (n, m // n), "allgather": (n, m), "allreduce": (n, m // n),
                    "alltoall": (n * n, m // n), "reduce": (1, m), "gather": (n, m // n), "reduce-scatter": (n, m)}[collective]
    schedule, c = priced(name, collective, spec, blocks, size)
    return schedule.num_steps, (c.time - schedule.num_steps * ALPHA) / (BETA * m)


TABLE_3_2_C = {  # Pham26 Table 3.2, Kautz-C: (alpha coefficient, beta coefficient of M)
    "broadcast": lambda d: (2, 2), "reduce": lambda d: (2, 2),
    "scatter": lambda d: (2, (d + 2) / (d * (d + 1))), "gather": lambda d: (2, (d + 2) / (d * (d + 1))),
    "allgather": lambda d: (2, d + 1), "reduce-scatter": lambda d: (2, d + 1),
    "allreduce": lambda d: (4, 2 / d), "alltoall": lambda d: (2, (2 * d + 1) / (d * (d + 1))),
}



def greedy_trees(out, roots):
    """Pham26's greedy MULTITREE construction, written here from its description (not synth's compiled
    kernel): in every step the roots' trees take turns, each adding one edge from a node it held at
    the start of the step (nodes in the order they joined, out-neighbours ascending) to a node it
    lacks, over a link no tree used in the step; when none can, the step ends."""
    neighbours = [sorted(a.tolist()) for a in out]
    member = [{r} for r in roots]
    order = [[r] for r in roots]
    edges = [[] for _ in roots]
    step = 0
    while any(len(m) < len(out) for m in member):
        held = [len(o) for o in order]
        used = set()
        added = True
        while added:
            added = False
            for t in range(len(roots)):
                found = next(((u, w) for u in order[t][:held[t]] for w in neighbours[u]
                              if w not in member[t] and (u, w) not in used), None)
                if found is not None:
                    used.add(found)
                    member[t].add(found[1])
                    order[t].append(found[1])
                    edges[t].append((step, *found))
                    added = True
        step += 1
    return edges


def subtrees(edges, root):
    """Per node of a tree, its subtree's nodes in depth-first preorder, children in the order added."""
    children = {}
    for _, u, w in edges:
        children.setdefault(u, []).append(w)
    out = {}

    def collect(x):
        out[x] = [x] + [y for c in children.get(x, []) for y in collect(c)]
        return out[x]

    collect(root)
    return out


@pytest.mark.parametrize("spec", ["kautz:2", "kautz:4", "2dfc:3,3", "2dfc:3,5", "torus:4,4", "torus:3,5", "hyperx:3,4"])
def test_greedy_trees_as_described(spec):
    """synth's compiled construction (it skips the nodes a tree has saturated) adds the same edges in
    the same steps as the construction written from Pham26's description, and its subtrees are the
    trees' own."""
    graph = rank_graph(spec)
    roots = list(range(graph.ranks))
    trees = build_trees(graph.out, roots)
    expected = greedy_trees(graph.out, roots)
    preorder, position, size = trees.subtrees()
    for t, r in enumerate(roots):
        assert trees.edges(t) == expected[t]
        below = subtrees(expected[t], r)
        for w, nodes in below.items():
            assert preorder[t, position[t, w]:position[t, w] + size[t, w]].tolist() == nodes

@pytest.mark.parametrize("d", [2, 3, 4, 5, 8, 16])
@pytest.mark.parametrize("collective", list(TABLE_3_2_C))
def test_table_3_2_kautz_c(collective, d):
    steps, beta = coefficients("kautz-c", collective, d)
    alpha_expected, beta_expected = TABLE_3_2_C[collective](d)
    assert steps == alpha_expected
    assert beta == pytest.approx(beta_expected, rel=1e-9)


@pytest.mark.parametrize("d", [2, 3, 4, 5, 6, 8, 10, 13, 16])
def test_table_3_2_kautz_m(d):
    """MULTITREE: allgather (d+1)(alpha + M beta), allreduce 2(d+1) alpha + 2M/d beta, alltoall
    (d+1) alpha + (2d+1)M/(d(d+1)) beta (breadth-first trees, their second level spread one tree per
    link and step); rooted ones as Kautz-C. d = 10 and 13 are where greedy trees take d + 2 steps."""
    assert coefficients("kautz-m", "allgather", d) == (d + 1, pytest.approx(d + 1))
    assert coefficients("kautz-m", "allreduce", d) == (2 * (d + 1), pytest.approx(2 / d))
    assert coefficients("kautz-m", "broadcast", d) == (2, pytest.approx(2))
    assert coefficients("kautz-m", "alltoall", d) == (d + 1, pytest.approx((2 * d + 1) / (d * (d + 1))))


def test_greedy_trees_miss_table_3_2_from_d_4():
    """Why Kautz-M's all-to-all does not use the greedy trees: on K(4,2) they take the d + 1 steps
    but put more than (2d+1) blocks of M/n on the busiest links over the steps."""
    graph = rank_graph("kautz:4")
    p = graph.ranks
    greedy = build_trees(graph.out, list(range(p)))
    assert greedy.steps == 5
    loads = {}
    for r in range(p):
        below = subtrees(greedy.edges(r), r)
        for s, u, w in greedy.edges(r):
            loads[s] = max(loads.get(s, 0), len(below[w]))  # one tree per link and step: a link's blocks
    assert sum(loads.values()) > 2 * 4 + 1


def kautz_words(d: int) -> np.ndarray:
    """K(d,2) from its definition: the words xy over the letters 0..d with x != y, numbered in
    lexicographic order (the numbering docs/formats.md gives for kautz:D); word xy links to yz."""
    return np.array([(x, y) for x in range(d + 1) for y in range(d + 1) if x != y])


KAUTZ_M_STEPS = {  # Pham26 Table 3.2's alpha coefficients for Kautz-M (Kautz-Mtree)
    "allgather": lambda d: d + 1, "reduce-scatter": lambda d: d + 1, "alltoall": lambda d: d + 1,
    "allreduce": lambda d: 2 * (d + 1), "broadcast": lambda d: 2, "reduce": lambda d: 2, "scatter": lambda d: 2,
    "gather": lambda d: 2,
}
PER_LINK_BLOCKS = {  # over the steps, the most blocks on one link: the beta coefficient in blocks
    "allgather": lambda d: d + 1, "reduce-scatter": lambda d: d + 1, "allreduce": lambda d: 2 * (d + 1),
    "alltoall": lambda d: 2 * d + 1,  # (2d + 1) M / (d (d + 1)) with M the n blocks of a rank
}


@pytest.mark.parametrize("d", range(2, 17))
def test_kautz_m_takes_d_plus_1_steps(d):
    """Every collective Kautz-M generates, for every d = 2..16: verified by the replay, in Table 3.2's
    steps, d + 1 for allgather, reduce-scatter and alltoall (2 (d + 1) for allreduce, their sum),
    which is the least a contention-free MULTITREE can take: a rank receives n - 1 blocks over its d
    in-links, one per link and step. Recomputed here on K(d,2) built from its definition: every
    transfer follows a link, no link carries two messages in a step, and the busiest link's blocks
    summed over the steps give Table 3.2's beta coefficients."""
    words = kautz_words(d)
    n = len(words)
    assert n == d * (d + 1)
    first, last = words[:, 0], words[:, 1]
    in_degree = np.array([(last == first[v]).sum() for v in range(n)])
    assert (in_degree == d).all() and -(-(n - 1) // d) == d + 1  # the step bound
    for collective, steps in KAUTZ_M_STEPS.items():
        blocks = {"alltoall": n * n, "broadcast": 1, "reduce": 1}.get(collective, n)
        schedule = ALGORITHMS["kautz-m"].generate(Request(collective, n, blocks, 8, f"kautz:{d}", 0))
        assert verify(schedule).ok, collective
        assert schedule.num_steps == steps(d), collective
        step = np.repeat(np.arange(schedule.num_steps), np.diff(schedule.step_ptr))
        src, dst = schedule.src, schedule.dst
        assert (last[src] == first[dst]).all(), collective  # xy -> yz: every transfer is one link
        _, messages = np.unique((step * n + src) * n + dst, return_counts=True)
        assert messages.max() == 1, collective  # contention-free: one message per link and step
        if collective in PER_LINK_BLOCKS:
            counts = np.diff(schedule.block_ptr)
            busiest = [counts[step == s].max() for s in range(schedule.num_steps)]
            assert sum(busiest) == PER_LINK_BLOCKS[collective](d), collective
            if collective != "alltoall":
                assert set(counts.tolist()) == {1}, collective  # one block per link and step
        if collective in ("allgather", "alltoall"):
            for v in range(n):  # every rank hears from all of its in-links
                assert set(src[dst == v].tolist()) == set(np.flatnonzero(last == first[v]).tolist())


def test_greedy_trees_take_d_plus_2_at_d_10():
    """Why Kautz-M does not use the greedy trees (multitree keeps them): on K(10,2) first fit leaves a
    tree a node short after d + 1 steps; the breadth-first trees with their second level serialized
    per link take d + 1."""
    graph = rank_graph("kautz:10")
    roots = list(range(graph.ranks))
    assert build_trees(graph.out, roots).steps == 12
    assert two_level_trees(graph.out, roots).steps == two_level_trees(graph.into, roots).steps == 11


@pytest.mark.parametrize("d,steps", [(2, 3), (3, 4), (4, 5)])
def test_multitree_steps_on_kautz(d, steps):
    graph = rank_graph(f"kautz:{d}")
    assert build_trees(graph.out, list(range(graph.ranks))).steps == steps


@pytest.mark.parametrize("spec", ["2dfc:4,4", "2dfc:8,8", "2dfc:3,5", "2dfc:6,4", "2dfc:16,16"])
def test_do_and_md_alltoall(spec):
    topology = parse_topology(spec)
    m1, m2 = grid_shape(topology)
    p, b = m1 * m2, 32 * 1024
    do, c_do = priced("do", "alltoall", spec, p * p, b)
    md, c_md = priced("md", "alltoall", spec, p * p, b)
    assert c_do.time == pytest.approx(2 * ALPHA + (m1 + m2) * b * BETA)  # (4.5)
    assert c_md.time == pytest.approx(2 * ALPHA + max(m1, m2) * b * BETA, rel=1e-3)  # (4.6), bytes split in whole bytes
    sent = np.bincount(do.src, weights=do.transfer_bytes(), minlength=p)
    assert (sent == (2 * m1 * m2 - m1 - m2) * b).all()  # (4.1) = (4.2): the least bytes a node must send


def test_model_values():
    """The digest's model values, alpha = 1 us, beta = 8e-11 s/B, b = 32 KiB."""
    b = 32 * 1024
    for spec, do_us, md_us in [("2dfc:8,8", 43.9, 23.0), ("2dfc:16,16", 85.9, 43.9)]:
        p = math.prod(grid_shape(parse_topology(spec)))
        assert round(priced("do", "alltoall", spec, p * p, b)[1].time * 1e6, 1) == do_us
        assert round(priced("md", "alltoall", spec, p * p, b)[1].time * 1e6, 1) == md_us


@pytest.mark.parametrize("m,bound", [(3, 2), (4, 3), (6, 4), (8, 5), (16, 9)])
def test_multitree_steps_on_2dfc(m, bound):
    """(4.4): at least ceil((m^2 - 1)/(2m - 2)) steps; the greedy trees (which multitree uses on odd m)
    reach it from 4x4 on (3x3 takes 3)."""
    assert math.ceil((m * m - 1) / (2 * m - 2)) == bound
    graph = rank_graph(f"2dfc:{m},{m}")
    steps = build_trees(graph.out, list(range(graph.ranks))).steps
    assert steps >= bound
    assert steps == (bound if m >= 4 else 3)


@pytest.mark.parametrize("spec", ["2dfc:4,4", "2dfc:3,5"])
def test_2dfc_allgather_and_allreduce(spec):
    topology = parse_topology(spec)
    m1, m2 = grid_shape(topology)
    p, b = m1 * m2, 4096
    _, c = priced("do", "allgather", spec, p, b)
    assert c.time == pytest.approx(2 * ALPHA + (1 + m1) * b * BETA)  # along X one block per link, then a row's m1 along Y
    _, c_md = priced("md", "allgather", spec, p, b)
    assert c_md.time <= c.time
    for name in ("do", "md"):
        schedule, _ = priced(name, "allreduce", spec, p, b)
        assert schedule.num_steps == 4


def p2p_time(name: str, d: int, peer: int, size: int) -> float:
    spec = f"kautz:{d}"
    topology = parse_topology(spec)
    p = d * (d + 1)
    algorithm = ALGORITHMS[name]
    natural = Request("p2p", p, 1, 0, spec, 0, peer=peer)
    blocks = algorithm.default_blocks(natural)
    schedule = algorithm.generate(Request("p2p", p, blocks, size // blocks, spec, 0, peer=peer))
    assert verify(schedule).ok
    return costs(map_schedule(schedule, topology), p, ALPHA, BANDWIDTH).time


@pytest.mark.parametrize("d", [3, 4, 8])
def test_multipath_point_to_point(d):
    """T_mp = 3 (alpha + M/d beta) (type 3: M/(d-1)); over all destinations, for large M, single path
    over multi-path tends to (2d^2 + d - 2) / (3(d + 1)): 1.583, 2.267, 4.963 for d = 3, 4, 8."""
    from synth.collectives.algorithms.multipath import kautz_paths

    m = d * (d - 1) * 4096
    single = multi = 0.0
    for peer in range(1, d * (d + 1)):
        paths = kautz_paths(0, peer, d)
        t = p2p_time("kautz-mp", d, peer, m)
        assert t == pytest.approx(3 * (ALPHA + m / len(paths) * BETA))
        multi += t - 3 * ALPHA
        s = p2p_time("single-path", d, peer, m)
        single += s - (len(paths[0]) - 1) * ALPHA
    assert round(single / multi, 3) == round((2 * d * d + d - 2) / (3 * (d + 1)), 3)


@pytest.mark.parametrize("m", [4, 6, 8, 16])
def test_multitree_construction_on_square_2dfc(m):
    """Pham26 ch.4's construction: (4.4)'s m/2 + 1 steps, one tree per directed link and step, and the
    corrected Table 4.2 time (m/2 + 1) alpha + (m + 1) b beta (the table's m/2 alpha + m b beta is a
    step short for even m, the digest's erratum)."""
    spec, b = f"2dfc:{m},{m}", 32 * 1024
    schedule, c = priced("multitree", "alltoall", spec, m ** 4, b)
    assert schedule.num_steps == m // 2 + 1 == math.ceil((m * m - 1) / (2 * m - 2))
    assert set(map_schedule(schedule, parse_topology(spec)).flows.tolist()) == {1}
    assert c.time == pytest.approx((m // 2 + 1) * ALPHA + (m + 1) * b * BETA)
    if m == 8:
        assert round(c.time * 1e6, 1) == 28.6  # against Table 4.2's 25.0 us, one step short
