"""`synth vls ROUTES.json --out FILE [--max-vls N]`: virtual lanes for a routes file.

The file must pass `synth check` first. Every path of every phase gets a lane (synth.routing.lanes)
so that each lane's channel dependency graph is acyclic; the routes file is written again with a
`vls` list per phase, parallel to `paths`, which `synth check` verifies.
"""

from __future__ import annotations

import numpy as np

from synth.core.errors import SynthError
from synth.core.text import counted
from synth.routing.lane_orders import MAX_LANE_ORDERS, lane_orders, least_lanes, paths_lanes
from synth.routing.lanes import MAX_VLS, TooManyLanes, assign_lanes, exact_lanes
from synth.routing.minimal import router_view
from synth.routing.dependencies import flatten

DEFAULT_VLS = 8  # data VLs of common InfiniBand switches


class LanesExceeded(SynthError):
    """The routes need more lanes than the budget: `needed` of them (None: more than MAX_VLS)."""

    def __init__(self, message: str, needed: int | None):
        super().__init__(message)
        self.needed = needed


def lanes_for(paths: list[list[int]], num_channels: int, max_vls: int, exact: bool = False,
              time_limit: float = 60.0, option: str = "--max-vls", hint: str = "") -> tuple[np.ndarray, str]:
    """A lane per path (all phases together: a fabric's tables hold them all) and how the count was
    found; a user error (LanesExceeded) naming the count needed when it is above `max_vls`."""
    channels, lengths = flatten(paths)
    try:
        if exact:
            lanes, proven = exact_lanes(channels, lengths, num_channels, MAX_VLS, time_limit)
            how = "the least number, proven by CP-SAT" if proven else "CP-SAT ran out of time on a smaller count: an upper bound"
        else:
            lanes = assign_lanes(channels, lengths, num_channels, MAX_VLS)  # how many it takes, up to IB's limit
            how = "the lane heuristics, first fit and DFSSSP's layering: an upper bound on the least number"
    except TooManyLanes as exc:
        raise LanesExceeded(f"{exc}; the fabric has {max_vls} ({option}){hint}", None) from None
    needed = int(lanes.max(initial=-1)) + 1
    if needed > max_vls:
        raise LanesExceeded(f"the routes need {needed} virtual lanes ({how}); the fabric has {max_vls} ({option}){hint}",
                            needed)
    return lanes, how


# ----- routing within a lane budget (route --router paths --vls N; synth.routing.lane_orders) -----

ORDERS_HOW = "lane orders: each path on the first of the budget's up*/down* orders that admits it"
PAIRS_PER_BATCH = 1 << 16  # flows read at a time while collecting the router pairs of a run


def least_budget(topology, workload, phases: np.ndarray, candidates: str) -> int | None:
    """The least lane budget within which every router pair of the run's flows keeps a candidate
    (of set `candidates`) that one of the budget's lane orders admits; None: none up to
    MAX_LANE_ORDERS. Known before any routing."""
    view = router_view(topology)
    r = len(view.distance)
    keys = []
    per_batch = max(1, PAIRS_PER_BATCH // max(1, workload.num_ranks))
    for start in range(0, len(phases), per_batch):
        _, src, dst, _ = workload.batch(phases[start : start + per_batch])
        a, b = view.terminal_router[src], view.terminal_router[dst]
        keys.append(np.unique(a[a != b] * r + b[a != b]))
    pairs = np.unique(np.concatenate(keys)) if keys else np.zeros(0, dtype=np.int64)
    return least_lanes(topology, candidates, pairs // r, pairs % r)


def budget_refusal(vls: int, needed: int | None, least: int | None, candidates: str) -> str:
    """One line: neither the routes as chosen (`needed` lanes by the lane heuristics) nor any
    choice within lane orders (`least`) fit `vls` lanes; the least of the two is what this router
    achieves."""
    best = min(x for x in (needed, least, MAX_VLS + 1) if x is not None)
    orders = (f"no budget up to {MAX_LANE_ORDERS} lane orders gives every router pair of the traffic a candidate"
              if least is None else f"the lane orders (one up*/down* order per lane) need {least} to give every router "
              f"pair of the traffic a candidate")
    least_text = (f"the least the paths router achieves here is {best} lanes: use --vls {best} or more" if best <= MAX_VLS
                  else f"no budget up to {MAX_VLS} lanes fits")
    return (f"--vls {vls}: the routes need {needed if needed is not None else f'more than {MAX_VLS}'} virtual lanes (the "
            f"lane heuristics) and with --candidates {candidates} {orders}; {least_text}"
            + (", or --candidates all (each lane admits the paths through its root)" if candidates == "minimal" else ""))


def budget_lanes(topology, paths: list[list[int]], vls: int) -> tuple[np.ndarray, str]:
    """The lanes of routes chosen within a budget of `vls` lane orders and how they were given:
    the lane orders' (numbered densely: lanes are independent, so renumbering keeps each acyclic),
    or the lane heuristics' where it needs fewer for these routes."""
    channels, lengths = flatten(paths)
    lanes = paths_lanes(topology, lane_orders(topology).prefix(vls), channels, lengths)
    if (lanes < 0).any():  # the router keeps only admitted candidates: this is a bug, not an input
        raise AssertionError("a path routed within the lane budget is admitted by none of its orders")
    lanes = np.searchsorted(np.unique(lanes), lanes)
    used = int(lanes.max(initial=0)) + 1
    if used > 1:
        try:
            fewer = assign_lanes(channels, lengths, topology.network().num_channels, used - 1)
            return fewer, "the lane heuristics, on paths chosen within the budget's lane orders (which need more)"
        except TooManyLanes:
            pass
    return lanes, ORDERS_HOW


def budget_line(vls: int, needed: int | None, without: list, within: list, reports: list) -> str:
    """What the budget cost: contention (the busiest channel's load) of the routes within it next
    to the routes without it and to the LP bounds (over all routings; over the budget's candidates)."""
    def figures(evaluations) -> str:
        values = [e.max_contention for e in evaluations]
        return f"max {max(values, default=0)}, sum {sum(values)}"

    lp = [r.lp_bound for r in reports if r is not None and r.lp_bound is not None]
    no_lp = sum(1 for r in reports if r is not None and r.lp_bound is None)
    candidate = [r.candidate_bound for r in reports if r is not None]
    more = f"{needed}" if needed is not None else f"more than {MAX_VLS}"
    return (f"--vls {vls}: unrestricted, the routes need {more} lanes (the lane heuristics), so every path was chosen "
            f"among the candidates one of {vls} lane orders admits; contention within the budget {figures(within)} "
            f"(over {len(within)} phases), without it {figures(without)}; LP bound over all routings max "
            f"{max(lp, default=0)}, sum {sum(lp)}"
            + (f" (no LP for {counted(no_lp, 'phase')} without flows between routers)" if no_lp else "")
            + f" (over the budget's candidates: max {max(candidate, default=0)}, "
            f"sum {sum(candidate)})")


def lanes_line(lanes: np.ndarray, phases: int, how: str) -> str:
    used = int(lanes.max(initial=-1)) + 1
    return (f"{counted(len(lanes), 'path')} in {counted(phases, 'phase')}: {counted(used, 'virtual lane')} "
            f"({', '.join(f'VL{v}: {int(n)}' for v, n in enumerate(np.bincount(lanes, minlength=used)))} paths), "
            f"every lane's channel dependencies acyclic; {how}")
