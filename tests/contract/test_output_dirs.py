"""Every command's directory output is all or nothing too (issue 41 items 2 and 3): `synth tables --out DIR` and a
size range's `synthesize --out DIR` are written beside DIR and swapped in whole, never a mix of two runs; a
missing parent is one line; tables of routes that can deadlock are refused unless asked; differing link rates are
weighed in time by default and written into fabric.net."""

from __future__ import annotations

from pathlib import Path

import pytest

import numpy as np

from synth.io.switch_tables import ibsim_rates
from synth.topology import parse_topology
from synth.topology.network import differing_rates

SMALL = "xgft:3:4,4,2:1,4,2"


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_tables_with_lanes_then_without_leaves_no_qos_files(run, tmp_path):
    laned, plain, tables = tmp_path / "laned.json", tmp_path / "plain.json", tmp_path / "tables"
    assert run("route", SMALL, "--traffic", "a2a-lin", "--router", "dmodk", "--phase", "0-3", "--out", laned, "--vls", "2",
               "--quiet")[0] == 0
    assert run("route", SMALL, "--traffic", "a2a-lin", "--router", "dmodk", "--phase", "0-3", "--out", plain, "--quiet")[0] == 0
    code, _, err = run("tables", laned, "--out", tables)
    assert code == 0 and err == "", err
    assert {"qos-policy.conf", "opensm-qos.conf"} <= set(files_under(tables))
    code, out, err = run("tables", plain, "--out", tables)
    assert code == 0
    assert one_line(err).startswith(f"note: replacing {tables} whole (it held an earlier run's dlid.csv, fabric.net, ")
    assert files_under(tables) == ["dlid.csv", "fabric.net", "guid2lid", "lfts.dump", "routes.json"]
    assert (tables / "routes.json").read_bytes() == plain.read_bytes()
    code, _, _ = run("tables", plain, "--out", tables, "--format", "csv")  # another format: that format's files only
    assert code == 0 and files_under(tables) == ["dlid.csv", "tables.csv"]
    assert files_under(tmp_path) == ["laned.json", "plain.json", "tables", "tables/dlid.csv", "tables/tables.csv"]


def test_tables_refuse_a_directory_holding_other_files_and_leave_it_alone(run, tmp_path):
    routes, tables = tmp_path / "r.json", tmp_path / "tables"
    assert run("route", SMALL, "--traffic", "a2a-lin", "--router", "dmodk", "--phase", "0", "--out", routes, "--quiet")[0] == 0
    tables.mkdir()
    (tables / "fabric.net").write_text("an earlier run's")
    (tables / "README").write_text("the administrator's notes")
    code, _, err = run("tables", routes, "--out", tables)
    assert code == 2
    assert one_line(err) == (f"synth: error: cannot write {tables}: it holds what synth does not write there (README); "
                             "--out replaces its directory whole: give a new or empty directory")
    assert files_under(tables) == ["README", "fabric.net"] and (tables / "README").read_text() == "the administrator's notes"
    code, _, err = run("tables", tables / "fabric.net", "--out", tmp_path / "no" / "t")
    assert code == 2  # (not a routes file: refused before the output; the missing parent below)
    code, _, err = run("tables", routes, "--out", tmp_path / "no" / "t")
    assert code == 2 and one_line(err) == f"synth: error: cannot write {tmp_path / 'no' / 't'}: no directory {tmp_path / 'no'}"
    assert not (tmp_path / "no").exists()


def test_a_file_out_in_a_missing_directory_is_one_line_exit_2(run, tmp_path):
    for argv in (["route", SMALL, "--traffic", "a2a-lin", "--router", "dmodk", "--phase", "0"],
                 ["topology", SMALL, "--format", "json"],
                 ["schedule", "allreduce", "--algorithm", "ring", "--network", "torus:2,2"]):
        code, _, err = run(*argv, "--out", tmp_path / "nonexistent" / "dir" / "x.json")
        assert code == 2, (argv, err)
        assert one_line(err) == (f"synth: error: cannot write {tmp_path / 'nonexistent' / 'dir' / 'x.json'}: no directory "
                                 f"{tmp_path / 'nonexistent' / 'dir'}")
    assert files_under(tmp_path) == []


