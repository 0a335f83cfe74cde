"""Per-layer synthesis (synth.synthesis.layers): the dynamic program against every order and
choice of layer algorithms, the stage costs' additivity counted from the schedule's transfers, and
every layered point replayed (allgather, reduce-scatter, an allreduce's halves; Q ranks a node as
a layer)."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from synth.synthesis.plan import plan_synthesis
from synth.synthesis.portfolio import synthesize_parts
from synth.collectives.verify import verify
from synth.pricing.compare import REFERENCE_BYTES
from synth.synthesis.layers import LAYER_ALGORITHMS, layer_steps, pareto_program
from synth.topology import parse_topology
from tests.helpers import delivers, spreading_halves


@pytest.mark.parametrize("sizes, seed", [((2, 3, 4), 1), ((4, 4), 2), ((3, 2, 2, 2), 3), ((5, 7), 4)])
def test_the_program_finds_the_least_time_of_every_order_and_algorithm_choice(sizes, seed):
    """Stage costs drawn at random per (layer, algorithm); every order of the layers and every
    choice of algorithm per layer priced here by its definition (alpha terms add up; a stage's beta
    terms times the product of the layers before it), and the least time at sizes from tiny to
    huge equals the least over the program's Pareto front."""
    rng = random.Random(seed)
    table = {}

    def cost(stage):
        return table.setdefault((stage.layer, stage.algorithm), (rng.randint(1, 30), rng.uniform(0.1, 40.0)))

    front = pareto_program(sizes, cost)
    usable = {layer: [a for a in LAYER_ALGORITHMS if layer_steps(a, sizes[layer]) is not None]
              for layer in range(len(sizes))}
    every = []
    for order in itertools.permutations(range(len(sizes))):
        for algorithms in itertools.product(*(usable[layer] for layer in order)):
            alphas, betas, scale = 0.0, 0.0, 1
            for layer, algorithm in zip(order, algorithms):
                a, b = table[layer, algorithm]
                alphas, betas, scale = alphas + a, betas + b * scale, scale * sizes[layer]
            every.append((alphas, betas))
    for weight in (0.0, 1e-4, 1e-2, 1.0, 1e2, 1e4, 1e8):
        least = min(a + weight * b for a, b in every)
        assert math.isclose(min(c.alphas + weight * c.betas for c in front), least, rel_tol=1e-12)
    assert all(x.alphas < y.alphas and x.betas > y.betas for x, y in zip(front, front[1:]))  # a Pareto front


def test_a_layered_allgather_is_priced_as_its_stages_add_up_counted_from_its_transfers():
    """dragonfly (2,4,2), layers of 2 terminals, 4 routers, 9 groups, each by straight sends: per
    step a rank sends 1, 3 and 8 messages, and receives 1, 3 x 2 and 8 x 8 blocks (what it holds
    doubles, then quadruples); the terminal links are the busiest, 71 rounds in all."""
    plan = plan_synthesis("allgather", parse_topology("dragonfly:2,4,2"))
    (part,) = spreading_halves(synthesize_parts(plan, 10, generated=()))
    (k,) = [i for i, f in enumerate(part.front) if f.method == "layers 1 (2) by straight then 2 (4) by straight then 3 (9) by straight"]
    schedule = part.schedule(k)
    assert verify(schedule).ok and delivers(schedule)
    step, blocks = schedule.transfer_step(), np.diff(schedule.block_ptr)
    sent = [np.bincount(schedule.src[step == s], minlength=72).max() for s in range(3)]
    received = [np.bincount(schedule.dst[step == s], weights=blocks[step == s], minlength=72).max() for s in range(3)]
    assert sent == [1, 3, 8] and received == [1, 6, 64]
    mapped = part.priced[k]
    assert mapped.port_messages.tolist() == [1, 3, 8]
    assert (mapped.channel_bytes / REFERENCE_BYTES).tolist() == [1, 6, 64]
    assert part.front[k].rounds == 71 and part.front[k].status == "optimal"


