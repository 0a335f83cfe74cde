"""The command line: a parser built from one module per subcommand, and `main`, which maps
exceptions to exit codes.

Each module of this package is one subcommand (or a family of them: `model`): `add_parser(sub)`
declares its options, its `cmd_*` parses what argparse cannot, calls the use case (synth.app, or
the domain package itself) and prints. Exit codes: 0 ok, 1 a check found a difference, 2 bad input
(one line), 70 internal error (one line; the traceback with --debug), 128 + signal number when
interrupted (130, 143).
"""

from __future__ import annotations

import argparse
import signal
import sys
import traceback
from importlib import import_module

from synth.core import interrupt
from synth.core.errors import SynthError
from synth.core.interrupt import Interrupted, install_handlers
from synth.cli.options import Parser
from synth.execute import TaskFailed

# The subcommands in the order `synth --help` lists them: synth.cli.<module>.add_parser(sub).
COMMANDS = ("topology", "route", "bounds", "tables", "opensm_check", "model", "vls", "schedule", "synthesize", "export", "verify", "simulate", "compare",
            "report", "check")


def version() -> str:
    """The installed distribution's version (pyproject.toml)."""
    from importlib.metadata import PackageNotFoundError, version as installed

    try:
        return installed("synth")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="synth", description="Routing and schedule synthesis for interconnection networks: routes, collective schedules "
                    "and switch tables, each next to the lower bound nothing beats.",
                    epilog="Exit codes: 0 ok, 1 a check found a difference, 2 bad input, 70 internal error (a bug), "
                           "130/143 interrupted.")
    parser.add_argument("--debug", action="store_true", help="print the traceback of an internal error")
    parser.add_argument("--version", action="version", version=f"synth {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in COMMANDS:
        import_module(f"synth.cli.{name}").add_parser(sub)
    return parser


def _say(text: str) -> None:
    """One line on stderr, whatever the message holds."""
    print("synth: " + " ".join(str(text).split()), file=sys.stderr, flush=True)


def _notes(exc: BaseException) -> str:
    """What the run adds to a failure it cannot undo (a checkpoint that resumes it)."""
    return "".join(f"; {note}" for note in getattr(exc, "__notes__", ()))


def main(argv: list[str] | None = None) -> int:
    """Exit codes: 0 ok, 1 a check found a difference, 2 bad input (one line), 70 internal error
    (one line; the traceback with --debug), 128 + signal number when interrupted (130, 143)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv  # known before parsing, so that errors in parsing honour it too
    previous, previous_int = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    previous_unraisable = sys.unraisablehook
    install_handlers()
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
            raise SynthError(f"synth needs a command: {', '.join(commands)} (synth COMMAND --help for one, synth --help "
                             "for all)")
        args.argv = [a for a in argv if a != "--debug"]
        return args.func(args)
    except SynthError as exc:
        _say(f"error: {exc}{_notes(exc)}")
        return 2
    except KeyboardInterrupt as exc:
        _say(f"interrupted (SIGINT); no output written{_notes(exc)}")
        return 130
    except Interrupted as exc:
        _say(f"interrupted ({exc}); no output written{_notes(exc)}")
        return exc.exit_code
    except TaskFailed as exc:
        _say(f"error: {exc}; no output written{_notes(exc)}")
        return 70
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away (synth ... | head): not an error
        return 0
    except Exception as exc:  # noqa: BLE001 - the last line of defence: a bug, said as one
        if interrupt.received is not None:  # a signal turned into another error on its way up
            _say(f"interrupted ({signal.Signals(interrupt.received).name}); no output written")
            return 128 + interrupt.received
        if debug:
            traceback.print_exc()
        _say(f"internal error (a bug in synth; please report it with the command): {type(exc).__name__}: {exc}"
             + ("" if debug else " (rerun with --debug for the traceback)"))
        return 70
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        sys.unraisablehook = previous_unraisable