def test_synthesize_bands_are_named_by_their_least_size_and_a_rerun_replaces_the_directory(run, tmp_path):
    out = tmp_path / "o"
    argv = ["synthesize", "allreduce", "--network", "torus:2,2", "--quiet", "--time-limit", "5"]
    code, _, err = run(*argv, "--bytes", "4KiB,1KiB", "--out", out)
    assert code == 0, err
    assert files_under(tmp_path) == ["o", "o/allreduce-1024B.json"]  # one band of 1 KiB and 4 KiB: its least
    code, _, err = run(*argv, "--bytes", "4KiB,1MiB", "--out", out)
    assert code == 0
    assert one_line(err) == f"note: replacing {out} whole (it held an earlier run's allreduce-1024B.json)"
    names = files_under(out)
    assert "allreduce-1024B.json" not in names and names and all(n.startswith("allreduce-") for n in names)
    (out / "mine.txt").write_text("x")
    before = files_under(tmp_path)
    code, _, err = run(*argv, "--bytes", "1KiB,4KiB", "--out", out)
    assert code == 2 and "it holds what synth does not write there (mine.txt)" in one_line(err)
    assert files_under(tmp_path) == before


def test_synthesize_a_size_range_into_a_file_name_is_refused(run, tmp_path):
    for name in ("one.json", "one.h5"):
        code, _, err = run("synthesize", "allreduce", "--network", "torus:2,2", "--bytes", "1KiB..4KiB", "--quiet",
                           "--out", tmp_path / name)
        assert code == 2
        assert one_line(err) == (f"synth: error: --out {tmp_path / name}: 3 sizes give a schedule file per size band, "
                                 "written into a directory: name a directory (or give one size for one file)")
    assert files_under(tmp_path) == []


def test_tables_refuse_routes_that_can_deadlock_unless_allowed(run, tmp_path):
    routes, tables = tmp_path / "r.json", tmp_path / "t"
    assert run("route", "torus:6", "--traffic", "a2a-lin", "--router", "minimal", "--out", routes, "--quiet")[0] == 0
    code, _, err = run("tables", routes, "--out", tables)
    assert code == 2
    line = one_line(err)
    assert line.startswith(f"synth: error: routes file '{routes}': its channel dependencies have a cycle (channel ")
    assert line.endswith(f"so these tables can deadlock the fabric: give the paths virtual lanes (synth vls {routes} --out "
                         "FILE, or synth route ... --vls N) and make the tables of that file, or add --allow-deadlock")
    assert files_under(tmp_path) == ["r.json"]
    code, out, err = run("tables", routes, "--out", tables, "--allow-deadlock")
    assert code == 0 and (tables / "lfts.dump").exists(), err
    assert ("note: the routes' channel dependencies have a cycle and no virtual lanes: these tables can deadlock "
            "(written with --allow-deadlock)") in out
    laned = tmp_path / "v.json"
    assert run("vls", routes, "--out", laned)[0] == 0  # what the refusal says to do
    code, _, err = run("tables", laned, "--out", tmp_path / "t2")
    assert code == 0 and (tmp_path / "t2" / "qos-policy.conf").exists(), err
    # the API makes its tables by the same use case: the same refusal, the same way out
    import synth
    from synth.core.errors import SynthError

    with pytest.raises(SynthError, match="can deadlock the fabric.*--allow-deadlock"):
        synth.switch_tables(str(routes), tmp_path / "t3")
    assert not (tmp_path / "t3").exists()
    assert "lfts.dump" in synth.switch_tables(str(routes), allow_deadlock=True).texts


def _slow_uplinks(tmp_path: Path) -> Path:
    """A 16-leaf fat tree as a fabric file whose switch-to-switch cables run at a quarter of the host links' rate."""
    fabric = tmp_path / "f.net"
    assert __import__("helpers").run("topology", "xgft:2:4,4:1,2", "--format", "ibnetdiscover", "--out", fabric)[0] == 0
    lines, in_switch = [], False
    for line in fabric.read_text().splitlines():
        if line.startswith(("Switch", "Ca")):
            in_switch = line.startswith("Switch")
        elif line.startswith("["):
            rate = "1xSDR" if in_switch and '\t"s' in line else "4xSDR"  # switch to switch, or a host link
            line += f" {rate}" if "#" in line else f"\t\t# {rate}"
        lines.append(line)
    fabric.write_text("\n".join(lines) + "\n")
    return fabric


