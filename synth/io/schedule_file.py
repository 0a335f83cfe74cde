"""The schedule file (`synth-schedule/2`, docs/formats.md): written a step per line, read strictly.

    {"format": "synth-schedule/2", "collective": ..., "algorithm": ..., "network": {"spec": ...},
     "ranks": P, "root": R (rooted collectives only), "blocks": B, "block_bytes": [...] (or one number),
     "synthesis": {...} (synthesized schedules only: method, bounds, cost, gap, status),
     "paths": {"pairs": [[a, b], ...], "offsets": [...], "channels": [...]} (the paths its cost was
              computed on: synth.io.schedule_paths),
     "steps": [[{"src": r, "dst": q, "blocks": [ids], "op": "copy"|"reduce"}, ...], ...]}

Version 2 adds `paths`; a schedule without them is written as `synth-schedule/1` (what synth wrote
before, and older readers take), and both versions are read.
"""

from __future__ import annotations

import json
import os
import re
from typing import IO

import numpy as np

from synth.core import memory
from synth.core.errors import SynthError
from synth.core.text import counted
from synth.core.validate import INT64_MAX, check_keys, read_json, require_int, require_list, require_str, require_table, show
from synth.collectives.schedule import COLLECTIVES, OPS, Schedule, ScheduleBuilder
from synth.collectives.verify import verify_memory

FORMAT = "synth-schedule/2"  # with recorded paths
FORMAT_1 = "synth-schedule/1"  # without: the form of every file before paths were recorded
FORMATS = (FORMAT_1, FORMAT)
MAX_FILE_BYTES = 2 << 30  # read whole: larger files are refused before reading
# Python's objects of a parsed file (measured peak RSS of synth verify, replay included): per JSON
# object (a transfer: its dict, keys, list) 700 bytes, per item of a list or object (a ',': a block
# id's int and list slot) 40: spread-out on 1024 ranks (10^6 one-block transfers, 54 MB) read and
# replayed in 0.9 GB, Bruck on 4096 ranks (10^8 block ids, 842 MB) in 4.8 GB, a binomial broadcast
# of 10^6 blocks on 64 ranks (6.3 x 10^7 ids, 434 MB) in 2.9 GB.
READ_BASE_BYTES = 256 << 20
READ_BYTES_PER_OBJECT = 800
READ_BYTES_PER_ITEM = 44
_TOP_1 = ("format", "collective", "algorithm", "network", "ranks", "ranks_per_node", "root", "peer", "blocks",
          "block_bytes", "size_exchange", "synthesis", "steps")
_TOP = _TOP_1 + ("paths",)
_PATHS = ("pairs", "offsets", "channels", "transfers")
_TOP_REQUIRED = ("format", "collective", "algorithm", "network", "ranks", "blocks", "block_bytes", "steps")
_TRANSFER = ("src", "dst", "blocks", "op")
MAX_RANKS = 1 << 20
WRITE_CHUNK = 1 << 16  # block ids formatted at a time
MAX_BLOCKS = 1 << 32


def _dump(value) -> str:
    return json.dumps(value, separators=(",", ":"))


def file_format(s: Schedule) -> str:
    """The version a schedule is written as: 2 where it records paths, else 1."""
    return FORMAT if s.paths is not None else FORMAT_1


TOO_BIG = "; write the compact form (--out FILE.h5)"


class _Capped:
    """A text handle that refuses to pass `limit` characters (bytes: json.dumps writes ASCII): synth never writes a
    schedule file that read_schedule refuses for its size."""

    def __init__(self, handle: IO[str], limit: int):
        self.handle, self.limit, self.size = handle, limit, 0

    def write(self, text: str) -> None:
        self.size += len(text)
        if self.size > self.limit:
            raise SynthError(f"the JSON schedule file would have more than the {self.limit:,} bytes synth reads whole: "
                             f"not written{TOO_BIG}")
        self.handle.write(text)


