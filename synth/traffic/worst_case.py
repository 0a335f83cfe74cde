"""The ch.7 worst-case permutations under minimal routing (003 sec. 7.4.2), `worst-case`.

Each is a permutation in which whole routers send to whole routers (terminal j of the source
router to terminal j of the destination router), so no terminal sends or receives more than its
link carries and the bottleneck is inside the network:

- Slim Fly: routers in pairs at distance two whose minimal routes overlap (Figure 7.5). synth's
  greedy assignment packs chains A-B-C-D of routers in which B is the only common neighbour of A
  and C and C the only common neighbour of B and D (most constrained routers first, see
  `slimfly_router_pairs`); then A <-> C and B <-> D exchange. Both A->C and B->D cross B->C (and
  C->A, D->B cross C->B), so those links carry 2p messages: throughput 1/(2p). Routers left over
  (no such chain among the unused ones) pair up at distance two where they can and otherwise keep
  their traffic (their terminals send to themselves); `unmatched_routers` counts them.
- MLFM: the shift by h terminals, i.e. every local router to the next one, which is never in its
  column, over the single minimal path: h messages per link, throughput 1/h.
- OFT: the shift by k terminals, every L0/L2 router to the next one, which is not its symmetric
  router, over the single minimal path: k messages per link, throughput 1/k.
Other families have no worst case in the seed; the pattern refuses them by name.
"""

from __future__ import annotations

import heapq

import numpy as np

from synth.core.errors import SynthError

SEED_SECTION = "003 sec. 7.4.2"


def _neighbours(topology) -> list[set[int]]:
    u, v = topology.links[0], topology.links[1]
    out: list[set[int]] = [set() for _ in range(topology.num_routers)]
    for a, b in zip(u.tolist(), v.tolist()):
        out[a].add(b)
        out[b].add(a)
    return out


def slimfly_router_pairs(topology) -> tuple[np.ndarray, int]:
    """(sigma, unmatched): sigma[r] is the router r's terminals send to (an involution), and the
    number of routers left sending to themselves.

    Fours A-B-C-D are packed greedily, most constrained first (the classic path-packing rule): A is
    the unused router with the fewest unused neighbours, and B, C, D are tried in the same order.
    Taking routers in plain index order instead strands a third of them at q = 13."""
    adjacent = _neighbours(topology)
    r = topology.num_routers
    sigma = np.arange(r, dtype=np.int64)
    used = np.zeros(r, dtype=bool)
    free_degree = [len(adjacent[x]) for x in range(r)]

    def only_common(x: int, y: int, middle: int) -> bool:
        return y not in adjacent[x] and adjacent[x] & adjacent[y] == {middle}

    def most_constrained(candidates) -> list[int]:
        return sorted(candidates, key=lambda x: (free_degree[x], x))

    def chain(a: int) -> tuple[int, int, int] | None:
        for b in most_constrained(x for x in adjacent[a] if not used[x]):
            for c in most_constrained(x for x in adjacent[b] if not used[x] and x != a and only_common(a, x, b)):
                for d in most_constrained(x for x in adjacent[c] if not used[x] and x not in (a, b)
                                          and only_common(b, x, c)):
                    return b, c, d
        return None

    queue = [(free_degree[x], x) for x in range(r)]
    heapq.heapify(queue)

    def take(routers: list[int]) -> None:
        used[routers] = True
        for x in routers:
            for y in adjacent[x]:
                free_degree[y] -= 1
                if not used[y]:
                    heapq.heappush(queue, (free_degree[y], y))

    left: list[int] = []
    while queue:
        degree, a = heapq.heappop(queue)
        if used[a]:
            continue
        if degree != free_degree[a]:  # stale: a fresher entry with fewer free neighbours was queued
            continue
        found = chain(a)
        if found is None:
            left.append(a)
            continue
        b, c, d = found
        sigma[[a, c, b, d]] = [c, a, d, b]
        take([a, b, c, d])
    for x in sorted(left):  # pair what is left at distance two where possible
        if used[x]:
            continue
        partner = next((y for y in sorted(left) if not used[y] and y != x and y not in adjacent[x]
                        and adjacent[x] & adjacent[y]), None)
        if partner is not None:
            sigma[[x, partner]] = [partner, x]
            take([x, partner])
    return sigma, int(r - used.sum())


def worst_case_destinations(topology, num_ranks: int) -> np.ndarray:
    """The destination terminal of every terminal."""
    family = getattr(topology, "family", None)
    terminals = np.arange(num_ranks, dtype=np.int64)
    if family == "slimfly":
        sigma, _ = slimfly_router_pairs(topology)
        p = topology.p
        return sigma[terminals // p] * p + terminals % p
    if family == "mlfm":
        return (terminals + topology.h) % num_ranks
    if family == "oft":
        return (terminals + topology.k) % num_ranks
    raise SynthError(f"traffic pattern 'worst-case' is defined for slimfly, mlfm and oft ({SEED_SECTION}), "
                     f"not for {family or 'this network'}")
