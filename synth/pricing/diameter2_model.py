"""Low-diameter topologies for one router radix: [Prisacari20] ch.7, Figure 7.3 and sec. 7.2.

For a router radix r, each family's largest configuration whose routers have at most r ports,
with its terminal and router counts, cost (router ports and links per terminal, counted as the
seed counts them: every router port, and every cable including the terminals' own), diameter in
router hops, the seed's asymptotic scale, and the worst-case throughput of minimal routing under
the seed's adversarial patterns (sec. 7.4: Slim Fly pairs at distance two sharing links 1/(2p),
MLFM shift by h 1/h, OFT shift by k 1/k).

The counts are the seed's closed forms; tests build the networks and compare.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class Configuration:
    family: str
    spec: str | None  # the synth spec that builds it (None: no family module for it)
    radix: int  # router radix used
    terminals: int
    routers: int
    ports_per_terminal: float
    links_per_terminal: float
    diameter: int
    scale: str  # the seed's asymptotic N(r), Figure 7.3
    worst_case: Fraction | None  # minimal routing's throughput under the seed's worst case, if it gives one


def _is_prime(n: int) -> bool:
    return n >= 2 and all(n % d for d in range(2, math.isqrt(n) + 1))


def _is_prime_power(n: int) -> bool:
    return n >= 2 and any(_is_prime(p) and p ** round(math.log(n, p)) == n for p in range(2, n + 1) if n % p == 0)


def hyperx_2d(r: int) -> Configuration | None:
    """2D HyperX with p = r/3 terminals and r/3 + 1 routers per dimension: R = (r/3+1)^2, N = (r/3)(r/3+1)^2."""
    p = r // 3
    if p < 1:
        return None
    side = p + 1
    routers, terminals = side * side, p * side * side
    links = terminals + routers * 2 * (side - 1) // 2
    return Configuration("2D HyperX", f"hyperx:{side},{side}:p={p}", 3 * p, terminals, routers, 3 * p * routers / terminals,
                         links / terminals, 2, "r^3/27", None)


def slim_fly_for(q: int, p: int | None = None) -> Configuration | None:
    """The MMS Slim Fly of prime power q = 4w + delta (delta in -1, 0, 1): R = 2q^2 routers of
    network radix r' = (3q - delta)/2, p terminals each (default ceil(r'/2), sec. 7.2)."""
    delta = {1: 1, 3: -1, 0: 0}.get(q % 4)
    if delta is None or q < 3 or not _is_prime_power(q):
        return None
    network_radix = (3 * q - delta) // 2
    p = -(-network_radix // 2) if p is None else p
    routers = 2 * q * q
    terminals = p * routers
    spec = f"slimfly:{q}" if p == -(-network_radix // 2) else f"slimfly:{q}:p={p}"
    return Configuration("Slim Fly", spec, network_radix + p, terminals, routers, (network_radix + p) * routers / terminals,
                         (terminals + network_radix * routers / 2) / terminals, 2, "r^3/8", Fraction(1, 2 * p))


def slim_fly(r: int) -> Configuration | None:
    """The largest Slim Fly (default p) whose router radix r' + p is at most r."""
    fitting = [c for c in (slim_fly_for(q) for q in range(3, r + 1)) if c is not None and c.radix <= r]
    return max(fitting, key=lambda c: c.terminals, default=None)


def fat_tree(r: int, levels: int) -> Configuration | None:
    """Full-bisection fat trees of radix-r routers: two levels N = r^2/2 (3r/2 routers), three
    levels N = r^3/4 (5r^2/4 routers); cost 3 ports and 2 links, or 5 and 3, per terminal."""
    half = r // 2
    if half < 1:
        return None
    if levels == 2:
        return Configuration("2-level fat tree", f"xgft:2:{half},{r}:1,{half}", 2 * half, 2 * half * half, 3 * half,
                             3.0, 2.0, 2, "r^2/2", None)
    terminals = 2 * half ** 3
    return Configuration("3-level fat tree", f"xgft:3:{half},{half},{r}:1,{half},{half}", 2 * half, terminals,
                         5 * half * half, 5.0, 3.0, 4, "r^3/4", None)


def mlfm(r: int) -> Configuration | None:
    """h-MLFM with h = r/2: N = h^3 + h^2, R = 3h(h+1)/2, 3 ports and 2 links per terminal."""
    h = r // 2
    if h < 1:
        return None
    return Configuration("MLFM", f"mlfm:{h}", 2 * h, h ** 3 + h * h, 3 * h * (h + 1) // 2, 3.0, 2.0, 2, "r^3/8",
                         Fraction(1, h))


def oft(r: int) -> Configuration | None:
    """The largest two-level k-OFT with 2k <= r and k - 1 prime: N = 2k^3 - 2k^2 + 2k, R = 3k^2 - 3k + 3."""
    k = r // 2
    while k >= 3 and not _is_prime(k - 1):
        k -= 1
    if k < 3:
        return None
    return Configuration("OFT", f"oft:{k}", 2 * k, 2 * k ** 3 - 2 * k * k + 2 * k, 3 * k * k - 3 * k + 3, 3.0, 2.0, 2,
                         "r^3/4", Fraction(1, k))


def figure_7_3(r: int) -> list[Configuration]:
    """Every family's configuration for router radix r (those that exist for it)."""
    candidates = [hyperx_2d(r), slim_fly(r), fat_tree(r, 2), fat_tree(r, 3), mlfm(r), oft(r)]
    return [c for c in candidates if c is not None]
