"""Forest routings (synth.measure.forests): the compiled walk prices exactly what explicit paths do,
every path is a shortest one, and the bracket holds lambda* of the exact multicommodity-flow LP."""

import networkx as nx
import numpy as np
import pytest

from synth.measure.forests import router_demand, spread, step_loads, terminal_links
from synth.measure.lp_bound import lp_bound
from synth.pricing.alphabeta import message_ports
from synth.pricing.schedule_cost import busiest_channels
from synth.synthesis.exchange import translated_forest
from synth.topology import parse_topology

SPECS = ["torus:4,4", "torus:3,5", "hyperx:3,4", "dragonfly:2,4,2", "slimfly:5", "kautz:3,2"]


def _pairs(n):
    a, b = np.nonzero(~np.eye(n, dtype=bool))
    return a.astype(np.int64), b.astype(np.int64)


@pytest.mark.parametrize("spec", SPECS)
def test_walk_prices_what_explicit_paths_do(spec):
    topology = parse_topology(spec)
    network = topology.network()
    n = network.num_terminals
    rng = np.random.default_rng(1)
    sizes = rng.integers(0, 1000, n * n)
    routing = spread(network, router_demand(network, 1, sizes), 10.0, steps=4)
    a, b = _pairs(n)
    step = np.sort(rng.integers(0, 5, len(a)))
    size = rng.integers(1, 100, len(a)).astype(np.float64)
    paths = routing.paths(a, b)
    loads, flows = busiest_channels(network, paths, step, size, 5)
    walked = step_loads(routing, network, step, a, b, size, 5)
    assert np.allclose(walked.channel_bytes, loads) and np.array_equal(walked.flows, flows.astype(np.int64))
    assert np.array_equal(walked.ports, message_ports(network, paths))
    # every path is a simple walk from a's injection link to b's ejection link; the first forest's are shortest
    graph = nx.DiGraph()
    src, dst = network.channel_src, network.channel_dst
    graph.add_edges_from(zip(src.tolist(), dst.tolist()))
    hops = dict(nx.all_pairs_shortest_path_length(graph))
    first = spread(network, router_demand(network, 1, sizes), 10.0, steps=1)
    shortest = first.paths(a, b)
    for i in range(0, len(a), 7):
        path = paths.path(i)
        assert src[path[0]] == a[i] and dst[path[-1]] == b[i]
        assert all(dst[x] == src[y] for x, y in zip(path[:-1], path[1:]))
        assert len(set(dst[path].tolist())) == len(path)
        assert len(shortest.path(i)) == hops[a[i]][b[i]]


@pytest.mark.parametrize("spec", ["torus:4,4", "hyperx:3,4", "dragonfly:2,4,2", "kautz:3,2"])
def test_bracket_holds_the_exact_lp(spec):
    network = parse_topology(spec).network()
    n = network.num_terminals
    sizes = np.random.default_rng(2).integers(0, 50, n * n)
    a, b = _pairs(n)
    weights = sizes.reshape(n, n)[a, b]
    exact = lp_bound(network, a, b, exact=True, weights=weights)
    routing = spread(network, router_demand(network, 1, sizes), 10.0, steps=6)
    assert routing.lower <= exact.lower * (1 + 1e-9) and exact.lower <= routing.upper * (1 + 1e-9)
    # the routing's own busiest load, whole blocks on the picked paths, is at least lambda*
    walked = step_loads(routing, network, np.zeros(len(a), dtype=np.int64), a, b, weights.astype(float), 1)
    router_links = (network.channel_src >= n) & (network.channel_dst >= n)
    assert walked.channel_bytes[0] >= exact.lower * (1 - 1e-9) or not router_links.any()


@pytest.mark.parametrize("spec", ["torus:3,5", "torus:4,4", "torus:8,8", "hyperx:3,4"])
def test_translated_forest_loads_every_channel_of_an_orbit_alike(spec):
    # moved to every source, one tree crosses an orbit's channels alike (orbit-stabilizer)
    from synth.measure.forests import _router_loads
    from synth.synthesis.symmetry import translation_group

    topology = parse_topology(spec)
    network = topology.network()
    parent, into = translated_forest(topology)
    load = np.zeros(network.num_channels)
    _router_loads(parent[None], into[None], router_demand(network, 1, None), 0, load)
    _, channel_class, _ = translation_group(topology)
    n = network.num_terminals
    inner = np.flatnonzero((network.channel_src >= n) & (network.channel_dst >= n))
    for orbit in np.unique(channel_class[inner]):
        members = inner[channel_class[inner] == orbit]
        assert np.all(load[members] == load[members[0]])
    # and every path is a shortest one
    routing = spread(network, router_demand(network, 1, None), 10.0, steps=1, first=(parent, into))
    a, b = _pairs(n)
    graph = nx.DiGraph()
    graph.add_edges_from(zip(network.channel_src.tolist(), network.channel_dst.tolist()))
    hops = dict(nx.all_pairs_shortest_path_length(graph))
    assert np.array_equal(routing.paths(a, b).lengths(), [hops[x][y] for x, y in zip(a.tolist(), b.tolist())])


def test_terminal_links_refuse_a_network_without_one_link_per_terminal():
    network = parse_topology("xgft:2:4,4:1,2").network()
    router_of, injection, ejection = terminal_links(network)
    assert len(router_of) == network.num_terminals and (network.channel_src[injection] == np.arange(network.num_terminals)).all()