def write_schedule(handle: IO[str], s: Schedule) -> None:
    # at least a digit and a comma per block sent and 32 characters a transfer ({"src":0,"dst":1,"blocks":[],"op":"copy"})
    least = 2 * s.num_block_sends + 32 * s.num_transfers
    if least > MAX_FILE_BYTES:
        raise SynthError(f"the JSON schedule file would have at least {least:,} bytes, more than the {MAX_FILE_BYTES:,} "
                         f"synth reads whole: not written{TOO_BIG}")
    handle = _Capped(handle, MAX_FILE_BYTES)
    sizes = s.block_bytes
    digest = network_digest(s)
    head = {"format": file_format(s), "collective": s.collective, "algorithm": s.algorithm,
            "network": {"spec": s.spec, **({"file_sha256": digest} if digest is not None else {})},
            "ranks": s.ranks, **({"ranks_per_node": s.ranks_per_node} if s.ranks_per_node != 1 else {}),
            **({"root": s.root} if s.root is not None else {}), **({"peer": s.peer} if s.peer is not None else {}),
            "blocks": s.blocks,
            "block_bytes": int(sizes[0]) if len(sizes) and (sizes == sizes[0]).all() else sizes.tolist(),
            **({"size_exchange": s.size_exchange.tolist()} if s.size_exchange is not None else {}),
            **({"synthesis": s.synthesis} if s.synthesis is not None else {})}
    handle.write("{\n" + "".join(f"{_dump(k)}: {_dump(v)},\n" for k, v in head.items()))
    if s.paths is not None:
        _write_paths(handle, s)
    handle.write('"steps": [')
    ops = [_dump(o) for o in OPS]
    src, dst, op = s.src.tolist(), s.dst.tolist(), s.op.tolist()
    if s.runs is None:
        ptr, ids = s.block_ptr.tolist(), s.block_ids
        blocks_of = lambda t: ids[ptr[t]:ptr[t + 1]]  # noqa: E731
    else:  # runs are listed transfer by transfer, never all at once
        blocks_of = s.runs.blocks_of
    # Written in pieces of at most WRITE_CHUNK block ids, never a whole step or a whole block list at
    # once: a binomial broadcast of 10^6 blocks on 1024 ranks has steps of 512 transfers of 10^6
    # blocks each (3.5 GB of text, twice that while joined); the writer's memory stays constant.
    pending, size = [], 0
    for step in range(s.num_steps):
        pending.append("\n[" if step == 0 else ",\n[")
        for t in range(s.step_ptr[step], s.step_ptr[step + 1]):
            listed = blocks_of(t)
            pending.append(f'{"," if t > s.step_ptr[step] else ""}{{"src":{src[t]},"dst":{dst[t]},"blocks":[')
            for k in range(0, len(listed), WRITE_CHUNK):
                text = ",".join(map(str, listed[k:k + WRITE_CHUNK].tolist()))
                pending.append(text if k == 0 else "," + text)
                size += len(text)
            pending.append(f'],"op":{ops[op[t]]}}}')
            size += 64
            if size >= WRITE_CHUNK * 8:
                handle.write("".join(pending))
                pending, size = [], 0
        pending.append("]")
    handle.write("".join(pending) + "\n]}\n")


def write_schedule_output(target, s: Schedule) -> None:
    """A schedule into a reserved output (synth.core.output.Output): the compact HDF5 form
    (synth.io.schedule_hdf5) for a target named .h5 or .hdf5, JSON otherwise: what `synth schedule
    --out`, `synth synthesize --out` and the API's write_schedule write."""
    from synth.collectives.orbit import OrbitSchedule
    from synth.io.schedule_hdf5 import wants_hdf5, write_schedule_hdf5

    if isinstance(s, OrbitSchedule):  # rank 0's blocks and the group: HDF5 only (synth.io.orbit_hdf5)
        from synth.io.orbit_hdf5 import write_orbit_hdf5

        if not wants_hdf5(target.target):
            raise SynthError(f"{target.target}: an orbit schedule is written as HDF5 (synth-orbit-schedule/1): name "
                             "the file .h5")
        write_orbit_hdf5(target.tmp, s, shown=target.target)
    elif wants_hdf5(target.target):
        write_schedule_hdf5(target.tmp, s, shown=target.target)
    else:
        with target.open() as handle:
            write_schedule(handle, s)


