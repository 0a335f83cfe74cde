"""UGAL on direct networks: each message takes its minimal path or one of n Valiant paths,
whichever looks cheaper under the load placed so far (Prisacari20 ch.7's UGAL-L, with the loads of the
workload standing in for the queues a switch would see).

UGAL-L compares q_M * h_M for the minimal path with q_I * h_I for an indirect candidate, q the
occupancy of the first output queue and h the hop count. Here q is 1 + the messages already
placed on the path's first router-to-router channel, h its router hops; the minimal path wins
ties. The messages of each phase are placed in ROUNDS rounds of equal size, in (src, dst) order; a
round's choices see the loads of the rounds before it (one vectorized step per round, not one per
message, so a whole exchange routes in bulk). The Valiant candidates come from different seeds
of synth.routing.valiant, so every chosen path keeps that router's policy: two shortest segments.
"""

from __future__ import annotations

import numpy as np

from synth.routing.minimal import router_view
from synth.topology.paths import Paths
from synth.routing.registry import DIRECT, VIA_ONE, RouterSpec, fixed
from synth.routing.valiant import valiant

CANDIDATES = 4  # n: Valiant candidates per message besides the minimal path
ROUNDS = 16


def _first_router_channel(paths: Paths) -> np.ndarray:
    """The second channel of every path (the first is the injection link), -1 when there is none."""
    lengths = paths.lengths()
    has = lengths >= 3
    out = np.full(paths.num_flows, -1, dtype=np.int64)
    out[has] = paths.channels[paths.offsets[:-1][has] + 1]
    return out


def ugal(topology, src, dst, phase=None, occurrence=None, seed=0) -> Paths:
    view = router_view(topology)
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    phase = np.zeros(len(src), dtype=np.int64) if phase is None else np.asarray(phase, dtype=np.int64)
    options = [view.walk(src, dst)] + [valiant(topology, src, dst, phase, occurrence, seed * (CANDIDATES + 1) + k + 1)
                                        for k in range(CANDIDATES)]
    first = np.stack([_first_router_channel(p) for p in options])  # (options, flows)
    hops = np.stack([np.maximum(p.lengths() - 2, 0) for p in options])
    chosen = np.zeros(len(src), dtype=np.int64)
    channels = len(view.head)
    # Loads are kept per phase: messages of different phases do not share queues.
    phases, phase_index = np.unique(phase, return_inverse=True)
    load = np.zeros((len(phases), channels + 1), dtype=np.int64)  # the extra column: "no router channel"
    for rows in _rounds(phase_index, src, dst):
        at = first[:, rows]
        queue = 1 + load[phase_index[rows][None, :], np.where(at >= 0, at, channels)]
        cost = queue * hops[:, rows]
        pick = np.argmin(cost, axis=0)  # argmin takes the first minimum: the minimal path on ties
        chosen[rows] = pick
        for k, path in enumerate(options):
            taken = rows[pick == k]
            part = path.select(taken)
            np.add.at(load, (np.repeat(phase_index[taken], part.lengths()), part.channels), 1)
    return _combine(options, chosen)


def _rounds(phase_index: np.ndarray, src: np.ndarray, dst: np.ndarray) -> list[np.ndarray]:
    """The flows of each round. Within a phase the flows are ranked by (src, dst) and cut into
    ROUNDS equal parts, so a phase routes the same whatever the order of its flows and whichever
    other phases share its batch (the batches depend on the worker count and on --out)."""
    order = np.lexsort((dst, src, phase_index))
    counts = np.bincount(phase_index)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    position = np.empty(len(src), dtype=np.int64)
    position[order] = np.arange(len(src)) - starts[phase_index[order]]
    round_of = position * ROUNDS // np.maximum(counts[phase_index], 1)
    grouped = np.argsort(round_of, kind="stable")
    bounds = np.searchsorted(round_of[grouped], np.arange(ROUNDS + 1))
    return [grouped[bounds[r]:bounds[r + 1]] for r in range(ROUNDS) if bounds[r + 1] > bounds[r]]


def _combine(options: list[Paths], chosen: np.ndarray) -> Paths:
    lengths = np.choose(chosen, [p.lengths() for p in options])
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    channels = np.empty(int(offsets[-1]), dtype=np.int64)
    for k, path in enumerate(options):
        flows = np.flatnonzero(chosen == k)
        part = path.select(flows)
        target = np.repeat(offsets[:-1][flows] - part.offsets[:-1], part.lengths()) + np.arange(len(part.channels))
        channels[target] = part.channels
    return Paths(offsets, channels)


ROUTER = (
    RouterSpec("ugal", DIRECT, f"per message the minimal path or the cheapest of {CANDIDATES} Valiant candidates under "
               "the load placed so far ([Prisacari20] ch.7's UGAL-L cost)", fixed(ugal), policy=VIA_ONE,
               report={"ugal": ("ugal", "flow")}, report_default=True, order=70),
)
