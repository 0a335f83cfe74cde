"""Where batches of independent solves run: this machine's cores, or a Dask cluster.

Every batch of independent work (the phases of `synth route`, the cells of `synth report` and `synth
sweep`, the pieces of an orbit synthesis: ordered.results_in_order) goes
through one interface: `ordered_results(executor, task, items)` (synth.execute.ordered) hands the
items to an executor and yields the results in item order, with a bounded number in flight, and
optionally keeps them in a checkpoint as they arrive (synth.io.checkpoint).

An executor is chosen with `--executor`:
- `local[:WORKERS]`: forked processes on this machine (default: one per core);
- `dask`: a Dask cluster started on this machine for the run (one worker per core);
- `dask:ADDRESS` or `dask:FILE.json`: an existing Dask cluster, by scheduler address or scheduler file.

docs/architecture.md says why Dask and not Ray.
"""

from __future__ import annotations

from typing import Callable

from synth.core.errors import SynthError
from synth.core.registry import Registry
from synth.core.validate import parse_int, show
from synth.execute.base import Executor, Session, TaskFailed
from synth.execute.local import LocalExecutor

# Each kind parses the text after `kind:` (None when there is none) into an executor.
EXECUTORS: Registry[Callable[[str | None], Executor]] = Registry("executor")

MAX_LOCAL_WORKERS = 4096


def _local(argument: str | None) -> Executor:
    workers = None if argument is None else parse_int(argument, "--executor local:WORKERS", 1, MAX_LOCAL_WORKERS)
    return LocalExecutor(workers)


def _dask(argument: str | None) -> Executor:
    from synth.execute.dask_cluster import DaskExecutor

    return DaskExecutor(argument)


EXECUTORS.register("local", _local)
EXECUTORS.register("dask", _dask)

EXECUTOR_SYNTAX = ("local[:WORKERS] (this machine's cores, default), dask (a Dask cluster started on this machine), "
                   "dask:ADDRESS or dask:SCHEDULER.json (an existing Dask cluster; needs pip install 'synth[cluster]')")


def parse_executor(text: str | None) -> Executor:
    """The executor named by `--executor` (None: the local pool). Nothing starts until it is used."""
    if text is None:
        return LocalExecutor()
    if not isinstance(text, str) or not text.strip():
        raise SynthError(f"--executor {show(text)} is empty: use {EXECUTOR_SYNTAX}")
    kind, colon, argument = text.strip().partition(":")
    if colon and not argument:
        raise SynthError(f"--executor {show(text)} has nothing after ':' (use {EXECUTOR_SYNTAX})")
    return EXECUTORS.get(kind, f"--executor {show(text)}")(argument if colon else None)


__all__ = ["EXECUTORS", "EXECUTOR_SYNTAX", "Executor", "LocalExecutor", "Session", "TaskFailed", "parse_executor"]
