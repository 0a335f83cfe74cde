"""The schedule file in its compact form: `synth-schedule/2` (or /1, without paths) as HDF5 (docs/formats.md), for schedules too
large for JSON to be practical (the Swing allreduce of a 64 x 64 torus is 733 MB of JSON).

HDF5 rather than Parquet: a schedule is several arrays of different lengths (steps + 1 offsets, a
transfer's source, destination and operation, its block list offsets, the block ids or runs, a size per
block), which HDF5 keeps as datasets of one file, each read or written a slice at a time; Parquet holds
one table of equal-length columns. The arrays are written as synth holds them (int32 block ids below 2^31
blocks, BlockRuns as runs), chunked and compressed (shuffle + gzip level 1), and read back strictly:
every shape, type and range is checked before the schedule is built (exit 2 naming the dataset), and
the arrays' size is planned against the memory budget from the file's shapes before any is read.

Files are byte-identical for the same schedule: no object timestamps (track_times=False).

Layout: root attributes format, collective, algorithm, spec, ranks, ranks_per_node, blocks, root and
peer (-1 for none); datasets step_ptr, src, dst, op, block_bytes, then either block_ptr and block_ids,
or run_ptr, run_first, run_stride and run_count; size_exchange when the schedule has one; path_src,
path_dst, path_ptr and path_channels (and path_of where a pair takes several paths) when it records
the paths its cost was computed on (synth.io.schedule_paths: format synth-schedule/2).
"""

from __future__ import annotations

import json
import re

import numpy as np

from synth.core import memory
from synth.core.errors import SynthError
from synth.core.text import counted
from synth.core.validate import parse_json
from synth.collectives.schedule import COLLECTIVES, OPS, BlockRuns, Schedule, id_type
from synth.collectives.verify import verify_memory

FORMAT = "synth-schedule/2"  # with recorded paths
FORMAT_1 = "synth-schedule/1"  # without
ORBIT_FORMAT = "synth-orbit-schedule/1"  # synth.io.orbit_hdf5's, named here to say what to do with one
SIGNATURE = b"\x89HDF\r\n\x1a\n"  # the first bytes of every HDF5 file
EXTENSIONS = (".h5", ".hdf5")
CHUNK = 1 << 22  # entries written or read at a time (a signal is handled between slices)
_ATTRIBUTES = ("format", "collective", "algorithm", "spec", "ranks", "ranks_per_node", "blocks", "root", "peer")
MAX_RANKS, MAX_BLOCKS = 1 << 20, 1 << 32


