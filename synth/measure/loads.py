"""Channel loads and maximum contention, from hop matrices (one row of channel ids per flow)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.topology.paths import Paths
from synth.topology.network import Network


def channel_loads(hops: np.ndarray, num_channels: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Messages (or bytes, with per-flow `weights`) on every channel. `hops` is (n, K), -1 padded."""
    used = hops >= 0
    if weights is not None:
        weights = np.broadcast_to(np.asarray(weights, dtype=np.float64)[:, None], hops.shape)[used]
    loads = np.bincount(hops[used], weights=weights, minlength=num_channels)
    return loads.astype(np.int64) if weights is not None else loads


# Byte sums are float64 bincounts: exact while a phase's bytes stay below 2^53 (checked by
# check_byte_sums before any is taken).
MAX_EXACT_BYTES = 1 << 53


def check_byte_sums(phase_index: np.ndarray, weights: np.ndarray, phases: np.ndarray) -> None:
    totals = np.bincount(np.asarray(phase_index, dtype=np.int64), weights=np.asarray(weights, dtype=np.float64),
                         minlength=len(phases))
    if len(totals) and totals.max() >= MAX_EXACT_BYTES:
        worst = int(np.argmax(totals))
        raise SynthError(f"phase {int(phases[worst])} moves {totals[worst]:.4g} bytes, more than the 2^53 whose sums "
                         "per channel stay exact: load in messages (--load-unit messages) or use smaller sizes")


def weighted_counts(keys: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """Sum of `weights` per key (whole numbers, exact below MAX_EXACT_BYTES), int64."""
    return np.bincount(keys, weights=np.asarray(weights, dtype=np.float64), minlength=size).astype(np.int64)


def bytes_over_bandwidth(byte_loads: np.ndarray, bandwidth: np.ndarray) -> np.ndarray:
    """A channel's load in bytes over its bandwidth, in whole bytes rounded up (exact on the
    router-to-router links, all of bandwidth 1)."""
    return np.ceil(byte_loads / bandwidth - 1e-9).astype(np.int64)


def phase_channel_counts(topology, phase_index: np.ndarray, src, dst, routing, num_phases: int,
                         weights: np.ndarray | None = None) -> np.ndarray:
    """Messages per (phase, channel), shape (num_phases, num_channels), of channel paths (Paths)
    or of XGFT routes in their compact encoding (one WT index per flow). With per-flow `weights`
    (bytes): bytes over the channel's bandwidth (bytes_over_bandwidth) instead of messages.

    One bincount over combined (phase, channel) keys for a whole batch of phases: the inner loop
    of whole-exchange analyses. Unused XGFT stages land in an extra bin per phase.
    """
    if isinstance(routing, Paths):
        network = topology.network()
        num_channels = network.num_channels
        keys = routing.keys(np.asarray(phase_index, dtype=np.int64) * num_channels)
        size = num_phases * num_channels
        if weights is None:
            return np.bincount(keys, minlength=size).reshape(num_phases, num_channels)
        loads = weighted_counts(keys, np.repeat(weights, routing.lengths()), size).reshape(num_phases, num_channels)
        return bytes_over_bandwidth(loads, network.channel_bandwidth)
    xgft, choice = topology, routing
    num_channels = xgft.num_channels
    offset = np.asarray(phase_index, dtype=np.int64) * (num_channels + 1)
    keys = xgft.channel_keys(src, dst, choice, offset=offset, missing=num_channels)
    size = num_phases * (num_channels + 1)
    if weights is None:
        counts = np.bincount(keys.ravel(), minlength=size)
    else:
        counts = weighted_counts(keys.ravel(), np.broadcast_to(weights, keys.shape).ravel(), size)
    counts = counts.reshape(num_phases, num_channels + 1)[:, :num_channels]
    return counts if weights is None else bytes_over_bandwidth(counts, xgft.network().channel_bandwidth)


@dataclass
class LoadReport:
    """Loads of one flow set on one network, with where the maximum sits."""

    messages: np.ndarray  # per channel
    bytes: np.ndarray  # per channel
    max_contention: int
    hottest_channels: np.ndarray  # channel ids carrying the maximum
    stage_up_max: dict[int, int]  # stage -> max load on up channels
    stage_down_max: dict[int, int]


def analyse_loads(network: Network, hops: np.ndarray, flow_bytes: np.ndarray) -> LoadReport:
    messages = channel_loads(hops, network.num_channels)
    byte_loads = channel_loads(hops, network.num_channels, flow_bytes)
    peak = int(messages.max(initial=0))
    stage, is_up = network.channel_stage(), network.channel_is_up()
    stages = range(1, int(stage.max(initial=0)) + 1)
    up_max = {k: int(messages[(stage == k) & is_up].max(initial=0)) for k in stages}
    down_max = {k: int(messages[(stage == k) & ~is_up].max(initial=0)) for k in stages}
    hottest = np.flatnonzero(messages == peak) if peak > 0 else np.zeros(0, dtype=np.int64)
    return LoadReport(messages, byte_loads, peak, hottest, up_max, down_max)
