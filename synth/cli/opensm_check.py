"""`synth opensm-check DIR [--engines LIST]` (synth.app.opensm_check)."""

from __future__ import annotations

from synth.core.text import counted
from synth.opensm.table_files import require_table_files


def add_parser(sub) -> None:
    p = sub.add_parser("opensm-check", help="load tables into OpenSM on a simulated fabric, verify, compare OpenSM's engines")
    p.add_argument("dir", metavar="DIR", help="a directory written by `synth tables --format opensm`")
    p.add_argument("--engines", default="all", metavar="LIST", help="OpenSM engines to compare: all (default), none, or e.g. minhop,updn")
    p.set_defaults(func=cmd_opensm_check)


def cmd_opensm_check(args) -> int:
    require_table_files(args.dir)  # before OpenSM's and synth's readers are imported
    from synth.app.opensm_check import opensm_check
    from synth.opensm.check import lanes_verdict

    result = opensm_check(args.dir, args.engines)
    tables, file_check = result.tables, result.file_check
    moving = int((tables.flows.src != tables.flows.dst).sum())
    print(f"OpenSM file engine ({file_check.seconds:.1f} s, LMC {tables.lmc}): "
          + ("tables loaded" if file_check.engine == "file" else f"REFUSED, OpenSM fell back to {file_check.engine}")
          + (", LIDs kept" if file_check.lids_kept else ", LIDs CHANGED by OpenSM")
          + f"; {moving - len(file_check.mismatches)} of {moving} flow{'s' * (moving != 1)} follow their synthesized paths through the read-back tables")
    for k in file_check.mismatches[:5]:
        print(f"FAIL: flow {k} ({tables.flows.src[k]} -> {tables.flows.dst[k]}, phase {tables.flows.phase[k]}) leaves the synthesized path")
    lanes = file_check.lanes
    if lanes is not None:
        print(lanes_verdict(lanes))
        print("lanes not observed: the SL the subnet administrator hands out per path record (OpenSM runs once, with "
              "no resident SA to query)")
        for k in lanes.mismatches[:5]:
            print(f"FAIL: flow {k} ({tables.flows.src[k]} -> {tables.flows.dst[k]}) gets another lane than recorded")
    if result.rows[1:]:
        if tables.doc.get("load_unit") == "bytes":
            print("\ncontention and bounds in bytes over bandwidth (the routes file's load_unit)", end="")
        print(f"\n{'routing':<22} {'max contention':>14} {'phases above bound':>19}  {'lanes':<36} {'seconds':>7}  notes")
        for row in result.rows:
            extra = f"; {counted(row.unrouted, 'flow')} unrouted" if row.unrouted else ""
            timing = f"{row.seconds:7.2f}" if row.seconds is not None else f"{'-':>7}"
            print(f"{row.routing:<22} {max(row.contention.values(), default=0):>14} {row.above(result.bound):>12} of "
                  f"{len(row.contention):<4}  {row.lanes:<36} {timing}  {row.note}{extra}")
        print("lanes: synth's cover the workload's paths (table entries no flow uses hold minimum-hop or d-mod-k fill); "
              "OpenSM's engines route every pair of LIDs")
    return 0 if file_check.ok else 1
