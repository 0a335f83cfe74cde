"""A checkpoint directory: results of finished work, kept as they arrive, for the same run to resume.

Layout (docs/formats.md, "Checkpoint directory"):
- `checkpoint.json`: {"format": "synth-checkpoint/1", "inputs": {...}}, what the results depend on
  (network spec, traffic, phase selection, router and its options, seed, load unit, what is kept);
- `JOB-START-STOP.pickle`: the result of positions START..STOP-1 of the run's selected phases, for
  one job of the run (`route`, `loads`): a pickled header (the job, the phase numbers and the digest
  of the run's inputs) then the result. A part whose header names another run, another job or
  other phases is refused by name, and so is a result that is not what the job makes (its `check`).

Every file is written to a temporary name, flushed to disk and renamed, so a kill or a reboot
leaves whole parts only. A run with other inputs is refused, naming what differs. Parts are
Python pickles: read only checkpoints you (or your jobs) wrote.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
from pathlib import Path
from typing import Callable

import numpy as np

from synth.core.errors import SynthError
from synth.core.validate import show

FORMAT = "synth-checkpoint/1"
MANIFEST = "checkpoint.json"
MAX_MANIFEST_BYTES = 16 << 20
_PART = re.compile(r"(?P<job>[a-z]+)-(?P<start>0|[1-9]\d*)-(?P<stop>[1-9]\d*)\.pickle")


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_digest(path: str | Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def phases_digest(phases: np.ndarray) -> str:
    return digest(np.ascontiguousarray(phases, dtype=np.int64).tobytes())


def _flat(value, prefix: str = "") -> dict[str, object]:
    if isinstance(value, dict):
        out = {}
        for key, inner in value.items():
            out |= _flat(inner, f"{prefix}.{key}" if prefix else str(key))
        return out
    return {prefix: value}


def _write_atomically(path: Path, data: bytes) -> None:
    # A name of this process's own: two runs sharing a checkpoint write the same parts, each whole.
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)  # the rename itself survives a reboot
        finally:
            os.close(directory)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise SynthError(f"cannot write checkpoint file '{path}': {exc.strerror or exc}") from None


class Checkpoint:
    """Checked before any work: a directory that is absent or empty (made, with its manifest, by
    `create` as the work starts), or holds a checkpoint of the very same inputs."""

    def __init__(self, directory: str | Path, inputs: dict):
        where = f"--checkpoint {show(str(directory))}"
        if not str(directory).strip():
            raise SynthError(f"{where} is empty: give a directory")
        self.directory = Path(directory)
        self.inputs = json.loads(json.dumps(inputs, sort_keys=True))  # as it reads back from the manifest
        self.stamp = digest(json.dumps(self.inputs, sort_keys=True).encode())  # what every part is of
        if self.directory.exists() and not self.directory.is_dir():
            raise SynthError(f"{where} is a file, not a directory")
        manifest = self.directory / MANIFEST
        if manifest.is_file():
            try:
                if manifest.stat().st_size > MAX_MANIFEST_BYTES:  # before it is read (a run's inputs are a few KiB)
                    raise ValueError("too large")
                saved = json.loads(manifest.read_text())
                assert saved["format"] == FORMAT and isinstance(saved["inputs"], dict)
            except (OSError, ValueError, KeyError, TypeError, AssertionError, RecursionError):
                raise SynthError(f"{where}: {MANIFEST} is not a {FORMAT} manifest") from None
            self._refuse_other_inputs(saved["inputs"], where)
        elif self.directory.is_dir() and any(not p.name.startswith(".") for p in self.directory.iterdir()):
            raise SynthError(f"{where} is a directory with other files and no {MANIFEST}: give an empty or new directory")

    def create(self) -> None:
        """Make the directory and its manifest (when new) as the work starts, so that a place where
        it cannot be fails before any work, and a run refused before then leaves nothing."""
        manifest = self.directory / MANIFEST
        if manifest.is_file():
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SynthError(f"--checkpoint {show(str(self.directory))}: cannot create it ({exc.strerror or exc})") from None
        manifest_text = json.dumps({"format": FORMAT, "inputs": self.inputs}, indent=1, sort_keys=True) + "\n"
        _write_atomically(manifest, manifest_text.encode())

    def _refuse_other_inputs(self, saved: dict, where: str) -> None:
        before, now = _flat(saved), _flat(self.inputs)
        differ = [k for k in sorted(before.keys() | now.keys()) if before.get(k) != now.get(k)]
        if differ:
            shown = "; ".join(f"{k}: {json.dumps(before.get(k))} there, {json.dumps(now.get(k))} now" for k in differ[:3])
            more = f" (and {len(differ) - 3} more)" if len(differ) > 3 else ""
            raise SynthError(f"{where} was made by a run with other inputs ({shown}{more}): give another directory, "
                             "or delete it to start over")

    def resume_note(self, job: str, total: int) -> str:
        """What a stopped run leaves for the next one, said with the failure."""
        kept = sum(b - a for a, b in self.job(job).parts(total))
        return f"{kept} of {total} phases are kept in checkpoint '{self.directory}': the same command goes on from there"

    def job(self, name: str, check: Callable[[object, np.ndarray], str | None] | None = None) -> "CheckpointJob":
        """The parts of job `name`; `check(result, phases)` says what is wrong with a part's result
        for those phases (None when it is what the job makes)."""
        return CheckpointJob(self, name, check)

class CheckpointJob:
    """The parts of one job, keyed by (start, stop) positions in the run's selected phases."""

    def __init__(self, checkpoint: Checkpoint, name: str, check: Callable[[object, np.ndarray], str | None] | None = None):
        self.checkpoint, self.name, self.check = checkpoint, name, check

    def parts(self, count: int) -> list[tuple[int, int]]:
        """The finished parts of positions below `count`, in order, without overlaps."""
        found = sorted((int(m["start"]), int(m["stop"])) for p in self.checkpoint.directory.iterdir()
                       if (m := _PART.fullmatch(p.name)) and m["job"] == self.name)
        parts, end = [], 0
        for start, stop in found:
            if start >= end and count >= stop > start:
                parts.append((start, stop))
                end = stop
        return parts

    def _path(self, key: tuple[int, int]) -> Path:
        return self.checkpoint.directory / f"{self.name}-{key[0]}-{key[1]}.pickle"

    def save(self, key: tuple[int, int], phases: np.ndarray, result) -> None:
        header = {"job": self.name, "inputs": self.checkpoint.stamp, "phases": np.asarray(phases, dtype=np.int64)}
        _write_atomically(self._path(key), pickle.dumps(header, protocol=5) + pickle.dumps(result, protocol=5))

    def load(self, key: tuple[int, int], phases: np.ndarray):
        import contextlib
        import io

        path = self._path(key)
        try:
            # a damaged pickle can make the interpreter print a second error of its own while unwinding (numpy's
            # buffer of a failed load: "SystemError: deallocated bytearray object has exported buffers"); the one
            # line below says what matters
            with open(path, "rb") as handle, contextlib.redirect_stderr(io.StringIO()):
                header = pickle.load(handle)
                if not isinstance(header, dict) or set(header) != {"job", "inputs", "phases"}:
                    raise ValueError("its header is not a synth checkpoint part's")
                if header["inputs"] != self.checkpoint.stamp or header["job"] != self.name:
                    raise ValueError("it belongs to another run (other inputs, or another job)")
                if not np.array_equal(header["phases"], phases):
                    raise ValueError("its phases are not those of this run")
                result = pickle.load(handle)
                if handle.read(1):
                    raise ValueError("it has data after its result")
        except Exception as exc:  # noqa: BLE001 - any unreadable part is said the same way
            why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            raise SynthError(f"checkpoint part '{path}' cannot be read ({why}): delete it and "
                             "rerun to route its phases again") from None
        problem = self.check(result, phases) if self.check is not None else None
        if problem is not None:
            raise SynthError(f"checkpoint part '{path}' cannot be used ({problem}): delete it and rerun to route its "
                             "phases again")
        return result
