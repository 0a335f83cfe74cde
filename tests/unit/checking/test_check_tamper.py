"""Tamper suite for `synth check ROUTES.json`: every field of a routes file (docs/formats.md).

Written ahead of the checker rewrite (issue 9) as its independent specification. The main suite
tampers with files in the first version, `synth-routes/1` (paths as node ids; the fixtures are
converted with helpers.legacy_routes), which synth still reads; CHANNEL_CASES tamper with the
channel paths of `synth-routes/2`, what synth writes. The contract:

- exit 0 only when everything recorded re-verifies (the untampered baselines below);
- exit 1, with a stdout line starting "FAIL:", when a well-formed file records a value that
  disagrees with its recomputation (numbers, statuses, proofs, flows, paths, the phase list, the
  summary, the header values);
- exit 2, with exactly one stderr line starting "synth: error:" and no traceback, when the file is
  not a routes file: not (UTF-8) JSON, a wrong JSON type (bools and floats such as 3.0 are not
  integers), an integer outside 64-bit or its documented range, a required field missing, an
  unknown or duplicated key at any level, a wrong format string.

A few cases where the format leaves the choice between 1 and 2 open accept either (EITHER); they
must still never pass. Fixtures are written once per module by the CLI itself, in-process.
"""

from __future__ import annotations

import copy
import json
from functools import reduce

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import legacy_routes
from synth.cli import main
from synth.measure.evaluate import PhaseEvaluation
from synth.render.console import summary as summary_of
from synth.topology import parse_topology

SPEC = "xgft:2:4,4:1,2"  # 16 terminals (0..15), leaf switches 16..19, top switches 20..21
DIFF, BAD, EITHER = (1,), (2,), (1, 2)

NETWORK = parse_topology(SPEC).network()
_UP = NETWORK.channel_is_up()


def _up_neighbours(node: int) -> list[int]:
    return sorted(int(d) for d in NETWORK.channel_dst[(NETWORK.channel_src == node) & _UP])


def _children(node: int) -> list[int]:
    return sorted(int(d) for d in NETWORK.channel_dst[(NETWORK.channel_src == node) & ~_UP])


# ----- fixtures ---------------------------------------------------------------------------------

def _route(directory, name: str, selection: str, *argv: str) -> dict:
    target = directory / f"{name}.json"
    code = main(["route", SPEC, "--traffic", "a2a-opt", "--phase", selection, *argv, "--out", str(target), "--quiet"])
    assert code == 0, f"could not write the {name} fixture"
    doc = legacy_routes(json.loads(target.read_text()))
    # What the new writer produces: the selection text recorded, no clock in the solver report.
    doc["traffic"].setdefault("selection", selection)
    for record in doc["phases"]:
        if isinstance(record.get("solver"), dict):
            record["solver"].pop("solver_seconds", None)
    return doc


def _resummarize(doc: dict) -> None:
    """Make the summary agree with the recorded phases, so that a tamper is caught where it is."""
    evaluations = [PhaseEvaluation(p["phase"], p["max_contention"], p["lower_bound"], p["status"], -1,
                                   p["stage_bounds"], p["stage_max"]) for p in doc["phases"]]
    if evaluations:
        doc["summary"] = summary_of(evaluations)


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> dict[str, dict]:
    directory = tmp_path_factory.mktemp("tamper-fixtures")
    layered = _route(directory, "layered", "all", "--router", "layered")
    dmodk = _route(directory, "dmodk", "0-3", "--router", "dmodk")
    mono = _route(directory, "mono", "0-1", "--router", "monolithic")
    assert [p["phase"] for p in layered["phases"]] == list(range(16))
    assert all(p["status"] == "optimal" and p["max_contention"] == p["lower_bound"] for p in layered["phases"])
    assert all(p["status"] == "feasible" and p["max_contention"] > p["lower_bound"] for p in dmodk["phases"])
    assert all(p.get("proven_by") == "cpsat" for p in mono["phases"])
    # `mixed`: the layered file with phase 2 routed as d-mod-k routes it (same flows), so that one
    # phase of a synthesizing router's file is above its bound (feasible, solver without timeouts).
    mixed = copy.deepcopy(layered)
    slow, source = mixed["phases"][2], dmodk["phases"][2]
    assert slow["flows"] == source["flows"] and slow["stage_bounds"] == source["stage_bounds"]
    for key in ("max_contention", "gap", "status", "stage_max", "paths"):
        slow[key] = copy.deepcopy(source[key])
    _resummarize(mixed)
    assert mixed["summary"]["statuses"] == {"optimal": 15, "feasible": 1}
    return {"layered": layered, "dmodk": dmodk, "mono": mono, "mixed": mixed}


def _run_check(tmp_path, capsys, data: bytes) -> tuple[int, str, str]:
    target = tmp_path / "routes.json"
    target.write_bytes(data)
    capsys.readouterr()
    code = main(["check", str(target)])
    out, err = capsys.readouterr()
    return code, out, err


def _assert_outcome(code: int, out: str, err: str, expected: tuple[int, ...]) -> None:
    assert code != 0, f"tampered file passed the check:\n{out}"
    assert "Traceback" not in out + err
    assert code in expected, f"exit {code}, expected {expected}\nstdout:\n{out}\nstderr:\n{err}"
    if code == 2:
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("synth: error:"), err
    else:
        assert any(line.startswith("FAIL:") for line in out.splitlines()), out


# ----- tamper helpers ---------------------------------------------------------------------------

_KEEP = object()


def _at(doc, path):
    return reduce(lambda node, key: node[key], path, doc)


def setv(path, value=_KEEP, fn=None):
    """Set the field at `path` to `value`, or to fn(old value)."""
    def tamper(doc):
        parent = _at(doc, path[:-1])
        parent[path[-1]] = fn(parent[path[-1]]) if fn is not None else copy.deepcopy(value)
    return tamper


def delete(path):
    def tamper(doc):
        del _at(doc, path[:-1])[path[-1]]
    return tamper


def chain(*tampers):
    def tamper(doc):
        for t in tampers:
            result = t(doc)
            if result is not None:
                return result
    return tamper


def resummarize(doc):
    _resummarize(doc)


def raw(fn):
    """A tamper of the file's bytes: fn(serialized bytes) -> bytes."""
    def tamper(doc):
        return fn(json.dumps(doc).encode("utf-8"))
    return tamper


