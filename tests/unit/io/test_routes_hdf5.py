"""The compact routes file (synth-routes/2 as HDF5, synth.io.routes_hdf5; issue 23): every kind of routes
written as FILE.h5 reads back as the JSON file's content, `synth check` and `synth tables` print and write
the same for both forms, reruns are byte-identical, and a tampered compact file is refused in one line
(exit 2) or fails check naming the problem (exit 1), never a traceback."""

from __future__ import annotations

import json

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")

from synth.io.routes_file import read_routes, read_routes_columnar, routes_json_text  # noqa: E402
from synth.topology.paths import Paths  # noqa: E402
from synth.topology import parse_topology  # noqa: E402

CASES = {  # name: the arguments of `synth route` (every router kind, lanes, failures, bytes)
    "dmodk": ["xgft:2:4,4:1,4", "--traffic", "a2a-lin", "--router", "dmodk"],
    "layered": ["xgft:2:4,4:1,4", "--traffic", "a2a-lin", "--phase", "0-3", "--router", "layered"],
    "minimal": ["dragonfly:2,4,2", "--traffic", "a2a-lin", "--phase", "0-7", "--router", "minimal"],
    "valiant": ["dragonfly:2,4,2", "--traffic", "a2a-lin", "--phase", "0-3", "--router", "valiant", "--seed", "5"],
    "paths": ["dragonfly:2,4,2", "--traffic", "a2a-lin", "--phase", "0-3", "--router", "paths"],
    "vls": ["dragonfly:2,4,2", "--traffic", "a2a-lin", "--phase", "0-5", "--router", "minimal", "--vls", "3"],
    "fail": ["dragonfly:2,4,2", "--traffic", "a2a-lin", "--phase", "0-7", "--router", "minimal", "--fail",
             "g0r1-g0r2"],
    "bytes": ["dragonfly:2,4,2", "--traffic", "a2a-lin", "--phase", "0-3", "--router", "paths", "--load-unit", "bytes"],
}


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict:
    """Every case routed three times: JSON, compact, compact again (stdout of each)."""
    from synth.cli import main

    directory = tmp_path_factory.mktemp("routes-hdf5")
    out = {}
    for name, argv in CASES.items():
        for suffix in ("json", "h5", "again.h5"):
            target = directory / f"{name}.{suffix}"
            assert main(["route", *argv, "--out", str(target), "--quiet"]) == 0, (name, suffix)
        out[name] = directory
    return out


def _same_docs(a: dict, b: dict) -> None:
    assert a.keys() == b.keys() and list(a) == list(b)
    for key in a:
        if key != "phases":
            assert a[key] == b[key], key
    assert len(a["phases"]) == len(b["phases"])
    for x, y in zip(a["phases"], b["phases"]):
        assert list(x) == list(y)  # the same fields in the same order
        for key in x:
            if isinstance(x[key], Paths):
                assert np.array_equal(x[key].offsets, y[key].offsets) and np.array_equal(x[key].channels, y[key].channels)
            elif isinstance(x[key], np.ndarray):
                assert x[key].dtype == y[key].dtype and np.array_equal(x[key], y[key]), key
            else:
                assert x[key] == y[key], key


@pytest.mark.parametrize("name", list(CASES))
def test_the_compact_file_holds_the_json_files_content(run, written, name):
    directory = written[name]
    json_file, compact, again = (directory / f"{name}.{s}" for s in ("json", "h5", "again.h5"))
    assert compact.read_bytes()[:8] == b"\x89HDF\r\n\x1a\n"
    assert compact.read_bytes() == again.read_bytes()  # byte-identical reruns
    assert read_routes(str(compact)) == read_routes(str(json_file))  # the JSON form of both: lists, every field
    _same_docs(read_routes_columnar(str(compact)), read_routes_columnar(str(json_file)))
    assert routes_json_text(read_routes_columnar(str(compact))) == json_file.read_text()  # rendered back: same bytes


@pytest.mark.parametrize("name", list(CASES))
def test_check_and_tables_say_and_write_the_same_for_both_forms(run, written, tmp_path, name):
    directory = written[name]
    checked = {form: run("check", directory / f"{name}.{form}") for form in ("json", "h5")}
    assert checked["json"][0] == 0 and checked["json"] == checked["h5"], checked
    outputs = {}
    for form in ("json", "h5"):
        code, out, err = run("tables", directory / f"{name}.{form}", "--out", tmp_path / form)
        assert code == 0, err
        outputs[form] = out.replace(str(tmp_path / form), "DIR")
    assert outputs["json"] == outputs["h5"]
    names = sorted(p.name for p in (tmp_path / "json").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "h5").iterdir()) and "routes.json" in names
    for file in names:  # routes.json too: a compact file's JSON form is the JSON file
        assert (tmp_path / "json" / file).read_bytes() == (tmp_path / "h5" / file).read_bytes(), file


