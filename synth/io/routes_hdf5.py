"""The routes file in its compact form: `synth-routes/2` as HDF5 (docs/formats.md), for routes too large
for JSON to be practical (the d-mod-k routes of the 1024-leaf exchange, a million flows, are about 200 MB of
JSON, which `synth check` parses whole at about 1 KiB of memory per flow).

The same content as the JSON file: what varies with the router (the header's synthesis options, every
phase's evaluation fields and solver report) stays JSON text, a few hundred bytes per phase, checked by
the same reader code as the JSON file's (synth.io.routes_file); the per-flow data, nearly all of the file,
are arrays concatenated over the phases: the flows as int64 columns, the paths in CSR form (offsets into
one array of channel ids, the layout of synth.topology.paths.Paths), the lanes when the routes have them.

Layout (every name below is required, `vls` only with lanes; nothing else may be in the file):

- root attributes (text): `format` ("synth-routes/2"), `header` (a JSON object: every field of the JSON
  file before `phases`, in its order: topology, traffic, router, seed, load_unit, synthesis), `summary`
  (the JSON file's summary object, flows_sha256 included);
- `phase_fields` (phases,) UTF-8 text: phase k's JSON object without flows, paths and vls;
- `flow_ptr` (phases + 1,) int64: phase k's flows are rows flow_ptr[k] .. flow_ptr[k+1] - 1;
- `src`, `dst`, `bytes` (flows,) int64: the rows [src, dst, bytes] of the JSON file;
- `path_ptr` (flows + 1,) int64, `channels` (hops,) int32: flow i's path is
  channels[path_ptr[i] : path_ptr[i+1]] (offsets over the whole file, not per phase);
- `vls` (flows,) int8: every path's virtual lane (route --vls, synth vls).

Written a phase at a time (only the phases' small JSON fields wait for the end): the arrays grow by whole
chunks of CHUNK entries (shuffle + gzip level 1), so the layout does not depend on how the flows fall
into phases, and carry no timestamps (track_times=False, libver earliest): the same routes give the same
bytes. Read strictly: every attribute, dataset, dtype and shape, every offset and every entry's range is
checked (one line naming it, exit 2), the memory planned from the shapes before any array is read; what
the values mean (ranks of the network, channels that exist, paths that connect) is synth check's
question, as for the JSON file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json

import numpy as np

from synth.core import memory
from synth.core.errors import SynthError
from synth.core.text import counted
from synth.io.routes_file import FLOWS_DIGEST, FORMAT, MAX_VLS, add_flows_to_digest
from synth.topology.paths import Paths

SIGNATURE = b"\x89HDF\r\n\x1a\n"  # the first bytes of every HDF5 file
EXTENSIONS = (".h5", ".hdf5")
CHUNK = 1 << 16  # entries per chunk of every array (written whole, read a slice of READ_SLICE at a time)
READ_SLICE = 1 << 22  # entries read at a time (a signal is handled between slices)
ATTRIBUTES = ("format", "header", "summary")
FLOW_COLUMNS = ("src", "dst", "bytes")
DATASETS = ("phase_fields", "flow_ptr") + FLOW_COLUMNS + ("path_ptr", "channels")
OPTIONAL_DATASETS = ("vls",)
_IN_DATASETS = ("flows", "paths", "vls")  # a phase's fields that are datasets, not JSON text
_INT64_MAX = np.iinfo(np.int64).max
_INT32_MAX = np.iinfo(np.int32).max
# Memory to check a compact file, planned from its shapes: the arrays as read (24 bytes of flow
# columns, 8 of path offset and 1 of lane per flow, 4 per channel id) and per phase, while it is
# checked, its flows' sorted copies, the paths grouped by length as int64, the dependency keys and
# loads. Measured (tests/bench/bench_routes_files.py): about 100 bytes per flow and 16 per hop
# beyond the interpreter's 140 MiB (the 2048-leaf exchange, 4.2 M flows over 36 M hops, checked
# in 1.0 GiB more); planned with room to spare.
READ_BASE_BYTES = 256 << 20
BYTES_PER_FLOW = 160
BYTES_PER_HOP = 32
LIST_BYTES_PER_FLOW = 1024  # read_routes' lists (the JSON reader's form): about 1 KiB of objects per flow


def is_hdf5(path) -> bool:
    """Whether the file starts with HDF5's signature (False for a file that cannot be read)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(SIGNATURE)) == SIGNATURE
    except OSError:
        return False


def wants_hdf5(path) -> bool:
    """Whether an output path asks for the compact form (by its extension)."""
    return str(path).lower().endswith(EXTENSIONS)


def _dump(value) -> str:
    return json.dumps(value, separators=(",", ":"))


