"""Run independent batches in worker processes (phases of an exchange, ILP subproblems).

Workers are forked, so closures over networks and workloads need no pickling; only the
batches and their results cross process boundaries. Results come back in input order.
"""

from __future__ import annotations

import multiprocessing
import os

from synth.core.interrupt import quiet_worker
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_TASK: Callable | None = None


def _call(item):
    return _TASK(item)


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)))


def map_in_processes(func: Callable[[T], R], items: Iterable[T], workers: int | None = None) -> Iterator[R]:
    items = list(items)
    workers = default_workers() if workers is None else workers
    if workers <= 1 or len(items) <= 1:
        yield from map(func, items)
        return
    global _TASK
    _TASK = func
    context = multiprocessing.get_context("fork")
    with context.Pool(min(workers, len(items)), initializer=quiet_worker) as pool:
        yield from pool.imap(_call, items)
