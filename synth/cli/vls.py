"""`synth vls ROUTES.json --out FILE [--max-vls N] [--exact]`: virtual lanes for a routes file (synth.routing.lane_budget)."""

from __future__ import annotations

from synth.core.declared import constant
from synth.core.errors import SynthError
from synth.core.output import OutputSet
from synth.core.validate import parse_int, parse_positive_number, require_readable


def add_parser(sub) -> None:
    DEFAULT_VLS, MAX_VLS = constant("synth.routing.lane_budget", "DEFAULT_VLS"), constant("synth.io.routes_file", "MAX_VLS")
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
    require_readable(args.routes, f"routes file '{args.routes}'")  # before the readers are imported
    from synth.checking.routes import check_routes
    from synth.io.routes_file import FORMAT, RoutesWriter, read_routes, routes_topology
    from synth.routing.lane_budget import lanes_for, lanes_line

    doc = read_routes(args.routes)
    if doc["format"] != FORMAT:
        raise SynthError(f"{args.routes}: virtual lanes need a {FORMAT} file (channel paths), not {doc['format']}")
    report = check_routes(doc)
    if not report.ok:
        raise SynthError(f"{args.routes} does not pass synth check: {report.problems[0]}")
    network = routes_topology(doc).network()
    lanes, how = lanes_for([p for entry in doc["phases"] for p in entry["paths"]], network.num_channels, args.max_vls,
                           args.exact, args.time_limit,
                           hint=f"; `synth route ... --router paths --vls {args.max_vls}` re-chooses paths to fit")
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
