"""MkDocs hook: pages made at build time from synth's own registries, so that they cannot drift:
the command-line reference (docs/cli.md) is the parser's own help (synth.cli.build_parser), and the
routers page (docs/routers.md) is the router registry (synth.routing.registry), and the synthesis
methods page (docs/methods.md) the method registry (synth.synthesis.methods).

docs/cli.md also holds the help as committed text between its two marks, so that the page reads
whole without a build (on GitHub, in a clone): `python docs/hooks/cli_reference.py` writes it again,
and tests/unit/cli/test_cli_reference.py fails when the committed text is not what the parser prints.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

MARK = "<!-- the commands' help, made at build time -->"
END_MARK = "<!-- end of the commands' help -->"
CLI_PAGE = Path(__file__).resolve().parent.parent / "cli.md"


def _help_of_every_command() -> str:
    os.environ["COLUMNS"] = "110"  # argparse wraps to the terminal's width: a fixed one
    from synth.cli import build_parser

    parser = build_parser()
    parts = ["## synth", "", "```text", parser.format_help().rstrip(), "```", ""]
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in commands.choices.items():
        parts += [f"## synth {name}", "", "```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(parts)


ROUTERS_MARK = "<!-- the router registry, made at build time -->"


def _router_table() -> str:
    from synth.routing.registry import ROUTERS, XGFT

    rows = ["| router | networks | key | path policy (`synth check`) | options | synthesizes | what it does |",
            "|---|---|---|---|---|---|---|"]
    for spec in ROUTERS.specs():
        networks = "xgft" if spec.networks == XGFT else "direct" + (f" (needs {spec.needs})" if spec.needs else "")
        policy = spec.policy if isinstance(spec.policy, str) else spec.policy.name
        takes = ", ".join(f"`{option}`" for option in spec.takes) or "-"
        rows.append(f"| `{spec.name}` | {networks} | `{spec.id}` | {policy} | {takes} | "
                    f"{'yes' if spec.synthesizes else 'no'} | {spec.summary} |")
    return "\n".join(rows)


METHODS_MARK = "<!-- the synthesis method registry, made at build time -->"


def _method_table() -> str:
    from synth.synthesis.methods import methods

    rows = ["| method | kind | makes | pool | what it does |", "|---|---|---|---|---|"]
    for m in methods():
        rows.append(f"| `{m.name}` | {m.kind} | {', '.join(m.collectives)} | {m.pool or '-'} | {m.summary}"
                    + (f" ({m.cites})" if m.cites else "") + " |")
    return "\n".join(rows)


def cli_page(markdown: str) -> str:
    """docs/cli.md's text with the commands' help between its marks made anew."""
    head, _, rest = markdown.partition(MARK)
    _, _, tail = rest.partition(END_MARK)
    return f"{head}{MARK}\n\n{_help_of_every_command()}\n{END_MARK}{tail}"


def on_page_markdown(markdown: str, page, config, files) -> str:
    if page.file.src_uri == "cli.md":
        return cli_page(markdown)
    if page.file.src_uri == "routers.md":
        return markdown.replace(ROUTERS_MARK, _router_table())
    if page.file.src_uri == "methods.md":
        return markdown.replace(METHODS_MARK, _method_table())
    return markdown


if __name__ == "__main__":  # write docs/cli.md's committed help again
    sys.path.insert(0, str(CLI_PAGE.parent.parent))
    CLI_PAGE.write_text(cli_page(CLI_PAGE.read_text()))
