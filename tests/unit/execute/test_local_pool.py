"""The local executor's pools never hang and leave no process behind (issue 22, "no hang, ever").

The suite once hung in LocalSession.close: a worker of the old ProcessPoolExecutor pool, blocked on
the result queue's lock that a terminated worker held, and the close waiting on it. Here a few
hundred pools are opened and closed on every path -- a normal end, the parent interrupted mid-run
(SIGTERM and SIGINT), a worker SIGKILLed, the consumer leaving while workers are blocked writing
large results (terminated mid-send), a worker that ignores SIGTERM -- in a child process of its own
session, each round bounded, and after every round the child has no child process left (read from
/proc, not from synth's bookkeeping); after the child, its session is empty.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from helpers import REPO
from synth.execute import LocalExecutor, TaskFailed
from synth.execute.ordered import Part, ordered_results


STRESS = r'''
import os, random, signal, sys, time
import numpy as np
from synth.core.interrupt import Interrupted, install_handlers
from synth.execute import LocalExecutor, TaskFailed
from synth.execute.ordered import Part, ordered_results

path, rounds, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ROUND_SECONDS = float(sys.argv[4])
rng = random.Random(seed)
install_handlers()  # as the CLI runs: SIGTERM raises Interrupted, SIGINT KeyboardInterrupt
me = os.getpid()


def children():
    """Child processes of this one, live or not yet reaped, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()
        except OSError:
            continue
        state, ppid = stat[stat.rindex(")") + 2:].split()[:2]
        if int(ppid) == me:
            found.append((int(entry), state))
    return found


for round_ in range(rounds):
    items, workers = rng.randint(2, 12), rng.randint(2, 4)
    trigger, pause = rng.randrange(path == "stubborn", items), rng.uniform(0, 0.005)
    parts = [Part(i, i + 1, np.array([i])) for i in range(items)]
    seen = []

    def task(phases, trigger=trigger, pause=pause):
        i = int(phases[0])
        time.sleep(pause * (i % 3))
        if i == trigger and path in ("sigterm", "sigint"):
            os.kill(os.getppid(), signal.SIGTERM if path == "sigterm" else signal.SIGINT)
            time.sleep(60)  # busy when the parent stops the pool
        if i == trigger and path == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        if path == "stubborn":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a worker that ran an item: only SIGKILL ends it
            if i == trigger:
                time.sleep(60)
        if path == "abandoned":
            return bytes(4 << 20)  # far more than a pipe holds: the worker blocks writing it
        return i * 10

    start = time.monotonic()
    try:
        for result, _ in ordered_results(LocalExecutor(workers), task, parts):
            seen.append(result)
            if path == "abandoned" or (path == "stubborn" and len(seen) == trigger):
                break  # the consumer leaves; the pool is closed under the running workers
        outcome = "done"
    except Interrupted:
        outcome = "SIGTERM"
    except KeyboardInterrupt:
        outcome = "SIGINT"
    except TaskFailed as exc:
        outcome = "failed"
        assert "a worker process of this machine died" in str(exc), exc
    elapsed = time.monotonic() - start
    left = children()
    assert not left, f"round {round_} ({path}): processes left behind: {left}"
    assert elapsed < ROUND_SECONDS, f"round {round_} ({path}) took {elapsed:.1f} s"
    expected = {"normal": "done", "sigterm": "SIGTERM", "sigint": "SIGINT", "sigkill": "failed",
                "abandoned": "done", "stubborn": "done"}[path]
    assert outcome == expected, (round_, path, outcome)
    if path == "normal":
        assert seen == [i * 10 for i in range(items)]
    elif path == "sigkill":
        assert seen == [i * 10 for i in range(len(seen))] and len(seen) <= trigger