@pytest.mark.parametrize("collective, spec, q", [("allgather", "torus:3,4", 2), ("reduce-scatter", "torus:3,4", 2),
                                                 ("reduce-scatter", "dragonfly:2,4,2", 1), ("allreduce", "hyperx:2,3", 1)])
def test_every_layered_point_delivers_its_collective(collective, spec, q):
    plan = plan_synthesis(collective, parse_topology(spec), ranks_per_node=q, time_limit=5)
    parts = synthesize_parts(plan, 5, methods=("per-layer",))  # its points alone: none pruned by another method's
    layered = [(part, k) for part in parts for k, f in enumerate(part.front) if f.method.startswith("layers")]
    assert layered
    for part, k in layered:
        schedule = part.schedule(k)
        assert verify(schedule).ok and delivers(schedule), part.front[k].method
        assert part.front[k].steps == schedule.num_steps


# --- chunk splits between layer orders and pipelined stages (synth.synthesis.layers.Concurrent) ---

@pytest.mark.parametrize("spec, q", [("torus:3,4", 2), ("torus:2,3", 4), ("hyperx:2,2", 3), ("hyperx:2,3", 1),
                                     ("dragonfly:2,4,2", 1)])
def test_every_split_and_pipeline_delivers_its_allgather_and_reduce_scatter(spec, q):
    """Every rotation (of every leading run of stages, one way and both ways round) and every
    pipeline of every sequential point, built and run forward (allgather) and backwards
    (reduce-scatter), replayed independently; a pipeline of k pieces takes the stages' steps plus
    (k - 1) times the longest stage's."""
    from synth.synthesis.transfers import transfer_graph
    from synth.synthesis.exact import spread_schedule
    from synth.synthesis.layers import Leaders, layer_sizes, pipelined, rotated, uniform

    topology = parse_topology(spec)
    sizes = layer_sizes(topology, q, topology.network().num_terminals * q)
    graph = transfer_graph(topology, q, "all", None)
    p = graph.ranks
    keys = graph.dst.astype(np.int64) * p + graph.src
    combos = pareto_program(sizes, lambda stage: (len(stage.steps), 1.0)) + uniform(sizes, memory_layer=q > 1)
    splits = [s for c in combos for s in [rotated(c, sizes, lead, both) for lead in range(2, len(sizes) + 1)
                                          for both in (False, True)] + [pipelined(c, k) for k in (2, 3)] if s]
    assert any(s.how.startswith("pipelined") for s in splits) and any("both ways" in s.how for s in splits)
    if q > 1:  # the node's ranks through a leader, around every sequential and rotated order of the network layers
        network = pareto_program(sizes[1:], lambda stage: (len(stage.steps), 1.0)) + uniform(sizes[1:], False)
        splits += [Leaders(c, q, gather) for c in network for gather in ("direct", "binomial")]
        splits += [Leaders(r, q) for c in network for both in (False, True) if (r := rotated(c, sizes[1:], 2, both))]
    for split in splits:
        step, sender, receiver, block = split.deliveries(sizes, 2)
        for collective, reverse in (("allgather", False), ("reduce-scatter", True)):
            a, b = (receiver, sender) if reverse else (sender, receiver)
            made = (step, np.searchsorted(keys, b * p + a), block, receiver)
            schedule = spread_schedule(collective, graph, spec, p * 2 * split.shares, 8, made, split.steps, reverse,
                                       None)
            assert verify(schedule).ok and delivers(schedule), (split.label(sizes), collective)
        if getattr(split, "how", "").startswith("pipelined"):
            lengths = [len(s.steps) for s in split.base.stages]
            assert split.steps == sum(lengths) + (split.shares - 1) * max(lengths)


