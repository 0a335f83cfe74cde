"""How many worker processes this machine runs at once (synth.execute runs the work)."""

from __future__ import annotations

import os


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)))
