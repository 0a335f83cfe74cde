"""A network's translation group as arithmetic: an element is a vector of exponents, one per
generator, and acts on a node through the node's coordinates in its orbit, so nothing of size
|G| x nodes is ever made (65,536 ranks' table would be 17 GiB).

Where a family's symmetries (Topology.symmetries: a torus's or HyperX's unit shifts, a
dragonfly's group rotation, and the rotation of every router's terminals where it has several)
commute, they generate G = Z_{n_1} x ... x Z_{n_k} acting on the nodes. Each orbit keeps one row
of |G| nodes, the images of its least node b by every element in mixed-radix order; a node v is
g_{x(v)}(b) for an exponent vector x(v) (the first of its row), and, G being abelian,

    g_e(v) = g_{x(v) + e}(b) = row(v's orbit)[x(v) + e (mod the orders)],

a lookup in one array of (orbits x |G|) cells: a router fixed by the terminal rotation appears
several times in its row. Where G acts freely on the terminals (each terminal orbit has |G|
terminals), a schedule that G maps onto itself is fixed by the blocks of one terminal per orbit,
its base (synth.collectives.orbit): one (a torus's) or a few (a dragonfly's routers of one group).

The channel orbits come from the generators' channel maps alone (connected components), so that
a channel of orbit O carries, in a step of an orbit schedule, |G| / |O| times the crossings of O
by the representative's transfers (orbit-stabilizer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

MAX_TABLE_CELLS = 1 << 26  # orbits x |G| entries of the per-orbit tables (int64: 512 MiB)


@dataclass(frozen=True)
class TranslationGroup:
    generators: tuple[np.ndarray, ...]  # node permutations (terminals first, as the Network numbers nodes)
    orders: tuple[int, ...]  # the order of each generator
    exponents: np.ndarray  # (nodes, generators) int64: x(v)
    lookup: np.ndarray  # (orbits of nodes x |G|,) the image of orbit o's least node by the element of mixed-radix
    # exponent index i (a node fixed by some elements appears several times in its orbit's row)
    orbit_of: np.ndarray  # (nodes,) its orbit's number (orbits numbered by their least node)
    network: object

    def free_on(self, nodes: np.ndarray) -> bool:
        """Whether no element but the identity fixes any of `nodes` (each orbit has |G| nodes)."""
        rows = self.lookup.reshape(-1, self.order)[np.unique(self.orbit_of[np.asarray(nodes)])]
        return all(len(np.unique(row)) == self.order for row in rows)

    def bases(self, nodes: np.ndarray) -> np.ndarray:
        """The least node of every orbit meeting `nodes`, in increasing order (each node of a free
        orbit is g_x(its base) for exactly one x: `exponents`)."""
        return np.unique(self.lookup.reshape(-1, self.order)[np.unique(self.orbit_of[np.asarray(nodes)]), 0])

    @property
    def order(self) -> int:
        return int(np.prod(self.orders, dtype=np.int64))

    def index(self, exponents: np.ndarray) -> np.ndarray:
        """The mixed-radix number of exponent vectors (generator 0 least significant)."""
        e = np.asarray(exponents, dtype=np.int64) % np.asarray(self.orders, dtype=np.int64)
        radix = np.cumprod((1,) + self.orders[:-1]).astype(np.int64)
        return e @ radix

    def move_nodes(self, exponents: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """g_e(v) for every (e, v) row (broadcast): exponents (..., k), nodes (...)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        moved = self.exponents[nodes] + np.asarray(exponents, dtype=np.int64)
        return self.lookup[self.orbit_of[nodes] * self.order + self.index(moved)]

    def difference(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The exponents of the element moving node a to node b (same free orbit: one element)."""
        return (self.exponents[np.asarray(b)] - self.exponents[np.asarray(a)]) % np.asarray(self.orders)

    def move_channels(self, exponents: np.ndarray, channels: np.ndarray) -> np.ndarray:
        """g_e(c) per row: the channel between the moved ends (the k-th of parallel channels to the
        k-th, as the generators' channel maps take them)."""
        net = self.network
        src = self.move_nodes(exponents, net.channel_src[channels])
        dst = self.move_nodes(exponents, net.channel_dst[channels])
        keys, order, occurrence = self._channel_keys
        moved = src * net.num_nodes + dst
        return order[np.searchsorted(keys[order], moved) + occurrence[channels]]

    @cached_property
    def _channel_keys(self):
        net = self.network
        keys = net.channel_src.astype(np.int64) * net.num_nodes + net.channel_dst
        order = np.argsort(keys, kind="stable")
        first = np.searchsorted(keys[order], keys)
        occurrence = np.empty(len(keys), dtype=np.int64)
        occurrence[order] = np.arange(len(keys)) - first[order]
        return keys, order, occurrence

    @cached_property
    def channel_classes(self) -> tuple[np.ndarray, np.ndarray]:
        """(orbit per channel, channels per orbit)."""
        return channel_orbits(self.network.num_channels, [channel_map(self.network, g) for g in self.generators])

    def repeat(self) -> np.ndarray:
        """Per channel orbit |G| / |O|: a channel's crossings per crossing of its orbit by the representative."""
        return self.order // self.channel_classes[1]


def translation_group(topology) -> tuple[TranslationGroup | None, str]:
    """The group `topology.symmetries()` generates, as arithmetic, or None and why not (none known,
    they do not commute, or the group is too large to tabulate per orbit)."""
    generators = topology.symmetries()
    if not generators:
        return None, f"{topology.spec} has no translations synth knows"
    network = topology.network()
    gens = [np.asarray(g, dtype=np.int64) for g in generators]
    if any(not np.array_equal(g[h], h[g]) for g in gens for h in gens):
        return None, f"the translations of {topology.spec} do not commute"
    orders = [math.lcm(*_cycle_lengths(g)) for g in gens]
    order = int(np.prod(orders, dtype=np.int64))
    nodes = network.num_nodes
    orbit_of = np.full(nodes, -1, dtype=np.int64)
    exponents = np.zeros((nodes, len(gens)), dtype=np.int64)
    tables, orbits = [], 0
    for start in range(nodes):
        if orbit_of[start] >= 0:
            continue
        if (orbits + 1) * order > MAX_TABLE_CELLS:
            return None, f"the {order:,} translations of {topology.spec} have more orbits than synth tabulates"
        # the images of the orbit's least node under every element, in mixed-radix order of the
        # exponents (generator 0 least significant): the product of the generators' cycles
        members, exps = np.array([start], dtype=np.int64), np.zeros((1, len(gens)), dtype=np.int64)
        for k, g in enumerate(gens):
            layers, layer_exps = [members], [exps]
            for j in range(1, orders[k]):
                layers.append(g[layers[-1]])
                e = layer_exps[-1].copy()
                e[:, k] = j
                layer_exps.append(e)
            members, exps = np.concatenate(layers), np.concatenate(layer_exps)
        if (orbit_of[members] >= 0).any():
            raise AssertionError("orbits of a group overlap")  # cannot happen: the orbits partition the nodes
        first = np.unique(members, return_index=True)[1]  # a node's exponents: the first element reaching it
        orbit_of[members[first]] = orbits
        exponents[members[first]] = exps[first]
        tables.append(members)
        orbits += 1
    return TranslationGroup(tuple(gens), tuple(orders), exponents, np.concatenate(tables), orbit_of, network), ""


def _cycle_lengths(permutation: np.ndarray) -> list[int]:
    """The distinct cycle lengths of a permutation."""
    seen = np.zeros(len(permutation), dtype=bool)
    lengths = set()
    for start in range(len(permutation)):
        if seen[start]:
            continue
        x, k = start, 0
        while not seen[x]:
            seen[x] = True
            x, k = permutation[x], k + 1
        lengths.add(k)
    return sorted(lengths)


def terminal_rotation(network) -> np.ndarray | None:
    """The node permutation moving every router's k-th terminal (in terminal order) to its
    (k + 1)-th, mod their count, routers fixed: an automorphism where each terminal has one link to
    its router (its terminals are interchangeable), commuting with every automorphism that moves a
    router's k-th terminal to another's k-th (the families' translations do). None where a router
    has one terminal, or routers have different counts (the rotation would then fix terminals)."""
    n = network.num_terminals
    src, dst = network.channel_src, network.channel_dst
    injection = np.flatnonzero(src < n)
    if len(injection) != n or (dst[injection] < n).any() or len(np.unique(src[injection])) != n:
        return None
    router_of = np.empty(n, dtype=np.int64)
    router_of[src[injection]] = dst[injection]
    order = np.lexsort((np.arange(n), router_of))  # terminals by router, then by number
    counts = np.unique(router_of, return_counts=True)[1]
    if counts.min() != counts.max() or counts[0] < 2:
        return None
    p = int(counts[0])
    slots = order.reshape(-1, p)
    image = np.arange(network.num_nodes, dtype=np.int64)
    image[slots] = np.roll(slots, -1, axis=1)
    return image


def channel_map(network, nodes: np.ndarray) -> np.ndarray:
    """The channel permutation of a node permutation (the k-th of parallel channels to the k-th),
    checked to be an automorphism."""
    nodes = np.asarray(nodes, dtype=np.int64)
    count = network.num_nodes
    keys = network.channel_src.astype(np.int64) * count + network.channel_dst
    image = nodes[network.channel_src] * count + nodes[network.channel_dst]
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    if not np.array_equal(np.sort(image), sorted_keys):
        raise AssertionError(f"{network.spec}: a translation of the family is not an automorphism")
    first = np.searchsorted(sorted_keys, keys)
    occurrence = np.empty(len(keys), dtype=np.int64)
    occurrence[order] = np.arange(len(keys)) - first[order]
    return order[np.searchsorted(sorted_keys, image) + occurrence]


def channel_orbits(channels: int, maps: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(orbit per channel, channels per orbit) of the group the channel permutations generate."""
    src = np.concatenate([np.arange(channels)] * len(maps))
    dst = np.concatenate(maps)
    joined = coo_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(channels, channels))
    _, label = connected_components(joined, directed=True, connection="weak")
    return label.astype(np.int64), np.bincount(label).astype(np.int64)
