"""The cluster executor: a Dask cluster, started on this machine or joined by address.

- The task function (a closure over network, workload and router) is cloudpickled once and
  installed on every worker by a worker plugin, which also reaches workers that join or are
  restarted later; items (phase numbers) are all that each submission carries.
- A worker lost while it held an item: the scheduler runs the item elsewhere. An item whose
  worker is lost twice (`allowed-failures` 1 on the cluster this executor starts; the cluster's
  own setting on one it joins, Dask's default 3) or whose task raises twice (`retries=1`) is
  reported as TaskFailed or with the task's error, never dropped.
- Each result is released as soon as it is taken, so the client holds only the items in flight.
"""

from __future__ import annotations

import logging
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Callable

from synth.core import interrupt
from synth.core.errors import SynthError
from synth.core.parallel import default_workers
from synth.core.validate import show
from synth.execute.base import Executor, Session, TaskFailed

WORKERS_TIMEOUT = 120  # seconds to wait for a joined cluster's first worker
WORKERS_RECOUNT = 2.0  # seconds between counts of a session's workers
POLL = 0.005  # seconds between looks for a finished item (results are fetched in the background meanwhile)
CAUSE_WAIT = 2.0  # seconds a cancelled item waits for the error of the item that lost the workers

try:
    import cloudpickle
    import dask
    import distributed
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:  # the cluster extra is not installed: DaskExecutor says what to install
    distributed = None
    WorkerPlugin = object

_TASKS: dict[str, Callable] = {}  # on a worker: the task functions of the sessions, by token


def _threads(client) -> int:
    """How many items the cluster runs at once: its worker threads (at least 1)."""
    return max(1, sum(client.nthreads().values()))


def _run(token: str, item):
    return _TASKS[token](item)


class _TaskPlugin(WorkerPlugin):
    """Installs one session's task function on a worker (present and future ones)."""

    def __init__(self, token: str, payload: bytes):
        self.token, self.payload = token, payload

    def setup(self, worker) -> None:
        _TASKS[self.token] = cloudpickle.loads(self.payload)

    def teardown(self, worker) -> None:
        _TASKS.pop(self.token, None)


class DaskSession(Session):
    def __init__(self, client, task: Callable, owned: bool):
        self.client, self.owned = client, owned
        self.token = uuid.uuid4().hex
        self.plugin = f"synth-{self.token}"
        try:
            client.register_plugin(_TaskPlugin(self.token, cloudpickle.dumps(task)), name=self.plugin)
        except (ImportError, AttributeError) as exc:  # raised on a worker, as it unpickles the task
            raise SynthError(f"the Dask workers cannot load synth's task ({type(exc).__name__}: {exc}): every worker "
                             "needs synth installed, the same version as this client") from None
        # Results are fetched in the background as items finish (with_results), not one blocking
        # call at a time; errors come back as (type, exception, traceback) to be told apart here.
        self.completed = distributed.as_completed(with_results=True, raise_errors=False)
        self.keys: dict = {}  # Dask key -> item key, for the items in flight
        self._workers, self._counted = 1, -WORKERS_RECOUNT
        self.aborted = False

    @property
    def workers(self) -> int:
        """The cluster's worker threads now (recounted every few seconds): workers that join a
        running exchange (a batch system starting them one by one) widen the window."""
        now = time.monotonic()
        if now - self._counted >= WORKERS_RECOUNT:
            self._workers, self._counted = _threads(self.client), now
        return self._workers

    def submit(self, key: int, item) -> None:
        future = self.client.submit(_run, self.token, item, key=f"synth-{self.token}-{key}", retries=1)
        self.keys[future.key] = (key, future)
        self.completed.add(future)

    def next_result(self) -> tuple[int, object]:
        while not self.completed.has_ready():
            if self.client.status not in ("running", "connecting"):  # the scheduler went away for good
                raise TaskFailed(next(iter(self.keys.values()))[0], "the Dask cluster went away (the client lost its "
                                 "scheduler)")
            time.sleep(POLL)
            interrupt.check()
        future, result = next(self.completed)
        key, _ = self.keys.pop(future.key)
        status = future.status
        future.release()
        if status == "finished":
            return key, result
        if status == "cancelled" or not isinstance(result, tuple):  # cancelled by the cluster, not by synth
            # A cluster whose workers were all lost cancels what waits; the item that killed them
            # is the cause to name, and its error may come a moment later.
            raise self._lost_worker(CAUSE_WAIT) or TaskFailed(key, f"the Dask cluster cancelled it ({result})")
        _, exc, traceback = result
        if isinstance(exc, distributed.KilledWorker):
            raise TaskFailed(key, f"its worker was lost twice ({exc.last_worker.address} last)") from None
        raise exc.with_traceback(traceback)

    def _lost_worker(self, wait: float) -> TaskFailed | None:
        """An item in flight whose worker was lost twice, looked for during `wait` seconds."""
        deadline = time.monotonic() + wait
        while True:
            for key, future in sorted(self.keys.values(), key=lambda item: item[0]):
                if future.status == "error":
                    exc = future.exception()
                    if isinstance(exc, distributed.KilledWorker):
                        return TaskFailed(key, f"its worker was lost twice ({exc.last_worker.address} last)")
            if time.monotonic() >= deadline:
                return None
            time.sleep(POLL)

    def __exit__(self, exc_type, *rest) -> None:
        self.aborted = exc_type is not None
        self.close()

    def close(self) -> None:
        futures = [future for _, future in self.keys.values()]
        self.keys.clear()
        if (self.owned and self.aborted) or self.client.status != "running":
            return  # an interrupted run: its own cluster goes with it (or the cluster is gone)
        try:
            if futures:
                self.client.cancel(futures)
            self.client.unregister_worker_plugin(self.plugin)
        except Exception:  # noqa: BLE001 - a cluster going away is not this run's error
            pass


