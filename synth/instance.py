"""TOML instance files: a named topology with the workload and routing to run on it.

    name = "table3.1-xgft512"
    description = "..."
    source = "003_fd372c8942ac4293.txt, Table 3.1"

    [topology]
    spec = "xgft:4:8,8,4,2:1,8,8,2"

    [traffic]          # optional: defaults for --traffic, --bytes, --phase
    pattern = "a2a-opt"
    bytes = 4096
    phases = "all"

    [route]            # optional: defaults for --router, --seed
    router = "dmodk"
    seed = 0

Command-line options override the file. Wherever a SPEC is accepted, a path to such a file is too.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from synth.core.errors import SynthError


@dataclass
class Instance:
    name: str
    spec: str
    description: str = ""
    source: str = ""
    traffic: dict = field(default_factory=dict)
    route: dict = field(default_factory=dict)
    path: str | None = None


def load_instance(path: str) -> Instance:
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise SynthError(f"cannot read instance file '{path}': {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SynthError(f"instance file '{path}' is not valid TOML: {exc}") from None
    topology = data.get("topology")
    if not isinstance(topology, dict) or not isinstance(topology.get("spec"), str):
        raise SynthError(f"instance file '{path}' needs a [topology] table with a spec string")
    for section in ("traffic", "route"):
        if not isinstance(data.get(section, {}), dict):
            raise SynthError(f"instance file '{path}': [{section}] must be a table")
    return Instance(
        name=str(data.get("name", Path(path).stem)),
        spec=topology["spec"],
        description=str(data.get("description", "")),
        source=str(data.get("source", "")),
        traffic=dict(data.get("traffic", {})),
        route=dict(data.get("route", {})),
        path=str(path),
    )


def resolve(spec_or_path: str) -> Instance:
    """A SPEC argument: an instance file (ends in .toml) or a bare spec string."""
    if spec_or_path.endswith(".toml"):
        return load_instance(spec_or_path)
    return Instance(name=spec_or_path, spec=spec_or_path)
