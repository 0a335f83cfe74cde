"""Oblivious minimal up*/down* routers for XGFTs.

A router is called as router(xgft, src, dst, phase=..., occurrence=..., seed=...) with
per-flow arrays (occurrence: how many earlier flows of the same phase have the same source and
destination) and returns, for every flow, its path choice: the WT index at the flow's NCA layer
(see synth.topology.xgft), 0 <= choice < W_1*...*W_delta. All routers are vectorized over
flows, so whole exchanges are routed in bulk.
"""

from __future__ import annotations

import numpy as np

from synth.routing.registry import XGFT, RouterSpec, fixed
from synth.topology.xgft import Xgft

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finalizer: a fixed, well-spread hash of 64-bit keys (wrapping arithmetic)."""
    x = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):  # the multiplications wrap modulo 2^64 by design
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _hash_choice(xgft: Xgft, key: np.ndarray, seed: int, dst: np.ndarray, src: np.ndarray) -> np.ndarray:
    salt = mix64(np.uint64(seed & 0xFFFFFFFFFFFFFFFF) + _GOLDEN)
    paths = xgft.path_count(xgft.nca_layer(src, dst)).astype(np.uint64)
    return (mix64(key ^ salt) % paths).astype(np.int64)


def dmodk(xgft: Xgft, src, dst, phase, occurrence, seed=0):
    """Destination-mod-k: at layer l take up link floor(dst / (W_1*...*W_l)) mod W_{l+1}.

    With w_1 least significant in the WT index, those digits assemble to dst mod P_delta.
    """
    return np.asarray(dst, dtype=np.int64) % xgft.path_count(xgft.nca_layer(src, dst))


def smodk(xgft: Xgft, src, dst, phase, occurrence, seed=0):
    """Source-mod-k: the same digits taken from the source rank."""
    return np.asarray(src, dtype=np.int64) % xgft.path_count(xgft.nca_layer(src, dst))


def random_per_pair(xgft: Xgft, src, dst, phase, occurrence, seed=0):
    """Static random: one seeded random path per (source, destination) pair, in every phase."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    key = mix64((src * xgft.num_leaves + dst).astype(np.uint64))
    return _hash_choice(xgft, key, seed, dst, src)


def random_per_message(xgft: Xgft, src, dst, phase, occurrence, seed=0):
    """Dynamic random: an independent seeded random path for every message.

    A message is named by (phase, src, dst, occurrence), occurrence counting repeats of the same
    pair within a phase, so the result does not depend on the order flows are listed in.
    """
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    pair = mix64((src * xgft.num_leaves + dst).astype(np.uint64))
    message = mix64(np.asarray(phase, dtype=np.uint64) * np.uint64(0x100000001B3) + np.asarray(occurrence, dtype=np.uint64))
    return _hash_choice(xgft, pair ^ message, seed, dst, src)


def _report(name: str, label: str) -> dict:
    return {name: (label, "flow")}


ROUTER = (
    RouterSpec("dmodk", XGFT, "destination-mod-k: up link floor(dst / (W_1...W_l)) mod W_(l+1) at layer l "
               "([Prisacari20] sec. 2.3)", fixed(dmodk), consistent=True, report=_report("dmodk", "d-mod-k"), report_default=True, order=10),
    RouterSpec("smodk", XGFT, "source-mod-k: the same digits taken from the source", fixed(smodk),
               report=_report("smodk", "s-mod-k"), report_default=True, order=10),
    RouterSpec("random", XGFT, "one seeded random path per (source, destination) pair", fixed(random_per_pair),
               report=_report("random", "random"), report_default=True, order=10),
    RouterSpec("random-msg", XGFT, "an independent seeded random path per message", fixed(random_per_message), order=10),
)