def test_differing_link_rates_are_weighed_in_time_by_default_and_written_for_ibsim(run, tmp_path):
    fabric = _slow_uplinks(tmp_path)
    network = parse_topology(f"fabric:{fabric}:recognize=no").network()
    assert differing_rates(network) == [0.25, 1.0]
    code, out, _ = run("route", f"fabric:{fabric}", "--traffic", "a2a-lin", "--router", "dmodk", "--out", tmp_path / "r.json")
    assert code == 0
    assert ("load      bytes over bandwidth per channel (contention, bounds and gaps in bytes); by default, as the links "
            "differ in rate (0.25, 1); --load-unit messages counts messages") in out
    code, out, _ = run("bounds", f"fabric:{fabric}", "--traffic", "a2a-lin")
    assert code == 0 and "every bound in bytes); by default, as the links differ in rate (0.25, 1)" in out
    code, out, _ = run("route", f"fabric:{fabric}", "--traffic", "a2a-lin", "--router", "dmodk", "--load-unit", "messages")
    assert code == 0 and "load " not in out
    import synth  # the API decides as the command line does

    assert synth.route(f"fabric:{fabric}", "a2a-lin", router="dmodk", phases="0").load_unit == "bytes"
    assert synth.route(f"fabric:{fabric}", "a2a-lin", router="dmodk", phases="0", load_unit="messages").load_unit \
        == "messages"
    code, out, err = run("tables", tmp_path / "r.json", "--out", tmp_path / "t")
    assert code == 0, err
    assert "links: rates 0.25, 1 (relative) run in fabric.net as ibsim's 1xSDR, 4xSDR" in out
    written = (tmp_path / "t" / "fabric.net").read_text()
    assert "w=1 s=1\t\t# 1xSDR" in written and "w=2 s=1\t\t# 4xSDR" in written
    back = parse_topology(f"fabric:{tmp_path / 't' / 'fabric.net'}:recognize=no").network()
    assert sorted(np.unique(back.channel_bandwidth).tolist()) == [0.25, 1.0]  # synth's reader reads them back


def test_generated_families_keep_counting_messages_and_their_fabric_files_unchanged():
    """Tori, HyperX and Kautz model a router's terminal link at its degree: not a slower link, no rate."""
    for spec in ("torus:4,4", "hyperx:3,3", "xgft:2:4,4:1,2", "dragonfly:2,4,2"):
        network = parse_topology(spec).network()
        assert differing_rates(network) == [] and ibsim_rates(network).options is None


def test_ibsim_rates_keep_every_ratio_ibsim_can_run_and_say_when_not():
    network = parse_topology("torus:4,4").network()
    network.channel_bandwidth = np.where(np.arange(network.num_channels) % 3 == 0, 2.0, 1.0)
    network.spec = "fabric:x"  # a real fabric: its rates are real
    rates = ibsim_rates(network)
    assert rates.exact and {name for _, name in rates.options} == {"4xSDR", "4xDDR"}
    network.channel_bandwidth = np.where(np.arange(network.num_channels) % 3 == 0, 2.0606, 1.0)  # HDR next to EDR
    rates = ibsim_rates(network)
    assert not rates.exact and {name for _, name in rates.options} == {"4xSDR", "4xDDR"}  # the nearest


def test_a_markdown_report_rerun_removes_its_earlier_figures_and_nothing_else(run, tmp_path):
    page = tmp_path / "r.md"
    argv = ["report", SMALL, "--routers", "dmodk", "--out", page, "--quiet"]
    assert run(*argv, "--patterns", "opt,lin")[0] == 0
    assert files_under(tmp_path) == ["r-lin.png", "r-opt.png", "r-time.png", "r.md"]
    (tmp_path / "notes.png").write_text("someone else's")
    (tmp_path / "r-Logo.png").write_text("not a name synth gives a figure")
    code, _, err = run(*argv, "--patterns", "opt")
    assert code == 0
    assert one_line(err) == f"note: removing {tmp_path / 'r-lin.png'}, a figure of an earlier r.md that this report does not have"
    assert files_under(tmp_path) == ["notes.png", "r-Logo.png", "r-opt.png", "r-time.png", "r.md"]
