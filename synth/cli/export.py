"""`synth export SCHEDULE [--format NAME] [--out FILE]` (synth.app.export)."""

from __future__ import annotations

import sys

from synth.app.export import DEFAULT_FORMAT, DEFAULT_PROTOCOL, export_schedule
from synth.core.output import OutputSet
from synth.io import EXPORT_FORMATS
from synth.io.msccl_xml import PROTOCOLS


def add_parser(sub) -> None:
    p = sub.add_parser("export", help="write a schedule in a collective library's format (MSCCL's XML)")
    p.add_argument("schedule", metavar="SCHEDULE", help="a synth-schedule file (JSON or HDF5)")
    formats = "; ".join(f"{name}: {export.summary}" for name, export in EXPORT_FORMATS.items())
    p.add_argument("--format", default=DEFAULT_FORMAT, metavar="NAME", help=f"{formats} (default {DEFAULT_FORMAT})")
    p.add_argument("--proto", default=DEFAULT_PROTOCOL, choices=PROTOCOLS,
                   help=f"the MSCCL protocol (default {DEFAULT_PROTOCOL})")
    p.add_argument("--name", metavar="NAME", help="the algorithm's name (default synth-ALGORITHM-COLLECTIVE-P)")
    p.add_argument("--out", metavar="FILE", help="write it here (default: standard output)")
    p.set_defaults(func=cmd_export)


def cmd_export(args) -> int:
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
