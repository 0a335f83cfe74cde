"""Routes of any family as per-flow channel paths in CSR form.

`offsets[i]:offsets[i+1]` indexes flow i's channels (in travel order) in one `channels` array, so
the loads of any set of flows are one np.bincount, whatever the family, and parallel links are
told apart (a path names channels, never node pairs). XGFT routers keep their compact encoding
(one WT index per flow, synth.topology.xgft) and expand to this form where a path is needed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from synth.core.arrays import concatenate
from synth.core.interrupt import stoppable


@dataclass(frozen=True)
class Paths:
    offsets: np.ndarray  # (flows + 1,) int64, offsets[0] == 0
    channels: np.ndarray  # (offsets[-1],) channel ids

    @property
    def num_flows(self) -> int:
        return len(self.offsets) - 1

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def path(self, flow: int) -> np.ndarray:
        return self.channels[self.offsets[flow] : self.offsets[flow + 1]]

    def as_lists(self) -> list[list[int]]:
        if self.num_flows == 0:
            return []  # (np.split of nothing is one empty part)
        return [part.tolist() for part in np.split(self.channels, self.offsets[1:-1])]

    def take(self, start: int, stop: int) -> "Paths":
        """Flows start..stop-1 (contiguous), with their own offsets."""
        lo, hi = self.offsets[start], self.offsets[stop]
        return Paths(self.offsets[start : stop + 1] - lo, self.channels[lo:hi])

    def select(self, flows: np.ndarray) -> "Paths":
        """The paths of `flows` (indices, any order), as one Paths."""
        flows = np.asarray(flows, dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(self.lengths()[flows])]).astype(np.int64)
        return Paths(offsets, _gather(self.offsets, self.channels, flows, offsets))

    def flow_of_hop(self) -> np.ndarray:
        """For every entry of `channels`, the flow it belongs to."""
        return np.repeat(np.arange(self.num_flows), self.lengths())

    def keys(self, offset: np.ndarray) -> np.ndarray:
        """channel + offset[flow] for every hop: with offset = phase index * channels, one bincount
        gives per-(phase, channel) loads."""
        return self.channels + np.repeat(np.asarray(offset, dtype=np.int64), self.lengths())

    @staticmethod
    def from_lists(paths: list[list[int]]) -> "Paths":
        """From a list of id lists (a routes file's JSON form)."""
        lengths = np.fromiter(map(len, paths), dtype=np.int64, count=len(paths))
        ids = np.fromiter((i for path in paths for i in path), dtype=np.int64, count=int(lengths.sum()))
        return Paths(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64), ids)

    @staticmethod
    def from_padded(hops: np.ndarray) -> "Paths":
        """From an (n, K) matrix of channel ids in travel order; entries of -1 (anywhere) are skipped."""
        hops = np.asarray(hops)
        used = hops >= 0
        offsets = np.concatenate([[0], np.cumsum(used.sum(axis=1))]).astype(np.int64)
        return Paths(offsets, hops[used].astype(np.int64))

    @staticmethod
    def concatenate(parts: list["Paths"]) -> "Paths":
        if not parts:
            return Paths(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64))
        ends = np.cumsum([p.offsets[-1] for p in parts])
        offsets = [parts[0].offsets] + [p.offsets[1:] + e for p, e in zip(parts[1:], ends[:-1])]
        return Paths(concatenate(offsets, np.int64), concatenate([p.channels for p in parts]))  # a part at a time


@stoppable
@njit(cache=True, nogil=True)
def _gather(offsets, channels, flows, new_offsets):
    """The channels of `flows`, one after another (new_offsets: where each flow's begin)."""
    out = np.empty(new_offsets[-1], dtype=channels.dtype)
    for i in range(len(flows)):
        start = offsets[flows[i]]
        for k in range(new_offsets[i + 1] - new_offsets[i]):
            out[new_offsets[i] + k] = channels[start + k]
    return out


def as_paths(topology, src: np.ndarray, dst: np.ndarray, routes) -> Paths:
    """Channel paths of routes in either form: Paths as they are, a family's compact routes (an
    XGFT's WT indices, Topology.compact_routes) expanded by its hop_matrix."""
    if isinstance(routes, Paths):
        return routes
    if not topology.compact_routes:
        raise TypeError(f"routes of a {topology.family} network must be Paths")
    return Paths.from_padded(topology.hop_matrix(src, dst, routes))
