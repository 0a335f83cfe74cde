"""XGFT construction ([Prisacari20] sec. 2.4.2 and 3.3) against independent builds."""

import itertools

import networkx as nx
import numpy as np
import pytest

from helpers import TABLE_2_1, TABLE_3_1, xgft_and_network
from synth.core.errors import SynthError
from synth.topology import parse_topology

# S(l) = w_1..w_l m_{l+1}..m_h switches per layer, E(l) = S(l) m_l links below layer l (sec. 2.4.2),
# worked out by hand for every Table 2.1 and Table 3.1 XGFT.
SWITCHES_AND_LINKS = {
    "xgft:3:4,2,2:1,4,1": ([4, 8, 4], [16, 16, 8]),
    "xgft:3:4,4,2:1,4,2": ([8, 8, 8], [32, 32, 16]),
    "xgft:3:8,4,2:1,8,2": ([8, 16, 16], [64, 64, 32]),
    "xgft:3:8,8,2:1,8,4": ([16, 16, 32], [128, 128, 64]),
    "xgft:4:8,4,4,2:1,8,4,2": ([32, 64, 64, 64], [256, 256, 256, 128]),
    "xgft:4:8,8,4,2:1,8,8,2": ([64, 64, 128, 128], [512, 512, 512, 256]),
    "xgft:4:8,8,8,2:1,8,8,4": ([128, 128, 128, 256], [1024, 1024, 1024, 512]),
    "xgft:2:8,2:1,4": ([2, 4], [16, 8]),
    "xgft:4:16,8,4,2:1,16,8,2": ([64, 128, 256, 256], [1024, 1024, 1024, 512]),
    "xgft:5:8,8,4,4,2:1,8,8,4,2": ([256, 256, 512, 512, 512], [2048, 2048, 2048, 2048, 1024]),
    "xgft:5:8,8,8,4,2:1,8,8,8,2": ([512, 512, 512, 1024, 1024], [4096, 4096, 4096, 4096, 2048]),
    "xgft:5:8,8,8,8,2:1,8,8,8,4": ([1024, 1024, 1024, 1024, 2048], [8192, 8192, 8192, 8192, 4096]),
}


def test_every_table_xgft_has_its_counts():
    assert set(SWITCHES_AND_LINKS) == set(TABLE_2_1.values()) | set(TABLE_3_1.values())


@pytest.mark.parametrize("spec", sorted(SWITCHES_AND_LINKS))
def test_switch_and_link_counts(spec):
    switches, links = SWITCHES_AND_LINKS[spec]
    xgft, network = xgft_and_network(spec)
    height = xgft.height
    assert [xgft.switch_count(l) for l in range(1, height + 1)] == switches
    assert [xgft.link_count(l) for l in range(1, height + 1)] == links
    # The built arrays hold exactly that many nodes per level and channels per stage.
    assert np.bincount(network.node_level).tolist() == [xgft.num_leaves] + switches
    stage = network.channel_stage()
    assert [int((stage == k).sum()) for k in range(1, height + 1)] == [2 * e for e in links]
    assert network.num_terminals == xgft.num_leaves


def coordinate_graph(m, w):
    """The XGFT built directly from the seed's coordinates, independent of synth's indexing:
    a layer-l node (l; m_H..m_{l+1}, w_l..w_1) links to the W_{l+1} layer-(l+1) nodes
    (l+1; m_H..m_{l+2}, w_{l+1}, w_l..w_1). Leaves get rank sum m_i * M_1*...*M_{i-1}."""
    h = len(m)
    graph = nx.Graph()
    for layer in range(h):
        m_ranges = [range(m[i]) for i in reversed(range(layer, h))]  # m_H..m_{l+1}
        w_ranges = [range(w[i]) for i in reversed(range(layer))]  # w_l..w_1
        for ms in itertools.product(*m_ranges):
            for ws in itertools.product(*w_ranges):
                for w_next in range(w[layer]):
                    graph.add_edge((layer, ms, ws), (layer + 1, ms[:-1], (w_next,) + ws))
    return graph


def synth_name_of_coordinates(node):
    layer, ms, ws = node
    if layer == 0:
        rank = sum(digit * int(np.prod(LEAF_M[: i])) for i, digit in enumerate(reversed(ms)))
        return f"t{rank}"
    parts = [f"s{layer}"] + (["m" + ".".join(map(str, ms))] if ms else []) + ["w" + ".".join(map(str, ws))]
    return "-".join(parts)


LEAF_M: tuple = ()


@pytest.mark.parametrize("spec", ["xgft:2:2,2:3,3", "xgft:3:4,3,2:1,4,3", "xgft:3:4,2,2:1,4,1", "xgft:3:3,2,2:2,3,2"])
def test_links_match_the_seed_coordinates(spec):
    global LEAF_M
    xgft, network = xgft_and_network(spec)
    LEAF_M = xgft.m
    expected = {frozenset(map(synth_name_of_coordinates, e)) for e in coordinate_graph(xgft.m, xgft.w).edges}
    names = network.node_names
    built = {frozenset((names[s], names[d])) for s, d in zip(network.channel_src.tolist(), network.channel_dst.tolist())}
    assert built == expected
    # Every link appears once in each direction, with matching ports.
    keys = set(zip(network.channel_src.tolist(), network.channel_src_port.tolist(), network.channel_dst.tolist(), network.channel_dst_port.tolist()))
    assert all((d, dp, s, sp) in keys for s, sp, d, dp in keys)


