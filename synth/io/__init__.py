"""synth's file formats, each one module owning its reader, writer and schema (docs/formats.md).

- `instance`: instance files (TOML: a network, its traffic and routing in one file);
- `routes_file`: routes files (synth-routes/2 JSON), `routes_hdf5` their compact form;
- `schedule_file`: schedule files (synth-schedule/1 and /2 JSON; schedule_paths their recorded paths), `schedule_hdf5` their compact form;
- `loads_csv`: per-channel loads; `checkpoint`: the parts a long run keeps;
- `switch_tables`, `qos_policy`: the fabric files OpenSM reads (fabric.net, guid2lid, LFT dump, QoS policy);
- `msccl_xml`: a schedule in MSCCL's XML, one of the EXPORT_FORMATS (`synth export`): a module that declares
  `EXPORT_FORMAT = ExportFormat(...)` is one more.

Formats sit above the data types they carry (networks, schedules, tables) and below the commands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from synth.core.registry import Registry


@dataclass(frozen=True)
class ExportFormat:
    """A collective library's format a verified schedule is written in (`synth export --format NAME`):
    render(schedule, name, protocol, **options) -> text; `takes` the options beyond the schedule it reads;
    `check(schedule)`, where given, refuses what the format cannot carry before the schedule is verified."""

    name: str
    summary: str  # one line: the help text and docs
    render: Callable
    takes: tuple[str, ...] = ()  # "protocol": --proto, "size range": --min-bytes/--max-bytes, "max steps"
    check: Callable | None = None


EXPORT_FORMATS: Registry[ExportFormat] = Registry("export format", __name__, "EXPORT_FORMAT")

