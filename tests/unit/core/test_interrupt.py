"""A signal whose handler runs where Python cannot raise (a garbage-collector callback, as
Distributed's GC diagnostics install): the interrupt is kept and raised at the next safe point,
and no output is committed after it. In a child process: the handlers are process-wide."""

from __future__ import annotations

import subprocess
import sys

import pytest

SWALLOWED = r'''
import gc, os, signal, sys
from pathlib import Path
from synth.core import interrupt
from synth.core.output import OutputSet

interrupt.install_handlers()
signum = getattr(signal, sys.argv[2])
fired = []

def callback(phase, info):  # the handler runs here, and Python ignores what it raises
    if phase == "start" and not fired:
        fired.append(1)
        os.kill(os.getpid(), signum)
    assert phase == "start"  # cut short, as Distributed's GC diagnostics are: its "stop" call fails

gc.callbacks.append(callback)
gc.collect()
gc.callbacks.remove(callback)
assert fired and interrupt.received == signum, interrupt.received
print("swallowed", flush=True)  # the run went on: Python raised nothing
try:
    with OutputSet() as out:
        out.reserve(Path(sys.argv[1]) / "out.txt").write("not to be written")
except BaseException as exc:
    print("raised", type(exc).__name__, flush=True)
interrupt.check()  # raised once: nothing left
print("then nothing", flush=True)
'''


@pytest.mark.parametrize("name, raised", [("SIGINT", "CtrlC"), ("SIGTERM", "Interrupted")])
def test_an_interrupt_python_swallowed_is_raised_before_any_output_is_committed(tmp_path, name, raised):
    done = subprocess.run([sys.executable, "-c", SWALLOWED, str(tmp_path), name], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["swallowed", f"raised {raised}", "then nothing"]
    assert done.stderr == ""  # not "Exception ignored in: <function callback ...>"
    assert list(tmp_path.iterdir()) == []


def test_other_unraisable_exceptions_are_still_reported():
    script = ("from synth.core import interrupt\ninterrupt.install_handlers()\n"
              "class C:\n    def __del__(self):\n        raise ValueError('from __del__')\nC()\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "ValueError: from __del__" in done.stderr


STARTING = r'''
import os, signal, sys, threading, time
sys.argv = ["synth"]
from synth.core import interrupt

interrupt.install_handlers()
start = threading.Thread.start

def start_then_signal(self):  # the signal lands as the call's thread starts, before the wait
    start(self)
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread.start = start_then_signal
try:
    interrupt.native(lambda: time.sleep(30))
except interrupt.Interrupted:
    print("interrupted", interrupt.native_interrupted(), interrupt.native_running(), flush=True)
'''


def test_an_interrupt_as_the_native_thread_starts_still_marks_the_call_interrupted():
    """A SIGTERM between the thread's start and the main thread's wait (CI, stop 31: the process
    then waited for a 30 s solve in the interpreter's finalization): the call counts as
    interrupted, so synth ends with os._exit, not by waiting on it."""
    done = subprocess.run([sys.executable, "-c", STARTING], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["interrupted", "True", "True"], done.stderr
