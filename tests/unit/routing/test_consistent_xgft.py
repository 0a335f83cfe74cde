"""Destination-consistent layered routes (one LID per terminal suffices)."""

import numpy as np
import pytest

from helpers import TABLE_3_1, xgft_and_network
from synth.routing.consistent import route_consistent
from synth.routing.xgft_layers import LayeredOptions
from synth.routing.monolithic import route_consistent_monolithic
from synth.routing.oblivious import dmodk
from synth.tables.forwarding import build_tables, route_hops
from synth.traffic.patterns import parse_pattern
from synth.measure.loads import channel_loads


def per_phase_contention(xgft, src, dst, phase, choice):
    return [int(channel_loads(xgft.hop_matrix(src[phase == p], dst[phase == p], choice[phase == p]), xgft.num_channels).max())
            for p in np.unique(phase)]


@pytest.mark.parametrize("n", [16, 32, 64, 128])
def test_whole_opt_exchange_routed_consistently(n):
    """All phases of the OPT exchange with one LID per terminal, at the bound (1) in every phase,
    where d-mod-k (and OpenSM's minhop, updn and ftree) need 4, 7 and 8 from 32 leaves on."""
    xgft, network = xgft_and_network(TABLE_3_1[n])
    workload = parse_pattern("a2a-opt", n, xgft.hierarchy())
    phase, src, dst, _ = workload.batch(np.arange(n))
    choice, _ = route_consistent(xgft, src, dst, phase, LayeredOptions(time_limit=30))
    tables = build_tables(xgft, network, dst, route_hops(network, xgft.path_nodes(src, dst, choice)))
    assert tables.lids.lmc == 0  # every flow to a destination agrees at every switch
    mine = per_phase_contention(xgft, src, dst, phase, choice)
    theirs = per_phase_contention(xgft, src, dst, phase, dmodk(xgft, src, dst, phase, None))
    assert mine == [1] * n and max(mine) <= max(theirs)


def test_consistency_option_is_checked(run):
    code, _, err = run("route", TABLE_3_1[16], "--traffic", "a2a-opt", "--router", "layered", "--consistency", "source")
    assert code == 2 and "unknown consistency 'source'" in err
    code, _, err = run("route", TABLE_3_1[16], "--traffic", "a2a-opt", "--router", "smodk", "--consistency", "destination")
    assert code == 2 and "not for 'smodk'" in err


@pytest.mark.parametrize("n", [16, 32])
def test_monolithic_consistent_model_reaches_the_bound_on_small_opt_exchanges(n):
    """The exact model over all phases at once: LMC 0 tables, contention 1 in every phase (the
    bound), and a proof about the maximum."""
    xgft, network = xgft_and_network(TABLE_3_1[n])
    workload = parse_pattern("a2a-opt", n, xgft.hierarchy())
    phase, src, dst, _ = workload.batch(np.arange(n))
    choice, report = route_consistent_monolithic(xgft, src, dst, phase, LayeredOptions(time_limit=60))
    tables = build_tables(xgft, network, dst, route_hops(network, xgft.path_nodes(src, dst, choice)))
    assert tables.lids.lmc == 0
    assert per_phase_contention(xgft, src, dst, phase, choice) == [1] * n
    assert report.whole_run.endswith("proven optimal among destination-consistent routings")
    assert report.proven_by is None  # a proof about the maximum, not about each phase


def test_monolithic_consistent_needs_cpsat_and_a_cap_when_large(run):
    code, _, err = run("route", TABLE_3_1[16], "--traffic", "a2a-opt", "--router", "monolithic",
                       "--consistency", "destination", "--solver", "cbc")
    assert code == 2 and "solved by cpsat only" in err
    code, _, err = run("route", TABLE_3_1[128], "--traffic", "a2a-opt", "--router", "monolithic",
                       "--consistency", "destination", "--time-limit", "10")
    assert code == 2 and "path variables" in err and "the selected phases" in err


def test_routes_do_not_depend_on_the_order_flows_are_listed():
    """The CLI lists flows by rank, load analyses and reports scatter them: the same routes either way."""
    from synth.routing.layered_xgft import LayeredRouter
    from synth.workflow import scattered_ranks

    xgft, _ = xgft_and_network(TABLE_3_1[64])
    workload = parse_pattern("a2a-opt", 64, xgft.hierarchy())
    listed = [workload.batch(np.arange(64)), workload.batch(np.arange(64), scattered_ranks(64))]
    for route in (lambda s, d, p: route_consistent(xgft, s, d, p, LayeredOptions(time_limit=30))[0],
                  lambda s, d, p: LayeredRouter(LayeredOptions())(xgft, s, d, p, None)[0]):
        results = []
        for phase, src, dst, _ in listed:
            order = np.lexsort((dst, src, phase))
            results.append(route(src, dst, phase)[order])
        assert np.array_equal(results[0], results[1])
