"""Few-step symmetric schedules: dissemination by translations (the latency end of the front).

The spreading trees of synth.synthesis.exact take as many steps as the transfer graph's diameter,
one message per port each: bandwidth-optimal, but at small messages the alpha terms dominate. On a
network whose translations form an abelian group G acting regularly on the ranks (a torus, a
HyperX, one rank per node), a translation-invariant schedule of few steps is fixed by what rank 0
receives: in step s it receives, from f(0) for each chosen translation f, the blocks f(H_s) it
lacks (H_s: the ranks whose blocks it holds), and every rank e(0) does the same moved by e. So H
grows to H u f(H) u ... per step, up to (1 + k)-fold with k translations (Bruck's dissemination,
generalized to any such group); rank e(0) sends to e(f^-1(0)) for each f, one message per port
when the k translations leave a rank by distinct ports.

The translations of a step are chosen greedily: the most new blocks first, scored against the
channels their paths cross (score = new blocks / (1 + lam x hops)); lam = 0 gives the fewest
steps, larger lam shorter paths and less load. Each lam is a point of the front, priced by the
cost model like any other; none is claimed optimal (the step count is at least the bound of any
schedule, log_{1+ports} P, and the file says how far).
"""

from __future__ import annotations

import numpy as np

from synth.pricing.alphabeta import message_ports
from synth.measure.cuts import integer_bandwidth
from synth.synthesis.exact import FEASIBLE, FrontPoint
from synth.synthesis.transfers import TransferGraph, pairs_graph
from synth.topology.paths import Paths

PENALTIES = (0.0, 1.0, 4.0)  # lam per variant: fewest steps first


def abelian_regular(symmetry, ranks_per_node: int) -> bool:
    """One orbit of |G| = P ranks, one rank per node, and G commutative (checked on its elements
    against the first few: rank maps compose the same both ways)."""
    g = symmetry.rank_maps
    if ranks_per_node != 1 or len(symmetry.representatives) != 1 or g.shape[0] != g.shape[1]:
        return False
    probe = g[: min(len(g), 8)].astype(np.int64)
    return all(np.array_equal(a[g], g[:, a]) for a in probe)


def dissemination_points(symmetry, topology, router: str, chunks: int, reverse: bool, ports: int, routes=None,
                         say=lambda text: None) -> list[FrontPoint]:
    """A front point per penalty (duplicates dropped): its deliveries over its own transfer graph,
    reversed for a reduce-scatter. The pairs from rank 0 (and to it) are routed by `router`; every
    other pair takes their paths moved by the translation (so a translation moves paths onto
    paths, as the choice of ports assumes)."""
    g = symmetry.rank_maps.astype(np.int64)
    p = g.shape[1]
    network = topology.network()
    others = np.arange(1, p)
    zeros = np.zeros(p - 1, dtype=np.int64)
    base = {"from": pairs_graph(topology, 1, "from rank 0", (zeros, others), router, routes=routes),
            "to": pairs_graph(topology, 1, "to rank 0", (others, zeros), router, routes=routes)}
    router = base["from"].router  # the routes file's name where its paths are taken
    port, hops = _ports(g, symmetry, base, network, reverse)
    points, seen = [], set()
    for lam in PENALTIES:
        plan = _greedy(g, port, hops, ports, lam)
        key = tuple(tuple((f, len(a)) for f, a in step) for step in plan)
        if key in seen:
            continue
        seen.add(key)
        point = _point(plan, g, symmetry, base, network, chunks, reverse, router)
        say(f"dissemination (lam {lam:g}): {point.steps} steps, {point.rounds} rounds")
        points.append(point)
    return points


