"""The routes file (`synth-routes/2`): written as a stream, phase by phase, and read back.

    {"format": "synth-routes/2",
     "topology": {"spec": ...},
     "traffic": {"pattern", "ranks", "phases", "message_bytes", "selection", "placement" (if not contiguous)},
     "router": ..., "seed": ..., "synthesis": {...} (layered, monolithic and paths only; paths routed
     within a lane budget, `route --vls N`, record it as "lanes": N),
     "phases": [{"phase", "max_contention", "lower_bound", "gap", "status", "stage_max", "stage_bounds",
                 "bound_source" (when lower_bound is more than the cut bounds: "LP", "SOLVER proof"),
                 "solver": {...}, "proven_by": ... (synthesizing routers),
                 "flows": [[src, dst, bytes]...], "paths": [[channel ids]...],
                 "vls": [lane per path] (route --vls, synth vls)}...],
     "summary": {...}}

Paths are the channel ids of `synth topology --format json` for the same spec, in travel order
(a message to itself has the empty path), so parallel links are told apart and any family fits.
Files of the first version, `synth-routes/1`, whose paths list node ids, are still read. The
writer streams into a temporary file of synth.core.output, so a failed run leaves no partial
file; nothing in the file depends on the clock, so a rerun writes the same bytes.

The same content has a compact form, HDF5 (synth.io.routes_hdf5), written for an output named
.h5 or .hdf5 (open_routes_writer) and recognized by its first bytes. Both readers give the
columnar document (read_routes_columnar): the JSON file's fields, with every phase's flows as an
(n, 3) int64 array, its paths as a synth.topology.paths.Paths (CSR: offsets into one array of
channel ids) and its lanes as an array, which synth check and synth tables consume without a
Python object per flow; read_routes gives the JSON form (lists) of either file.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from contextlib import contextmanager
from typing import IO

import numpy as np

from synth.core.errors import SynthError
from synth.routing.lanes import MAX_VLS  # the lanes a file may record
from synth.core.validate import INT64_MAX, check_keys, read_json, require_int, require_list, require_str, require_table, show
from synth.topology.paths import Paths

FORMAT = "synth-routes/2"
NODE_PATHS_FORMAT = "synth-routes/1"  # paths as node ids: read, no longer written
FORMATS = (NODE_PATHS_FORMAT, FORMAT)


def _dump(value) -> str:
    return json.dumps(value, separators=(",", ":"))


def routes_header(topology, workload, selection: str, router: str, seed: int, load_unit: str = "messages",
                  synthesis: dict | None = None) -> dict:
    """A routes file's header: what its routes depend on (also a checkpoint's inputs)."""
    digest = topology.source_digest()
    header = {"topology": {"spec": topology.spec, **({"file_sha256": digest} if digest else {})}, "traffic": {**workload.describe(), "selection": selection},
              "router": router, "seed": seed, **({"load_unit": "bytes"} if load_unit == "bytes" else {})}
    if synthesis is not None:
        header["synthesis"] = synthesis
    return header


def add_flows_to_digest(digest, phase: int, flows) -> None:
    """Phase `phase`'s flows [[src, dst, bytes], ...] into a running sha256, in a canonical order (the
    rows sorted), so that the digest names the flows whatever order a phase lists them in."""
    rows = np.asarray(flows, dtype=np.int64).reshape(-1, 3)
    rows = rows[np.lexsort(rows.T[::-1])] if len(rows) else rows
    digest.update(np.int64(phase).tobytes() + np.int64(len(rows)).tobytes() + np.ascontiguousarray(rows).tobytes())


class RoutesWriter:
    """Writes the header at construction, one phase per `add_phase`, the summary at `close` (with
    the digest of every phase's flows: `synth check` then sees a flow dropped from a file whose
    traffic it cannot regenerate, a traffic matrix that is gone)."""

    def __init__(self, handle: IO[str], header: dict):
        self._handle = handle
        self._size = 0  # characters written: bytes, since json.dumps writes ASCII
        self._first = True
        self._flows = hashlib.sha256()
        head = {"format": FORMAT, **header}
        self._write("{\n")
        for key, value in head.items():
            self._write(f"{_dump(key)}: {_dump(value)},\n")
        self._write('"phases": [\n')

    def add_phase(self, record: dict) -> None:
        """`record` holds phase, flows (an (n, 3) array or [[src, dst, bytes], ...]), paths (a Paths or
        lists of channel ids), vls (optional: an array or a list) and the evaluation fields; paths go
        one per line."""
        fields = {k: v for k, v in record.items() if k not in ("flows", "paths", "vls")}
        flows, paths = record["flows"], record["paths"]
        add_flows_to_digest(self._flows, record["phase"], flows)
        flows = flows.tolist() if isinstance(flows, np.ndarray) else flows
        paths = paths.as_lists() if isinstance(paths, Paths) else paths
        body = ", ".join(f"{_dump(k)}: {_dump(v)}" for k, v in fields.items())
        self._write("" if self._first else ",\n")
        self._first = False
        self._write("{" + body + ',\n "flows": ' + _dump(flows) + ',\n "paths": [')
        self._write(",\n  ".join(_dump(p) for p in paths))
        lanes = record.get("vls")
        lanes = lanes.tolist() if isinstance(lanes, np.ndarray) else lanes
        self._write("]" + (',\n "vls": ' + _dump(lanes) if "vls" in record else "") + "}")

    def _write(self, text: str) -> None:
        # synth never writes a file its reader refuses: read_routes reads MAX_FILE_BYTES of JSON at most
        self._size += len(text)
        if self._size > MAX_FILE_BYTES:
            raise SynthError(f"the JSON routes file would have more than the {MAX_FILE_BYTES:,} bytes synth reads whole: "
                             f"not written{TOO_BIG_HINT}")
        self._handle.write(text)

    def close(self, summary: dict) -> None:
        summary = {**summary, FLOWS_DIGEST: self._flows.hexdigest()}
        self._write(f'\n],\n"summary": {_dump(summary)}\n}}\n')


@contextmanager
def open_routes_writer(target, header: dict):
    """The writer of a reserved output (synth.core.output.Output, written into its temporary): the
    compact HDF5 form (synth.io.routes_hdf5) for a target named .h5 or .hdf5, JSON otherwise. Both
    take `add_phase(record)` and `close(summary)` and write the same content, flows digest included."""
    from synth.io.routes_hdf5 import RoutesHdf5Writer, wants_hdf5

    if wants_hdf5(target.target):
        writer = RoutesHdf5Writer(target.tmp, header, shown=target.target)
        try:
            yield writer
        finally:
            writer.release()
    else:
        with target.open() as handle:
            yield RoutesWriter(handle, header)


def write_routes_json(handle: IO[str], doc: dict) -> None:
    """A routes document (either form, e.g. read from a compact file) as the JSON file: the bytes
    `synth route --out FILE.json` writes for the same routes."""
    writer = RoutesWriter(handle, {k: v for k, v in doc.items() if k not in ("format", "phases", "summary")})
    for record in doc["phases"]:
        writer.add_phase(record)
    writer.close(doc["summary"])


def routes_json_text(doc: dict) -> str:
    handle = io.StringIO()
    write_routes_json(handle, doc)
    return handle.getvalue()


# A JSON routes file is parsed whole (about 1 KiB of memory per flow); larger files are refused before
# reading. The compact form (synth.io.routes_hdf5) has no such limit: its reader plans the memory of
# its arrays (a few hundred bytes per flow with its path, to read and check) from their shapes.
MAX_FILE_BYTES = 2 << 30
TOO_BIG_HINT = "; route fewer phases per file (--phase), or write the compact form (--out FILE.h5)"

_TOP = ("format", "topology", "traffic", "router", "seed", "load_unit", "synthesis", "phases", "summary")
LOAD_UNITS = ("messages", "bytes")  # load_unit: what contention counts (absent: messages)
_TOP_REQUIRED = ("format", "topology", "traffic", "router", "seed", "phases", "summary")
_TRAFFIC_REQUIRED = ("pattern", "ranks", "phases", "message_bytes", "selection")
_TRAFFIC = _TRAFFIC_REQUIRED + ("placement",)
_PHASE = ("phase", "max_contention", "lower_bound", "gap", "status", "stage_max", "stage_bounds", "bound_source",
          "solver", "proven_by", "unreachable", "flows", "paths", "vls")
_PHASE_REQUIRED = ("phase", "max_contention", "lower_bound", "gap", "status", "stage_max", "stage_bounds", "flows", "paths")
SUMMARY_COUNTS = ("phases", "max_contention", "worst_phase", "max_lower_bound", "phases_at_bound", "phases_above_bound",
                  "max_gap", "sum_max_contention", "sum_lower_bound")
FLOWS_DIGEST = "flows_sha256"  # of every phase's flows as written (add_flows_to_digest)
_SUMMARY = SUMMARY_COUNTS + ("statuses", FLOWS_DIGEST)


def _router_spec(doc: dict):
    """The registry's entry of the file's router on its network (None when either is unknown:
    synth.checking.routes says so)."""
    from synth.routing.registry import ROUTERS
    from synth.topology import parse_topology

    try:
        kind = parse_topology(doc["topology"]["spec"]).routing_kind
    except SynthError:
        return None
    return ROUTERS.find(doc["router"], kind)


def routes_topology(doc: dict):
    """The Topology of a routes document's spec; for a network read from a file (`fabric:`, `graph:`), refused in
    one line when the file is not the one the routes were made on (its SHA-256 differs)."""
    from synth.topology import parse_topology

    topology = parse_topology(doc["topology"]["spec"])
    recorded, actual = doc["topology"].get("file_sha256"), topology.source_digest()
    if recorded is not None and actual is None:
        raise SynthError(f"the routes' topology.file_sha256 is for a network read from a file; "
                         f"{doc['topology']['spec']} is not one")
    if recorded is None and actual is not None:
        raise SynthError(f"the routes of {doc['topology']['spec']} record no topology.file_sha256, so whether its file "
                         f"changed since cannot be told: route it again")
    if recorded is not None and actual != recorded:
        raise SynthError(f"the file of {doc['topology']['spec']} changed since these routes were made (SHA-256 "
                         f"{recorded[:12]}... then, {str(topology.source_digest())[:12]}... now): route it again")
    return topology


def read_routes(path: str) -> dict:
    """Load a routes file (either form) and check its shape and types strictly: every required field
    present, no unknown field, integers that are integers (not bools, not floats) within int64.
    Anything else is a user error (exit code 2) naming the field; whether the values are right is
    what synth.checking.routes decides. Flows, paths and lanes as the JSON file lists them (a
    compact file's arrays made lists: read_routes_columnar keeps them arrays)."""
    from synth.io.routes_hdf5 import LIST_BYTES_PER_FLOW, is_hdf5

    if is_hdf5(path):
        return as_lists(_read_compact(path, LIST_BYTES_PER_FLOW))
    where = f"routes file '{path}'"
    doc = read_json(path, where, "routes file", MAX_FILE_BYTES, TOO_BIG_HINT)
    _check_shape(doc, where)
    return doc


def read_routes_columnar(path: str) -> dict:
    """A routes file in either form, checked as read_routes checks it, as the columnar document
    (see columnar): what `synth check` and `synth tables` read."""
    from synth.io.routes_hdf5 import is_hdf5

    if is_hdf5(path):
        return _read_compact(path)
    where = f"routes file '{path}'"
    doc = read_json(path, where, "routes file", MAX_FILE_BYTES, TOO_BIG_HINT)
    _check_shape(doc, where)
    for i, record in enumerate(doc["phases"]):  # (in place: each phase's lists are freed as it is converted)
        doc["phases"][i] = _columnar_phase(record)
    return doc


def _read_compact(path: str, bytes_per_flow: int = 0) -> dict:
    from synth.io.routes_hdf5 import read_routes_hdf5

    where = f"routes file '{path}'"
    doc = read_routes_hdf5(path, where, bytes_per_flow)  # the arrays checked there, the fields here
    _check_shape(doc, where)
    return doc


def is_columnar(doc: dict) -> bool:
    return all(isinstance(record["paths"], Paths) for record in doc["phases"])


def columnar(doc: dict) -> dict:
    """A shape-checked routes document with every phase's flows as an (n, 3) int64 array, its paths
    as a Paths (offsets into one array of ids: channel ids, node ids in synth-routes/1) and its
    lanes (vls) as an int8 array; the other fields as they are. A document in that form already is
    returned as it is, another converted into a new one (the caller's lists are left alone)."""
    if is_columnar(doc):
        return doc
    return {**doc, "phases": [_columnar_phase(record) for record in doc["phases"]]}


def _columnar_phase(record: dict) -> dict:
    if isinstance(record["paths"], Paths):
        return record
    out = {**record, "flows": np.asarray(record["flows"], dtype=np.int64).reshape(-1, 3),
           "paths": Paths.from_lists(record["paths"])}
    if "vls" in record:
        out["vls"] = np.asarray(record["vls"], dtype=np.int8)
    return out


def as_lists(doc: dict) -> dict:
    """A columnar document in the JSON file's form: flows, paths and vls as lists."""
    def listed(record: dict) -> dict:
        if not isinstance(record["paths"], Paths):
            return record
        out = {**record, "flows": record["flows"].tolist(), "paths": record["paths"].as_lists()}
        if "vls" in record:
            out["vls"] = record["vls"].tolist()
        return out

    return {**doc, "phases": [listed(record) for record in doc["phases"]]}


def _check_shape(doc, where: str) -> None:
    if not isinstance(doc, dict) or "format" not in doc:
        raise SynthError(f"{where} is not a synth routes file (no \"format\" field)")
    if doc["format"] not in FORMATS:
        raise SynthError(f"{where} has format {show(doc['format'])}, expected one of {', '.join(FORMATS)}")
    check_keys(doc, where, _TOP, _TOP_REQUIRED)
    topology = require_table(doc["topology"], f"{where}: topology")
    check_keys(topology, f"{where}: topology", ("spec", "file_sha256"), ("spec",))
    require_str(topology["spec"], f"{where}: topology.spec")
    if "file_sha256" in topology:
        require_str(topology["file_sha256"], f"{where}: topology.file_sha256")
        if not re.fullmatch(r"[0-9a-f]{64}", topology["file_sha256"]):
            raise SynthError(f"{where}: topology.file_sha256 is not a SHA-256 digest (64 lowercase hex digits)")
    traffic = require_table(doc["traffic"], f"{where}: traffic")
    check_keys(traffic, f"{where}: traffic", _TRAFFIC, _TRAFFIC_REQUIRED)
    if "placement" in traffic:
        require_str(traffic["placement"], f"{where}: traffic.placement")
    require_str(traffic["pattern"], f"{where}: traffic.pattern")
    require_str(traffic["selection"], f"{where}: traffic.selection")
    for key in ("ranks", "phases", "message_bytes"):
        require_int(traffic[key], f"{where}: traffic.{key}")
    require_str(doc["router"], f"{where}: router")
    require_int(doc["seed"], f"{where}: seed")
    if "load_unit" in doc and doc["load_unit"] not in LOAD_UNITS:
        raise SynthError(f"{where}: load_unit is {show(doc['load_unit'])}, expected one of {', '.join(LOAD_UNITS)}")
    # A synthesizing run records its options, and then a solver report per phase; whether the
    # router is one that synthesizes (or one synth knows) is synth.checking.routes's question.
    spec = _router_spec(doc)
    if spec is not None and spec.synthesizes and "synthesis" not in doc:
        raise SynthError(f"{where}: router {show(doc['router'])} without its synthesis options")
    synthesizing = "synthesis" in doc
    schema = spec.file_schema if spec is not None else None
    if synthesizing and schema is not None:
        _check_synthesis(doc["synthesis"], f"{where}: synthesis", schema)
    for i, record in enumerate(require_list(doc["phases"], f"{where}: phases")):
        _check_phase(record, f"{where}: phases[{i}]", synthesizing, doc["format"] == NODE_PATHS_FORMAT, schema)
    summary = require_table(doc["summary"], f"{where}: summary")
    required = _SUMMARY if doc["format"] == FORMAT else SUMMARY_COUNTS + ("statuses",)  # (/1 files predate the digest)
    check_keys(summary, f"{where}: summary", _SUMMARY, required)
    if FLOWS_DIGEST in summary:
        digest = require_str(summary[FLOWS_DIGEST], f"{where}: summary.{FLOWS_DIGEST}")
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise SynthError(f"{where}: summary.{FLOWS_DIGEST} must be a sha256 in hex, got {show(digest)}")
    for key in SUMMARY_COUNTS:
        require_int(summary[key], f"{where}: summary.{key}", None)
    for status, count in require_table(summary["statuses"], f"{where}: summary.statuses").items():
        require_int(count, f"{where}: summary.statuses.{status}")


def _check_synthesis(synthesis, where: str, schema) -> None:
    """Types only (the router's FileSchema, synth.routing.registry); whether the values are options
    synth has is synth.checking.routes's question."""
    require_table(synthesis, where)
    keys, optional = schema.synthesis, schema.synthesis_optional
    check_keys(synthesis, where, keys + optional, keys)
    for key in optional:
        if key in synthesis:
            require_int(synthesis[key], f"{where}.{key}", 1, MAX_VLS)
    for key in schema.synthesis_str:
        require_str(synthesis[key], f"{where}.{key}")
    for key in schema.synthesis_flags:
        if type(synthesis[key]) is not bool:
            raise SynthError(f"{where}.{key} must be true or false, got {show(synthesis[key])}")
    require_int(synthesis["threads"], f"{where}.threads", None)
    limit = synthesis["time_limit"]
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float))):
        raise SynthError(f"{where}.time_limit must be a number of seconds or null, got {show(limit)}")


