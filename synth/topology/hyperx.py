"""HyperX (DeSensi24 sec. 5.4.2, Prisacari20 ch.7) and the two-level fully connected network 2dfc (Pham26, PhamNK).

Spec: `hyperx:S1,S2[,...][:p=P][:trunk=T]`, an L-dimensional HyperX (L >= 1, every S_k >= 2):
routers at coordinates (c_0..c_{L-1}), 0 <= c_k < S_k, every router linked to every router that
differs from it in exactly one coordinate, by T parallel links (default 1); P terminals per router
(default 1). The first size is dimension 0. R = S_1...S_L routers of network degree T sum(S_k - 1),
router radix P + T sum(S_k - 1), diameter L (router hops), L! minimal router paths between two
routers that differ in every coordinate (each with T^L choices of parallel links).

Numbering: router r = c_0 + S_0 (c_1 + S_1 (c_2 + ...)), dimension 0 least significant, named
`r<c_0>.<c_1>...` (dimension 0 first); terminals router by router, terminal t on router t // P.
Links are listed by dimension, then lower router, then higher router, the T parallel links of a
pair consecutively, each from the lower to the higher router; channel class `dim k` for the links
of dimension k. So a router's ports are its P terminal ports, then per dimension (0 first) its
S_k - 1 neighbours in increasing order of their coordinate, T consecutive ports each.

Terminal bandwidth: with P = 1 the node is its own router (Pham26's 2dfc, DeSensi24's HyperX): the terminal
link gets the router's total outgoing link bandwidth T sum(S_k - 1) (Pham26's fair comparison, see
synth.topology.direct). With P > 1 (Prisacari20 ch.7's HyperX of p = r/3 terminals per router) the
terminals are separate endpoints on ordinary router ports: bandwidth 1, like every link.

`2dfc:M2,M1` (Pham26's "two-level fully connected", PhamNK's "2lvfc"): the 2D HyperX of M2 x M1 nodes
with one node per router, node (a2, a1) of rank a2 M1 + a1, i.e. `hyperx:M1,M2` (a1 = c_0 is
dimension 0, a2 = c_1 dimension 1) with P = 1; Pham26's dimension-order algorithm first exchanges
along a1 (dimension 0, nodes (a2, c)). Nodes are named `n<a2>.<a1>` (Pham26's notation); everything
else (links, ports, classes, terminal bandwidth M1 + M2 - 2) is the HyperX's. Its canonical spec
stays `2dfc:M2,M1`.

Hierarchy (GHE/BGH, Prisacari20 ch.4): the dimensions as layers, (S_0, S_1, ...) with P = 1 and
(P, S_0, S_1, ...) otherwise: terminal ranks are exactly these mixed-radix digits.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import factorial

import numpy as np

from synth.core.errors import SynthError
from synth.core.validate import show
from synth.topology.direct import RouterGraph, build_direct_network
from synth.topology.family import GRID_ALLTOALL_FORMS, Family, Topology, option_int, parse_spec
from synth.topology.grid import MAX_DIMENSIONS, RouterGrid, dimension_classes

SYNTAX = "hyperx:S1,S2[,...][:p=P][:trunk=T]"
SYNTAX_2DFC = "2dfc:M2,M1"


@dataclass(frozen=True)
class HyperX(RouterGrid, Topology):
    family = "hyperx"
    router_transitive = True  # the translations (coordinates mod S_k)
    complete_dimensions = True  # every two routers of a line along a dimension are linked
    sizes: tuple[int, ...]  # S_0..S_{L-1}, dimension 0 first
    p: int = 1
    trunk: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "sizes", tuple(int(s) for s in self.sizes))
        if not 1 <= len(self.sizes) <= MAX_DIMENSIONS:
            raise SynthError(f"{show(self.spec)}: a HyperX needs 1 to {MAX_DIMENSIONS} dimensions, "
                             f"got {len(self.sizes)}")
        small = [k for k, s in enumerate(self.sizes) if s < 2]
        if small:
            raise SynthError(f"{show(self.spec)}: {self._too_small(small[0])}")
        for name, value in (("p", self.p), ("trunk", self.trunk)):
            if value < 1:
                raise SynthError(f"{show(self.spec)}: {name} must be at least 1, got {value}")
        self.check_size(self.num_terminals + self.num_routers, 2 * self.num_terminals + 2 * self.num_links)

    def _too_small(self, k: int) -> str:
        return (f"every dimension needs at least 2 routers, dimension {k} (parameter {k + 1}) has "
                f"{self.sizes[k]}")

    # ----- names --------------------------------------------------------------------------------
    @property
    def spec(self) -> str:
        options = "" if self.p == 1 else f":p={self.p}"
        options += "" if self.trunk == 1 else f":trunk={self.trunk}"
        return f"hyperx:{','.join(map(str, self.sizes))}{options}"

    def label(self) -> str:
        options = [f"p={self.p}"] * (self.p != 1) + [f"trunk={self.trunk}"] * (self.trunk != 1)
        return f"HyperX({'x'.join(map(str, self.sizes))}{'; ' + ', '.join(options) if options else ''})"

    # ----- counts -------------------------------------------------------------------------------
    @property
    def degree(self) -> int:
        """Router links per router: T sum(S_k - 1)."""
        return self.trunk * sum(s - 1 for s in self.sizes)

    @property
    def radix(self) -> int:
        return self.p + self.degree

    @property
    def num_links(self) -> int:
        """R T sum(S_k - 1) / 2 (R (S_k - 1) = S_k (S_k - 1) prod(others) is even)."""
        return self.num_routers * self.degree // 2

    @property
    def diameter(self) -> int:
        return self.dimensions

    @property
    def terminal_bandwidth(self) -> int:
        return self.degree if self.p == 1 else 1

    # ----- structure ----------------------------------------------------------------------------
    @cached_property
    def links(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(lower router, higher router, dimension) of every link, sorted by dimension, lower,
        higher, the T parallel links of a pair consecutive."""
        r = self.num_routers
        routers = np.arange(r, dtype=np.int64)
        coordinates = self.router_coordinates()
        parts = []
        for k, (size, stride) in enumerate(zip(self.sizes, self.strides)):
            higher = size - 1 - coordinates[:, k]  # neighbours with a larger coordinate k
            lower = np.repeat(routers, higher)
            first = np.cumsum(higher) - higher
            step = np.arange(len(lower), dtype=np.int64) - np.repeat(first, higher) + 1
            parts.append((lower, lower + step * stride, np.full(len(lower), k, dtype=np.int64)))
        u, v, kind = (np.repeat(np.concatenate(column), self.trunk) for column in zip(*parts))
        return u, v, kind

    def build_network(self):
        u, v, kind = self.links
        graph = RouterGraph(self.router_names(), np.full(self.num_routers, self.p, dtype=np.int64), u, v, kind,
                            dimension_classes(self.dimensions),
                            terminal_bandwidth="degree" if self.p == 1 else 1.0)
        return build_direct_network(self.spec, self.family, graph)

    # ----- facts --------------------------------------------------------------------------------
    def _path_fact(self) -> tuple[str, str]:
        l, t = self.dimensions, self.trunk
        paths = f"{factorial(l)} (L!)"
        if t > 1:
            paths += f", each over T^L = {t ** l} choices of parallel links"
        return "minimal paths between routers differing in every coordinate", paths

    def _bandwidth_fact(self) -> tuple[str, str]:
        if self.p == 1:
            return ("terminal bandwidth", f"{self.degree} (one node per router: its outgoing link bandwidth, "
                                          f"Pham26's fair comparison)")
        return "terminal bandwidth", "1 (p > 1 terminals on ordinary router ports)"

    def facts(self) -> list[tuple[str, str]]:
        sizes, l, t, p = self.sizes, self.dimensions, self.trunk, self.p
        trunk = "T " if t > 1 else ""
        facts = [("dimensions", f"{l}: {' x '.join(map(str, sizes))} (dimension 0 first)"),
                 ("routers", f"{self.num_routers} (prod S_k)"),
                 ("terminals", f"{self.num_terminals} ({p} per router)"),
                 ("router links", f"{self.num_links} (R {trunk}sum(S_k - 1)/2)"
                                  + (f"; trunk T = {t} parallel links per pair" if t > 1 else "")),
                 ("network degree", f"{self.degree} ({trunk}sum(S_k - 1))"),
                 ("router radix", f"{self.radix} (p + {trunk}sum(S_k - 1))"),
                 self._bandwidth_fact(),
                 ("diameter", f"{self.diameter} (L)"),
                 self._path_fact(),
                 ("rank", "r P + t on router r = c_0 + S_0 (c_1 + S_1 (...)), dimension 0 least significant")]
        if l == 2 and sizes[0] == sizes[1] == p + 1 and t == 1:
            r = 3 * p
            facts.append(("Prisacari20 ch.7 2D HyperX", f"router radix r = 3p = {r}: R = (r/3+1)^2 = {self.num_routers}, "
                                                 f"N = (r/3)(r/3+1)^2 = {self.num_terminals}"))
        return facts


