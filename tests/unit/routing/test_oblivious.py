"""Oblivious routers: their definitions, determinism, and validity under the independent checker."""

import numpy as np
import pytest

from synth.routing import oblivious

from synth.topology import parse_topology
from synth.traffic.patterns import parse_pattern

OBLIVIOUS_ROUTERS = {spec.name: spec.build(None) for spec in oblivious.ROUTER}  # the XGFT's fixed routers

SPECS = ["xgft:3:4,3,2:1,4,3", "xgft:3:8,4,2:1,8,2", "xgft:2:2,2:3,3", "xgft:3:3,2,2:2,3,2"]


def route_all(spec, router, pattern="a2a-opt", seed=0):
    xgft = parse_topology(spec)
    network = xgft.network()
    workload = parse_pattern(pattern, xgft.num_leaves, xgft.hierarchy())
    phases = np.arange(workload.num_phases)
    idx, src, dst, _ = workload.batch(phases)
    choice = OBLIVIOUS_ROUTERS[router](xgft, src, dst, phase=phases[idx], occurrence=np.zeros_like(src), seed=seed)
    return xgft, network, idx, src, dst, choice


def up_ports_taken(xgft, network, src, dst, choice):
    """For every flow, the out-port of each upward hop, read from the network's channel arrays."""
    rows = []
    for path in xgft.path_nodes(src, dst, choice):
        nodes = np.asarray(path)
        channels = network.find_channels(nodes[:-1], nodes[1:])
        assert (channels >= 0).all()
        up = network.channel_is_up()[channels]
        rows.append(network.channel_src_port[channels[up]].tolist())
    return rows


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("router, rank", [("dmodk", "dst"), ("smodk", "src")])
def test_mod_k_routers_follow_their_definition(spec, router, rank):
    """At layer l take up link floor(rank / (W_1*...*W_l)) mod W_{l+1} (port M_l + 1 + link)."""
    xgft, network, _, src, dst, choice = route_all(spec, router)
    ports = up_ports_taken(xgft, network, src, dst, choice)
    for s, d, taken in zip(src.tolist(), dst.tolist(), ports):
        key = d if rank == "dst" else s
        expected = []
        for layer in range(len(taken)):
            down_ports = xgft.m[layer - 1] if layer else 0
            expected.append(down_ports + 1 + (key // xgft.wt_span[layer]) % xgft.w[layer])
        assert taken == expected


@pytest.mark.parametrize("router", sorted(OBLIVIOUS_ROUTERS))
def test_routers_are_deterministic_and_in_range(router):
    first = route_all("xgft:3:4,3,2:1,4,3", router, seed=5)
    again = route_all("xgft:3:4,3,2:1,4,3", router, seed=5)
    assert np.array_equal(first[-1], again[-1])
    xgft, _, _, src, dst, choice = first
    paths = xgft.path_count(xgft.nca_layer(src, dst))
    assert ((choice >= 0) & (choice < paths)).all()


def test_static_random_keeps_one_path_per_pair_and_depends_on_seed():
    xgft, _, _, src, dst, choice = route_all("xgft:3:4,3,2:1,4,3", "random", pattern="a2a-lin", seed=1)
    n = xgft.num_leaves
    pair_choice = {}
    for s, d, c in zip(src.tolist(), dst.tolist(), choice.tolist()):
        assert pair_choice.setdefault((s, d), c) == c
    # Same pairs under another exchange order: the same paths.
    _, _, _, src2, dst2, choice2 = route_all("xgft:3:4,3,2:1,4,3", "random", pattern="a2a-opt", seed=1)
    assert all(pair_choice[(s, d)] == c for s, d, c in zip(src2.tolist(), dst2.tolist(), choice2.tolist()))
    other = route_all("xgft:3:4,3,2:1,4,3", "random", pattern="a2a-lin", seed=2)[-1]
    assert not np.array_equal(choice, other)
    # Spread: every one of the 12 top paths is used by some cross-root pair.
    top = xgft.nca_layer(src, dst) == xgft.height
    assert len(set(choice[top].tolist())) == xgft.wt_span[xgft.height]
    assert n == 24


def test_dynamic_random_varies_per_message():
    xgft = parse_topology("xgft:3:4,3,2:1,4,3")
    src, dst = np.zeros(200, dtype=np.int64), np.full(200, 23)
    route = OBLIVIOUS_ROUTERS["random-msg"]
    per_phase = route(xgft, src, dst, phase=np.arange(200), occurrence=np.zeros(200), seed=0)
    repeats = route(xgft, src, dst, phase=np.zeros(200), occurrence=np.arange(200), seed=0)
    assert len(set(per_phase.tolist())) == 12 and len(set(repeats.tolist())) == 12
    assert np.array_equal(per_phase, route(xgft, src, dst, phase=np.arange(200), occurrence=np.zeros(200), seed=0))
    assert not np.array_equal(per_phase, route(xgft, src, dst, phase=np.arange(200), occurrence=np.zeros(200), seed=1))