def _check_phase(record, where: str, synthesizing: bool, node_paths: bool, schema=None) -> None:
    require_table(record, where)
    # a phase without flows (every flow cut off by failures) asked no solver anything
    solved = synthesizing and isinstance(record, dict) and _has_flows(record.get("flows"))
    check_keys(record, where, _PHASE, _PHASE_REQUIRED + (("solver",) if solved else ()))
    if "solver" in record and not synthesizing:
        raise SynthError(f"{where}: a solver report in a file without synthesis options")
    require_int(record["phase"], f"{where}.phase")
    for key in ("max_contention", "lower_bound"):
        require_int(record[key], f"{where}.{key}")
    require_int(record["gap"], f"{where}.gap", None)
    if "unreachable" in record:
        require_int(record["unreachable"], f"{where}.unreachable")
    require_str(record["status"], f"{where}.status")
    for key in ("stage_max", "stage_bounds"):
        for k, value in enumerate(require_list(record[key], f"{where}.{key}")):
            require_int(value, f"{where}.{key}[{k}]")
    if "proven_by" in record:
        require_str(record["proven_by"], f"{where}.proven_by")
    if "bound_source" in record:
        require_str(record["bound_source"], f"{where}.bound_source")
    if "solver" in record:
        solver = require_table(record["solver"], f"{where}.solver")
    if "solver" in record and schema is not None:  # (a router synth does not have: synth check says so)
        check_keys(solver, f"{where}.solver", schema.counts + schema.optional_counts + schema.strings + schema.flags
                   + schema.lists, schema.counts + schema.required)
        for key in schema.counts + tuple(k for k in schema.optional_counts if k in solver):
            require_int(solver[key], f"{where}.solver.{key}")
        for key in schema.strings:
            if key in solver and key not in schema.lists:
                require_str(solver[key], f"{where}.solver.{key}")
        for key in schema.flags:
            if key in solver and type(solver[key]) is not bool:
                raise SynthError(f"{where}.solver.{key} must be true or false, got {show(solver[key])}")
        for key in schema.lists:
            for k, value in enumerate(require_list(solver[key], f"{where}.solver.{key}")):
                require_int(value, f"{where}.solver.{key}[{k}]")
    if isinstance(record["flows"], np.ndarray):  # a compact file's arrays: checked by synth.io.routes_hdf5
        return
    flows = require_list(record["flows"], f"{where}.flows")
    for k, flow in enumerate(flows):
        if type(flow) is not list or len(flow) != 3 or not all(type(v) is int and 0 <= v <= INT64_MAX for v in flow):
            raise SynthError(f"{where}.flows[{k}] must be [src, dst, bytes] non-negative integers, got {show(flow)}")
    paths = require_list(record["paths"], f"{where}.paths")
    for k, path in enumerate(paths):
        if type(path) is not list or not all(type(v) is int and 0 <= v <= INT64_MAX for v in path):
            ids = "node ids" if node_paths else "channel ids"
            raise SynthError(f"{where}.paths[{k}] must be a list of {ids} (non-negative integers), got {show(path)}")
    if "vls" in record:
        if node_paths:
            raise SynthError(f"{where}.vls: virtual lanes need a synth-routes/2 file")
        vls = require_list(record["vls"], f"{where}.vls")
        if len(vls) != len(paths):
            raise SynthError(f"{where}.vls has {len(vls)} lanes for {len(paths)} paths")
        for k, lane in enumerate(vls):
            if type(lane) is not int or not 0 <= lane < MAX_VLS:
                raise SynthError(f"{where}.vls[{k}] must be a virtual lane 0..{MAX_VLS - 1}, got {show(lane)}")


def _has_flows(flows) -> bool:
    return len(flows) > 0 if isinstance(flows, np.ndarray) else bool(flows)
