"""`synth vls ROUTES.json --out FILE [--max-vls N] [--exact]`: virtual lanes for a routes file (synth.app.vls)."""

from __future__ import annotations

from synth.core.declared import constant
from synth.core.output import OutputSet
from synth.core.validate import parse_int, parse_positive_number, require_readable


def add_parser(sub) -> None:
    DEFAULT_VLS, MAX_VLS = constant("synth.routing.lane_budget", "DEFAULT_VLS"), constant("synth.io.routes_file", "MAX_VLS")
    MAX_EXACT_PATHS = constant("synth.routing.lanes", "MAX_EXACT_PATHS")
    p = sub.add_parser("vls", help="assign virtual lanes so that every lane's channel dependencies are acyclic "
                       "(deadlock-free routes); writes the routes file with a vls list per phase")
    p.add_argument("routes", metavar="ROUTES.json", help="a synth-routes/2 file that passes synth check")
    p.add_argument("--out", metavar="FILE", required=True, help="the routes file with lanes")
    p.add_argument("--max-vls", type=lambda t: parse_int(t, "--max-vls", 1, MAX_VLS), default=DEFAULT_VLS, metavar="N",
                   help=f"virtual lanes the fabric has (default {DEFAULT_VLS}, at most {MAX_VLS})")
    p.add_argument("--exact", action="store_true", help="prove the least number of lanes with CP-SAT (small routes "
                   f"files: at most {MAX_EXACT_PATHS:,} paths)")
    p.add_argument("--time-limit", type=lambda t: parse_positive_number(t, "--time-limit", 1e6), default=60.0, metavar="S",
                   help="CP-SAT deterministic time per lane count tried with --exact (default 60)")
    p.set_defaults(func=cmd_vls)


def cmd_vls(args) -> int:
    require_readable(args.routes, f"routes file '{args.routes}'")  # before the readers are imported
    from synth.app.vls import assign_lanes, write_laned_routes

    lanes = assign_lanes(args.routes, args.max_vls, args.exact, args.time_limit)
    with OutputSet() as outputs:
        outputs.protect(args.routes)
        write_laned_routes(outputs.reserve(args.out), lanes)
    print(lanes.line())
    print(f"wrote {args.out}")
    return 0
