"""Symmetric synthesis: design the schedule of one rank per orbit, translate it to every rank.

A network's translations (Topology.translations: the unit shifts of a torus or HyperX) form a
group G of automorphisms. A schedule that G maps onto itself is fixed by what the orbit
representatives' blocks do: rank g(r) sends g(r)'s blocks along the images under g of the pairs r's
blocks take. Its loads follow from the representatives' alone (orbit-stabilizer): a channel c in
channel orbit O carries, in a step, |G| / |O| times the crossings of O by the representatives'
deliveries of that step, whenever every path of the transfer graph is the image of its translate's
(checked). So the time-expanded program (synth.synthesis.exact) shrinks by |G|: a P-rank torus
allgather has P - 1 deliveries per block of rank 0 instead of P (P - 1).

What it proves: the least steps and rounds among translation-invariant schedules. Where a point
reaches the lower bounds of any schedule (the step bound, the cut bound) it is optimal outright;
elsewhere it is a feasible schedule with its gap to the bounds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.topology.translations import channel_map, channel_orbits

MAX_GROUP_CELLS = 1 << 26  # |G| x ranks entries of the group's table (int32: 256 MiB)


@dataclass(frozen=True)
class Symmetry:
    rank_maps: np.ndarray  # (|G|, ranks) int32: every element of G acting on ranks; row 0 the identity
    representatives: np.ndarray  # (orbits,) the least rank of every orbit
    channel_class: np.ndarray  # (channels,) the orbit of every channel
    class_size: np.ndarray  # (orbits of channels,) channels per orbit
    generators: tuple = ()  # (rank map, channel map) of every generator
    node_maps: np.ndarray | None = None  # (|G|, nodes) int32: the same elements acting on the network's nodes

    def moved_paths(self, network, channels: np.ndarray) -> np.ndarray:
        """(|G|, len(channels)): a path's channels moved by every element (between the moved
        nodes; of parallel channels, the first)."""
        return moved_channels(network, self.node_maps, channels)

    def invariant(self, graph) -> bool:
        """Every pair's path of `graph`, moved by a generator, is the moved pair's path (so the
        whole group moves paths onto paths)."""
        return all(equivariant(graph, ranks, channels) for ranks, channels in self.generators)

    @property
    def order(self) -> int:
        return int(self.rank_maps.shape[0])

    def repeat(self) -> np.ndarray:
        """Per channel orbit, how many times a channel of it is crossed per crossing of the orbit by
        one representative delivery, summed over G (|G| / |O|)."""
        return self.order // self.class_size


def moved_channels(network, node_maps: np.ndarray, channels: np.ndarray) -> np.ndarray:
    """(elements, len(channels)): channels moved by every node permutation of `node_maps` (the
    channel between the moved nodes; of parallel channels, the first)."""
    count = network.num_nodes
    keys = network.channel_src.astype(np.int64) * count + network.channel_dst
    order = np.argsort(keys, kind="stable")
    moved = (node_maps[:, network.channel_src[channels]].astype(np.int64) * count
             + node_maps[:, network.channel_dst[channels]])
    return order[np.searchsorted(keys[order], moved)]


def network_symmetry(topology, graph, generators=None) -> Symmetry | None:
    """The translations of `topology` (or the group of `generators`: node permutations, as
    Topology.symmetries gives them) as a Symmetry of the transfer graph `graph`, or None when the
    family has none, they fix a rank, or a path of the graph is not the image of its translate's
    (then the representatives' loads would not tell the others')."""
    generators = topology.translations() if generators is None else generators
    if not generators:
        return None
    network = topology.network()
    n, q = network.num_terminals, graph.ranks_per_node
    channel_maps = [channel_map(network, g) for g in generators]
    rank_generators = [(np.asarray(g[:n], dtype=np.int64)[:, None] * q + np.arange(q)).ravel() for g in generators]
    nodes = _closure([np.asarray(g, dtype=np.int32) for g in generators], network.num_nodes)
    if nodes is None:
        return None
    group = (nodes[:, :n].astype(np.int64)[:, :, None] * q + np.arange(q)).reshape(len(nodes), -1)
    representatives = np.unique(group.min(axis=0))
    # Free: every orbit has |G| ranks (no element but the identity fixes a rank).
    if len(representatives) * len(group) != graph.ranks or any(
            len(np.unique(group[:, r])) != len(group) for r in representatives.tolist()):
        return None
    if not all(equivariant(graph, g, c) for g, c in zip(rank_generators, channel_maps)):
        return None
    channel_class, class_size = channel_orbits(network.num_channels, channel_maps)
    if (len(group) % class_size).any():  # the group on channels is larger than on ranks: no uniform repeat
        return None
    return Symmetry(group.astype(np.int32), representatives.astype(np.int64), channel_class, class_size,
                    tuple(zip(rank_generators, channel_maps)), nodes)


def _closure(generators: list[np.ndarray], ranks: int) -> np.ndarray | None:
    """Every element of the group the permutations generate (breadth-first), identity first."""
    identity = np.arange(ranks, dtype=generators[0].dtype)
    seen = {identity.tobytes()}
    elements, frontier = [identity], [identity]
    while frontier:
        grown = []
        for element in frontier:
            for g in generators:
                image = g[element]
                key = image.tobytes()
                if key not in seen:
                    seen.add(key)
                    elements.append(image)
                    grown.append(image)
                    if len(elements) * ranks > MAX_GROUP_CELLS:
                        return None
        frontier = grown
    return np.stack(elements)


def equivariant(graph, ranks: np.ndarray, channels: np.ndarray) -> bool:
    """Every pair's path, moved by the translation, is the path of the moved pair."""
    keys = graph.dst.astype(np.int64) * graph.ranks + graph.src
    moved = ranks[graph.dst] * graph.ranks + ranks[graph.src]
    where = np.searchsorted(keys, moved)
    if (where >= len(keys)).any() or not np.array_equal(keys[np.minimum(where, len(keys) - 1)], moved):
        return False
    image = graph.paths.select(where)
    return (np.array_equal(image.offsets, graph.paths.offsets)
            and np.array_equal(image.channels, channels[graph.paths.channels]))


