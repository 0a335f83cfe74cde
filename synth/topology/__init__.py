"""Network families and the spec strings that name them."""

from __future__ import annotations

from synth.core.errors import SynthError
from synth.topology.network import Network
from synth.topology.xgft import Xgft, parse_xgft

FAMILIES = {"xgft": parse_xgft}


def parse_topology(spec: str) -> Xgft:
    """Turn a spec string such as `xgft:3:8,4,2:1,8,2` into a family object."""
    family, _, rest = spec.strip().partition(":")
    parser = FAMILIES.get(family.lower())
    if parser is None:
        known = ", ".join(sorted(FAMILIES))
        raise SynthError(f"unknown network family '{family}' in spec '{spec}' (known: {known})")
    return parser(rest)


__all__ = ["FAMILIES", "Network", "Xgft", "parse_topology"]
