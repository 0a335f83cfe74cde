"""Lane orders: routes that fit a budget of virtual lanes by construction.

A path is given one lane for its whole length (InfiniBand: its service level, mapped to one VL).
Routes are deadlock-free when, lane by lane, the channel dependency graph of the paths on the lane
is acyclic (Dally and Seitz). Lane l here has a fixed total order of the routers, rank_l; a path
may take lane l when its routers' ranks first strictly fall and then strictly rise (a "V": zero or
more hops towards lower ranks, then zero or more towards higher ones). Every dependency of such a
path rises in one total order of the channels (falling channels first, by decreasing rank of their
tail; then rising ones, by increasing rank of their tail; injection channels before all, ejection
channels after all), so the lane's dependency graph, whatever the set of V paths on it, is acyclic:
no lane ever needs checking after the fact, and phases routed apart share the lanes safely.

This is up*/down* routing (Schroeder et al., Autonet, 1991) with one spanning order per lane, as in
layered routing with several up*/down* orders (Sancho, Robles and Duato, 2000; Lysne et al.'s LASH
layers): the order of lane l ranks routers by their minimal distance from a root router m_l (ties
by router number), so every path that runs minimally to m_l and minimally on from it (the Valiant
candidate through m_l) is a V. The roots are chosen greedily, lane by lane: the router whose order
admits the most minimal paths not yet admitted by an earlier lane (over all router pairs, or a
fixed sample of them on large networks); among equals, the one farthest from the roots already
chosen, then the lowest-numbered. The first N orders are the budget's: a path's lane is the first
of them that admits it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.routing.candidates import MAX_CANDIDATE_HOPS, Candidates, build_candidates, minimal_paths
from synth.routing.minimal import RouterView, router_view

MAX_LANE_ORDERS = 15  # InfiniBand's data virtual lanes (synth.io.routes_file.MAX_VLS)
MAX_SCORED_PAIRS = 20_000  # router pairs whose minimal paths score the roots (a fixed sample beyond)
MAX_SCORED_ROOTS = 128  # roots tried per lane (evenly spread router numbers beyond)


@dataclass(frozen=True)
class LaneOrders:
    roots: np.ndarray  # (orders,) the root router of each lane's order
    rank: np.ndarray  # (orders, routers) each router's position in the lane's order

    def prefix(self, lanes: int) -> "LaneOrders":
        return LaneOrders(self.roots[:lanes], self.rank[:lanes])


def order_from_root(view: RouterView, root: int) -> np.ndarray:
    """Ranks of the routers by minimal distance from `root` (unreachable ones last), ties by number."""
    r = len(view.distance)
    distance = view.distance[root].astype(np.int64)
    distance = np.where(distance < 0, r + 1, distance)
    order = np.lexsort((np.arange(r), distance))
    rank = np.empty(r, dtype=np.int64)
    rank[order] = np.arange(r)
    return rank


def v_shaped(rank: np.ndarray, routers: np.ndarray) -> np.ndarray:
    """(orders, rows): whether, under each order (a row of `rank`, (orders, routers)), a row of
    `routers` (router numbers in travel order, -1 padded at the end) has ranks that strictly fall,
    then strictly rise."""
    routers = np.asarray(routers, dtype=np.int64)
    valid = routers >= 0
    r = rank[:, np.maximum(routers, 0)]  # (orders, rows, width)
    step = np.diff(r, axis=2)
    both = (valid[:, 1:] & valid[:, :-1])[None]
    rising = both & (step > 0)
    falling = both & (step < 0)
    repeated = both & (step == 0)  # one router twice in a row: no order admits it
    risen = np.logical_or.accumulate(rising, axis=2)
    return ~(falling & risen).any(axis=2) & ~repeated.any(axis=2)


def first_lane(orders: LaneOrders, routers: np.ndarray) -> np.ndarray:
    """Per row of router sequences, the first lane whose order admits it; -1 when none does."""
    if not len(orders.roots) or not len(routers):
        return np.full(len(routers), -1, dtype=np.int64)
    admits = v_shaped(orders.rank, routers)
    return np.where(admits.any(axis=0), np.argmax(admits, axis=0), -1)


def candidate_routers(view: RouterView, tail: np.ndarray, hops: np.ndarray) -> np.ndarray:
    """The routers a row of router channels (-1 padded) visits, its tail router first."""
    heads = np.where(hops >= 0, view.head[np.maximum(hops, 0)], -1)
    return np.hstack([np.asarray(tail, dtype=np.int64)[:, None], heads])


@functools.lru_cache(maxsize=4)
def lane_orders(topology) -> LaneOrders:
    """MAX_LANE_ORDERS lane orders of the topology, greedily (module docstring); a budget of N lanes
    uses the first N."""
    view = router_view(topology)
    r = len(view.distance)
    pairs = r * (r - 1)
    pick = np.unique(np.linspace(0, pairs - 1, min(pairs, MAX_SCORED_PAIRS)).astype(np.int64)) if pairs else np.zeros(0, np.int64)
    a, rest = pick // max(r - 1, 1), pick % max(r - 1, 1)
    b = rest + (rest >= a)  # the pairs a != b, numbered row by row
    reachable = ~view.unreachable[a, b]
    owner, hops = minimal_paths(view, a[reachable], b[reachable])
    routers = candidate_routers(view, a[reachable][owner], hops)
    tried = np.unique(np.linspace(0, r - 1, min(r, MAX_SCORED_ROOTS)).astype(np.int64))
    ranks = np.stack([order_from_root(view, int(m)) for m in tried])
    admits = v_shaped(ranks, routers)
    hop_distance = np.where(view.distance < 0, r + 1, view.distance).astype(np.int64)
    covered = np.zeros(len(routers), dtype=bool)
    roots: list[int] = []
    for _ in range(min(MAX_LANE_ORDERS, len(tried))):
        gain = (admits & ~covered).sum(axis=1)
        spread = (np.minimum(hop_distance[tried][:, roots], hop_distance[roots][:, tried].T).min(axis=1)
                  if roots else np.zeros(len(tried), dtype=np.int64))
        spread = np.where(np.isin(tried, roots), -1, spread)
        best = int(np.lexsort((tried, -spread, -gain))[0])
        roots.append(int(tried[best]))
        covered |= admits[best]
    rank = np.stack([order_from_root(view, m) for m in roots])
    return LaneOrders(np.array(roots, dtype=np.int64), rank)


def paths_lanes(topology, orders: LaneOrders, channels: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The lane of every path (flat channels with their lengths, terminal links included): the first
    order that admits its routers; -1 for a path that none admits."""
    network = topology.network()
    n = network.num_terminals
    channels, lengths = np.asarray(channels, dtype=np.int64), np.asarray(lengths, dtype=np.int64)
    width = int(lengths.max(initial=0))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    routers = np.full((len(lengths), max(width, 1)), -1, dtype=np.int64)
    for k in range(width):  # the router each hop enters (ejection hops enter a terminal: left out)
        has = lengths > k
        head = network.channel_dst[channels[starts[has] + k]]
        routers[np.flatnonzero(has)[head >= n], k] = head[head >= n] - n
    lanes = first_lane(orders, routers)
    lanes[lengths == 0] = 0
    return lanes


