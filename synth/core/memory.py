"""The memory this process may still use: what every size guard plans against.

Physical memory alone is not the limit a run meets. A shell's `ulimit -v` (RLIMIT_AS) caps the
process's address space, `ulimit -d` (RLIMIT_DATA) its heap and anonymous mappings, and a
container's or a batch job's cgroup (v2 memory.max, v1 memory.limit_in_bytes) the memory of
every process in it; numpy's allocations fail with MemoryError at the first of them that is
reached. `budget()` is the least of:

- MEMORY_SHARE of the machine's physical memory (the rest is left to the system and to others);
- RLIMIT_AS minus the address space already mapped (/proc/self/status VmSize: the interpreter,
  numpy, numba and the run so far);
- RLIMIT_DATA minus the data already mapped (VmData);
- per cgroup on the way from this process's cgroup to the root, its limit minus its usage
  (memory.max - memory.current; v1: memory.limit_in_bytes - memory.usage_in_bytes), so that a
  parent's limit counts too;

ignoring what is unlimited ("max", RLIM_INFINITY, v1's page-rounded 2^63) or cannot be read.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path

MEMORY_SHARE = 0.8  # of the machine's physical memory, what one run may plan to use
_PROC = Path("/proc/self")  # (tests point it at a directory of their own)
_UNLIMITED_V1 = 1 << 62  # cgroup v1 writes "no limit" as 2^63 rounded down to a page: anything above is none


@dataclass(frozen=True)
class Budget:
    bytes: int  # what a run may still allocate
    source: str  # which limit it comes from, for a one-line refusal

    def __str__(self) -> str:
        return f"{gib(self.bytes)} ({self.source})"


def gib(n: int | float) -> str:
    return f"{n / 2**30:.1f} GiB"


def budget() -> Budget:
    """The least of the limits above, with the one that decides."""
    candidates = [_physical()]
    status = _status()
    for name, limit, used in (("RLIMIT_AS", resource.RLIMIT_AS, "VmSize"), ("RLIMIT_DATA", resource.RLIMIT_DATA, "VmData")):
        soft = resource.getrlimit(limit)[0]
        if soft != resource.RLIM_INFINITY and soft >= 0:
            in_use = status.get(used, 0)
            candidates.append(Budget(max(0, soft - in_use), f"the {name} limit ({'ulimit -v' if used == 'VmSize' else 'ulimit -d'}) "
                                     f"of {gib(soft)} less the {gib(in_use)} this process has mapped"))
    candidates.extend(_cgroups())
    return min(candidates, key=lambda b: b.bytes)


def _physical() -> Budget:
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return Budget(int(MEMORY_SHARE * total), f"{MEMORY_SHARE:.0%} of the {gib(total)} of physical memory")


def _status() -> dict[str, int]:
    """VmSize, VmData, ... of /proc/self/status in bytes (empty where there is no /proc)."""
    out = {}
    try:
        for line in (_PROC / "status").read_text().splitlines():
            key, _, value = line.partition(":")
            parts = value.split()
            if len(parts) == 2 and parts[1] == "kB" and parts[0].isascii() and parts[0].isdigit():
                out[key] = int(parts[0]) << 10
    except OSError:
        pass
    return out


def _read_number(path: Path) -> int | None:
    """An integer file of the cgroup filesystem; None for "max", a missing file or anything else."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isascii() and text.isdigit() else None


def _mounts() -> list[tuple[str, str, str, str]]:
    """(mount root, mount point, filesystem type, super options) of /proc/self/mountinfo."""
    out = []
    try:
        lines = (_PROC / "mountinfo").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        after = line.split(" - ", 1)[1].split()
        if len(after) >= 3:
            out.append((fields[3], fields[4], after[0], after[2]))
    return out


def _cgroup_dirs() -> list[tuple[Path, str, str]]:
    """(directory of this process's cgroup, limit file, usage file) for the memory controller: v2
    first, then v1. The path in /proc/self/cgroup is relative to the mount's root (a container
    mounts its own cgroup as /)."""
    try:
        lines = (_PROC / "cgroup").read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            version, fstype, files = 2, "cgroup2", ("memory.max", "memory.current")
        elif "memory" in controllers.split(","):
            version, fstype, files = 1, "cgroup", ("memory.limit_in_bytes", "memory.usage_in_bytes")
        else:
            continue
        for root, point, kind, options in _mounts():
            if kind != fstype or version == 1 and "memory" not in options.split(","):
                continue
            relative = path if root == "/" else path[len(root):] if path.startswith(root) else None
            if relative is None:
                continue
            out.append((Path(point) / relative.lstrip("/"), Path(point), *files))
            break
    return [(d, top, limit, usage) for d, top, limit, usage in out]


def _cgroups() -> list[Budget]:
    """limit - usage for this process's cgroup and each of its ancestors up to the mount point."""
    out = []
    for directory, top, limit_file, usage_file in _cgroup_dirs():
        at = directory
        while True:
            limit = _read_number(at / limit_file)
            if limit is not None and limit < _UNLIMITED_V1:
                usage = _read_number(at / usage_file) or 0
                out.append(Budget(max(0, limit - usage), f"the cgroup memory limit of {gib(limit)} ({at / limit_file}) "
                                  f"less the {gib(usage)} its processes use"))
            if at == top or at.parent == at:
                break
            at = at.parent
    return out


def prefer_plain_pages() -> None:
    """numpy asks the kernel for transparent huge pages on every large array; where the kernel then
    compacts memory synchronously (defrag = madvise, as on the development machine) a fresh 0.5 GB
    array costs 1.5 s instead of 0.2 s, which dominated the schedule replays (measured: Swing on the
    64x64 torus, 67 M block sends). Large arrays are touched once or twice here: plain pages win.
    Called by the command's entry (synth/__main__.py) and the benchmarks, for their own process
    only: importing synth as a library changes nothing. numpy, not imported yet, reads the choice
    from its environment variable."""
    import sys

    if "numpy" in sys.modules:
        try:
            from numpy._core.multiarray import _set_madvise_hugepage
        except ImportError:  # another numpy layout: keep its default
            return
        _set_madvise_hugepage(False)
    else:
        os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
