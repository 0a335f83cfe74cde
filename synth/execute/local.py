"""The default executor: forked worker processes on this machine.

Workers are forked after the task function is set, so a closure over networks and workloads
needs no pickling; only items and results cross process boundaries. A worker that dies (killed,
out of memory) breaks the pool: the run stops with TaskFailed instead of waiting forever.
"""

from __future__ import annotations

import multiprocessing
import queue
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Callable

from synth.core.interrupt import quiet_worker
from synth.core.parallel import default_workers
from synth.execute.base import Executor, InlineSession, Session, TaskFailed

_TASK: Callable | None = None  # the session's task, inherited by the forked workers


def _call(item):
    return _TASK(item)


class LocalSession(Session):
    def __init__(self, task: Callable, workers: int):
        global _TASK
        _TASK = task
        self.workers = workers
        self.finished: queue.SimpleQueue = queue.SimpleQueue()
        self.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"), initializer=quiet_worker)

    def submit(self, key: int, item) -> None:
        future = self.pool.submit(_call, item)
        future.add_done_callback(lambda f, key=key: self.finished.put((key, f)))

    def next_result(self) -> tuple[int, object]:
        key, future = self.finished.get()
        try:
            return key, future.result()
        except BrokenProcessPool:
            raise TaskFailed(key, "a worker process of this machine died (killed, or out of memory?)") from None

    def close(self) -> None:
        # Running items are stopped, not awaited: an interrupted run must end now. SIGTERM is
        # the default action in the workers (quiet_worker), so they exit at once.
        processes = list((getattr(self.pool, "_processes", None) or {}).values())
        self.pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join()


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, workers: int | None = None):
        self.workers = workers

    def capacity(self) -> int:
        return self.workers or default_workers()

    def session(self, task: Callable, items: int) -> Session:
        workers = min(self.capacity(), items)
        return LocalSession(task, workers) if workers > 1 else InlineSession(task)

    def label(self) -> str:
        return "local processes"

