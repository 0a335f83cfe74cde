"""`synth verify SCHEDULE.json|.h5`: replay a schedule file symbolically (synth.collectives.verify); exit
0 when it delivers what its collective promises, 1 with the first violation."""

from __future__ import annotations

import sys

from synth.core.text import counted
from synth.core.validate import require_readable


def add_parser(sub) -> None:
    p = sub.add_parser("verify", help="replay a schedule file symbolically: does it deliver what its collective promises?")
    p.add_argument("schedule", metavar="SCHEDULE.json", help="a synth-schedule file (synth schedule --out; "
                   "docs/formats.md): exit 0 when it delivers, 1 with the first violation")
    p.set_defaults(func=cmd_verify)


def cmd_verify(args) -> int:
    require_readable(args.schedule, f"schedule file '{args.schedule}'")  # before the readers are imported
    from synth.app.schedule import promise
    from synth.collectives.verify import verify
    from synth.io.schedule_file import read_schedule

    schedule = read_schedule(args.schedule)
    report = verify(schedule)
    what = f"{schedule.collective} by {schedule.algorithm} on {schedule.ranks} ranks"
    if not report.ok:
        print(f"FAIL: {report.violation}")
        print(f"FAILED: {what}")
        return 1
    print(f"OK: {what}: {counted(report.steps, 'step')}, {counted(report.transfers, 'transfer')}, "
          f"{counted(report.block_sends, 'block send')}; "
          f"{promise(schedule.collective)}")
    sys.stdout.flush()
    return 0
