"""Signals as exceptions, so that an interrupted run cleans up like a failed one.

SIGINT already raises KeyboardInterrupt; SIGTERM (what `kill`, batch schedulers and timeouts
send) is turned into Interrupted. Both derive from BaseException, so no `except Exception` on
the way swallows them, and synth.core.output's temporaries are removed as the stack unwinds.
Worker processes ignore SIGINT (the terminal sends it to the whole process group; the parent
alone decides) and die quietly on SIGTERM, which is how the parent's pool stops them.

Python runs a signal's handler in the main thread between two bytecodes: a loop in Python stops
at once, a long call into native code only when it returns. Native solvers that release the GIL
(CP-SAT, HiGHS through scipy) therefore run under `native`, in a helper thread while the main
thread waits where a signal reaches it; calls that hold the GIL are kept short instead (issue 22:
"every command stops within two seconds of SIGINT or SIGTERM").
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Callable, TypeVar

T = TypeVar("T")


class Interrupted(BaseException):
    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class CtrlC(KeyboardInterrupt):
    """KeyboardInterrupt as synth's SIGINT handler raises it. A subclass, because CPython marks an
    exact KeyboardInterrupt that leaves code run through PyRun_String (as extension modules run
    Python code) as unhandled, however it is caught later, and then ends the process by SIGINT
    instead of exit 130 (measured: 1 interrupt in 6 during `compare`)."""


received: int | None = None  # the signal that interrupted this run, if one did
_lost: int | None = None  # a signal whose exception Python swallowed (see _unraisable)
_holding = 0  # > 0 inside held(): a signal is remembered, and raised when the last one ends
_held: int | None = None


def as_exception(signum: int) -> BaseException:
    """The exception synth raises for a signal: CtrlC for SIGINT, Interrupted for the others."""
    return CtrlC() if signum == signal.SIGINT else Interrupted(signum)


def _raise(signum, frame) -> None:
    global received, _held
    received = signum
    if _holding:
        _held = _held or signum
        return
    raise as_exception(signum)


_keyboard_interrupt = _raise  # SIGINT: KeyboardInterrupt, as Python's own handler raises it


@contextmanager
def held():
    """A block that a signal does not cut short (the stop of a worker pool: half-stopped, it would
    leave processes behind): a signal that comes inside is raised as it ends. Only synth's own
    handlers (install_handlers) hold; elsewhere the block is plain."""
    global _holding, _held
    _holding += 1
    try:
        yield
    finally:
        _holding -= 1
        if not _holding and _held is not None:
            signum, _held = _held, None
            raise as_exception(signum)


def _unraisable(unraisable) -> None:
    """sys.unraisablehook: Python runs a signal's handler wherever the main thread is, a garbage
    collector callback or a __del__ included, and an exception from there is "ignored" (printed,
    not raised). Distributed's GC diagnostics run as such a callback: a Ctrl-C during a Dask run
    was lost about one time in two, and the run went on to write its outputs (measured). The
    interrupt is kept instead, for `check` to raise at the next safe point. What such a callback
    raises after it was cut short (Distributed's asserts that its "stop" call follows a whole
    "start" call) is the interrupt's doing, and not printed either: an interrupted run says one
    line."""
    global _lost
    if received is not None:
        if isinstance(unraisable.exc_value, (KeyboardInterrupt, Interrupted)):
            _lost = _lost or received
            return
        if unraisable.object in gc.callbacks:
            return
    sys.__unraisablehook__(unraisable)


def check() -> None:
    """Raise an interrupt that Python swallowed (_unraisable) here: loops that wait on others'
    work call it, and no output is committed after one."""
    global _lost
    if _lost is not None:
        signum, _lost = _lost, None
        raise as_exception(signum)


def install_handlers() -> None:
    """SIGTERM as Interrupted; SIGINT as KeyboardInterrupt as before (unless it is ignored), both
    remembered: an extension module that turns the exception into its own error while it loads
    (OR-Tools says `ImportError: initialization failed`) is still an interrupted run; one raised
    where Python cannot raise it is kept for `check`."""
    global received, _held, _lost
    received, _held, _lost = None, None, None
    signal.signal(signal.SIGTERM, _raise)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _keyboard_interrupt)
    sys.unraisablehook = _unraisable


def child_processes(pid: int, name: str | None = None) -> list[int]:
    """The processes whose parent is `pid` (and whose command is `name`), from /proc; none where
    there is no /proc. For helpers started by libraries that give no handle on them (PuLP's CBC)."""
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                stat = handle.read()
        except OSError:  # ended meanwhile
            continue
        command, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        if int(rest[1]) == pid and (name is None or command == name):
            found.append(int(entry))
    return found


def kill_processes(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:  # already gone
            pass


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def quiet_worker(parent: int | None = None) -> None:
    """First thing in a worker process: no KeyboardInterrupt tracebacks, default SIGTERM, and on
    Linux SIGTERM when the parent dies (killed with SIGKILL, by the OOM killer) instead of working
    on as an orphan. `parent` (the pid that forked it) closes the race of a parent that died
    before the request: the worker ends at once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: orphans finish their item and exit
        return
    if parent is not None and os.getppid() != parent:
        os._exit(128 + signal.SIGTERM)


# After a solver was asked to stop (CP-SAT's stop_search), how long its thread may take to return.
STOP_SECONDS = 0.5
NATIVE_THREAD = "synth-native"
WAKE_SECONDS = 0.2  # the main thread's wait on a native call wakes this often (a signal's handler runs then)
_interrupted_calls: list[threading.Thread] = []  # helper threads of native calls that an interrupt reached
_called = False  # whether a native call ran under `native` in this process


def native(call: Callable[[], T], stop: Callable[[], None] | None = None) -> T:
    """call() -- a native call that releases the GIL -- such that SIGINT and SIGTERM interrupt it
    at once: in the main thread under synth's handlers, it runs in a daemon helper thread while
    the main thread waits (a wait that a signal's handler ends). On an interrupt, `stop` asks the
    call to end (briefly awaited); a call that cannot be stopped is left to run out in its daemon
    thread. Either way `native_interrupted()` says so, and the process should then end with
    os._exit, not in the interpreter's finalization: that would tear the library down under a call
    still running, and even a call that has returned may still be leaving its thread when the
    finalization starts (pybind11's OR-Tools then aborts with "PyThreadState_Get: the function
    must be called with the GIL held", exit -6: CI, stop 30). Elsewhere (a worker process, whose
    SIGTERM is the default action; another thread) it is a plain call."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) is not _raise:
        return call()
    outcome: list = []
    done = threading.Event()

    def run() -> None:
        # The kernel hands a process's signal to any thread that does not block it: one taken by this
        # thread (or by the library's threads, which inherit its mask) would leave the main thread
        # waiting until the call ends (CP-SAT: a minute; seen once in 200 SIGTERMs). Blocked here,
        # every SIGINT and SIGTERM goes to the main thread.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread as it is
            outcome.append((False, exc))
        finally:
            done.set()

    thread = threading.Thread(target=run, name=NATIVE_THREAD, daemon=True)
    global _called
    _called = True
    try:
        thread.start()  # an interrupt while it starts: the call may run all the same (CI, stop 31)
        while not done.wait(WAKE_SECONDS):  # and should one still reach another thread: looked at this often
            pass
    except BaseException:  # recorded even if the thread had not begun: it may yet (os._exit then ends it)
        if stop is not None:
            stop()
            done.wait(STOP_SECONDS)
        _interrupted_calls.append(thread)
        raise
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def native_interrupted() -> bool:
    """Whether an interrupt reached a native call (stopped, or left running in its thread)."""
    return bool(_interrupted_calls)


def native_called() -> bool:
    """Whether a native call ran under `native` in this process: a library whose call returned
    may still be leaving its threads (CP-SAT's workers) when an interrupt comes just after, and
    the interpreter's finalization then aborts (exit -6, with the interrupt's line said: seen once
    in a contract test's 24 signals)."""
    return _called


def native_running() -> bool:
    """Whether a native call's thread is alive: after an interrupt, wherever it came, the
    interpreter's finalization must not wait on it (a solver's own threads can hold the exit for
    the rest of its time)."""
    return any(t.name == NATIVE_THREAD and t.is_alive() for t in threading.enumerate())


def stoppable(kernel):
    """A compiled kernel (numba, nogil=True) as a Python function whose call a signal stops at
    once (it runs under `native`). Kernels that other kernels call stay plain: numba calls them,
    not this wrapper, which keeps the kernel as `.kernel`."""
    import functools

    @functools.wraps(getattr(kernel, "py_func", kernel))
    def call(*args):
        return native(lambda: kernel(*args))

    call.kernel = kernel
    return call