def _write_paths(handle: IO[str], s: Schedule) -> None:
    """The "paths" object on one line, written WRITE_CHUNK numbers at a time."""
    from synth.io.schedule_paths import path_table

    table = path_table(s)

    def numbers(values: np.ndarray) -> None:
        for k in range(0, len(values), WRITE_CHUNK):
            handle.write(("," if k else "") + ",".join(map(str, values[k:k + WRITE_CHUNK].tolist())))

    handle.write('"paths": {"pairs":[')
    for k in range(0, len(table.pair_src), WRITE_CHUNK):
        a, b = table.pair_src[k:k + WRITE_CHUNK].tolist(), table.pair_dst[k:k + WRITE_CHUNK].tolist()
        handle.write(("," if k else "") + ",".join(f"[{x},{y}]" for x, y in zip(a, b)))
    handle.write('],"offsets":[')
    numbers(table.offsets)
    handle.write('],"channels":[')
    numbers(table.channels)
    if table.transfers is not None:
        handle.write('],"transfers":[')
        numbers(table.transfers)
    handle.write("]},\n")


def read_schedule(path: str) -> Schedule:
    """A schedule file in either form: JSON, or the compact HDF5 form (synth.io.schedule_hdf5),
    told apart by the file's first bytes."""
    from synth.io.schedule_hdf5 import is_hdf5, read_schedule_hdf5

    if is_hdf5(path):
        return read_schedule_hdf5(path)
    where = f"schedule file '{path}'"
    size, need = read_memory(path)
    budget = memory.budget()
    if size <= MAX_FILE_BYTES and need > budget.bytes:
        raise SynthError(f"{where} has {size:,} bytes, which take about {memory.gib(need)} to read; synth plans with "
                         f"{budget} here")
    return schedule_from_doc(read_json(path, where, "schedule file", MAX_FILE_BYTES), where)


def read_memory(path: str) -> tuple[int, int]:
    """(bytes, the bytes parsing it takes): its text, twice while decoded, and Python's objects for
    its numbers and objects, counted by a pass over the file in pieces (nothing is kept). 0, 0 for
    a file that cannot be read or is above MAX_FILE_BYTES (read_json says why)."""
    try:
        size = os.stat(path).st_size
        if size > MAX_FILE_BYTES:
            return size, 0
        objects = items = 0
        with open(path, "rb") as handle:
            while piece := handle.read(1 << 24):
                objects += piece.count(b"{")
                items += piece.count(b",")
    except OSError:
        return 0, 0
    return size, READ_BASE_BYTES + max(2 * size, size + READ_BYTES_PER_OBJECT * objects + READ_BYTES_PER_ITEM * items)


