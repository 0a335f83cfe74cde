"""Swing ([DeSensi24]) with the digest's numbers, and schedules priced on a network.

- Peers, eq. (2), and their multi-dimensional, multi-port forms: the digest's tables.
- Bandwidth-optimal send sets (p = 16) and the per-step block counts of non-power-of-two p.
- Odd p: rank p - 1 meets {0, 1, 2}, {3, 4}, {5} at p = 7 (the paper's Fig. 3).
- Congestion: flows per directed link on a ring of 16, counted here on the ring itself (shorter
  way round): recursive doubling 1, 2, 4, 4; Swing plain 1, 1, 2, 3; plain and mirrored 1, 1, 3, 5.
- Xi: the closed form's finite values and limits; the Xi measured on the mapped schedule (times Psi,
  which the closed form takes as 1) equals them; sum of distances 8x8 10 against recursive
  doubling's 14.
- The alpha-beta cost of a mapped schedule equals a per-step recomputation written here.
"""

from __future__ import annotations

from collections import Counter

import math
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest

from synth.pricing.deficiency import rectangular_xi, swing_b_xi, swing_b_xi_limit, table2
from synth.pricing.schedule_cost import costs, map_schedule
from synth.collectives.algorithms import ALGORITHMS, Request, grid_shape
from synth.collectives.algorithms.swing import peers, rho, send_sets
from synth.collectives.schedule import REDUCE
from synth.topology import parse_topology



def swing_b(spec: str):
    topology = parse_topology(spec)
    p, dims = topology.network().num_terminals, grid_shape(topology)
    request = Request("allreduce", p, 2 * max(1, len(dims)) * p, 1024, spec, 0, dims)
    return topology, ALGORITHMS["swing-b"].generate(request)


def test_rho():
    assert [rho(s) for s in range(10)] == [1, -1, 3, -5, 11, -21, 43, -85, 171, -341]


def test_peers_of_the_digest():
    ring = peers((16,), 0, False)
    assert ring[:, 0].tolist() == [1, 15, 3, 11] and ring[:, 1].tolist() == [0, 2, 14, 6]
    assert ring[:, 3].tolist() == [2, 4, 0, 8] and ring[:, 8].tolist() == [9, 7, 11, 3]
    assert peers((4, 4), 0, False)[:, 0].tolist() == [1, 4, 3, 12]
    assert peers((4, 4), 1, False)[:, 0].tolist() == [4, 1, 12, 3]
    assert peers((4, 4), 0, True)[:, 0].tolist() == [3, 12, 1, 4]
    assert peers((4, 4), 1, True)[:, 0].tolist() == [12, 3, 4, 1]
    assert peers((8, 8), 0, False)[:, 0].tolist() == [1, 8, 7, 56, 3, 24]
    assert peers((8, 8), 0, True)[:, 0].tolist() == [7, 56, 1, 8, 5, 40]
    assert [peers((4, 2), c, m)[:, 0].tolist() for m in (False, True) for c in (0, 1)] == \
        [[1, 4, 3], [4, 1, 3], [3, 4, 1], [4, 3, 1]]


def test_every_step_pairs_the_ranks():
    for dims in [(16,), (6,), (10,), (4, 4), (8, 4), (6, 4)]:
        for c in range(len(dims)):
            for table in (peers(dims, c, False), peers(dims, c, True)):
                for row in table:
                    assert (row[row] == np.arange(len(row))).all()  # a perfect matching, every step


def test_send_sets_of_p16():
    sets = [np.flatnonzero(s[0]).tolist() for s in send_sets(peers((16,), 0, False))]
    assert sets == [[1, 2, 5, 6, 9, 10, 13, 14], [4, 7, 12, 15], [3, 8], [11]]
    _, schedule = swing_b("torus:16")
    steps = schedule.transfer_step()
    # the allgather (steps 4..7) of node 0, plain collective (part 0: blocks 0..15)
    ag = [(int(schedule.dst[t]), sorted(int(b) for b in schedule.block_ids[schedule.block_ptr[t]:schedule.block_ptr[t + 1]]))
          for t in np.flatnonzero((schedule.src == 0) & (steps >= 4))
          if schedule.block_ids[schedule.block_ptr[t]] < 16]
    assert ag == [(11, [0]), (3, [0, 11]), (15, [0, 3, 8, 11]), (1, [0, 3, 4, 7, 8, 11, 12, 15])]


@pytest.mark.parametrize("p,counts", [(6, [2, 2, 1]), (10, [2, 4, 2, 1]), (12, [6, 2, 2, 1]), (24, [12, 6, 2, 2, 1]),
                                      (48, [24, 12, 6, 2, 2, 1])])
