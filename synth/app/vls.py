"""`synth vls ROUTES.json --out FILE [--max-vls N]`: virtual lanes for a routes file.

The file must pass `synth check` first. Every path of every phase gets a lane (synth.route.lanes)
so that each lane's channel dependency graph is acyclic; the routes file is written again with a
`vls` list per phase, parallel to `paths`, which `synth check` verifies.
"""

from __future__ import annotations

import numpy as np

from synth.core.errors import SynthError
from synth.core.output import OutputSet
from synth.core.validate import parse_int, parse_positive_number
from synth.render.routes_file import FORMAT, MAX_VLS, RoutesWriter, read_routes
from synth.route.lanes import assign_lanes, exact_lanes
from synth.topology import parse_topology
from synth.verify.deadlock import flatten
from synth.verify.routes import check_routes

DEFAULT_VLS = 8  # data VLs of common InfiniBand switches


def add_parser(sub) -> None:
    p = sub.add_parser("vls", help="assign virtual lanes so that every lane's channel dependencies are acyclic "
                       "(deadlock-free routes); writes the routes file with a vls list per phase")
    p.add_argument("routes", metavar="ROUTES.json", help="a synth-routes/2 file that passes synth check")
    p.add_argument("--out", metavar="FILE", required=True, help="the routes file with lanes")
    p.add_argument("--max-vls", type=lambda t: parse_int(t, "--max-vls", 1, MAX_VLS), default=DEFAULT_VLS, metavar="N",
                   help=f"virtual lanes the fabric has (default {DEFAULT_VLS}, at most {MAX_VLS})")
    p.add_argument("--exact", action="store_true", help="prove the least number of lanes with CP-SAT (small routes "
                   "files: at most 2,000 paths)")
    p.add_argument("--time-limit", type=lambda t: parse_positive_number(t, "--time-limit", 1e6), default=60.0, metavar="S",
                   help="CP-SAT deterministic time per lane count tried with --exact (default 60)")
    p.set_defaults(func=cmd_vls)


def cmd_vls(args) -> int:
    doc = read_routes(args.routes)
    if doc["format"] != FORMAT:
        raise SynthError(f"{args.routes}: virtual lanes need a {FORMAT} file (channel paths), not {doc['format']}")
    report = check_routes(doc)
    if not report.ok:
        raise SynthError(f"{args.routes} does not pass synth check: {report.problems[0]}")
    network = parse_topology(doc["topology"]["spec"]).network()
    lanes, how = lanes_for([p for entry in doc["phases"] for p in entry["paths"]], network.num_channels, args.max_vls,
                           args.exact, args.time_limit)
    with OutputSet() as outputs:
        outputs.protect(args.routes)
        target = outputs.reserve(args.out)
        with target.open() as handle:
            writer = RoutesWriter(handle, {k: v for k, v in doc.items() if k not in ("format", "phases", "summary")})
            start = 0
            for entry in doc["phases"]:
                writer.add_phase({**entry, "vls": lanes[start:start + len(entry["paths"])].tolist()})
                start += len(entry["paths"])
            writer.close(doc["summary"])
    print(lanes_line(lanes, len(doc["phases"]), how))
    print(f"wrote {args.out}")
    return 0


def lanes_for(paths: list[list[int]], num_channels: int, max_vls: int, exact: bool = False,
              time_limit: float = 60.0, option: str = "--max-vls") -> tuple[np.ndarray, str]:
    """A lane per path (all phases together: a fabric's tables hold them all) and how the count was
    found; a user error naming the count needed when it is above `max_vls`."""
    channels, lengths = flatten(paths)
    if exact:
        lanes, proven = exact_lanes(channels, lengths, num_channels, MAX_VLS, time_limit)
        how = "the least number, proven by CP-SAT" if proven else "CP-SAT ran out of time on a smaller count: an upper bound"
    else:
        lanes = assign_lanes(channels, lengths, num_channels, MAX_VLS)  # how many it takes, up to IB's limit
        how = "the layered heuristic: an upper bound on the least number"
    needed = int(lanes.max(initial=-1)) + 1
    if needed > max_vls:
        raise SynthError(f"the routes need {needed} virtual lanes ({how}); the fabric has {max_vls} ({option})")
    return lanes, how


def lanes_line(lanes: np.ndarray, phases: int, how: str) -> str:
    used = int(lanes.max(initial=-1)) + 1
    return (f"{len(lanes)} paths in {phases} phases: {used} virtual lane{'s' if used != 1 else ''} "
            f"({', '.join(f'VL{v}: {int(n)}' for v, n in enumerate(np.bincount(lanes, minlength=used)))} paths), "
            f"every lane's channel dependencies acyclic; {how}")