def is_hdf5(path: str) -> bool:
    """Whether the file starts with HDF5's signature (False for a file that cannot be read)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(SIGNATURE)) == SIGNATURE
    except OSError:
        return False


def wants_hdf5(path: str) -> bool:
    """Whether an output path asks for the compact form (by its extension)."""
    return str(path).lower().endswith(EXTENSIONS)


def write_schedule_hdf5(path, s: Schedule, shown=None) -> None:
    """The schedule into a new HDF5 file at `path` (a reserved output's temporary, named `shown` in
    an error)."""
    import h5py

    try:
        with h5py.File(path, "w", libver="earliest", track_order=False) as f:
            _write_all(f, s)
    except OSError as exc:  # a full disk, a vanished directory: one line, as every output
        from synth.core.output import cannot_write

        raise cannot_write(shown or path, exc.strerror or str(exc)) from None


def _write_all(f, s: Schedule) -> None:
    from synth.io.schedule_file import network_digest

    for key, value in (("format", FORMAT if s.paths is not None else FORMAT_1), ("collective", s.collective), ("algorithm", s.algorithm), ("spec", s.spec),
                       ("ranks", s.ranks), ("ranks_per_node", s.ranks_per_node), ("blocks", s.blocks),
                       ("root", -1 if s.root is None else s.root), ("peer", -1 if s.peer is None else s.peer)):
        f.attrs[key] = value
    digest = network_digest(s)
    if digest is not None:  # the file the network was read from (`fabric:`, `graph:`): a changed file is refused
        f.attrs[DIGEST] = digest
    if s.synthesis is not None:  # a synthesized schedule's record, as the JSON form's "synthesis" (JSON text)
        f.attrs["synthesis"] = json.dumps(s.synthesis, sort_keys=True)
    arrays = {"step_ptr": s.step_ptr, "src": s.src.astype(np.int32), "dst": s.dst.astype(np.int32), "op": s.op,
              "block_bytes": s.block_bytes}
    if s.runs is None:
        arrays |= {"block_ptr": s.block_ptr, "block_ids": s.block_ids}
    else:
        arrays |= {"run_ptr": s.runs.ptr, "run_first": s.runs.first, "run_stride": s.runs.stride,
                   "run_count": s.runs.count}
    if s.size_exchange is not None:
        arrays["size_exchange"] = s.size_exchange
    if s.paths is not None:
        from synth.io.schedule_paths import path_table

        table = path_table(s)
        arrays |= {"path_src": table.pair_src.astype(np.int32), "path_dst": table.pair_dst.astype(np.int32),
                   "path_ptr": table.offsets, "path_channels": table.channels.astype(np.int32)}
        if table.transfers is not None:
            arrays["path_of"] = table.transfers
    for name, array in arrays.items():
        _write(f, name, np.ascontiguousarray(array))


def _write(f, name: str, array: np.ndarray) -> None:
    chunked = len(array) > 1024
    dataset = f.create_dataset(name, shape=array.shape, dtype=array.dtype, track_times=False,
                               chunks=(min(len(array), 1 << 18),) if chunked else None,
                               compression="gzip" if chunked else None, compression_opts=1 if chunked else None,
                               shuffle=chunked)
    for start in range(0, len(array), CHUNK):
        dataset[start : start + CHUNK] = array[start : start + CHUNK]


def read_schedule_hdf5(path: str) -> Schedule:
    """A compact schedule file, checked strictly (exit 2 naming the dataset or attribute)."""
    where = f"schedule file '{path}'"
    header, topology, read, paths = read_hdf5(path, where, _read_file)
    name, algorithm, spec, ranks, blocks, per_node, root, peer, steps, transfers, version_2 = header
    step_ptr = _offsets(read["step_ptr"], transfers, f"{where}: step_ptr", allow_equal=True)
    for key in ("src", "dst"):
        _in_range(read[key], 0, ranks - 1, f"{where}: {key}")
    _in_range(read["op"], 0, len(OPS) - 1, f"{where}: op")
    _in_range(read["block_bytes"], 0, np.iinfo(np.int64).max, f"{where}: block_bytes")
    size_exchange = read.get("size_exchange")
    if size_exchange is not None:
        _in_range(size_exchange, 0, max(steps - 1, 0), f"{where}: size_exchange")
    common = dict(collective=name, algorithm=algorithm, spec=spec, ranks=ranks, blocks=blocks,
                  block_bytes=read["block_bytes"].astype(np.int64), step_ptr=step_ptr,
                  src=read["src"].astype(np.int64), dst=read["dst"].astype(np.int64), op=read["op"].astype(np.int8),
                  root=root if root >= 0 else None, peer=peer if peer >= 0 else None, ranks_per_node=per_node,
                  size_exchange=None if size_exchange is None else np.unique(size_exchange.astype(np.int64)),
                  synthesis=read["synthesis"], network_sha256=read["network_sha256"])
    schedule = _schedule(common, read, "run_ptr" in read, transfers, blocks, where)
    if paths is None:
        return schedule
    from synth.io.schedule_paths import HDF5_NAMES, PathTable, attach_paths

    return attach_paths(schedule, topology.network(), PathTable(*paths), where, HDF5_NAMES)


# Memory of the recorded paths beyond verify's (synth.io.schedule_paths.attach_paths): per channel hop and per
# entry the int64 copies of the file's arrays and the checks' masks and index arrays (counted from the arrays it
# makes, not measured: about eight 8-byte arrays per hop and twelve per entry).
PATH_BYTES_PER_HOP = 64
PATH_BYTES_PER_ENTRY = 96


def orbit_refused(where: str) -> SynthError:
    """An orbit schedule (rank 0's blocks and the group, synth.io.orbit_hdf5) where a command takes
    explicit arrays: what to do with it, in one line."""
    return SynthError(f"{where} is an orbit schedule ({ORBIT_FORMAT}): `synth verify` reads it; expand it for this "
                      "command with `synth verify FILE --expand OUT`")


def read_hdf5(path: str, where: str, reader):
    """`reader(f, where, h5py)` on the open file, in one line where HDF5 cannot open it or read what
    it names (a chunk that does not decompress, an attribute of a type numpy has not: a damaged file,
    as the routes reader says)."""
    import h5py

    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise SynthError(f"{where} is not a readable HDF5 file ({_one_line(exc)})") from None
    try:
        with f:
            return reader(f, where, h5py)
    except (OSError, RuntimeError, KeyError, TypeError) as exc:
        raise SynthError(f"{where} is damaged: {_one_line(exc)}") from None


def _read_file(f, where: str, h5py):
    """The attributes, every dataset's shape and type, the memory plan (from the shapes, before any array is
    read), then the arrays; the values are checked by the caller."""
    attrs = {k: f.attrs[k] for k in f.attrs}
    missing = [k for k in _ATTRIBUTES if k not in attrs]
    fmt = attrs.get("format")
    fmt = fmt.decode("utf-8", "replace") if isinstance(fmt, bytes) else fmt
    if fmt == ORBIT_FORMAT:
        raise orbit_refused(where)
    if not isinstance(fmt, str) or fmt not in (FORMAT_1, FORMAT) or missing:
        raise SynthError(f"{where} is not a synth-schedule file ({FORMAT_1} or {FORMAT})"
                         + (f" (no attribute {missing[0]})" if missing else ""))
    version_2 = fmt == FORMAT
    name, algorithm, spec = (_text(attrs[k], f"{where}: {k}") for k in ("collective", "algorithm", "spec"))
    if name not in COLLECTIVES:
        raise SynthError(f"{where}: collective '{name}' is not one synth knows ({', '.join(COLLECTIVES)})")
    ranks = _integer(attrs["ranks"], f"{where}: ranks", 1, MAX_RANKS)
    blocks = _integer(attrs["blocks"], f"{where}: blocks", 1, MAX_BLOCKS)
    per_node = _integer(attrs["ranks_per_node"], f"{where}: ranks_per_node", 1, ranks)
    root = _integer(attrs["root"], f"{where}: root", -1, ranks - 1)
    peer = _integer(attrs["peer"], f"{where}: peer", -1, ranks - 1)
    if COLLECTIVES[name].rooted != (root >= 0):
        raise SynthError(f"{where}: {name} {'needs' if COLLECTIVES[name].rooted else 'has no'} root")
    if (name == "p2p") != (peer >= 0):
        raise SynthError(f"{where}: {'p2p needs a peer' if name == 'p2p' else f'{name} has no peer'}")
    synthesis = _synthesis(attrs.get("synthesis"), where)
    digest = _digest(attrs.get(DIGEST), where)
    from synth.io.schedule_file import check_network

    topology = check_network(spec, ranks, per_node, where, digest)
    runs = "run_ptr" in f
    names = ["step_ptr", "src", "dst", "op", "block_bytes"] + (
        ["run_ptr", "run_first", "run_stride", "run_count"] if runs else ["block_ptr", "block_ids"])
    optional = [key for key in ("size_exchange",) if key in f]
    for key in names + optional:
        _integer_dataset(f, key, where, h5py)
    length = {key: int(f[key].shape[0]) for key in names + optional}
    steps, transfers = length["step_ptr"] - 1, length["src"]
    # each checked before it is read, against the dataset (or attribute) it follows
    expected = {"dst": (transfers, "as src"), "op": (transfers, "as src"), "block_bytes": (blocks, "one per block")}
    if runs:
        expected |= {"run_ptr": (transfers + 1, "one more than src"),
                     "run_stride": (length["run_first"], "as run_first"), "run_count": (length["run_first"], "as run_first")}
    else:
        expected["block_ptr"] = (transfers + 1, "one more than src")
    for key, (n, why) in expected.items():
        if length[key] != n:
            raise SynthError(f"{where}: {key} has {length[key]:,} entries, expected {n:,} ({why})")
    if "size_exchange" in length and length["size_exchange"] > max(steps, 0):
        raise SynthError(f"{where}: size_exchange has {length['size_exchange']:,} entries for "
                         f"{counted(max(steps, 0), 'step')}")
    path_shapes = _path_shapes(f, where, version_2, transfers, h5py)
    entries, hops = path_shapes
    # runs are replayed a group of blocks at a time, never listed: 24 bytes a run (first, stride,
    # count), planned as two block sends' 12 each and one more for the groups they fall in
    sends = 3 * length["run_count"] if runs else length["block_ids"]
    need = verify_memory(ranks, blocks, max(steps, 0), transfers, sends) + PATH_BYTES_PER_HOP * hops \
        + PATH_BYTES_PER_ENTRY * entries
    budget = memory.budget()
    if need > budget.bytes:  # from the shapes, before any array is read
        raise SynthError(f"{where} declares {counted(ranks, 'rank')}, {counted(blocks, 'block')} and "
                         f"{counted(max(steps, 0), 'step')} of {counted(transfers, 'transfer')} sending "
                         + (counted(length["run_count"], "run") + " of blocks" if runs else counted(sends, "block"))
                         + (f", with {counted(hops, 'recorded channel hop')}" if hops else "") + ", which take about "
                         f"{memory.gib(need)} to verify; synth plans with {budget} here")
    read = {key: _read(f[key]) for key in names + optional}
    read["synthesis"], read["network_sha256"] = synthesis, digest
    paths = _path_arrays(f, where, version_2)
    return ((name, algorithm, spec, ranks, blocks, per_node, root, peer, steps, transfers, version_2), topology, read,
            paths)


def _integer_dataset(f, key: str, where: str, h5py) -> None:
    if key not in f or not isinstance(f[key], h5py.Dataset) or f[key].ndim != 1 or f[key].dtype.kind not in "iu" \
            or f[key].dtype.itemsize > 8:
        raise SynthError(f"{where}: no one-dimensional integer dataset '{key}'")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


DIGEST = "network_sha256"  # the SHA-256 of the `fabric:` or `graph:` file the schedule was made on


def _digest(value, where: str) -> str | None:
    if value is None:
        return None
    text = _text(value, f"{where}: {DIGEST}")
    if not re.fullmatch(r"[0-9a-f]{64}", text):
        raise SynthError(f"{where}: {DIGEST} is not a SHA-256 digest (64 lowercase hex digits)")
    return text


PATH_DATASETS = ("path_src", "path_dst", "path_ptr", "path_channels")


def _path_shapes(f, where: str, version_2: bool, transfers: int, h5py) -> tuple[int, int]:
    """(entries, channel hops) of the recorded paths' datasets, their types and lengths checked before any is read;
    (0, 0) where the file records none."""
    present = [key for key in (*PATH_DATASETS, "path_of") if key in f]
    if not present:
        return 0, 0
    if not version_2:
        raise SynthError(f"{where}: dataset '{present[0]}' is of {FORMAT} files, not {FORMAT_1}")
    for key in PATH_DATASETS + (("path_of",) if "path_of" in f else ()):
        _integer_dataset(f, key, where, h5py)
    entries, hops = int(f["path_src"].shape[0]), int(f["path_channels"].shape[0])
    # every entry is the path of at least one transfer between nodes, and path_of names one per such transfer
    for key, n, most in (("path_src", entries, transfers), ("path_dst", entries, entries), ("path_ptr", entries + 1, entries + 1),
                         ("path_of", None, transfers)):
        if key not in f:
            continue
        length = int(f[key].shape[0])
        if n is not None and length != n or length > most:
            raise SynthError(f"{where}: {key} has {length:,} entries, expected "
                             + (f"{n:,}" if n is not None and n <= most else f"at most {most:,} (one per transfer)"))
    return entries, hops


def _path_arrays(f, where: str, version_2: bool):
    """The recorded paths' arrays (synth-schedule/2 only; _path_shapes checked them), or None where the file has none."""
    if "path_src" not in f:
        return None
    read = [_read(f[key]).astype(np.int64) for key in PATH_DATASETS]
    return (*read, _read(f["path_of"]).astype(np.int64) if "path_of" in f else None)


