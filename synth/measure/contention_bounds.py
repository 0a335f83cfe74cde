"""Lower bounds on maximum link contention that every routing obeys.

Subtree cut bound ([Prisacari20], ch.3 sec. 3.4.4, digest sec. 4): every message
whose source lies in a layer-(k-1) subtree P and whose NCA layer is at least k leaves P
through the up links of P's XGFT nodes at stage k; there are W_1*...*W_k of them. So the
maximum contention at stage k is at least ceil(count / (W_1*...*W_k)), and likewise for
messages entering P on the down links. Stage 1 is the per-terminal injection/ejection bound.

Every bound also holds for bytes over bandwidth (`weights`: the bytes of every message): the
bytes crossing a cut spread over its channels (bandwidth 1), rounded up to a multiple of the
phase's byte granule g (the greatest common divisor of its messages' bytes: every load is a
multiple of g), so that with equal messages of s bytes a bound is s times the message bound.
"""

from __future__ import annotations

import numpy as np

from synth.measure.loads import bytes_over_bandwidth, weighted_counts
from synth.topology.xgft import Xgft


def _ceil_div(a: np.ndarray, b: int) -> np.ndarray:
    return -(-a // b)


def _sums(keys: np.ndarray, size: int, weights: np.ndarray | None) -> np.ndarray:
    """Messages per key, or their bytes with `weights`."""
    return np.bincount(keys, minlength=size) if weights is None else weighted_counts(keys, weights, size)


def phase_granules(phase_index: np.ndarray, weights: np.ndarray, num_phases: int) -> np.ndarray:
    """Per phase, the greatest common divisor of its messages' bytes (1 without any, or all empty)."""
    phase_index = np.asarray(phase_index, dtype=np.int64)
    out = np.zeros(num_phases, dtype=np.int64)
    if len(phase_index):
        order = np.argsort(phase_index, kind="stable")
        owners = phase_index[order]
        starts = np.flatnonzero(np.concatenate([[True], owners[1:] != owners[:-1]]))
        out[owners[starts]] = np.gcd.reduceat(np.asarray(weights, dtype=np.int64)[order], starts)
    return np.maximum(out, 1)


def _cut_bound(load: np.ndarray, channels, granule: np.ndarray | None) -> np.ndarray:
    """ceil(load / channels) per (phase, cut), rounded up to the phase's granule when bytes are weighed."""
    bound = _ceil_div(load, channels)
    return bound if granule is None else _ceil_div(bound, granule[:, None]) * granule[:, None]


def stage_lower_bounds_batch(xgft: Xgft, phase_index: np.ndarray, src: np.ndarray, dst: np.ndarray, num_phases: int,
                             weights: np.ndarray | None = None) -> np.ndarray:
    """Subtree cut bound per (phase, stage): shape (num_phases, H). Links of bandwidth 1."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    phase_index = np.asarray(phase_index, dtype=np.int64)
    granule = None if weights is None else phase_granules(phase_index, weights, num_phases)
    out = np.zeros((num_phases, xgft.height), dtype=np.int64)
    for k in range(1, xgft.height + 1):
        span, subtrees = xgft.mt_span[k - 1], xgft.mt_count(k - 1)
        src_tree, dst_tree = src // span, dst // span
        leaving = src_tree != dst_tree  # NCA layer >= k
        for tree in (src_tree, dst_tree):
            keys = phase_index[leaving] * subtrees + tree[leaving]
            counts = _sums(keys, num_phases * subtrees, None if weights is None else weights[leaving])
            counts = counts.reshape(num_phases, subtrees)
            out[:, k - 1] = np.maximum(out[:, k - 1], _cut_bound(counts.max(axis=1)[:, None], xgft.wt_span[k], granule)[:, 0])
    return out


def stage_lower_bounds(xgft: Xgft, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Subtree cut bound of one flow set per stage 1..H."""
    src = np.asarray(src, dtype=np.int64)
    return stage_lower_bounds_batch(xgft, np.zeros(src.shape, dtype=np.int64), src, dst, 1)[0]


def lower_bound(xgft: Xgft, src: np.ndarray, dst: np.ndarray) -> int:
    return int(stage_lower_bounds(xgft, src, dst).max(initial=0))


def terminal_bounds_batch(phase_index: np.ndarray, src: np.ndarray, dst: np.ndarray, num_terminals: int,
                          num_phases: int, weights: np.ndarray | None = None, network=None) -> np.ndarray:
    """Injection/ejection bound of any network, per phase: the most messages one terminal sends or
    receives (each crosses that terminal's one link), shape (num_phases, 1). A message to itself
    uses no link. With `weights`: the most bytes over the terminal link's bandwidth (`network`'s)."""
    moving = np.asarray(src) != np.asarray(dst)
    idx = np.asarray(phase_index, dtype=np.int64)[moving]
    weights = None if weights is None else np.asarray(weights)[moving]
    out = np.zeros(num_phases, dtype=np.int64)
    for ends, bandwidth in zip((np.asarray(src)[moving], np.asarray(dst)[moving]), _terminal_bandwidths(network, weights)):
        counts = _sums(idx * num_terminals + ends, num_phases * num_terminals, weights).reshape(num_phases, num_terminals)
        if bandwidth is not None:
            counts = bytes_over_bandwidth(counts, bandwidth)
        out = np.maximum(out, counts.max(axis=1, initial=0))
    return out[:, None]


def _terminal_bandwidths(network, weights) -> tuple:
    """(injection, ejection) link bandwidth per terminal when bytes are weighed, else (None, None)."""
    if weights is None:
        return None, None
    n = network.num_terminals
    out = []
    for ends, other in ((network.channel_src, network.channel_dst), (network.channel_dst, network.channel_src)):
        links = np.flatnonzero((ends < n) & (other >= n))
        bandwidth = np.ones(n)
        bandwidth[ends[links]] = network.channel_bandwidth[links]
        out.append(bandwidth)
    return tuple(out)


def group_cut_bounds_batch(network, groups: np.ndarray, phase_index: np.ndarray, src: np.ndarray, dst: np.ndarray,
                           num_phases: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Group cut bound per phase, shape (num_phases, 1): the messages leaving (or entering) a group
    of routers cross the channels leaving (entering) it, so some such channel carries at least
    ceil(messages / channels) (dragonfly: a group's global links, Prisacari20 ch.5-6). Channels of
    bandwidth 1; a group with traffic but no channel out is not a network synth builds."""
    n = network.num_terminals
    terminal_group = np.empty(n, dtype=np.int64)
    injection = np.flatnonzero(network.channel_src < n)
    terminal_group[network.channel_src[injection]] = groups[network.channel_dst[injection] - n]
    num_groups = int(groups.max()) + 1
    links = (network.channel_src >= n) & (network.channel_dst >= n)
    tail, head = groups[network.channel_src[links] - n], groups[network.channel_dst[links] - n]
    crossing = tail != head
    out = np.zeros(num_phases, dtype=np.int64)
    phase_index = np.asarray(phase_index, dtype=np.int64)
    granule = None if weights is None else phase_granules(phase_index, weights, num_phases)
    a, b = terminal_group[np.asarray(src)], terminal_group[np.asarray(dst)]
    leaving = a != b
    for side, ends in ((tail, a), (head, b)):
        channels = np.bincount(side[crossing], minlength=num_groups)
        counts = _sums(phase_index[leaving] * num_groups + ends[leaving], num_phases * num_groups,
                       None if weights is None else np.asarray(weights)[leaving])
        out = np.maximum(out, _cut_bound(counts.reshape(num_phases, num_groups), np.maximum(channels, 1), granule).max(axis=1))
    return out[:, None]


def cut_bounds_batch(topology, phase_index: np.ndarray, src: np.ndarray, dst: np.ndarray, num_phases: int,
                     weights: np.ndarray | None = None) -> np.ndarray:
    """The family's cut bounds per (phase, cut kind); topology.bound_names() names the columns.
    With per-message `weights` (bytes) the bounds are on bytes over bandwidth."""
    if topology.bounds_per_stage:
        return stage_lower_bounds_batch(topology, phase_index, src, dst, num_phases, weights)
    network = topology.network()
    columns = [terminal_bounds_batch(phase_index, src, dst, topology.num_terminals, num_phases, weights, network)]
    groups = topology.router_groups()
    if groups is not None:
        columns.append(group_cut_bounds_batch(network, groups, phase_index, src, dst, num_phases, weights))
    return np.hstack(columns)
