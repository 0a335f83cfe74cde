"""`synth export SCHEDULE --format NAME`: a schedule file (synth-schedule/1 or /2, JSON or HDF5) in a
collective library's format (synth.io.EXPORT_FORMATS), verified before it is exported (a wrong schedule
is refused); or a directory of band files (`synth synthesize --bytes A..B --out DIR`) as one file per
band, each carrying its band's size range as the library selects by it (msccl-xml's minBytes/maxBytes)."""

from __future__ import annotations

import os

from synth.collectives.verify import verify
from synth.core.errors import SynthError
from synth.io import EXPORT_FORMATS
from synth.io.schedule_file import read_schedule

DEFAULT_FORMAT, DEFAULT_PROTOCOL, DEFAULT_MAX_STEPS = "msccl-xml", "Simple", 64


def export_schedule(path: str, fmt: str = DEFAULT_FORMAT, name: str | None = None,
                    protocol: str = DEFAULT_PROTOCOL, min_bytes: int = 0, max_bytes: int = 0,
                    max_steps: int = DEFAULT_MAX_STEPS) -> str:
    """The text of the exported schedule."""
    check_export(fmt, protocol, min_bytes, max_bytes, max_steps)
    if name is not None:
        check_name(name)  # (before the schedule is read)
    return export_text(read_schedule(path), fmt, name, protocol, path, min_bytes, max_bytes, max_steps)


def check_export(fmt: str, protocol: str = DEFAULT_PROTOCOL, min_bytes: int = 0, max_bytes: int = 0,
                 max_steps: int = DEFAULT_MAX_STEPS):
    """The format asked for (and the options it takes), before any schedule is read."""
    export = EXPORT_FORMATS.get(fmt, "--format")
    for given, option, what in ((protocol != DEFAULT_PROTOCOL, "--proto", "protocol"),
                                (bool(min_bytes or max_bytes), "--min-bytes/--max-bytes", "size range"),
                                (max_steps != DEFAULT_MAX_STEPS, "--max-steps", "max steps")):
        if given and what not in export.takes:
            raise SynthError(f"{option} applies to {', '.join(f for f, e in EXPORT_FORMATS.items() if what in e.takes)}"
                             f", not {fmt}")
    if "size range" in export.takes or "max steps" in export.takes:
        from synth.io.msccl_xml import check_max_steps, check_size_range

        check_size_range(min_bytes, max_bytes)
        check_max_steps(max_steps)
    return export


def _options(export, min_bytes: int, max_bytes: int, max_steps: int) -> dict:
    options = {}
    if "size range" in export.takes:
        options.update(min_bytes=min_bytes, max_bytes=max_bytes)
    if "max steps" in export.takes:
        options["max_steps"] = max_steps
    return options


def export_text(schedule, fmt: str = DEFAULT_FORMAT, name: str | None = None, protocol: str = DEFAULT_PROTOCOL,
                where: str = "the schedule", min_bytes: int = 0, max_bytes: int = 0,
                max_steps: int = DEFAULT_MAX_STEPS) -> str:
    """A schedule (read, or made in this process) verified, then rendered in `fmt`; `where` names
    it in the refusal of a schedule that does not deliver its collective."""
    export = check_export(fmt, protocol, min_bytes, max_bytes, max_steps)
    if name is not None:
        check_name(name)
    if export.check is not None:  # (what the format cannot carry: refused before the verifier's replay)
        export.check(schedule, **_options(export, min_bytes, max_bytes, max_steps))
    report = verify(schedule)
    if not report.ok:
        raise SynthError(f"{where} does not deliver its {schedule.collective} (synth verify: {report.violation}); "
                         "not exported")
    return export.render(schedule, name, protocol, **_options(export, min_bytes, max_bytes, max_steps))


def band_files(directory: str) -> list[str]:
    """The band files of a synthesis' --out directory, by name; anything else in it is refused."""
    from synth.app.synthesize import is_band_file

    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        raise SynthError(f"schedule directory '{directory}': {exc.strerror or exc}") from None
    foreign = [n for n in names if not (is_band_file(n) and os.path.isfile(os.path.join(directory, n)))]
    if foreign:
        raise SynthError(f"schedule directory '{directory}' holds {foreign[0]!r}, not a band file "
                         "(COLLECTIVE-SIZEB.json, as synth synthesize --bytes A..B --out DIR writes them)")
    if not names:
        raise SynthError(f"schedule directory '{directory}' holds no band files (synth synthesize --bytes A..B "
                         "--out DIR writes them)")
    return names


