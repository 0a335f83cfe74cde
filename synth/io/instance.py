"""TOML instance files: a named topology with the workload and routing to run on it.

    name = "table3.1-xgft512"
    description = "..."
    source = "[Prisacari20], Table 3.1"

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
Every key is checked here, with its type and range: a misspelt key or a float where an integer
belongs is an error that names the file and the field, never a silent default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from synth.core.errors import SynthError
from synth.core.sizes import message_size
from synth.core.validate import check_keys, read_toml, require_int, require_str, require_table

MAX_MESSAGE_BYTES = 1 << 40  # 1 TiB: larger messages are not a routing question
MAX_INSTANCE_BYTES = 1 << 20  # an instance file is a few lines

_KEYS = {
    None: ("name", "description", "source", "topology", "traffic", "route"),
    "topology": ("spec",),
    "traffic": ("pattern", "bytes", "phases"),
    "route": ("router", "seed"),
}


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
    data = read_toml(path, "instance file", MAX_INSTANCE_BYTES)
    where = f"instance file '{path}'"
    check_keys(data, where, _KEYS[None], required=("topology",))
    sections = {}
    for section in ("topology", "traffic", "route"):
        table = require_table(data.get(section, {}), f"{where}: [{section}]")
        check_keys(table, f"{where}: [{section}]", _KEYS[section], required=("spec",) if section == "topology" else ())
        sections[section] = dict(table)
    strings = {key: require_str(data[key], f"{where}: {key}", allow_empty=True) for key in ("name", "description", "source") if key in data}
    spec = require_str(sections["topology"]["spec"], f"{where}: [topology] spec")
    traffic, route = sections["traffic"], sections["route"]
    if "pattern" in traffic:
        require_str(traffic["pattern"], f"{where}: [traffic] pattern")
    if "bytes" in traffic:
        traffic["bytes"] = message_size(traffic["bytes"], f"{where}: [traffic] bytes")  # 4096 or "4KiB"
    if "phases" in traffic:
        require_str(traffic["phases"], f"{where}: [traffic] phases")
    if "router" in route:
        require_str(route["router"], f"{where}: [route] router")
    if "seed" in route:
        require_int(route["seed"], f"{where}: [route] seed", 0)
    return Instance(
        name=strings.get("name") or Path(path).stem,
        spec=spec,
        description=strings.get("description", ""),
        source=strings.get("source", ""),
        traffic=traffic,
        route=route,
        path=str(path),
    )


def resolve(spec_or_path: str) -> Instance:
    """A SPEC argument: an instance file (ends in .toml) or a bare spec string."""
    if spec_or_path.endswith(".toml"):
        return load_instance(spec_or_path)
    return Instance(name=spec_or_path, spec=spec_or_path)