def _ports(g: np.ndarray, symmetry, base: dict, network, reverse: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per translation f, the port at which rank 0 starts its message and the message's hops. A
    reduce-scatter (run backwards) sends 0 -> f(0) on the routed path; an allgather sends
    0 -> f^-1(0) on the path of f(0) -> 0 moved by f^-1."""
    p = g.shape[1]
    if reverse:
        graph = base["from"]
        port, hops = np.full(p, -1, dtype=np.int64), np.zeros(p, dtype=np.int64)
        port[graph.dst], hops[graph.dst] = graph.port, np.diff(graph.paths.offsets)
        return port[g[:, 0]], hops[g[:, 0]]
    graph = base["to"]
    first, hops = np.full(p, -1, dtype=np.int64), np.zeros(p, dtype=np.int64)
    first[graph.src], hops[graph.src] = graph.port, np.diff(graph.paths.offsets)
    element_of = np.argsort(g[:, 0])  # the element moving rank 0 to each rank
    back = element_of[np.argmax(g == 0, axis=1)]  # per f: the element f^-1
    channel = first[g[:, 0]]
    channel[0] = first[g[1, 0]]  # the identity has no message; any channel keeps the arithmetic valid
    count = network.num_nodes
    keys = network.channel_src.astype(np.int64) * count + network.channel_dst
    order = np.argsort(keys, kind="stable")
    nodes = symmetry.node_maps
    moved = (nodes[back, network.channel_src[channel]].astype(np.int64) * count + nodes[back, network.channel_dst[channel]])
    return order[np.searchsorted(keys[order], moved)], hops[g[:, 0]]


def _greedy(g: np.ndarray, port: np.ndarray, hops: np.ndarray, ports: int, lam: float) -> list[list[tuple]]:
    """Per step, the chosen (translation f, ranks whose blocks rank 0 gets from f(0))."""
    p = g.shape[1]
    covered = np.zeros(p, dtype=bool)
    covered[0] = True
    plan = []
    while not covered.all():
        held = np.flatnonzero(covered)
        images = g[:, held]  # row f: the ranks f(H)
        now = covered.copy()
        used, step = set(), []
        for _ in range(ports):
            new = ~now[images]
            gain = new.sum(axis=1)
            gain[0] = 0  # the identity
            if used:
                gain[np.isin(port, list(used))] = 0
            if gain.max() == 0:
                break
            score = gain / (1.0 + lam * hops)
            best = np.lexsort((np.arange(p), hops, -score))[0]
            got = images[best][new[best]]
            now[got] = True
            used.add(int(port[best]))
            step.append((int(best), got))
        covered = now
        plan.append(step)
    return plan


def _point(plan, g: np.ndarray, symmetry, base: dict, network, chunks: int, reverse: bool, router: str) -> FrontPoint:
    p = g.shape[1]
    graph = _translated_graph(plan, symmetry, base, network, reverse, router)
    sender, receiver, step_of, counts = [], [], [], []
    for s, step in enumerate(plan):
        for f, got in step:
            sender.append(g[:, g[f, 0]])  # e(f(0)) for every element e, receiving the blocks of e(a), a in got
            receiver.append(g[:, 0])
            step_of.append(np.full(p, s, dtype=np.int64))
            counts.append(np.full(p, len(got) * chunks, dtype=np.int64))
    src, dst = np.concatenate(sender), np.concatenate(receiver)
    real_src, real_dst = (dst, src) if reverse else (src, dst)
    pair = np.searchsorted(graph.dst * p + graph.src, real_dst * p + real_src)
    count = np.concatenate(counts)
    step = np.concatenate(step_of)

    def deliveries() -> tuple:  # P (P - 1) x chunks of them: made when the schedule is
        moved = [(np.arange(chunks)[None, None, :] * p + g[:, got][:, :, None]).reshape(p, -1).ravel()
                 for chosen in plan for _, got in chosen]
        return np.repeat(step, count), np.repeat(pair, count), np.concatenate(moved), np.repeat(dst, count)

    return FrontPoint(len(plan), _rounds(graph, step, pair, count, len(plan), network), FEASIBLE, 0.0, deliveries,
                      method="dissemination", graph=graph)


def _translated_graph(plan, symmetry, base: dict, network, reverse: bool, router: str) -> TransferGraph:
    """The pairs of the plan's translations, each element e's the base pair's path moved by e:
    forward f(0) -> 0 moved to e(f(0)) -> e(0) (reversed: 0 -> f(0))."""
    g = symmetry.rank_maps.astype(np.int64)
    p = g.shape[1]
    sources, targets, offsets_parts, channel_parts = [], [], [], []
    for f in sorted({f for step in plan for f, _ in step}):
        other = int(g[f, 0])
        graph = base["from"] if reverse else base["to"]
        k = int(np.searchsorted(graph.dst * p + graph.src, (other if reverse else 0) * p + (0 if reverse else other)))
        path = graph.paths.path(k)
        moved = symmetry.moved_paths(network, path)  # (|G|, hops)
        a, b = (g[:, 0], g[:, other]) if reverse else (g[:, other], g[:, 0])
        sources.append(a)
        targets.append(b)
        offsets_parts.append(np.full(p, len(path), dtype=np.int64))
        channel_parts.append(moved)
    src, dst = np.concatenate(sources), np.concatenate(targets)
    lengths = np.concatenate(offsets_parts)
    channels = np.concatenate([c.ravel() for c in channel_parts])
    order = np.lexsort((src, dst))
    paths = Paths(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64), channels).select(order)
    return TransferGraph(p, 1, "translated", src[order], dst[order], paths, message_ports(network, paths), router)


def _rounds(graph, step, pair, count, steps: int, network) -> int:
    """Per step the busiest channel's blocks over its (integer) bandwidth, rounded up, summed."""
    bandwidth = integer_bandwidth(network)
    lengths = np.diff(graph.paths.offsets)[pair]
    channel = graph.paths.select(pair).channels
    keys = np.repeat(step, lengths) * len(bandwidth) + channel
    unique, where = np.unique(keys, return_inverse=True)
    load = np.bincount(where, weights=np.repeat(count, lengths)).astype(np.int64)
    needed = -(-load // bandwidth[unique % len(bandwidth)])
    per_step = np.zeros(steps, dtype=np.int64)
    np.maximum.at(per_step, unique // len(bandwidth), needed)
    return int(per_step.sum())
