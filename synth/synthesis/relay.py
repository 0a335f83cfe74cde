"""Relay trees: two steps over every pair on networks built of groups (dragonflies), the trees
method's point between its breadth-first trees (the transfer graph's diameter in steps) and every
block sent straight (one step, P - 1 messages a port).

A block of source s reaches, in step 1, every rank of s's group and one relay in every other
group; in step 2 each relay passes it to the rest of its group. The relay of s in group B is the
rank of B at s's position within its own group, modulo B's size, so with groups of equal size
every rank of B relays exactly one block of every other group: a global link carries one block
per source of its group in step 1 and none in step 2, and a terminal receives P - 1 blocks in all,
the terminal links' bound. Messages a port starts: (own group - 1) + (groups - 1) in step 1, and
(own group - 1) in step 2, where sending straight starts P - 1 (dragonfly (3,6,3): 52 against 341).
A reduce-scatter runs the same trees backwards (synth.synthesis.exact.spread_schedule).
"""

from __future__ import annotations

import numpy as np

from synth.synthesis.exact import FEASIBLE, OPTIMAL, FrontPoint, LoadClasses, delivery_rounds, integer_bandwidth
from synth.synthesis.transfers import terminal_routers


def rank_groups(topology, ranks_per_node: int) -> np.ndarray | None:
    """The group of every rank (its terminal's router's), or None for families without groups."""
    groups = topology.router_groups()
    if groups is None:
        return None
    network = topology.network()
    router = terminal_routers(network) - network.num_terminals
    return np.repeat(np.asarray(groups, dtype=np.int64)[router], ranks_per_node)


def relay_point(sources: np.ndarray, group: np.ndarray, graph, network, reverse: bool,
                rounds_bound: int) -> FrontPoint | None:
    """The relay trees of blocks starting at `sources` over `graph` (every pair), as a front point
    of two steps; None where there is one group (the trees are then the straight sends)."""
    p = graph.ranks
    labels, members = np.unique(group, return_inverse=True)
    if len(labels) < 2:
        return None
    size = np.bincount(members)
    order = np.argsort(members, kind="stable")  # ranks by group, in rank order within it
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    position = np.empty(p, dtype=np.int64)
    position[order] = np.arange(p) - start[members[order]]
    blocks = np.repeat(np.arange(len(sources)), p)
    receiver = np.tile(np.arange(p), len(sources))
    source = sources[blocks]
    keep = receiver != source
    blocks, receiver, source = blocks[keep], receiver[keep], source[keep]
    here = members[receiver]
    relay = order[start[here] + position[source] % size[here]]
    straight = (here == members[source]) | (relay == receiver)
    sender = np.where(straight, source, relay)
    step = np.where(straight, 0, 1).astype(np.int64)
    # the pair in the program's direction: forward u -> v, or (reverse) the reduction's v -> u
    keys = graph.dst.astype(np.int64) * p + graph.src
    a, b = (receiver, sender) if reverse else (sender, receiver)
    pair = np.searchsorted(keys, b * p + a)
    classes = LoadClasses.channels(integer_bandwidth(network))
    rounds = delivery_rounds(graph, classes, step, pair, 2)
    return FrontPoint(2, rounds, OPTIMAL if rounds <= rounds_bound else FEASIBLE, 0.0, (step, pair, blocks, receiver),
                      method="relay trees", graph=graph)
