"""Relay trees on networks whose ranks come in groups (a dragonfly's groups; elsewhere the ranks
of one router): the trees method's points between its breadth-first trees (the transfer graph's
diameter in steps) and every block sent straight (one step, P - 1 messages a port), and its
schedules at thousands of ranks, where no balanced trees are made.

Direct relays (two steps): a block of source s reaches, in step 1, every rank of s's group and
one relay in every other group; in step 2 each relay passes it to the rest of its group. The
relay of s in group B is the rank of B at s's position within its own group, modulo B's size, so
with groups of equal size every rank of B relays exactly one block of every other group: a
terminal receives P - 1 blocks in all, the terminal links' bound, and a block crosses between two
groups once. Messages a port starts: (own group - 1) + (groups - 1) in step 1, and (own group - 1)
in step 2, where sending straight starts P - 1 (dragonfly (3,6,3): 52 against 341; Slim Fly
q = 13, groups its routers of 10 ranks: 346 and 9 against 3,379).

Gathered relays (three steps, `RelayTrees.gathered`): a group first gathers its blocks in every
member, so one message carries them all to each other group; fewer messages a port again (Slim
Fly q = 13: 52), the same crossings between groups.

A reduce-scatter runs the same trees backwards (synth.synthesis.exact.spread_schedule).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.measure.cuts import integer_bandwidth
from synth.synthesis.exact import FEASIBLE, OPTIMAL, FrontPoint, LoadClasses, delivery_rounds
from synth.synthesis.transfers import terminal_routers


def rank_groups(topology, ranks_per_node: int) -> np.ndarray | None:
    """The group of every rank: its router's group on networks built of groups (dragonflies), else
    its router (Slim Fly, fat trees' leaves, Kautz graphs with several terminals a router); None
    where no group holds two ranks (each relay would be its block's receiver: the straight sends) or
    one group holds them all."""
    network = topology.network()
    router = terminal_routers(network) - network.num_terminals
    groups = topology.router_groups()
    group = router if groups is None else np.asarray(groups, dtype=np.int64)[router]
    group = np.repeat(group, ranks_per_node)
    size = np.bincount(np.unique(group, return_inverse=True)[1])
    if len(size) < 2 or size.max(initial=0) < 2:  # one group: no other group to relay to
        return None
    return group


def group_neighbours(topology, ranks_per_node: int, group: np.ndarray) -> list[np.ndarray]:
    """Per group (numbered 0..G-1 as `group`, from rank_groups, numbers them) the groups a channel
    joins one of its routers to, in order (groups joined only through routers without ranks, a
    fat tree's spines: none)."""
    network = topology.network()
    router = np.repeat(terminal_routers(network), ranks_per_node)
    _, label = np.unique(group, return_inverse=True)
    of_router = np.full(len(network.node_level), -1, dtype=np.int64)
    of_router[router] = label
    a, b = of_router[network.channel_src], of_router[network.channel_dst]
    keep = (a >= 0) & (b >= 0) & (a != b)
    count = int(label.max()) + 1
    keys = np.unique(a[keep] * count + b[keep])
    bounds = np.searchsorted(keys // count, np.arange(count + 1))
    return [keys[bounds[g]:bounds[g + 1]] % count for g in range(count)]


def distinct_node_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ordered pairs (a, b) of different nodes, sorted."""
    nodes = int(max(a.max(initial=0), b.max(initial=0))) + 1
    keys = np.unique(np.asarray(a, dtype=np.int64) * nodes + b)
    keys = keys[keys // nodes != keys % nodes]
    return keys // nodes, keys % nodes


@dataclass(frozen=True)
class RelayTrees:
    """Per delivery (every block to every rank but its source): its step, sender, receiver and
    block, forward in time."""

    step: np.ndarray
    sender: np.ndarray
    receiver: np.ndarray
    block: np.ndarray
    steps: int
    method: str

    @staticmethod
    def direct(sources: np.ndarray, group: np.ndarray) -> "RelayTrees | None":
        """Two steps: a block to its own group and to one relay in every other group, which passes
        it on (the module's docstring); None where there is one group (the straight sends)."""
        found = _deliveries(sources, group)
        if found is None:
            return None
        (block, receiver, source, here, there), (order, start, size, position) = found
        relay = order[start[here] + position[source] % size[here]]
        straight = (here == there) | (relay == receiver)
        sender = np.where(straight, source, relay).astype(receiver.dtype)
        return RelayTrees(np.where(straight, 0, 1).astype(np.int8), sender, receiver, block, 2, "relay trees")

    @staticmethod
    def gathered(sources: np.ndarray, group: np.ndarray) -> "RelayTrees | None":
        """Three steps: every rank's blocks to the rest of its group; then, for every ordered pair
        of groups (A, B), one rank of A sends all of A's blocks to one rank of B in one message;
        then that rank passes them to the rest of B. With the groups numbered 0..m-1 and
        d = (B - A) mod m, the sender is A's member at position (d - 1) mod |A| and the receiver
        B's at (d - 1) mod |B|: each rank sends and receives for about (m - 1) / |group| groups.
        Messages a port starts: (|group| - 1) + ceil((m - 1) / |group|) + (|group| - 1) (Slim Fly
        q = 13: 9 + 34 + 9 = 52, where the direct relays start 355); a block crosses between two
        groups once, as in the direct relays, and a terminal receives P - 1 blocks in all."""
        found = _deliveries(sources, group)
        if found is None:
            return None
        (block, receiver, source, here, there), (order, start, size, position) = found
        m = len(size)
        d = (here - there) % m  # 0 within a group
        relay = order[start[here] + (d - 1) % size[here]]  # B's receiver of A's blocks
        sender = order[start[there] + (d - 1) % size[there]]  # A's sender of them
        step = np.where(here == there, 0, np.where(relay == receiver, 1, 2)).astype(np.int8)
        sender = np.where(step == 0, source, np.where(step == 1, sender, relay)).astype(receiver.dtype)
        return RelayTrees(step, sender, receiver, block, 3, "gathered relays")

    def node_pairs(self, ranks_per_node: int, reverse: bool) -> tuple[np.ndarray, np.ndarray]:
        """The ordered pairs of distinct nodes the trees' transfers join (turned round where
        `reverse`: a reduce-scatter's partials flow from receiver to sender)."""
        a, b = self.sender // ranks_per_node, self.receiver // ranks_per_node
        return distinct_node_pairs(b, a) if reverse else distinct_node_pairs(a, b)

    def deliveries(self, graph, reverse: bool) -> tuple:
        """(step, pair, block, receiver) per delivery, the pairs numbered in `graph` (which holds
        every pair they use, in the program's direction: turned round where `reverse`)."""
        a, b = (self.receiver, self.sender) if reverse else (self.sender, self.receiver)
        pair = graph.pair_index(a, b)
        return self.step.astype(np.int64), pair, self.block.astype(np.int64), self.receiver.astype(np.int64)

    def point(self, graph, network, reverse: bool, rounds_bound: int, remake) -> FrontPoint:
        """The trees as a front point over `graph`; its deliveries made again by `remake()` (the
        trees anew) when its schedule is: at thousands of ranks they are hundreds of megabytes."""
        step, pair, _, _ = self.deliveries(graph, reverse)
        classes = LoadClasses.channels(integer_bandwidth(network))
        rounds = delivery_rounds(graph, classes, step, pair, self.steps)
        return FrontPoint(self.steps, rounds, OPTIMAL if rounds <= rounds_bound else FEASIBLE, 0.0,
                          lambda: remake().deliveries(graph, reverse), method=self.method, graph=graph)


def _deliveries(sources: np.ndarray, group: np.ndarray):
    """Every block to every rank but its source, as arrays (block, receiver, source, the
    receiver's group, the source's group), and the groups' layout (ranks by group, each group's
    start in that order, its size, every rank's position in its group); None for one group."""
    p = len(group)
    labels, members = np.unique(group, return_inverse=True)
    if len(labels) < 2:
        return None
    size = np.bincount(members)
    order = np.argsort(members, kind="stable")  # ranks by group, in rank order within it
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    position = np.empty(p, dtype=np.int64)
    position[order] = np.arange(p) - start[members[order]]
    kind = np.int32 if p * len(sources) < 2**31 else np.int64  # 16.7 M deliveries at 4,096 ranks
    block = np.repeat(np.arange(len(sources), dtype=kind), p)
    receiver = np.tile(np.arange(p, dtype=kind), len(sources))
    keep = receiver != sources[block]
    block, receiver = block[keep], receiver[keep]
    source = sources[block]
    return (block, receiver, source, members[receiver], members[source]), (order, start, size, position)