@dataclass(frozen=True)
class TwoDFC(HyperX):
    """2dfc:M2,M1 = hyperx:M1,M2 with one node per router; sizes = (M1, M2)."""

    family = "2dfc"

    @classmethod
    def of(cls, m2: int, m1: int) -> "TwoDFC":
        return cls((m1, m2))

    def __post_init__(self) -> None:
        if len(self.sizes) != 2 or self.p != 1 or self.trunk != 1:
            raise SynthError(f"a 2dfc is a 2D HyperX with one node per router, got sizes {self.sizes}, p {self.p}, "
                             f"trunk {self.trunk}")
        super().__post_init__()

    def _too_small(self, k: int) -> str:
        name = ("M1", "M2")[k]
        return f"both dimensions need at least 2 nodes, {name} = {self.sizes[k]}"

    @property
    def m1(self) -> int:
        return self.sizes[0]

    @property
    def m2(self) -> int:
        return self.sizes[1]

    @property
    def spec(self) -> str:
        return f"2dfc:{self.m2},{self.m1}"

    def label(self) -> str:
        return f"2dfc({self.m2},{self.m1})"

    def router_names(self) -> list[str]:
        return [f"n{a2}.{a1}" for a1, a2 in self.router_coordinates().tolist()]

    def closed_forms(self) -> frozenset[str]:
        return frozenset({GRID_ALLTOALL_FORMS})

    def facts(self) -> list[tuple[str, str]]:
        m1, m2 = self.m1, self.m2
        return [("nodes", f"{self.num_routers} (m2 m1 = {m2} x {m1}; one router and one terminal each)"),
                ("rank", "node (a2, a1) is a2 m1 + a1; a1 is dimension 0 (hyperx:M1,M2)"),
                ("degree", f"{self.degree} (m1 + m2 - 2)"),
                ("undirected edges", f"{self.num_links} (m1 m2 (m1 + m2 - 2)/2)"),
                ("router radix", f"{self.radix} (m1 + m2 - 1: the links and the node)"),
                self._bandwidth_fact(),
                ("diameter", "2"),
                ("minimal paths between nodes differing in both coordinates", "2")]