def band_range(schedule, where: str) -> list[int]:
    """The message sizes a band file's synthesis record prices (synthesis.sizes[].bytes)."""
    record = schedule.synthesis or {}
    sizes = record.get("sizes") if isinstance(record, dict) else None
    try:
        values = sorted(int(entry["bytes"]) for entry in sizes)
    except (TypeError, KeyError, ValueError):
        values = []
    if not values:
        raise SynthError(f"{where}: synthesis.sizes names no message size: a band file of synth synthesize "
                         "carries its band's sizes")
    return values


def export_bands(directory: str, fmt: str = DEFAULT_FORMAT, name: str | None = None,
                 protocol: str = DEFAULT_PROTOCOL, max_steps: int = DEFAULT_MAX_STEPS) -> list[tuple[str, str]]:
    """Each band file of a synthesis' --out directory exported, as (file name, text): band k selected from its
    least size to the next band's least size less one byte, the last one up to its largest size (the sizes
    between two bands go to the band below, as a range's sizes choose by the size below them)."""
    export = check_export(fmt, protocol, 0, 0, max_steps)
    if "size range" not in export.takes:
        raise SynthError(f"a directory of band files: {fmt} carries no size range, export each band file alone")
    if name is not None:
        check_name(name)
    read = []
    for file in band_files(directory):
        where = os.path.join(directory, file)
        schedule = read_schedule(where)
        read.append((band_range(schedule, where), file, schedule, where))
    read.sort(key=lambda entry: entry[0][0])
    first = read[0][2]
    for sizes, file, schedule, where in read:
        if (schedule.collective, schedule.ranks) != (first.collective, first.ranks):
            raise SynthError(f"{where} is a {schedule.collective} on {schedule.ranks} ranks, {read[0][3]} a "
                             f"{first.collective} on {first.ranks}: one synthesis' bands are of one collective")
    for (sizes, *_), (later, *_), in zip(read, read[1:]):
        if later[0] <= sizes[-1]:
            raise SynthError(f"{directory}: two band files price the size {later[0]:,} B: one synthesis' bands do "
                             "not overlap")
    out = []
    for k, (sizes, file, schedule, where) in enumerate(read):
        low = sizes[0]
        high = read[k + 1][0][0] - 1 if k + 1 < len(read) else sizes[-1]
        stem = file[:-len(".json")]
        title = f"{name or f'synth-{schedule.algorithm}-{schedule.collective}-{schedule.ranks}'}-{stem.rsplit('-', 1)[1]}"
        text = export_text(schedule, fmt, title, protocol, where, low, high, max_steps)
        out.append((stem + ".xml", text))
    return out


def is_exported_band(name: str) -> bool:
    """An exported band's file (COLLECTIVE-SIZEB.xml): what a directory of earlier exports holds."""
    from synth.app.synthesize import is_band_file

    return name.endswith(".xml") and is_band_file(name[:-len(".xml")] + ".json")


def check_name(name: str) -> None:
    """--name as the exported file carries it (an XML attribute, UTF-8): not empty, text (no byte that is not UTF-8:
    the command line hands those over as lone surrogates), no control character (XML 1.0 has none but tab and the
    line ends, which an attribute does not keep), no U+FFFE or U+FFFF (not characters)."""
    if not name.strip():
        raise SynthError("--name is empty: give the algorithm's name, or leave --name out for "
                         "synth-ALGORITHM-COLLECTIVE-P")
    for i, c in enumerate(name):
        if 0xD800 <= ord(c) <= 0xDFFF:
            raise SynthError(f"--name {ascii(name)[:80]}: character {i + 1} is not UTF-8 text (a byte the command line "
                             "could not decode)")
        if ord(c) < 32 or 127 <= ord(c) < 160 or c in "\ufffe\uffff":
            raise SynthError(f"--name {ascii(name)[:80]}: character {i + 1} ({ascii(c)}) is a control character, which "
                             "the exported name cannot carry")