class _Column:
    """A one-dimensional dataset that grows by whole chunks: entries wait until a chunk is full, so
    every chunk is compressed and written once, wherever the phases begin and end."""

    def __init__(self, f, name: str, dtype, first: np.ndarray | None = None):
        self._dataset = f.create_dataset(name, shape=(0,), maxshape=(None,), dtype=dtype, chunks=(CHUNK,),
                                         compression="gzip", compression_opts=1, shuffle=True, track_times=False)
        self._dtype = np.dtype(dtype)
        self._pending: list[np.ndarray] = []
        self._waiting = 0
        if first is not None:
            self.append(first)

    def append(self, values: np.ndarray) -> None:
        if len(values) == 0:
            return
        self._pending.append(np.array(values, dtype=self._dtype))  # (a copy: the caller's arrays are theirs)
        self._waiting += len(values)
        if self._waiting >= CHUNK:
            self._write(self._waiting - self._waiting % CHUNK)

    def close(self) -> None:
        self._write(self._waiting)

    def _write(self, count: int) -> None:
        if count == 0:
            return
        values = np.concatenate(self._pending) if len(self._pending) > 1 else self._pending[0]
        start = self._dataset.shape[0]
        self._dataset.resize((start + count,))
        self._dataset[start : start + count] = values[:count]
        rest = values[count:]
        self._pending, self._waiting = ([rest.copy()] if len(rest) else []), len(rest)


class RoutesHdf5Writer:
    """The compact routes file: the header at construction, one phase per `add_phase` (the record of
    synth.io.routes_file.RoutesWriter: flows as an (n, 3) array, paths as a Paths; Python lists are
    taken too), the summary at `close`, with the same flows digest as the JSON writer's."""

    def __init__(self, path, header: dict, shown=None):
        import h5py

        self._shown = shown or path
        self._flows_digest = hashlib.sha256()
        self._fields: list[str] = []
        self._flow_ptr = [0]
        self._hops = 0
        self._vls: _Column | None = None
        self._laned: bool | None = None  # set by the first phase: lanes in every phase or in none
        self._file = None
        try:
            with self._writing():
                self._file = h5py.File(path, "w", libver="earliest", track_order=False)
                self._file.attrs["format"] = FORMAT
                self._file.attrs["header"] = _dump(header)
                self._columns = {name: _Column(self._file, name, np.int64) for name in FLOW_COLUMNS}
                self._path_ptr = _Column(self._file, "path_ptr", np.int64, np.zeros(1, dtype=np.int64))
                self._channels = _Column(self._file, "channels", np.int32)
        except BaseException:
            self.release()
            raise

    def add_phase(self, record: dict) -> None:
        flows = np.asarray(record["flows"], dtype=np.int64).reshape(-1, 3)
        paths = record["paths"]
        if not isinstance(paths, Paths):
            paths = Paths.from_lists(paths)
        if paths.num_flows != len(flows):
            raise ValueError(f"phase {record['phase']}: {len(flows)} flows but {paths.num_flows} paths")
        if len(paths.channels) and int(paths.channels.max()) > _INT32_MAX:
            raise SynthError(f"cannot write {self._shown}: a channel id above {_INT32_MAX:,} (the compact form keeps "
                             "channel ids as int32)")
        if self._laned is None:
            self._laned = "vls" in record
        if ("vls" in record) != self._laned:
            raise ValueError("virtual lanes in some phases only")
        add_flows_to_digest(self._flows_digest, record["phase"], flows)
        self._fields.append(_dump({k: v for k, v in record.items() if k not in _IN_DATASETS}))
        with self._writing():
            for k, name in enumerate(FLOW_COLUMNS):
                self._columns[name].append(flows[:, k])
            self._path_ptr.append(paths.offsets[1:] + self._hops)
            self._channels.append(paths.channels)
            if "vls" in record:
                if self._vls is None:
                    self._vls = _Column(self._file, "vls", np.int8)
                self._vls.append(np.asarray(record["vls"], dtype=np.int8))
        self._hops += int(paths.offsets[-1])
        self._flow_ptr.append(self._flow_ptr[-1] + len(flows))

    def close(self, summary: dict) -> None:
        import h5py

        with self._writing():
            for column in (*self._columns.values(), self._path_ptr, self._channels, self._vls):
                if column is not None:
                    column.close()
            self._file.create_dataset("flow_ptr", data=np.asarray(self._flow_ptr, dtype=np.int64), track_times=False)
            self._file.create_dataset("phase_fields", data=np.asarray(self._fields, dtype=object),
                                      dtype=h5py.string_dtype("utf-8"), track_times=False)
            self._file.attrs["summary"] = _dump({**summary, FLOWS_DIGEST: self._flows_digest.hexdigest()})
            self._file.close()

    def release(self) -> None:
        """Close the file if a failure left it open (the output's temporary is discarded)."""
        if self._file is not None and self._file.id.valid:
            self._file.close()

    @contextlib.contextmanager
    def _writing(self):
        try:
            yield
        except OSError as exc:  # a full disk, a vanished directory: one line, as every output
            from synth.core.output import cannot_write

            raise cannot_write(self._shown, exc.strerror or str(exc)) from None


