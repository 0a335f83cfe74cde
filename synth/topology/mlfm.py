"""Multi-Layer Full-Mesh h-MLFM ([Prisacari20] sec. 7.2.2.3; Kathareios et al.): the
stacked single-path tree with r_2 = 2, in its single-radix form h = l = p.

Spec: `mlfm:H`, H >= 1. H layers of H + 1 local routers with H terminals each, and H(H+1)/2
global routers, one per pair {i, j} of local indices (0 <= i < j <= H): global router {i, j} is
linked to local routers i and j of every layer (it replaces the i-j link of every layer's full
mesh). Every router has radix 2H; N = H^3 + H^2 terminals, R = 3H(H+1)/2 routers, H^2 (H+1)
router links.

Numbering: local routers first, layer by layer: local router i of layer l is l (H+1) + i, named
`L<l>.<i>`; then the global routers for the pairs {i, j} in lexicographic order, named `G<i>.<j>`.
Terminals sit on the local routers only, H each, router by router: terminal t is on local router
t // H, so terminals are numbered router, then layer (Prisacari20 sec. 7.4.4's contiguous order). Levels:
local routers 1, global routers 2.

Links are listed by local router, then global router, each from the local router to the global
router (channel 2N + 2i goes towards the global router, 2N + 2i + 1 away from it; one channel
class, `local-global`). Ports: local router (l, i) has its terminals on 1..H, then H + 1 + j'
leads to global router {i, j}, j' = j for j < i and j - 1 for j > i (the other index in
increasing order); global router {i, j} has 2l + 1 to local router (l, i) and 2l + 2 to (l, j).
Terminal links have bandwidth 1, like every link.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.core.validate import show
from synth.topology.direct import RouterGraph, build_direct_network
from synth.topology.family import Family, Topology, parse_spec

SYNTAX = "mlfm:H"
CLASSES = ("local-global",)


@dataclass(frozen=True)
class Mlfm(Topology):
    family = "mlfm"
    h: int

    def __post_init__(self) -> None:
        if self.h < 1:
            raise SynthError(f"{show(self.spec)}: h must be at least 1, got {self.h}")
        self.check_size(self.num_terminals + self.num_routers, 2 * self.num_terminals + 2 * self.num_links)

    @property
    def spec(self) -> str:
        return f"mlfm:{self.h}"

    def label(self) -> str:
        return f"MLFM(h={self.h})"

    # ----- counts -----------------------------------------------------------------------------
    @property
    def num_local(self) -> int:
        """h layers of h + 1 local routers."""
        return self.h * (self.h + 1)

    @property
    def num_global(self) -> int:
        """One global router per pair of local indices: h(h+1)/2."""
        return self.h * (self.h + 1) // 2

    @property
    def num_routers(self) -> int:
        return self.num_local + self.num_global

    @property
    def num_terminals(self) -> int:
        return self.h * self.num_local

    @property
    def num_links(self) -> int:
        """h links per local router (and 2h per global router)."""
        return self.h * self.num_local

    @property
    def radix(self) -> int:
        return 2 * self.h

    def hierarchy(self) -> tuple[int, ...]:
        """H_1 = h terminals per local router, H_2 = h + 1 local routers per layer, H_3 = h layers:
        the terminal numbering is router-major, then layer-major."""
        return (self.h, self.h + 1, self.h)

    # ----- addressing -------------------------------------------------------------------------
    def local_router(self, layer, index) -> np.ndarray:
        return np.asarray(layer) * (self.h + 1) + np.asarray(index)

    def global_router(self, i, j) -> np.ndarray:
        """Router number of global router {i, j}, i < j: the rank of (i, j) in lexicographic order
        after the local routers."""
        i, j, n = np.asarray(i), np.asarray(j), self.h + 1
        return self.num_local + i * n - i * (i + 1) // 2 + (j - i - 1)

    def router_names(self) -> list[str]:
        h = self.h
        return ([f"L{l}.{i}" for l in range(h) for i in range(h + 1)] +
                [f"G{i}.{j}" for i in range(h + 1) for j in range(i + 1, h + 1)])

    def links(self) -> tuple[np.ndarray, np.ndarray]:
        """(local router, global router) of every link, sorted by local router, then global router
        (the other index in increasing order)."""
        h = self.h
        grid = np.meshgrid(np.arange(h), np.arange(h + 1), np.arange(h), indexing="ij")
        layer, index, other = (g.ravel() for g in grid)
        other = other + (other >= index)  # the h local indices other than `index`, increasing
        local = self.local_router(layer, index)
        return local, self.global_router(np.minimum(index, other), np.maximum(index, other))

    def build_network(self):
        local, glob = self.links()
        terminals = np.concatenate([np.full(self.num_local, self.h, dtype=np.int64),
                                    np.zeros(self.num_global, dtype=np.int64)])
        level = np.concatenate([np.ones(self.num_local, dtype=np.int64), np.full(self.num_global, 2, dtype=np.int64)])
        graph = RouterGraph(self.router_names(), terminals, local, glob, np.zeros(len(local), dtype=np.int64), CLASSES,
                            router_level=level)
        return build_direct_network(self.spec, self.family, graph)

    # ----- facts ------------------------------------------------------------------------------
    @property
    def router_graph_diameter(self) -> int:
        """Largest router-to-router distance: two global routers without a common index (h >= 3)
        are 4 hops apart (G-L-G-L-G); for h = 2 every two global routers share an index and a local
        router is 3 hops from the global router of the other two indices; h = 1 is a star."""
        return 4 if self.h >= 3 else self.h + 1

    has_worst_case = True

    def worst_case_destinations(self, num_ranks: int) -> np.ndarray:
        """The shift by h terminals: every local router to the next one, never in its column, over
        the single minimal path: h messages per link, throughput 1/h (Prisacari20 sec. 7.4.2)."""
        return (np.arange(num_ranks, dtype=np.int64) + self.h) % num_ranks

    def facts(self) -> list[tuple[str, str]]:
        h = self.h
        return [("h (= layers l = terminals per local router p)", str(h)),
                ("local routers", f"{self.num_local} ({h} layers of h + 1 = {h + 1})"),
                ("global routers", f"{self.num_global} (h(h+1)/2, one per pair of local indices)"),
                ("routers", f"{self.num_routers} (3h(h+1)/2)"),
                ("terminals", f"{self.num_terminals} (h^3 + h^2, {h} per local router)"),
                ("router radix", f"{self.radix} (2h: local h terminals + h global, global 2 per layer)"),
                ("router links", f"{self.num_links} (h^2 (h+1))"),
                ("diameter", "2 router hops between local routers (local-global-local); "
                             f"{self.router_graph_diameter} over all routers"),
                ("minimal paths between local routers",
                 f"{h} in the same column (same index, different layers), 1 for every other pair"),
                ("worst case of minimal routing", f"1/{h} (shift by h, Prisacari20 sec. 7.4.2)")]


def parse_mlfm(text: str) -> Mlfm:
    (h,) = parse_spec("mlfm", text, SYNTAX, (1, 1)).numbers
    return Mlfm(h)


def mlfm_candidates(shape) -> list[str]:
    """H with 3 H (H + 1) / 2 routers and H terminals on a router."""
    if shape.directed:
        return []
    h = shape.p
    return [f"mlfm:{h}"] if shape.admits(3 * h * (h + 1) // 2, 2 * h * h * (h + 1)) else []


FAMILY = Family("mlfm", SYNTAX, "Multi-Layer Full-Mesh h-MLFM (Prisacari20 sec. 7.2.2.3): h layers of h + 1 local "
                "routers joined by h(h+1)/2 global routers, radix 2h", parse_mlfm, candidates=mlfm_candidates)
