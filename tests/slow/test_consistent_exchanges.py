"""Destination-consistent routes of whole OPT exchanges that take longer than the default suite allows."""

import numpy as np

from conftest import TABLE_3_1, xgft_and_network
from synth.route.consistent import route_consistent
from synth.route.layered import LayeredOptions
from synth.route.oblivious import dmodk
from synth.tables.forwarding import build_tables, route_hops
from synth.traffic.patterns import parse_pattern
from test_consistent import per_phase_contention


def test_128_leaf_opt_exchange_consistent_routes_quarter_dmodk():
    """128 leaves, all 128 phases, one LID per terminal: at most 2 in every phase where d-mod-k
    (and OpenSM's minhop, updn, ftree) need 8; the bound is 1 (measured: 2 in every phase)."""
    xgft, network = xgft_and_network(TABLE_3_1[128])
    workload = parse_pattern("a2a-opt", 128, xgft.hierarchy())
    phase, src, dst, _ = workload.batch(np.arange(128))
    choice, _ = route_consistent(xgft, src, dst, phase, LayeredOptions(time_limit=60))
    assert build_tables(xgft, network, dst, route_hops(network, xgft.path_nodes(src, dst, choice))).lids.lmc == 0
    assert max(per_phase_contention(xgft, src, dst, phase, choice)) <= 2
    assert max(per_phase_contention(xgft, src, dst, phase, dmodk(xgft, src, dst, phase, None))) == 8
