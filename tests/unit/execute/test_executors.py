"""The executor interface without a cluster: --executor parsing, results in order with bounded
memory, and the progress a person watches."""

from __future__ import annotations

import io
import random
import re
import time

import numpy as np
import pytest

from helpers import TABLE_3_1, assert_user_error
from synth.measure.evaluate import PhaseEvaluation
from synth.execute import LocalExecutor, parse_executor
from synth.execute.base import Executor, Session
from synth.execute.ordered import WINDOW_PER_WORKER, Part, ordered_results, results_in_order
from synth.render.progress import Progress, duration

ROUTE = ["route", TABLE_3_1[16], "--traffic", "a2a-opt", "--router", "dmodk"]


@pytest.mark.parametrize("text, named", [
    ("ray", "unknown executor 'ray' in --executor 'ray' (known: local, dask)"),
    ("", "--executor '' is empty"),
    ("local:0", "--executor local:WORKERS must be between 1 and 4096, got 0"),
    ("local:two", "--executor local:WORKERS"),
    ("dask:", "has nothing after ':'"),
    ("dask:no/such/scheduler.json", "no such scheduler file"),
])
def test_bad_executors_are_one_line(run, text, named):
    assert_user_error(run(*ROUTE, "--executor", text), named)


def test_bounds_take_an_executor_for_the_lp_bound_only(run):
    assert_user_error(run("bounds", TABLE_3_1[16], "--traffic", "a2a-opt", "--executor", "local:2"),
                      "--executor runs the LP bounds: add --lp")


def test_a_malformed_scheduler_file_is_one_line(run, tmp_path):
    pytest.importorskip("distributed")
    for text in ("garbage", "{}", "[1, 2]", '{"address": 5}'):
        (tmp_path / "s.json").write_text(text)
        assert_user_error(run(*ROUTE, "--executor", f"dask:{tmp_path / 's.json'}"), "cannot use the scheduler file")


def test_local_executor_with_a_worker_count(run):
    code, out, err = run(*ROUTE, "--executor", "local:3")
    assert code == 0 and "executor: local processes, 3 workers" in err
    assert out == run(*ROUTE)[1]


def test_dask_without_the_extra_says_what_to_install(run, monkeypatch):
    pytest.importorskip("distributed")
    import synth.execute.dask_cluster as dask_cluster

    monkeypatch.setattr(dask_cluster, "distributed", None)
    assert_user_error(run(*ROUTE, "--executor", "dask"), all_of=("needs Dask", "pip install 'synth[cluster]'"))


def test_an_unreachable_scheduler_is_one_line_before_any_output(run, tmp_path):
    pytest.importorskip("distributed")
    import dask

    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code, out, err = run(*ROUTE, "--executor", "dask:tcp://127.0.0.1:9", "--checkpoint", tmp_path / "ck")
    assert_user_error((code, out, err), all_of=("dask:tcp://127.0.0.1:9", "cannot reach the Dask scheduler"))
    assert out == ""  # nothing printed before the cluster was reached
    assert list(tmp_path.iterdir()) == []  # and no checkpoint made


def test_the_parser_builds_the_executor_without_starting_it():
    assert isinstance(parse_executor(None), LocalExecutor) and parse_executor("local:5").capacity() == 5


# ----- results in order, bounded ------------------------------------------------------------------

class _Recording(Session):
    """A session that finishes its items in a random order and counts what it was given."""

    def __init__(self, task, workers):
        self.task, self.workers, self.pending, self.submitted = task, workers, [], 0
        self.random = random.Random(7)

    def submit(self, key, item):
        self.pending.append((key, item))
        self.submitted += 1

    def next_result(self):
        key, item = self.pending.pop(self.random.randrange(len(self.pending)))
        return key, self.task(item)


class _RecordingExecutor(Executor):
    def __init__(self, workers):
        self.workers, self.sessions = workers, []

    def capacity(self):
        return self.workers

    def session(self, task, items):
        self.sessions.append(_Recording(task, self.workers))
        return self.sessions[-1]


