"""Signals as exceptions, so that an interrupted run cleans up like a failed one.

SIGINT already raises KeyboardInterrupt; SIGTERM (what `kill`, batch schedulers and timeouts
send) is turned into Interrupted. Both derive from BaseException, so no `except Exception` on
the way swallows them, and synth.core.output's temporaries are removed as the stack unwinds.
Worker processes ignore SIGINT (the terminal sends it to the whole process group; the parent
alone decides) and die quietly on SIGTERM, which is how the parent's pool stops them.
"""

from __future__ import annotations

import os
import signal


class Interrupted(BaseException):
    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


received: int | None = None  # the signal that interrupted this run, if one did


def _raise(signum, frame) -> None:
    global received
    received = signum
    raise Interrupted(signum)


def _keyboard_interrupt(signum, frame) -> None:
    global received
    received = signum
    raise KeyboardInterrupt


def install_handlers() -> None:
    """SIGTERM as Interrupted; SIGINT as KeyboardInterrupt as before (unless it is ignored), both
    remembered: an extension module that turns the exception into its own error while it loads
    (OR-Tools says `ImportError: initialization failed`) is still an interrupted run."""
    global received
    received = None
    signal.signal(signal.SIGTERM, _raise)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _keyboard_interrupt)


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
