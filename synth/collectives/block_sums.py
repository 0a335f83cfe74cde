"""Per-transfer sums over the blocks of a schedule, compiled: one pass over the block lists with no
temporary of the block sends' size (a gather of 5 x 10^8 sizes would take 4 GiB)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

import synth.core.fork_safe_threads  # noqa: F401 - a fork-safe threading layer before the first launch

from synth.core.interrupt import stoppable


@stoppable
@njit(cache=True, nogil=True)
def transfer_sums(block_ptr, block_ids, block_bytes):
    """The bytes of every transfer: the sum of its blocks' sizes."""
    out = np.zeros(len(block_ptr) - 1, dtype=np.int64)
    for t in range(len(block_ptr) - 1):
        total = 0
        for i in range(block_ptr[t], block_ptr[t + 1]):
            total += block_bytes[block_ids[i]]
        out[t] = total
    return out


@stoppable
@njit(cache=True, parallel=True, nogil=True)
def run_sums(ptr, first, stride, count, block_bytes, order):
    """The bytes of every transfer whose blocks are runs (synth.collectives.schedule.BlockRuns),
    visited in `order` (by sender: a rank's blocks lie close together in the sizes), on all cores."""
    out = np.zeros(len(ptr) - 1, dtype=np.int64)
    for i in prange(len(order)):
        t = order[i]
        total = 0
        for k in range(ptr[t], ptr[t + 1]):
            b = first[k]
            for _ in range(count[k]):
                total += block_bytes[b]
                b += stride[k]
        out[t] = total
    return out
