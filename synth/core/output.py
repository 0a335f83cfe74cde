"""All-or-nothing file output.

A command's outputs (a routes file and its loads CSV, a directory of switch tables, a report and
its figures) are reserved together: each target is checked and gets a temporary file beside it
at once, so an unwritable target fails before any work is done; content goes to the temporaries;
only when every one is complete are they renamed into place. On an error or a signal
(synth.core.interrupt turns SIGTERM into an exception) the temporaries, and any directory made for
them, are removed: a failed run leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
from pathlib import Path
from typing import IO, Iterator

from synth.core import interrupt
from synth.core.errors import SynthError


def cannot_write(path: str | os.PathLike, reason: str) -> SynthError:
    return SynthError(f"cannot write {path}: {reason}")


class Output:
    """One reserved target: its temporary file exists from the moment it is reserved."""

    def __init__(self, target: Path, tmp: Path):
        self.target, self.tmp = target, tmp

    @contextlib.contextmanager
    def open(self, mode: str = "w") -> Iterator[IO]:
        try:
            with open(self.tmp, mode) as handle:
                yield handle
        except OSError as exc:
            if exc.filename not in (None, str(self.tmp)):
                raise  # an error of some other file opened inside the block
            raise cannot_write(self.target, exc.strerror or str(exc)) from None

    def write(self, content: str | bytes) -> None:
        with self.open("wb" if isinstance(content, bytes) else "w") as handle:
            handle.write(content)


class OutputSet:
    """`with OutputSet() as out: f = out.reserve(path); ...; f.write(text)`: every reserved file is
    renamed into place when the block ends normally, none when it raises (or is interrupted)."""

    def __init__(self) -> None:
        self._outputs: list[Output] = []
        self._made_dirs: list[Path] = []
        self._inputs: set[str] = set()

    def protect(self, *paths: str | os.PathLike | None) -> None:
        """Files this run reads: reserving one of them as an output is refused."""
        self._inputs.update(os.path.realpath(p) for p in paths if p is not None and str(p).strip())

    def reserve(self, path: str | os.PathLike, what: str = "--out") -> Output:
        if not str(path).strip():
            raise SynthError(f"{what} is empty: give a file name")
        target = Path(path)
        real = os.path.realpath(target)  # the same file however spelled (.., symbolic links)
        if any(os.path.realpath(o.target) == real for o in self._outputs):
            raise SynthError(f"{target} is given as two outputs of one run")
        if real in self._inputs:
            raise SynthError(f"{target} is an input of this run: writing it would destroy it")
        if target.is_dir():
            raise cannot_write(target, "it is a directory")
        self._make_dirs(target.parent)
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        except OSError as exc:
            raise cannot_write(target, exc.strerror or str(exc)) from None
        os.close(fd)
        output = Output(target, Path(tmp))
        self._outputs.append(output)
        return output

    def reserve_dir(self, path: str | os.PathLike, names: list[str], what: str = "--out") -> dict[str, Output]:
        """A directory of files: the directory is made if missing (and removed again on failure)."""
        if not str(path).strip():
            raise SynthError(f"{what} is empty: give a directory name")
        directory = Path(path)
        if directory.exists() and not directory.is_dir():
            raise cannot_write(directory, "it is not a directory")
        self._make_dirs(directory)
        return {name: self.reserve(directory / name, what) for name in names}

    def _make_dirs(self, directory: Path) -> None:
        missing = []
        for parent in [directory, *directory.parents]:
            if parent.is_dir():
                break
            if parent.exists() or parent.is_symlink():
                raise cannot_write(directory, f"{parent} is not a directory")
            missing.append(parent)
        for parent in reversed(missing):
            try:
                parent.mkdir()
            except OSError as exc:
                raise cannot_write(directory, exc.strerror or str(exc)) from None
            self._made_dirs.append(parent)

    def commit(self) -> None:
        """Rename every temporary into place; signals wait until all are (all, not some). Not
        after an interrupt that Python swallowed on its way (interrupt.check)."""
        interrupt.check()
        blocked = {signal.SIGINT, signal.SIGTERM}
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
        try:
            mode = 0o666 & ~_umask()  # mkstemp makes 0600; give the files the usual mode
            for output in self._outputs:
                try:
                    os.chmod(output.tmp, mode)
                    os.replace(output.tmp, output.target)
                except OSError as exc:
                    raise cannot_write(output.target, exc.strerror or str(exc)) from None
            self._outputs, self._made_dirs = [], []
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    def discard(self) -> None:
        for output in self._outputs:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(output.tmp)
        for directory in reversed(self._made_dirs):
            with contextlib.suppress(OSError):
                directory.rmdir()  # only if empty: never what someone else put there
        self._outputs, self._made_dirs = [], []

    def __enter__(self) -> "OutputSet":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            try:
                self.commit()
            finally:
                self.discard()  # after a failed rename: the rest of the temporaries
        else:
            self.discard()


def write_files(contents: dict[str | os.PathLike, str | bytes], what: str = "--out") -> None:
    """Rendered contents to their paths, all or nothing."""
    with OutputSet() as outputs:
        reserved = [(outputs.reserve(path, what), content) for path, content in contents.items()]
        for output, content in reserved:
            output.write(content)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
