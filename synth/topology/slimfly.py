"""Slim Fly: the McKay-Miller-Siran (MMS) graph of diameter two, p terminals per router
([Prisacari20] sec. 7.2.1.2; Besta and Hoefler, SC14).

Spec: `slimfly:Q[:p=P]`, Q a prime power q = 4w + delta with w >= 1 and delta in {-1, 0, 1}
(every prime power but 2: q = 2 mod 4 only for q = 2). P defaults to ceil(r'/2); Prisacari20 also
evaluates floor(r'/2) (q = 13: p = 10 and p = 9).

Construction, all arithmetic in GF(q) (synth.core.finite_field: elements 0..q-1 are the
integers mod q for prime q, else polynomial coefficient vectors read as base-p digits; xi is the
smallest primitive element). Generator sets, by delta:
  delta =  1: X = {1, xi^2, ..., xi^(q-3)},  X' = {xi, xi^3, ..., xi^(q-2)}
  delta =  0: X = {1, xi^2, ..., xi^(q-2)},  X' = {xi, xi^3, ..., xi^(q-1)}
  delta = -1: X = {1, xi^2, ..., xi^(2w-2), xi^(2w-1), xi^(2w+1), ..., xi^(4w-3)},
              X' = {xi, xi^3, ..., xi^(2w-1), xi^(2w), xi^(2w+2), ..., xi^(4w-2)}
(X' = xi X in every case; each has 2w elements and is closed under negation.) Routers (0,x,y) and
(1,m,c): (0,x,y)-(0,x,y') iff y - y' in X; (1,m,c)-(1,m,c') iff c - c' in X' (the seed's
"(1,c,c')" is a misprint); (0,x,y)-(1,m,c) iff y = m x + c. R = 2q^2 routers of network degree
r' = q + 2w = (3q - delta)/2, router radix r' + p.

Numbering: router (0,x,y) is x q + y, named `a.x.y`; (1,m,c) is q^2 + m q + c, named `b.m.c`
(field elements by their numbers). Terminals router by router (p each, bandwidth 1). Links are
listed by (lower router, higher router), so a router's ports are its p terminal ports, then its
neighbours in increasing router number. Channel classes: `intra-0` (inside subgraph 0, links
(0,x,y)-(0,x,y')), `intra-1` (inside subgraph 1) and `cross` (between the subgraphs).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from synth.core.errors import SynthError
from synth.core.finite_field import FiniteField, factorization, galois_field, prime_power
from synth.core.validate import show
from synth.topology.direct import RouterGraph, build_direct_network
from synth.topology.family import Family, Topology, option_int, parse_spec

SYNTAX = "slimfly:Q[:p=P]"
CLASSES = ("intra-0", "intra-1", "cross")
_DIVERSITY_ROWS = 1 << 22  # entries of one block of rows of A @ A in `path_diversity`


def mms_parameters(q: int) -> tuple[int, int]:
    """(w, delta) with q = 4w + delta and delta in {-1, 0, 1} for every prime power q >= 3."""
    w = (q + 1) // 4
    return w, q - 4 * w


def generator_exponents(q: int) -> tuple[np.ndarray, np.ndarray]:
    """Exponents k of xi^k in X and X' (before reduction mod q - 1)."""
    w, delta = mms_parameters(q)
    if delta == 1:
        x = np.arange(0, q - 2, 2)
    elif delta == 0:
        x = np.arange(0, q - 1, 2)
    else:
        x = np.concatenate([np.arange(0, 2 * w - 1, 2), np.arange(2 * w - 1, 4 * w - 2, 2)])
    return x, x + 1


def generator_sets(q: int, field: FiniteField | None = None) -> tuple[np.ndarray, np.ndarray]:
    """X and X' as sorted arrays of field elements."""
    field = galois_field(q) if field is None else field
    ex, ex_prime = generator_exponents(q)
    return np.sort(field.power[ex % (q - 1)]), np.sort(field.power[ex_prime % (q - 1)])


