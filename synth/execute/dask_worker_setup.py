"""Preloaded into the workers of the Dask cluster synth starts (`distributed.worker.preload`).

Ctrl-C reaches the whole process group, the workers included; the client alone handles it (it
closes the cluster, which stops them), so a worker ignores SIGINT instead of printing a
KeyboardInterrupt traceback. Dask calls dask_setup in the worker process's main thread.
"""

from __future__ import annotations

import signal


def dask_setup(worker) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
