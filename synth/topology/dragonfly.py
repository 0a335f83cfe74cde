"""Dragonflies (p, a, h): groups of a routers joined by a full mesh of local links, h global links
per router between groups, p terminals per router ([Prisacari20] ch.4-6; Kim et al.,
ISCA 2008).

Spec: `dragonfly:P,A,H[:groups=G][:arrangement=absolute|relative|circulant]`.

Maximum size (the default, and every dragonfly of the seed): g = a h + 1 groups and exactly one
global link between every two groups. A group has a h global ports k = 0..a h - 1; port k sits on
its router k // h. The arrangement says where port k of group i leads:
  absolute   group k if k < i, else k + 1;
  relative   group (i + k + 1) mod g;
  circulant  group i + (k//2 + 1) for even k, i - (k//2 + 1) for odd k (mod g): the ports go to
             the groups at circular distance 1, 2, ... alternately on the + and the - side.
The seed defines no arrangement (it wires maximum-size dragonflies, one link per group pair);
the names are those of Hastings et al., "Comparing global link arrangements for Dragonfly
networks" (IEEE Cluster 2015). Absolute and relative are SST/merlin's two `global_routes` modes.
For circulant we did not find the paper's text: the rule above is our definition. It agrees with
sst-macro's `circulant` inter-group wiring, where ports 2m and 2m + 1 of router x (m < h/2) go to
groups i + (x h/2 + m + 1) and i - (x h/2 + m + 1), and which sst-macro allows only for even h.
Here the ports pair up across the whole group, so h may be odd; when a h is odd, g is even and
the last port (k = a h - 1, even) leads to the opposite group i + g/2, whose last port leads back.
All three rules are consistent pairings at maximum size for every (a, h): port k of i reaches j
exactly when one port of j reaches i, and every other group is reached once.

`groups=G` (2 <= G <= a h + 1) builds fewer, larger bundles: the a h global ports of a group are
spread as evenly as they go over the G - 1 other groups. Every pair of groups gets
b = floor(a h / (G - 1)) links, and the r = a h mod (G - 1) ports left in each group go to the
groups at circular distance 1 .. floor(r/2) on both sides, plus the opposite group i + G/2 when r
is odd (which needs G even; an odd G with an odd r is refused). The count of a pair depends only
on their circular distance, so it is symmetric. A group's ports then take its destinations in the
arrangement's order, the links of one destination on consecutive ports (bundle index 0, 1, ...):
  absolute   by destination group j (at maximum size: the rule above);
  relative   by (j - i - 1) mod G (ditto);
  circulant  by circular distance, the + side first (ditto).
The b-th link from i to j is the b-th link from j to i: that names the far port of every link.

Numbering: router x of group i is router i a + x, named `g<i>r<x>`; terminals router by router
(terminal t on router t // p), so a group's p a terminals are contiguous and Prisacari20 ch.6's
contiguous placement is task t on terminal t. Ports of a router: its terminals 1..p, then its
local links p+1 .. p+a-1 (to routers 0..a-1 of its group in increasing order, itself skipped),
then its global ports p+a .. p+a+h-1 (router port p + a + (k mod h) is group port k). Channel
classes `local` and `global` (synth.topology.direct adds `terminal`); every link has bandwidth 1.
Local links are listed first, by (group, x, y) with x < y, then global links by (lower group, its port).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from synth.core.errors import SynthError
from synth.core.validate import show
from synth.topology.direct import RouterGraph, build_direct_network
from synth.topology.family import (DRAGONFLY_STENCIL_FORMS, DRAGONFLY_UNIFORM_FORMS, Family, Topology, option_choice,
                                   option_int, parse_spec)

ARRANGEMENTS = ("absolute", "relative", "circulant")
SYNTAX = "dragonfly:P,A,H[:groups=G][:arrangement=absolute|relative|circulant]"
CLASSES = ("local", "global")
MAX_PARAMETER = 1 << 12  # P, A and H each; check_size refuses what would not fit well before


class UniformBound(NamedTuple):
    """Prisacari20 ch.6 for minimal routing of uniform traffic on a maximum-size dragonfly."""

    t: float  # T = min(1, T_L, T_R) (6.8)
    t_local: float  # T_L (6.2), not capped
    t_global: float  # T_R (6.5), not capped
    local_balanced: bool  # a B_L >= 2 p B_p (6.3)
    global_balanced: bool  # h B_R >= (p - 1/a) B_p (6.6)


def uniform_throughput_bound(p: int, a: int, h: int, b_l: float = 1.0, b_r: float = 1.0,
                             b_p: float = 1.0) -> UniformBound:
    """The throughput bound of minimal routing under uniform traffic on the maximum-size dragonfly
    (p, a, h), as a fraction of the injection bandwidth B_p (Prisacari20 eq. 6.1-6.8):

        N = p a (a h + 1)
        P_L = p^2 (2 a h + 1) / N                 local-link load per unit injection (6.1)
        T_L = N / (p^2 (2 a h + 1)) * B_L / B_p   (6.2); T_L >= 1 needs about a B_L >= 2 p B_p (6.3)
        P_R = (a p)^2 / N                         global-link load (6.4)
        T_R = N / (a p)^2 * B_R / B_p             (6.5); T_R >= 1 exactly when h B_R >= (p - 1/a) B_p (6.6)
        T = min(1, T_L, T_R)                      (6.8)

    t_local and t_global are returned uncapped; the balance flags are the seed's conditions (6.3)
    and (6.6) themselves (6.3 is the large-network form: T_L can reach 1 slightly below it).
    """
    n = p * a * (a * h + 1)
    # With a = 1 a group is one router: there are no local links to limit anything (6.1 and 6.2
    # count local hops that do not exist).
    t_local = math.inf if a == 1 else n / (p * p * (2 * a * h + 1)) * b_l / b_p
    t_global = n / (a * p) ** 2 * b_r / b_p
    return UniformBound(min(1.0, t_local, t_global), t_local, t_global,
                        a == 1 or a * b_l >= 2 * p * b_p, h * b_r >= (p - 1 / a) * b_p)


@dataclass(frozen=True)
class Dragonfly(Topology):
    family = "dragonfly"
    p: int
    a: int
    h: int
    groups: int
    arrangement: str = "absolute"

    def __post_init__(self) -> None:
        for name in ("p", "a", "h", "groups"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SynthError(f"dragonfly {name} must be a positive integer, got {show(value)}")
        if self.arrangement not in ARRANGEMENTS:
            raise SynthError(f"dragonfly arrangement must be one of {', '.join(ARRANGEMENTS)}, "
                             f"got {show(self.arrangement)}")
        if not 2 <= self.groups <= self.max_groups:
            raise SynthError(f"{show(self.spec)}: groups must be between 2 and a h + 1 = {self.max_groups}, "
                             f"got {self.groups}")
        bundle, remainder = divmod(self.ports_per_group, self.groups - 1)
        if remainder % 2 and self.groups % 2:
            raise SynthError(f"{show(self.spec)}: a h = {self.ports_per_group} global ports over {self.groups - 1} "
                             f"other groups leave {remainder} per group after bundles of {bundle}; an odd remainder "
                             f"needs an opposite group, which an odd number of groups lacks (choose G even, or a G "
                             f"with a h mod (G - 1) even)")
        self.check_size(self.num_terminals + self.num_routers, 2 * self.num_terminals + 2 * self.num_links)

    # ----- parameters and counts -------------------------------------------------------------
    @property
    def max_groups(self) -> int:
        return self.a * self.h + 1

    @property
    def is_maximum(self) -> bool:
        return self.groups == self.max_groups

    @property
    def ports_per_group(self) -> int:
        return self.a * self.h

    @property
    def num_routers(self) -> int:
        return self.a * self.groups

    @property
    def num_terminals(self) -> int:
        return self.p * self.num_routers

    @property
    def num_local_links(self) -> int:
        return self.groups * (self.a * (self.a - 1) // 2)

    @property
    def num_global_links(self) -> int:
        return self.groups * self.ports_per_group // 2  # G a h is even whenever the spec is accepted

    @property
    def num_links(self) -> int:
        return self.num_local_links + self.num_global_links

    @property
    def radix(self) -> int:
        return self.p + self.a - 1 + self.h

    @property
    def spec(self) -> str:
        options = "" if self.is_maximum else f":groups={self.groups}"
        options += "" if self.arrangement == "absolute" else f":arrangement={self.arrangement}"
        return f"dragonfly:{self.p},{self.a},{self.h}{options}"

    def label(self) -> str:
        extra = [] if self.is_maximum else [f"{self.groups} groups"]
        extra += [] if self.arrangement == "absolute" else [self.arrangement]
        return f"dragonfly({self.p},{self.a},{self.h}{'; ' + ', '.join(extra) if extra else ''})"

    def hierarchy(self) -> tuple[int, ...]:
        """Prisacari20 ch.4: H_1 = p terminals per router, H_2 = a routers per group, H_3 = the groups."""
        return (self.p, self.a, self.groups)

    def router_groups(self) -> np.ndarray:
        return np.arange(self.num_routers, dtype=np.int64) // self.a

    def closed_forms(self) -> frozenset[str]:
        return frozenset({DRAGONFLY_STENCIL_FORMS, DRAGONFLY_UNIFORM_FORMS})

    def router_names(self) -> list[str]:
        return [f"g{i}r{x}" for i in range(self.groups) for x in range(self.a)]

    def one_link_per_group_pair(self) -> bool:
        return self.is_maximum

    def router_symmetries(self) -> list[np.ndarray]:
        """The group rotation (router x of group i to router x of group i + 1 mod g, terminals with
        their routers) where the arrangement is invariant under it: relative and circulant, whose
        port k of every group leads the same offset on (absolute's does not)."""
        if self.arrangement == "absolute":
            return []
        routers = np.arange(self.num_routers, dtype=np.int64)
        moved = (routers + self.a) % self.num_routers
        terminals = np.arange(self.num_terminals, dtype=np.int64)
        return [np.concatenate([moved[terminals // self.p] * self.p + terminals % self.p, self.num_terminals + moved])]

    def links_per_offset(self) -> np.ndarray:
        """(G,) global links between groups i and i + d (mod G) for every offset d; 0 for d = 0."""
        g = self.groups
        bundle, remainder = divmod(self.ports_per_group, g - 1)
        offset = np.arange(g)
        distance = np.minimum(offset, g - offset)
        count = np.where(offset > 0, bundle, 0) + ((offset > 0) & (distance <= remainder // 2))
        if remainder % 2:
            count += offset == g // 2  # G is even here
        return count.astype(np.int64)

    # ----- the global wiring ------------------------------------------------------------------
    @cached_property
    def global_ports(self) -> tuple[np.ndarray, np.ndarray]:
        """(destination, partner), both (G, a h): the group that port k of group i leads to, and
        the port of that group at the link's far end. Vectorized; memory O(G a h)."""
        g, ports = self.groups, self.ports_per_group
        count = self.links_per_offset()
        group = np.arange(g, dtype=np.int64)[:, None]
        if self.arrangement == "absolute":
            t = np.arange(g - 1, dtype=np.int64)[None, :]
            others = t + (t >= group)  # (G, G-1): the other groups in increasing order
            width = count[(others - group) % g]
            first = np.cumsum(width, axis=1) - width  # first port of each bundle
            destination = np.repeat(others.ravel(), width.ravel()).reshape(g, ports)
            bundle = np.arange(ports)[None, :] - np.repeat(first.ravel(), width.ravel()).reshape(g, ports)
            position = group - (group > destination)  # where i stands among the groups of j
            return destination, first[destination, position] + bundle
        offsets = np.arange(1, g, dtype=np.int64)
        if self.arrangement == "circulant":  # distance 1 (+, -), distance 2 (+, -), ...
            distance = np.minimum(offsets, g - offsets)
            offsets = offsets[np.argsort(2 * distance + (offsets > g - offsets), kind="stable")]
        width = count[offsets]
        first = np.zeros(g, dtype=np.int64)
        first[offsets] = np.cumsum(width) - width
        port_offset = np.repeat(offsets, width)  # (a h,): the same sequence for every group
        bundle = np.arange(ports) - first[port_offset]
        destination = (group + port_offset[None, :]) % g
        partner = np.broadcast_to(first[g - port_offset] + bundle, (g, ports))
        return destination, np.ascontiguousarray(partner)

    def global_links(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(u, v, port of u's group, port of v's group) of every global link, u in the lower group,
        in order of (u's group, its port)."""
        destination, partner = self.global_ports
        g, ports = destination.shape
        group = np.repeat(np.arange(g, dtype=np.int64), ports)
        port = np.tile(np.arange(ports, dtype=np.int64), g)
        destination, partner = destination.ravel(), partner.ravel()
        lower = group < destination
        group, port, destination, partner = group[lower], port[lower], destination[lower], partner[lower]
        return group * self.a + port // self.h, destination * self.a + partner // self.h, port, partner

    def local_links(self) -> tuple[np.ndarray, np.ndarray]:
        x, y = np.triu_indices(self.a, k=1)
        base = np.arange(self.groups, dtype=np.int64)[:, None] * self.a
        return (base + x[None, :]).ravel(), (base + y[None, :]).ravel()

    # ----- the network arrays -----------------------------------------------------------------
    def build_network(self):
        local_u, local_v = self.local_links()
        global_u, global_v, global_k, global_partner = self.global_links()
        graph = RouterGraph(self.router_names(), np.full(self.num_routers, self.p, dtype=np.int64),
                            np.concatenate([local_u, global_u]), np.concatenate([local_v, global_v]),
                            np.repeat(np.arange(2), [len(local_u), len(global_u)]), CLASSES)
        network = build_direct_network(self.spec, self.family, graph)
        # direct.py numbers a router's global ports in link order; renumber them by group port:
        # port p + a + (k mod h) for group port k. Global link l has channels 2N + 2l (u -> v)
        # and 2N + 2l + 1 (v -> u), after the 2N terminal channels and the local links' channels.
        start = 2 * (self.num_terminals + len(local_u))
        near = self.p + self.a + global_k % self.h
        far = self.p + self.a + global_partner % self.h
        network.channel_src_port[start::2], network.channel_dst_port[start::2] = near, far
        network.channel_src_port[start + 1 :: 2], network.channel_dst_port[start + 1 :: 2] = far, near
        return network

    # ----- facts ------------------------------------------------------------------------------
    def diameter(self) -> int:
        """Router hops of the longest minimal path, minimal meaning at most one global hop (L-G-L,
        Prisacari20 ch.5): 1 with one router per group; else 3 when some two groups each have a router
        without a link to the other, and 2 otherwise. (Never 1 for a >= 2: a bundle's b-th links
        sit on routers that do not decrease with b at both ends, so two groups never link all a^2
        router pairs.) From the port table, O(G a h)."""
        if self.a == 1:
            return 1  # one router per group and at least one link between every two groups
        destination, _ = self.global_ports
        g = self.groups
        router = (np.arange(g, dtype=np.int64)[:, None] * self.a + np.arange(self.ports_per_group)[None, :] // self.h)
        # Distinct (router, destination group), then how many routers of group i reach group j.
        pairs = np.unique(router.ravel() * g + destination.ravel())
        pair_groups, reaching = np.unique((pairs // g) // self.a * g + pairs % g, return_counts=True)
        reverse = (pair_groups % g) * g + pair_groups // g
        reaching_back = reaching[np.searchsorted(pair_groups, reverse)]  # every pair has links both ways
        return 3 if ((reaching < self.a) & (reaching_back < self.a)).any() else 2

    def report_patterns(self) -> list[str]:
        """LAT ([Prisacari20] ch.4's exchange) too, and every terminal to its peer in the next group."""
        network = self.network()
        per_group = network.num_terminals // (int(self.router_groups().max()) + 1)
        return ["a2a-lin", "a2a-lat", "randperm:1", f"shift:{per_group}"]

    def facts(self) -> list[tuple[str, str]]:
        g, a, h, p = self.groups, self.a, self.h, self.p
        per_pair = np.unique(self.links_per_offset()[1:]).tolist()
        size = "a h + 1, maximum size" if self.is_maximum else f"of at most a h + 1 = {self.max_groups}"
        facts = [
            ("groups", f"{g} ({size})"),
            ("routers", f"{self.num_routers} ({a} per group, named g<group>r<router>)"),
            ("terminals", f"{self.num_terminals} ({p} per router, {p * a} per group)"),
            ("local links", f"{self.num_local_links} (a full mesh of {a} routers in each group)"),
            ("global links", f"{self.num_global_links} ({h} per router, "
                             f"{' or '.join(map(str, per_pair))} per group pair)"),
            ("global arrangement", self.arrangement),
            ("router radix", f"{self.radix} (p + a - 1 + h)"),
            ("diameter", f"{self.diameter()} router hops (minimal routing: at most one global hop, L-G-L)"),
        ]
        bound = uniform_throughput_bound(p, a, h)

        def balance(holds: bool, left: int, right: str) -> str:
            return (f"{'holds' if holds else 'does not hold'} with equal bandwidths "
                    f"({left} {'>=' if holds else '<'} {right})")

        facts += [
            ("balance a B_L >= 2p B_p (Prisacari20 eq. 6.3)", balance(bound.local_balanced, a, str(2 * p))),
            ("balance h B_R >= (p - 1/a) B_p (6.6)", balance(bound.global_balanced, h, f"{p - 1 / a:.4g}")),
        ]
        if self.is_maximum:
            facts.append(("uniform-traffic bound T (6.8), minimal routing", f"{bound.t:.4f} with equal bandwidths "
                          f"(T_L {bound.t_local:.4f}, T_R {bound.t_global:.4f})"))
        else:
            facts.append(("uniform-traffic bound T (6.8)", "not given: eq. 6.8 is for a h + 1 groups"))
        return facts


def parse_dragonfly(text: str) -> Dragonfly:
    """`P,A,H[:groups=G][:arrangement=...]` (the part of `dragonfly:...` after the family name)."""
    spec = f"dragonfly:{text}"
    parts = parse_spec("dragonfly", text, SYNTAX, (3, 3), ("groups", "arrangement"), maximum=MAX_PARAMETER)
    p, a, h = parts.numbers
    groups = option_int(parts, "groups", spec, a * h + 1, 2, a * h + 1)
    return Dragonfly(p, a, h, groups, option_choice(parts, "arrangement", spec, ARRANGEMENTS))


def dragonfly_candidates(shape) -> list[str]:
    """Every (a, h) with a - 1 + h the routers' degree, every group count that holds the routers, every
    arrangement."""
    degree = max(shape.degree(True), shape.degree(False))
    if shape.directed or shape.p == 0:
        return []
    specs = []
    for a in range(1, degree + 1):
        h = degree - a + 1
        for groups in sorted({-(-r // a) for r in shape.family_routers()}):
            if 2 <= groups <= a * h + 1 and shape.admits(a * groups, a * groups * degree):
                size = "" if groups == a * h + 1 else f":groups={groups}"
                specs += [f"dragonfly:{shape.p},{a},{h}{size}" + ("" if arrangement == "absolute" else
                                                                  f":arrangement={arrangement}")
                          for arrangement in ARRANGEMENTS]
    return specs


FAMILY = Family("dragonfly", SYNTAX, "dragonfly (Prisacari20 ch.4-6): groups of a fully connected routers, h global "
                "links per router, a h + 1 groups unless groups=G", parse_dragonfly, candidates=dragonfly_candidates)
