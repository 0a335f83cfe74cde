"""Finding SimGrid's Python module.

Two ways to have it (docs/simulation.md):
- Debian's `python3-simgrid` (3.32 on Debian 12) installs one extension module built for Debian's
  Python 3.11, /usr/lib/python3/dist-packages/simgrid.cpython-311-<arch>.so. It loads in any
  CPython 3.11 of the same architecture (the project's own interpreter, a virtualenv, pyenv's): it
  is loaded from its file, without putting the rest of Debian's dist-packages (another numpy, another
  scipy) on the path.
- PyPI's `simgrid` (pip install simgrid): a source distribution that builds with cmake and Boost;
  it is then an ordinary import.

SYNTH_SIMGRID names another directory holding the module (or the module file itself). Only the
worker process loads it (synth.simulation.worker): an Engine is one per process and a second one in
the same process inherits the first one's clock and configuration (measured with 3.32).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

from synth.core.errors import SynthError

DEBIAN_DIR = Path("/usr/lib/python3/dist-packages")
ENVIRONMENT = "SYNTH_SIMGRID"
MISSING = ("SimGrid's Python module is not installed: apt-get install python3-simgrid (Debian, Ubuntu), or "
           "pip install simgrid (builds from source with cmake and Boost); SYNTH_SIMGRID=DIR names another place")


def _module_file(directory: Path) -> Path | None:
    """simgrid's extension module in `directory` built for this interpreter (its ABI suffix), if any."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = directory / f"simgrid{suffix}"
        if candidate.is_file():
            return candidate
    return None


def _importable() -> bool:
    return importlib.util.find_spec("simgrid") is not None


def locate() -> Path | None:
    """Where simgrid's module is: None when it is an ordinary import (PyPI's package), else its file.
    Raises SynthError (MISSING) when there is none for this interpreter."""
    named = os.environ.get(ENVIRONMENT)
    if named:
        path = Path(named)
        found = path if path.is_file() and path.name.startswith("simgrid.") and \
            any(path.name.endswith(suffix) for suffix in importlib.machinery.EXTENSION_SUFFIXES) else \
            None if path.is_file() else _module_file(path)
        if found is None:
            raise SynthError(f"{ENVIRONMENT}={named} holds no simgrid module for Python "
                             f"{sys.version_info.major}.{sys.version_info.minor}")
        return found
    if _importable():
        return None
    found = _module_file(DEBIAN_DIR)
    if found is None:
        raise SynthError(MISSING)
    return found


def available() -> bool:
    """Whether a simgrid module for this interpreter can be found (without loading it)."""
    try:
        locate()
    except SynthError:
        return False
    return True


LOAD_FAILED = 3  # the worker's exit code when the module found cannot be loaded


def load():
    """The simgrid module, loaded (in the worker process only)."""
    found = locate()
    if found is None:
        import simgrid

        return simgrid
    spec = importlib.util.spec_from_file_location("simgrid", found)
    module = importlib.util.module_from_spec(spec)
    sys.modules["simgrid"] = module
    spec.loader.exec_module(module)
    return module
