"""Numba's threading layer for synth's parallel kernels (`parallel=True`): one that survives a fork.

The local executor forks its workers (synth.execute.local), and a parent may have run a parallel
kernel first (a schedule built as runs is verified and priced by them: rd-b, Bruck, TuNA). Numba's
default picks the GNU OpenMP layer where it is present, and a child forked after it ran ends at once
with "Terminating: fork() called from a process already using GNU OpenMP, this is unsafe" (a sweep's
workers, seen in the README test of `synth sweep`). "forksafe" picks TBB where it is installed, else
the workqueue layer: that one allows no two launches at once from different threads, which synth
never makes (a kernel runs in the main thread, or alone under synth.core.interrupt.native).
"""

from __future__ import annotations

import numba

numba.config.THREADING_LAYER = "forksafe"  # read at the first parallel launch, so set before any
