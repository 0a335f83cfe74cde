"""How many channel hops a schedule's transfers will take once routed, before they are routed: what
the size guard of mapping and pricing (synth.collectives.algorithms.too_large) plans with.

Routing and pricing hold a few arrays per hop (the path's channel ids, the pricing's per-hop keys
and weights), so their memory grows with the hops, not with the transfers: a million transfers
take 0.3 GB on an 8 x 8 torus and 8 GB on a ring of 1024 routers. Exact where the paths' lengths
follow from the network: minimal routers (a shortest path between the terminals' routers, plus
injection and ejection) and the fat trees' up-down routes (twice the level of the lowest common
ancestor). A bound elsewhere: a router through an intermediate router or group takes at most two
shortest segments and two detours, and a routes file's paths are at most its longest one.
"""

from __future__ import annotations

import numpy as np


def mapped_hops(schedule, topology, router: str | None = None, routes: dict | None = None) -> int:
    """The channels the transfers between nodes cross in all (exact or an upper bound, see above)."""
    q = schedule.ranks_per_node
    src, dst = schedule.src // q, schedule.dst // q
    across = src != dst
    src, dst = src[across], dst[across]
    if not len(src):
        return 0
    if routes is not None:
        longest = max((len(path) for phase in routes.get("phases", []) for path in phase.get("paths", [])), default=0)
        return int(len(src) * longest)
    if topology.up_down_routes:  # every router's route is minimal: its length follows from its ends
        return int(topology.minimal_channels(src, dst).sum())
    from synth.routing.registry import MINIMAL, ROUTERS
    from synth.routing.minimal import router_view

    view = router_view(topology)
    router = router or topology.default_router
    spec = ROUTERS.find(router, topology.routing_kind)
    if spec is not None and spec.policy == MINIMAL:
        a, b = view.terminal_router[src], view.terminal_router[dst]
        return int((view.distance[a, b].astype(np.int64) + 2).sum())
    return int(len(src) * (2 * view.diameter + 6))  # two shortest segments, two two-hop detours, in and out


def all_pairs_hops(topology, router: str | None = None, ranks_per_node: int = 1) -> int:
    """The channels of one transfer from every rank to every other rank (spread-out, pairwise and
    the phased exchanges send exactly these), known before the schedule is made: exact for minimal
    and fat-tree routes, a bound elsewhere. Ranks on one node exchange through memory."""
    n, q = topology.num_terminals, ranks_per_node
    if n < 2:
        return 0
    if topology.up_down_routes:
        return q * q * topology.all_pairs_minimal_channels()
    from synth.routing.registry import MINIMAL, ROUTERS
    from synth.routing.minimal import router_view

    view = router_view(topology)
    router = router or topology.default_router
    spec = ROUTERS.find(router, topology.routing_kind)
    if spec is None or spec.policy != MINIMAL:
        return q * q * n * (n - 1) * (2 * view.diameter + 6)
    per_router = np.bincount(view.terminal_router, minlength=len(view.distance)).astype(np.float64)
    total = 0.0
    for lo in range(0, len(per_router), ROWS):  # sum over router pairs of terminals x terminals x (distance + 2)
        rows = view.distance[lo:lo + ROWS].astype(np.float64) + 2
        total += float(per_router[lo:lo + ROWS] @ rows @ per_router)
    return q * q * int(round(total - 2 * n))  # less each terminal with itself


ROWS = 512  # router rows of the distance table summed at a time