def translate(symmetry: Symmetry, graph, deliveries: tuple, sources: np.ndarray) -> tuple:
    """The whole schedule's deliveries from the representatives': every element of G moves each
    (step, pair, block) of a representative to (step, the moved pair, the moved rank's block).
    `sources` is the representatives' blocks' ranks (block k: chunk k // orbits); the full
    schedule's block of rank r and chunk c is c x ranks + r (synth.collectives.schedule)."""
    step, pair, block, receiver = deliveries
    g = symmetry.rank_maps.astype(np.int64)  # (|G|, ranks)
    orbits = len(symmetry.representatives)
    chunk = block // orbits
    src = g[:, graph.src[pair]]  # (|G|, deliveries)
    dst = g[:, graph.dst[pair]]
    keys = graph.dst.astype(np.int64) * graph.ranks + graph.src
    moved_pair = np.searchsorted(keys, (dst * graph.ranks + src).ravel())
    moved_block = (chunk[None, :] * graph.ranks + g[:, sources[block]]).ravel()
    moved_step = np.broadcast_to(step, src.shape).ravel()
    return moved_step, moved_pair, moved_block, g[:, receiver].ravel()  # the receiver in forward time


def translation_group(topology):
    """(node maps (|G|, nodes) int32, channel orbit per channel, channels per orbit) of the
    translations of `topology` where they commute and act freely and transitively on its terminals
    (|G| = N: one element per terminal, element g moving terminal 0 to terminal node_maps[g, 0]);
    else None."""
    generators = topology.translations()
    if not generators:
        return None
    network = topology.network()
    n = network.num_terminals
    if any(not np.array_equal(g[h], h[g]) for g in generators for h in generators):
        return None  # not abelian (Kautz's affine maps): the Cayley-graph routing assumes it commutes
    nodes = _closure([np.asarray(g, dtype=np.int32) for g in generators], network.num_nodes)
    if nodes is None or len(nodes) != n or len(np.unique(nodes[:, 0])) != n or (nodes[:, 0] >= n).any():
        return None
    channel_class, class_size = channel_orbits(network.num_channels, [channel_map(network, g) for g in generators])
    return nodes, channel_class, class_size