def test_non_power_of_two_block_counts(p, counts):
    sets = send_sets(peers((p,), 0, False))
    assert [int(s[0].sum()) for s in sets] == counts
    assert (sum(s.sum(axis=1) for s in sets) == p - 1).all()  # every rank sends p - 1 blocks


def test_odd_p_meets_the_last_rank_directly():
    _, schedule = swing_b("torus:7")
    steps = schedule.transfer_step()
    groups = [sorted(set(schedule.dst[(schedule.src == 6) & (steps == s)].tolist())) for s in range(3)]
    assert groups == [[0, 1, 2], [3, 4], [5]]


def ring_flows(p: int, pairs_per_step) -> list[int]:
    """Most transfers on one directed link of a ring of p nodes, each the shorter way round (a tie,
    distance p/2, forward from even nodes and backward from odd ones: minimal adaptive routing
    spreads them, which the digest's 4 for recursive doubling's last step assumes)."""
    out = []
    for pairs in pairs_per_step:
        load = {}
        for r, q in pairs:
            forward = (q - r) % p
            ahead = forward < p - forward or (forward == p - forward and r % 2 == 0)
            step, length = (1, forward) if ahead else (-1, p - forward)
            for k in range(length):
                link = ((r + step * k) % p, step)
                load[link] = load.get(link, 0) + 1
        out.append(max(load.values()))
    return out


def test_flows_per_link_on_a_ring_of_16():
    p = 16
    plain, mirrored = peers((p,), 0, False), peers((p,), 0, True)
    rd = [[(r, r ^ (1 << s)) for r in range(p)] for s in range(4)]
    assert ring_flows(p, rd) == [1, 2, 4, 4]
    assert ring_flows(p, [[(r, int(plain[s, r])) for r in range(p)] for s in range(4)]) == [1, 1, 2, 3]
    both = [[(r, int(t[s, r])) for t in (plain, mirrored) for r in range(p)] for s in range(4)]
    assert ring_flows(p, both) == [1, 1, 3, 5]
    topology, schedule = swing_b("torus:16")
    assert map_schedule(schedule, topology).flows.tolist()[:4] == [1, 1, 3, 5]


@pytest.mark.parametrize("dims,xi", [((8, 8), 1.0781), ((16, 16), 1.1367), ((32, 32), 1.1689), ((64, 64), 1.1843),
                                     ((128, 128), 1.1922), ((8, 8, 8), 1.0254), ((8, 8, 8, 8), 1.0071)])
def test_closed_form_xi(dims, xi):
    assert round(swing_b_xi(dims), 4) == xi


def test_xi_limits_and_rectangular_tori():
    assert [swing_b_xi_limit(d) for d in (2, 3, 4)] == [Fraction(6, 5), Fraction(28, 27), Fraction(120, 119)]
    assert [round(rectangular_xi(d), 4) for d in [(64, 16), (128, 8), (256, 4)]] == [0.0210, 0.0825, 0.2534]
    assert table2("rd-b", 64, 2)[2] == 3 and table2("rd-b", 512, 3)[2] == 3.5 and table2("rd-b", 4096, 4)[2] == 3.75


@pytest.mark.parametrize("spec,xi", [("torus:8,8", 1.0781), ("torus:16,16", 1.1367), ("torus:32,32", 1.1689),
                                     ("torus:8,8,8", 1.0254)])
def test_measured_xi_is_the_closed_form(spec, xi):
    """Psi x Xi measured on minimal routes equals DeSensi24's Xi (which takes Psi = 1: the measured Psi is
    (p - 1)/p, the last step moving 1/p of the vector)."""
    topology, schedule = swing_b(spec)
    c = costs(map_schedule(schedule, topology), schedule.ranks)
    assert round(c.bandwidth_deficiency * c.congestion_deficiency, 4) == xi
    assert c.bandwidth_deficiency == pytest.approx(1 - 1 / schedule.ranks)
    assert c.latency_deficiency == 2.0  # 2 log2 p steps