def parse_hyperx(text: str) -> HyperX:
    spec = f"hyperx:{text}"
    parts = parse_spec("hyperx", text, SYNTAX, (1, MAX_DIMENSIONS), ("p", "trunk"))
    return HyperX(parts.numbers, option_int(parts, "p", spec, 1), option_int(parts, "trunk", spec, 1))


def parse_2dfc(text: str) -> TwoDFC:
    m2, m1 = parse_spec("2dfc", text, SYNTAX_2DFC, (2, 2)).numbers
    return TwoDFC.of(m2, m1)


def hyperx_candidates(shape) -> list[str]:
    """Every trunk T dividing the degree and every set of sizes S_k with T sum(S_k - 1) the degree whose product
    holds the routers (the sizes in increasing order)."""
    degree = max(shape.degree(True), shape.degree(False))
    if shape.directed or shape.p == 0 or degree == 0:
        return []
    routers = shape.family_routers()

    def sizes(left: int, smallest: int, product: int):
        """Non-decreasing sizes >= smallest with sum(S - 1) = left and product * prod(S) <= the largest count."""
        if left == 0:
            if product in routers and shape.admits(product, product * degree):
                yield ()
            return
        for size in range(smallest, left + 2):
            if product * size > routers[-1]:
                break
            for rest in sizes(left - (size - 1), size, product * size):
                yield (size, *rest)

    options = lambda trunk: (f":p={shape.p}" if shape.p != 1 else "") + (f":trunk={trunk}" if trunk != 1 else "")  # noqa: E731
    return [f"hyperx:{','.join(map(str, s))}{options(trunk)}" for trunk in range(1, degree + 1) if degree % trunk == 0
            for s in sizes(degree // trunk, 2, 1) if len(s) <= MAX_DIMENSIONS]


FAMILY = (
    Family("hyperx", SYNTAX, "HyperX (DeSensi24, Prisacari20 ch.7): every router linked to every router differing in "
           "one coordinate", parse_hyperx, candidates=hyperx_candidates),
    Family("2dfc", SYNTAX_2DFC, "two-level fully connected network (Pham26, PhamNK): the 2D HyperX of "
           "M2 x M1 nodes, one node per router", parse_2dfc),
)
