"""Results in item order from an executor that finishes items in any order, with bounded memory.

At most `window` items are in flight or finished-but-waiting (those after a slow one), so the
client never holds a whole exchange; each result is kept in the checkpoint the moment it
arrives, and parts the checkpoint already holds are read back in their turn instead of run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from synth.core import interrupt
from synth.execute.base import Executor, TaskFailed
from synth.io.checkpoint import CheckpointJob

WINDOW_PER_WORKER = 2  # items per worker in flight: one running, one queued behind it


@dataclass(frozen=True)
class Part:
    """Positions start..stop-1 of a run's selected phases, and those phases (the task's item)."""

    start: int
    stop: int
    phases: np.ndarray

    @property
    def key(self) -> tuple[int, int]:
        return self.start, self.stop

    def describe(self) -> str:
        first, last = int(self.phases[0]), int(self.phases[-1])
        return f"phase {first}" if len(self.phases) == 1 else f"phases {first}..{last} ({len(self.phases)})"


def ordered_results(executor: Executor, task: Callable, parts: list[Part], store: CheckpointJob | None = None,
                    stored: set[tuple[int, int]] = frozenset()) -> Iterator[tuple[object, bool]]:
    """(result, from_checkpoint) per part, in the order of `parts`. The parts whose key is in
    `stored` are read from `store`; the others run as task(part.phases) on the executor."""
    todo = [i for i, part in enumerate(parts) if part.key not in stored]
    if not todo:
        for part in parts:
            yield store.load(part.key, part.phases), True
        return
    with executor.session(task, len(todo)) as session:
        waiting: dict[int, object] = {}  # finished parts not yet yielded
        submitted = 0

        def fill() -> None:
            nonlocal submitted
            window = WINDOW_PER_WORKER * max(1, session.workers)  # a cluster may grow while it runs
            while submitted < len(todo) and submitted - emitted < window:
                session.submit(todo[submitted], parts[todo[submitted]].phases)
                submitted += 1

        emitted = 0  # of the parts to run, how many were yielded
        fill()
        for i, part in enumerate(parts):
            if part.key in stored:
                yield store.load(part.key, part.phases), True
                continue
            while i not in waiting:
                try:
                    key, result = session.next_result()
                    interrupt.check()
                except TaskFailed as exc:
                    raise TaskFailed(exc.key, f"{parts[exc.key].describe()} could not be done: {exc.reason}") from None
                if store is not None:
                    store.save(parts[key].key, parts[key].phases, result)
                waiting[key] = result
            result = waiting.pop(i)
            emitted += 1
            fill()
            yield result, False


def results_in_order(executor: Executor, task: Callable, items: list, done: Callable = lambda key: None) -> list:
    """task(item) of every item, run on `executor`'s workers at once (a few large pieces, not a
    stream: all of them are submitted), in item order; `done(k)` as item k's result arrives."""
    results: dict[int, object] = {}
    with executor.session(task, len(items)) as session:
        for key, item in enumerate(items):
            session.submit(key, item)
        while len(results) < len(items):
            try:
                key, result = session.next_result()
                interrupt.check()
            except TaskFailed as exc:
                raise TaskFailed(exc.key, f"piece {exc.key + 1} of {len(items)} could not be done: {exc.reason}") \
                    from None
            results[key] = result
            done(key)
    return [results[k] for k in range(len(items))]
