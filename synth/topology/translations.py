"""A network's translation group as arithmetic: an element is a vector of exponents, one per
generator, and acts on a node through the node's coordinates in its orbit, so nothing of size
|G| x nodes is ever made (65,536 ranks' table would be 17 GiB).

Where a family's translations (Topology.translations: a torus's or HyperX's unit shifts) commute
and every node's orbit has exactly prod(orders) nodes (the group acts freely on the nodes, and the
generators are independent: G = Z_{n_1} x ... x Z_{n_k}), each node v is g_{x(v)}(b) for one
exponent vector x(v) and the least node b of its orbit, and

    g_e(v) = the node of v's orbit with exponents x(v) + e (mod the orders),

a lookup in one array of the nodes. Where the terminals form one orbit (simply transitive: one
element per terminal, g_r the one moving terminal 0 to terminal r), a schedule that G maps onto
itself is fixed by terminal 0's blocks (synth.collectives.orbit).

The channel orbits come from the generators' channel maps alone (connected components), so that
a channel of orbit O carries, in a step of an orbit schedule, |G| / |O| times the crossings of O
by the representative's transfers (orbit-stabilizer).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components


@dataclass(frozen=True)
class TranslationGroup:
    generators: tuple[np.ndarray, ...]  # node permutations (terminals first, as the Network numbers nodes)
    orders: tuple[int, ...]  # the order of each generator
    exponents: np.ndarray  # (nodes, generators) int64: x(v)
    lookup: np.ndarray  # (orbits of nodes x |G|,) the node of orbit o with mixed-radix exponent index i
    orbit_of: np.ndarray  # (nodes,) its orbit's number (orbits numbered by their least node)
    network: object

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
        """The exponents of the element moving node a to node b (same orbit)."""
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
    """The group of `topology`'s translations as arithmetic, or None and why not (no translations,
    they do not commute, act with fixed points, or are not independent)."""
    generators = topology.translations()
    if not generators:
        return None, f"{topology.spec} has no translations synth knows"
    network = topology.network()
    gens = [np.asarray(g, dtype=np.int64) for g in generators]
    if any(not np.array_equal(g[h], h[g]) for g in gens for h in gens):
        return None, f"the translations of {topology.spec} do not commute"
    orders = []
    for g in gens:
        x, k = g[0], 1
        while x != 0:
            x, k = g[x], k + 1
            if k > network.num_nodes:
                return None, "a generator of infinite order"
        orders.append(k)
    order = int(np.prod(orders, dtype=np.int64))
    nodes = network.num_nodes
    if nodes % order:
        return None, f"the translations of {topology.spec} ({order} elements) do not act freely on its {nodes} nodes"
    orbit_of = np.full(nodes, -1, dtype=np.int64)
    exponents = np.zeros((nodes, len(gens)), dtype=np.int64)
    lookup = np.empty(nodes, dtype=np.int64)
    radix = np.cumprod([1] + orders[:-1]).astype(np.int64)
    orbits = 0
    for start in range(nodes):
        if orbit_of[start] >= 0:
            continue
        members, exps = np.array([start], dtype=np.int64), np.zeros((1, len(gens)), dtype=np.int64)
        for k, g in enumerate(gens):  # the orbit as the product of the generators' cycles
            layers, layer_exps = [members], [exps]
            for j in range(1, orders[k]):
                layers.append(g[layers[-1]])
                e = layer_exps[-1].copy()
                e[:, k] = j
                layer_exps.append(e)
            members, exps = np.concatenate(layers), np.concatenate(layer_exps)
        if len(np.unique(members)) != order or (orbit_of[members] >= 0).any():
            return None, f"the translations of {topology.spec} fix a node or are not independent"
        orbit_of[members] = orbits
        exponents[members] = exps
        lookup[orbits * order + exps @ radix] = members
        orbits += 1
    return TranslationGroup(tuple(gens), tuple(orders), exponents, lookup[:orbits * order], orbit_of, network), ""


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
