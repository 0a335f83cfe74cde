"""Start-up (issue 41, item 1): `synth --version`, `synth --help`, `synth COMMAND --help` and a parse
error import no command's work (no numpy, no SciPy, no solver: they answer in about the interpreter's
own start-up), a missing input file and an unknown network family are refused as cheaply, and what
the help shows without importing (synth.cli.main.COMMANDS, the listings and limits read by
synth.core.declared) is what the modules and registries hold. No wall-clock time is asserted here:
tests/bench/bench_startup.py measures it."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from importlib import import_module

import pytest

from helpers import REPO
from synth.core.errors import SynthError

cli_main = import_module("synth.cli.main")  # the module (synth.cli.main is also the name of its function)

# What a command imports only when its work needs it.
HEAVY = ("numpy", "scipy", "matplotlib", "networkx", "numba", "h5py", "dask", "ortools", "pulp", "simgrid", "pandas")
COMMANDS = [name for name, _, _ in cli_main.COMMANDS]


def imported(*argv: str, code: int) -> set[str]:
    """The top-level packages `python -X importtime -m synth ARGV` imports (in a fresh process)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "synth", *argv], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == code, done.stderr[-2000:]
    names = re.findall(r"^import time:\s*\d+ \|\s*\d+ \| ( *)(\S+)$", done.stderr, re.MULTILINE)
    assert names, "no -X importtime lines"
    return {name.split(".")[0] for _, name in names}


def heavy(modules: set[str]) -> list[str]:
    return sorted(modules & set(HEAVY))


@pytest.mark.parametrize("argv", [["--version"], ["--help"], [], ["nosuch"], ["--bogus"]]
                         + [[name, "--help"] for name in COMMANDS]
                         + [["model", model, "--help"] for model in ("diameter2", "uniform", "stencil", "demand")],
                         ids=lambda argv: " ".join(argv) or "no command")
def test_help_version_and_parse_errors_import_nothing_heavy(argv):
    code = 0 if argv and argv[-1] in ("--help", "--version") else 2
    assert heavy(imported(*argv, code=code)) == []


PARSE_ERRORS = [
    ["route", "xgft:2:4,4:1,4", "--bytes", "x"],  # an option's type
    ["model", "diameter2", "--radix", "2"],  # out of range
    ["tables", "r.json"],  # a required option missing
    ["simulate", "s.json", "--model", "NOPE"],  # not among the choices
    ["synthesize", "allgather", "--network", "torus:4,4", "--chunks", "x"],
    ["schedule", "allgather", "--bytes", "1.5"],
]


@pytest.mark.parametrize("argv", PARSE_ERRORS, ids=" ".join)
def test_parse_errors_import_nothing_heavy(argv):
    assert heavy(imported(*argv, code=2)) == []


# User errors refused before any of the command's work is imported: a missing input file, an unknown
# network family, an option that contradicts another.
CHEAP_USER_ERRORS = [
    ["topology", "nosuch:4"],
    ["route", "nope.toml", "--traffic", "a2a-lin", "--router", "dmodk"],
    ["bounds", "Nosuch:4,4", "--traffic", "a2a-lin"],
    ["report", "nope.toml", "--out", "r.md"],
    ["report", "nope.toml", "--out", "r.pdf"],
    ["tables", "nope.json", "--out", "nope-tables"],
    ["vls", "nope.json", "--out", "nope-lanes.json"],
    ["opensm-check", "nope-tables"],
    ["schedule", "allgather", "--network", "torus:4,4"],
    ["export", "nope.json"],
    ["verify", "nope.json"],
    ["simulate", "nope.json"],
    ["compare", "allgather", "--network", "torus:4,4", "--sim-model", "CM02"],
    ["compare", "allgather", "--network", "nosuch:4"],
    ["tune", "allreduce", "--network", "nosuch:4", "--out", "r.rules"],
    ["run", "nope.json"],
    ["check", "nope.json"],
]


@pytest.mark.parametrize("argv", CHEAP_USER_ERRORS, ids=" ".join)
def test_cheap_user_errors_import_nothing_heavy(argv):
    assert heavy(imported(*argv, code=2)) == []


def test_a_command_imports_its_work_only_when_it_runs():
    """The other way round: the lazy imports are taken when the command works (here: numpy for a
    routing, but no figures, SimGrid, Dask or networkx)."""
    found = imported("route", "xgft:2:4,4:1,4", "--traffic", "a2a-lin", "--router", "dmodk", "--quiet", code=0)
    assert "numpy" in found
    assert not found & {"matplotlib", "simgrid", "dask", "pandas"}, sorted(found & set(HEAVY))


# ==================================================================================================
# What the help shows without importing is what the modules hold
# ==================================================================================================

def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def test_the_command_table_is_each_modules_own_help():
    """synth.cli.main.COMMANDS (name, module, help) against what each module's add_parser declares."""
    for name, module, help_text in cli_main.COMMANDS:
        sub = argparse.ArgumentParser().add_subparsers()
        import_module(f"synth.cli.{module}").add_parser(sub)
        assert list(sub.choices) == [name], module
        assert [action.help for action in sub._choices_actions] == [help_text], name
    full = _subcommands(cli_main.build_parser())
    assert list(full.choices) == COMMANDS