def _schedule(common: dict, read: dict, runs: bool, transfers: int, blocks: int, where: str) -> Schedule:
    if runs:
        ptr = _offsets(read["run_ptr"], len(read["run_first"]), f"{where}: run_ptr", allow_equal=False)
        for key in ("run_stride", "run_count"):
            if len(read[key]) != len(read["run_first"]):
                raise SynthError(f"{where}: {key} has {len(read[key]):,} entries, run_first {len(read['run_first']):,}")
        if len(ptr) != transfers + 1:
            raise SynthError(f"{where}: run_ptr has {len(ptr):,} entries for {transfers:,} transfers")
        _check_runs(read["run_first"], read["run_stride"], read["run_count"], blocks, where)
        # whether a transfer repeats a block across its runs is verify's structure check
        return Schedule(**common, block_ptr=None, block_ids=None,
                        runs=BlockRuns(ptr, read["run_first"].astype(np.int64), read["run_stride"].astype(np.int64),
                                       read["run_count"].astype(np.int64)))
    block_ptr = _offsets(read["block_ptr"], len(read["block_ids"]), f"{where}: block_ptr", allow_equal=False)
    if len(block_ptr) != transfers + 1:
        raise SynthError(f"{where}: block_ptr has {len(block_ptr):,} entries for {transfers:,} transfers")
    _in_range(read["block_ids"], 0, blocks - 1, f"{where}: block_ids")
    return Schedule(**common, block_ptr=block_ptr, block_ids=read["block_ids"].astype(id_type(blocks), copy=False))


