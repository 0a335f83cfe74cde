"""`synth check ROUTES.json`: re-verify a routes file from scratch (synth.checking.routes); exit 1 on a
difference."""

from __future__ import annotations

from synth.core.text import counted
from synth.core.validate import require_readable


def add_parser(sub) -> None:
    p = sub.add_parser("check", help="re-verify a routes file from scratch (exit 1 on a difference)")
    p.add_argument("routes", metavar="ROUTES.json", help="a routes file (synth route --out): its paths, contention, "
                   "bounds, statuses and summary are recomputed from the network and the traffic")
    p.set_defaults(func=cmd_check)


def cmd_check(args) -> int:
    require_readable(args.routes, f"routes file '{args.routes}'")  # before the readers are imported
    from synth.checking.routes import MAX_LISTED_PROBLEMS, check_routes
    from synth.io.routes_file import read_routes_columnar

    doc = read_routes_columnar(args.routes)  # either form; per phase flows and paths as arrays
    report = check_routes(doc)
    if not report.ok:
        print(f"FAIL: {report.problems[0]}")  # the first difference, named first
        report.problems = report.problems[1:]
        for problem in report.problems[: MAX_LISTED_PROBLEMS - 1]:
            print(f"FAIL: {problem}")
        more = len(report.problems) - (MAX_LISTED_PROBLEMS - 1)
        if more > 0:
            print(f"... and {more} more problems")
        count = len(report.problems) + 1
        print(f"FAILED: {count} problem{'s' if count > 1 else ''} ({counted(report.phases, 'phase')} checked)")
        return 1
    for note in report.note_lines():
        print(f"note: {note}")
    if report.dependencies is not None:
        print(f"channel dependencies: {report.dependencies}")
    unit = " bytes over bandwidth" if doc.get("load_unit") == "bytes" else ""
    print(f"OK: {counted(report.phases, 'phase')}, {counted(report.paths, 'path')} valid and {report.policy}; recorded contention, bounds, "
          f"statuses, stages and summary match (max contention {report.max_contention}{unit})")
    return 0
