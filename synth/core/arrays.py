"""Array helpers for arrays of 10^8 entries.

One np.concatenate of 10^8 entries holds the main thread for a second or more, and Python runs a
signal's handler only between two bytecodes (synth.core.interrupt): these copy part by part
into an array made once, so a signal is handled between parts (issue 22)."""

from __future__ import annotations

import numpy as np


def concatenate(parts, dtype=None) -> np.ndarray:
    """np.concatenate(parts).astype(dtype), copied a part at a time (one copy, no temporary)."""
    parts = [np.asarray(p).ravel() for p in parts]
    kind = np.dtype(dtype) if dtype is not None else (np.result_type(*parts) if parts else np.dtype(np.float64))
    out = np.empty(sum(len(p) for p in parts), dtype=kind)
    at = 0
    for p in parts:
        out[at : at + len(p)] = p
        at += len(p)
    return out
