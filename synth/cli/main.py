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

# The subcommands in the order `synth --help` lists them: (command, module synth.cli.<module>, its one-line
# help). Only the command given is built (its module's add_parser(sub)): the others are listed by name and
# help, so that `synth --help`, `synth COMMAND --help` and a parse error import no command's work
# (issue 41: start-up under 0.3 s). tests/unit/cli/test_startup.py checks each help against its module's.
COMMANDS = (
    ("topology", "topology", "summarize a network or write it as JSON"),
    ("route", "route", "route a workload and report contention against the lower bound"),
    ("bounds", "bounds", "lower bounds on contention for a workload, B_min and ideal time for all-to-all"),
    ("tables", "tables", "switch forwarding tables for a routes file (OpenSM, JSON, CSV)"),
    ("opensm-check", "opensm_check", "load tables into OpenSM on a simulated fabric, verify, compare OpenSM's engines"),
    ("model", "model", "the seeds' analytical models: diameter-two topologies (Prisacari20 ch.7), nearest-neighbour "
                       "exchanges on dragonflies (Prisacari20 ch.5)"),
    ("vls", "vls", "assign virtual lanes so that every lane's channel dependencies are acyclic (deadlock-free routes); "
                   "writes the routes file with a vls list per phase"),
    ("schedule", "schedule", "generate and verify a collective's step schedule (synth-schedule/1)"),
    ("synthesize", "synthesize", "synthesize a collective's step schedule by optimization, with its bounds"),
    ("export", "export", "write a schedule in a collective library's format (MSCCL's XML)"),
    ("verify", "verify", "replay a schedule file symbolically: does it deliver what its collective promises?"),
    ("simulate", "simulate", "replay a schedule or a routes file's phases on SimGrid, next to the cost model"),
    ("compare", "compare", "price every algorithm of a collective on a network over message sizes"),
    ("sweep", "sweep", "compare (and synthesize) over many networks and collectives, on the local pool or Dask, "
                       "resumable"),
    ("tune", "tune", "write Open MPI's coll_tuned dynamic rules file from compare's choice of algorithm per message size"),
    ("run", "run", "execute a schedule over MPI with real buffers, checked against the MPI library's collective and "
                   "timed next to it"),
    ("report", "report", "analytical cost report (HTML or Markdown): patterns x routings on any network"),
    ("check", "check", "re-verify a routes file from scratch (exit 1 on a difference)"),
)


def version() -> str:
    """The installed distribution's version (pyproject.toml)."""
    from importlib.metadata import PackageNotFoundError, version as installed

    try:
        return installed("synth")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


class _Version(argparse._VersionAction):
    """--version, the distribution's version looked up when asked (importlib.metadata costs 40 ms)."""

    def __call__(self, parser, namespace, values, option_string=None):
        self.version = f"synth {version()}"
        super().__call__(parser, namespace, values, option_string)


def command_of(argv: list[str]) -> str | None:
    """The subcommand `argv` names: its first word that is not an option (synth's own options take no
    value), None when there is none or it names no command (argparse then says so)."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if any(word == name for name, _, _ in COMMANDS) else None


def build_parser(commands=None) -> argparse.ArgumentParser:
    """synth's parser: with `commands` (names) only those subcommands have their options (the others
    are listed by name and help); by default every one (the CLI reference, docs/cli.md)."""
    parser = Parser(prog="synth", description="Routing and schedule synthesis for interconnection networks: routes, collective schedules "
                    "and switch tables, each next to the lower bound nothing beats.",
                    epilog="Exit codes: 0 ok, 1 a check found a difference, 2 bad input, 70 internal error (a bug), "
                           "130/143 interrupted.")
    parser.add_argument("--debug", action="store_true", help="print the traceback of an internal error")
    parser.add_argument("--version", action=_Version, version="synth")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name, module, help_text in COMMANDS:
        if commands is None or name in commands:
            import_module(f"synth.cli.{module}").add_parser(sub)
        else:
            sub.add_parser(name, help=help_text)
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
        parser = build_parser([command] if (command := command_of(argv)) is not None else [])
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
