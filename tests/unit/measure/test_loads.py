"""Channel loads: the batched, parallel computations equal a plain count over the paths."""

from collections import Counter

import numpy as np
import pytest

from helpers import hop_channels
from synth.measure.evaluate import evaluate_batch
from synth.measure.loads import analyse_loads, channel_loads, phase_channel_counts
from synth.routing import oblivious

from synth.topology import parse_topology
from synth.traffic.patterns import parse_pattern
from synth.workflow import exchange_loads, route_phases, scattered_ranks

OBLIVIOUS_ROUTERS = {spec.name: spec.build(None) for spec in oblivious.ROUTER}  # the XGFT's fixed routers

SPEC = "xgft:3:4,3,2:1,4,3"


def naive_phase_loads(xgft, network, src, dst, choice):
    return Counter(hop_channels(network, xgft.path_nodes(src, dst, choice)).tolist())


@pytest.mark.parametrize("router", sorted(OBLIVIOUS_ROUTERS))
@pytest.mark.parametrize("pattern", ["a2a-opt", "a2a-lin", "a2a-bgh"])
def test_batched_counts_equal_a_plain_count(router, pattern):
    xgft = parse_topology(SPEC)
    network = xgft.network()
    workload = parse_pattern(pattern, xgft.num_leaves, xgft.hierarchy())
    phases = np.arange(0, workload.num_phases, 5)
    idx, src, dst, _ = workload.batch(phases)
    choice = OBLIVIOUS_ROUTERS[router](xgft, src, dst, phase=phases[idx], occurrence=np.zeros_like(src), seed=3)
    counts = phase_channel_counts(xgft, idx, src, dst, choice, len(phases))
    evaluations = evaluate_batch(xgft, network, phases, idx, src, dst, choice)
    for i in range(len(phases)):
        sel = idx == i
        expected = naive_phase_loads(xgft, network, src[sel], dst[sel], choice[sel])
        row = counts[i]
        assert {c: int(row[c]) for c in np.flatnonzero(row)} == dict(expected)
        assert evaluations[i].max_contention == max(expected.values(), default=0)
        if expected:
            assert row[evaluations[i].hottest_channel] == max(expected.values())


def test_channel_loads_with_bytes():
    xgft = parse_topology(SPEC)
    network = xgft.network()
    src, dst, choice = np.array([0, 1, 5]), np.array([23, 23, 6]), np.array([3, 3, 0])
    hops = xgft.hop_matrix(src, dst, choice)
    report = analyse_loads(network, hops, np.array([100, 10, 1]))
    assert report.max_contention == 2
    shared = report.hottest_channels
    assert (report.bytes[shared] == 110).all()
    assert channel_loads(hops, network.num_channels).sum() == 6 + 6 + 2
    assert report.stage_up_max == {1: 1, 2: 2, 3: 2}


def test_hop_matrix_follows_the_path_order():
    xgft = parse_topology(SPEC)
    network = xgft.network()
    src, dst, choice = np.array([0, 2, 7]), np.array([23, 3, 7]), np.array([11, 0, 0])
    hops = xgft.hop_matrix(src, dst, choice)
    for row, path in zip(hops, xgft.path_nodes(src, dst, choice)):
        used = row[row >= 0]
        assert network.channel_src[used].tolist() == path[:-1]
        assert network.channel_dst[used].tolist() == path[1:]


def test_parallel_and_serial_whole_exchange_agree():
    xgft = parse_topology("xgft:3:8,4,2:1,8,2")
    network = xgft.network()
    workload = parse_pattern("a2a-lin", xgft.num_leaves, xgft.hierarchy())
    phases = np.arange(workload.num_phases)
    serial = exchange_loads(xgft, workload, phases, "random-msg", seed=4, workers=1)
    parallel = exchange_loads(xgft, workload, phases, "random-msg", seed=4, workers=2)
    assert np.array_equal(serial.max_contention, parallel.max_contention)
    assert np.array_equal(serial.total_messages, parallel.total_messages)
    # Every message of the exchange is on its 2*delta channels.
    idx, src, dst, _ = workload.batch(phases)
    assert serial.total_messages.sum() == 2 * xgft.nca_layer(src, dst).sum()
    kept = [p.evaluation.max_contention for p in route_phases(xgft, network, workload, phases, "random-msg", 4, workers=2)]
    assert kept == serial.max_contention.tolist()
    summary_only = route_phases(xgft, network, workload, phases, "random-msg", 4, workers=2, keep_routes=False)
    assert [p.evaluation.max_contention for p in summary_only] == kept


def test_scattered_ranks_is_a_permutation():
    for n in (1, 2, 16, 243, 1001, 8192):
        assert sorted(scattered_ranks(n).tolist()) == list(range(n))


def test_repeat_ordinals_count_earlier_identical_flows():
    from synth.workflow import repeat_ordinals
    idx = np.array([0, 0, 0, 1, 0, 1])
    src = np.array([1, 1, 2, 1, 1, 1])
    dst = np.array([5, 5, 5, 5, 5, 5])
    assert repeat_ordinals(idx, src, dst).tolist() == [0, 1, 0, 0, 2, 1]