def constant(data: bytes):
    return lambda doc: data


P = ("phases",)


def ph(k, *rest):
    return ("phases", k, *rest)


# ----- cases ------------------------------------------------------------------------------------

CASES: list = []


def case(fixture: str, case_id: str, tamper, expected) -> None:
    CASES.append(pytest.param(fixture, tamper, expected, id=f"{fixture}-{case_id}"))


# Wrong JSON types where an integer belongs; each keeps the value where the type allows (2 -> 2.0,
# "2", 1 -> true), so that a reader comparing loosely still has to see the type.
def _variants(value):
    return {"str": str(value), "float": float(value), "bool": bool(value) if value in (0, 1) else True,
            "null": None, "list": [value], "object": {"value": value}}


INTEGER_FIELDS = {
    "layered": [
        ("seed", ("seed",)),
        ("traffic.ranks", ("traffic", "ranks")),
        ("traffic.phases", ("traffic", "phases")),
        ("traffic.message_bytes", ("traffic", "message_bytes")),
        ("phase.phase", ph(1, "phase")),
        ("phase.max_contention", ph(0, "max_contention")),
        ("phase.lower_bound", ph(0, "lower_bound")),
        ("phase.gap", ph(0, "gap")),
        ("phase.stage_max[0]", ph(0, "stage_max", 0)),
        ("phase.stage_bounds[1]", ph(0, "stage_bounds", 1)),
        ("phase.flows.src", ph(1, "flows", 1, 0)),
        ("phase.flows.dst", ph(1, "flows", 1, 1)),
        ("phase.flows.bytes", ph(1, "flows", 1, 2)),
        ("phase.paths.node", ph(1, "paths", 1, 0)),
        ("phase.solver.timeouts", ph(0, "solver", "timeouts")),
        ("phase.solver.subproblems", ph(0, "solver", "subproblems")),
        ("synthesis.threads", ("synthesis", "threads")),
        ("summary.phases", ("summary", "phases")),
        ("summary.max_gap", ("summary", "max_gap")),
        ("summary.worst_phase", ("summary", "worst_phase")),
        ("summary.statuses.optimal", ("summary", "statuses", "optimal")),
    ],
}


def _typed(path, kind):
    return lambda doc: setv(path, _variants(_at(doc, path))[kind])(doc)


for fixture, fields in INTEGER_FIELDS.items():
    for label, path in fields:
        for kind in ("str", "float", "bool", "null", "list", "object"):
            case(fixture, f"type-{label}-{kind}", _typed(path, kind), BAD)

# Integers outside 64-bit or below their range (node ids, ranks, counts, seeds are >= 0).
HUGE = 10**30
for label, path in [("seed", ("seed",)), ("traffic.ranks", ("traffic", "ranks")),
                    ("traffic.message_bytes", ("traffic", "message_bytes")), ("phase.phase", ph(0, "phase")),
                    ("phase.max_contention", ph(0, "max_contention")), ("phase.stage_bounds[0]", ph(0, "stage_bounds", 0)),
                    ("phase.flows.bytes", ph(1, "flows", 2, 2)), ("phase.paths.node", ph(1, "paths", 2, 2)),
                    ("phase.solver.timeouts", ph(0, "solver", "timeouts")),
                    ("summary.sum_max_contention", ("summary", "sum_max_contention"))]:
    case("layered", f"huge-{label}-10e30", setv(path, HUGE), BAD)
case("layered", "huge-seed-2pow63", setv(("seed",), 2**63), BAD)
case("layered", "huge-phase.gap-minus-2pow63-minus-1", setv(ph(0, "gap"), -(2**63) - 1), BAD)
for label, path in [("seed", ("seed",)), ("traffic.ranks", ("traffic", "ranks")), ("phase.phase", ph(0, "phase")),
                    ("phase.max_contention", ph(0, "max_contention")), ("phase.lower_bound", ph(0, "lower_bound")),
                    ("phase.flows.src", ph(1, "flows", 1, 0)), ("phase.paths.node", ph(1, "paths", 1, 1))]:
    case("layered", f"negative-{label}", setv(path, -1), BAD)

# Required fields, each removed.
for key in ("format", "topology", "traffic", "router", "seed", "phases", "summary", "synthesis"):
    case("layered", f"missing-top.{key}", delete((key,)), BAD)
case("layered", "missing-topology.spec", delete(("topology", "spec")), BAD)
for key in ("pattern", "ranks", "phases", "message_bytes", "selection"):
    case("layered", f"missing-traffic.{key}", delete(("traffic", key)), BAD)
for key in ("phase", "max_contention", "lower_bound", "gap", "status", "stage_max", "stage_bounds", "flows", "paths",
            "solver"):
    case("layered", f"missing-phase.{key}", delete(ph(3, key)), BAD)
for key in ("subproblems", "split_solved", "direct_solved", "relaxed_layers", "timeouts", "backtracks"):
    case("layered", f"missing-phase.solver.{key}", delete(ph(0, "solver", key)), BAD)
for key in ("constraints", "balance", "construction", "solver", "time_limit", "threads", "consistency"):
    case("layered", f"missing-synthesis.{key}", delete(("synthesis", key)), BAD)
for key in ("phases", "max_contention", "worst_phase", "max_lower_bound", "phases_at_bound", "phases_above_bound",
            "max_gap", "sum_max_contention", "sum_lower_bound", "statuses"):
    case("mixed", f"missing-summary.{key}", delete(("summary", key)), BAD)

# Unknown keys at every level, and a duplicated key.
for label, path in [("top", ()), ("topology", ("topology",)), ("traffic", ("traffic",)), ("phase", ph(5)),
                    ("phase.solver", ph(5, "solver")), ("synthesis", ("synthesis",)), ("summary", ("summary",))]:
    case("layered", f"unknown-key-{label}", setv((*path, "comment"), "hello"), BAD)
case("layered", "unknown-key-phase.solver_seconds", setv(ph(0, "solver", "solver_seconds"), 0), BAD)
case("layered", "duplicate-key-top.seed", raw(lambda b: b.replace(b'"seed": 0', b'"seed": 0, "seed": 0', 1)), BAD)
case("layered", "duplicate-key-phase.max_contention",
     raw(lambda b: b.replace(b'"max_contention": 2', b'"max_contention": 2, "max_contention": 2', 1)), BAD)

