"""`synth tables ROUTES.json --out DIR [--format opensm|json|csv] [--lmc N]` (synth.app.tables)."""

from __future__ import annotations

from synth.cli import options as o
from synth.core.declared import constant
from synth.core.validate import require_readable


def add_parser(sub) -> None:
    p = sub.add_parser("tables", help="switch forwarding tables for a routes file (OpenSM, JSON, CSV)")
    p.add_argument("routes", metavar="ROUTES.json", help="a routes file (synth route --out) that passes synth check")
    p.add_argument("--format", choices=constant("synth.app.tables", "FORMATS"), default="opensm",
                   help="opensm (default): fabric.net, guid2lid, lfts.dump for OpenSM's file engine, dlid.csv and the "
                        "routes; json, csv: the per-switch tables for other fabrics (docs/formats.md)")
    p.add_argument("--out", metavar="DIR", required=True,
                   help="directory for the files: written beside it and swapped in whole; an existing DIR is replaced "
                        "when it holds only the files synth tables writes (an earlier run's, said on stderr), else refused")
    p.add_argument("--allow-deadlock", action="store_true",
                   help="write tables for routes whose channel dependencies have a cycle and no virtual lanes (by "
                        "default refused: they can deadlock; synth vls or synth route --vls gives the paths lanes)")
    p.add_argument("--lmc", type=o.integer("--lmc", 0, constant("synth.tables.forwarding", "MAX_LMC")),
                   help="LIDs per terminal = 2^LMC, 0..7 (default: the fewest that hold the routes)")
    p.set_defaults(func=cmd_tables)


def cmd_tables(args) -> int:
    require_readable(args.routes, f"routes file '{args.routes}'")  # before the readers are imported
    from synth.app.tables import make_tables
    from synth.routing.lanes import COMMON_DATA_VLS

    rendered, deadlock = make_tables(args.routes, args.out, args.format, args.lmc, args.allow_deadlock)
    tables, lids = rendered.tables, rendered.tables.lids
    least = "; the least LMC possible" if rendered.least_lmc else ""
    print(f"{tables.network.num_switches} switches, {tables.network.num_terminals} terminals, LIDs 1..{lids.max_lid}, "
          f"LMC {lids.lmc} ({tables.colours_used} LIDs used per destination at most, at least {tables.colours_bound} needed{least})")
    if lids.note:
        print(f"LIDs: {lids.note}")
    rates = rendered.rates
    if rates is not None and rates.options is not None:
        names = sorted({name for _, name in rates.options}, key=lambda n: (int(n.split("x")[0]), n))
        print(f"links: rates {', '.join(f'{r:g}' for r in rates.rates)} (relative) run in fabric.net as ibsim's "
              f"{', '.join(names)}" + ("" if rates.exact else "; ibsim runs SDR, DDR and QDR at 1x, 4x, 8x and 12x only, "
                                       "so some ratios are the nearest it has"))
    if deadlock is not None:
        print("note: the routes' channel dependencies have a cycle and no virtual lanes: these tables can deadlock "
              "(written with --allow-deadlock)")
    print(f"wrote {', '.join(sorted(rendered.texts))} to {args.out}")
    if rendered.lanes_used is not None and rendered.lanes_used > COMMON_DATA_VLS:
        print(f"note: the routes use {rendered.lanes_used} virtual lanes; switches commonly run {COMMON_DATA_VLS} data VLs "
              f"(ibsim's VL0-{COMMON_DATA_VLS - 1}), and OpenSM maps an SL past them onto a VL the port runs, so those "
              f"flows would share lanes: check with synth opensm-check, or route within --vls {COMMON_DATA_VLS}")
    return 0
