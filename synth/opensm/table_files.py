"""The files `synth tables --format opensm` writes that `synth opensm-check` needs, checked before
anything heavy is imported, so that a wrong directory answers at once (issue 41)."""

from __future__ import annotations

from pathlib import Path

from synth.core.errors import SynthError

REQUIRED = ("fabric.net", "guid2lid", "lfts.dump", "dlid.csv", "routes.json")


def require_table_files(path: str | Path) -> None:
    """One line naming the files of REQUIRED that `path` lacks."""
    path = Path(path)
    missing = [name for name in REQUIRED if not (path / name).is_file()]
    if missing:
        raise SynthError(f"{path}: missing {', '.join(missing)} (write the directory with `synth tables ROUTES --out {path}`)")