def candidate_lanes(topology, candidates: Candidates) -> np.ndarray:
    """Per candidate row, the first lane order (of all MAX_LANE_ORDERS) that admits it; -1: none."""
    view = router_view(topology)
    owner = np.repeat(np.arange(candidates.num_pairs), candidates.counts)
    return first_lane(lane_orders(topology), candidate_routers(view, candidates.a[owner], candidates.hops))


def within_lanes(topology, candidates: Candidates, lanes: int) -> Candidates:
    """The candidates that one of the first `lanes` orders admits; a user error when a pair keeps
    none (the pre-check, least_lanes, names the budget that would do)."""
    lane = candidate_lanes(topology, candidates)
    keep = (lane >= 0) & (lane < lanes)
    kept = np.add.reduceat(keep.astype(np.int64), candidates.pair_ptr[:-1]) if len(keep) else np.zeros(0, np.int64)
    if (kept == 0).any():
        view = router_view(topology)
        k = int(np.flatnonzero(kept == 0)[0])
        raise SynthError(f"no candidate path from router {view.router_name(int(candidates.a[k]))} to router "
                         f"{view.router_name(int(candidates.b[k]))} fits {lanes} virtual lane{'s' * (lanes != 1)}")
    pair_ptr = np.concatenate([[0], np.cumsum(kept)]).astype(np.int64)
    return Candidates(candidates.a, candidates.b, pair_ptr, candidates.hops[keep])


def least_lanes(topology, kind: str, a: np.ndarray, b: np.ndarray) -> int | None:
    """The least budget of lane orders in which every router pair (a[i], b[i]), a[i] != b[i], keeps
    a candidate of set `kind`: the largest, over the pairs, of the first lane admitting one of its
    candidates, plus one. None when some pair has no candidate that any of the MAX_LANE_ORDERS
    orders admits. Pairs go in chunks, so the candidates held stay within MAX_CANDIDATE_HOPS / 4."""
    view = router_view(topology)
    r = len(view.distance)
    keys = np.unique(np.asarray(a, dtype=np.int64) * r + np.asarray(b, dtype=np.int64))
    keys = keys[keys // r != keys % r]
    per_pair = max(1, r) * 2 * max(view.diameter, 1)  # candidate entries a pair can take
    chunk = max(1, MAX_CANDIDATE_HOPS // 4 // per_pair)
    least = 0
    for start in range(0, len(keys), chunk):
        part = keys[start : start + chunk]
        candidates = build_candidates(topology, part // r, part % r, kind)
        lane = candidate_lanes(topology, candidates)
        lane = np.where(lane < 0, MAX_LANE_ORDERS, lane)
        best = np.minimum.reduceat(lane, candidates.pair_ptr[:-1])
        if (best >= MAX_LANE_ORDERS).any():
            return None
        least = max(least, int(best.max(initial=-1)) + 1)
    return least


def check_budget(lanes: int) -> int:
    if not 1 <= lanes <= MAX_LANE_ORDERS:
        raise SynthError(f"a lane budget is 1 to {MAX_LANE_ORDERS} lanes, not {lanes}")
    return lanes
