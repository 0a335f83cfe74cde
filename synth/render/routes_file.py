"""The routes file (`synth-routes/1`): written as a stream, phase by phase, and read back.

    {"format": "synth-routes/1",
     "topology": {"spec": ...},
     "traffic": {"pattern", "ranks", "phases", "message_bytes"},
     "router": ..., "seed": ...,
     "phases": [{"phase", "flows": [[src, dst, bytes]...], "paths": [[node ids]...],
                 "max_contention", "lower_bound", "gap", "status"}...],
     "summary": {...}}

Paths use the node ids of `synth topology --format json` for the same spec. The writer goes
through synth.core.output.atomic_open, so a failed run leaves no partial file.
"""

from __future__ import annotations

import json
from typing import IO

from synth.core.errors import SynthError

FORMAT = "synth-routes/1"


def _dump(value) -> str:
    return json.dumps(value, separators=(",", ":"))


class RoutesWriter:
    """Writes the header at construction, one phase per `add_phase`, the summary at `close`."""

    def __init__(self, handle: IO[str], header: dict):
        self._handle = handle
        self._first = True
        head = {"format": FORMAT, **header}
        handle.write("{\n")
        for key, value in head.items():
            handle.write(f"{_dump(key)}: {_dump(value)},\n")
        handle.write('"phases": [\n')

    def add_phase(self, record: dict) -> None:
        """`record` holds phase, flows, paths and the evaluation fields; paths go one per line."""
        fields = {k: v for k, v in record.items() if k not in ("flows", "paths")}
        body = ", ".join(f"{_dump(k)}: {_dump(v)}" for k, v in fields.items())
        self._handle.write("" if self._first else ",\n")
        self._first = False
        self._handle.write("{" + body + ',\n "flows": ' + _dump(record["flows"]) + ',\n "paths": [')
        self._handle.write(",\n  ".join(_dump(p) for p in record["paths"]))
        self._handle.write("]}")

    def close(self, summary: dict) -> None:
        self._handle.write(f'\n],\n"summary": {_dump(summary)}\n}}\n')


def read_routes(path: str) -> dict:
    """Load and shape-check a routes file; a wrong format or version is a user error."""
    try:
        with open(path) as handle:
            doc = json.load(handle)
    except OSError as exc:
        raise SynthError(f"cannot read routes file '{path}': {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SynthError(f"'{path}' is not a JSON routes file: {exc}") from None
    if not isinstance(doc, dict) or "format" not in doc:
        raise SynthError(f"'{path}' is not a synth routes file (no \"format\" field)")
    if doc["format"] != FORMAT:
        raise SynthError(f"'{path}' has format '{doc['format']}', expected '{FORMAT}'")
    topology = doc.get("topology")
    if not isinstance(topology, dict) or not isinstance(topology.get("spec"), str):
        raise SynthError(f"routes file '{path}' has no topology spec")
    phases = doc.get("phases")
    if not isinstance(phases, list):
        raise SynthError(f"routes file '{path}' has no phases list")
    for i, phase in enumerate(phases):
        if not isinstance(phase, dict) or not all(k in phase for k in ("phase", "flows", "paths", "max_contention")):
            raise SynthError(f"routes file '{path}': phase entry {i} lacks phase, flows, paths or max_contention")
    return doc