def test_sum_of_distances():
    """8x8: Swing's reduce-scatter steps span 10 hops in all, recursive doubling's 14; 8^3: 15 and 21."""
    for spec, swing, rd in [("torus:8,8", 10, 14), ("torus:8,8,8", 15, 21)]:
        topology, schedule = swing_b(spec)
        mapped = map_schedule(schedule, topology)
        assert mapped.hops[: schedule.num_steps // 2].sum() == swing
        p = schedule.ranks
        doubling = ALGORITHMS["rd-l"].generate(Request("allreduce", p, 4, 8, spec, 0, grid_shape(topology)))
        assert map_schedule(doubling, topology).hops.sum() == rd


def test_alpha_beta_equals_a_per_step_recomputation():
    """Per step: alpha x the most messages leaving on one router port + beta x the most bytes over
    bandwidth on one channel, the paths found here with networkx (shortest paths; on a torus every
    minimal path has the same length, so the loads are compared through synth's paths but summed
    here). A torus node is its own router: a message starts on its path's first router link."""
    topology, schedule = swing_b("torus:4,4")
    network = topology.network()
    mapped = map_schedule(schedule, topology)
    c = costs(mapped, schedule.ranks, alpha=2e-6, bandwidth_bits=50e9)
    from synth.routing.minimal import minimal

    paths = minimal(topology, schedule.src, schedule.dst).as_lists()
    graph = nx.DiGraph([(int(a), int(b)) for a, b in zip(network.channel_src, network.channel_dst)])
    total = 0.0
    for step in range(schedule.num_steps):
        load = np.zeros(network.num_channels)
        starts = Counter()
        for t in range(schedule.step_ptr[step], schedule.step_ptr[step + 1]):
            size = schedule.block_bytes[schedule.block_ids[schedule.block_ptr[t]:schedule.block_ptr[t + 1]]].sum()
            hops = len(paths[t])
            assert hops == nx.shortest_path_length(graph, int(schedule.src[t]), int(schedule.dst[t]))
            starts[paths[t][1]] += 1
            for channel in paths[t]:
                load[channel] += size
        assert max(starts.values()) == 1  # Swing's multi-port steps: one message per port
        total += 2e-6 * max(starts.values()) + 8 / 50e9 * (load / network.channel_bandwidth).max()
    assert c.time == pytest.approx(total, rel=1e-12)
    # The bound of any allreduce under the same model, not DeSensi24's T_opt = 4 alpha + beta n/2 (the
    # optimum of schedules sending one message per port and step, below which Kautz-C's 4 alpha on
    # 20 ranks would fall): a node starts 4 messages per alpha, so 16 ranks need ceil(log_5 16) = 2
    # alphas, and the 2(p - 1) n of one-way gossip leaves through 16 nodes' links of bandwidth 4.
    n = schedule.block_bytes.sum()
    assert c.lower_bound == pytest.approx(2e-6 * 2 + 8 / 50e9 * 2 * 15 * n / (16 * 4))


def test_latency_optimal_swing_reduces_whole_parts():
    topology = parse_topology("torus:4,4")
    schedule = ALGORITHMS["swing-l"].generate(Request("allreduce", 16, 4, 8, "torus:4,4", 0, (4, 4)))
    assert schedule.num_steps == 4 and (schedule.op == REDUCE).all()
    assert set(np.diff(schedule.block_ptr).tolist()) == {1}  # 4 parts of one block each, a part per transfer
    assert math.isclose(costs(map_schedule(schedule, topology), 16).latency_deficiency, 1.0)


def torus_graph(c: int, r: int) -> nx.Graph:
    """The r x c torus built here from its definition: rank x + c y, neighbours +-1 in x and in y."""
    graph = nx.Graph()
    for y in range(r):
        for x in range(c):
            graph.add_edge(x + c * y, (x + 1) % c + c * y)
            graph.add_edge(x + c * y, x + c * ((y + 1) % r))
    return graph


@pytest.mark.parametrize("c", [3, 4, 5, 6, 7, 8])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_edge_disjoint_hamiltonian_cycles(c, k):
    """They exist (by this construction) exactly where DeSensi24 says: r = c k and gcd(r, c - 1) = 1."""
    from synth.collectives.algorithms.hamiltonian import hamiltonian_cycles

    r = c * k
    cycles = hamiltonian_cycles((c, r))
    assert (cycles is not None) == (math.gcd(r, c - 1) == 1)
    if cycles is None:
        return
    graph = torus_graph(c, r)
    edges = []
    for cycle in cycles:
        assert sorted(cycle.tolist()) == list(range(r * c))
        pairs = {frozenset(e) for e in zip(cycle.tolist(), np.roll(cycle, -1).tolist())}
        assert all(graph.has_edge(*tuple(e)) for e in pairs) and len(pairs) == r * c
        edges.append(pairs)
    assert not edges[0] & edges[1]


@pytest.mark.parametrize("spec", ["torus:8,8", "torus:6,6", "torus:4,8"])
def test_ring_on_hamiltonian_cycles_is_001s_ring(spec):
    topology = parse_topology(spec)
    p = topology.network().num_terminals
    schedule = ALGORITHMS["ring"].generate(Request("allreduce", p, 4 * p, 1024, spec, 0, grid_shape(topology)))
    c = costs(map_schedule(schedule, topology), p)
    assert schedule.num_steps == 2 * (p - 1)
    assert c.bandwidth_deficiency == pytest.approx((p - 1) / p) and c.congestion_deficiency == pytest.approx(1.0)
