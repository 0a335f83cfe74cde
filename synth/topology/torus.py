"""Tori ([DeSensi24]: Swing allreduce on D-dimensional tori, 64x64, 128x8, 256x4,
8x8x8, 8x8x8x8, ...).

Spec: `torus:D0,D1,...[:p=P]`, every D_k >= 2, P terminals per router (default 1). Routers at
coordinates (x_0..x_{L-1}), 0 <= x_k < D_k, each linked to its +1 and -1 neighbour in every
dimension (mod D_k). Where D_k = 2 those two neighbours are the same router and the torus keeps
two parallel links to it (the +1 link of x_k = 0 and the +1 link, i.e. the wrap-around, of
x_k = 1): every router keeps 2L ports and DeSensi24's model holds everywhere (2D ports per node; its
multi-port Swing runs 2D collectives on distinct links, also on the 2x4 torus of its Fig. 5).
So a torus has L R links, routers of network degree 2L and radix 2L + P; torus:2,2 has the
links of hyperx:2,2:trunk=2, not those of hyperx:2,2. Diameter sum floor(D_k/2).

Numbering (DeSensi24's linear rank mapping, dimension 0 of stride 1): router r = x_0 + D_0 (x_1 + D_1
(...)), named `r<x_0>.<x_1>...` (dimension 0 first); terminals router by router, terminal t on
router t // P. Links: per dimension k (0 first) one per router x, from x to its +1 neighbour
(channel 2N + 2i goes in the + direction of dimension k, 2N + 2i + 1 in the - direction), class
`dim k`, listed by dimension, then lower router, then higher router (the two parallel links of a
D_k = 2 pair: the one from x_k = 0 first). So a router's ports are its P terminal ports, then per
dimension its two links in increasing order of the neighbour's coordinate: -1 before +1, except
at x_k = 0 and x_k = D_k - 1, whose wrap-around neighbour comes first (+1 before -1); for D_k = 2,
first the link from x_k = 0.

Terminal bandwidth: with P = 1 the node is its own router (DeSensi24): the terminal link gets its 2L
outgoing links' bandwidth (Pham26's fair comparison, synth.topology.direct); with P > 1, 1.

Hierarchy (GHE/BGH, Prisacari20 ch.4): (D_0, D_1, ...) with P = 1, (P, D_0, D_1, ...) otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import factorial, prod

import numpy as np

from synth.core.errors import SynthError
from synth.core.validate import show
from synth.topology.direct import RouterGraph, build_direct_network
from synth.topology.family import TORUS_ALLREDUCE_FORMS, Family, Topology, option_int, parse_spec
from synth.topology.grid import MAX_DIMENSIONS, RouterGrid, dimension_classes
from synth.topology.recognize.shape import factorizations

SYNTAX = "torus:D0,D1,...[:p=P]"


@dataclass(frozen=True)
class Torus(RouterGrid, Topology):
    family = "torus"
    router_transitive = True  # the translations

    def torus_sizes(self) -> tuple[int, ...]:
        return tuple(self.sizes)
    sizes: tuple[int, ...]  # D_0..D_{L-1}, dimension 0 (stride 1) first
    p: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "sizes", tuple(int(s) for s in self.sizes))
        if not 1 <= len(self.sizes) <= MAX_DIMENSIONS:
            raise SynthError(f"{show(self.spec)}: a torus needs 1 to {MAX_DIMENSIONS} dimensions, "
                             f"got {len(self.sizes)}")
        small = [k for k, s in enumerate(self.sizes) if s < 2]
        if small:
            k = small[0]
            raise SynthError(f"{show(self.spec)}: every dimension needs at least 2 routers, dimension {k} "
                             f"(parameter {k + 1}) has {self.sizes[k]}")
        if self.p < 1:
            raise SynthError(f"{show(self.spec)}: p must be at least 1, got {self.p}")
        self.check_size(self.num_terminals + self.num_routers, 2 * self.num_terminals + 2 * self.num_links)

    @property
    def spec(self) -> str:
        return f"torus:{','.join(map(str, self.sizes))}{'' if self.p == 1 else f':p={self.p}'}"

    def label(self) -> str:
        return f"torus({'x'.join(map(str, self.sizes))}{'' if self.p == 1 else f'; p={self.p}'})"

    # ----- counts -------------------------------------------------------------------------------
    @property
    def degree(self) -> int:
        return 2 * self.dimensions

    @property
    def radix(self) -> int:
        return self.p + self.degree

    @property
    def num_links(self) -> int:
        """One per router and dimension (two parallel links per pair where D_k = 2)."""
        return self.dimensions * self.num_routers

    @property
    def diameter(self) -> int:
        return sum(d // 2 for d in self.sizes)

    def antipodal_paths(self) -> int:
        """Minimal router paths between two routers at the diameter: the floor(D_k/2) hops of every
        dimension interleaved in any order (a multinomial), times 2 for every even D_k >= 4 (either
        way round); a D_k = 2 hop is one router step over either of two parallel links."""
        hops = [d // 2 for d in self.sizes]
        interleavings = factorial(sum(hops)) // prod(factorial(h) for h in hops)
        return interleavings * 2 ** sum(1 for d in self.sizes if d % 2 == 0 and d >= 4)

    # ----- structure ----------------------------------------------------------------------------
    @cached_property
    def links(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(router, its +1 neighbour, dimension) of every link, sorted by dimension, then lower,
        then higher router (stable: of two parallel links, the one from coordinate 0 first)."""
        routers = np.arange(self.num_routers, dtype=np.int64)
        coordinates = self.router_coordinates()
        parts = []
        for k, (size, stride) in enumerate(zip(self.sizes, self.strides)):
            x = coordinates[:, k]
            plus = routers + (np.where(x == size - 1, 0, x + 1) - x) * stride
            order = np.lexsort((np.maximum(routers, plus), np.minimum(routers, plus)))  # stable
            parts.append((routers[order], plus[order], np.full(len(routers), k, dtype=np.int64)))
        u, v, kind = (np.concatenate(column) for column in zip(*parts))
        return u, v, kind

    def build_network(self):
        u, v, kind = self.links
        graph = RouterGraph(self.router_names(), np.full(self.num_routers, self.p, dtype=np.int64), u, v, kind,
                            dimension_classes(self.dimensions),
                            terminal_bandwidth="degree" if self.p == 1 else 1.0)
        return build_direct_network(self.spec, self.family, graph)

    def torus_ports(self) -> int | None:
        return 2 * self.dimensions if self.p == 1 else None

    def closed_forms(self) -> frozenset[str]:
        """DeSensi24's Table 2 is for D >= 2 dimensions of one size, one terminal per router."""
        uniform = len(set(self.sizes)) == 1 and self.dimensions >= 2 and self.p == 1
        return frozenset({TORUS_ALLREDUCE_FORMS}) if uniform else frozenset()

    def facts(self) -> list[tuple[str, str]]:
        sizes, l, p = self.sizes, self.dimensions, self.p
        pairs = sum(1 for d in sizes if d == 2)
        links = f"{self.num_links} (L R: one per router and dimension"
        links += f"; two parallel links per pair in the {pairs} dimension(s) of size 2)" if pairs else ")"
        bandwidth = (f"{self.degree} (one node per router: its outgoing link bandwidth, Pham26's fair comparison)"
                     if p == 1 else "1 (p > 1 terminals on ordinary router ports)")
        paths = str(self.antipodal_paths())
        if pairs:
            paths += f" router paths, each over 2^{pairs} = {2 ** pairs} choices of parallel links"
        return [("dimensions", f"{l}: {' x '.join(map(str, sizes))} (dimension 0 first, stride 1)"),
                ("routers", f"{self.num_routers} (prod D_k)"),
                ("terminals", f"{self.num_terminals} ({p} per router)"),
                ("router links", links),
                ("network degree", f"{self.degree} (2L)"),
                ("router radix", f"{self.radix} (2L + p)"),
                ("terminal bandwidth", bandwidth),
                ("diameter", f"{self.diameter} (sum floor(D_k/2))"),
                ("minimal paths between antipodal routers", paths),
                ("rank", "r P + t on router r = x_0 + D_0 (x_1 + D_1 (...)) (DeSensi24's linear mapping)")]


def parse_torus(text: str) -> Torus:
    spec = f"torus:{text}"
    parts = parse_spec("torus", text, SYNTAX, (1, MAX_DIMENSIONS), ("p",))
    return Torus(parts.numbers, option_int(parts, "p", spec, 1))


def torus_candidates(shape) -> list[str]:
    """Every set of D = degree / 2 sizes whose product holds the routers (in increasing order)."""
    degree = max(shape.degree(True), shape.degree(False))
    if shape.directed or shape.p == 0 or degree % 2:
        return []
    option = f":p={shape.p}" if shape.p != 1 else ""
    return [f"torus:{','.join(map(str, sizes))}{option}" for routers in shape.family_routers()
            if shape.admits(routers, routers * degree) for sizes in factorizations(routers, degree // 2)]


FAMILY = Family("torus", SYNTAX, "D-dimensional torus (DeSensi24): +1 and -1 neighbours in every dimension, "
                "dimension 0 of stride 1", parse_torus, candidates=torus_candidates,
                # before HyperX: a torus of rings of 3 or 4 is also one (torus:3,3 is hyperx:3,3, torus:4,4 is
                # hyperx:2,2,2,2), and as a torus it keeps torus-2QoS and DeSensi24's allreduce forms
                recognition_order=-1)
