"""Kautz graphs K(D, K): directed, in- and out-degree D, diameter K, one terminal per node
([Pham26]; the seed uses K(D, 2), e.g. K(16,2) with 272 nodes).

Spec: `kautz:D[,K]`, K defaulting to 2 (and left out of the canonical spec when 2); D >= 1,
1 <= K <= 64.

Nodes are the words x_1..x_K over the letters 0..D with x_i != x_{i+1}: (D+1) D^(K-1) of them.
Word x has a directed link to every word x_2..x_K z (z != x_K): (D+1) D^K links; in K(D,2),
xy -> yz, and xy <-> yx is a pair of opposite links.

Numbering: nodes (routers) in lexicographic order of their words; the index of x_1..x_K is
x_1 D^(K-1) + sum_{i>=2} a_i D^(K-i) with a_i = x_i - [x_i > x_{i-1}] the rank of x_i among the
D letters allowed after x_{i-1}. Node x_1..x_K is named `k<x_1>.<x_2>...` (K(16,2): `k0.1`,
`k0.2`, ..., `k16.15`); terminal t sits on router t. Links are listed by source, then
destination (the D successors of a node are consecutive numbers), as directed links
(RouterGraph(directed=True)): one channel each, class `link`. Ports of a router: 1 its terminal,
then one per incident link in link order, i.e. in-links from lower-numbered nodes, its D
out-links, in-links from higher-numbered nodes. Terminal links have bandwidth D, the node's total
outgoing link bandwidth (Pham26's fair-comparison rule: a node's bandwidth is divided over its ports).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.core.finite_field import MAX_ORDER, galois_field, prime_power
from synth.core.validate import show
from synth.topology.direct import RouterGraph, build_direct_network
from synth.topology.family import KAUTZ_FORMS, Family, Topology, parse_spec

SYNTAX = "kautz:D[,K]"
MAX_LENGTH = 64


@dataclass(frozen=True)
class Kautz(Topology):
    family = "kautz"
    d: int
    k: int = 2

    def __post_init__(self) -> None:
        if not 1 <= self.d:
            raise SynthError(f"{show(self.spec)}: the degree D must be at least 1, got {self.d}")
        if not 1 <= self.k <= MAX_LENGTH:
            raise SynthError(f"{show(self.spec)}: the word length K must be between 1 and {MAX_LENGTH}, got {self.k}")
        self.check_size(2 * self.num_nodes, 2 * self.num_nodes + self.num_links)

    @property
    def router_transitive(self) -> bool:  # type: ignore[override]
        """K(d, 2): permuting the d + 1 letters takes any word xy to any other (not so for longer words: xyx, xyz)."""
        return self.k <= 2

    @property
    def spec(self) -> str:
        return f"kautz:{self.d}" if self.k == 2 else f"kautz:{self.d},{self.k}"

    def label(self) -> str:
        return f"Kautz K({self.d},{self.k})"

    @property
    def num_nodes(self) -> int:
        return (self.d + 1) * self.d ** (self.k - 1)

    @property
    def num_links(self) -> int:
        return self.num_nodes * self.d

    @property
    def num_terminals(self) -> int:
        return self.num_nodes

    @property
    def diameter(self) -> int:
        return self.k if self.d >= 2 else 1  # K(1,K) is two nodes linked both ways

    def words(self) -> np.ndarray:
        """(nodes, K) letters of every node's word, nodes in index order."""
        d, k = self.d, self.k
        index = np.arange(self.num_nodes, dtype=np.int64)
        letters = np.empty((self.num_nodes, k), dtype=np.int64)
        letters[:, 0] = index // d ** (k - 1)
        for i in range(1, k):
            rank = (index // d ** (k - 1 - i)) % d
            letters[:, i] = rank + (rank >= letters[:, i - 1])
        return letters

    def word_index(self, letters) -> np.ndarray:
        """Index of words given as (..., K) letters (the inverse of `words`)."""
        letters = np.asarray(letters, dtype=np.int64)
        index = letters[..., 0].copy()
        for i in range(1, self.k):
            index = index * self.d + letters[..., i] - (letters[..., i] > letters[..., i - 1])
        return index

    def links(self) -> tuple[np.ndarray, np.ndarray]:
        """(src, dst) of every directed link, sorted by source, then destination."""
        d, k, n = self.d, self.k, self.num_nodes
        src = np.repeat(np.arange(n, dtype=np.int64), d)
        j = np.tile(np.arange(d, dtype=np.int64), n)
        if k == 1:  # complete digraph on D + 1 nodes
            return src, j + (j >= src)
        span = d ** (k - 1)
        first, rest = src // span, src % span
        second_rank = rest // (span // d)
        second = second_rank + (second_rank >= first)
        # The successor x_2..x_K z keeps the ranks a_3..a_K and ends with the rank of z after x_K.
        return src, second * span + (rest % (span // d)) * d + j

    def build_network(self):
        names = [f"k{'.'.join(map(str, word))}" for word in self.words().tolist()]
        src, dst = self.links()
        graph = RouterGraph(names, np.ones(self.num_nodes, dtype=np.int64), src, dst,
                            np.zeros(len(src), dtype=np.int64), ("link",), directed=True, terminal_bandwidth="degree")
        return build_direct_network(self.spec, self.family, graph)

    def translations(self) -> list[np.ndarray] | None:
        """Letter permutations acting freely on the words, so symmetric synthesis applies
        (synth.synthesis.symmetry): a permutation of the letters maps x_1..x_K to its image, an
        automorphism (x_i != x_{i+1} is kept). A letter permutation fixing two distinct letters
        then fixes every word of K >= 2 letters if it is the identity on all letters, so a group
        in which only the identity fixes two letters acts freely:
        - K >= 2 and D + 1 = q a prime power: the affine maps x -> a x + b of GF(q) (a != 0),
          sharply 2-transitive, so |G| = q (q - 1) = D (D + 1) and on K(D,2) it is regular (one
          orbit: a translation moves any node to any other); generated by x -> x + p^i (the
          additive group's basis) and x -> xi x (xi primitive);
        - else (K = 1, the complete digraph; or D + 1 not a prime power, e.g. K(5,2): no sharply
          2-transitive group on 6 letters exists): the cyclic shift x -> x + 1 mod D + 1, which
          fixes no letter, so D^(K-1) orbits of D + 1 words."""
        q = self.d + 1
        power = prime_power(q)
        if self.k == 1 or power is None or q > MAX_ORDER:
            letters = [(np.arange(q, dtype=np.int64) + 1) % q]
        else:
            field = galois_field(q)
            p, m = power
            letters = [field.add[np.arange(q), p ** i] for i in range(m)]
            if q > 2:
                letters.append(field.mul[np.arange(q), field.primitive])
        words = self.words()
        n = self.num_terminals
        return [np.concatenate([moved, n + moved]) for moved in
                (self.word_index(np.asarray(perm, dtype=np.int64)[words]) for perm in letters)]

    def kautz_degree(self) -> int | None:
        return self.d if self.k == 2 else None

    def closed_forms(self) -> frozenset[str]:
        return frozenset({KAUTZ_FORMS}) if self.k == 2 else frozenset()

    def facts(self) -> list[tuple[str, str]]:
        d, k = self.d, self.k
        facts = [("nodes", f"{self.num_nodes} ((D+1) D^(K-1); one router and one terminal each)"),
                 ("directed links", f"{self.num_links} ((D+1) D^K)"),
                 ("degree", f"in {d}, out {d}"),
                 ("router radix", f"{2 * d + 1} (D in, D out, 1 terminal)"),
                 ("terminal bandwidth", f"{d} (the node's outgoing link bandwidth, Pham26's fair comparison)"),
                 ("diameter", str(self.diameter))]
        if k == 2 and d >= 2:
            facts.append(("nodes at distance 1 / 2", f"{d} / {d * d - 1} (shortest paths unique)"))
        return facts


def parse_kautz(text: str) -> Kautz:
    parts = parse_spec("kautz", text, SYNTAX, (1, 2), maximum=1 << 20)
    d, k = parts.numbers if len(parts.numbers) == 2 else (parts.numbers[0], 2)
    return Kautz(d, k)


def kautz_candidates(shape) -> list[str]:
    """K(D, K) with D the out-degree and (D + 1) D^(K-1) routers: a one-way graph, one terminal per router."""
    degree = shape.degree(True)
    if not shape.directed or shape.p != 1 or degree < 2:
        return []
    sizes = [(k, (degree + 1) * degree ** (k - 1)) for k in range(1, MAX_LENGTH + 1)]
    return [f"kautz:{degree},{k}" for k, routers in sizes if shape.admits(routers, routers * degree)]


FAMILY = Family("kautz", SYNTAX, "Kautz graph K(D,K) (Pham26): directed, degree D, diameter K, one terminal "
                "per node", parse_kautz, candidates=kautz_candidates)