def test_the_compact_form_is_read_where_routes_files_are(run, written, tmp_path):
    """synth vls and the API read the compact form too (in the JSON form's lists)."""
    import synth

    directory = written["minimal"]
    for form in ("json", "h5"):
        code, out, err = run("vls", directory / f"minimal.{form}", "--out", tmp_path / f"v-{form}.json")
        assert code == 0, err
    assert (tmp_path / "v-json.json").read_bytes() == (tmp_path / "v-h5.json").read_bytes()
    report = synth.check(str(directory / "minimal.h5"))
    assert report.ok and report.paths == 8 * 72


def test_a_phase_without_flows_and_the_hdf5_suffix(run, tmp_path):
    """Every flow of the phases cut off (a failed switch's terminals to each other): the compact form
    keeps the empty phases, and `.hdf5` names it as `.h5` does."""
    argv = ["dragonfly:2,4,2", "--traffic", "a2a-lin", "--phase", "0", "--router", "minimal", "--fail", "g0r0"]
    for name in ("e.json", "e.hdf5"):
        assert run("route", *argv, "--out", tmp_path / name, "--quiet")[0] == 0
    assert (tmp_path / "e.hdf5").read_bytes()[:4] == b"\x89HDF"
    assert read_routes(str(tmp_path / "e.hdf5")) == read_routes(str(tmp_path / "e.json"))
    assert run("check", tmp_path / "e.hdf5") == run("check", tmp_path / "e.json")


# ----- tampered compact files ---------------------------------------------------------------------

def _tampered(run, written, tmp_path, change, command="check", name="minimal"):
    target = tmp_path / "t.h5"
    target.write_bytes((written[name] / f"{name}.h5").read_bytes())
    with h5py.File(target, "r+") as f:
        change(f)
    if command == "tables":
        return run("tables", target, "--out", tmp_path / "tables")
    return run(command, target)


def _replace(name, values, dtype=None):
    def change(f):
        kept = f[name].dtype if dtype is None else dtype
        del f[name]
        f.create_dataset(name, data=np.asarray(values, dtype=kept))
    return change


def _set(name, index, value):
    def change(f):
        f[name][index] = value
    return change


def _set_attr(name, value):
    def change(f):
        f.attrs[name] = value
    return change


def _edit_json_attr(name, edit):
    def change(f):
        value = json.loads(f.attrs[name])
        edit(value)
        f.attrs[name] = json.dumps(value)
    return change


def _edit_phase(k, edit):
    def change(f):
        fields = [t for t in f["phase_fields"].asstr()[...]]
        value = json.loads(fields[k])
        edit(value)
        fields[k] = json.dumps(value)
        del f["phase_fields"]
        f.create_dataset("phase_fields", data=np.asarray(fields, dtype=object), dtype=h5py.string_dtype("utf-8"))
    return change


@pytest.mark.parametrize("change, message", [
    (_set_attr("format", "synth-routes/1"), "expected synth-routes/2"),
    (lambda f: f.attrs.__delitem__("summary"), "no attribute summary"),
    (_set_attr("extra", 1), "unknown attribute 'extra'"),
    (_set_attr("header", "{not json"), "attribute header is not JSON"),
    (_set_attr("header", "[1, 2]"), "attribute header must be a JSON object"),
    (_set_attr("summary", '{"phases": 1, "phases": 2}'), 'duplicated key "phases"'),
    (_edit_json_attr("header", lambda h: h.__setitem__("colour", "red")), "unknown key 'colour'"),
    (_edit_json_attr("header", lambda h: h.__setitem__("seed", 1.5)), "seed"),
    (_edit_json_attr("header", lambda h: h.__setitem__("phases", [])), "attribute header holds 'phases'"),
    (_edit_json_attr("summary", lambda s: s.pop("flows_sha256")), "flows_sha256"),
    (_edit_phase(2, lambda p: p.__setitem__("max_contention", "3")), "phases[2].max_contention"),
    (_edit_phase(0, lambda p: p.__setitem__("paths", [])), "phase_fields[0] holds 'paths'"),
    (_edit_phase(1, lambda p: p.pop("status")), "phases[1]: missing 'status'"),
    (lambda f: f.__delitem__("channels"), "no dataset 'channels'"),
    (lambda f: f.create_dataset("notes", data=np.zeros(3)), "unknown member 'notes'"),
    (_replace("dst", np.arange(10)), "dataset dst has 10 entries, expected 576"),  # a truncated dataset
    (_replace("src", np.arange(576), np.int32), "dataset src holds int32, expected int64"),
    (_replace("phase_fields", np.zeros(8), np.float64), "dataset phase_fields holds float64, expected UTF-8 text"),
    (_set("path_ptr", 5, 10 ** 9), "dataset path_ptr must not fall: entry 6"),  # a path offset out of range
    (_set("path_ptr", -1, 7), "dataset path_ptr must run from 0 to"),
    (_set("flow_ptr", 3, 2000), "dataset flow_ptr must not fall"),
    (_set("channels", 4, -1), "dataset channels[4] is -1, expected 0..2147483647"),
    (_set("bytes", 0, -4096), "dataset bytes[0] is -4096"),
])
def test_a_tampered_compact_file_is_refused_in_one_line(run, written, tmp_path, change, message):
    _refused(run, written, tmp_path, change, message, "minimal")