@pytest.mark.parametrize("spec", ["xgft:3:4,3,2:1,4,3", "xgft:3:8,4,2:1,8,2", "xgft:2:2,2:3,3"])
def test_ports_are_numbered_from_one_without_gaps(spec):
    xgft, network = xgft_and_network(spec)
    for node in range(network.num_nodes):
        ports = sorted(network.channel_src_port[network.channel_src == node].tolist())
        assert ports == list(range(1, len(ports) + 1))
        layer = int(network.node_level[node])
        down = xgft.m[layer - 1] if layer else 0
        up = xgft.w[layer] if layer < xgft.height else 0
        assert len(ports) == down + up


@pytest.mark.parametrize("spec", ["xgft:3:4,3,2:1,4,3", "xgft:3:3,2,2:2,3,2"])
def test_leaves_share_ancestors_exactly_by_mixed_radix_quotient(spec):
    xgft, network = xgft_and_network(spec)
    graph = nx.DiGraph()
    up = network.channel_is_up()
    graph.add_edges_from(zip(network.channel_src[up].tolist(), network.channel_dst[up].tolist()))
    levels = network.node_level
    ancestors = {leaf: nx.descendants(graph, leaf) for leaf in range(xgft.num_leaves)}
    for k in range(1, xgft.height + 1):
        span = xgft.mt_span[k]
        for i, j in itertools.combinations(range(xgft.num_leaves), 2):
            at_k_i = {a for a in ancestors[i] if levels[a] == k}
            at_k_j = {a for a in ancestors[j] if levels[a] == k}
            assert (at_k_i == at_k_j) == (i // span == j // span)
            assert len(at_k_i) == xgft.wt_span[k]


@pytest.mark.parametrize("spec", ["xgft:3:4,3,2:1,4,3", "xgft:2:2,2:3,3", "xgft:3:3,2,2:2,3,2"])
def test_minimal_paths_counted_by_property_1(spec):
    """Property 1: W_1*...*W_delta minimal paths; their length is 2 delta (BFS, not synth's arithmetic)."""
    xgft, network = xgft_and_network(spec)
    graph = nx.Graph()
    graph.add_edges_from(zip(network.channel_src.tolist(), network.channel_dst.tolist()))
    for s, d in itertools.product(range(xgft.num_leaves), repeat=2):
        if s == d:
            continue
        delta = int(xgft.nca_layer(s, d))
        paths = list(nx.all_shortest_paths(graph, s, d))
        assert len(paths[0]) - 1 == 2 * delta
        assert len(paths) == xgft.wt_span[delta]
        # synth's path for every choice is one of them, and the choices give them all.
        mine = xgft.path_nodes(np.full(xgft.wt_span[delta], s), np.full(xgft.wt_span[delta], d), np.arange(xgft.wt_span[delta]))
        assert sorted(map(tuple, mine)) == sorted(map(tuple, paths))


def test_coordinates_and_names():
    xgft = parse_topology("xgft:3:4,3,2:1,4,3")  # Figure 3.1's XGFT
    assert xgft.node_coords(5) == (0, (0, 1, 1), ())
    top = xgft.node_offset[3] + 7
    layer, m_digits, w_digits = xgft.node_coords(top)
    assert layer == 3 and m_digits == () and len(w_digits) == 3
    assert xgft.node_name(5) == "t5"
    assert xgft.label() == "XGFT(3; 4,3,2; 1,4,3)"


@pytest.mark.parametrize("text, message", [
    ("xgft:3:8,0,2:1,8,2", "M_2 in 'xgft:3:8,0,2:1,8,2' must be between 1 and 65536, got 0"),
    ("xgft:3:8,4:1,8,2", "needs 3 M and 3 W values"),
    ("xgft:3:8,4,2:1,8", "needs 3 M and 3 W values"),
    ("xgft:3:8,x,2:1,8,2", "M_2 in 'xgft:3:8,x,2:1,8,2' must be an integer, got 'x'"),
    ("xgft:3:8,4,2", "must be xgft:H"),
    ("xgft:0:1:1", "height in 'xgft:0:1:1' must be between 1 and 16, got 0"),
    ("mesh:4,4", "unknown network family"),
    ("xgft:2:2048,1024:1,2048", "2,097,152 leaves, more than the 1,048,576 synth builds"),
    ("xgft:3:2,2,2:1,2048,2048", "4,198,412 nodes, more than the 4,194,304"),
    ("xgft:3:8,\uff18,2:1,8,2", "must be an integer"),  # a non-ASCII digit
    ("xgft:3:8,8_0,2:1,8,2", "must be an integer"),
    ("xgft:3:8,99999999999999999999999,2:1,8,2", "within 64-bit integers"),
])
def test_bad_specs(text, message):
    with pytest.raises(SynthError, match=message):
        parse_topology(text)


def test_cost_per_endpoint_of_fat_trees():
    """Prisacari20 sec. 7.2 / Figure 7.3: a two-level fat tree costs 3 switch ports and 2 links per end-node,
    a three-level one 5 and 3 (full bisection, radix 8 and 16 here)."""
    assert parse_topology("xgft:2:4,8:1,4").network().cost_per_endpoint() == (3.0, 2.0)
    assert parse_topology("xgft:3:8,8,4:1,8,8").network().cost_per_endpoint() == (5.0, 3.0)
