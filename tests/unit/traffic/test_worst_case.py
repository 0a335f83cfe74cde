"""The ch.7 worst-case permutations (synth.traffic.worst_case, the families' worst_case_destinations, Prisacari20 sec. 7.4.2).

The router graph is read from the network's channels into networkx, and every claim is
re-derived there: the pattern is a permutation of whole routers onto whole routers; Slim Fly
pairs are at distance two with one minimal path each, overlapping as in Figure 7.5; MLFM and OFT
pairs have exactly one minimal path; and the contention under minimal routing, counted naively
from the paths, is the seed's 2p, h and k (throughputs 5 %, 6.6 % and 8.3 % of Sec. 7.4.3 on the
ch.7 configurations)."""

from __future__ import annotations

import json
from collections import Counter

import networkx as nx
import numpy as np
import pytest

from helpers import REPO
from synth.core.errors import SynthError
from synth.routing.minimal import minimal
from synth.topology import parse_topology
from synth.topology.slimfly import slimfly_router_pairs
from synth.traffic.patterns import parse_pattern



def router_graph(network) -> tuple[nx.Graph, np.ndarray]:
    """The routers and links of a direct network, and the router of every terminal, from its channels."""
    n = network.num_terminals
    graph = nx.Graph()
    attached = np.empty(n, dtype=np.int64)
    for src, dst in zip(network.channel_src.tolist(), network.channel_dst.tolist()):
        if src < n:
            attached[src] = dst
        elif dst >= n:
            graph.add_edge(src, dst)
    return graph, attached


def worst_case(spec: str):
    topology = parse_topology(spec)
    network = topology.network()
    flows = parse_pattern("worst-case", network.num_terminals, topology.hierarchy(), topology=topology).flows(0)
    return topology, network, flows


def naive_max_load(paths) -> int:
    return max(Counter(c for path in paths.as_lists() for c in path).values())


@pytest.mark.parametrize("spec", ["slimfly:5", "slimfly:4", "slimfly:7", "slimfly:8", "slimfly:9:p=3", "mlfm:3", "mlfm:4",
                                  "oft:4", "oft:6"])
def test_whole_routers_to_whole_routers_a_permutation(spec):
    _, network, flows = worst_case(spec)
    n = network.num_terminals
    assert sorted(flows.dst.tolist()) == list(range(n))
    _, attached = router_graph(network)
    image = {}
    for s, d in zip(flows.src.tolist(), flows.dst.tolist()):
        assert image.setdefault(attached[s], attached[d]) == attached[d]
    assert len(set(image.values())) == len(image)


@pytest.mark.parametrize("q", [4, 5, 7, 8, 9, 13])
def test_slimfly_pairs_at_distance_two_overlap_in_fours(q):
    topology = parse_topology(f"slimfly:{q}")
    graph, _ = router_graph(topology.network())
    n = topology.num_terminals
    sigma, unmatched = slimfly_router_pairs(topology)
    assert np.array_equal(sigma[sigma], np.arange(len(sigma)))  # everyone exchanges with its partner
    assert unmatched == int((sigma == np.arange(len(sigma))).sum()) <= 2
    for a, c in enumerate(sigma.tolist()):
        if a != c:
            assert nx.shortest_path_length(graph, n + a, n + c) == 2
    # Figure 7.5: a pair's route overlaps another pair's route (shares a link in the same direction).
    routes = {a: nx.shortest_path(graph, n + a, n + c) for a, c in enumerate(sigma.tolist()) if a != c}
    load = Counter(link for route in routes.values() for link in zip(route, route[1:]))
    overlapping = sum(1 for route in routes.values() if max(load[link] for link in zip(route, route[1:])) == 2)
    assert max(load.values()) == 2
    assert overlapping >= len(sigma) - 8  # the greedy packs all but a few routers into fours


@pytest.mark.parametrize("spec, contention", [("slimfly:5", 8), ("slimfly:8", 12), ("slimfly:9:p=3", 6),
                                              ("mlfm:3", 3), ("mlfm:5", 5), ("oft:4", 4), ("oft:6", 6)])
def test_minimal_routing_contention_is_the_seed_value(spec, contention):
    topology, network, flows = worst_case(spec)
    paths = minimal(topology, flows.src, flows.dst)
    assert naive_max_load(paths) == contention


@pytest.mark.parametrize("spec", ["mlfm:4", "oft:4"])
def test_mlfm_and_oft_pairs_have_one_minimal_path(spec):
    _, network, flows = worst_case(spec)
    graph, attached = router_graph(network)
    for s, d in {(attached[s], attached[d]) for s, d in zip(flows.src.tolist(), flows.dst.tolist())}:
        assert len(list(nx.all_shortest_paths(graph, s, d))) == 1


@pytest.mark.parametrize("instance, contention, percent", [("slimfly-q13-p10", 20, 5.0), ("mlfm-h15", 15, 6.6),
                                                           ("oft-k12", 12, 8.3)])
def test_ch7_configurations_worst_case_throughput(run, tmp_path, instance, contention, percent):
    """Sec. 7.4.3: WC under MIN saturates at 5 % (SF p = 10), 6.6 % (MLFM h = 15), 8.3 % (OFT k = 12)."""
    out = tmp_path / "wc.json"
    path = REPO / "instances" / "ch7" / f"{instance}.toml"
    code, _, err = run("route", path, "--traffic", "worst-case", "--router", "minimal", "--out", out, "--quiet")
    assert code == 0, err
    recorded = json.loads(out.read_text())["phases"][0]["max_contention"]
    assert recorded == contention and int(1000 / recorded) / 10 == percent  # the seed truncates
    assert run("check", out)[0] == 0


@pytest.mark.parametrize("spec", ["dragonfly:1,2,1", "hyperx:3,3", "torus:4,4", "kautz:3", "xgft:2:4,4:1,2"])
def test_other_families_are_refused_by_name(run, spec):
    code, out, err = run("route", spec, "--traffic", "worst-case", "--router", "minimal" if ":" in spec[5:] else "dmodk")
    assert code == 2 and err.count("\n") == 1
    assert "defined for slimfly, mlfm and oft" in err


def test_takes_no_argument():
    topology = parse_topology("mlfm:2")
    with pytest.raises(SynthError, match="takes no argument"):
        parse_pattern("worst-case:3", topology.num_terminals, None, topology=topology)
