"""Two-level Orthogonal Fat-Trees k-OFT ([Prisacari20] sec. 7.2.2.4; Valerio et al.):
two single-path trees SPT(k, k) stacked on a shared top level.

Spec: `oft:K`, K - 1 prime (K = 3, 4, 6, 8, 12, 14, ...: the k-ML3B construction below needs it).
Three levels L0, L1, L2 of R_L = 1 + K(K-1) routers each; K terminals on every L0 and every L2
router, none on L1. L0 router i and L2 router i are both linked to the K L1 routers of row i of the
K-ML3B table. N = 2K R_L = 2K^3 - 2K^2 + 2K terminals, R = 3 R_L = 3K^2 - 3K + 3 routers, all of
radix 2K; 2K R_L router links.

The K-ML3B table (R_L rows, K columns; Prisacari20's algorithm, which reproduces its Table 7.2 for K = 4),
with q = K - 1:
  1. row 0 = R_L - K, ..., R_L - 1;
  2. column 0 of rows 1..R_L-1: q copies of R_L - K, then q of R_L - K + 1, ..., q of R_L - 1;
  3. columns 1..q of rows 1 + s q .. (s+1) q, square s = 0..K-1 (row r, column c in 0..q-1):
     square 0: r q + c (0..q^2 - 1 row by row); square 1: its transpose c q + r; square s = m + 1
     for m = 1..q-1: the Latin square (r + m c) mod q with column c increased by c q. (The
     transpose is the case m = 0 of the same formula.)
Read as lines of the projective plane of order q (values 0..q^2-1 the affine points (c, x) for
x + c q, values R_L-K.. the points at infinity), any two rows share exactly one value, and every
value sits in exactly K rows: any two L0 routers (and any two L2 routers, and L0 router i with L2
router j != i) have exactly one common L1 neighbour; L0 router i and L2 router i have K.

Numbering: L0 routers 0..R_L-1, L1 routers R_L..2R_L-1, L2 routers 2R_L..3R_L-1; router i of level
Lx is named `Lx.i`. Terminals router by router: those of the L0 routers first, then those of the L2
routers (terminal t is on L0 router t // K for t < K R_L, else on L2 router t // K - R_L), i.e.
router, then level (Prisacari20 sec. 7.4.4's contiguous order). Router levels (Network.node_level): L0 1,
L1 2, L2 3.

Links are listed L0-L1 first, by L0 router then table column, then L1-L2 by L2 router then table
column, each from the terminal-carrying router to the L1 router: channel 2N + 2i goes towards L1,
2N + 2i + 1 away from it. Channel classes `L0-L1` and `L1-L2`. Ports: an L0 or L2 router has its
terminals on 1..K, then K + 1 + c leads to the L1 router in column c of its table row; L1 router j
has 1..K to the K L0 routers whose rows hold j, in increasing order, and K + 1..2K to the L2
routers of the same indices in the same order. Terminal links have bandwidth 1, like every link.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from synth.core.errors import SynthError
from synth.core.finite_field import factorization, smallest_prime_factor
from synth.core.validate import show
from synth.topology.direct import RouterGraph, build_direct_network
from synth.topology.family import Family, Topology, parse_spec

SYNTAX = "oft:K"
CLASSES = ("L0-L1", "L1-L2")


def is_prime(n: int) -> bool:
    return n >= 2 and smallest_prime_factor(n) == n


def ml3b_table(k: int) -> np.ndarray:
    """The (1 + k(k-1), k) k-ML3B table of Prisacari20 sec. 7.2.2.4, k - 1 prime: row i lists the L1
    routers of L0 router i (and of L2 router i)."""
    q = k - 1
    rows = 1 + k * q
    table = np.empty((rows, k), dtype=np.int64)
    table[0] = np.arange(rows - k, rows)
    table[1:, 0] = np.repeat(np.arange(rows - k, rows), q)
    square, r, c = np.meshgrid(np.arange(k), np.arange(q), np.arange(q), indexing="ij")
    slope = square - 1  # squares 1..k-1 are the Latin squares (r + m c) mod q, m = 0..q-1 (m = 0: the transpose)
    values = np.where(square == 0, r * q + c, (r + slope * c) % q + c * q)
    table[1:, 1:] = values.reshape(k * q, q)
    return table


@dataclass(frozen=True)
class Oft(Topology):
    family = "oft"
    k: int

    def __post_init__(self) -> None:
        if not is_prime(self.k - 1):
            q = self.k - 1
            what = f"{q} ({factorization(q)})" if q >= 4 else str(q)
            below = next((k for k in range(self.k - 1, 2, -1) if is_prime(k - 1)), None)
            above = next(k for k in range(self.k + 1, 2 * self.k + 4) if is_prime(k - 1))
            nearest = f"k = {below} or {above}" if below else f"k = {above}"
            raise SynthError(f"{show(self.spec)}: k - 1 = {what} is not prime; the k-ML3B table of the OFT "
                             f"(Prisacari20 sec. 7.2.2.4) is built for k - 1 prime (nearest: {nearest})")
        self.check_size(self.num_terminals + self.num_routers, 2 * self.num_terminals + 2 * self.num_links)

    @property
    def spec(self) -> str:
        return f"oft:{self.k}"

    def label(self) -> str:
        return f"OFT(k={self.k})"

    # ----- counts -----------------------------------------------------------------------------
    @property
    def routers_per_level(self) -> int:
        """R_L = 1 + k(k-1)."""
        return 1 + self.k * (self.k - 1)

    @property
    def num_routers(self) -> int:
        return 3 * self.routers_per_level

    @property
    def num_terminals(self) -> int:
        return 2 * self.k * self.routers_per_level

    @property
    def num_links(self) -> int:
        """k links up from every L0 and every L2 router."""
        return 2 * self.k * self.routers_per_level

    @property
    def radix(self) -> int:
        return 2 * self.k

    def hierarchy(self) -> tuple[int, ...]:
        """H_1 = k terminals per router, H_2 = R_L routers per level, H_3 = 2 levels (L0, L2): the
        terminal numbering is router-major, then level-major (Prisacari20 sec. 7.4.4's k x R_L x 2)."""
        return (self.k, self.routers_per_level, 2)

    # ----- addressing -------------------------------------------------------------------------
    @cached_property
    def table(self) -> np.ndarray:
        return ml3b_table(self.k)

    def router(self, level, index) -> np.ndarray:
        """Router number of router `index` of level L0, L1 or L2 (level 0, 1, 2)."""
        return np.asarray(level) * self.routers_per_level + np.asarray(index)

    def router_names(self) -> list[str]:
        return [f"L{level}.{i}" for level in range(3) for i in range(self.routers_per_level)]

    def links(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(L0 or L2 router, L1 router, class) of every link: L0 routers' links first, by router and
        table column, then the L2 routers'."""
        rl, k = self.routers_per_level, self.k
        index = np.repeat(np.arange(rl), k)
        up = self.router(1, self.table.ravel())
        lower = np.concatenate([self.router(0, index), self.router(2, index)])
        return lower, np.concatenate([up, up]), np.repeat([0, 1], rl * k)

    def build_network(self):
        rl, k = self.routers_per_level, self.k
        lower, upper, kind = self.links()
        terminals = np.repeat(np.array([k, 0, k], dtype=np.int64), rl)
        level = np.repeat(np.arange(1, 4, dtype=np.int64), rl)
        graph = RouterGraph(self.router_names(), terminals, lower, upper, kind, CLASSES, router_level=level)
        return build_direct_network(self.spec, self.family, graph)

    has_worst_case = True

    def worst_case_destinations(self, num_ranks: int) -> np.ndarray:
        """The shift by k terminals: every L0/L2 router to the next one, not its symmetric router,
        over the single minimal path: k messages per link, throughput 1/k (Prisacari20 sec. 7.4.2)."""
        return (np.arange(num_ranks, dtype=np.int64) + self.k) % num_ranks

    # ----- facts ------------------------------------------------------------------------------
    def facts(self) -> list[tuple[str, str]]:
        k, rl = self.k, self.routers_per_level
        return [("k", f"{k} (k - 1 = {k - 1}, prime)"),
                ("routers", f"{self.num_routers} (3 levels L0, L1, L2 of R_L = 1 + k(k-1) = {rl}; 3k^2 - 3k + 3)"),
                ("terminals", f"{self.num_terminals} (2k^3 - 2k^2 + 2k, {k} per L0 and per L2 router)"),
                ("router radix", f"{self.radix} (2k)"),
                ("router links", f"{self.num_links} ({rl * k} L0-L1, {rl * k} L1-L2)"),
                ("diameter", "2 router hops between L0/L2 routers (through one L1 router); "
                             "3 over all routers (L0/L2 to an L1 router it is not linked to)"),
                ("minimal paths between L0/L2 routers",
                 f"{k} between L0 router i and L2 router i (the same table row), 1 for every other pair"),
                ("worst case of minimal routing", f"1/{k} (shift by k, Prisacari20 sec. 7.4.2)")]


def parse_oft(text: str) -> Oft:
    (k,) = parse_spec("oft", text, SYNTAX, (1, 1)).numbers
    return Oft(k)


def oft_candidates(shape) -> list[str]:
    """K with 3 (K^2 - K + 1) routers and K terminals on a router."""
    if shape.directed:
        return []
    k = shape.p
    per_level = k * k - k + 1
    return [f"oft:{k}"] if shape.admits(3 * per_level, 4 * k * per_level) else []


FAMILY = Family("oft", SYNTAX, "two-level Orthogonal Fat-Tree k-OFT (Prisacari20 sec. 7.2.2.4): three levels of "
                "1 + k(k-1) routers wired by the k-ML3B table, k - 1 prime, radix 2k", parse_oft, candidates=oft_candidates)
