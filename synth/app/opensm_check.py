"""`synth opensm-check`'s use case: OpenSM's file engine loads a table directory on ibsim (the
round trip), and OpenSM's own engines route the same fabric for comparison."""

from __future__ import annotations

from dataclasses import dataclass

from synth.opensm.check import check_file_tables, evaluate_engine, load_table_dir, synth_lanes
from synth.opensm.engines import parse_engines


@dataclass
class EngineRow:
    routing: str  # "synth ROUTER" or "opensm ENGINE"
    contention: dict[int, int]  # per phase
    note: str
    unrouted: int
    lanes: str
    seconds: float | None

    def above(self, bound: dict[int, int]) -> int:
        return sum(self.contention[p] > bound.get(p, 0) for p in self.contention)


@dataclass
class OpensmCheck:
    tables: object  # synth.opensm.check.TableDir
    file_check: object  # synth.opensm.check.FileCheck
    rows: list[EngineRow]  # synth's routes, then each engine (only synth's when no engine is asked for)
    bound: dict[int, int]  # per phase, the routes file's lower bound


def opensm_check(directory: str, engines_text: str) -> OpensmCheck:
    tables = load_table_dir(directory)
    engines = parse_engines(engines_text, tables.topology)
    file_check = check_file_tables(tables)
    phases = tables.doc["phases"]
    rows = [EngineRow(f"synth {tables.doc.get('router', '')}", {p["phase"]: p["max_contention"] for p in phases}, "", 0,
                      synth_lanes(tables) if engines else "", None)]
    for engine in engines:
        result = evaluate_engine(tables, engine)
        note = "" if result.configured_by == engine else f"fell back to {result.configured_by}"
        rows.append(EngineRow(f"opensm {engine}", result.max_contention, note, result.unrouted, result.lanes,
                              result.seconds))
    bound = {p["phase"]: p["lower_bound"] for p in phases if "lower_bound" in p}
    return OpensmCheck(tables, file_check, rows, bound)