def read_routes_hdf5(path: str, where: str, bytes_per_flow: int = 0) -> dict:
    """A compact routes file as the columnar routes document of synth.io.routes_file (per phase its
    fields, flows as an (n, 3) int64 array, paths as a Paths, vls as an int8 array): the attributes,
    datasets, shapes, dtypes, offsets and ranges checked here, the fields left to the JSON reader's
    checks (synth.io.routes_file.read_routes_columnar runs them). `bytes_per_flow`: memory the caller
    adds per flow (lists), planned with the rest before any array is read."""
    import h5py

    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise SynthError(f"{where} is not a readable HDF5 file ({exc})") from None
    with f:
        try:
            return _read(f, where, bytes_per_flow, h5py)
        except (OSError, RuntimeError, KeyError) as exc:  # a damaged file: HDF5 cannot read what it names
            raise SynthError(f"{where} is damaged: {exc}") from None


def _read(f, where: str, bytes_per_flow: int, h5py) -> dict:
    attrs = set(f.attrs.keys())
    missing = [k for k in ATTRIBUTES if k not in attrs]
    if missing:
        raise SynthError(f"{where} is not a compact {FORMAT} file (no attribute {missing[0]})")
    unknown = sorted(attrs - set(ATTRIBUTES))
    if unknown:
        raise SynthError(f"{where}: unknown attribute '{unknown[0]}' (a compact routes file has {', '.join(ATTRIBUTES)})")
    fmt = _text(f.attrs["format"], f"{where}: attribute format")
    if fmt != FORMAT:
        raise SynthError(f"{where} has format {json.dumps(fmt)}, expected {FORMAT} (the compact form is always {FORMAT})")
    header = _object(_text(f.attrs["header"], f"{where}: attribute header"), f"{where}: attribute header")
    inside = [k for k in ("format", "phases", "summary") if k in header]
    if inside:
        raise SynthError(f"{where}: attribute header holds '{inside[0]}', which the file keeps elsewhere")
    summary = _object(_text(f.attrs["summary"], f"{where}: attribute summary"), f"{where}: attribute summary")
    names = set(f.keys())
    missing = [k for k in DATASETS if k not in names]
    if missing:
        raise SynthError(f"{where}: no dataset '{missing[0]}'")
    unknown = sorted(names - set(DATASETS) - set(OPTIONAL_DATASETS))
    if unknown:
        raise SynthError(f"{where}: unknown member '{unknown[0]}' (a compact routes file has the datasets "
                         f"{', '.join(DATASETS + OPTIONAL_DATASETS)})")
    laned = "vls" in names
    for name in DATASETS + (OPTIONAL_DATASETS if laned else ()):
        if not isinstance(f[name], h5py.Dataset) or f[name].ndim != 1:
            raise SynthError(f"{where}: '{name}' is not a one-dimensional dataset")
    if h5py.check_string_dtype(f["phase_fields"].dtype) is None:
        raise SynthError(f"{where}: dataset phase_fields holds {f['phase_fields'].dtype}, expected UTF-8 text")
    expected = {"flow_ptr": ("int64",), "src": ("int64",), "dst": ("int64",), "bytes": ("int64",),
                "path_ptr": ("int64",), "channels": ("int32", "int64"), "vls": ("int8",)}
    for name, kinds in expected.items():
        if name in names and f[name].dtype.name not in kinds:
            raise SynthError(f"{where}: dataset {name} holds {f[name].dtype}, expected {' or '.join(kinds)}")
    phases, flows, hops = f["phase_fields"].shape[0], f["src"].shape[0], f["channels"].shape[0]
    for name, n in (("flow_ptr", phases + 1), ("dst", flows), ("bytes", flows), ("path_ptr", flows + 1),
                    ("vls", flows)):
        if name in names and f[name].shape[0] != n:
            raise SynthError(f"{where}: dataset {name} has {f[name].shape[0]:,} entries, expected {n:,} "
                             f"({counted(phases, 'phase')}, {counted(flows, 'flow')})")
    need, budget = READ_BASE_BYTES + flows * (BYTES_PER_FLOW + bytes_per_flow) + hops * BYTES_PER_HOP, memory.budget()
    if need > budget.bytes:  # from the shapes, before any array is read
        raise SynthError(f"{where} holds {counted(flows, 'flow')} over {counted(hops, 'channel hop')}, which take about "
                         f"{memory.gib(need)} to read and check; synth plans with {budget} here")
    flow_ptr = _offsets(_read_all(f["flow_ptr"]), flows, f"{where}: dataset flow_ptr")
    path_ptr = _offsets(_read_all(f["path_ptr"]), hops, f"{where}: dataset path_ptr")
    rows = np.empty((flows, 3), dtype=np.int64)
    for k, name in enumerate(FLOW_COLUMNS):
        _read_into(f[name], rows[:, k])
        _in_range(rows[:, k], 0, _INT64_MAX, f"{where}: dataset {name}")
    channels = _read_all(f["channels"])
    _in_range(channels, 0, np.iinfo(channels.dtype).max, f"{where}: dataset channels")
    lanes = None
    if laned:
        lanes = _read_all(f["vls"])
        _in_range(lanes, 0, MAX_VLS - 1, f"{where}: dataset vls")
    try:
        texts = f["phase_fields"].asstr()[...]
    except UnicodeDecodeError as exc:
        raise SynthError(f"{where}: dataset phase_fields is not UTF-8 text ({exc.reason})") from None
    records = []
    for k in range(phases):
        fields = _object(texts[k], f"{where}: phase_fields[{k}]")
        inside = [key for key in _IN_DATASETS if key in fields]
        if inside:
            raise SynthError(f"{where}: phase_fields[{k}] holds '{inside[0]}', which the file keeps as datasets")
        lo, hi = int(flow_ptr[k]), int(flow_ptr[k + 1])
        base = path_ptr[lo]
        record = {**fields, "flows": rows[lo:hi],
                  "paths": Paths(path_ptr[lo : hi + 1] - base, channels[base : path_ptr[hi]])}
        if lanes is not None:
            record["vls"] = lanes[lo:hi]
        records.append(record)
    return {"format": fmt, **header, "phases": records, "summary": summary}