def _check_runs(first: np.ndarray, stride: np.ndarray, count: np.ndarray, blocks: int, where: str) -> None:
    """Every run's blocks within 0..blocks-1, and none repeated within the run (a stride 0 with a count above 1):
    a count of 2^40 is refused here, before anything counts its blocks."""
    _in_range(first, 0, blocks - 1, f"{where}: run_first")
    _in_range(count, 1, blocks, f"{where}: run_count")
    first, stride, count = first.astype(np.int64), stride.astype(np.int64), count.astype(np.int64)  # (as kept)
    many = count > 1
    repeats = np.flatnonzero(many & (stride == 0))
    if len(repeats):
        k = repeats[0]
        raise SynthError(f"{where}: run {k} has run_count {count[k]:,} with run_stride 0: block {first[k]} repeated "
                         "(a run of one block has count 1)")
    # the last block first + stride (count - 1) in range, without computing it (it may overflow int64;
    # -stride of -2^63 does, to itself, which still reads as too far)
    with np.errstate(over="ignore"):
        up = (blocks - 1 - first) // np.where(stride > 0, stride, 1)
        down = first // np.where(stride < 0, -stride, 1)
    beyond = np.flatnonzero(many & (((stride > 0) & (count - 1 > up)) | ((stride < 0) & (count - 1 > down))))
    if len(beyond):
        k = beyond[0]
        raise SynthError(f"{where}: run {k} (run_first {first[k]}, run_stride {stride[k]}, run_count {count[k]:,}) "
                         f"runs past the blocks 0..{blocks - 1}")


