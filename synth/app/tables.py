"""`synth tables`'s use case: the switch tables of a routes file that re-verifies, rendered in one
format (OpenSM's files with the QoS policy of its lanes, JSON or CSV), every file in memory before
any is written."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.checking.routes import check_routes
from synth.core.errors import SynthError
from synth.core.validate import read_text
from synth.io import qos_policy as qos
from synth.io import switch_tables as render
from synth.io.routes_file import MAX_FILE_BYTES, read_routes_columnar, routes_json_text
from synth.io.routes_hdf5 import is_hdf5
from synth.tables.forwarding import ForwardingTables, lmc_for
from synth.io.routes_tables import tables_for_routes

FORMATS = ("opensm", "json", "csv")


@dataclass
class RenderedTables:
    tables: ForwardingTables
    texts: dict[str, str]  # file name -> content
    lanes_used: int | None  # virtual lanes of the routes (OpenSM files of a routes file with lanes)
    rates: object = None  # synth.io.switch_tables.FabricRates of fabric.net (OpenSM files)

    @property
    def least_lmc(self) -> bool:
        return lmc_for(self.tables.colours_bound) == self.tables.lids.lmc


def read_checked(path: str) -> tuple[dict, str | None]:
    """A routes file that passes synth check, and a cycle of its channel dependencies where they have one."""
    doc = read_routes_columnar(path)  # either form; per phase flows and paths as arrays
    verified = check_routes(doc)
    if not verified.ok:
        raise SynthError(f"routes file '{path}' does not pass synth check: {verified.problems[0]}")
    return doc, verified.cycle


def refuse_deadlock(path: str, doc: dict, cycle: str | None, allow_deadlock: bool) -> None:
    """Routes whose channel dependencies have a cycle can deadlock the fabric unless their paths have virtual
    lanes (checked acyclic per lane by synth check): refused, unless `allow_deadlock` says the user knows."""
    if _deadlock(doc, cycle) is not None and not allow_deadlock:
        raise SynthError(f"routes file '{path}': its channel dependencies have a cycle ({cycle}), so these "
                         f"tables can deadlock the fabric: give the paths virtual lanes (synth vls {path} --out FILE, or "
                         "synth route ... --vls N) and make the tables of that file, or add --allow-deadlock")


def make_tables(path: str, out: str | None, fmt: str = "opensm", lmc: int | None = None,
                allow_deadlock: bool = False) -> tuple[RenderedTables, str | None]:
    """`synth tables`: the re-verified routes file's tables (refused where they can deadlock, unless
    `allow_deadlock`), written into the directory `out` all or nothing (an earlier run's directory replaced
    whole: synth.core.output); without `out` nothing is written. Also the dependency cycle that can deadlock the
    fabric (routes without lanes; written with `allow_deadlock`), None where there is none."""
    from synth.core.output import OutputSet

    doc, cycle = read_checked(path)  # before anything is written
    with OutputSet() as outputs:
        targets = {}
        if out is not None:
            outputs.protect(path)
            targets = outputs.reserve_dir(out, file_names(doc, fmt), owned=ALL_FILES.__contains__)
        rendered = render_tables(doc, path, fmt, lmc)  # everything before anything is written
        refuse_deadlock(path, doc, cycle, allow_deadlock)  # (after what the tables themselves refuse)
        for name, text in rendered.texts.items() if out is not None else ():
            targets[name].write(text)
    return rendered, _deadlock(doc, cycle)


def _deadlock(doc: dict, cycle: str | None) -> str | None:
    return None if bool(doc["phases"]) and "vls" in doc["phases"][0] else cycle


# Every file `synth tables` writes in some format: an existing --out directory holding only these is an
# earlier run's, replaced whole (synth.core.output)
ALL_FILES = frozenset(["fabric.net", "guid2lid", "lfts.dump", "routes.json", "tables.json", "tables.csv", "dlid.csv",
                       qos.POLICY_FILE, qos.OPTIONS_FILE])


def file_names(doc: dict, fmt: str) -> list[str]:
    """The files `fmt` writes for the routes `doc` (reserved before any work)."""
    names = {"opensm": ["fabric.net", "guid2lid", "lfts.dump", "routes.json"], "json": ["tables.json"],
             "csv": ["tables.csv"]}[fmt] + ["dlid.csv"]
    return names + ([qos.POLICY_FILE, qos.OPTIONS_FILE] if _laned(doc, fmt) else [])


def _laned(doc: dict, fmt: str) -> bool:
    return bool(doc["phases"]) and "vls" in doc["phases"][0] and fmt == "opensm"


def render_tables(doc: dict, path: str, fmt: str, lmc: int | None) -> RenderedTables:
    tables, flows = tables_for_routes(doc, lmc)
    texts = {"dlid.csv": render.render_dlid_csv(flows.src, flows.dst, tables.dlid, flows.phase)}
    lanes_used, rates = None, None
    if fmt == "opensm":
        rates = render.ibsim_rates(tables.network)
        render.check_cabled_both_ways(tables.network)  # (Kautz: one-way links, which no InfiniBand cable is)
        texts |= {"fabric.net": render.render_fabric(tables.network),
                  "guid2lid": render.render_guid2lid(tables.network, tables.lids),
                  "lfts.dump": render.render_lfts(tables),
                  # the routes as JSON (a compact file rendered back: the bytes its JSON form has)
                  "routes.json": routes_json_text(doc) if is_hdf5(path) else read_text(path, "routes file", MAX_FILE_BYTES)}
        if _laned(doc, fmt):
            lanes = np.concatenate([p["vls"] for p in doc["phases"]]).astype(np.int64)
            pair_lanes = qos.lanes_by_pair(flows.src, flows.dst, lanes)
            lanes_used = int(lanes.max(initial=0)) + 1
            texts[qos.POLICY_FILE] = qos.render_policy(tables.network, pair_lanes)
            texts[qos.OPTIONS_FILE] = qos.render_options(lanes_used)
    elif fmt == "json":
        texts["tables.json"] = render.render_json(tables)
    else:
        texts["tables.csv"] = render.render_csv(tables)
    return RenderedTables(tables, texts, lanes_used, rates)