def schedule_from_doc(doc, where: str) -> Schedule:
    """Shape and types checked strictly (exit 2 naming the field); whether the schedule is right is
    synth.collectives.verify's question."""
    if not isinstance(doc, dict) or doc.get("format") not in FORMATS:
        raise SynthError(f"{where} is not a synth-schedule file ({' or '.join(FORMATS)}: its \"format\" field)")
    if "paths" in doc and doc["format"] != FORMAT:
        raise SynthError(f"{where}: paths are recorded by {FORMAT} files, and its format is {doc['format']}")
    check_keys(doc, where, _TOP, _TOP_REQUIRED)
    name = require_str(doc["collective"], f"{where}: collective")
    if name not in COLLECTIVES:
        raise SynthError(f"{where}: collective {show(name)} is not one synth knows ({', '.join(COLLECTIVES)})")
    algorithm = require_str(doc["algorithm"], f"{where}: algorithm")
    network = require_table(doc["network"], f"{where}: network")
    check_keys(network, f"{where}: network", ("spec", "file_sha256"), ("spec",))
    spec = require_str(network["spec"], f"{where}: network.spec")
    digest = None
    if "file_sha256" in network:
        digest = require_str(network["file_sha256"], f"{where}: network.file_sha256")
        if not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise SynthError(f"{where}: network.file_sha256 is not a SHA-256 digest (64 lowercase hex digits)")
    ranks = require_int(doc["ranks"], f"{where}: ranks", 1, MAX_RANKS)
    blocks = require_int(doc["blocks"], f"{where}: blocks", 1, MAX_BLOCKS)
    rooted = COLLECTIVES[name].rooted
    if rooted != ("root" in doc):
        raise SynthError(f"{where}: {name} {'needs' if rooted else 'has no'} root")
    root = require_int(doc["root"], f"{where}: root", 0, ranks - 1) if rooted else None
    if (name == "p2p") != ("peer" in doc):
        raise SynthError(f"{where}: {'p2p needs a peer' if name == 'p2p' else f'{name} has no peer'}")
    peer = require_int(doc["peer"], f"{where}: peer", 0, ranks - 1) if name == "p2p" else None
    sizes = doc["block_bytes"]
    if isinstance(sizes, list):
        if len(sizes) != blocks:
            raise SynthError(f"{where}: block_bytes lists {len(sizes)} sizes for {blocks} blocks")
        sizes = [require_int(v, f"{where}: block_bytes[{i}]", 0, INT64_MAX) for i, v in enumerate(sizes)]
    else:
        require_int(sizes, f"{where}: block_bytes", 0, INT64_MAX)
    per_node = require_int(doc["ranks_per_node"], f"{where}: ranks_per_node", 1, ranks) if "ranks_per_node" in doc else 1
    topology = check_network(spec, ranks, per_node, where, digest)
    steps = require_list(doc["steps"], f"{where}: steps")
    transfers = sum(len(step) for step in steps if isinstance(step, list))
    sends = sum(len(t["blocks"]) for step in steps if isinstance(step, list) for t in step
                if isinstance(t, dict) and isinstance(t.get("blocks"), list))
    need, budget = verify_memory(ranks, blocks, len(steps), transfers, sends), memory.budget()
    if need > budget.bytes:  # before the arrays (the block sizes alone are 8 bytes per declared block)
        raise SynthError(f"{where} declares {counted(ranks, 'rank')}, {counted(blocks, 'block')} and "
                         f"{counted(len(steps), 'step')} of {counted(transfers, 'transfer')} sending "
                         f"{counted(sends, 'block')}, which take about {memory.gib(need)} to "
                         f"verify; synth plans with {budget} here")
    builder = ScheduleBuilder(name, algorithm, spec, ranks, blocks, sizes, root, per_node, peer)
    exchanged = set()
    if "size_exchange" in doc:
        for i, v in enumerate(require_list(doc["size_exchange"], f"{where}: size_exchange")):
            exchanged.add(require_int(v, f"{where}: size_exchange[{i}]", 0, max(len(steps) - 1, 0)))
    for k, step in enumerate(steps):
        src, dst, parts, ops = [], [], [], []
        for i, transfer in enumerate(require_list(step, f"{where}: steps[{k}]")):
            at = f"{where}: steps[{k}][{i}]"
            check_keys(require_table(transfer, at), at, _TRANSFER, _TRANSFER)
            src.append(require_int(transfer["src"], f"{at}.src", 0, ranks - 1))
            dst.append(require_int(transfer["dst"], f"{at}.dst", 0, ranks - 1))
            ids = require_list(transfer["blocks"], f"{at}.blocks")
            if not ids:
                raise SynthError(f"{at}.blocks is empty: a transfer moves at least one block")
            parts.append([require_int(v, f"{at}.blocks", 0, blocks - 1) for v in ids])
            if transfer["op"] not in OPS:
                raise SynthError(f"{at}.op is {show(transfer['op'])}, expected one of {', '.join(OPS)}")
            ops.append(OPS.index(transfer["op"]))
        builder.add_step(src, dst, parts, np.asarray(ops, dtype=np.int8), size_exchange=k in exchanged)
    schedule = builder.build()
    schedule.network_sha256 = digest
    if "synthesis" in doc:  # what synthesis recorded: kept as read, for the reader of the file
        schedule.synthesis = require_table(doc["synthesis"], f"{where}: synthesis")
    if "paths" in doc:
        from synth.io.schedule_paths import attach_paths

        schedule = attach_paths(schedule, topology.network(), _path_table(doc["paths"], where), where)
    return schedule