def _read_all(dataset) -> np.ndarray:
    out = np.empty(dataset.shape, dtype=dataset.dtype)
    _read_into(dataset, out)
    return out


def _read_into(dataset, out: np.ndarray) -> None:
    for start in range(0, len(out), READ_SLICE):
        out[start : start + READ_SLICE] = dataset[start : start + READ_SLICE]


def _text(value, where: str) -> str:
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            raise SynthError(f"{where} is not UTF-8 text") from None
    if not isinstance(value, str):
        raise SynthError(f"{where} is not text")
    try:  # h5py hands bytes that are not UTF-8 over as lone surrogates (surrogateescape)
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SynthError(f"{where} is not UTF-8 text (character {exc.start + 1})") from None
    return value


class _Malformed(Exception):
    pass


def _no_duplicates(pairs: list) -> dict:
    out = {}
    for key, value in pairs:
        if key in out:
            raise _Malformed(f"duplicated key {json.dumps(key)}")
        out[key] = value
    return out


def _no_constant(name: str):
    raise _Malformed(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):  # 1e400: Infinity spelt otherwise
        raise _Malformed(f"{text[:40]} is beyond a double (Infinity)")
    return value


def _object(text: str, where: str) -> dict:
    """A JSON object, parsed as strictly as a JSON routes file (synth.core.validate.read_json):
    duplicated keys, NaN and Infinity (also as 1e400) refused."""
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise SynthError(f"{where} is not JSON: {exc}") from None
    except (_Malformed, ValueError, RecursionError) as exc:
        raise SynthError(f"{where} is not a routes file's JSON: {exc if isinstance(exc, _Malformed) else 'too large or nested too deeply'}") from None
    if not isinstance(value, dict):
        raise SynthError(f"{where} must be a JSON object")
    return value


def _in_range(values: np.ndarray, lo: int, hi: int, where: str) -> None:
    for start in range(0, len(values), READ_SLICE):
        part = values[start : start + READ_SLICE]
        bad = np.flatnonzero((part < lo) | (part > hi))
        if len(bad):
            raise SynthError(f"{where}[{start + bad[0]}] is {part[bad[0]]}, expected {lo}..{hi}")


def _offsets(values: np.ndarray, total: int, where: str) -> np.ndarray:
    """Offsets 0 = values[0] <= values[1] <= ... = total."""
    if len(values) == 0 or values[0] != 0 or values[-1] != total:
        raise SynthError(f"{where} must run from 0 to {total:,}" + (f" (it runs from {values[0]} to {values[-1]})"
                                                                    if len(values) else ""))
    falls = np.flatnonzero(np.diff(values) < 0)
    if len(falls):
        raise SynthError(f"{where} must not fall: entry {falls[0] + 1} is {values[falls[0] + 1]}, after {values[falls[0]]}")
    return values
