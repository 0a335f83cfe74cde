"""Candidate paths of the path-selection router (`--router paths`), per pair of routers.

Three candidate sets (`--candidates`):
- `minimal`: every minimal router path (a dragonfly's minimal sense: at most one global hop,
  synth.routing.minimal), the first MAX_MINIMAL_PATHS in lexicographic order of channel ids where a
  pair has more (tori); the lowest-numbered path, which the minimal router takes, is always first;
- `valiant`: for every intermediate router m other than the pair's own (on a dragonfly every router
  of every group, so both Valiant and Valiant-any paths are among them), the path of the two
  lowest-numbered minimal segments a -> m -> b that the Valiant routers build, with a loop
  (a router visited twice) cut out. A path therefore has at most 2 x diameter router hops: the
  documented hop limit;
- `all`: both sets.
Duplicates are removed; the paths of a pair are kept in a fixed order (minimal ones first, then by
intermediate), so a candidate index means the same path on every run.

A path is a row of router-to-router channel ids padded with -1 (`hops`, at most `width` long);
`pair_ptr` says which rows belong to which pair. Terminal links are not part of a candidate: a
flow's injection and ejection channels are fixed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.routing.minimal import RouterView, router_view

CANDIDATE_SETS = ("minimal", "valiant", "all")
MAX_MINIMAL_PATHS = 64  # per pair of routers (tori have combinatorially many minimal paths)
MAX_CANDIDATE_HOPS = 1 << 26  # candidate channel entries held in memory (8 bytes each)


@dataclass(frozen=True)
class Candidates:
    a: np.ndarray  # (pairs,) source router
    b: np.ndarray  # (pairs,) destination router
    pair_ptr: np.ndarray  # (pairs + 1,) rows of each pair in `hops`
    hops: np.ndarray  # (candidates, width) router channel ids in travel order, -1 padded

    @property
    def num_pairs(self) -> int:
        return len(self.a)

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.pair_ptr)

    def rows(self, pair: int) -> np.ndarray:
        return self.hops[self.pair_ptr[pair] : self.pair_ptr[pair + 1]]


def check_candidate_set(name: str) -> str:
    if name not in CANDIDATE_SETS:
        raise SynthError(f"unknown candidate set '{name}' (known: {', '.join(CANDIDATE_SETS)})")
    return name


def minimal_paths(view: RouterView, a: np.ndarray, b: np.ndarray, limit: int = MAX_MINIMAL_PATHS):
    """Every minimal path of each pair (a[i], b[i]), the first `limit` in lexicographic order:
    (owner pair per path, (paths, diameter) channel matrix padded with -1), grouped by pair in order.
    Keeping the first `limit` partial paths of a pair at every step keeps exactly the first `limit`
    complete ones, since every partial minimal path extends to a complete one."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    owner, at = np.arange(len(a)), a.copy()
    hops = np.full((len(a), max(view.diameter, 1)), -1, dtype=np.int64)
    for step in range(view.diameter):
        moving = view.distance[at, b[owner]] > 0
        if not moving.any():
            break
        allowed = np.zeros((len(at), view.out.shape[1]), dtype=bool)
        allowed[moving] = view.minimal_choices(at[moving], b[owner[moving]])
        allowed[~moving, 0] = True  # a finished path stays as it is (one copy)
        row, slot = np.nonzero(allowed)  # row-major: the lexicographic order is kept
        channel = np.where(moving[row], view.out[at[row], slot], -1)
        owner, hops = owner[row], hops[row]
        hops[:, step] = channel
        at = np.where(channel >= 0, view.head[np.maximum(channel, 0)], at[row])
        rank = np.arange(len(owner)) - np.searchsorted(owner, owner)
        keep = rank < limit
        owner, hops, at = owner[keep], hops[keep], at[keep]
    return owner, hops


def without_loops(routers: np.ndarray, hops: np.ndarray) -> np.ndarray:
    """Paths (rows of channels; `routers` the routers they visit, -1 padded alike) with every loop
    between two visits of one router cut out: the shortcut uses a subset of the channels."""
    width = routers.shape[1]
    same = (routers[:, :, None] == routers[:, None, :]) & (routers[:, :, None] >= 0)
    same &= np.triu(np.ones((width, width), dtype=bool), 1)[None]
    out = hops.copy()
    for row in np.flatnonzero(same.any(axis=(1, 2))).tolist():  # few: loops are the exception
        path, visited = [], [int(routers[row, 0])]
        for k in range(width - 1):
            channel, head = int(hops[row, k]), int(routers[row, k + 1])
            if channel < 0:
                break
            if head in visited:  # back at a router already on the path: drop the loop
                cut = visited.index(head)
                del visited[cut + 1 :]
                del path[cut:]
                continue
            path.append(channel)
            visited.append(head)
        out[row] = -1
        out[row, : len(path)] = path
    return out