def test_lanes_out_of_range_are_refused_in_one_line(run, written, tmp_path):
    _refused(run, written, tmp_path, _set("vls", 7, 15), "dataset vls[7] is 15, expected 0..14", "vls")
    _refused(run, written, tmp_path, _replace("vls", np.zeros(6 * 72), np.int64), "dataset vls holds int64, expected int8",
             "vls")


def _refused(run, written, tmp_path, change, message, name):
    for command in ("check", "tables"):
        code, out, err = _tampered(run, written, tmp_path, change, command, name)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (command, err)
        assert err.startswith("synth: error: routes file '") and message in err, err


def test_a_truncated_file_is_one_line(run, written, tmp_path):
    data = (written["minimal"] / "minimal.h5").read_bytes()
    for cut in (len(data) // 2, len(data) - 100, 600):
        target = tmp_path / "cut.h5"
        target.write_bytes(data[:cut])
        code, out, err = run("check", target)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert "routes file" in err


CHANNELS = parse_topology("dragonfly:2,4,2").network().num_channels


@pytest.mark.parametrize("change, message", [
    (_set("channels", 4, CHANNELS + 3), "path names a channel that does not exist"),  # a channel id out of range
    (_set("channels", 4, 0), "flow"),  # a path that does not connect
    (_set("dst", 9, 0), "flows differ from those of 'a2a-lin'"),  # a flow changed (in range)
    (_set("src", 0, 500), "a flow names a rank outside 0..71"),
    (_edit_phase(3, lambda p: p.__setitem__("max_contention", 9)), "phase 3: recorded max contention 9"),
    (_edit_phase(0, lambda p: p.__setitem__("phase", 1)), "phase list differs"),
    (_edit_json_attr("summary", lambda s: s.__setitem__("flows_sha256", "0" * 64)), "summary.flows_sha256 differs"),
])
def test_a_compact_file_with_wrong_routes_fails_check(run, written, tmp_path, change, message):
    code, out, err = _tampered(run, written, tmp_path, change)
    assert code == 1 and out.startswith("FAIL: ") and message in out, out + err
    code, out, err = _tampered(run, written, tmp_path, change, "tables")
    assert code == 2 and "does not pass synth check" in err and len(err.strip().splitlines()) == 1


def test_the_json_and_compact_checks_name_the_same_problem(run, written, tmp_path):
    """One change made to both forms: the same FAIL lines."""
    json_file = tmp_path / "t.json"
    doc = json.loads((written["minimal"] / "minimal.json").read_text())
    doc["phases"][1]["paths"][5][0] = CHANNELS + 1
    json_file.write_text(json.dumps(doc))
    compact = tmp_path / "t.h5"
    compact.write_bytes((written["minimal"] / "minimal.h5").read_bytes())
    with h5py.File(compact, "r+") as f:
        start = f["flow_ptr"][1] + 5
        f["channels"][f["path_ptr"][start]] = CHANNELS + 1
    assert run("check", json_file) == run("check", compact)


def test_an_unwritable_compact_output_is_one_line_and_nothing_is_left(run, tmp_path):
    (tmp_path / "file").write_text("")
    code, out, err = run("route", *CASES["dmodk"], "--out", tmp_path / "file" / "r.h5", "--quiet")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "cannot write" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_a_failed_run_leaves_no_compact_file(run, tmp_path, monkeypatch):
    """Refused after the output is reserved (--vls beyond the lanes the routes need), or interrupted
    while the compact file is written: nothing is left."""
    code, out, err = run("route", "dragonfly:2,4,2", "--traffic", "a2a-lin", "--router", "valiant", "--vls", "1",
                         "--out", tmp_path / "r.h5", "--quiet")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []
    from synth.io import routes_hdf5

    def interrupted(self, summary):
        raise KeyboardInterrupt

    monkeypatch.setattr(routes_hdf5.RoutesHdf5Writer, "close", interrupted)
    code, out, err = run("route", *CASES["dmodk"], "--out", tmp_path / "r.h5", "--quiet")
    assert code == 130 and list(tmp_path.iterdir()) == []


def test_a_compact_file_too_large_to_check_is_refused_before_reading(run, written, monkeypatch):
    from synth.core import memory

    monkeypatch.setattr(memory, "budget", lambda: memory.Budget(100 << 20, "a test's limit"))
    code, out, err = run("check", written["minimal"] / "minimal.h5")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "holds 576 flows over" in err and "synth plans with 0.1 GiB (a test's limit)" in err
