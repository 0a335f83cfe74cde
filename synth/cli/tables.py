"""`synth tables ROUTES.json --out DIR [--format opensm|json|csv] [--lmc N]` (synth.app.tables)."""

from __future__ import annotations

from synth.cli import options as o
from synth.core.declared import constant
from synth.core.output import OutputSet
from synth.core.validate import require_readable


def add_parser(sub) -> None:
    p = sub.add_parser("tables", help="switch forwarding tables for a routes file (OpenSM, JSON, CSV)")
    p.add_argument("routes", metavar="ROUTES.json", help="a routes file (synth route --out) that passes synth check")
    p.add_argument("--format", choices=constant("synth.app.tables", "FORMATS"), default="opensm",
                   help="opensm (default): fabric.net, guid2lid, lfts.dump for OpenSM's file engine, dlid.csv and the "
                        "routes; json, csv: the per-switch tables for other fabrics (docs/formats.md)")
    p.add_argument("--out", metavar="DIR", required=True, help="directory for the files")
    p.add_argument("--lmc", type=o.integer("--lmc", 0, constant("synth.tables.forwarding", "MAX_LMC")),
                   help="LIDs per terminal = 2^LMC, 0..7 (default: the fewest that hold the routes)")
    p.set_defaults(func=cmd_tables)


def cmd_tables(args) -> int:
    require_readable(args.routes, f"routes file '{args.routes}'")  # before the readers are imported
    from synth.app.tables import file_names, read_verified, render_tables
    from synth.routing.lanes import COMMON_DATA_VLS

    doc = read_verified(args.routes)  # before anything is written
    with OutputSet() as outputs:
        targets = outputs.reserve_dir(args.out, file_names(doc, args.format))
        rendered = render_tables(doc, args.routes, args.format, args.lmc)  # everything before anything is written
        for name, text in rendered.texts.items():
            targets[name].write(text)
    tables, lids = rendered.tables, rendered.tables.lids
    least = "; the least LMC possible" if rendered.least_lmc else ""
    print(f"{tables.network.num_switches} switches, {tables.network.num_terminals} terminals, LIDs 1..{lids.max_lid}, "
          f"LMC {lids.lmc} ({tables.colours_used} LIDs used per destination at most, at least {tables.colours_bound} needed{least})")
    if lids.note:
        print(f"LIDs: {lids.note}")
    print(f"wrote {', '.join(sorted(rendered.texts))} to {args.out}")
    if rendered.lanes_used is not None and rendered.lanes_used > COMMON_DATA_VLS:
        print(f"note: the routes use {rendered.lanes_used} virtual lanes; switches commonly run {COMMON_DATA_VLS} data VLs "
              f"(ibsim's VL0-{COMMON_DATA_VLS - 1}), and OpenSM maps an SL past them onto a VL the port runs, so those "
              f"flows would share lanes: check with synth opensm-check, or route within --vls {COMMON_DATA_VLS}")
    return 0
