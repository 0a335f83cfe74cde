"""The default executor: forked worker processes on this machine.

Workers are forked after the task function is set, so a closure over networks and workloads
needs no pickling; only items and results cross process boundaries. A worker that dies (killed,
out of memory) stops the run with TaskFailed instead of waiting forever.

Why not concurrent.futures.ProcessPoolExecutor: its workers share one result queue behind one
lock. A worker terminated while it held that lock (mid-put of a result) left every other worker
blocked on it for good, and the pool's shutdown waited on them: the test suite hung in
`LocalSession.close` (issue 22). Here each worker has pipes of its own (items in, results out), so
no lock is shared between processes; the parent reads whichever result is ready
(multiprocessing.connection.wait, which a signal interrupts); and closing never waits on a worker
that can block: SIGTERM, a short bounded wait, then SIGKILL, so nothing is left behind.
"""

from __future__ import annotations

import gc
import multiprocessing
import signal
import time
import traceback
from collections import deque
from multiprocessing import util
from multiprocessing.connection import Connection, wait
from typing import Callable

from synth.core.interrupt import child_processes, held, kill_processes, quiet_worker
from synth.core.parallel import default_workers
from synth.execute.base import Executor, InlineSession, Session, TaskFailed

# SIGTERM is at its default action in the workers (quiet_worker), so they end at once: a worker
# still alive after this long is stuck where SIGTERM cannot reach it and gets SIGKILL.
TERMINATE_SECONDS = 1.0
# After SIGKILL only a process in uninterruptible sleep (a disk or NFS wait) is still there; it is
# not waited for longer than this (it ends by itself, and the kernel reaps it with this process).
KILL_SECONDS = 5.0

DIED = "a worker process of this machine died (killed, or out of memory?)"
_SIGNALS = {signal.SIGINT, signal.SIGTERM}


class _RemoteTraceback(Exception):
    """The worker's traceback of a task's exception, kept as its cause (shown with --debug)."""

    def __init__(self, text: str):
        super().__init__(text)

    def __str__(self) -> str:
        return self.args[0]


class _Worker:
    """One forked process, its pipes (parent's ends), and the key of the item it runs."""

    def __init__(self, process, tasks: Connection, results: Connection):
        self.process, self.tasks, self.results = process, tasks, results
        self.key: int | None = None


def _serve(task: Callable, tasks: Connection, results: Connection, inherited: list[Connection], parent: int) -> None:
    """A worker's life: items in, (ok, result or exception) out, until its pipe closes."""
    quiet_worker(parent)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)  # blocked by the parent around the fork
    for connection in inherited:  # the other workers' pipes: only the parent may hold their ends
        connection.close()
    while True:
        try:
            item = tasks.recv()
        except (EOFError, OSError):  # the parent closed the session or is gone
            return
        try:
            outcome = (True, task(item))
        except BaseException as exc:  # noqa: BLE001 - the task's own errors go back to the parent as they are
            outcome = (False, exc, traceback.format_exc())
        try:
            results.send(outcome)  # pickled whole before anything is written: a failure sends nothing
        except (BrokenPipeError, EOFError):
            return
        except Exception as exc:  # noqa: BLE001 - a result or an exception that does not pickle
            what = "result" if outcome[0] else "exception"
            try:
                results.send((False, TypeError(f"the task's {what} cannot be sent back from the worker: "
                                               f"{type(exc).__name__}: {exc}"), ""))
            except OSError:
                return


def _stop(workers: list[_Worker]) -> None:
    """Close the pipes, SIGTERM every worker, SIGKILL those still alive after TERMINATE_SECONDS;
    bounded, whatever the workers do. Idempotent (also run at exit for a session left open)."""
    for worker in workers:
        for connection in (worker.tasks, worker.results):
            connection.close()
    alive = [w.process for w in workers if w.process.exitcode is None]
    for process in alive:
        # A worker's own helpers (a solver binary, the HiGHS helper) die with it, not as orphans.
        kill_processes(child_processes(process.pid))
        _signal(process, signal.SIGTERM)
    deadline = time.monotonic() + TERMINATE_SECONDS
    while alive and time.monotonic() < deadline:
        wait([p.sentinel for p in alive], timeout=max(0.0, deadline - time.monotonic()))
        alive = [p for p in alive if p.exitcode is None]  # exitcode reaps the ended ones
    for process in alive:
        _signal(process, signal.SIGKILL)
    for process in alive:
        process.join(KILL_SECONDS)


