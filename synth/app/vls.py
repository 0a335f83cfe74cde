"""`synth vls`'s use case: virtual lanes for a routes file that re-verifies, so that no lane's channel
dependencies have a cycle (synth.routing.lane_budget), and the routes file again with a lane per path.
The command line and the Python API (synth.api.virtual_lanes) both call it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.checking.routes import check_routes
from synth.core.errors import SynthError
from synth.io.routes_file import FORMAT, RoutesWriter, read_routes, routes_topology
from synth.routing.lane_budget import lanes_for, lanes_line


@dataclass
class Lanes:
    """The lanes of a routes file's paths, in file order (phase by phase, path by path)."""

    doc: dict  # the routes file read (its JSON form)
    lanes: np.ndarray  # a lane per path
    how: str  # which assignment gave them (and whether the count is proven least)

    @property
    def count(self) -> int:
        return int(self.lanes.max(initial=-1)) + 1

    def per_phase(self) -> dict[int, np.ndarray]:
        """Phase number -> the lanes of its paths."""
        out, start = {}, 0
        for entry in self.doc["phases"]:
            out[entry["phase"]] = self.lanes[start:start + len(entry["paths"])]
            start += len(entry["paths"])
        return out

    def line(self) -> str:
        """What `synth vls` prints."""
        return lanes_line(self.lanes, len(self.doc["phases"]), self.how)


def assign_lanes(path: str, max_vls: int, exact: bool = False, time_limit: float = 60.0) -> Lanes:
    """Lanes for the routes file at `path` (checked as synth check checks it), at most `max_vls`
    (more needed: a SynthError saying how many); `exact`: CP-SAT proves the least where it can."""
    doc = read_routes(path)
    if doc["format"] != FORMAT:
        raise SynthError(f"{path}: virtual lanes need a {FORMAT} file (channel paths), not {doc['format']}")
    report = check_routes(doc)
    if not report.ok:
        raise SynthError(f"{path} does not pass synth check: {report.problems[0]}")
    network = routes_topology(doc).network()
    lanes, how = lanes_for([p for entry in doc["phases"] for p in entry["paths"]], network.num_channels, max_vls,
                           exact, time_limit,
                           hint=f"; `synth route ... --router paths --vls {max_vls}` re-chooses paths to fit")
    return Lanes(doc, lanes, how)


def write_laned_routes(target, lanes: Lanes) -> None:
    """The routes file again with its lanes (a `vls` list per phase), into a reserved output."""
    doc = lanes.doc
    with target.open() as handle:
        writer = RoutesWriter(handle, {k: v for k, v in doc.items() if k not in ("format", "phases", "summary")})
        start = 0
        for entry in doc["phases"]:
            writer.add_phase({**entry, "vls": lanes.lanes[start:start + len(entry["paths"])].tolist()})
            start += len(entry["paths"])
        writer.close(doc["summary"])
