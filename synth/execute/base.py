"""The executor interface: start workers once, run one task function over many items.

A run opens an executor (`with executor:`), which starts nothing until the first session. A
session ships one task function to the workers once, then takes items (`submit`) and hands back
results as they finish (`next_result`), in any order; synth.execute.ordered puts them back in
item order. Items and results are small (phase numbers in, evaluations and routes out); what the
task closes over (network, workload, router) travels once per worker, not once per item.
"""

from __future__ import annotations

from typing import Callable


class TaskFailed(Exception):
    """Work that could not be done where it was sent: a worker died under it (twice, on a
    cluster). Not a bug of synth and not bad input; the CLI says it in one line (exit 70)."""

    def __init__(self, key: int, reason: str):
        super().__init__(reason)
        self.key, self.reason = key, reason


class Session:
    """One task function on the executor's workers."""

    workers: int  # how many items run at once

    def submit(self, key: int, item) -> None:
        raise NotImplementedError

    def next_result(self) -> tuple[int, object]:
        """(key, result) of the next item to finish; the task's own exception is raised as it
        was (a SynthError stays a user error), a lost item as TaskFailed."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop what is still running (on an interrupt or an error) and release the workers."""

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class InlineSession(Session):
    """Items run in this process when they are collected: no workers, no pickling."""

    workers = 1

    def __init__(self, task: Callable):
        self.task, self.pending = task, []

    def submit(self, key: int, item) -> None:
        self.pending.append((key, item))

    def next_result(self) -> tuple[int, object]:
        key, item = self.pending.pop(0)
        return key, self.task(item)


class Executor:
    """Where sessions run. `label` says it for progress lines; `workers` is known once started."""

    name = "executor"

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> int:
        """Start the workers (or reach the cluster) now, so that a problem shows before any work;
        how many items run at once."""
        return self.capacity()

    def capacity(self) -> int:
        """How many items run at once (starts the executor if needed)."""
        raise NotImplementedError

    def session(self, task: Callable, items: int) -> Session:
        """A session for `items` items of `task` (a closure is fine: it is shipped once)."""
        raise NotImplementedError

    def label(self) -> str:
        return self.name

    def close(self) -> None:
        """Stop the workers this executor started (a cluster it joined stays up)."""
