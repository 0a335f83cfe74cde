"""`synth export SCHEDULE [--format NAME] [--out FILE]` (synth.app.export)."""

from __future__ import annotations

import sys

from synth.core.declared import constant, declared
from synth.core.output import OutputSet
from synth.core.validate import require_readable


def add_parser(sub) -> None:
    DEFAULT_FORMAT, DEFAULT_PROTOCOL = constant("synth.app.export", "DEFAULT_FORMAT"), constant("synth.app.export", "DEFAULT_PROTOCOL")
    p = sub.add_parser("export", help="write a schedule in a collective library's format (MSCCL's XML)")
    p.add_argument("schedule", metavar="SCHEDULE", help="a synth-schedule file (JSON or HDF5)")
    # synth.io.EXPORT_FORMATS, read from the format modules' source (synth.core.declared)
    formats = "; ".join(f"{export.name}: {export.summary}"
                        for export in declared("synth.io", "EXPORT_FORMAT", "ExportFormat", ("name", "summary")))
    p.add_argument("--format", default=DEFAULT_FORMAT, metavar="NAME", help=f"{formats} (default {DEFAULT_FORMAT})")
    p.add_argument("--proto", default=DEFAULT_PROTOCOL, choices=constant("synth.io.msccl_xml", "PROTOCOLS"),
                   help=f"the MSCCL protocol (default {DEFAULT_PROTOCOL})")
    p.add_argument("--name", metavar="NAME", help="the algorithm's name (default synth-ALGORITHM-COLLECTIVE-P)")
    p.add_argument("--out", metavar="FILE", help="write it here (default: standard output)")
    p.set_defaults(func=cmd_export)


def cmd_export(args) -> int:
    if (args.format, args.proto) == (constant("synth.app.export", "DEFAULT_FORMAT"), constant("synth.app.export", "DEFAULT_PROTOCOL")):
        require_readable(args.schedule, f"schedule file '{args.schedule}'")  # (other formats are checked first)
    from synth.app.export import export_schedule

    with OutputSet() as outputs:
        outputs.protect(args.schedule)
        target = outputs.reserve(args.out) if args.out is not None else None
        text = export_schedule(args.schedule, args.format, args.name, args.proto)
        if target is None:
            sys.stdout.write(text)
        else:
            target.write(text)
            print(f"wrote {args.out}")
    return 0
