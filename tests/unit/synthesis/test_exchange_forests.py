"""All-to-all(v) synthesis along forests (synth.measure.forests), the method above 1 M rank pairs,
forced on networks small enough for the listed-paths method too (MAX_PAIRS lowered):

- every schedule priced along forests costs exactly what the same schedule costs along the same
  paths listed (map_schedule's two ways, TuNA's size exchanges included);
- every band delivers when replayed without synth's code and is never below its bound, and the
  bound is at most lambda* of the exact multicommodity-flow LP (an edge LP solved here) and the
  bisection of the listed method;
- the direct exchanges left out at scale are indeed never cheaper than the one phase.
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers import delivers, edge_lp
from synth.collectives.algorithms import ALGORITHMS, Request
from synth.collectives.sizes import exchange_matrix
from synth.collectives.verify import verify
from synth.core.sizes import parse_sizes
from synth.pricing.schedule_cost import map_schedule
from synth.synthesis import exchange, transfers
from synth.synthesis.plan import plan_synthesis
from synth.synthesis.portfolio import bands, synthesize_parts
from synth.topology import parse_topology

ALPHA, BANDWIDTH = 1e-6, 100e9


@pytest.fixture
def at_scale(monkeypatch):
    """Every exchange routed along forests, as above MAX_PAIRS."""
    monkeypatch.setattr(exchange, "MAX_PAIRS", 1)
    monkeypatch.setattr(transfers, "MAX_PAIRS", 1)


@pytest.mark.parametrize("spec", ["torus:4,4", "dragonfly:2,4,2"])
@pytest.mark.parametrize("sizes", [None, "zipf:64KiB:0.7:3", "moe:4KiB:2:16:1"])
def test_forest_bands_deliver_and_keep_their_bound(at_scale, spec, sizes):
    topology = parse_topology(spec)
    collective = "alltoall" if sizes is None else "alltoallv"
    plan = plan_synthesis(collective, topology, sizes=sizes, time_limit=10)
    assert plan.exchange.forests is not None and plan.exchange.num_pairs == plan.graph.ranks * (plan.graph.ranks - 1)
    parts = synthesize_parts(plan, 10)
    found = bands(plan, parts, parse_sizes("32B..64MiB") if sizes is None else [1], ALPHA, BANDWIDTH)
    for band in found:
        assert verify(band.schedule).ok and delivers(band.schedule)
        for entry in band.schedule.synthesis["sizes"]:
            assert entry["seconds"] >= entry["bound_seconds"] and entry["gap"] >= 0
    # the flow bound is one for every routing: at most the exact LP of the demand, solved on the edges here
    network = topology.network()
    n = network.num_terminals
    if sizes is None and spec == "torus:4,4":  # one terminal per router: a demand per pair
        routers = network.num_nodes - n
        between = (network.channel_src >= n) & (network.channel_dst >= n)
        edges = list(zip((network.channel_src[between] - n).tolist(), (network.channel_dst[between] - n).tolist()))
        router_of = network.channel_dst[np.argsort(network.channel_src)[:n]] - n
        demands = [(int(router_of[a]), int(router_of[b])) for a in range(n) for b in range(n)
                   if router_of[a] != router_of[b]]
        assert plan.exchange.lp <= edge_lp(routers, edges, demands) + 1e-6


@pytest.mark.parametrize("algorithm,radix", [("tuna", 2), ("tuna", 3), ("bruck", None), ("spread-out", None),
                                             ("pairwise", None)])
def test_forest_pricing_equals_the_listed_paths(algorithm, radix):
    topology = parse_topology("torus:4,4")
    network = topology.network()
    matrix = exchange_matrix("random:4096:5", 16)
    from synth.measure.forests import router_demand, spread

    routing = spread(network, router_demand(network, 1, matrix), 10.0, steps=5)
    schedule = ALGORITHMS[algorithm].generate(Request("alltoallv", 16, 256, 0, topology.spec, radix=radix, sizes=matrix))
    across = schedule.src != schedule.dst
    listed = map_schedule(schedule, topology, paths=routing.paths(schedule.src[across], schedule.dst[across]))
    walked = map_schedule(schedule, topology, forests=routing)
    for field in ("channel_bytes", "flows", "hops", "port_messages", "size_bytes", "size_port_messages"):
        assert np.allclose(getattr(walked, field), getattr(listed, field)), field
    assert walked.time(ALPHA, BANDWIDTH) == pytest.approx(listed.time(ALPHA, BANDWIDTH), rel=1e-12)


def test_the_direct_exchanges_left_out_at_scale_never_beat_the_one_phase():
    topology = parse_topology("torus:4,4")
    network = topology.network()
    matrix = exchange_matrix("zipf:1MiB:0.5:2", 16)
    from synth.measure.forests import router_demand, spread

    routing = spread(network, router_demand(network, 1, matrix), 10.0, steps=3)
    def priced(name):
        schedule = ALGORITHMS[name].generate(Request("alltoallv", 16, 256, 0, topology.spec, sizes=matrix))
        return map_schedule(schedule, topology, forests=routing)
    one = priced("spread-out")
    for name, algorithm in ALGORITHMS.items():
        if algorithm.direct and "alltoallv" in algorithm.collectives and algorithm.refusal(
                Request("alltoallv", 16, 256, 0, topology.spec, sizes=matrix)) is None:
            other = priced(name)
            for scale in (1e-6, 1.0, 1e3):
                assert one.time(ALPHA, BANDWIDTH, scale) <= other.time(ALPHA, BANDWIDTH, scale) * (1 + 1e-12), name


def test_forests_that_would_not_fit_are_one_line_before_any_allocation(at_scale, monkeypatch):
    from synth.core import memory
    from synth.core.errors import SynthError

    monkeypatch.setattr(memory, "budget", lambda: memory.Budget(1 << 10, "a test's limit"))
    with pytest.raises(SynthError, match="forests of 16 routers takes about .* synth plans with"):
        plan_synthesis("alltoall", parse_topology("torus:4,4"), time_limit=10)
