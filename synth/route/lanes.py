"""Virtual lanes that make routes deadlock-free: each path gets a lane so that, lane by lane, the
channel dependency graph (synth.verify.deadlock) of the paths on it is acyclic.

The heuristic is layered in the spirit of DFSSSP (Domke, Hoefler and Nagel, IPDPS 2011): every path
starts on lane 0; while the paths of lane l have a dependency cycle, the edge of that cycle which
the fewest of them induce is broken by moving exactly those paths up to lane l + 1; then lane l + 1
gets the same treatment. Lanes only ever receive paths from below, so the count it ends with is an
upper bound on the least number needed (not a proof of it).

Paths are given flat, every phase of a routes file together: a fabric's tables hold all of them.
"""

from __future__ import annotations

import numpy as np

from synth.core.errors import SynthError
from synth.verify.deadlock import DependencyGraph


def _edges(channels: np.ndarray, lengths: np.ndarray, num_channels: int) -> tuple[np.ndarray, np.ndarray]:
    """Every dependency a path induces: (edge key c * C + d, the path's index)."""
    path_of = np.repeat(np.arange(len(lengths)), lengths)
    if len(channels) < 2:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    same = path_of[:-1] == path_of[1:]
    return (channels[:-1][same] * num_channels + channels[1:][same]), path_of[:-1][same]


def lane_cycle(channels: np.ndarray, lengths: np.ndarray, lanes: np.ndarray, num_channels: int,
               lane: int) -> list[int] | None:
    """A dependency cycle among the paths on `lane`, or None."""
    on = lanes == lane
    graph = DependencyGraph(num_channels)
    graph.add_paths(channels[np.repeat(on, lengths)], lengths[on])
    return graph.cycle()


def assign_lanes(channels: np.ndarray, lengths: np.ndarray, num_channels: int, max_lanes: int) -> np.ndarray:
    """A lane per path (DFSSSP-style layering); refuses when more than `max_lanes` would be needed."""
    channels, lengths = np.asarray(channels, dtype=np.int64), np.asarray(lengths, dtype=np.int64)
    path_of = np.repeat(np.arange(len(lengths)), lengths)
    pairs = np.unique(path_of * num_channels + channels, return_counts=True)
    if (pairs[1] > 1).any():  # a path through one channel twice depends on itself: no lane can help
        path, channel = divmod(int(pairs[0][np.argmax(pairs[1] > 1)]), num_channels)
        raise SynthError(f"path {path} crosses channel {channel} twice, so its own channel dependencies form a cycle "
                         f"that no virtual lane assignment can break")
    keys, owner = _edges(channels, lengths, num_channels)
    lanes = np.zeros(len(lengths), dtype=np.int64)
    lane = 0
    while (lanes == lane).any():
        while (cycle := lane_cycle(channels, lengths, lanes, num_channels, lane)) is not None:
            cycle_keys = np.array([a * num_channels + b for a, b in zip(cycle, cycle[1:] + cycle[:1])], dtype=np.int64)
            on_lane = lanes[owner] == lane
            counts = [np.unique(owner[on_lane & (keys == k)]) for k in cycle_keys.tolist()]
            movers = min(counts, key=len)  # the cheapest edge of the cycle to break
            lanes[movers] = lane + 1
        lane += 1
        if lane >= max_lanes and (lanes == lane).any():
            raise SynthError(f"the routes need more than {max_lanes} virtual lanes with this assignment (the layered "
                             f"heuristic)")
    return lanes
