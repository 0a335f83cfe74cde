"""docs/cli.md holds every command's --help as committed text (issue 41: it was an empty
placeholder until `make docs` ran): the text is what the parser prints today."""

from __future__ import annotations

import importlib.util

from helpers import REPO


def test_the_committed_cli_reference_is_the_parsers_help(monkeypatch):
    spec = importlib.util.spec_from_file_location("cli_reference", REPO / "docs" / "hooks" / "cli_reference.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    monkeypatch.setenv("COLUMNS", "110")
    page = (REPO / "docs" / "cli.md").read_text()
    assert hook.END_MARK in page and "## synth route" in page and "## synth synthesize" in page
    assert hook.cli_page(page) == page, "docs/cli.md's help is stale: run python docs/hooks/cli_reference.py"
