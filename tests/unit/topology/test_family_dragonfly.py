"""Dragonflies (synth.topology.dragonfly) against their definition, rebuilt here with networkx and
plain loops (no synth code in the expectation): structure, ports, arrangements, fewer groups, the
seed's sizes (Prisacari20 Table 4.2) and ch.6 bound, bad specs, and the commands on them."""

from __future__ import annotations

import json
import re
from collections import Counter

import networkx as nx
import pytest
from hypothesis import given, settings, strategies as st

from helpers import REPO
from synth.core.errors import SynthError
from synth.topology import parse_topology
from synth.topology.dragonfly import uniform_throughput_bound

TABLE_4_2 = {  # Prisacari20 Table 4.2: (p, a, h) -> terminals
    (2, 4, 2): 72, (3, 6, 3): 342, (4, 8, 4): 1056,  # balanced
    (2, 3, 2): 42, (3, 5, 3): 240, (4, 7, 4): 812,  # under-provisioned
    (2, 5, 2): 110, (3, 7, 3): 462, (4, 9, 4): 1332,  # over-provisioned
}
ARRANGEMENTS = ("absolute", "relative", "circulant")


# ----- the definition, independently -----------------------------------------------------------
def port_rule(arrangement: str, g: int, i: int, k: int) -> int:
    """Where port k of group i goes at maximum size, as the module docstring states it."""
    if arrangement == "absolute":
        return k if k < i else k + 1
    if arrangement == "relative":
        return (i + k + 1) % g
    step = k // 2 + 1
    return (i + step) % g if k % 2 == 0 else (i - step) % g


