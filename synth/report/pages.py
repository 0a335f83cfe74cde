"""What a report's page may be named (`synth report --out`): checked before anything is imported or
computed, so that a wrong name answers at once (issue 41)."""

from __future__ import annotations

from pathlib import Path

from synth.core.errors import SynthError

PAGE_SUFFIXES = (".html", ".htm", ".md")


def check_pages(outs: list[Path]) -> None:
    for out in outs:
        if out.suffix.lower() not in PAGE_SUFFIXES:
            raise SynthError(f"--out must name a .html or .md file, got '{out}'")