def test_a_parser_built_for_one_command_helps_as_the_whole_one(monkeypatch):
    monkeypatch.setenv("COLUMNS", "110")
    full = cli_main.build_parser()
    assert cli_main.build_parser([]).format_help() == full.format_help()
    for name in COMMANDS:
        one = cli_main.build_parser([name])
        assert _subcommands(one).choices[name].format_help() == _subcommands(full).choices[name].format_help(), name
        assert one.format_help() == full.format_help()


def test_command_of():
    assert cli_main.command_of(["--debug", "route", "x"]) == "route"
    assert cli_main.command_of(["--version"]) is None
    assert cli_main.command_of(["nosuch", "route"]) is None  # argparse says nosuch is no command
    assert cli_main.command_of(["opensm-check", "d"]) == "opensm-check"


def test_version_is_the_distributions(capsys):
    with pytest.raises(SystemExit) as exited:
        cli_main.build_parser([]).parse_args(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"synth {cli_main.version()}\n"


def test_the_listings_are_the_registries():
    from synth.cli import listings, options
    from synth.cli.topology import family_list
    from synth.collectives.schedule import COLLECTIVES
    from synth.core.declared import calls, declared
    from synth.io import EXPORT_FORMATS
    from synth.routing.registry import DIRECT, ROUTERS, XGFT
    from synth.solve import SOLVERS
    from synth.synthesis import methods
    from synth.topology import FAMILIES
    from synth.traffic import patterns

    lines = ["network families (SPEC):"]
    for family in FAMILIES.values():
        lines += [f"  {family.syntax}", f"      {family.description}"]
    assert family_list() == "\n".join(lines)
    assert listings.router_names(XGFT) == ROUTERS.names(XGFT) and listings.router_names(DIRECT) == ROUTERS.names(DIRECT)
    assert listings.method_names() == methods.method_names()
    assert listings.solver_names() == list(SOLVERS)
    assert options.pattern_syntaxes() == patterns.pattern_syntaxes()
    assert [(e.name, e.summary) for e in declared("synth.io", "EXPORT_FORMAT", "ExportFormat", ("name", "summary"))] \
        == [(name, e.summary) for name, e in EXPORT_FORMATS.items()]
    assert [c.name for c in calls("synth.collectives.schedule", "COLLECTIVES", "Collective", ("name",))] \
        == list(COLLECTIVES)


def test_every_constant_the_cli_reads_is_the_modules():
    """Every `constant("module", "NAME")` in synth/cli is the imported module's value."""
    from synth.core.declared import constant

    found = set()
    for path in (REPO / "synth" / "cli").glob("*.py"):
        found |= set(re.findall(r"""constant\(["']([\w.]+)["'], ["'](\w+)["']\)""", path.read_text()))
    assert len(found) > 20
    for module, name in sorted(found):
        assert constant(module, name) == getattr(import_module(module), name), (module, name)


def test_declared_reads_literals_only(tmp_path):
    from synth.core import declared

    assert declared.constant("synth.solve.budget", "SYNTHESIS_TIME_HELP") \
        == import_module("synth.solve.budget").SYNTHESIS_TIME_HELP  # an f-string of module constants
    with pytest.raises(declared.NotStatic):
        declared.constant("synth.collectives.schedule", "COLLECTIVES")  # a comprehension: not a literal
    with pytest.raises(declared.NotStatic):
        declared.constant("synth.core.errors", "NO_SUCH_NAME")


@pytest.mark.parametrize("spec", ["nosuch:4", "NoSuch:4,4", " foo ", "x'y:1", ""])
def test_an_unknown_family_is_said_as_parse_topology_says_it(spec):
    from synth.cli.options import refuse_unknown_family
    from synth.topology import parse_topology

    with pytest.raises(SynthError) as light:
        refuse_unknown_family(spec)
    with pytest.raises(SynthError) as real:
        parse_topology(spec)
    assert str(light.value) == str(real.value)


def test_known_families_and_degraded_specs_pass_to_parse_topology():
    from synth.cli.options import refuse_unknown_family

    for spec in ("torus:4,4", "XGFT:2:4,4:1,4", "nosuch:4@fail=1-2"):
        refuse_unknown_family(spec)


@pytest.mark.parametrize("missing", ["nope.json", "."])
def test_an_unreadable_file_is_said_as_the_readers_say_it(tmp_path, missing):
    from synth.app.simulate import file_kind
    from synth.core.validate import require_readable
    from synth.io.routes_file import read_routes, read_routes_columnar
    from synth.io.schedule_file import read_schedule

    path = str(tmp_path / missing)
    for reader, where in ((read_routes_columnar, f"routes file '{path}'"), (read_routes, f"routes file '{path}'"),
                          (read_schedule, f"schedule file '{path}'"), (file_kind, f"'{path}'")):
        with pytest.raises(SynthError) as light:
            require_readable(path, where)
        with pytest.raises(SynthError) as real:
            reader(path)
        assert str(light.value) == str(real.value), reader.__name__
