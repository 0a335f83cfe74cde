"""MkDocs hook: the command-line reference (docs/cli.md) is the parser's own help, made at build
time from synth.cli.build_parser, so it cannot drift from what `synth COMMAND --help` prints."""

from __future__ import annotations

import argparse
import os

MARK = "<!-- the commands' help, made at build time -->"


def _help_of_every_command() -> str:
    os.environ.setdefault("COLUMNS", "110")  # argparse wraps to the terminal's width: a fixed one
    from synth.cli import build_parser

    parser = build_parser()
    parts = ["## synth", "", "```text", parser.format_help().rstrip(), "```", ""]
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in commands.choices.items():
        parts += [f"## synth {name}", "", "```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(parts)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if page.file.src_uri == "cli.md":
        return markdown.replace(MARK, _help_of_every_command())
    return markdown