def _signal(process, signum: int) -> None:
    try:
        process.kill() if signum == signal.SIGKILL else process.terminate()
    except (ProcessLookupError, OSError):  # already gone
        pass


class LocalSession(Session):
    def __init__(self, task: Callable, workers: int):
        self.workers = workers
        self._pool: list[_Worker] = []
        self._idle: deque[_Worker] = deque()
        self._waiting: deque[tuple[int, object]] = deque()  # submitted, no worker free yet
        self._closer = util.Finalize(self, _stop, args=(self._pool,), exitpriority=100)
        try:
            context, parent = multiprocessing.get_context("fork"), multiprocessing.current_process().pid
            # Garbage of this process is finalized here, not in the workers: a forked copy of an
            # object whose finalizer talks to a thread of this process (a Dask client left over
            # from an earlier run waits for its event loop) blocked a worker for a minute.
            gc.collect()
            for _ in range(workers):
                task_reader, task_writer = context.Pipe(duplex=False)
                result_reader, result_writer = context.Pipe(duplex=False)
                # The parent's ends, of this worker and the earlier ones, are closed in the worker.
                inherited = [c for w in self._pool for c in (w.tasks, w.results)] + [task_writer, result_reader]
                process = context.Process(target=_serve, args=(task, task_reader, result_writer, inherited, parent),
                                          name="synth-worker")
                # No signal between the fork and the worker's own handlers: a SIGTERM there would
                # run this process's handler in the worker (a traceback instead of a quiet end).
                mask = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
                try:
                    process.start()
                finally:
                    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                    task_reader.close()  # the worker's ends: held by the worker alone, so that its
                    result_writer.close()  # death is an end of file here
                worker = _Worker(process, task_writer, result_reader)
                self._pool.append(worker)
                self._idle.append(worker)
        except BaseException:
            self.close()
            raise

    def submit(self, key: int, item) -> None:
        self._waiting.append((key, item))
        self._dispatch()

    def _dispatch(self) -> None:
        """Hand waiting items to idle workers (an idle worker is in recv: the send cannot block)."""
        while self._waiting and self._idle:
            worker = self._idle.popleft()
            key, item = self._waiting[0]
            try:
                worker.tasks.send(item)
            except OSError:  # it died while idle (killed from outside): the item waits for another
                self._drop(worker)
                continue
            self._waiting.popleft()
            worker.key = key
        if self._waiting and not self._pool:
            raise TaskFailed(self._waiting[0][0], DIED)

    def _drop(self, worker: _Worker) -> None:
        self._pool.remove(worker)
        if worker in self._idle:
            self._idle.remove(worker)
        worker.tasks.close()
        worker.results.close()
        worker.process.join(KILL_SECONDS)

    def next_result(self) -> tuple[int, object]:
        while True:
            busy = [w for w in self._pool if w.key is not None]
            if not busy:
                if self._waiting:  # every worker died idle
                    raise TaskFailed(self._waiting[0][0], DIED)
                raise RuntimeError("next_result with no item submitted")
            ready = set(wait([w.results for w in busy] + [w.process.sentinel for w in self._pool]))
            for worker in list(self._pool):
                if worker.key is None and worker.process.sentinel in ready:
                    self._drop(worker)  # died idle: its items go to the others
                    continue
                if worker.key is None or not (worker.results in ready or worker.process.sentinel in ready):
                    continue
                key = worker.key
                if not worker.results.poll():  # ended without a word (the pipe's end of file shows too)
                    self._drop(worker)
                    raise TaskFailed(key, DIED)
                try:
                    outcome = worker.results.recv()
                except (EOFError, OSError):  # died before or while writing its result
                    self._drop(worker)
                    raise TaskFailed(key, DIED) from None
                except Exception as exc:  # noqa: BLE001 - a result that does not unpickle here
                    raise TaskFailed(key, f"its result could not be read back ({type(exc).__name__}: {exc})") from None
                worker.key = None
                self._idle.append(worker)
                self._dispatch()
                if outcome[0]:
                    return key, outcome[1]
                _, exc, remote = outcome
                if remote and exc.__cause__ is None:
                    exc.__cause__ = _RemoteTraceback(remote)
                raise exc
            self._dispatch()  # items of a worker that died idle

    def close(self) -> None:
        # Running items are stopped, not awaited: an interrupted run must end now. A second
        # signal waits for the end of the stop (bounded), so that no worker is left behind.
        with held():
            self._closer()


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
