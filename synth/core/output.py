"""All-or-nothing file output.

A command's outputs (a routes file and its loads CSV, a directory of switch tables, a report and
its figures) are reserved together: each target is checked and gets a temporary file beside it
at once, so an unwritable target fails before any work is done; content goes to the temporaries;
only when every one is complete are they renamed into place. On an error or a signal
(synth.core.interrupt turns SIGTERM into an exception) the temporaries are removed: a failed run
leaves nothing behind. A file's directory must exist (a missing one is a mistaken path, said in one
line, not made).

A directory output (`synth tables --out DIR`, a size range's `synthesize --out DIR`) is one output:
its files go into a fresh temporary directory beside DIR, which replaces DIR whole when the run is
complete, so DIR never mixes two runs' files. An existing DIR is replaced only when it holds nothing
but files of the names that command writes (an earlier run's: said on stderr); anything else in it
(another file, a subdirectory, an input of the run) refuses the run before any work.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import IO, Callable, Iterator

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


class DirOutput:
    """One reserved directory: its files are written into `tmp`, a fresh directory beside `target`
    that replaces it whole on commit. `dir[name]` is a file reserved with the directory,
    `dir.reserve(name)` one named later (a size range's bands, known after the run)."""

    def __init__(self, target: Path, given: str, tmp: Path, owned: Callable[[str], bool], what: str):
        self.target, self.given, self.tmp, self.owned, self.what = target, given, tmp, owned, what
        self.files: dict[str, Output] = {}

    def reserve(self, name: str) -> Output:
        if name in self.files:
            raise SynthError(f"{self.given}/{name} is given as two outputs of one run")
        output = Output(Path(self.given) / name, self.tmp / name)
        self.files[name] = output
        return output

    def __getitem__(self, name: str) -> Output:
        return self.files[name]

    def earlier(self) -> list[str]:
        """What the target holds now (refused when synth did not write it there)."""
        if not self.target.is_dir():
            return []
        try:
            entries = sorted(os.listdir(self.target))
        except OSError as exc:
            raise cannot_write(self.given, exc.strerror or str(exc)) from None
        foreign = [e for e in entries if not (self.owned(e) and (self.target / e).is_file()
                                              and not (self.target / e).is_symlink())]
        if foreign:
            shown = ", ".join(e + "/" * (self.target / e).is_dir() for e in foreign[:4])
            more = f" and {len(foreign) - 4} more" if len(foreign) > 4 else ""
            raise cannot_write(self.given, f"it holds what synth does not write there ({shown}{more}); {self.what} "
                                           "replaces its directory whole: give a new or empty directory")
        return entries


class OutputSet:
    """`with OutputSet() as out: f = out.reserve(path); ...; f.write(text)`: every reserved file is
    renamed into place when the block ends normally, none when it raises (or is interrupted)."""

    def __init__(self) -> None:
        self._outputs: list[Output] = []
        self._dirs: list[DirOutput] = []
        self._inputs: set[str] = set()
        self._stale: list[Path] = []  # an earlier run's files beside the outputs, removed on commit

    def protect(self, *paths: str | os.PathLike | None) -> None:
        """Files this run reads: reserving one of them as an output is refused."""
        self._inputs.update(os.path.realpath(p) for p in paths if p is not None and str(p).strip())

    def _taken(self, real: str) -> bool:
        return any(os.path.realpath(o.target) == real for o in self._outputs) or \
            any(str(d.target) == real or real.startswith(str(d.target) + os.sep) for d in self._dirs)

    def reserve(self, path: str | os.PathLike, what: str = "--out") -> Output:
        if not str(path).strip():
            raise SynthError(f"{what} is empty: give a file name")
        target = Path(path)
        real = os.path.realpath(target)  # the same file however spelled (.., symbolic links)
        if self._taken(real):
            raise SynthError(f"{target} is given as two outputs of one run")
        if real in self._inputs:
            raise SynthError(f"{target} is an input of this run: writing it would destroy it")
        if target.is_dir():
            raise cannot_write(target, "it is a directory")
        _check_parent(target)
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        except OSError as exc:
            raise cannot_write(target, exc.strerror or str(exc)) from None
        os.close(fd)
        output = Output(target, Path(tmp))
        self._outputs.append(output)
        return output

    def reserve_dir(self, path: str | os.PathLike, names: list[str], what: str = "--out",
                    owned: Callable[[str], bool] | None = None) -> DirOutput:
        """A directory of files, written beside it and swapped in whole (the module's docstring).
        `owned(name)`: whether a file of that name in an existing directory is one this command
        writes (default: one of `names`)."""
        if not str(path).strip():
            raise SynthError(f"{what} is empty: give a directory name")
        given = str(path)
        directory = Path(path)
        if directory.exists() and not directory.is_dir():
            raise cannot_write(given, "it is not a directory")
        real = Path(os.path.realpath(directory))  # a link to a directory: the directory it names is replaced
        if real.parent == real:
            raise cannot_write(given, "it is a file system's root")
        here = Path(os.path.realpath(os.getcwd()))
        if here == real or real in here.parents:
            raise cannot_write(given, f"it holds the current directory, and {what} replaces its directory whole: "
                                      "name a directory for the files")
        if self._taken(str(real)) or any(str(o.target) == str(real) for o in self._outputs):
            raise SynthError(f"{given} is given as two outputs of one run")
        for source in self._inputs:
            if source == str(real) or source.startswith(str(real) + os.sep):
                raise SynthError(f"{source} is an input of this run inside {given}, which {what} replaces whole: "
                                 "read it from elsewhere, or write the files to another directory")
        _check_parent(real, given)
        known = set(names)
        entry = DirOutput(real, given.rstrip("/") or given, Path(), owned or known.__contains__, what)
        entry.earlier()  # refused now, before any work, when it holds what synth did not write
        try:
            entry.tmp = Path(tempfile.mkdtemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent))
        except OSError as exc:
            raise cannot_write(given, exc.strerror or str(exc)) from None
        self._dirs.append(entry)
        for name in names:
            entry.reserve(name)
        return entry

    def remove_stale(self, path: str | os.PathLike, why: str) -> None:
        """A file an earlier run wrote beside this run's outputs that this run does not (a Markdown report's
        figure it no longer has): removed on commit, after saying so, so that no two runs' files mix."""
        self._stale.append(Path(path))
        print(f"note: removing {path}, {why}", file=sys.stderr, flush=True)

    def commit(self) -> None:
        """Rename every temporary into place; signals wait until all are (all, not some). Not
        after an interrupt that Python swallowed on its way (interrupt.check)."""
        interrupt.check()
        for entry in self._dirs:  # what appeared there during the run is refused too, before any rename
            entry.earlier()
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
            self._outputs = []
            while self._dirs:
                _swap_in(self._dirs[0], 0o777 & ~_umask())
                self._dirs.pop(0)
            for path in self._stale:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            self._stale = []
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    def discard(self) -> None:
        for output in self._outputs:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(output.tmp)
        for entry in self._dirs:
            shutil.rmtree(entry.tmp, ignore_errors=True)
        self._outputs, self._dirs, self._stale = [], [], []

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