def test_results_come_in_order_with_at_most_a_window_in_flight_or_waiting():
    parts = [Part(i, i + 1, np.array([i])) for i in range(200)]
    executor = _RecordingExecutor(3)
    results, most = [], 0
    for result, resumed in ordered_results(executor, lambda phases: int(phases[0]) * 10, parts):
        results.append(result)
        most = max(most, executor.sessions[0].submitted - len(results))  # given, not yet taken by the caller
    assert results == [i * 10 for i in range(200)]
    assert most == WINDOW_PER_WORKER * 3


def test_the_local_pool_gives_results_in_order_whatever_order_they_finish_in():
    def slow_first(phases):
        time.sleep(0.05 if int(phases[0]) % 3 == 0 else 0.0)
        return int(phases[0])

    parts = [Part(i, i + 1, np.array([i])) for i in range(30)]
    assert [r for r, _ in ordered_results(LocalExecutor(2), slow_first, parts)] == list(range(30))


def test_a_few_large_pieces_come_back_in_their_order_each_said_as_it_arrives():
    """results_in_order (an orbit synthesis' pieces): everything submitted at once, results in item
    order whichever finishes first, on a random-order session and on the local pool."""
    executor = _RecordingExecutor(2)
    arrived = []
    assert results_in_order(executor, lambda x: x * x, list(range(9)), arrived.append) == [x * x for x in range(9)]
    assert sorted(arrived) == list(range(9)) and arrived != list(range(9))  # said as they came, not in order

    def slow_first(x):
        time.sleep(0.2 if x == 0 else 0.0)
        return -x

    assert results_in_order(LocalExecutor(2), slow_first, [0, 1, 2]) == [0, -1, -2]


# ----- progress -----------------------------------------------------------------------------------

def _evaluations(first, count, status="optimal"):
    return [PhaseEvaluation(p, 2, 2 if status == "optimal" else 1, status, 0, [2], [2]) for p in range(first, first + count)]


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_log_gets_a_plain_line_per_interval_with_the_summary_s_numbers():
    stream = io.StringIO()
    progress = Progress(10, every=0.0, stream=stream)
    progress.resume(_evaluations(0, 4))
    time.sleep(0.01)
    progress.update(_evaluations(4, 2))
    progress.update(_evaluations(6, 1, "feasible"))
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert re.fullmatch(r"  progress: 7/10 phases \(4 from the checkpoint\), 6 optimal, 1 feasible; [\d.e+]+ phases/s, "
                        r"about \d+ s left \[\d+ s\]", lines[-1]), lines[-1]
    assert progress.rate() == pytest.approx(3 / (time.monotonic() - progress.start), rel=0.5)  # resumed ones excluded


def test_a_terminal_gets_a_bar_and_per_phase_lines_above_it():
    stream = _Terminal()
    progress = Progress(8, stream=stream)
    progress.update(_evaluations(0, 1), {0: None})
    time.sleep(0.15)  # the bar redraws at most every 0.1 s
    progress.update(_evaluations(1, 3))
    progress.close()
    text = stream.getvalue()
    assert "\r" in text and "4/8 phases, 4 optimal;" in text and "phases/s" in text and "left" in text
    assert "  phase 0: contention 2, bound 2, optimal" in text
    assert "progress:" not in text  # the bar says it


def test_quiet_is_silent():
    stream = _Terminal()
    progress = Progress(8, enabled=False, stream=stream)
    progress.update(_evaluations(0, 8), {p: None for p in range(8)})
    progress.close()
    assert stream.getvalue() == "" and progress.status_text() == "8 optimal"


@pytest.mark.parametrize("seconds, text", [(0, "0 s"), (59.4, "59 s"), (61, "1 min 01 s"), (3600 * 39 + 600, "39 h 10 min")])
def test_durations_read_at_a_glance(seconds, text):
    assert duration(seconds) == text
