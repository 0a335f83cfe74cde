"""Slim Fly (synth.topology.slimfly, with synth.core.finite_field) and Kautz graphs
(synth.topology.kautz) against their definitions, built here independently with networkx and a
test-local finite field; the digests' numbers (Prisacari20 sec. 7.2, Pham26); the commands end to end."""

from __future__ import annotations

import itertools
import json
import math

import networkx as nx
import numpy as np
import pytest

from helpers import REPO
from synth.core.errors import SynthError
from synth.core.finite_field import galois_field, prime_power
from synth.topology import parse_topology



# ----- a test-local GF(q): polynomials as tuples, irreducibility by trial division -----------------

def poly_mod(a: list[int], f: tuple[int, ...], p: int) -> list[int]:
    """Remainder of a modulo the monic f (coefficients low to high), over Z/p."""
    a = [c % p for c in a]
    n = len(f) - 1
    for k in range(len(a) - 1, n - 1, -1):
        c = a[k]
        if c:
            for i in range(n + 1):
                a[k - n + i] = (a[k - n + i] - c * f[i]) % p
    return (a + [0] * n)[:n] if n else []


def monic_polys(p: int, degree: int):
    """Monic polynomials of the degree, in the order of their lower coefficients as base-p digits."""
    for lower in range(p**degree):
        yield tuple((lower // p**i) % p for i in range(degree)) + (1,)


def is_irreducible(f: tuple[int, ...], p: int) -> bool:
    n = len(f) - 1
    return not any(not any(poly_mod(list(f), g, p)) for d in range(1, n // 2 + 1) for g in monic_polys(p, d))


class RefField:
    """GF(p^n): element e <-> coefficients of e's base-p digits; the smallest irreducible modulus
    and the smallest element of order q - 1 (synth's documented choices), found by brute force."""

    def __init__(self, q: int):
        p, n = prime_power(q)
        self.q, self.p, self.n = q, p, n
        self.modulus = next(f for f in monic_polys(p, n) if is_irreducible(f, p))
        self.primitive = next(g for g in range(1, q) if len({self.pow(g, k) for k in range(q - 1)}) == q - 1)

    def digits(self, e: int) -> list[int]:
        return [(e // self.p**i) % self.p for i in range(self.n)]

    def number(self, digits) -> int:
        return sum(c * self.p**i for i, c in enumerate(digits))

    def add(self, a: int, b: int) -> int:
        return self.number([(x + y) % self.p for x, y in zip(self.digits(a), self.digits(b))])

    def neg(self, a: int) -> int:
        return self.number([(-x) % self.p for x in self.digits(a)])

    def mul(self, a: int, b: int) -> int:
        da, db = self.digits(a), self.digits(b)
        product = [0] * (2 * self.n - 1)
        for i, x in enumerate(da):
            for j, y in enumerate(db):
                product[i + j] += x * y
        return self.number(poly_mod(product, self.modulus, self.p))

    def pow(self, a: int, k: int) -> int:
        result = 1
        for _ in range(k):
            result = self.mul(result, a)
        return result


def digest_generator_sets(field: RefField) -> tuple[set[int], set[int]]:
    """X and X' exactly as the digest writes them (Prisacari20 sec. 7.2, hierarchical-dragonfly-diameter2.md)."""
    q = field.q
    delta = [d for d in (-1, 0, 1) if (q - d) % 4 == 0][0]
    w = (q - delta) // 4
    if delta == 1:
        ex, ex_prime = range(0, q - 2, 2), range(1, q - 1, 2)  # 1, xi^2..xi^(q-3); xi, xi^3..xi^(q-2)
    elif delta == 0:
        ex, ex_prime = range(0, q - 1, 2), range(1, q, 2)  # 1..xi^(q-2); xi..xi^(q-1)
    else:
        ex = list(range(0, 2 * w - 1, 2)) + list(range(2 * w - 1, 4 * w - 2, 2))  # ..xi^(2w-2), xi^(2w-1)..xi^(4w-3)
        ex_prime = list(range(1, 2 * w, 2)) + list(range(2 * w, 4 * w - 1, 2))  # xi..xi^(2w-1), xi^(2w)..xi^(4w-2)
    xi = field.primitive
    return {field.pow(xi, k) for k in ex}, {field.pow(xi, k) for k in ex_prime}


def reference_slimfly(q: int) -> nx.Graph:
    """The MMS graph from the digest's rules, nodes named as synth names them (a.x.y, b.m.c)."""
    f = RefField(q)
    x_set, x_prime = digest_generator_sets(f)
    g = nx.Graph()
    g.add_nodes_from([f"a.{x}.{y}" for x in range(q) for y in range(q)])
    g.add_nodes_from([f"b.{m}.{c}" for m in range(q) for c in range(q)])
    for a, b, b2 in itertools.product(range(q), repeat=3):
        difference = f.add(b, f.neg(b2))
        if difference in x_set:
            g.add_edge(f"a.{a}.{b}", f"a.{a}.{b2}", kind="intra-0")
        if difference in x_prime:
            g.add_edge(f"b.{a}.{b}", f"b.{a}.{b2}", kind="intra-1")
    for m, c, x in itertools.product(range(q), repeat=3):
        g.add_edge(f"a.{x}.{f.add(f.mul(m, x), c)}", f"b.{m}.{c}", kind="cross")
    return g


def router_graph(topology, directed: bool = False):
    """The routers and router links of synth's network, by node name, with channel classes."""
    network = topology.network()
    n = network.num_terminals
    g = nx.DiGraph() if directed else nx.Graph()
    g.add_nodes_from(network.node_names[n:])
    links = np.flatnonzero((network.channel_src >= n) & (network.channel_dst >= n))
    names = network.node_names
    for c in links.tolist():
        g.add_edge(names[network.channel_src[c]], names[network.channel_dst[c]],
                   kind=network.class_names[network.channel_class[c]])
    return g, len(links)


def has_diameter_two(g: nx.Graph) -> bool:
    a = nx.to_numpy_array(g)  # floats: the products run in BLAS (exact for these small counts)
    reach = a + a @ a + np.eye(len(a))
    return bool((reach > 0).all()) and not (a + np.eye(len(a)) > 0).all()


# ----- finite fields ------------------------------------------------------------------------------

@pytest.mark.parametrize("q", [2, 3, 4, 5, 7, 8, 9, 16, 25, 27, 49])
def test_field_tables_match_polynomial_arithmetic(q):
    field, ref = galois_field(q), RefField(q)
    assert field.modulus == ref.modulus and field.primitive == ref.primitive
    elements = range(q)
    assert field.add.tolist() == [[ref.add(a, b) for b in elements] for a in elements]
    assert field.mul.tolist() == [[ref.mul(a, b) for b in elements] for a in elements]
    assert sorted(field.power.tolist()) == list(range(1, q))  # xi generates the multiplicative group
    assert field.neg.tolist() == [ref.neg(a) for a in elements]


def test_field_moduli_as_documented():
    assert [galois_field(q).modulus_text() for q in (4, 8, 9, 16, 25, 27)] == \
        ["x^2 + x + 1", "x^3 + x + 1", "x^2 + 1", "x^4 + x + 1", "x^2 + 2", "x^3 + 2x + 1"]
    for q in (6, 10, 12, 1):
        with pytest.raises(SynthError, match="not a prime power"):
            galois_field(q)


# ----- Slim Fly -----------------------------------------------------------------------------------

@pytest.mark.parametrize("q", [3, 4, 5, 7, 8, 9, 11, 13])
def test_slimfly_matches_the_definition(q):
    topology = parse_topology(f"slimfly:{q}")
    ref = reference_slimfly(q)
    got, channels = router_graph(topology)
    assert channels == 2 * got.number_of_edges()  # every link is two opposite channels, no parallel links
    assert set(got.nodes) == set(ref.nodes)
    by_pair = lambda g: {frozenset(e): kind for *e, kind in g.edges(data="kind")}  # noqa: E731
    assert by_pair(got) == by_pair(ref)
    # Numbering: (0,x,y) -> x q + y, (1,m,c) -> q^2 + m q + c; terminals p per router, router by router.
    network, n, p = topology.network(), topology.num_terminals, topology.p
    names = network.node_names[n:]
    assert names[:3] == ["a.0.0", "a.0.1", "a.0.2"] and names[q * q] == "b.0.0" and names[-1] == f"b.{q - 1}.{q - 1}"
    term = network.class_names.index("terminal")
    inject = np.flatnonzero((network.channel_class == term) & (network.channel_src < n))
    assert (network.channel_dst[inject] - n == network.channel_src[inject] // p).all()
    assert (network.channel_bandwidth == 1).all()


@pytest.mark.parametrize("q", [3, 4, 5, 7, 8, 9, 11, 13, 16, 17, 19, 23, 25, 27])
def test_generator_sets_are_symmetric(q):
    ref = RefField(q)
    x_set, x_prime = digest_generator_sets(ref)
    delta = q - 4 * ((q + 1) // 4)
    w = (q - delta) // 4
    for generators in (x_set, x_prime):
        assert len(generators) == 2 * w and 0 not in generators
        assert {ref.neg(s) for s in generators} == generators  # closed under negation: an undirected graph
    assert x_prime == {ref.mul(ref.primitive, s) for s in x_set}
    from synth.topology.slimfly import generator_sets
    assert [set(s.tolist()) for s in generator_sets(q)] == [x_set, x_prime]


@pytest.mark.parametrize("q", [4, 8, 9, 16, 25, 27])
def test_prime_powers_are_regular_of_diameter_two(q):
    topology = parse_topology(f"slimfly:{q}")
    g, _ = router_graph(topology)
    delta = {4: 0, 8: 0, 9: 1, 16: 0, 25: 1, 27: -1}[q]
    assert g.number_of_nodes() == 2 * q * q
    assert {d for _, d in g.degree} == {(3 * q - delta) // 2}
    assert has_diameter_two(g)
    if q <= 9:
        assert nx.diameter(g) == 2
    assert dict(topology.facts())["diameter"] == "2"


def router_radix(network) -> int:
    n = network.num_terminals
    at_routers = network.channel_src >= n
    return int(network.channel_src_port[at_routers].max())


def test_digest_sizes():
    five = parse_topology("slimfly:5")
    g, _ = router_graph(five)
    assert g.number_of_nodes() == 50 and {d for _, d in g.degree} == {7} and nx.diameter(g) == 2
    for spec, terminals, radix in (("slimfly:13:p=9", 3042, 28), ("slimfly:13:p=10", 3380, 29)):
        topology = parse_topology(spec)
        network = topology.network()
        assert (network.num_switches, network.num_terminals, router_radix(network)) == (338, terminals, radix)
        assert topology.degree == 19 and dict(topology.facts())["router radix r' + p"] == str(radix)
    # Prisacari20 sec. 7.2: the cost per endpoint for q = 13 (p = 10: 2.9 ports, 1.95 links; p = 9: 3.11, 2.05).
    ports, links = parse_topology("slimfly:13").network().cost_per_endpoint()
    assert (round(ports, 2), round(links, 2)) == (2.9, 1.95)
    ports, links = parse_topology("slimfly:13:p=9").network().cost_per_endpoint()
    assert (round(ports, 2), round(links, 2)) == (3.11, 2.06)  # 2.0555...: the seed truncates to 2.05


def test_q23_minimal_path_diversity():
    """Prisacari20 sec. 7.3: for q = 23, non-adjacent router pairs have about 1.1 minimal paths on average, at most 8."""
    topology = parse_topology("slimfly:23")
    g, _ = router_graph(topology)
    a = nx.to_numpy_array(g)
    common = (a @ a).round().astype(np.int64)
    far = (a == 0) & ~np.eye(len(a), dtype=bool)
    assert (common[far] >= 1).all()  # diameter 2: the paths are the common neighbours
    mean, largest = common[far].mean(), int(common[far].max())
    assert round(mean, 3) == 1.100 and largest == 8
    diameter, synth_mean, synth_max, _ = topology.path_diversity
    assert diameter == 2 and math.isclose(synth_mean, mean) and synth_max == largest
    assert dict(topology.facts())["minimal paths between non-adjacent routers"] == f"mean {mean:.4f}, max 8"


def test_slimfly_spec_label_and_ports():
    assert parse_topology("slimfly:13:p=10").spec == "slimfly:13"
    assert parse_topology("slimfly:13:p=9").spec == "slimfly:13:p=9"
    assert parse_topology("slimfly:13:p=9").label() == "Slim Fly MMS(q=13, p=9)"
    assert parse_topology("slimfly:27").p == 21 and parse_topology("slimfly:4").p == 3
    topology = parse_topology("slimfly:5")
    assert topology.hierarchy() is None
    network = topology.network()
    n = network.num_terminals
    # Ports per router: p terminal ports, then its neighbours in increasing router number.
    for router in (0, 7, 49):
        out = np.flatnonzero(network.channel_src == n + router)
        ports = network.channel_src_port[out]
        assert sorted(ports.tolist()) == list(range(1, topology.p + topology.degree + 1))
        links = out[ports > topology.p]
        assert (np.diff(network.channel_dst[links[np.argsort(network.channel_src_port[links])]]) > 0).all()


# ----- Kautz --------------------------------------------------------------------------------------

def reference_kautz(d: int, k: int) -> nx.DiGraph:
    words = sorted(w for w in itertools.product(range(d + 1), repeat=k) if all(a != b for a, b in zip(w, w[1:])))
    g = nx.DiGraph()
    g.add_nodes_from("k" + ".".join(map(str, w)) for w in words)
    for x in words:
        for y in words:
            if x[1:] == y[:-1] and (k > 1 or x != y):
                g.add_edge("k" + ".".join(map(str, x)), "k" + ".".join(map(str, y)))
    return g, ["k" + ".".join(map(str, w)) for w in words]


@pytest.mark.parametrize("d, k", [(1, 2), (2, 1), (2, 2), (3, 2), (4, 2), (2, 3), (3, 3), (2, 4), (5, 2)])
def test_kautz_matches_the_definition(d, k):
    topology = parse_topology(f"kautz:{d},{k}")
    ref, order = reference_kautz(d, k)
    got, channels = router_graph(topology, directed=True)
    network = topology.network()
    assert network.node_names[network.num_terminals:] == order  # words in lexicographic order
    assert channels == got.number_of_edges() == (d + 1) * d**k  # one channel per directed link
    assert set(got.edges) == set(ref.edges)
    assert {deg for _, deg in got.in_degree} == {deg for _, deg in got.out_degree} == {d}
    assert nx.diameter(got) == (k if d >= 2 else 1)
    assert dict(topology.facts())["diameter"] == str(k if d >= 2 else 1)
    # One terminal per router, injection and ejection at bandwidth D (Pham26's fair-comparison rule).
    n = network.num_terminals
    assert n == network.num_switches == (d + 1) * d ** (k - 1)
    term = network.channel_class == network.class_names.index("terminal")
    assert (network.channel_bandwidth[term] == d).all() and (network.channel_bandwidth[~term] == 1).all()
    assert ((network.channel_src[term] < n) == (network.channel_dst[term] - n == network.channel_src[term])).all()
    # Ports: 1 the terminal, then in-links from lower-numbered nodes, the D out-links (successors in
    # increasing order), in-links from higher-numbered nodes.
    for router in range(0, n, max(1, n // 5)):
        node = n + router
        into = np.flatnonzero((network.channel_dst == node) & ~term)
        out = np.flatnonzero((network.channel_src == node) & ~term)
        ports = {int(network.channel_dst_port[c]): ("in", int(network.channel_src[c])) for c in into}
        ports |= {int(network.channel_src_port[c]): ("out", int(network.channel_dst[c])) for c in out}
        listed = [ports[k] for k in sorted(ports)]
        assert sorted(ports) == list(range(2, 2 + 2 * d))
        lower = sum(1 for kind, other in listed if kind == "in" and other < node)
        assert [kind for kind, _ in listed] == ["in"] * lower + ["out"] * d + ["in"] * (d - lower)
        successors = [other for kind, other in listed if kind == "out"]
        assert successors == sorted(successors)


@pytest.mark.parametrize("d, size", [(2, 6), (3, 12), (4, 20), (8, 72), (16, 272), (32, 1056), (64, 4160)])
def test_kautz_sizes(d, size):
    topology = parse_topology(f"kautz:{d}")
    network = topology.network()
    assert topology.spec == f"kautz:{d}" and topology.label() == f"Kautz K({d},2)" and topology.hierarchy() is None
    assert network.num_terminals == network.num_switches == size == d * (d + 1)
    n = network.num_terminals
    links = (network.channel_src >= n) & (network.channel_dst >= n)
    assert int(links.sum()) == (d + 1) * d * d
    assert (np.bincount(network.channel_src[links] - n) == d).all()
    assert (np.bincount(network.channel_dst[links] - n) == d).all()
    # Opposite links are exactly the pairs xy <-> yx: one per node.
    pairs = set(zip(network.channel_src[links].tolist(), network.channel_dst[links].tolist()))
    opposite = [(u, v) for u, v in pairs if (v, u) in pairs]
    names = network.node_names
    assert len(opposite) == size and all(names[u][1:].split(".")[::-1] == names[v][1:].split(".") for u, v in opposite)
    a = np.zeros((size, size))
    a[network.channel_src[links] - n, network.channel_dst[links] - n] = 1
    paths = (a @ a).round().astype(np.int64)
    off = ~np.eye(size, dtype=bool)
    # Diameter 2 with unique shortest paths: every pair not linked has exactly one 2-hop path.
    assert (paths[off & (a == 0)] == 1).all()
    # From any node: d at distance 1, d^2 - 1 at distance 2.
    assert ((off & (a == 0)).sum(axis=1) == d * d - 1).all()


@pytest.mark.parametrize("d", [2, 3, 4])
def test_kautz_shortest_paths_are_unique(d):
    got, _ = router_graph(parse_topology(f"kautz:{d}"), directed=True)
    for u, v in itertools.permutations(got.nodes, 2):
        assert len(list(nx.all_shortest_paths(got, u, v))) == 1
    for node in got.nodes:  # xy <-> yx
        x, y = node[1:].split(".")
        assert got.has_edge(node, f"k{y}.{x}") and got.has_edge(f"k{y}.{x}", node)


def test_kautz_spec():
    assert parse_topology("kautz:16,2").spec == "kautz:16"
    assert parse_topology("kautz:3,3").spec == "kautz:3,3" and parse_topology("kautz:3,3").label() == "Kautz K(3,3)"
    facts = dict(parse_topology("kautz:16").facts())
    assert facts["nodes"].startswith("272 ") and facts["directed links"].startswith("4352 ")
    assert facts["degree"] == "in 16, out 16" and facts["diameter"] == "2"


# ----- errors and the commands --------------------------------------------------------------------

@pytest.mark.parametrize("spec, message", [
    ("slimfly:6", "q = 6 is not a prime power (2 * 3)"),
    ("slimfly:10", "q = 10 is not a prime power (2 * 5)"),
    ("slimfly:12", "q = 12 is not a prime power (2^2 * 3)"),
    ("slimfly:2", "q = 2 is not of the form 4w + delta"),
    ("slimfly:0", "must be between 1 and"),
    ("slimfly:5:p=0", "option p of 'slimfly:5:p=0' must be between 1 and"),
    ("slimfly:5:x=1", "unknown option 'x'"),
    ("slimfly:5,3", "expected 1 comma-separated integers"),
    ("slimfly:97", "more than the"),
    ("kautz:0", "parameter 1 of 'kautz:0' must be between 1 and"),
    ("kautz:3,0", "parameter 2 of 'kautz:3,0' must be between 1 and"),
    ("kautz:3,65", "word length K must be between 1 and 64"),
    ("kautz:2,30", "more than the"),
    ("kautz:2,2,2", "expected 1 to 2 comma-separated integers"),
])
def test_bad_specs_are_one_line_errors(assert_bad_spec, spec, message):
    assert_bad_spec(spec, message)


def test_topology_command(run, tmp_path):
    code, out, _ = run("topology", "slimfly:5")
    assert code == 0
    assert "Slim Fly MMS(q=5, p=4)  spec slimfly:5" in out and "terminals 200, routers 50" in out
    for cls in ("intra-0", "intra-1", "cross"):
        assert cls in out
    target = tmp_path / "sf.json"
    code, out, _ = run("topology", "slimfly:5", "--format", "json", "--out", target)
    assert code == 0 and out == ""
    doc = json.loads(target.read_text())
    assert doc["format"] == "synth-topology/1" and doc["spec"] == "slimfly:5" and doc["family"] == "slimfly"
    assert doc["terminals"] == 200 and len(doc["nodes"]) == 250 and len(doc["channels"]) == 2 * 200 + 2 * 175
    code, out, _ = run("topology", "kautz:3")
    assert code == 0 and "Kautz K(3,2)  spec kautz:3" in out


@pytest.mark.parametrize("path, spec, terminals", [
    ("ch7/slimfly-q13-p9.toml", "slimfly:13:p=9", 3042),
    ("ch7/slimfly-q13-p10.toml", "slimfly:13", 3380),
    ("kautz/kautz-16-2.toml", "kautz:16", 272),
])
def test_instances(run, path, spec, terminals):
    code, out, err = run("topology", REPO / "instances" / path)
    assert code == 0, err
    assert f"spec {spec}" in out and f"terminals {terminals}," in out


def test_counts_before_building(monkeypatch):
    """The size guard answers from the parameters: no field or graph is built for a refused spec."""
    import synth.topology.slimfly as slimfly

    def refuse(q):
        raise AssertionError(f"GF({q}) built for a refused network")

    monkeypatch.setattr(slimfly, "galois_field", refuse)
    with pytest.raises(SynthError, match="terminals, more than the"):
        parse_topology("slimfly:97")
