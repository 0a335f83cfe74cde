"""Network families and the spec strings that name them.

Each family is one module of this package that declares `FAMILY = Family(...)`; the registry
synth.topology.family.FAMILIES finds them on first use (synth.core.registry), so adding a family is
adding its file.
"""

from __future__ import annotations

from synth.topology.degraded import parse_degraded
from synth.topology.family import FAMILIES, Family, Topology
from synth.topology.network import Network
from synth.topology.xgft import Xgft, parse_xgft


def parse_topology(spec: str) -> Topology:
    """Turn a spec string such as `xgft:3:8,4,2:1,8,2` or `dragonfly:4,8,4` into a Topology; a
    spec with `@fail=...` gives the degraded network (synth.topology.degraded)."""
    return parse_degraded(spec.strip(), _parse_intact)


def _parse_intact(spec: str) -> Topology:
    name, _, rest = spec.strip().partition(":")
    return FAMILIES.get(name.lower(), f"spec '{spec}'").parse(rest)


__all__ = ["FAMILIES", "Family", "Network", "Topology", "Xgft", "parse_topology", "parse_xgft"]
