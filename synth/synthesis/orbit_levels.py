"""The level-by-level allgather of a maximum-size dragonfly, in orbit form (issue 43 item 1): every
block crosses each level of the hierarchy once (router, group, the global links, then router and
group again), so every terminal receives each block exactly once, in five steps of at most
max(p - 1, a - 1, h) messages a port (Prisacari20 ch.4's hierarchy H_1 = p, H_2 = a, H_3 = g).
Where p <= a - 1 and p <= h (a balanced dragonfly, a = 2p = 2h, Kim et al.) no link carries more
in a step than the terminals' own links do: the bandwidth term of the time bound exactly.

Terminal (g, x, i) is terminal i of router x of group g. Its block B(g, x, i):
  step 0 (router): (g, x, i) sends B(g, x, i) to its router's other p - 1 terminals;
  step 1 (group):  (g, x, i) sends B(g, x, *) to (g, x', i) for every other router x' of its group;
                   now every terminal holds its group's a p blocks;
  step 2 (global): (g, x, i) sends B(g, *, i) over each of its router's h global links to terminal i
                   of the router at the far end (one link per pair of groups: each far group gets
                   every block of g exactly once, terminal i's a blocks through terminal i);
  step 3 (router): (g', x', i) sends what it received (B(g, *, i) for the h groups g its router's
                   links reach) to its router's other terminals;
  step 4 (group):  (g', x', i) sends B(g, *, *) for those h groups to (g', x'', i) for every other
                   router x'' of its group.
Per terminal the five steps receive p - 1, (a - 1) p, h a, (p - 1) h a and (a - 1) h a p blocks:
(a p)(a h + 1) - 1 = P - 1 in all, each through the terminal's one link. A local link carries
p x p blocks in step 1 and p x h a p in step 4 (each terminal of its router sends its share to
one terminal across it), a global link p a in step 2: no more than a terminal's link where
p <= a - 1 and p <= h.

The rules are the same at every group and terminal index: a relative or circulant dragonfly's
group rotation and the rotation of every router's terminals (synth.topology.translations) map the
schedule onto itself, so it is stored as the blocks of terminal 0 of each router of group 0 (the
orbit's representatives). A reduce-scatter is the allgather reversed in time (each delivery a
reduction into its sender's partial), an allreduce the reduce-scatter then the allgather.
"""

from __future__ import annotations

import numpy as np

from synth.collectives.orbit import OrbitSchedule
from synth.collectives.schedule import COPY, REDUCE

LEVEL_STEPS = ("router", "group", "global", "router", "group")
LEVELS_HOW = "levels: router, group, global links, router, group; every block once through each terminal's link"
DIGITS_HOW = "digit by digit, Bruck's allgather among the ranks differing in that digit; one message a port a step"


def levels_refusal(topology, representatives: np.ndarray) -> str | None:
    """Why the level-by-level allgather does not apply (None: it does)."""
    if not topology.one_link_per_group_pair():
        return f"{topology.spec} is not a dragonfly of one global link per pair of groups (maximum size)"
    if not np.array_equal(representatives, np.arange(topology.a, dtype=np.int64) * topology.p):
        return "its orbits are not one per router of a group"
    return None


