"""The orbit schedule file: `synth-orbit-schedule/1` as HDF5 (docs/formats.md), a schedule stored as
the block deliveries of one rank per orbit and the group that moves them to every rank
(synth.collectives.orbit): a 65,536-rank allgather's 4.3 x 10^9 deliveries as rank 0's 262,140.

Layout: root attributes format, collective (allgather, reduce-scatter or allreduce), algorithm,
spec, ranks, chunks, steps, group ("translations": the family's, synth.topology.translations),
synthesis (the record's JSON text, where synthesized), network_sha256 (where the network is a
file); datasets chunk_bytes (per chunk: block c x ranks + r's bytes, every r), and per delivery
of the representatives' blocks, in step order, step, src, dst, chunk, op (0 copy, 1 reduce), origin
(the representative whose block chunk x ranks + origin it carries), then path_ptr (deliveries + 1
offsets) and path_channels: the channels the delivery's transfer crosses; representatives (the
least rank of each rank orbit, increasing). A file without representatives and origin (one
representative, written before there were several) reads as rank 0's.

Written byte-identically for the same schedule (no timestamps), read back strictly as the
schedule file is (synth.io.schedule_hdf5): every attribute, shape, type and range is checked,
and the arrays' memory planned from the shapes, before any is read; what the arrays must be beyond
their ranges (walks joining their ranks, one path per message orbit, the replay) `synth verify`
checks (synth.collectives.orbit.verify_orbit).
"""

from __future__ import annotations

import json

import numpy as np

from synth.collectives.orbit import ORBIT_COLLECTIVES, OrbitSchedule
from synth.core import memory
from synth.core.errors import SynthError
from synth.core.text import counted
from synth.topology.paths import Paths

FORMAT = "synth-orbit-schedule/1"
GROUPS = ("translations",)
MAX_RANKS, MAX_CHUNKS, MAX_STEPS = 1 << 24, 1 << 16, 1 << 31
DELIVERY_DATASETS = ("step", "src", "dst", "chunk", "op")
ORBIT_DATASETS = ("representatives", "origin")  # absent together: rank 0 alone
# what one delivery of rank 0's blocks costs while read and verified: its six int64 arrays here and in the
# representative schedule's replay, about ten times over (measured: torus:256,256's 262,140 deliveries)
BYTES_PER_DELIVERY = 480
BYTES_PER_HOP = 32


