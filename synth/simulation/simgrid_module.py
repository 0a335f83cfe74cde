"""Finding SimGrid's Python module.

Two ways to have it (docs/simulation.md):
- Debian's `python3-simgrid` (3.32 on Debian 12) installs one extension module built for Debian's
  Python 3.11, /usr/lib/python3/dist-packages/simgrid.cpython-311-<arch>.so. It loads in any
  CPython 3.11 of the same architecture (the project's own interpreter, a virtualenv, pyenv's): it
  is loaded from its file, without putting the rest of Debian's dist-packages (another numpy, another
  scipy) on the path.
- PyPI's `simgrid` 4.1 (scripts/install-simgrid.sh builds it; the README's `make test` runs that):
  a source distribution that builds with cmake and Boost into an ordinary import. Its build puts
  libsimgrid.so.4.1 beside the module without a run path to it, so `load` opens that library first.
  It is preferred to Debian's when both are there: its kernel replays a step of thousands of
  transfers in linear time where 3.32's is quadratic (docs/simulation.md). Except for the IB model,
  which is wrong in 4.1 (IB_BROKEN).

SYNTH_SIMGRID names another directory holding the module (or the module file itself). Only the
worker process loads it (synth.simulation.worker): an Engine is one per process and a second one in
the same process inherits the first one's clock and configuration (measured with 3.32).
"""

from __future__ import annotations

import ctypes
import importlib.machinery
import importlib.metadata
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


# SimGrid 4.1's IB model is wrong (measured against its documented formula, which 3.32 meets to 1e-9): a lone 1 MB
# transfer takes 299 us instead of 96.7 us, and each later one longer (1,124 us, then 1,997 us), as if finished
# communications kept their penalties; asynchronously, it crashes. The IB model therefore runs on Debian's 3.32.
IB_BROKEN = ("SimGrid 4's IB model gives wrong times (a lone transfer takes 3x its documented time, and later ones "
             "longer): --model IB runs on Debian's SimGrid 3.32, apt-get install python3-simgrid")


def locate(model: str | None = None) -> Path | None:
    """Where simgrid's module is: None when it is an ordinary import (PyPI's package), else its file.
    Raises SynthError (MISSING) when there is none for this interpreter. With model "IB", Debian's
    module rather than an importable 4.x (IB_BROKEN)."""
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
    debian = _module_file(DEBIAN_DIR)
    if _importable():
        if model != "IB" or not _version_of_importable().startswith("4."):
            return None
        if debian is None:
            raise SynthError(IB_BROKEN)
        return debian
    if debian is None:
        raise SynthError(MISSING)
    return debian


def _version_of_importable() -> str:
    """The importable simgrid's version from its distribution's metadata (without loading it)."""
    try:
        return importlib.metadata.version("simgrid")
    except importlib.metadata.PackageNotFoundError:
        return ""


def available() -> bool:
    """Whether a simgrid module for this interpreter can be found (without loading it)."""
    try:
        locate()
    except SynthError:
        return False
    return True


LOAD_FAILED = 3  # the worker's exit code when the module found cannot be loaded


def load(model: str | None = None):
    """The simgrid module for `model`, loaded (in the worker process only)."""
    found = locate(model)
    if found is None:
        origin = importlib.util.find_spec("simgrid").origin
        # PyPI's build links the module to libsimgrid.so.<version> in the same directory without a run path:
        # loaded first (its soname then resolves), the module needs no LD_LIBRARY_PATH
        for library in sorted(Path(origin).parent.glob("libsimgrid.so.*")) if origin else ():
            ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL)
        import simgrid

        return simgrid
    spec = importlib.util.spec_from_file_location("simgrid", found)
    module = importlib.util.module_from_spec(spec)
    sys.modules["simgrid"] = module
    spec.loader.exec_module(module)
    return module


class Api:
    """What the worker calls that differs between SimGrid 3.32 (Debian's) and 4.x (PyPI's): 4.x adds
    zones, hosts and links to their parent (`add_*`, 3.32's `create_*` deprecated), routes hosts
    rather than netpoints, and waits on an ActivitySet rather than Comm.wait_all. Actors are started
    with Actor.create in both: 4.1's binding of its successor, Engine.add_actor, takes no host or
    function (its signature is `add_actor(self: str)`)."""

    def __init__(self, sg, engine):
        self.sg, self.engine = sg, engine
        self.four = hasattr(sg.NetZone, "add_netzone_full")

    def full_zone(self, name: str):
        if self.four:
            return self.engine.netzone_root.add_netzone_full(name)
        return self.sg.NetZone.create_full_zone(name)

    def add_host(self, zone, name: str, speed: float):
        return zone.add_host(name, speed) if self.four else zone.create_host(name, speed)

    def add_link(self, zone, name: str, bandwidth: float):
        return zone.add_link(name, bandwidth) if self.four else zone.create_link(name, bandwidth)

    def add_route(self, zone, a, b, links: list) -> None:
        """A one-way route from host a to host b over `links` (LinkInRoute)."""
        if self.four:
            zone.add_route(a, b, links, False)
        else:
            zone.add_route(a.netpoint, b.netpoint, None, None, links, False)

    def wait_all(self, comms: list) -> None:
        if self.four:
            self.sg.ActivitySet(comms).wait_all()
        else:
            self.sg.Comm.wait_all(comms)
