"""The layered router (003_fd372c8942ac4293.txt ch.3): conditions, optimality, backends, CLI."""

import json
import itertools

import numpy as np
import pytest

from conftest import TABLE_2_1, TABLE_3_1
from synth.cost.bounds import lower_bound, stage_lower_bounds
from synth.cost.evaluate import stage_maxima
from synth.cost.loads import channel_loads
from synth.route.layered import LayeredOptions, conditions_hold, route_phase
from synth.route.monolithic import route_phase_monolithic
from synth.topology import parse_topology
from synth.traffic.patterns import parse_pattern


def contention(xgft, src, dst, choice):
    return int(channel_loads(xgft.hop_matrix(src, dst, choice), xgft.num_channels).max(initial=0))


def stage_contention(xgft, src, dst, choice):
    network = xgft.network()
    loads = channel_loads(xgft.hop_matrix(src, dst, choice), xgft.num_channels)
    return stage_maxima(network, loads[None, :])[0].tolist()


def figure_3_2():
    """XGFT(2; 2,2; 3,3); every leaf sends 4 messages across the root, 2 to each leaf there."""
    src = np.repeat(np.arange(4), 4)
    dst = np.array([2, 2, 3, 3] * 2 + [0, 0, 1, 1] * 2)
    return parse_topology("xgft:2:2,2:3,3"), src, dst


def test_figure_3_2_layered_reaches_one_on_the_layer_1_links():
    """Fig. 3.2b: the layer-1 up links (stage 2) carry the workload at contention 1. (Each leaf
    injects 4 messages into W_1 = 3 links, so stage 1 needs 2, as the seed's figure shows; the
    network-wide maximum is 2 and equals the network-wide lower bound.)"""
    xgft, src, dst = figure_3_2()
    choice, report = route_phase(xgft, src, dst, LayeredOptions())
    assert stage_contention(xgft, src, dst, choice) == [2, 1]
    assert stage_lower_bounds(xgft, src, dst).tolist() == [2, 1]
    assert contention(xgft, src, dst, choice) == lower_bound(xgft, src, dst) == 2


def test_figure_3_2_local_optimum_is_not_part_of_a_global_one():
    """Fig. 3.2a: 2 messages on link 0 and 1 on each other link at every leaf meets the lambda = 0
    conditions but not the lambda = 1 ones, and completed optimally above it the layer-1 links
    still need contention 2; fig. 3.2b's assignment (leaf i puts 2 on link i mod 3) meets all."""
    xgft, src, dst = figure_3_2()
    delta, wt = xgft.nca_layer(src, dst), np.zeros(16, dtype=np.int64)
    # w_1 per message, leaf by leaf: links 0, 0, 1, 2 at every leaf, arranged so that every
    # destination also receives 2, 1, 1 (the lambda = 0 conditions bind both sides).
    local = np.tile([0, 1, 0, 2, 0, 2, 0, 1], 2)
    assert conditions_hold(xgft, 0, src, dst, delta, wt, local, max_lambda=0)
    assert not conditions_hold(xgft, 0, src, dst, delta, wt, local)
    # Any completion: the layer-1 node (subtree 0, w_1 = 0) holds 4 messages for W_2 = 3 links.
    per_node = np.bincount((src // 2) * 3 + local, minlength=6)
    assert per_node.max() == 4 and -(-per_node.max() // 3) == 2
    choice, _ = route_phase(xgft, src, dst, LayeredOptions(), start_layer=1, start_choice=local)
    assert stage_contention(xgft, src, dst, choice) == [2, 2]

    seed_optimal = np.concatenate([[i % 3, i % 3, (i + 1) % 3, (i + 2) % 3] for i in range(4)])
    assert conditions_hold(xgft, 0, src, dst, delta, wt, seed_optimal)
    choice, _ = route_phase(xgft, src, dst, LayeredOptions(), start_layer=1, start_choice=seed_optimal)
    assert stage_contention(xgft, src, dst, choice) == [2, 1]


def opt_phases_reach_the_bound(spec, phases, **options):
    xgft = parse_topology(spec)
    workload = parse_pattern("a2a-opt", xgft.num_leaves, xgft.hierarchy())
    for p in phases:
        flows = workload.flows(int(p))
        choice, report = route_phase(xgft, flows.src, flows.dst, LayeredOptions(**options))
        assert contention(xgft, flows.src, flows.dst, choice) == lower_bound(xgft, flows.src, flows.dst) == 1, p
        assert report.timeouts == 0


@pytest.mark.parametrize("n", [16, 32, 64])
def test_every_opt_phase_reaches_the_bound_small(n):
    xgft = parse_topology(TABLE_3_1[n])
    opt_phases_reach_the_bound(TABLE_3_1[n], range(xgft.num_leaves))


@pytest.mark.parametrize("n", [128, 256, 512])
def test_opt_phases_reach_the_bound_sample(n):
    """A spread of phases here; every phase of these sizes runs in tests/slow (make test-slow)."""
    opt_phases_reach_the_bound(TABLE_3_1[n], np.linspace(1, n - 1, 6).astype(int))


@pytest.mark.parametrize("constraints", ["strong", "relaxed", "strong+eliminated", "relaxed+eliminated"])
@pytest.mark.parametrize("construction", ["halving", "ilp"])
def test_every_condition_variant_reaches_the_bound(constraints, construction):
    opt_phases_reach_the_bound(TABLE_3_1[64], [1, 9, 33, 63], constraints=constraints, construction=construction)


def test_balance_gives_every_link_floor_or_ceil():
    xgft = parse_topology(TABLE_3_1[64])
    flows = parse_pattern("a2a-opt", 64, xgft.hierarchy()).flows(7)
    choice, _ = route_phase(xgft, flows.src, flows.dst, LayeredOptions(balance=True))
    delta = xgft.nca_layer(flows.src, flows.dst)
    wt = np.zeros_like(choice)
    for layer in range(xgft.height):
        w_next = (choice // xgft.wt_span[layer]) % xgft.w[layer]
        assert conditions_hold(xgft, layer, flows.src, flows.dst, delta, choice % xgft.wt_span[layer], w_next, balance=True)
    assert contention(xgft, flows.src, flows.dst, choice) == 1


@pytest.mark.parametrize("n", [16, 32, 64, 128, 256])
def test_permutations_reach_the_proven_optimum(n):
    """Shift, bit complement and 20 seeded random permutations on the Table 2.1 XGFTs: the layered
    result equals the lower bound, or the monolithic model's proven optimum where it is above."""
    xgft = parse_topology(TABLE_2_1[n])
    patterns = ["shift:1", f"shift:{n // 2}", f"shift:{n // 4 + 1}", "bitcomp"] + [f"randperm:{s}" for s in range(20)]
    for pattern in patterns:
        flows = parse_pattern(pattern, n, xgft.hierarchy()).flows(0)
        choice, _ = route_phase(xgft, flows.src, flows.dst, LayeredOptions())
        achieved, bound = contention(xgft, flows.src, flows.dst, choice), lower_bound(xgft, flows.src, flows.dst)
        if achieved > bound:
            best, report = route_phase_monolithic(xgft, flows.src, flows.dst, LayeredOptions())
            assert report.proven_by == "cpsat"
            assert achieved == contention(xgft, flows.src, flows.dst, best), pattern
        assert achieved <= bound + 1, pattern