def is_orbit_file(path: str) -> bool:
    """Whether an HDF5 file's format attribute names an orbit schedule (False where it cannot be read)."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            value = f.attrs.get("format")
    except (OSError, RuntimeError, KeyError, TypeError):
        return False
    return (value.decode("utf-8", "replace") if isinstance(value, bytes) else value) == FORMAT


def write_orbit_hdf5(path, orbit: OrbitSchedule, shown=None) -> None:
    """The orbit schedule into a new HDF5 file at `path` (a reserved output's temporary, named
    `shown` in an error)."""
    import h5py

    from synth.io.schedule_hdf5 import DIGEST, _write

    try:
        with h5py.File(path, "w", libver="earliest", track_order=False) as f:
            for key, value in (("format", FORMAT), ("collective", orbit.collective), ("algorithm", orbit.algorithm),
                               ("spec", orbit.spec), ("ranks", orbit.ranks), ("chunks", orbit.chunks),
                               ("steps", orbit.steps), ("group", orbit.group)):
                f.attrs[key] = value
            if orbit.network_sha256 is not None:
                f.attrs[DIGEST] = orbit.network_sha256
            if orbit.synthesis is not None:
                f.attrs["synthesis"] = json.dumps(orbit.synthesis, sort_keys=True)
            arrays = {"chunk_bytes": orbit.chunk_bytes, "step": orbit.step, "src": orbit.src, "dst": orbit.dst,
                      "chunk": orbit.chunk, "op": orbit.op, "path_ptr": orbit.paths.offsets,
                      "path_channels": orbit.paths.channels, "representatives": orbit.representatives,
                      "origin": orbit.origin}
            for name, array in arrays.items():
                _write(f, name, np.ascontiguousarray(array, dtype=np.int64))
    except OSError as exc:
        from synth.core.output import cannot_write

        raise cannot_write(shown or path, exc.strerror or str(exc)) from None


def read_orbit_hdf5(path: str) -> tuple[OrbitSchedule, object]:
    """An orbit schedule file, checked strictly (exit 2 naming the attribute or dataset), and its
    network."""
    from synth.io.schedule_hdf5 import read_hdf5

    return read_hdf5(path, f"orbit schedule file '{path}'", _read)


def _read(f, where: str, h5py) -> tuple[OrbitSchedule, object]:
    from synth.io.schedule_file import check_network
    from synth.io.schedule_hdf5 import DIGEST, _digest, _in_range, _integer, _integer_dataset, _offsets, _read, \
        _synthesis, _text

    attrs = {k: f.attrs[k] for k in f.attrs}
    fmt = attrs.get("format")
    fmt = fmt.decode("utf-8", "replace") if isinstance(fmt, bytes) else fmt
    missing = [k for k in ("collective", "algorithm", "spec", "ranks", "chunks", "steps", "group") if k not in attrs]
    if fmt != FORMAT or missing:
        raise SynthError(f"{where} is not a {FORMAT} file" + (f" (no attribute {missing[0]})" if missing else ""))
    name, algorithm, spec, group = (_text(attrs[k], f"{where}: {k}") for k in ("collective", "algorithm", "spec",
                                                                               "group"))
    if name not in ORBIT_COLLECTIVES:
        raise SynthError(f"{where}: collective '{name}' has no orbit form (orbit schedules are of "
                         f"{', '.join(ORBIT_COLLECTIVES)})")
    if group not in GROUPS:
        raise SynthError(f"{where}: group '{group}' is not one synth knows ({', '.join(GROUPS)})")
    ranks = _integer(attrs["ranks"], f"{where}: ranks", 1, MAX_RANKS)
    chunks = _integer(attrs["chunks"], f"{where}: chunks", 1, MAX_CHUNKS)
    steps = _integer(attrs["steps"], f"{where}: steps", 0, MAX_STEPS)
    synthesis = _synthesis(attrs.get("synthesis"), where)
    digest = _digest(attrs.get(DIGEST), where)
    topology = check_network(spec, ranks, 1, where, digest)
    present = [k for k in ORBIT_DATASETS if k in f]
    if len(present) == 1:
        raise SynthError(f"{where}: {present[0]} without {[k for k in ORBIT_DATASETS if k not in present][0]}")
    names = ("chunk_bytes", *DELIVERY_DATASETS, "path_ptr", "path_channels", *present)
    for key in names:
        _integer_dataset(f, key, where, h5py)
    length = {key: int(f[key].shape[0]) for key in names}
    deliveries = length["step"]
    expected = {"chunk_bytes": (chunks, "one per chunk"), **{k: (deliveries, "as step") for k in DELIVERY_DATASETS},
                "path_ptr": (deliveries + 1, "one more than step"),
                **({"origin": (deliveries, "as step")} if present else {})}
    for key, (n, why) in expected.items():
        if length[key] != n:
            raise SynthError(f"{where}: {key} has {length[key]:,} entries, expected {n:,} ({why})")
    need = BYTES_PER_DELIVERY * deliveries + BYTES_PER_HOP * length["path_channels"]
    if need > memory.budget().bytes:  # from the shapes, before any array is read
        raise SynthError(f"{where} declares {counted(deliveries, 'delivery')} of its representatives' blocks with "
                         f"{counted(length['path_channels'], 'channel hop')}, which take about {memory.gib(need)} to "
                         f"verify; synth plans with {memory.budget()} here")
    read = {key: _read(f[key]).astype(np.int64) for key in names}
    network = topology.network()
    for key, top in (("step", steps - 1), ("src", ranks - 1), ("dst", ranks - 1), ("chunk", chunks - 1), ("op", 1),
                     ("path_channels", network.num_channels - 1), ("representatives", ranks - 1),
                     ("origin", ranks - 1)):
        if key not in read:
            continue
        _in_range(read[key], 0, top, f"{where}: {key}")
    _in_range(read["chunk_bytes"], 0, np.iinfo(np.int64).max, f"{where}: chunk_bytes")
    offsets = _offsets(read["path_ptr"], length["path_channels"], f"{where}: path_ptr", allow_equal=False)
    if present and (len(read["representatives"]) < 1 or (np.diff(read["representatives"]) <= 0).any()):
        raise SynthError(f"{where}: representatives must be distinct ranks in increasing order")
    orbit = OrbitSchedule(name, algorithm, spec, ranks, chunks, read["chunk_bytes"], steps,
                          *(read[k] for k in DELIVERY_DATASETS), Paths(offsets, read["path_channels"]), group,
                          synthesis, digest, read.get("origin"), read.get("representatives"))
    return orbit, topology


__all__ = ["FORMAT", "is_orbit_file", "read_orbit_hdf5", "write_orbit_hdf5"]
