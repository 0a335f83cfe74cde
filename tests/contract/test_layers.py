"""Layers only point down (issue 23, item 5): the import-linter contracts of pyproject.toml hold.
A new upward import between the packages they cover fails here, with the import chain."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO


def test_the_import_contracts_hold():
    command = shutil.which("lint-imports")
    if command is None:
        assert not os.environ.get("CI"), "CI installs the test extra, import-linter with it"
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    done = subprocess.run([command, "--config", str(REPO / "pyproject.toml")], cwd=REPO, capture_output=True, text=True,
                          timeout=240, env={"PYTHONPATH": str(REPO), "PATH": str(Path(sys.executable).parent)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "broken" not in done.stdout.lower().replace("0 broken", ""), done.stdout


# Where the XGFT's own class may be named: its family module and the routers that exist only for it.
XGFT_OWN = ("topology", "routing/oblivious.py", "routing/layered_xgft.py", "routing/monolithic.py",
            "routing/monolithic_consistent.py", "routing/consistent.py")


def test_no_module_asks_whether_a_network_is_an_xgft_by_its_class():
    """Family-specific choices are Topology capabilities (routing_kind, report_patterns, ...), not
    isinstance(..., Xgft) (issue 23, item 2): a scan of every module outside the XGFT's own."""
    import ast

    found = []
    for path in sorted((REPO / "synth").rglob("*.py")):
        relative = path.relative_to(REPO / "synth").as_posix()
        if relative.startswith(XGFT_OWN):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance"
                    and len(node.args) == 2 and isinstance(node.args[1], ast.Name) and node.args[1].id == "Xgft"):
                found.append(f"{relative}:{node.lineno}")
    assert not found, f"isinstance(..., Xgft) outside the XGFT's own modules: {found}"