def build_candidates(topology, a: np.ndarray, b: np.ndarray, kind: str) -> Candidates:
    """The candidate paths of every distinct pair (a[i], b[i]) of different routers (sorted pairs)."""
    check_candidate_set(kind)
    view = router_view(topology)
    routers = len(view.distance)
    keys = np.unique(np.asarray(a, dtype=np.int64) * routers + np.asarray(b, dtype=np.int64))
    a, b = keys // routers, keys % routers
    parts_owner, parts_hops, parts_rank = [], [], []
    width = 2 * max(view.diameter, 1)
    if kind in ("minimal", "all"):
        owner, hops = minimal_paths(view, a, b)
        parts_owner.append(owner)
        parts_hops.append(_pad(hops, width))
        parts_rank.append(np.zeros(len(owner), dtype=np.int64))
    if kind in ("valiant", "all") and routers > 2:
        expected = len(a) * (routers - 2) * width
        if expected > MAX_CANDIDATE_HOPS:
            raise SynthError(f"the valiant candidates of {len(a):,} router pairs would take {expected:,} channel entries, "
                             f"more than the {MAX_CANDIDATE_HOPS:,} held in memory; use --candidates minimal or fewer flows")
        owner, hops = _via_paths(view, a, b, width)
        parts_owner.append(owner)
        parts_hops.append(hops)
        parts_rank.append(np.ones(len(owner), dtype=np.int64))
    owner, hops, rank = np.concatenate(parts_owner), np.vstack(parts_hops), np.concatenate(parts_rank)
    return _deduplicated(a, b, owner, hops, rank)


def _pad(hops: np.ndarray, width: int) -> np.ndarray:
    out = np.full((len(hops), width), -1, dtype=np.int64)
    out[:, : hops.shape[1]] = hops
    return out


def _via_paths(view: RouterView, a: np.ndarray, b: np.ndarray, width: int):
    """Per pair, one path through every other router m: the lowest-numbered minimal segments
    a -> m and m -> b, loops cut out (owner pair, hops), in order of m."""
    routers = len(view.distance)
    owner = np.repeat(np.arange(len(a)), routers)
    middle = np.tile(np.arange(routers), len(a))
    keep = (middle != a[owner]) & (middle != b[owner])
    keep &= ~view.unreachable[a[owner], middle] & ~view.unreachable[middle, b[owner]]
    owner, middle = owner[keep], middle[keep]
    first, second = view.router_hops(a[owner], middle), view.router_hops(middle, b[owner])
    hops = np.full((len(owner), width), -1, dtype=np.int64)
    length = (first >= 0).sum(axis=1)
    hops[:, : first.shape[1]] = first
    columns = length[:, None] + np.arange(second.shape[1])[None, :]
    rows = np.repeat(np.arange(len(owner))[:, None], second.shape[1], axis=1)
    present = second >= 0
    hops[rows[present], columns[present]] = second[present]
    visited = np.where(hops >= 0, view.head[np.maximum(hops, 0)], -1)
    routers_on = np.hstack([a[owner][:, None], visited, np.full((len(owner), 1), -1)])
    return owner, without_loops(routers_on[:, : width + 1], hops)


def _deduplicated(a, b, owner, hops, rank) -> Candidates:
    """One copy of every (pair, path), pairs in order, within a pair minimal paths first and then in
    the order generated (the first occurrence of a path decides its place)."""
    sequence = np.arange(len(owner))
    order = np.lexsort((sequence, rank, owner))
    owner, hops = owner[order], hops[order]
    # rows equal to an earlier row of the same pair are dropped
    keyed = np.hstack([owner[:, None], hops])
    _, first_index = np.unique(keyed, axis=0, return_index=True)
    keep = np.zeros(len(owner), dtype=bool)
    keep[first_index] = True
    owner, hops = owner[keep], hops[keep]
    pair_ptr = np.concatenate([[0], np.cumsum(np.bincount(owner, minlength=len(a)))]).astype(np.int64)
    return Candidates(a, b, pair_ptr, hops)
