"""The latency-aware all-to-all `a2a-lat` for networks of groups (dragonflies), Prisacari20 ch.4.

The seed orders a node's destinations in blocks of growing distance: the node itself, the other
nodes on its router, one local hop (L), one global hop (G), G then L, L then G, and L G L. It does
not say which destination each node takes in which phase; synth's pairing:

- the shape of a router pair (u, v) is the first of S (same router), L (same group), G (a link
  between their groups joins u and v), GL, LG, LGL that connects them (at maximum size minimal
  paths are unique, so this is the shape of the minimal path);
- the router pairs of one shape form a regular bipartite graph (every router has as many
  destinations of each shape, and is one of as many); it is split into perfect matchings, one at
  a time (Koenig's theorem says each exists), each a zero-cost assignment (scipy's
  linear_sum_assignment, pairs outside the graph costing 1);
- router matching M and terminal offset j (0..p-1) make one phase: terminal t of router u sends to
  terminal (t + j) mod p of router M(u). Phases go block by block in the order above, matchings in
  the order found, offsets increasing.

So every phase is a permutation and every (source, destination) pair occurs in exactly one phase
(the tests check both). A network whose routers see unequal numbers of a shape (a dragonfly with
fewer groups may) is refused, as are networks without groups.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from synth.core.errors import SynthError
from synth.core.interrupt import native

SHAPES = ("S", "L", "G", "GL", "LG", "LGL")
# The router-pair shape table is routers^2 bytes and a matching's cost matrix 8 routers^2 bytes.
# Matchings, measured: dragonfly:4,8,4 (264 routers) 0.36 s in all, 9 ms at most each;
# dragonfly:6,12,6 (876 routers) 17 s in all, 0.14 s at most each.
MAX_ROUTERS = 4096


def _attachment(network) -> tuple[np.ndarray, np.ndarray]:
    """The router of every terminal and its index among its router's terminals."""
    n = network.num_terminals
    injection = np.flatnonzero(network.channel_src < n)
    if len(injection) != n:
        raise SynthError(f"a2a-lat needs every terminal attached to one router, not {network.spec}")
    router = np.empty(n, dtype=np.int64)
    router[network.channel_src[injection]] = network.channel_dst[injection] - n
    order = np.argsort(router, kind="stable")
    slot = np.empty(n, dtype=np.int64)
    counts = np.bincount(router)
    slot[order] = np.arange(n) - np.repeat(np.cumsum(counts) - counts, counts)[np.arange(n)]
    return router, slot


def router_shapes(network, groups: np.ndarray) -> np.ndarray:
    """(routers, routers) index into SHAPES of every router pair."""
    n, r = network.num_terminals, len(groups)
    links = (network.channel_src >= n) & (network.channel_dst >= n)
    tail, head = network.channel_src[links] - n, network.channel_dst[links] - n
    glob = np.zeros((r, r), dtype=bool)
    between = groups[tail] != groups[head]
    glob[tail[between], head[between]] = True
    local = groups[:, None] == groups[None, :]
    np.fill_diagonal(local, False)
    # GL: a global link from u to another router of v's group; LG: one from another router of u's
    # group to v. Counted per group (routers x groups), not as the product glob @ local, which is
    # routers^3 integer operations in one numpy call that no signal interrupts (minutes at 3856).
    _, group = np.unique(groups, return_inverse=True)
    into = np.zeros((r, group.max() + 1), dtype=np.int64)  # global links from router u into group g
    np.add.at(into, (tail[between], group[head[between]]), 1)
    out_of = np.zeros((group.max() + 1, r), dtype=np.int64)  # global links from group g to router v
    np.add.at(out_of, (group[tail[between]], head[between]), 1)
    links = np.zeros((r, r), dtype=np.int64)  # parallel global links count as many
    np.add.at(links, (tail[between], head[between]), 1)
    gl = into[:, group] - links > 0
    lg = out_of[group, :] - links > 0
    shape = np.full((r, r), SHAPES.index("LGL"), dtype=np.int8)
    for name, mask in reversed((("S", np.eye(r, dtype=bool)), ("L", local), ("G", glob), ("GL", gl), ("LG", lg))):
        shape[mask] = SHAPES.index(name)  # reversed: the first shape that applies is written last
    return shape


def _matchings(adjacency: np.ndarray, what: str) -> list[np.ndarray]:
    """Split a regular bipartite graph (boolean matrix) into perfect matchings: target per row."""
    degree = adjacency.sum(axis=1)
    if len(set(degree.tolist()) | set(adjacency.sum(axis=0).tolist())) > 1:
        raise SynthError(f"a2a-lat: routers see unequal numbers of {what} destinations (the network is not "
                         "a maximum-size-like dragonfly); the pairing needs a regular structure")
    # scipy's maximum_bipartite_matching (Hopcroft-Karp) took minutes on some of dragonfly:4,8,4's
    # LG graphs, in one call that holds the GIL, so that no signal stopped it (issue 22). An
    # assignment is fast here and runs under `native`: a signal interrupts it.
    cost = (~adjacency).astype(np.float64)
    rows = np.arange(len(adjacency))
    matchings = []
    for _ in range(int(degree[0]) if len(degree) else 0):
        _, match = native(lambda: linear_sum_assignment(cost))
        if cost[rows, match].any():
            raise SynthError(f"a2a-lat: no perfect matching left among the {what} pairs")  # Koenig: cannot happen
        matchings.append(match.astype(np.int64))
        cost[rows, match] = 1.0
    return matchings


def lat_destinations(network, groups: np.ndarray) -> np.ndarray:
    """(phases, terminals): the destination of every terminal in every phase of a2a-lat."""
    r = len(groups)
    if r > MAX_ROUTERS:
        raise SynthError(f"a2a-lat pairs router pairs in a table of {r}^2 entries; at most {MAX_ROUTERS} routers")
    router, slot = _attachment(network)
    per_router = np.bincount(router, minlength=r)
    if len(set(per_router.tolist())) != 1:
        raise SynthError("a2a-lat needs the same number of terminals on every router")
    p = int(per_router[0])
    first = np.zeros(r, dtype=np.int64)
    first[1:] = np.cumsum(per_router)[:-1]
    terminal_of = lambda routers, slots: first[routers] + slots  # noqa: E731
    shape = router_shapes(network, groups)
    phases = []
    for k, name in enumerate(SHAPES):
        for match in _matchings(shape == k, name):
            for j in range(p):
                phases.append(terminal_of(match[router], (slot + j) % p))
    return np.stack(phases)
