"""Merging a step's identical transfers into one SimGrid flow, where max-min sharing makes it exact.

With Q ranks per node a schedule often sends k transfers of a step from one node to another along
one path with the same bytes (rd-b on 16,384 ranks, 4 per node: every node pair of a step carries
4). SimGrid's cost grows with the flows alive at once, so such a group is simulated as one flow of
k times the bytes. When that changes nothing:

- Max-min sharing (CM02, LV08, SMPI: weighted by the route, the same for a group's members) is
  homogeneous: replace every flow of a step by k copies and each copy gets 1/k of the rate the
  flow had, at every instant, so the k copies end together, exactly when one flow of k times the
  bytes does. So a step is merged only where EVERY group in it has the same size k (a group of 4
  beside a lone transfer would take 1/2 of a shared link merged, 4/5 as five flows).
- SMPI's factors depend on the message size: exact only where every transfer of the step is in
  its last piece (65,472 B and more), so is the merged message. LV08's TCP window bound (gamma /
  2 RTT, 161 GB/s at 1 us) is above any link here, so it never binds the merged flow.
- Not merged: IB (its penalties count the flows per host), the asynchronous discipline (a rank's
  messages are its own actor's), a per-message overhead (it serializes a rank's messages) and a
  copy cost (a rank copies its own messages).

A step merged is simulated with a fraction of the flows, and its time is the time of the unmerged
step up to floating-point rounding (tests/unit/simulation/test_merge.py compares both ways).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.topology.paths import Paths

SMPI_LAST_PIECE = 65472  # bytes: SimGrid's default smpi/bw-factor and lat-factor are constant from here on
MERGED_MODELS = ("CM02", "LV08", "SMPI")


@dataclass(frozen=True)
class Merge:
    keep: np.ndarray  # indices of the transfers simulated (each standing for its group), in order
    multiplicity: np.ndarray  # per kept transfer, how many transfers it stands for

    @property
    def flows(self) -> int:
        return len(self.keep)


def mergeable(model: str, discipline: str, overhead: float, copy) -> bool:
    """Whether the settings allow exact merging at all (see above)."""
    return model in MERGED_MODELS and discipline == "bsp" and not overhead and copy is None


def plan_merge(model: str, row: np.ndarray, src_node: np.ndarray, dst_node: np.ndarray, size: np.ndarray,
               paths: Paths) -> Merge | None:
    """The transfers to simulate, one per group of a step's transfers with the same nodes, path and
    bytes, in the steps where every group has the same size k > 1 (and, under SMPI, every message is
    in the last piece); None where no step merges. `paths`: those of the transfers between nodes,
    in order."""
    count = len(row)
    if count == 0:
        return None
    across = src_node != dst_node
    # the path of each transfer as its across-index (-1 within a node): paths compared channel by channel below
    index = np.where(across, np.cumsum(across) - 1, -1)
    order = np.lexsort((size, dst_node, src_node, row))
    key = np.stack([row[order], src_node[order], dst_node[order], size[order]])
    starts = np.concatenate([[True], (key[:, 1:] != key[:, :-1]).any(axis=0)])
    group = np.cumsum(starts) - 1  # per sorted transfer, its group
    first = order[np.flatnonzero(starts)]  # per group, its first transfer (lexsort is stable): the one simulated
    same_path = _same_paths(index[order], index[first][group], paths)
    groups = len(first)
    sizes = np.bincount(group, minlength=groups)
    differs = np.zeros(groups, dtype=bool)
    np.logical_or.at(differs, group, ~same_path)
    group_row = row[first]
    rows = int(row.max()) + 1
    low = np.full(rows, np.iinfo(np.int64).max)
    high = np.zeros(rows, dtype=np.int64)
    np.minimum.at(low, group_row, sizes)
    np.maximum.at(high, group_row, sizes)
    broken = np.zeros(rows, dtype=bool)
    np.logical_or.at(broken, group_row, differs)
    if model == "SMPI":
        np.logical_or.at(broken, row, size < SMPI_LAST_PIECE)
    merged_row = (low == high) & (high > 1) & ~broken
    if not merged_row.any():
        return None
    # per transfer: kept when its row is not merged, or when it is its group's first
    keep = ~merged_row[row]
    keep[first[merged_row[group_row]]] = True
    kept = np.flatnonzero(keep)
    multiplicity = np.ones(count, dtype=np.int64)
    multiplicity[first] = np.where(merged_row[group_row], sizes, 1)
    return Merge(kept, multiplicity[kept])


def _same_paths(mine: np.ndarray, theirs: np.ndarray, paths: Paths) -> np.ndarray:
    """Per pair of across-indices (-1: within a node, no path), whether the two paths are equal."""
    both = (mine >= 0) & (theirs >= 0)
    same = mine == theirs  # within a node both -1; a transfer compared with itself
    check = np.flatnonzero(both & ~same)
    if not len(check):
        return same
    lengths = paths.lengths()
    a, b = mine[check], theirs[check]
    equal_length = lengths[a] == lengths[b]
    a, b, where = a[equal_length], b[equal_length], check[equal_length]
    hops = lengths[a]
    within = np.arange(int(hops.sum())) - np.repeat(np.cumsum(hops) - hops, hops)
    differ = paths.channels[np.repeat(paths.offsets[a], hops) + within] != \
        paths.channels[np.repeat(paths.offsets[b], hops) + within]
    bad = np.zeros(len(a), dtype=bool)
    np.logical_or.at(bad, np.repeat(np.arange(len(a)), hops), differ)
    same = same.copy()
    same[where[~bad]] = True
    return same