def _check_parent(target: Path, given: str | os.PathLike | None = None) -> None:
    """The directory an output goes into exists: a missing one is a mistyped path, not made."""
    shown = given if given is not None else target
    parent = target.parent
    if parent.is_dir():
        return
    for above in [parent, *parent.parents]:
        if above.is_dir():
            break
        if above.exists() or above.is_symlink():
            raise cannot_write(given if given is not None else parent, f"{above} is not a directory")
    raise cannot_write(shown, f"no directory {parent}")


def _swap_in(entry: DirOutput, mode: int) -> None:
    """The temporary directory becomes the target; an earlier one (synth's files only, checked)
    is said, moved aside, then removed."""
    try:
        os.chmod(entry.tmp, mode)
        if not os.path.lexists(entry.target):
            os.rename(entry.tmp, entry.target)
            return
        held = entry.earlier()
        if held:
            shown = ", ".join(held[:6]) + (f" and {len(held) - 6} more" if len(held) > 6 else "")
            print(f"note: replacing {entry.given} whole (it held an earlier run's {shown})", file=sys.stderr, flush=True)
        old = Path(tempfile.mkdtemp(prefix=f".{entry.target.name}.", suffix=".old", dir=entry.target.parent))
        os.rename(entry.target, old / "dir")
    except OSError as exc:
        raise cannot_write(entry.given, exc.strerror or str(exc)) from None
    try:
        os.rename(entry.tmp, entry.target)
    except OSError as exc:
        os.rename(old / "dir", entry.target)  # back as it was
        os.rmdir(old)
        raise cannot_write(entry.given, exc.strerror or str(exc)) from None
    shutil.rmtree(old, ignore_errors=True)


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