def _read(dataset) -> np.ndarray:
    out = np.empty(dataset.shape, dtype=dataset.dtype)
    for start in range(0, len(out), CHUNK):
        out[start : start + CHUNK] = dataset[start : start + CHUNK]
    return out


def _text(value, where: str) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        raise SynthError(f"{where} is not text")
    try:  # h5py hands bytes that are not UTF-8 over as lone surrogates (surrogateescape)
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SynthError(f"{where} is not UTF-8 text (character {exc.start + 1})") from None
    return value


def _integer(value, where: str, lo: int, hi: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not lo <= int(value) <= hi:
        raise SynthError(f"{where} is {value!r}, expected an integer in {lo}..{hi}")
    return int(value)


def _in_range(values: np.ndarray, lo: int, hi: int, where: str) -> None:
    for start in range(0, len(values), CHUNK):
        part = values[start : start + CHUNK]
        bad = np.flatnonzero((part < lo) | (part > hi))
        if len(bad):
            raise SynthError(f"{where}[{start + bad[0]}] is {part[bad[0]]}, expected {lo}..{hi}")


def _offsets(values: np.ndarray, total: int, where: str, allow_equal: bool) -> np.ndarray:
    """Offsets 0 = values[0] <= values[1] <= ... = total (strictly rising unless `allow_equal`)."""
    values = values.astype(np.int64)
    if len(values) == 0 or values[0] != 0 or values[-1] != total:
        raise SynthError(f"{where} must run from 0 to {total:,}")
    steps = np.diff(values)
    if (steps < 0).any() or (not allow_equal and (steps == 0).any()):
        raise SynthError(f"{where} must rise{'' if allow_equal else ' strictly (every transfer has a block)'}")
    return values


def _synthesis(text, where: str) -> dict | None:
    """The "synthesis" attribute (JSON text of an object, parsed as strictly as a JSON schedule file: no NaN,
    Infinity or repeated key, not nested past Python's limit), or None when the file has none."""
    if text is None:
        return None
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SynthError(f"{where}: synthesis is not UTF-8 text (byte {exc.start})") from None
    if not isinstance(text, str):
        raise SynthError(f"{where}: synthesis is not the JSON text of an object")
    text = _text(text, f"{where}: synthesis")
    record = parse_json(text, f"{where}: synthesis", "schedule's synthesis record")
    if not isinstance(record, dict):
        raise SynthError(f"{where}: synthesis is not the JSON text of an object")
    return record