# Not a routes file at all.
case("layered", "format-other-version", setv(("format",), "synth-routes/3"), BAD)
case("layered", "format-upper-case", setv(("format",), "SYNTH-ROUTES/1"), BAD)
case("layered", "format-topology", setv(("format",), "synth-topology/1"), BAD)
case("layered", "format-int", setv(("format",), 1), BAD)
case("layered", "format-null", setv(("format",), None), BAD)
case("layered", "file-empty", constant(b""), BAD)
case("layered", "file-whitespace", constant(b" \n\t\n"), BAD)
case("layered", "file-json-array", lambda doc: json.dumps([doc]).encode(), BAD)
case("layered", "file-json-string", constant(b'"synth-routes/1"'), BAD)
case("layered", "file-json-null", constant(b"null"), BAD)
case("layered", "file-json-number", constant(b"1"), BAD)
case("layered", "file-truncated", raw(lambda b: b[: len(b) // 2]), BAD)
case("layered", "file-trailing-garbage", raw(lambda b: b + b"xyz\n"), BAD)
case("layered", "file-trailing-second-object", raw(lambda b: b + b"\n{}\n"), BAD)
case("layered", "file-trailing-comma", raw(lambda b: b[:-1] + b",}"), BAD)
case("layered", "file-non-utf8-byte", raw(lambda b: b.replace(b'"layered"', b'"lay\xffered"', 1)), BAD)
case("layered", "file-latin1-text", raw(lambda b: b.replace(b'"router": "layered"', b'"router": "layer\xe9d"', 1)), BAD)
case("layered", "file-utf8-bom", raw(lambda b: b"\xef\xbb\xbf" + b), BAD)
case("layered", "file-utf16", raw(lambda b: b.decode().encode("utf-16")), BAD)
case("layered", "file-nan", raw(lambda b: b.replace(b'"max_contention": 2', b'"max_contention": NaN', 1)), BAD)
case("layered", "file-infinity", raw(lambda b: b.replace(b'"lower_bound": 2', b'"lower_bound": Infinity', 1)), BAD)
case("layered", "file-float-overflow", raw(lambda b: b.replace(b'"gap": 0', b'"gap": 1e400', 1)), BAD)
case("layered", "file-exponent-integer", raw(lambda b: b.replace(b'"max_contention": 2', b'"max_contention": 2e0', 1)), BAD)
case("layered", "file-deeply-nested", constant(b"[" * 100000 + b"]" * 100000), BAD)
case("layered", "file-deeply-nested-field", raw(lambda b: b.replace(b'"seed": 0', b'"seed": ' + b"[" * 5000 + b"0" + b"]" * 5000, 1)),
     BAD)

def _copy_phase(source: int, target: int):
    def tamper(doc):
        doc["phases"][target] = copy.deepcopy(doc["phases"][source])
    return tamper


def _swap_flows_and_paths(a: int, b: int):
    """Phases a and b trade flows and paths; every recorded number stays right (both at the same
    contention and bound), only the regenerated pattern tells."""
    def tamper(doc):
        first, second = doc["phases"][a], doc["phases"][b]
        for key in ("flows", "paths"):
            first[key], second[key] = second[key], first[key]
    return tamper


def _renumber(offset: int):
    def tamper(doc):
        for record in doc["phases"]:
            record["phase"] += offset
    return tamper


# ----- header values ---

case("layered", "topology-not-object", setv(("topology",), SPEC), BAD)
case("layered", "topology.spec-int", setv(("topology", "spec"), 2), BAD)
case("layered", "topology.spec-other-parsing-spec-more-top-switches", setv(("topology", "spec"), "xgft:2:4,4:1,4"), DIFF)
case("layered", "topology.spec-other-parsing-spec-two-parents", setv(("topology", "spec"), "xgft:2:4,4:2,2"), DIFF)
case("layered", "topology.spec-other-parsing-spec-three-levels", setv(("topology", "spec"), "xgft:3:4,2,2:1,2,2"), DIFF)
case("layered", "topology.spec-unparseable", setv(("topology", "spec"), "xgft:2:4,4"), EITHER)
case("layered", "traffic-not-object", setv(("traffic",), "a2a-opt"), BAD)
case("layered", "traffic.pattern-int", setv(("traffic", "pattern"), 3), BAD)
case("layered", "traffic.pattern-other-a2a-lin", setv(("traffic", "pattern"), "a2a-lin"), DIFF)
case("layered", "traffic.pattern-other-a2a-xor", setv(("traffic", "pattern"), "a2a-xor"), DIFF)
case("layered", "traffic.pattern-other-bitrev", setv(("traffic", "pattern"), "bitrev"), DIFF)
case("layered", "traffic.pattern-unknown", setv(("traffic", "pattern"), "a2a-nope"), EITHER)
case("layered", "traffic.ranks-plus-16", setv(("traffic", "ranks"), fn=lambda v: v + 16), DIFF)
case("layered", "traffic.ranks-minus-1", setv(("traffic", "ranks"), fn=lambda v: v - 1), DIFF)
case("layered", "traffic.phases-minus-1", setv(("traffic", "phases"), fn=lambda v: v - 1), DIFF)
case("layered", "traffic.phases-plus-1", setv(("traffic", "phases"), fn=lambda v: v + 1), DIFF)
case("layered", "traffic.message_bytes-minus-1", setv(("traffic", "message_bytes"), fn=lambda v: v - 1), DIFF)
case("layered", "traffic.message_bytes-zero", setv(("traffic", "message_bytes"), 0), DIFF)
case("layered", "traffic.selection-int", setv(("traffic", "selection"), 0), BAD)
case("layered", "traffic.selection-null", setv(("traffic", "selection"), None), BAD)
case("layered", "traffic.selection-drops-last-phase", setv(("traffic", "selection"), "0-14"), DIFF)
case("layered", "traffic.selection-one-phase", setv(("traffic", "selection"), "0"), DIFF)
case("layered", "traffic.selection-unparseable", setv(("traffic", "selection"), "zzz"), EITHER)
case("layered", "traffic.selection-out-of-range", setv(("traffic", "selection"), "0-16"), EITHER)
case("dmodk", "traffic.selection-one-more-phase", setv(("traffic", "selection"), "0-4"), DIFF)
case("dmodk", "traffic.selection-one-fewer-phase", setv(("traffic", "selection"), "0-2"), DIFF)
case("dmodk", "traffic.selection-list", setv(("traffic", "selection"), "1,5"), DIFF)
case("dmodk", "traffic.selection-all", setv(("traffic", "selection"), "all"), DIFF)
case("dmodk", "traffic.selection-shifted", setv(("traffic", "selection"), "1-4"), DIFF)
case("layered", "router-unknown", setv(("router",), "magic"), DIFF)
case("dmodk", "router-unknown", setv(("router",), "magic"), DIFF)
case("dmodk", "router-int", setv(("router",), 1), BAD)
case("dmodk", "router-null", setv(("router",), None), BAD)
case("dmodk", "router-layered-without-synthesis", setv(("router",), "layered"), EITHER)
case("layered", "router-dmodk-with-synthesis", setv(("router",), "dmodk"), EITHER)
_SYNTHESIS = {"constraints": "strong", "balance": False, "construction": "halving", "solver": "cpsat",
              "time_limit": None, "threads": 1, "consistency": "flow"}
case("dmodk", "synthesis-added-to-dmodk", setv(("synthesis",), _SYNTHESIS), EITHER)

# The synthesis options of a synthesizing router.
case("layered", "synthesis-not-object", setv(("synthesis",), "strong"), BAD)
case("layered", "synthesis-null", setv(("synthesis",), None), BAD)
case("layered", "synthesis-list", setv(("synthesis",), []), BAD)
case("layered", "synthesis.constraints-unknown", setv(("synthesis", "constraints"), "bogus"), DIFF)
case("layered", "synthesis.construction-unknown", setv(("synthesis", "construction"), "bogus"), DIFF)
case("layered", "synthesis.solver-unknown", setv(("synthesis", "solver"), "nosuch"), DIFF)
case("layered", "synthesis.consistency-unknown", setv(("synthesis", "consistency"), "bogus"), DIFF)
case("layered", "synthesis.constraints-int", setv(("synthesis", "constraints"), 1), BAD)
case("layered", "synthesis.balance-string", setv(("synthesis", "balance"), "false"), BAD)
case("layered", "synthesis.balance-int", setv(("synthesis", "balance"), 0), BAD)
case("layered", "synthesis.time_limit-string", setv(("synthesis", "time_limit"), "5"), BAD)
case("layered", "synthesis.time_limit-bool", setv(("synthesis", "time_limit"), True), BAD)
case("layered", "synthesis.threads-zero", setv(("synthesis", "threads"), 0), EITHER)
case("layered", "synthesis.time_limit-negative", setv(("synthesis", "time_limit"), -1), EITHER)
case("mono", "synthesis.solver-other-than-proof", setv(("synthesis", "solver"), "cbc"), DIFF)

case("dmodk", "seed-string", setv(("seed",), "0"), BAD)
case("dmodk", "seed-float", setv(("seed",), 0.0), BAD)
case("dmodk", "seed-bool", setv(("seed",), False), BAD)
case("dmodk", "seed-null", setv(("seed",), None), BAD)
case("dmodk", "seed-negative", setv(("seed",), -1), BAD)
case("dmodk", "seed-huge", setv(("seed",), HUGE), BAD)

# ----- the phase list ---

case("layered", "phases-not-list", setv(P, {}), BAD)
case("layered", "phases-null", setv(P, None), BAD)
case("layered", "phases-entry-list", setv(ph(4), []), BAD)
case("layered", "phases-entry-null", setv(ph(4), None), BAD)
case("layered", "phases-entry-string", setv(ph(4), "phase 4"), BAD)
case("layered", "phases-empty", setv(P, []), DIFF)
case("layered", "phases-last-removed", chain(delete(ph(15)), resummarize), DIFF)
case("layered", "phases-first-removed", chain(delete(ph(0)), resummarize), DIFF)
case("layered", "phases-middle-removed", chain(delete(ph(7)), resummarize), DIFF)
case("layered", "phases-first-duplicated-at-end", chain(lambda d: d["phases"].append(copy.deepcopy(d["phases"][0])), resummarize), DIFF)
case("layered", "phases-duplicated-in-place", chain(lambda d: d["phases"].insert(4, copy.deepcopy(d["phases"][3])), resummarize), DIFF)
case("layered", "phases-duplicate-replaces-next", chain(_copy_phase(4, 5), resummarize), DIFF)
case("layered", "phases-first-two-swapped", lambda d: d["phases"].__setitem__(slice(0, 2), d["phases"][1::-1]), DIFF)
case("layered", "phases-reversed", lambda d: d["phases"].reverse(), DIFF)
case("layered", "phases-extra-phase-16", chain(lambda d: d["phases"].append({**copy.deepcopy(d["phases"][0]), "phase": 16}),
                                               resummarize), DIFF)
case("layered", "phases-last-renumbered-16", chain(setv(ph(15, "phase"), 16), resummarize), DIFF)
case("layered", "phases-flows-and-paths-of-0-and-1-swapped", _swap_flows_and_paths(0, 1), DIFF)
case("dmodk", "phases-last-removed", chain(delete(ph(3)), resummarize), DIFF)
case("dmodk", "phases-extra-phase-4", chain(lambda d: d["phases"].append({**copy.deepcopy(d["phases"][3]), "phase": 4}),
                                            resummarize), DIFF)
case("dmodk", "phases-renumbered-with-selection", chain(setv(("traffic", "selection"), "1-4"), _renumber(1), resummarize), DIFF)

# ----- phase records: numbers ---

case("layered", "max_contention-plus-1", setv(ph(0, "max_contention"), fn=lambda v: v + 1), DIFF)
case("layered", "max_contention-minus-1", setv(ph(0, "max_contention"), fn=lambda v: v - 1), DIFF)
case("dmodk", "max_contention-minus-1", setv(ph(1, "max_contention"), fn=lambda v: v - 1), DIFF)


def _consistent_contention_lie(doc):
    """Contention raised by one with gap, stage maxima, status and summary all agreeing: only the
    paths can tell."""
    record = doc["phases"][6]
    record["max_contention"] += 1
    record["gap"] += 1
    record["stage_max"][-1] += 1
    record["status"] = "feasible"
    _resummarize(doc)


def _consistent_bound_lie(doc):
    """The bound raised to the contention in a feasible phase, everything else agreeing."""
    record = doc["phases"][1]
    record["lower_bound"] = record["max_contention"]
    record["stage_bounds"][-1] = record["max_contention"]
    record["gap"] = 0
    record["status"] = "optimal"
    _resummarize(doc)


def _consistent_bound_lowered(doc):
    record = doc["phases"][6]
    record["lower_bound"] -= 1
    record["stage_bounds"] = [min(b, record["lower_bound"]) for b in record["stage_bounds"]]
    record["gap"] += 1
    record["status"] = "feasible"
    _resummarize(doc)


case("layered", "max_contention-plus-1-consistent-lie", _consistent_contention_lie, DIFF)
case("dmodk", "lower_bound-raised-to-contention-consistent-lie", _consistent_bound_lie, DIFF)
case("layered", "lower_bound-minus-1-consistent-lie", _consistent_bound_lowered, DIFF)
case("layered", "lower_bound-plus-1", setv(ph(0, "lower_bound"), fn=lambda v: v + 1), DIFF)
case("layered", "lower_bound-minus-1", setv(ph(0, "lower_bound"), fn=lambda v: v - 1), DIFF)
case("dmodk", "lower_bound-plus-1", setv(ph(0, "lower_bound"), fn=lambda v: v + 1), DIFF)
case("layered", "gap-plus-1", setv(ph(0, "gap"), fn=lambda v: v + 1), DIFF)
case("layered", "gap-minus-1", setv(ph(0, "gap"), fn=lambda v: v - 1), DIFF)
case("dmodk", "gap-zero", setv(ph(0, "gap"), 0), DIFF)
case("dmodk", "gap-negated", setv(ph(0, "gap"), fn=lambda v: -v), DIFF)

case("layered", "stage_max-last-plus-1", setv(ph(0, "stage_max", -1), fn=lambda v: v + 1), DIFF)
case("layered", "stage_max-first-minus-1", setv(ph(0, "stage_max", 0), fn=lambda v: v - 1), DIFF)
case("dmodk", "stage_max-last-lowered-to-bound", setv(ph(0, "stage_max", -1), fn=lambda v: v - 1), DIFF)
case("layered", "stage_max-swapped", setv(ph(0, "stage_max"), fn=lambda v: v[::-1]), DIFF)
case("layered", "stage_max-one-entry-appended", setv(ph(0, "stage_max"), fn=lambda v: v + [v[-1]]), DIFF)
case("layered", "stage_max-last-entry-dropped", setv(ph(0, "stage_max"), fn=lambda v: v[:-1]), DIFF)
case("layered", "stage_max-empty", setv(ph(0, "stage_max"), []), DIFF)
case("layered", "stage_max-not-list", setv(ph(0, "stage_max"), 2), BAD)
case("layered", "stage_bounds-last-plus-1", setv(ph(0, "stage_bounds", -1), fn=lambda v: v + 1), DIFF)
case("layered", "stage_bounds-first-minus-1", setv(ph(0, "stage_bounds", 0), fn=lambda v: v - 1), DIFF)
case("layered", "stage_bounds-swapped", setv(ph(0, "stage_bounds"), fn=lambda v: v[::-1]), DIFF)
case("layered", "stage_bounds-one-entry-appended", setv(ph(0, "stage_bounds"), fn=lambda v: v + [v[-1]]), DIFF)
case("layered", "stage_bounds-last-entry-dropped", setv(ph(0, "stage_bounds"), fn=lambda v: v[:-1]), DIFF)
case("layered", "stage_bounds-empty", setv(ph(0, "stage_bounds"), []), DIFF)
case("layered", "stage_bounds-not-list", setv(ph(0, "stage_bounds"), "1,2"), BAD)

# ----- phase records: status, solver report, proof ---

case("layered", "status-optimal-to-feasible", setv(ph(0, "status"), "feasible"), DIFF)
case("layered", "status-optimal-to-timeout", setv(ph(0, "status"), "timeout"), DIFF)
case("dmodk", "status-feasible-to-optimal", setv(ph(0, "status"), "optimal"), DIFF)
case("dmodk", "status-feasible-to-optimal-with-summary", chain(setv(ph(0, "status"), "optimal"), resummarize), DIFF)
case("dmodk", "status-timeout-without-solver", setv(ph(0, "status"), "timeout"), DIFF)
case("mixed", "status-timeout-without-timeouts", chain(setv(ph(2, "status"), "timeout"), resummarize), DIFF)
case("mixed", "status-feasible-with-timeouts", setv(ph(2, "solver", "timeouts"), 1), DIFF)
case("mixed", "status-feasible-to-optimal", chain(setv(ph(2, "status"), "optimal"), resummarize), DIFF)
case("dmodk", "status-unknown", setv(ph(0, "status"), "great"), DIFF)
case("layered", "status-capitalized", setv(ph(0, "status"), "Optimal"), DIFF)
case("layered", "status-int", setv(ph(0, "status"), 1), BAD)
case("layered", "status-null", setv(ph(0, "status"), None), BAD)

case("mixed", "proven_by-added-above-bound-status-optimal",
     chain(setv(ph(2, "proven_by"), "cpsat"), setv(ph(2, "status"), "optimal"), resummarize), DIFF)
case("mixed", "proven_by-added-above-bound-status-feasible", setv(ph(2, "proven_by"), "cpsat"), DIFF)
case("mixed", "proven_by-and-solver-proof-added-by-layered",
     chain(setv(ph(2, "proven_by"), "cpsat"), setv(ph(2, "solver", "proven_by"), "cpsat"), setv(ph(2, "status"), "optimal"),
           resummarize), DIFF)
case("mixed", "proven_by-unknown-solver", chain(setv(ph(2, "proven_by"), "oracle"), setv(ph(2, "status"), "optimal"), resummarize), DIFF)
case("layered", "proven_by-added-by-layered-at-bound", setv(ph(0, "proven_by"), "cpsat"), DIFF)
case("layered", "proven_by-int", setv(ph(0, "proven_by"), 1), BAD)
case("dmodk", "proven_by-added-to-dmodk", chain(setv(ph(0, "proven_by"), "cpsat"), setv(ph(0, "status"), "optimal"), resummarize),
     EITHER)
case("mono", "proven_by-other-solver", setv(ph(0, "proven_by"), "cbc"), DIFF)
case("mono", "proven_by-unknown-solver", setv(ph(0, "proven_by"), "oracle"), DIFF)
case("mono", "proven_by-and-solver-proof-unknown", chain(setv(ph(0, "proven_by"), "oracle"), setv(ph(0, "solver", "proven_by"), "oracle")), DIFF)
case("mono", "proven_by-removed", delete(ph(1, "proven_by")), EITHER)
case("mono", "solver.proven_by-removed", delete(ph(1, "solver", "proven_by")), DIFF)
case("mono", "proven_by-null", setv(ph(0, "proven_by"), None), BAD)
case("layered", "solver.proven_by-added-without-phase-proof", setv(ph(0, "solver", "proven_by"), "cpsat"), DIFF)
case("layered", "solver-not-object", setv(ph(0, "solver"), "cpsat"), BAD)
case("layered", "solver-null", setv(ph(0, "solver"), None), BAD)
case("layered", "solver.relaxed_layers-not-list", setv(ph(0, "solver", "relaxed_layers"), 1), BAD)
case("layered", "solver.relaxed_layers-float-entry", setv(ph(0, "solver", "relaxed_layers"), [1.0]), BAD)
case("layered", "solver.whole_run-int", setv(ph(0, "solver", "whole_run"), 1), BAD)
case("dmodk", "solver-added-to-dmodk",
     setv(ph(0, "solver"), {"subproblems": 1, "split_solved": 1, "direct_solved": 0, "relaxed_layers": [], "timeouts": 0,
                            "backtracks": 0}), EITHER)

# ----- phase records: flows ---

case("layered", "flows-dst-changed", setv(ph(1, "flows", 1, 1), fn=lambda v: (v + 1) % 16), DIFF)
case("layered", "flows-src-changed", setv(ph(1, "flows", 1, 0), fn=lambda v: (v + 1) % 16), DIFF)
case("layered", "flows-bytes-changed", setv(ph(1, "flows", 1, 2), fn=lambda v: v - 1), DIFF)
case("layered", "flows-bytes-zero", setv(ph(1, "flows", 1, 2), 0), DIFF)
case("layered", "flows-rank-out-of-range", setv(ph(1, "flows", 1, 1), 99), DIFF)
case("layered", "flows-one-removed-with-its-path", chain(delete(ph(1, "flows", 1)), delete(ph(1, "paths", 1))), DIFF)
case("layered", "flows-one-duplicated-with-its-path",
     chain(lambda d: d["phases"][1]["flows"].append(d["phases"][1]["flows"][1]),
           lambda d: d["phases"][1]["paths"].append(d["phases"][1]["paths"][1])), DIFF)
case("layered", "flows-all-removed-with-paths", chain(setv(ph(1, "flows"), []), setv(ph(1, "paths"), [])), DIFF)
case("layered", "flows-one-removed-paths-kept", delete(ph(1, "flows", 1)), DIFF)
case("layered", "flows-not-list", setv(ph(1, "flows"), {}), BAD)
case("layered", "flows-null", setv(ph(1, "flows"), None), BAD)
case("layered", "flows-entry-two-values", setv(ph(1, "flows", 1), fn=lambda v: v[:2]), BAD)
case("layered", "flows-entry-four-values", setv(ph(1, "flows", 1), fn=lambda v: v + [0]), BAD)
case("layered", "flows-entry-object", setv(ph(1, "flows", 1), fn=lambda v: dict(zip(("src", "dst", "bytes"), v))), BAD)
case("layered", "flows-entry-string", setv(ph(1, "flows", 1), "1,4,4096"), BAD)
case("layered", "flows-entry-src-float", setv(ph(1, "flows", 1, 0), 1.0), BAD)
case("layered", "flows-entry-src-bool", setv(ph(1, "flows", 1, 0), True), BAD)
case("layered", "flows-entry-bytes-float", setv(ph(1, "flows", 1, 2), 4096.0), BAD)
case("layered", "flows-entry-dst-negative", setv(ph(1, "flows", 1, 1), -4), BAD)

# ----- phase records: paths ---


def _path_index(doc, k, length):
    return next(i for i, p in enumerate(doc["phases"][k]["paths"]) if len(p) == length)


def _edit_path(k, length, edit):
    """Apply edit(path) -> new path to the first path of `length` nodes in phase k."""
    def tamper(doc):
        i = _path_index(doc, k, length)
        doc["phases"][k]["paths"][i] = edit(list(doc["phases"][k]["paths"][i]))
    return tamper


def _replace_top_by_other_leaf(path):
    # [s, leaf, top, leaf', d] -> [s, leaf, top, other leaf, d]: the last hop is not a channel
    s, leaf, top, leaf2, d = path
    other = next(x for x in _children(top) if x not in (leaf, leaf2))
    return [s, leaf, top, other, d]


def _via_terminal(path):
    s, leaf = path[0], path[1]
    other = next(t for t in _children(leaf) if t != s)
    return [s, leaf, other, leaf] + path[2:]


def _via_top(path):
    # an intra-leaf path [s, leaf, d] taken up to a top switch and back: hops exist, not minimal
    s, leaf, d = path
    return [s, leaf, _up_neighbours(leaf)[0], leaf, d]


case("layered", "paths-node-replaced-not-a-channel", _edit_path(1, 5, _replace_top_by_other_leaf), DIFF)
case("layered", "paths-top-switch-replaced-by-leaf", _edit_path(1, 5, lambda p: [p[0], p[1], p[3], p[3], p[4]]), DIFF)
case("layered", "paths-top-switch-replaced-by-terminal", _edit_path(1, 5, lambda p: [p[0], p[1], p[0], p[3], p[4]]), DIFF)
case("layered", "paths-hop-removed", _edit_path(1, 5, lambda p: p[:2] + p[3:]), DIFF)
case("layered", "paths-first-switch-removed", _edit_path(1, 5, lambda p: p[:1] + p[2:]), DIFF)
case("layered", "paths-destination-removed", _edit_path(1, 5, lambda p: p[:-1]), DIFF)
case("layered", "paths-reversed", _edit_path(1, 5, lambda p: p[::-1]), DIFF)
case("layered", "paths-detour-revisits-a-switch", _edit_path(1, 5, lambda p: p[:4] + [p[2], p[3]] + p[4:]), DIFF)
case("layered", "paths-detour-through-a-terminal", _edit_path(1, 5, _via_terminal), DIFF)
case("layered", "paths-not-minimal-via-top", _edit_path(15, 3, _via_top), DIFF)
case("layered", "paths-self-message-detour", _edit_path(0, 1, lambda p: [p[0], _up_neighbours(p[0])[0], p[0]]), DIFF)
case("layered", "paths-self-message-empty", _edit_path(0, 1, lambda p: []), DIFF)
case("layered", "paths-empty", _edit_path(1, 5, lambda p: []), DIFF)
case("layered", "paths-node-out-of-range", _edit_path(1, 5, lambda p: [p[0], p[1], 9999, p[3], p[4]]), DIFF)
case("layered", "paths-node-float", _edit_path(1, 5, lambda p: [p[0], float(p[1])] + p[2:]), BAD)
case("layered", "paths-node-bool", _edit_path(1, 5, lambda p: [bool(p[0]) if p[0] in (0, 1) else True] + p[1:]), BAD)
case("layered", "paths-node-string", _edit_path(1, 5, lambda p: [str(p[0])] + p[1:]), BAD)
case("layered", "paths-node-null", _edit_path(1, 5, lambda p: [p[0], None] + p[2:]), BAD)
case("layered", "paths-node-negative", _edit_path(1, 5, lambda p: [p[0], -p[1]] + p[2:]), BAD)
case("layered", "paths-nested-list", _edit_path(1, 5, lambda p: [p]), BAD)
case("layered", "paths-entry-string", _edit_path(1, 5, lambda p: " ".join(map(str, p))), BAD)
case("layered", "paths-not-list", setv(ph(1, "paths"), {}), BAD)
case("layered", "paths-null", setv(ph(1, "paths"), None), BAD)
case("layered", "paths-two-swapped", lambda d: d["phases"][1]["paths"].__setitem__(slice(1, 3), d["phases"][1]["paths"][2:0:-1]), DIFF)
case("layered", "paths-one-removed", delete(ph(1, "paths", -1)), DIFF)
case("layered", "paths-one-extra", lambda d: d["phases"][1]["paths"].append(d["phases"][1]["paths"][1]), DIFF)
case("dmodk", "paths-node-replaced-not-a-channel", _edit_path(1, 5, _replace_top_by_other_leaf), DIFF)

# ----- summary ---

for key in ("phases", "max_contention", "worst_phase", "max_lower_bound", "phases_at_bound", "phases_above_bound", "max_gap",
            "sum_max_contention", "sum_lower_bound"):
    case("mixed", f"summary.{key}-plus-1", setv(("summary", key), fn=lambda v: v + 1), DIFF)
    case("mixed", f"summary.{key}-minus-1", setv(("summary", key), fn=lambda v: v - 1), DIFF)
case("mixed", "summary.statuses-feasible-dropped", setv(("summary", "statuses"), {"optimal": 16}), DIFF)
case("mixed", "summary.statuses-counts-swapped", setv(("summary", "statuses"), {"optimal": 1, "feasible": 15}), DIFF)
case("mixed", "summary.statuses-zero-timeout-added", setv(("summary", "statuses", "timeout"), 0), DIFF)
case("mixed", "summary.statuses-empty", setv(("summary", "statuses"), {}), DIFF)
case("mixed", "summary.statuses-unknown-status", setv(("summary", "statuses", "great"), 1), EITHER)
case("mixed", "summary.statuses-not-object", setv(("summary", "statuses"), [15, 1]), BAD)
case("mixed", "summary.statuses-count-negative", setv(("summary", "statuses", "optimal"), -15), BAD)
case("mixed", "summary-not-object", setv(("summary",), []), BAD)
case("mixed", "summary-null", setv(("summary",), None), BAD)
_DMODK_SUMMARY = {"phases": 4, "max_contention": 3, "worst_phase": 0, "max_lower_bound": 2, "phases_at_bound": 0,
                  "phases_above_bound": 4, "max_gap": 1, "sum_max_contention": 12, "sum_lower_bound": 8,
                  "statuses": {"feasible": 4}}
case("mixed", "summary-of-another-file", setv(("summary",), _DMODK_SUMMARY), DIFF)


# ----- tests ------------------------------------------------------------------------------------

def _timed_out(doc):
    """A phase above its bound after a solver call ran out of time: status `timeout` is right."""
    doc["phases"][2]["solver"]["timeouts"] = 1
    doc["phases"][2]["status"] = "timeout"
    _resummarize(doc)


@pytest.mark.parametrize("name", ["layered", "dmodk", "mono", "mixed", "mixed-timeout"])
def test_untampered_baseline_passes(docs, tmp_path, capsys, name):
    doc = copy.deepcopy(docs[name.split("-")[0]])
    if name == "mixed-timeout":
        _timed_out(doc)
    code, out, err = _run_check(tmp_path, capsys, json.dumps(doc).encode("utf-8"))
    assert code == 0, f"stdout:\n{out}\nstderr:\n{err}"
    assert out.splitlines()[-1].startswith("OK:") and err == ""


def test_fixture_as_written_passes(docs, tmp_path, capsys):
    """The writer's own layout (one path per line) reads like its json.dumps form."""
    target = tmp_path / "written.json"
    assert main(["route", SPEC, "--traffic", "a2a-opt", "--phase", "0-3", "--router", "dmodk", "--out", str(target),
                 "--quiet"]) == 0
    written = json.loads(target.read_text())
    assert written["traffic"].get("selection") == "0-3"
    capsys.readouterr()
    assert main(["check", str(target)]) == 0


@pytest.mark.parametrize("name, tamper, expected", CASES)
def test_tampered_file_is_refused(docs, tmp_path, capsys, name, tamper, expected):
    doc = copy.deepcopy(docs[name])
    result = tamper(doc)
    data = result if isinstance(result, bytes) else json.dumps(doc).encode("utf-8")
    assert data != json.dumps(docs[name]).encode("utf-8"), "the tamper changed nothing"
    code, out, err = _run_check(tmp_path, capsys, data)
    _assert_outcome(code, out, err, expected)


@pytest.mark.parametrize("what", ["missing", "directory"])
def test_unreadable_path(tmp_path, capsys, what):
    target = tmp_path / "nothing.json"
    if what == "directory":
        target.mkdir()
    capsys.readouterr()
    code = main(["check", str(target)])
    out, err = capsys.readouterr()
    _assert_outcome(code, out, err, BAD)


def test_case_ids_are_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)) and len(ids) >= 45


# ----- channel paths (synth-routes/2) -------------------------------------------------------------

def _channel(src: int, dst: int) -> int:
    return int(NETWORK.find_channels([src], [dst])[0])


def _through_other_top(path: list[int]) -> list[int]:
    """t -> leaf -> top -> leaf -> t, with the top switch replaced: both middle channels exist but
    no longer meet (the first enters one top switch, the second leaves the other)."""
    leaf, top = int(NETWORK.channel_dst[path[0]]), int(NETWORK.channel_dst[path[1]])
    other = next(u for u in _up_neighbours(leaf) if u != top)
    return [path[0], _channel(leaf, other), path[2], path[3]]


def _via_terminal(path: list[int]) -> list[int]:
    """Down to a terminal of the source leaf and up again before climbing: contiguous, passes a terminal."""
    source, leaf = int(NETWORK.channel_src[path[0]]), int(NETWORK.channel_dst[path[0]])
    other = next(t for t in _children(leaf) if t != source)
    return [path[0], _channel(leaf, other), _channel(other, leaf)] + path[1:]


def _up_and_back(path: list[int]) -> list[int]:
    """A same-leaf path (t -> leaf -> t) lengthened through a top switch: contiguous, not minimal."""
    leaf = int(NETWORK.channel_dst[path[0]])
    top = _up_neighbours(leaf)[0]
    return [path[0], _channel(leaf, top), _channel(top, leaf), path[1]]


def _edit_channels(phase: int, length: int, edit):
    """Apply edit(path) -> new path to the first path of `length` channels in phase `phase`."""
    def apply(doc):
        paths = doc["phases"][phase]["paths"]
        i = next(i for i, p in enumerate(paths) if len(p) == length)
        paths[i] = edit(list(paths[i]))
    return apply


CHANNEL_CASES = [
    ("channel-replaced-not-contiguous", _edit_channels(1, 4, _through_other_top), DIFF),
    ("channel-removed", _edit_channels(1, 4, lambda p: p[:1] + p[2:]), DIFF),
    ("last-channel-removed", _edit_channels(1, 4, lambda p: p[:-1]), DIFF),
    ("channels-reversed", _edit_channels(1, 4, lambda p: p[::-1]), DIFF),
    ("reverse-channels", _edit_channels(1, 4, lambda p: [int(_channel(NETWORK.channel_dst[c], NETWORK.channel_src[c]))
                                                        for c in p]), DIFF),
    ("through-a-terminal", _edit_channels(1, 4, _via_terminal), DIFF),
    ("not-minimal", _edit_channels(15, 2, _up_and_back), DIFF),
    ("self-message-gets-a-channel", _edit_channels(0, 0, lambda p: [_channel(1, 16)]), DIFF),
    ("path-empty", _edit_channels(1, 4, lambda p: []), DIFF),
    ("channel-out-of-range", _edit_channels(1, 4, lambda p: [p[0], NETWORK.num_channels] + p[2:]), DIFF),
    ("channel-float", _edit_channels(1, 4, lambda p: [float(p[0])] + p[1:]), BAD),
    ("channel-negative", _edit_channels(1, 4, lambda p: [-1] + p[1:]), BAD),
    ("channel-bool", _edit_channels(1, 4, lambda p: [True] + p[1:]), BAD),
    ("node-ids-in-a-version-2-file", lambda d: legacy_routes(d).__setitem__("format", "synth-routes/2"), DIFF),
]


@pytest.fixture(scope="module")
def channel_doc(tmp_path_factory) -> dict:
    target = tmp_path_factory.mktemp("channel-fixture") / "layered.json"
    assert main(["route", SPEC, "--traffic", "a2a-opt", "--router", "layered", "--out", str(target), "--quiet"]) == 0
    doc = json.loads(target.read_text())
    assert doc["format"] == "synth-routes/2"
    lengths = [{len(p) for p in doc["phases"][k]["paths"]} for k in (0, 1, 15)]
    assert 0 in lengths[0] and 4 in lengths[1] and 2 in lengths[2]
    return doc


def test_channel_baseline_passes(channel_doc, tmp_path, capsys):
    code, out, err = _run_check(tmp_path, capsys, json.dumps(channel_doc).encode("utf-8"))
    assert code == 0 and out.splitlines()[-1].startswith("OK:"), out + err


@pytest.mark.parametrize("name, tamper, expected", CHANNEL_CASES, ids=[c[0] for c in CHANNEL_CASES])
def test_tampered_channel_path_is_refused(channel_doc, tmp_path, capsys, name, tamper, expected):
    doc = copy.deepcopy(channel_doc)
    tamper(doc)
    data = json.dumps(doc).encode("utf-8")
    assert data != json.dumps(channel_doc).encode("utf-8"), "the tamper changed nothing"
    code, out, err = _run_check(tmp_path, capsys, data)
    _assert_outcome(code, out, err, expected)


@settings(max_examples=15, deadline=None)
@given(phase=st.integers(0, 5), flow=st.integers(0, 5), change=st.sampled_from(["drop", "bytes", "swap"]))
def test_a_flow_changed_in_a_file_whose_traffic_matrix_is_gone_fails_check(tmp_path_factory, phase, flow, change):
    """check cannot regenerate a csv matrix that is no longer there: the digest of the flows the file
    was written with (summary.flows_sha256) still sees a flow dropped or changed."""
    import contextlib
    import io

    from synth.cli import main

    where = tmp_path_factory.mktemp("csv")
    matrix = where / "t.csv"
    matrix.write_text("".join(f"{s},{(s + k) % 6},{100 * k},{k - 1}\n" for k in range(1, 6) for s in range(6)))
    routes = where / "r.json"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["route", "dragonfly:1,2,1", "--traffic", f"csv:{matrix}", "--router", "minimal", "--out", str(routes),
                     "--quiet"]) == 0
    matrix.unlink()
    doc = json.loads(routes.read_text())
    entry = doc["phases"][phase % len(doc["phases"])]
    k = flow % len(entry["flows"])
    if change == "drop":
        entry["flows"].pop(k)
        entry["paths"].pop(k)
    elif change == "bytes":
        entry["flows"][k][2] += 1
    else:
        entry["flows"][k][0], entry["flows"][k][1] = entry["flows"][k][1], entry["flows"][k][0]
        entry["paths"][k] = []  # (whatever the path: the flow itself is not the one written)
    routes.write_text(json.dumps(doc))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["check", str(routes)])
    assert code == 1 and "flows_sha256" in out.getvalue()
