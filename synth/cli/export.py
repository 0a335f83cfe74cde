"""`synth export SCHEDULE [--format NAME] [--out FILE]` (synth.app.export); SCHEDULE a directory of band
files (synth synthesize --bytes A..B --out DIR): --out a directory of one file per band."""

from __future__ import annotations

import os
import sys

from synth.core.declared import constant, declared
from synth.core.output import OutputSet
from synth.core.validate import parse_int, require_readable


def _size(what: str):
    def parse(text: str) -> int:
        from synth.core.sizes import parse_size

        return parse_size(text, what, minimum=0)
    return parse


def add_parser(sub) -> None:
    DEFAULT_FORMAT, DEFAULT_PROTOCOL = constant("synth.app.export", "DEFAULT_FORMAT"), constant("synth.app.export", "DEFAULT_PROTOCOL")
    DEFAULT_MAX_STEPS = constant("synth.app.export", "DEFAULT_MAX_STEPS")
    p = sub.add_parser("export", help="write a schedule in a collective library's format (MSCCL's XML)")
    p.add_argument("schedule", metavar="SCHEDULE",
                   help="a synth-schedule file (JSON or HDF5), or a directory of band files (synth synthesize --bytes "
                        "A..B --out DIR): one file per band into --out DIR, each selected for its band's sizes")
    # synth.io.EXPORT_FORMATS, read from the format modules' source (synth.core.declared)
    formats = "; ".join(f"{export.name}: {export.summary}"
                        for export in declared("synth.io", "EXPORT_FORMAT", "ExportFormat", ("name", "summary")))
    p.add_argument("--format", default=DEFAULT_FORMAT, metavar="NAME", help=f"{formats} (default {DEFAULT_FORMAT})")
    p.add_argument("--proto", default=DEFAULT_PROTOCOL, choices=constant("synth.io.msccl_xml", "PROTOCOLS"),
                   help=f"the MSCCL protocol (default {DEFAULT_PROTOCOL})")
    p.add_argument("--name", metavar="NAME", help="the algorithm's name (default synth-ALGORITHM-COLLECTIVE-P; a "
                                                  "directory's bands: NAME-SIZEB)")
    p.add_argument("--min-bytes", type=_size("--min-bytes"), default=0, metavar="SIZE",
                   help="the least message size MSCCL selects the file for (minBytes, inclusive; MSCCL's size: "
                        "allgather's whole output, reduce-scatter's whole input, alltoall's send buffer, else the "
                        "buffer; synth's --bytes; default 0)")
    p.add_argument("--max-bytes", type=_size("--max-bytes"), default=0, metavar="SIZE",
                   help="the largest (maxBytes, inclusive; default 0: no upper limit)")
    p.add_argument("--max-steps", type=lambda text: parse_int(text, "--max-steps", 2, 32768),
                   default=DEFAULT_MAX_STEPS, metavar="N",
                   help=f"steps a thread block holds: MSCCL_MAX_NUM_STEPS as MSCCL was built with (default "
                        f"{DEFAULT_MAX_STEPS}, msccl-executor-nccl's)")
    p.add_argument("--out", metavar="FILE", help="write it here (default: standard output); a directory of band "
                                                 "files: the directory of the exported bands")
    p.set_defaults(func=cmd_export)


def cmd_export(args) -> int:
    from synth.core.errors import SynthError

    if os.path.isdir(args.schedule):
        if args.out is None:
            raise SynthError(f"'{args.schedule}' is a directory of band files: give --out DIR for their exports "
                             "(one file per band)")
        if args.min_bytes or args.max_bytes:
            raise SynthError("--min-bytes/--max-bytes: a directory's bands carry their own size ranges (their "
                             "synthesis' sizes); export one band file to give a range")
        from synth.app.export import check_export, export_bands, is_exported_band

        check_export(args.format, args.proto, 0, 0, args.max_steps)
        with OutputSet() as outputs:
            outputs.protect(args.schedule)
            target = outputs.reserve_dir(args.out, [], owned=is_exported_band)
            made = export_bands(args.schedule, args.format, args.name, args.proto, args.max_steps)
            for file, text in made:
                target.reserve(file).write(text)
        print(f"wrote {len(made)} files into {args.out}")
        return 0
    if (args.format, args.proto) == (constant("synth.app.export", "DEFAULT_FORMAT"), constant("synth.app.export", "DEFAULT_PROTOCOL")):
        require_readable(args.schedule, f"schedule file '{args.schedule}'")  # (other formats are checked first)
    from synth.app.export import export_schedule

    with OutputSet() as outputs:
        outputs.protect(args.schedule)
        target = outputs.reserve(args.out) if args.out is not None else None
        text = export_schedule(args.schedule, args.format, args.name, args.proto, args.min_bytes, args.max_bytes,
                               args.max_steps)
        if target is None:
            sys.stdout.write(text)
        else:
            target.write(text)
            print(f"wrote {args.out}")
    return 0
