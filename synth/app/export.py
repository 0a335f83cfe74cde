"""`synth export SCHEDULE --format msccl-xml`: a schedule file (synth-schedule/1 or /2, JSON or HDF5) in a
collective library's format, verified before it is exported (a wrong schedule is refused)."""

from __future__ import annotations

from synth.collectives.verify import verify
from synth.core.errors import SynthError
from synth.io.msccl_xml import render_msccl_xml
from synth.io.schedule_file import read_schedule

FORMATS = ("msccl-xml",)


def export_schedule(path: str, fmt: str = "msccl-xml", name: str | None = None, protocol: str = "Simple") -> str:
    """The text of the exported schedule."""
    if fmt not in FORMATS:
        raise SynthError(f"--format {fmt}: expected one of {', '.join(FORMATS)}")
    schedule = read_schedule(path)
    report = verify(schedule)
    if not report.ok:
        raise SynthError(f"{path} does not deliver its {schedule.collective} (synth verify: {report.violation}); "
                         "not exported")
    return render_msccl_xml(schedule, name, protocol)