def level_deliveries(topology) -> tuple[np.ndarray, ...]:
    """(step, src, dst, origin) of the representatives' blocks' deliveries, in step order (steps
    without any dropped: p = 1 has no router steps)."""
    p, a, h = topology.p, topology.a, topology.h
    destination, partner = topology.global_ports  # (groups, a h): port k of group g's far group, far port

    def terminal(g, x, i):
        return (np.asarray(g, dtype=np.int64) * a + x) * p + i

    mates = np.arange(1, p, dtype=np.int64)  # a router's terminals other than 0 (its representative's index)
    far_group, far_router = destination[0].astype(np.int64), (partner[0] // h).astype(np.int64)  # group 0's ports
    per_rep = []
    for x in range(a):
        origin = terminal(0, x, 0)
        others = np.delete(np.arange(a, dtype=np.int64), x)
        i, x2 = (v.ravel() for v in np.meshgrid(np.arange(p), others, indexing="ij"))
        # steps 2-4 carry B(0, x, 0) from every router of group 0 alike: index 0, every port of the group
        port_router = np.arange(a * h, dtype=np.int64) // h
        g3 = np.repeat(far_group, p - 1)
        xf3 = np.repeat(far_router, p - 1)
        k4, i4, x4 = (v.ravel() for v in np.meshgrid(np.arange(a * h), np.arange(p), np.arange(a), indexing="ij"))
        keep = x4 != far_router[k4]
        k4, i4, x4 = k4[keep], i4[keep], x4[keep]
        per_rep.append([
            (np.full(p - 1, origin), terminal(0, x, mates)),
            (terminal(0, x, i), terminal(0, x2, i)),
            (terminal(0, port_router, 0), terminal(far_group, far_router, 0)),
            (terminal(g3, xf3, 0), terminal(g3, xf3, np.tile(mates, a * h))),
            (terminal(far_group[k4], far_router[k4], i4), terminal(far_group[k4], x4, i4)),
        ])
    kept = [s for s in range(len(LEVEL_STEPS)) if any(len(rep[s][0]) for rep in per_rep)]
    step, src, dst, origin = [], [], [], []
    for number, s in enumerate(kept):
        for x, rep in enumerate(per_rep):
            a_src, a_dst = rep[s]
            step.append(np.full(len(a_src), number, dtype=np.int64))
            src.append(a_src)
            dst.append(a_dst)
            origin.append(np.full(len(a_src), x * p, dtype=np.int64))
    steps = len(kept)
    out = tuple(np.concatenate(v).astype(np.int64) for v in (step, src, dst, origin))
    return (*out, steps)


def digits_refusal(plan) -> str | None:
    """Why the digit-by-digit Bruck does not apply (None: it does): it takes the transfers of one
    differing digit (an XGFT's orbit plan) and one rank orbit."""
    from synth.synthesis.transfers import DIGITS

    if plan.graph.reach != DIGITS:
        return f"its transfers are {plan.graph.reach}, not the pairs of one differing digit"
    if len(plan.orbit.bases(np.arange(plan.graph.ranks, dtype=np.int64))) != 1:
        return "its ranks are several orbits"
    return None


def digit_deliveries(topology) -> tuple[np.ndarray, ...]:
    """(step, src, dst, origin) of rank 0's block in the digit-by-digit Bruck allgather: digit by
    digit of Topology.hierarchy() (least significant first), Bruck's allgather among the ranks
    differing in that digit alone (Bruck97: in step j the rank of digit t receives from t + 2^j,
    mod the digit's size, all it holds; the last step of a size not a power of two only what is
    missing). Rank 0's block, after the digits below l, is held by every rank whose digits from l
    on are 0; digit l's step j reaches the digits -2^j .. -(2^(j+1) - 1) (within its size) of
    every such rank. Every rank receives every block once, one message a port a step: with an
    XGFT's d-mod-k routes (up choice w_(i+1) = the destination's digit m_i) each message of a
    step climbs through up links of its own, so no link carries more than a terminal's."""
    sizes = topology.hierarchy()
    n = int(np.prod(sizes))
    step, src, dst = [], [], []
    number, stride = 0, 1
    for size in sizes:
        lower = np.arange(stride, dtype=np.int64)  # every combination of the digits below, higher digits 0
        reach, j = 1, 0
        while reach < size:
            new = np.arange(reach, min(2 * reach, size), dtype=np.int64)  # the digits -new now reached
            t = (-new) % size
            s, d = (lower[:, None] + ((t + reach) % size)[None, :] * stride).ravel(), \
                (lower[:, None] + t[None, :] * stride).ravel()
            step.append(np.full(len(s), number, dtype=np.int64))
            src.append(s)
            dst.append(d)
            reach, j, number = 2 * reach, j + 1, number + 1
        stride *= size
    assert stride == n
    step, src, dst = (np.concatenate(v) for v in (step, src, dst))
    return step, src, dst, np.zeros(len(step), dtype=np.int64), number


def digits_orbit(plan) -> tuple[OrbitSchedule, list[dict]]:
    """The plan's collective as the digit-by-digit Bruck in orbit form (digit_deliveries)."""
    return _orbit(plan, *digit_deliveries(plan.topology), "digit-bruck", DIGITS_HOW)


def levels_orbit(plan) -> tuple[OrbitSchedule, list[dict]]:
    """The plan's collective as the level-by-level schedule in orbit form (one-byte blocks, one
    chunk), and per half (collective, steps, rounds)."""
    return _orbit(plan, *level_deliveries(plan.topology), "levels", LEVELS_HOW)


def _orbit(plan, step, src, dst, origin, steps: int, algorithm: str, how: str) -> tuple[OrbitSchedule, list[dict]]:
    """An allgather's deliveries of the representatives' blocks as the plan's collective: itself,
    reversed in time for a reduce-scatter (each delivery a reduction into its sender's partial),
    the two one after the other for an allreduce; and per half (collective, steps, rounds)."""
    from synth.synthesis.exact import delivery_rounds
    from synth.synthesis.orbit_trees import load_classes

    topology, graph, group = plan.topology, plan.graph, plan.orbit
    classes = load_classes(group, topology.network())
    representatives = group.bases(np.arange(graph.ranks, dtype=np.int64))
    halves = ("reduce-scatter", "allgather") if plan.collective == "allreduce" else (plan.collective,)
    parts, arrays, offset = [], [], 0
    for half in halves:
        reverse = half == "reduce-scatter"
        a, b, s = (dst, src, steps - 1 - step) if reverse else (src, dst, step)
        order = np.argsort(s, kind="stable")
        a, b, s, o = a[order], b[order], s[order], origin[order]
        pair = graph.pair_index(a, b)
        parts.append({"collective": half, "steps": steps, "rounds": delivery_rounds(graph, classes, s, pair, steps),
                      "representatives": len(representatives), "how": how})
        arrays.append((s + offset, a, b, o, pair, np.full(len(s), REDUCE if reverse else COPY, dtype=np.int64)))
        offset += steps
    step, src, dst, origin, pair, op = (np.concatenate(v) for v in zip(*arrays))
    orbit = OrbitSchedule(plan.collective, algorithm, topology.spec, graph.ranks, 1, np.ones(1, dtype=np.int64), offset,
                          step, src, dst, np.zeros(len(step), dtype=np.int64), op, graph.paths.select(pair),
                          origin=origin, representatives=representatives, _group=group)
    return orbit, parts


__all__ = ["LEVEL_STEPS", "levels_refusal", "level_deliveries", "levels_orbit", "digits_refusal", "digit_deliveries",
           "digits_orbit"]
