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
