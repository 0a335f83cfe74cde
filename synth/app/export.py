"""`synth export SCHEDULE --format NAME`: a schedule file (synth-schedule/1 or /2, JSON or HDF5) in a
collective library's format (synth.io.EXPORT_FORMATS), verified before it is exported (a wrong schedule
is refused)."""

from __future__ import annotations

from synth.collectives.verify import verify
from synth.core.errors import SynthError
from synth.io import EXPORT_FORMATS
from synth.io.schedule_file import read_schedule

DEFAULT_FORMAT, DEFAULT_PROTOCOL = "msccl-xml", "Simple"


def export_schedule(path: str, fmt: str = DEFAULT_FORMAT, name: str | None = None,
                    protocol: str = DEFAULT_PROTOCOL) -> str:
    """The text of the exported schedule."""
    check_export(fmt, protocol)
    return export_text(read_schedule(path), fmt, name, protocol, path)


def check_export(fmt: str, protocol: str = DEFAULT_PROTOCOL):
    """The format asked for (and the options it takes), before any schedule is read."""
    export = EXPORT_FORMATS.get(fmt, "--format")
    if protocol != DEFAULT_PROTOCOL and "protocol" not in export.takes:
        raise SynthError(f"--proto applies to {', '.join(f for f, e in EXPORT_FORMATS.items() if 'protocol' in e.takes)}, "
                         f"not {fmt}")
    return export


def export_text(schedule, fmt: str = DEFAULT_FORMAT, name: str | None = None, protocol: str = DEFAULT_PROTOCOL,
                where: str = "the schedule") -> str:
    """A schedule (read, or made in this process) verified, then rendered in `fmt`; `where` names
    it in the refusal of a schedule that does not deliver its collective."""
    export = check_export(fmt, protocol)
    report = verify(schedule)
    if not report.ok:
        raise SynthError(f"{where} does not deliver its {schedule.collective} (synth verify: {report.violation}); "
                         "not exported")
    return export.render(schedule, name, protocol)