def _path_table(doc, where: str):
    """The "paths" object's arrays, every entry an integer (synth.io.schedule_paths checks the rest)."""
    from synth.io.schedule_paths import PathTable

    at = f"{where}: paths"
    check_keys(require_table(doc, at), at, _PATHS, _PATHS[:3])
    pairs = require_list(doc["pairs"], f"{at}.pairs")
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, list) and len(pair) == 2):
            raise SynthError(f"{at}.pairs[{i}] must be a pair of terminals [a, b], got {show(pair)}")
    flat = [v for pair in pairs for v in pair]
    ends = _integers(flat, f"{at}.pairs").reshape(-1, 2)
    arrays = {key: _integers(require_list(doc[key], f"{at}.{key}"), f"{at}.{key}")
              for key in ("offsets", "channels", "transfers") if key in doc}
    return PathTable(ends[:, 0].copy(), ends[:, 1].copy(), arrays["offsets"], arrays["channels"], arrays.get("transfers"))


def _integers(values: list, where: str) -> np.ndarray:
    """A JSON list of integers (no bool, no float) as int64, or one line naming the first other entry."""
    for i, v in enumerate(values):
        if type(v) is not int or not 0 <= v <= INT64_MAX:
            raise SynthError(f"{where}[{i}] must be a non-negative integer, got {show(v)}")
    return np.array(values, dtype=np.int64).reshape(-1)


def check_network(spec: str, ranks: int, per_node: int, where: str, digest: str | None = None):
    """The network the ranks sit on: a spec synth knows, whose terminals times ranks_per_node are
    the ranks (rank r on terminal r // ranks_per_node); its topology. For a network read from a file
    (`fabric:`, `graph:`), `digest` (the file's SHA-256 the schedule file records) must be the file's now."""
    from synth.topology import parse_topology

    try:
        topology = parse_topology(spec)
        terminals = topology.num_terminals
        actual = topology.source_digest()
    except SynthError as exc:
        raise SynthError(f"{where}: network.spec: {exc}") from None
    if digest is not None and actual is None:
        raise SynthError(f"{where}: network.file_sha256 is for a network read from a file; {spec} is not one")
    if digest is None and actual is not None:
        raise SynthError(f"{where} records no network.file_sha256 for {spec}, so whether its file changed since the "
                         "schedule was made cannot be told: make the schedule again")
    if digest is not None and actual != digest:
        raise SynthError(f"{where}: the file of {spec} changed since the schedule was made (SHA-256 {digest[:12]}... "
                         f"then, {actual[:12]}... now): make the schedule again")
    if terminals * per_node != ranks:
        per = f" x ranks_per_node {per_node} ({terminals * per_node:,})" if per_node != 1 else ""
        raise SynthError(f"{where}: ranks {ranks:,} is not the {terminals:,} terminals of {spec}{per}")
    return topology


def network_digest(s: Schedule) -> str | None:
    """What a schedule file records as its network's file_sha256: the schedule's own (read from its file, or set by
    the command that made it on that topology), else the spec's file's now; None for networks built from their
    parameters."""
    if s.network_sha256 is not None:
        return s.network_sha256
    from synth.topology import parse_topology

    return parse_topology(s.spec).source_digest()