print("rounds", rounds)
'''

# path, rounds: 560 pools in all; a stubborn worker costs a second (SIGKILL after the SIGTERM wait)
PATHS = [("normal", 120), ("sigterm", 120), ("sigint", 100), ("sigkill", 120), ("abandoned", 100), ("stubborn", 3)]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("path, rounds", PATHS, ids=[p for p, _ in PATHS])
def test_pools_open_and_close_on_every_path_leaving_no_process(path, rounds):
    process = subprocess.Popen([sys.executable, "-c", STRESS, path, str(rounds), "22", "30"], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        out, err = process.communicate(timeout=400)  # a hang bound: each round is bounded inside too
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 0 and out.split() == ["rounds", str(rounds)], err[-3000:]
    assert err == ""  # no traceback of a worker, no warning
    time.sleep(0.2)
    left = subprocess.run(["pgrep", "-s", str(process.pid)], capture_output=True, text=True).stdout.split()
    assert left == []


# ----- the task's own outcomes ----------------------------------------------------------------------

class _Odd(Exception):
    pass


def _refuses_odd(phases):
    if int(phases[0]) % 2:
        raise _Odd(f"phase {int(phases[0])} is odd")
    return int(phases[0])


def test_a_task_error_comes_back_as_itself_with_the_worker_traceback_as_cause():
    parts = [Part(i, i + 1, np.array([i])) for i in range(6)]
    with pytest.raises(_Odd, match=r"phase [13] is odd") as caught:
        list(ordered_results(LocalExecutor(2), _refuses_odd, parts))
    assert "_refuses_odd" in str(caught.value.__cause__)  # the worker's frames, for --debug


def test_a_result_that_cannot_be_sent_back_is_an_error_not_a_hang():
    parts = [Part(i, i + 1, np.array([i])) for i in range(4)]
    with pytest.raises(TypeError, match="result cannot be sent back from the worker"):
        list(ordered_results(LocalExecutor(2), lambda phases: (lambda: None), parts))


def test_workers_are_forked_with_the_closure_and_results_keep_their_order():
    table = {i: pickle.dumps(i * i) for i in range(40)}  # closed over, never pickled as a whole

    def square(phases):
        time.sleep(0.01 if int(phases[0]) % 4 == 0 else 0)
        return pickle.loads(table[int(phases[0])]), os.getpid()

    parts = [Part(i, i + 1, np.array([i])) for i in range(40)]
    got = [r for r, _ in ordered_results(LocalExecutor(3), square, parts)]
    assert [value for value, _ in got] == [i * i for i in range(40)]
    assert os.getpid() not in {pid for _, pid in got} and len({pid for _, pid in got}) > 1  # in the workers


def test_a_worker_killed_while_idle_does_not_stop_the_run():
    """A worker that dies between items (killed from outside) loses no item: its items go to the
    others. Only a worker that dies under an item stops the run (TaskFailed)."""
    pids = []

    def record(phases):
        time.sleep(0.02)
        return os.getpid()

    from synth.execute.local import LocalSession

    with LocalSession(record, 2) as session:
        victim = session._pool[0].process
        os.kill(victim.pid, signal.SIGKILL)
        victim.join(10)
        for key in range(6):
            session.submit(key, np.array([key]))
        for _ in range(6):
            pids.append(session.next_result())
    assert sorted(k for k, _ in pids) == list(range(6)) and {pid for _, pid in pids} == {session._pool[0].process.pid}


class _BlocksInACopy:
    """Garbage whose finalizer blocks in any process but the one that made it, as a Dask client
    left over from an earlier run waits for an event loop that a forked copy does not have."""

    def __init__(self):
        self.me, self.cycle = os.getpid(), self

    def __del__(self):
        if os.getpid() != self.me:
            time.sleep(60)


def test_garbage_of_the_parent_is_not_finalized_in_the_workers():
    import gc

    _BlocksInACopy()  # unreachable at once (a cycle): only the cyclic collector frees it

    def task(phases):
        gc.collect()  # a collection in the worker, as any allocation may start one
        return int(phases[0])

    parts = [Part(i, i + 1, np.array([i])) for i in range(4)]
    start = time.monotonic()
    assert [r for r, _ in ordered_results(LocalExecutor(2), task, parts)] == [0, 1, 2, 3]
    assert time.monotonic() - start < 30  # a hang bound: a worker finalizing the copy sleeps 60 s