def port_destinations(a: int, h: int, g: int, arrangement: str) -> list[list[tuple[int, int]]]:
    """For every group, its a h ports as (destination group, bundle index), from the spreading rule:
    floor(a h / (g - 1)) links to every other group, the remainder r to the groups at circular
    distance 1 .. r//2 on both sides and, for odd r, to the opposite group."""
    bundle, r = divmod(a * h, g - 1)
    table = []
    for i in range(g):
        extra = {(i + s) % g for s in range(1, r // 2 + 1)} | {(i - s) % g for s in range(1, r // 2 + 1)}
        if r % 2:
            assert g % 2 == 0
            extra.add((i + g // 2) % g)
        links = [(j, b) for j in range(g) if j != i for b in range(bundle + (j in extra))]

        def key(link):
            j, b = link
            d = (j - i) % g
            if arrangement == "absolute":
                return (j, b)
            if arrangement == "relative":
                return ((j - i - 1) % g, b)
            return (min(d, g - d), 0 if d <= g - d else 1, b)  # circulant: by distance, + side first

        table.append(sorted(links, key=key))
        assert len(table[-1]) == a * h
    return table


def reference(p: int, a: int, h: int, groups: int | None = None, arrangement: str = "absolute") -> nx.MultiGraph:
    """The dragonfly as a networkx multigraph: routers i a + x, terminals ("t", n) on router n // p;
    every edge has its kind and the port at each end (terminal ports 1..p, local ports to the other
    routers of the group in increasing order, global port p + a + (k mod h) for group port k)."""
    g = groups or a * h + 1
    graph = nx.MultiGraph()
    graph.add_nodes_from(range(g * a))
    for n in range(g * a * p):
        graph.add_edge(("t", n), n // p, kind="terminal", ports={("t", n): 1, n // p: n % p + 1})
    for i in range(g):
        for x in range(a):
            for y in range(x + 1, a):
                u, v = i * a + x, i * a + y
                graph.add_edge(u, v, kind="local", ports={u: p + 1 + (y - 1), v: p + 1 + x})
    table = port_destinations(a, h, g, arrangement)
    for i in range(g):
        for k, (j, b) in enumerate(table[i]):
            if i < j:
                back = table[j].index((i, b))  # the b-th link from j to i
                u, v = i * a + k // h, j * a + back // h
                graph.add_edge(u, v, kind="global", ports={u: p + a + k % h, v: p + a + back % h})
    return graph


def expected_channels(graph: nx.MultiGraph, terminals: int) -> Counter:
    """(src, src port, dst, dst port, class) of both directions of every edge, in Network ids."""
    node = lambda x: x[1] if isinstance(x, tuple) else terminals + x  # noqa: E731
    out = Counter()
    for u, v, data in graph.edges(data=True):
        out[(node(u), data["ports"][u], node(v), data["ports"][v], data["kind"])] += 1
        out[(node(v), data["ports"][v], node(u), data["ports"][u], data["kind"])] += 1
    return out


def synth_channels(network) -> Counter:
    classes = [network.class_names[c] for c in network.channel_class.tolist()]
    return Counter(zip(network.channel_src.tolist(), network.channel_src_port.tolist(), network.channel_dst.tolist(),
                       network.channel_dst_port.tolist(), classes))


def router_multigraph(network) -> nx.MultiGraph:
    """Router-router links of synth's network (one per pair of opposite channels, the even one)."""
    n = network.num_terminals
    graph = nx.MultiGraph()
    graph.add_nodes_from(range(network.num_switches))
    for s, d in zip(network.channel_src[2 * n :: 2].tolist(), network.channel_dst[2 * n :: 2].tolist()):
        graph.add_edge(s - n, d - n)
    return graph


def edge_multiset(graph: nx.MultiGraph, routers_only: bool = True) -> Counter:
    return Counter(tuple(sorted((u, v))) for u, v in graph.edges() if not routers_only or
                   (not isinstance(u, tuple) and not isinstance(v, tuple)))


def assert_matches_definition(p, a, h, groups=None, arrangement="absolute"):
    spec = f"dragonfly:{p},{a},{h}" + (f":groups={groups}" if groups else "") + f":arrangement={arrangement}"
    topology = parse_topology(spec)
    network = topology.network()
    g = groups or a * h + 1
    expected = reference(p, a, h, groups, arrangement)
    n = g * a * p
    assert (network.num_terminals, network.num_switches) == (n, g * a)
    assert network.node_names[n:] == [f"g{i}r{x}" for i in range(g) for x in range(a)]
    # Router adjacency with multiplicities, terminal attachment, ports and classes.
    assert edge_multiset(router_multigraph(network)) == edge_multiset(expected)
    assert synth_channels(network) == expected_channels(expected, n)
    # Ports unique per node and within 1..radix; each undirected link is two opposite channels.
    radix = p + a - 1 + h
    ends = Counter(zip(network.channel_src.tolist(), network.channel_src_port.tolist()))
    assert max(ends.values()) == 1
    router_ports = network.channel_src_port[network.channel_src >= n]
    assert router_ports.min() == 1 and router_ports.max() == radix
    assert (network.channel_src_port[network.channel_src < n] == 1).all()
    assert (network.channel_src[0::2] == network.channel_dst[1::2]).all()
    assert (network.channel_dst[0::2] == network.channel_src[1::2]).all()
    assert (network.channel_src_port[0::2] == network.channel_dst_port[1::2]).all()
    assert (network.channel_bandwidth == 1).all()
    return topology, network, expected


# ----- structure ----------------------------------------------------------------------------
@pytest.mark.parametrize("arrangement", ARRANGEMENTS)
@pytest.mark.parametrize("p, a, h", [(1, 1, 1), (1, 2, 1), (2, 4, 2), (3, 3, 3), (1, 3, 1), (2, 3, 2), (4, 8, 4)])
def test_maximum_size_matches_the_definition(p, a, h, arrangement):
    assert_matches_definition(p, a, h, None, arrangement)


@pytest.mark.parametrize("arrangement", ARRANGEMENTS)
@pytest.mark.parametrize("a, h", [(1, 1), (2, 1), (3, 1), (2, 3), (4, 2), (3, 3), (5, 3)])
def test_port_rules_at_maximum_size(a, h, arrangement):
    """The generalized construction (destinations sorted per arrangement) gives exactly the per-port
    rules at a h + 1 groups, and each rule is a consistent pairing: one link per pair of groups."""
    g = a * h + 1
    table = port_destinations(a, h, g, arrangement)
    for i in range(g):
        targets = [port_rule(arrangement, g, i, k) for k in range(a * h)]
        assert [j for j, _ in table[i]] == targets
        assert sorted(targets) == [j for j in range(g) if j != i]  # every other group exactly once
    # And synth agrees, port by port: router port P of router x in group i is group port x h + P - p - a.
    topology = parse_topology(f"dragonfly:1,{a},{h}:arrangement={arrangement}")
    network = topology.network()
    n = network.num_terminals
    glob = [c for c, name in enumerate(network.channel_class.tolist()) if network.class_names[name] == "global"]
    for c in glob:
        src = int(network.channel_src[c]) - n
        i, x = divmod(src, a)
        k = x * h + int(network.channel_src_port[c]) - 1 - a
        assert (int(network.channel_dst[c]) - n) // a == port_rule(arrangement, g, i, k)


@pytest.mark.parametrize("arrangement", ARRANGEMENTS)
@pytest.mark.parametrize("p, a, h", [(2, 4, 2), (1, 3, 1), (1, 5, 3), (4, 8, 4)])
def test_exactly_one_global_link_per_group_pair_at_maximum_size(p, a, h, arrangement):
    topology = parse_topology(f"dragonfly:{p},{a},{h}:arrangement={arrangement}")
    network = topology.network()
    groups = topology.router_groups()
    n = network.num_terminals
    pairs = Counter()
    for s, d, c in zip(network.channel_src.tolist(), network.channel_dst.tolist(), network.channel_class.tolist()):
        if network.class_names[c] == "global":
            pairs[(int(groups[s - n]), int(groups[d - n]))] += 1  # both directions of every link
    g = a * h + 1
    assert pairs == Counter({(i, j): 1 for i in range(g) for j in range(g) if i != j})


@pytest.mark.parametrize("arrangement", ARRANGEMENTS)
@pytest.mark.parametrize("p, a, h, groups", [(2, 4, 2, 2), (2, 4, 2, 3), (2, 4, 2, 5), (2, 4, 2, 6), (2, 4, 2, 8),
                                             (1, 3, 3, 4), (1, 3, 3, 6), (2, 5, 2, 4), (1, 2, 3, 5)])
def test_fewer_groups_match_the_definition_and_are_balanced(p, a, h, groups, arrangement):
    topology, network, expected = assert_matches_definition(p, a, h, groups, arrangement)
    n = network.num_terminals
    group_of = lambda r: r // a  # noqa: E731
    per_pair = Counter()
    for u, v, data in expected.edges(data=True):
        if data["kind"] == "global":
            per_pair[(group_of(u), group_of(v))] += 1
            per_pair[(group_of(v), group_of(u))] += 1
    assert len(per_pair) == groups * (groups - 1)  # every ordered pair joined
    assert all(per_pair[(i, j)] == per_pair[(j, i)] for i, j in per_pair)  # symmetric
    assert max(per_pair.values()) - min(per_pair.values()) <= 1  # as even as they go
    assert min(per_pair.values()) == a * h // (groups - 1)
    degree = Counter()
    for s, c in zip(network.channel_src.tolist(), network.channel_class.tolist()):
        if network.class_names[c] == "global":
            degree[s - n] += 1
    assert set(degree.values()) == {h} and len(degree) == groups * a  # h global links on every router


@settings(max_examples=80, deadline=None)
@given(p=st.integers(1, 3), a=st.integers(1, 5), h=st.integers(1, 4), arrangement=st.sampled_from(ARRANGEMENTS),
       data=st.data())
def test_property_every_valid_variant_matches_the_definition(p, a, h, arrangement, data):
    groups = data.draw(st.integers(2, a * h + 1), label="groups")
    remainder = a * h % (groups - 1)
    spec = f"dragonfly:{p},{a},{h}:groups={groups}:arrangement={arrangement}"
    if remainder % 2 and groups % 2:
        with pytest.raises(SynthError, match="opposite group"):
            parse_topology(spec)
        return
    topology, network, expected = assert_matches_definition(p, a, h, groups, arrangement)
    assert topology.diameter() == minimal_diameter(expected, a)


# ----- sizes, distances, the ch.6 bound ---------------------------------------------------------
@pytest.mark.parametrize("pah, terminals", sorted(TABLE_4_2.items()))
def test_table_4_2_sizes(pah, terminals):
    p, a, h = pah
    topology = parse_topology("dragonfly:{},{},{}".format(*pah))
    network = topology.network()
    assert topology.num_terminals == network.num_terminals == terminals
    assert network.num_switches == a * (a * h + 1)
    assert topology.hierarchy() == (p, a, a * h + 1)
    assert network.num_channels == 2 * terminals + 2 * (a * h + 1) * (a * (a - 1) // 2) + (a * h + 1) * a * h


def minimal_diameter(graph: nx.MultiGraph, a: int) -> int:
    """Longest shortest router path with at most one global hop, from networkx distances inside the
    groups and the global edges of the reference graph."""
    routers = [x for x in graph.nodes if not isinstance(x, tuple)]
    group = {r: r // a for r in routers}
    local = nx.Graph()
    local.add_nodes_from(routers)
    local.add_edges_from((u, v) for u, v, d in graph.edges(data=True) if d["kind"] == "local")
    inside = dict(nx.all_pairs_shortest_path_length(local))
    crossing = {}
    for u, v, d in graph.edges(data=True):
        if d["kind"] == "global":
            crossing.setdefault((group[u], group[v]), []).append((u, v))
            crossing.setdefault((group[v], group[u]), []).append((v, u))
    worst = 0
    for u in routers:
        for v in routers:
            if group[u] == group[v]:
                best = inside[u][v]
            else:
                best = min(inside[u][x] + 1 + inside[y][v] for x, y in crossing[(group[u], group[v])])
            worst = max(worst, best)
    return worst


@pytest.mark.parametrize("arrangement", ARRANGEMENTS)
@pytest.mark.parametrize("p, a, h", [(1, 2, 1), (2, 4, 2), (1, 3, 2), (2, 3, 2)])
def test_diameter_is_three_router_hops_at_maximum_size(p, a, h, arrangement):
    graph = reference(p, a, h, None, arrangement)
    assert minimal_diameter(graph, a) == 3
    topology = parse_topology(f"dragonfly:{p},{a},{h}:arrangement={arrangement}")
    assert topology.diameter() == 3
    assert ("diameter", "3 router hops (minimal routing: at most one global hop, L-G-L)") in topology.facts()


@pytest.mark.parametrize("spec, diameter", [("dragonfly:1,1,3", 1), ("dragonfly:2,2,1:groups=2", 2),
                                            ("dragonfly:1,2,2:groups=2", 2), ("dragonfly:1,3,3:groups=2", 2),
                                            ("dragonfly:1,4,2:groups=3", 3)])
def test_diameter_of_small_and_bundled_networks(spec, diameter):
    topology = parse_topology(spec)
    graph = reference(topology.p, topology.a, topology.h, topology.groups, topology.arrangement)
    assert minimal_diameter(graph, topology.a) == topology.diameter() == diameter


@pytest.mark.parametrize("p, a, h, t, limit", [
    (4, 8, 4, 1.0, None), (4, 7, 4, 0.8904, "local"), (4, 8, 3, 0.78125, "global"),
    (2, 3, 2, 0.8077, "local"), (3, 5, 3, 0.8602, "local"),
])
def test_uniform_bound_of_eq_6_8(p, a, h, t, limit):
    """The digest's derived values (the seed prints none). By hand from (6.2) and (6.5) with equal
    bandwidths: T_L = a(ah+1)/(p(2ah+1)), T_R = (ah+1)/(ap). (4,8,4): 264/260 and 33/32, both >= 1;
    (4,7,4): T_L = 203/228 = 0.89035; (4,8,3): T_R = 25/32; (2,3,2): T_L = 21/26 = 0.80769;
    (3,5,3): T_L = 80/93 = 0.86022. All five agree with the digest."""
    bound = uniform_throughput_bound(p, a, h)
    assert bound.t == pytest.approx(t, abs=5e-5)
    if limit == "local":
        assert bound.t == bound.t_local < 1 <= bound.t_global
    elif limit == "global":
        assert bound.t == bound.t_global < 1 <= bound.t_local
    assert bound.t_local == pytest.approx(a * (a * h + 1) / (p * (2 * a * h + 1)))
    assert bound.t_global == pytest.approx((a * h + 1) / (a * p))


def test_balance_conditions_and_bandwidths():
    assert uniform_throughput_bound(4, 8, 4)[3:] == (True, True)  # 8 >= 8, 4 >= 3.875
    assert uniform_throughput_bound(4, 7, 4)[3:] == (False, True)  # a B_L = 7 < 2 p B_p = 8
    assert uniform_throughput_bound(4, 8, 3)[3:] == (True, False)  # h B_R = 3 < p - 1/a = 3.875
    # Doubling the local bandwidth lifts the under-provisioned (4,7,4) to T = 1 and balances it.
    assert uniform_throughput_bound(4, 7, 4, b_l=2).t == 1.0 and uniform_throughput_bound(4, 7, 4, b_l=2).local_balanced
    # (6.6) is exactly T_R >= 1: h B_R >= (p - 1/a) B_p  <=>  (ah + 1)/(ap) >= 1.
    for p in range(1, 6):
        for a in range(1, 9):
            for h in range(1, 6):
                bound = uniform_throughput_bound(p, a, h)
                assert bound.global_balanced == (a * h + 1 >= a * p)


def test_facts_state_the_balance_and_the_bound():
    facts = dict(parse_topology("dragonfly:4,7,4").facts())
    assert facts["router radix"].startswith("14 ")
    assert facts["balance a B_L >= 2p B_p (Prisacari20 eq. 6.3)"].startswith("does not hold")
    assert facts["balance h B_R >= (p - 1/a) B_p (6.6)"].startswith("holds")
    assert facts["uniform-traffic bound T (6.8), minimal routing"].startswith("0.8904 ")
    assert facts["local links"].startswith("609 ") and facts["global links"].startswith("406 ")
    fewer = dict(parse_topology("dragonfly:2,4,2:groups=5").facts())
    assert fewer["global links"] == "20 (2 per router, 2 per group pair)"
    assert fewer["uniform-traffic bound T (6.8)"].startswith("not given")


# ----- specs --------------------------------------------------------------------------------
@pytest.mark.parametrize("spec, message", [
    ("dragonfly:4,8", "expected 3 comma-separated integers"),
    ("dragonfly:4,8,4,1", "expected 3 comma-separated integers"),
    ("dragonfly:0,8,4", "must be between 1 and"),
    ("dragonfly:4,0,4", "must be between 1 and"),
    ("dragonfly:4,x,4", "must be an integer"),
    ("dragonfly:4,8,-4", "must be between 1 and 4096, got -4"),
    ("dragonfly:4,8,4:colour=red", "unknown option 'colour'"),
    ("dragonfly:4,8,4:groups", "expected key=value"),
    ("dragonfly:4,8,4:arrangement=diagonal", "must be one of absolute, relative, circulant"),
    ("dragonfly:4,8,4:groups=34", "must be between 2 and 33, got 34"),
    ("dragonfly:4,8,4:groups=1", "must be between 2 and 33, got 1"),
    ("dragonfly:4,8,4:groups=0", "must be between 2 and 33, got 0"),
    ("dragonfly:4,8,4:groups=five", "must be an integer"),
    ("dragonfly:4,8,4:groups=5:groups=6", "given twice"),
    ("dragonfly:2,3,3:groups=9", "opposite group"),
    ("dragonfly:4096,4096,4096", "more than"),
    ("dragonfly:4097,1,1", "must be between 1 and 4096"),
])
def test_bad_specs_are_one_line_errors(assert_bad_spec, spec, message):
    assert_bad_spec(spec, message)


def test_canonical_spec_round_trips():
    for spec in ("dragonfly:4,8,4", "dragonfly:2,4,2:groups=5", "dragonfly:2,4,2:arrangement=circulant",
                 "dragonfly:2,4,2:groups=3:arrangement=relative"):
        assert parse_topology(spec).spec == spec
    assert parse_topology("dragonfly:4,8,4:groups=33:arrangement=absolute").spec == "dragonfly:4,8,4"
    relative = parse_topology("dragonfly:4,8,4:arrangement=relative:groups=33")
    assert relative.spec == "dragonfly:4,8,4:arrangement=relative"
    assert parse_topology("dragonfly:4,8,4").label() == "dragonfly(4,8,4)"
    circulant = parse_topology("dragonfly:2,4,2:groups=5:arrangement=circulant")
    assert circulant.label() == "dragonfly(2,4,2; 5 groups, circulant)"


# ----- commands -------------------------------------------------------------------------------
def test_topology_summary(run):
    code, out, _ = run("topology", "dragonfly:2,4,2")
    assert code == 0
    assert "dragonfly(2,4,2)  spec dragonfly:2,4,2" in out
    assert "terminals 72, routers 36, 324 directed channels" in out
    assert re.search(r"local\s+108\s+1", out) and re.search(r"global\s+72\s+1", out)
    assert "uniform-traffic bound T (6.8), minimal routing" in out and "1.0000 with equal bandwidths" in out


def test_topology_json_channels_match_the_network(run, tmp_path):
    target = tmp_path / "dragonfly.json"
    code, out, _ = run("topology", "dragonfly:2,4,2:arrangement=circulant", "--format", "json", "--out", target)
    assert code == 0 and out == ""
    doc = json.loads(target.read_text())
    network = parse_topology("dragonfly:2,4,2:arrangement=circulant").network()
    assert doc["family"] == "dragonfly" and doc["spec"] == "dragonfly:2,4,2:arrangement=circulant"
    assert doc["terminals"] == 72 and len(doc["nodes"]) == 72 + 36
    assert doc["nodes"][72] == {"id": 72, "name": "g0r0", "kind": "switch", "level": 1}
    channels = [(c["src"], c["src_port"], c["dst"], c["dst_port"]) for c in doc["channels"]]
    assert channels == list(zip(network.channel_src.tolist(), network.channel_src_port.tolist(),
                                network.channel_dst.tolist(), network.channel_dst_port.tolist()))
    assert [c["id"] for c in doc["channels"]] == list(range(network.num_channels))


def test_table_4_2_instance_files(run):
    files = sorted((REPO / "instances" / "table4.2").glob("*.toml"))
    assert {f.name for f in files} == {f"dragonfly-{p}-{a}-{h}.toml" for p, a, h in TABLE_4_2}
    for path in files:
        p, a, h = map(int, path.stem.split("-")[1:])
        code, out, err = run("topology", path)
        assert code == 0, err
        assert f"spec dragonfly:{p},{a},{h}\n" in out and f"terminals {TABLE_4_2[(p, a, h)]}," in out


@pytest.mark.parametrize("arrangement", ARRANGEMENTS)
def test_minimal_routes_on_each_arrangement_pass_check(run, tmp_path, arrangement):
    target = tmp_path / "routes.json"
    spec = f"dragonfly:1,3,2:arrangement={arrangement}"
    code, _, err = run("route", spec, "--traffic", "a2a-lat", "--router", "minimal", "--out", target, "--quiet")
    assert code == 0, err
    code, out, _ = run("check", target)
    assert code == 0 and out.splitlines()[-1].startswith("OK"), out


def test_model_uniform_command(run):
    """`synth model uniform`: the (6.1)-(6.8) quantities, the limiting term and (6.3), (6.6)."""
    code, out, _ = run("model", "uniform", "dragonfly:4,7,4")
    assert code == 0
    values = {line.split()[0]: line.split()[-1] for line in out.splitlines()[2:8]}
    assert values == {"N": "812", "P_L": "1.1232", "T_L": "0.8904", "P_R": "0.9655", "T_R": "1.0357", "T": "0.8904"}
    assert "bound set by T_L (local links)" in out and "(6.3): does not hold (7 vs 8)" in out
    code, out, _ = run("model", "uniform", "dragonfly:4,8,3")
    assert code == 0 and "T_R (global links)" in out and "(6.6): does not hold (3 vs 3.875)" in out
    # Doubling the global bandwidth balances it (6.6: 6 >= 3.875) and T = 1.
    code, out, _ = run("model", "uniform", "dragonfly:4,8,3", "--br", "2")
    assert code == 0 and "T         min(1, T_L, T_R)  (6.8)     1.0000" in out and "(6.6): holds" in out
    code, out, _ = run("model", "uniform", REPO / "instances" / "table4.2" / "dragonfly-4-8-4.toml")
    assert code == 0 and "1056 terminals" in out


@pytest.mark.parametrize("argv, message", [
    (["dragonfly:4,8,3:groups=5"], "for the maximum size, a h + 1 = 25 groups, not 5"),
    (["hyperx:3,3"], "for dragonflies (Prisacari20 ch.6), not hyperx"),
    (["dragonfly:4,8,3", "--bl", "nan"], "--bl must be a positive number"),
    (["dragonfly:4,8,3", "--bp", "0"], "--bp must be a positive number"),
    (["dragonfly:4,8,3", "--br", "x"], "--br must be a positive number"),
    (["dragonfly:4,8,3", "--br", "1_0"], "--br must be a positive number"),
    (["dragonfly:4,8,3", "--br", "5e-324"], "--br must be at least 1e-06"),
    (["dragonfly:4,8,3", "--br", "2e6"], "--br must be at most 1e+06"),
])
def test_model_uniform_refuses(run, argv, message):
    code, out, err = run("model", "uniform", *argv)
    assert code == 2 and message in err and err.count("\n") == 1 and out == ""
