"""Dimension-order routing (DOR) on networks with router coordinates (torus, HyperX, 2dfc).

A message corrects its coordinates one dimension at a time, dimension 0 first: at every router it
takes, among the channels of the first dimension in which it still differs from its destination
(channel class "dim k"), the one that brings it closest to the destination router (the lowest-
numbered on a tie). On a torus that is the shorter way round the ring (on a tie, the channel
the family lists first), on a HyperX the one direct hop. Every DOR path is minimal, so `check`
verifies it as one. On a degraded network (synth.topology.degraded) a router whose dimension-order
hop failed (no channel of that dimension on a shortest path) takes its lowest-numbered channel on a
shortest path instead.
"""

from __future__ import annotations

import numpy as np

from synth.routing.minimal import router_view
from synth.topology.paths import Paths
from synth.routing.registry import DIRECT, RouterSpec, fixed


def dor(topology, src, dst, phase=None, occurrence=None, seed=0) -> Paths:
    coordinates = topology.router_coordinates()  # the registry refuses networks without (DirectRouter.refusal)
    network = topology.network()
    view = router_view(topology)
    dimensions = coordinates.shape[1]
    class_of_dimension = [network.class_names.index(f"dim {k}") for k in range(dimensions)]
    # Per router and dimension, its out-channels in that dimension (padded with -1).
    out = view.out
    out_class = np.where(out >= 0, network.channel_class[np.maximum(out, 0)], -1)

    def pick(step, at, target, rows):
        differs = coordinates[at] != coordinates[target]
        dimension = np.argmax(differs, axis=1)
        wanted = np.asarray(class_of_dimension)[dimension]
        channels = out[at]
        heads = np.where(channels >= 0, view.head[np.maximum(channels, 0)], 0)
        distance = view.distance[heads, target[:, None]].astype(np.int64)
        allowed = (out_class[at] == wanted[:, None]) & (distance == view.distance[at, target][:, None] - 1)
        score = np.where(allowed, distance * (len(view.head) + 1) + channels, np.iinfo(np.int64).max)
        chosen = channels[np.arange(len(at)), np.argmin(score, axis=1)]
        # On a degraded network the dimension's hop may have failed: the lowest-numbered minimal channel.
        return np.where(allowed.any(axis=1), chosen, view.next_channel[at, target].astype(np.int64))

    return view.walk(np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64), pick)


ROUTER = (
    RouterSpec("dor", DIRECT, "dimension order: dimension 0 first, the shorter way in each (torus, HyperX)", fixed(dor),
               needs="coordinates", consistent=True, report={"dor": ("dor", "flow")}, order=50),
)