class DaskExecutor(Executor):
    name = "dask"

    def __init__(self, address: str | None):
        if distributed is None:
            raise SynthError("--executor dask needs Dask, which is not installed: pip install 'synth[cluster]'")
        if address is not None and address.endswith(".json") and not Path(address).is_file():
            raise SynthError(f"--executor dask:{show(address)}: no such scheduler file")
        self.address = address
        self.client = self.cluster = None

    def _start(self):
        if self.client is not None:
            return self.client
        # One line per problem, from synth: Dask's own reports of a cluster going down (an interrupt
        # stops the workers of the cluster synth started) say nothing the user can act on.
        for name in ("distributed", "bokeh", "tornado", "asyncio"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
        if self.address is None:
            # Ctrl-C (sent to the whole process group) is this process's to handle: it closes the
            # cluster, which stops the workers, so they ignore it (dask_worker_setup). A Ctrl-C while
            # the cluster starts stays pending (blocked here) and is delivered at the unblock below.
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            # The worker processes are started from Dask's loop thread, whose signal mask predates the
            # block: a Ctrl-C to the group can end one inside Python's own start, which then prints
            # "Fatal Python error" on the stderr it inherited. They inherit /dev/null instead (Dask's
            # logs are silenced anyway; a worker that dies is reported by this process in one line).
            quiet, stderr = os.open(os.devnull, os.O_WRONLY), os.dup(2)
            os.dup2(quiet, 2)
            try:
                with dask.config.set({"distributed.worker.preload": ["synth.execute.dask_worker_setup"]}):
                    self.cluster = distributed.LocalCluster(
                        n_workers=default_workers(), threads_per_worker=1, processes=True, host="127.0.0.1",
                        dashboard_address=None, silence_logs=logging.CRITICAL,
                        # No dashboard, and the scheduler's HTTP endpoints on a free port (not 8787, which
                        # a second run on this machine would find taken, with a warning)
                        scheduler_kwargs={"allowed_failures": 1, "dashboard_address": "127.0.0.1:0"})
            finally:
                os.dup2(stderr, 2)
                os.close(stderr)
                os.close(quiet)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
            self.client = distributed.Client(self.cluster)
            return self.client
        try:
            if self.address.endswith(".json"):
                self.client = distributed.Client(scheduler_file=self.address)
            else:  # Dask's connect timeout (distributed.comm.timeouts.connect, default 30 s) applies
                self.client = distributed.Client(self.address)
        except (OSError, TimeoutError, ValueError, TypeError, KeyError, AssertionError) as exc:
            what = "cannot use the scheduler file" if self.address.endswith(".json") else "cannot reach the Dask scheduler"
            raise SynthError(f"--executor dask:{self.address}: {what} ({type(exc).__name__}: {exc})") from None
        try:
            self.client.wait_for_workers(1, timeout=WORKERS_TIMEOUT)
        except TimeoutError:
            raise SynthError(f"--executor dask:{self.address}: the cluster has no worker "
                             f"(waited {WORKERS_TIMEOUT} s)") from None
        return self.client

    def capacity(self) -> int:
        return _threads(self._start())

    def session(self, task: Callable, items: int) -> Session:
        return DaskSession(self._start(), task, owned=self.cluster is not None)

    def label(self) -> str:
        return "dask on this machine" if self.address is None else f"dask at {self.address}"

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        self.client = self.cluster = None
