"""Valiant routing on direct networks: minimally to an intermediate, then minimally to the
destination (Prisacari20 ch.5-7), seeded so that a run is reproducible.

- Families with groups (dragonfly: Topology.router_groups()): `valiant` picks a random
  intermediate group other than the source's and destination's and goes minimally to the router
  where the source's link into that group lands (Kim et al.'s Valiant as Prisacari20 ch.5 describes it:
  at most one local and one global hop to the intermediate group); `valiant-any` picks any router
  of that group (Prisacari20 ch.6's "Valiant Any": one more local hop possible).
- Other families: a random intermediate router other than the source's and destination's
  (Prisacari20 ch.7's "indirect random", INR).

The intermediate is drawn per message from a hash of (seed, source, destination, phase,
occurrence). Messages within one router or one group, or with no other group or router to go
through, route minimally. Every path is two minimal segments joined at the intermediate, which is what
`synth check` verifies for these routers.
"""

from __future__ import annotations

import numpy as np

from synth.routing.minimal import router_view
from synth.routing.oblivious import mix64
from synth.topology.paths import Paths
from synth.routing.registry import DIRECT, VIA_ONE, RouterSpec, fixed

_SALT = np.uint64(0xD1B54A32D192ED03)


def _message_hash(src, dst, phase, occurrence, seed: int) -> np.ndarray:
    key = mix64(np.uint64(seed & 0xFFFFFFFFFFFFFFFF) ^ _SALT)
    for part in (src, dst, phase, occurrence):
        values = np.zeros(len(src), dtype=np.uint64) if part is None else np.asarray(part).astype(np.uint64)
        key = mix64(key ^ values)
    return key


def _uniform_other(key: np.ndarray, count: int, exclude: list[np.ndarray]) -> np.ndarray:
    """A value in 0..count-1 not in `exclude` (per flow, sorted distinct values skipped in order),
    uniform over the count - len(excluded) choices."""
    excluded = np.sort(np.stack(exclude), axis=0)
    distinct = np.concatenate([np.ones((1, excluded.shape[1]), dtype=bool), excluded[1:] != excluded[:-1]])
    choices = count - distinct.sum(axis=0)
    value = (key % np.maximum(choices, 1).astype(np.uint64)).astype(np.int64)
    for row in range(excluded.shape[0]):  # skip past each excluded value at or below the pick
        value += distinct[row] & (excluded[row] <= value)
    return value


def _via(topology, src, dst, intermediate: np.ndarray, route: np.ndarray) -> Paths:
    """Two minimal segments, source router -> intermediate router -> destination router, for the
    flows where `route` is set; one minimal path for the others."""
    view = router_view(topology)
    a, b = view.terminal_router[src], view.terminal_router[dst]
    # On a degraded network an intermediate cut off from either end is not used: minimal instead.
    safe = np.where(route, intermediate, a)  # (an intermediate of a flow that is not routed through one may be out of range)
    route = route & ~view.unreachable[a, safe] & ~view.unreachable[safe, b]
    middle = np.where(route, safe, a)  # the others go from their own router, a 0-hop segment
    return view.assemble(src, dst, [view.router_hops(a, middle), view.router_hops(middle, b)])


def valiant(topology, src, dst, phase=None, occurrence=None, seed=0, any_router: bool = False) -> Paths:
    view = router_view(topology)
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    a, b = view.terminal_router[src], view.terminal_router[dst]
    key = _message_hash(src, dst, phase, occurrence, seed)
    groups = topology.router_groups()
    if groups is None:  # (valiant-any needs groups: the registry refuses networks without, DirectRouter.refusal)
        routers = len(view.distance)
        route = (a != b) & (routers > 2)
        intermediate = _uniform_other(key, routers, [a, b])
        return _via(topology, src, dst, intermediate, route)
    num_groups = int(groups.max()) + 1
    ga, gb = groups[a], groups[b]
    # Messages within a group use no global link, and a detour through another group would add two:
    # they route minimally (Valiant balances the global links, Prisacari20 ch.5).
    route = (ga != gb) & (num_groups > 2)  # with two groups there is no other group to go through
    group = np.where(route, _uniform_other(key, num_groups, [ga, gb]), ga)  # (an own group is never used)
    members = np.argsort(groups, kind="stable")
    first_member = np.searchsorted(groups[members], np.arange(num_groups))
    size = np.bincount(groups, minlength=num_groups)
    if any_router:
        pick = (mix64(key) % size[group].astype(np.uint64)).astype(np.int64)
        intermediate = members[first_member[group] + pick]
    else:
        # The router of the intermediate group nearest to the source router (where its link lands).
        width = int(size.max())
        slots = first_member[group][:, None] + np.arange(width)[None, :]
        valid = np.arange(width)[None, :] < size[group][:, None]
        candidates = members[np.minimum(slots, len(members) - 1)]
        to = view.distance[a[:, None], candidates]
        distance = np.where(valid & (to >= 0), to, np.iinfo(np.int16).max)  # (-1: unreachable, degraded networks)
        intermediate = candidates[np.arange(len(src)), np.argmin(distance, axis=1)]
    return _via(topology, src, dst, intermediate, route)


def valiant_any(topology, src, dst, phase=None, occurrence=None, seed=0) -> Paths:
    return valiant(topology, src, dst, phase, occurrence, seed, any_router=True)


ROUTER = (
    RouterSpec("valiant", DIRECT, "minimally to a random intermediate group (dragonfly) or router, then minimally to "
               "the destination ([Prisacari20] ch.5-7)", fixed(valiant), policy=VIA_ONE,
               report={"valiant": ("valiant", "flow")}, report_default=True, order=60),
    RouterSpec("valiant-any", DIRECT, "as valiant, through any router of the intermediate group ([Prisacari20] ch.6, "
               "dragonfly)", fixed(valiant_any), policy=VIA_ONE, needs="groups",
               report={"valiant-any": ("valiant-any", "flow")}, order=60),
)
