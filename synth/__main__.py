"""`python -m synth` and the `synth` command: synth.cli.main under synth's signal handlers from
the first line of synth's own code on.

A command imports numpy, scipy, OR-Tools and much of the package (about a second) once it runs
(`--help`, `--version` and a parse error import none of them: synth.cli.main). Before this entry, Ctrl-C in that second printed a 30-line traceback and SIGTERM killed the
process at the default action (issue 22). Here the handlers come first, so an interrupt during the
imports ends like one during the work: one line, exit 130 or 143, nothing written. (What comes
before -- the interpreter's start and the site's .pth files -- is Python's and the environment's.)
"""

import os
import signal
import sys

from synth.core import interrupt
from synth.core.interrupt import Interrupted, install_handlers
from synth.core.memory import prefer_plain_pages


def _interrupted(signum: int) -> int:
    print(f"synth: interrupted ({signal.Signals(signum).name}); no output written", file=sys.stderr, flush=True)
    return 128 + signum


def _late(signum, frame) -> None:
    """A signal after the command has ended: nothing left to stop, and no traceback."""


def _ended() -> None:
    # a signal between the two replacements still reaches synth's handler: the command has ended, its outcome stands
    try:
        signal.signal(signal.SIGTERM, _late)
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, _late)
    except (KeyboardInterrupt, Interrupted):
        _ended()


def run() -> int:
    code = None
    install_handlers()
    try:
        prefer_plain_pages()  # inside: a signal the moment the handlers are in place ends like any other
        from synth.cli import main

        if interrupt.received is not None:  # a library's bare `except:` swallowed it while importing
            raise interrupt.as_exception(interrupt.received)
        code = main()
        _ended()
    except (KeyboardInterrupt, Interrupted) as exc:
        _ended()
        if code is None:  # else it came as the command returned: its outcome stands
            code = _interrupted(exc.signum if isinstance(exc, Interrupted) else signal.SIGINT)
    except Exception:  # an extension that turned the signal into its own error while it loaded
        _ended()
        if interrupt.received is None:
            raise
        code = _interrupted(interrupt.received)
    # (a signal caught by the command's own handler, synth.cli.main, counts: `received` is set)
    if interrupt.native_interrupted() or (interrupt.received is not None and interrupt.native_called()):
        # A native call that an interrupt reached may still be running (HiGHS has no stop) or be
        # leaving its thread (CP-SAT, stopped), and one that returned just before the interrupt
        # may still be ending its library's threads: the interpreter's finalization would tear the
        # library down under them. End here, the stack having unwound (outputs removed, workers
        # stopped).
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(run())
