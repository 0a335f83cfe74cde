"""Network families and the spec strings that name them.

Each family is one module of this package that registers itself in
synth.topology.family.FAMILIES; importing the package imports every module in it (in name order),
so adding a family is adding its file, and the registry is complete wherever a spec is parsed.
"""

from __future__ import annotations

import importlib
import pkgutil

from synth.topology.family import FAMILIES, Family, Topology
from synth.topology.network import Network
from synth.topology.xgft import Xgft, parse_xgft

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")


from synth.topology.degraded import parse_degraded  # noqa: E402


def parse_topology(spec: str) -> Topology:
    """Turn a spec string such as `xgft:3:8,4,2:1,8,2` or `dragonfly:4,8,4` into a Topology; a
    spec with `@fail=...` gives the degraded network (synth.topology.degraded)."""
    return parse_degraded(spec.strip(), _parse_intact)


def _parse_intact(spec: str) -> Topology:
    name, _, rest = spec.strip().partition(":")
    return FAMILIES.get(name.lower(), f"spec '{spec}'").parse(rest)


__all__ = ["FAMILIES", "Family", "Network", "Topology", "Xgft", "parse_topology", "parse_xgft"]