@dataclass(frozen=True)
class SlimFly(Topology):
    family = "slimfly"
    q: int
    p: int

    def __post_init__(self) -> None:
        if prime_power(self.q) is None:
            factors = f" ({factorization(self.q)})" if self.q > 1 else ""
            raise SynthError(f"{show(self.spec)}: q = {self.q} is not a prime power{factors}; "
                             f"the MMS graph needs the field GF(q)")
        if self.q < 3:
            raise SynthError(f"{show(self.spec)}: q = 2 is not of the form 4w + delta with w >= 1 and delta in "
                             f"{{-1, 0, 1}}; the smallest Slim Fly has q = 3")
        self.check_size(self.num_terminals + self.num_routers, 2 * self.num_terminals + self.num_routers * self.degree)

    @classmethod
    def default_p(cls, q: int) -> int:
        degree = (3 * q - mms_parameters(q)[1]) // 2
        return (degree + 1) // 2

    @property
    def spec(self) -> str:
        option = "" if self.p == self.default_p(self.q) else f":p={self.p}"
        return f"slimfly:{self.q}{option}"

    def label(self) -> str:
        return f"Slim Fly MMS(q={self.q}, p={self.p})"

    @property
    def w(self) -> int:
        return mms_parameters(self.q)[0]

    @property
    def delta(self) -> int:
        return mms_parameters(self.q)[1]

    @property
    def degree(self) -> int:
        """r' = q + 2w = (3q - delta)/2."""
        return self.q + 2 * self.w

    @property
    def num_routers(self) -> int:
        return 2 * self.q * self.q

    @property
    def num_terminals(self) -> int:
        return self.p * self.num_routers

    @cached_property
    def field(self) -> FiniteField:
        return galois_field(self.q)

    def router_index(self, subgraph: int, a, b) -> np.ndarray:
        """(0,x,y) -> x q + y; (1,m,c) -> q^2 + m q + c (field elements by number)."""
        return subgraph * self.q * self.q + np.asarray(a) * self.q + np.asarray(b)

    def router_names(self) -> list[str]:
        q = self.q
        return [f"{'ab'[s]}.{a}.{b}" for s in range(2) for a in range(q) for b in range(q)]

    @cached_property
    def links(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(u, v, class) of every link, u < v, sorted by (u, v)."""
        q, f = self.q, self.field
        x_set, x_prime_set = generator_sets(q, f)
        parts = []
        for subgraph, generators in ((0, x_set), (1, x_prime_set)):
            a, b, s = (g.ravel() for g in np.meshgrid(np.arange(q), np.arange(q), generators, indexing="ij"))
            u, v = self.router_index(subgraph, a, b), self.router_index(subgraph, a, f.add[b, s])
            keep = u < v  # X is closed under negation: each link is found from both ends
            parts.append((u[keep], v[keep], np.full(int(keep.sum()), subgraph)))
        m, c, x = (g.ravel() for g in np.meshgrid(np.arange(q), np.arange(q), np.arange(q), indexing="ij"))
        y = f.add[f.mul[m, x], c]
        parts.append((self.router_index(0, x, y), self.router_index(1, m, c), np.full(q**3, 2)))
        u, v, kind = (np.concatenate(column) for column in zip(*parts))
        order = np.argsort(u * self.num_routers + v, kind="stable")
        return u[order], v[order], kind[order]

    def router_symmetries(self) -> list[np.ndarray]:
        """The shifts of the second coordinate by the field's additive basis (1, x, ..., x^(n-1) of
        GF(p^n), numbers p^i): (0,x,y) -> (0,x,y+e) and (1,m,c) -> (1,m,c+e) keep every link (y - y'
        and c - c' unchanged, y = m x + c iff y + e = m x + (c + e)), and no shift but 0 fixes a router,
        so with the rotation of each router's terminals they act freely on the terminals: q p
        symmetries, 2q rank orbits. The wider translations (0,x,y) -> (0,x+a,y), (1,m,c) ->
        (1,m,c-ma) fix every router (1,0,c), so orbit synthesis leaves them out."""
        q, f = self.q, self.field
        routers = np.arange(self.num_routers, dtype=np.int64)
        subgraph, rest = routers // (q * q), routers % (q * q)
        first, second = rest // q, rest % q
        terminals = np.arange(self.num_terminals, dtype=np.int64)
        moves = []
        for i in range(f.degree):
            moved = self.router_index(subgraph, first, f.add[second, f.characteristic ** i])
            moves.append(np.concatenate([moved[terminals // self.p] * self.p + terminals % self.p,
                                         self.num_terminals + moved]))
        return moves

    def build_network(self):
        u, v, kind = self.links
        graph = RouterGraph(self.router_names(), np.full(self.num_routers, self.p, dtype=np.int64), u, v, kind, CLASSES)
        return build_direct_network(self.spec, self.family, graph)

    @cached_property
    def path_diversity(self) -> tuple[int, float, int, int]:
        """(diameter, mean, max, min) over pairs of distinct non-adjacent routers of the number of
        common neighbours, i.e. of minimal paths when the diameter is 2 (entries of A @ A, computed
        in blocks of rows from the sparse adjacency matrix). Diameter 2 exactly when min >= 1."""
        from scipy.sparse import csr_matrix

        r = self.num_routers
        u, v, _ = self.links
        ones = np.ones(2 * len(u), dtype=np.int32)
        adjacency = csr_matrix((ones, (np.concatenate([u, v]), np.concatenate([v, u]))), shape=(r, r))
        total, largest, smallest, pairs = 0, 0, r, 0
        step = max(1, _DIVERSITY_ROWS // r)
        for start in range(0, r, step):
            rows = np.arange(start, min(r, start + step))
            common = (adjacency[rows] @ adjacency).toarray()
            far = adjacency[rows].toarray() == 0
            far[np.arange(len(rows)), rows] = False
            values = common[far]
            total += int(values.sum())
            pairs += len(values)
            largest = max(largest, int(values.max(initial=0)))
            smallest = min(smallest, int(values.min(initial=r)))
        diameter = 1 if pairs == 0 else 2 if smallest >= 1 else 3  # 3: "more than 2"
        return diameter, total / max(pairs, 1), largest, smallest

    has_worst_case = True

    def worst_case_destinations(self, num_ranks: int) -> np.ndarray:
        """Routers in pairs at distance two whose minimal routes overlap (Prisacari20 Figure 7.5, see
        slimfly_router_pairs), terminal j of one router to terminal j of the other."""
        terminals = np.arange(num_ranks, dtype=np.int64)
        sigma, _ = slimfly_router_pairs(self)
        return sigma[terminals // self.p] * self.p + terminals % self.p

    def facts(self) -> list[tuple[str, str]]:
        q, w, delta, f = self.q, self.w, self.delta, self.field
        x_set, x_prime_set = generator_sets(q, f)
        base = f.characteristic
        field = (f"GF({q}), integers mod {q}" if f.degree == 1 else
                 f"GF({q}) = GF({base})[x]/({f.modulus_text()}), elements as base-{base} digits")
        sets = (f"X = {{{', '.join(map(str, x_set.tolist()))}}}, X' = {{{', '.join(map(str, x_prime_set.tolist()))}}}"
                if 2 * w <= 12 else f"{2 * w} elements each")
        diameter, mean, largest, _ = self.path_diversity
        sign = {1: "+ 1", 0: "+ 0", -1: "- 1"}[delta]
        return [("q", f"{q} = 4*{w} {sign} (w = {w}, delta = {delta})"),
                ("field", f"{field}; primitive element xi = {f.primitive}"),
                ("generator sets", sets),
                ("routers", f"{self.num_routers} (2q^2)"),
                ("terminals", f"{self.num_terminals} ({self.p} per router; ceil(r'/2) = {(self.degree + 1) // 2}, "
                              f"floor = {self.degree // 2})"),
                ("network degree r'", f"{self.degree} ((3q - delta)/2: {q} to the other subgraph, {2 * w} inside)"),
                ("router radix r' + p", str(self.degree + self.p)),
                ("router links", f"{self.num_routers * self.degree // 2} (R r'/2)"),
                ("diameter", str(diameter) if diameter <= 2 else "more than 2"),
                ("minimal paths between non-adjacent routers", f"mean {mean:.4f}, max {largest}")]


def _neighbours(topology) -> list[set[int]]:
    u, v = topology.links[0], topology.links[1]
    out: list[set[int]] = [set() for _ in range(topology.num_routers)]
    for a, b in zip(u.tolist(), v.tolist()):
        out[a].add(b)
        out[b].add(a)
    return out


def slimfly_router_pairs(topology) -> tuple[np.ndarray, int]:
    """(sigma, unmatched): sigma[r] is the router r's terminals send to (an involution), and the
    number of routers left sending to themselves.

    Fours A-B-C-D are packed greedily, most constrained first (the classic path-packing rule): A is
    the unused router with the fewest unused neighbours, and B, C, D are tried in the same order.
    Taking routers in plain index order instead strands a third of them at q = 13."""
    adjacent = _neighbours(topology)
    r = topology.num_routers
    sigma = np.arange(r, dtype=np.int64)
    used = np.zeros(r, dtype=bool)
    free_degree = [len(adjacent[x]) for x in range(r)]

    def only_common(x: int, y: int, middle: int) -> bool:
        return y not in adjacent[x] and adjacent[x] & adjacent[y] == {middle}

    def most_constrained(candidates) -> list[int]:
        return sorted(candidates, key=lambda x: (free_degree[x], x))

    def chain(a: int) -> tuple[int, int, int] | None:
        for b in most_constrained(x for x in adjacent[a] if not used[x]):
            for c in most_constrained(x for x in adjacent[b] if not used[x] and x != a and only_common(a, x, b)):
                for d in most_constrained(x for x in adjacent[c] if not used[x] and x not in (a, b)
                                          and only_common(b, x, c)):
                    return b, c, d
        return None

    queue = [(free_degree[x], x) for x in range(r)]
    heapq.heapify(queue)

    def take(routers: list[int]) -> None:
        used[routers] = True
        for x in routers:
            for y in adjacent[x]:
                free_degree[y] -= 1
                if not used[y]:
                    heapq.heappush(queue, (free_degree[y], y))

    left: list[int] = []
    while queue:
        degree, a = heapq.heappop(queue)
        if used[a]:
            continue
        if degree != free_degree[a]:  # stale: a fresher entry with fewer free neighbours was queued
            continue
        found = chain(a)
        if found is None:
            left.append(a)
            continue
        b, c, d = found
        sigma[[a, c, b, d]] = [c, a, d, b]
        take([a, b, c, d])
    for x in sorted(left):  # pair what is left at distance two where possible
        if used[x]:
            continue
        partner = next((y for y in sorted(left) if not used[y] and y != x and y not in adjacent[x]
                        and adjacent[x] & adjacent[y]), None)
        if partner is not None:
            sigma[[x, partner]] = [partner, x]
            take([x, partner])
    return sigma, int(r - used.sum())


def parse_slimfly(text: str) -> SlimFly:
    spec = f"slimfly:{text}"
    parts = parse_spec("slimfly", text, SYNTAX, (1, 1), ("p",))
    (q,) = parts.numbers
    return SlimFly(q, option_int(parts, "p", spec, SlimFly.default_p(q)))


def slimfly_candidates(shape) -> list[str]:
    """q with 2 q^2 routers."""
    if shape.directed or shape.p == 0:
        return []
    return [f"slimfly:{q}:p={shape.p}" for q in range(3, 1 << 10) if prime_power(q) is not None
            and shape.admits(2 * q * q, 2 * q * q * ((3 * q - mms_parameters(q)[1]) // 2))]


FAMILY = Family("slimfly", SYNTAX, "Slim Fly (Prisacari20 sec. 7.2): the diameter-two MMS graph of 2q^2 routers, "
                "q a prime power", parse_slimfly, candidates=slimfly_candidates)