def test_splitting_blocks_between_rotated_layer_orders_reaches_the_cut_bound_with_q_ranks_a_node():
    """torus 4x4 with 4 ranks a node: one layer after the other, a node's links of one dimension
    idle while the other's work, the busiest link carries 4 x the cut bound's 60/4 blocks (measured
    before the splits: 300% above the bound at every size). Half of each block through x then y and
    half through y then x, each way round the ring, among the nodes' leaders, the node's own copies
    through memory: 15 rounds, the cut bound, 0.1% above the time bound at 256 MiB. Counted here
    from the transfers: every block enters every node once, over the network."""
    plan = plan_synthesis("allgather", parse_topology("torus:4,4"), ranks_per_node=4, method="trees")
    (part,) = spreading_halves(synthesize_parts(plan, 5, generated=()))
    k, _ = part.best(1 << 28, 1e-6, 100e9)
    point = part.front[k]
    assert "by ring, 1/4 of each block in each rotation of the order, both ways round" in point.method
    assert point.method.startswith("layers gathered to a leader a node")
    assert point.rounds == 15 and point.status == "optimal"
    schedule = part.schedule(k)
    assert verify(schedule).ok and delivers(schedule)
    node = lambda rank: rank // 4  # noqa: E731
    entered = {n: [] for n in range(16)}
    for t in range(len(schedule.src)):
        if node(schedule.src[t]) != node(schedule.dst[t]):
            entered[node(int(schedule.dst[t]))] += schedule.block_ids[schedule.block_ptr[t]:schedule.block_ptr[t + 1]].tolist()
    shares = part.blocks_of(k) // 64
    for n, blocks in entered.items():  # the 60 blocks of the other nodes' ranks, each share once
        assert sorted(blocks) == sorted(b for b in range(64 * shares) if node(b % 64) != n)
    from synth.synthesis.portfolio import bands
    (band,) = bands(plan, [part], [1 << 28], 1e-6, 100e9)
    assert band.schedule.synthesis["sizes"][0]["gap"] < 0.01


def test_an_allreduce_joins_halves_split_in_different_shares():
    """The reduce-scatter of one split and the allgather of another (or none): each block of a half
    split further to their least common multiple, the allreduce verified and replayed."""
    from synth.synthesis.portfolio import _joined

    plan = plan_synthesis("allreduce", parse_topology("torus:4,4"), ranks_per_node=4, method="trees")
    parts = synthesize_parts(plan, 5, methods=("per-layer",))
    rs, ag = parts
    shares = lambda part: sorted({part.blocks_of(k) for k in range(len(part.front))})  # noqa: E731
    assert len(shares(rs)) > 1 and len(shares(ag)) > 1
    for i in range(len(rs.front)):
        for j in range(len(ag.front)):
            if rs.blocks_of(i) != ag.blocks_of(j):
                schedule = _joined(plan, parts, (i, j), 1 << 20)
                assert schedule.blocks == math.lcm(rs.blocks_of(i), ag.blocks_of(j))
                assert verify(schedule).ok and delivers(schedule)
                return
    pytest.fail("no two points with different shares")


def test_a_leader_a_node_starts_one_message_a_node_port_per_step():
    """dragonfly (2,4,2) with 4 ranks a node (a node's one link its port): every rank sending over
    the network, a node's port starts 4 messages a step (30 alpha terms at 32 B, 400% above the
    bound before the leaders). Gathered to a leader (1 step, each rank one copy through its own
    memory port), Bruck among the leaders of 9 groups (4 steps), of 4 routers (2), straight among
    2 terminals (1), a binomial broadcast in the node (2): 10, counted here from the transfers."""
    plan = plan_synthesis("allgather", parse_topology("dragonfly:2,4,2"), ranks_per_node=4)
    (part,) = spreading_halves(synthesize_parts(plan, 5, generated=()))
    k, _ = part.best(32, 1e-6, 100e9)
    assert part.front[k].method.startswith("layers gathered to a leader a node, then 4 (9) by bruck")
    schedule = part.schedule(k)
    assert verify(schedule).ok and delivers(schedule)
    step = schedule.transfer_step()
    starts = 0
    for s in range(schedule.num_steps):
        src, dst = schedule.src[step == s], schedule.dst[step == s]
        across = src // 4 != dst // 4
        per_node = np.bincount(src[across] // 4, minlength=72).max(initial=0)
        per_rank = np.bincount(src[~across], minlength=288).max(initial=0)
        starts += max(per_node, per_rank)
    assert starts == 10 == part.priced[k].port_messages.sum()
