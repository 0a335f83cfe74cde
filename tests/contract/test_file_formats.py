"""Every file format synth reads, attacked (issue 41, item 7): schedule files (JSON and HDF5), routes files (JSON
and HDF5), `fabric:` (ibnetdiscover) and `graph:` files (edge list, GML, node-link JSON), checkpoint directories.

A valid file of each format, made by synth itself, is mutated (cut short, bytes flipped, a field given another
type, a number made huge, negative or NaN, a dataset removed or declared with 2^40 entries) and handed to the
command line in this process. The answer must be clean: exit 0 (the change did not matter), 1 (a check found a
difference: verify, check) or 2 with exactly one line on stderr; never a traceback or exit 70; and on any failure
the output location holds what it held before. Hypothesis searches the mutations with few examples and every test
has a wall-clock limit, so this file stays a small part of CI's time.

Then the cases the issue found, each as a plain test: a corrupted compressed chunk, a synthesis record nested
deep or holding NaN, a run of 2^31 or 2^40 blocks with stride 0, datasets declaring 2^40 entries, a network file
replaced after a schedule was made on it, export --name with bytes that are not UTF-8 or control characters,
fabric files that synth's own reader would refuse (long names, over the size cap), JSON files over the readers'
cap."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from helpers import PROPERTY, REPO, assert_unchanged, assert_user_error, listing, run, workspace

h5py = pytest.importorskip("h5py")

FEW = settings(PROPERTY, max_examples=15)  # each example runs a command or two: keep CI fast
LIMIT = pytest.mark.timeout(240)  # wall-clock limit of each property (its fixtures included)
HUGE = [1 << 31, 1 << 40, (1 << 63) - 1, 1 << 64, 10 ** 30]
NUMBERS = HUGE + [-1, -(1 << 63), 0]


def clean(result, outputs: Path | None = None, before=None) -> int:
    """The contract for a mutated file: exit 0, 1 or 2 (2: one line), no traceback, nothing written on failure."""
    code, out, err = result
    shown = f"exit {code!r}\n--- stderr ---\n{err[-3000:]}\n--- stdout ---\n{out[-1000:]}"
    assert "Traceback" not in err + out, "a traceback:\n" + shown
    assert code in (0, 1, 2), "expected exit 0, 1 or 2:\n" + shown
    if code == 2:
        assert_user_error(result)
    if code != 0 and outputs is not None:
        assert_unchanged(outputs, before)
    return code


def in_workspace(content: bytes, name: str, argv_of, mutate=None) -> int:
    """Write `content` as inputs/NAME (then `mutate(path)`), run `argv_of(path, outputs)` and check it is clean."""
    with workspace() as (inputs, outputs):
        path = inputs / name
        path.write_bytes(content)
        if mutate is not None:
            mutate(path)
        before = listing(outputs)
        return clean(run(*argv_of(path, outputs)), outputs, before)


# ======================================================================================================
# Valid files of each format, made by synth
# ======================================================================================================

@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("formats")
    files = {}

    def make(name, *argv):
        path = directory / name
        code, out, err = run(*argv, "--out", path)
        assert code == 0, err
        files[name] = path

    for suffix in ("json", "h5"):
        make(f"lists.{suffix}", "schedule", "allreduce", "--algorithm", "swing-b", "--network", "torus:4,4")  # >1024: chunked
        make(f"runs.{suffix}", "schedule", "alltoallv", "--algorithm", "tuna", "--network", "torus:4,4", "--radix", "4",
             "--sizes", "random:100:3")
        make(f"routes.{suffix}", "route", "xgft:2:4,4:1,4", "--traffic", "a2a-lin", "--router", "dmodk", "--phase", "0-3",
             "--quiet")
    make("paths.h5", "synthesize", "allgather", "--network", "torus:2,2", "--bytes", "1KiB", "--quiet")
    make("paths.json", "synthesize", "allgather", "--network", "torus:2,2", "--bytes", "1KiB", "--quiet")
    make("fabric.net", "topology", "xgft:2:4,4:1,4", "--format", "ibnetdiscover")
    files["discovered.net"] = REPO / "instances" / "fabrics" / "dragonfly-2-4-2.ibnetdiscover"
    (directory / "g.txt").write_text("# a ring of four and a chord\na b\nb c\nc d\nd a\na c 2\n")
    (directory / "g.gml").write_text('graph [\n  node [ id 0 label "a" terminals 1 ]\n  node [ id 1 label "b" terminals 1 ]\n'
                                     '  node [ id 2 label "c" terminals 2 ]\n  edge [ source 0 target 1 bandwidth 2.0 ]\n'
                                     '  edge [ source 1 target 2 ]\n  edge [ source 2 target 0 ]\n]\n')
    (directory / "g.json").write_text(json.dumps({
        "directed": False, "multigraph": True, "graph": {},
        "nodes": [{"id": "a", "terminals": 1}, {"id": "b", "terminals": 1}, {"id": "c", "terminals": 1},
                  {"id": "h", "kind": "host"}],
        "links": [{"source": "a", "target": "b", "bandwidth": 2.0}, {"source": "b", "target": "c"},
                  {"source": "c", "target": "a"}, {"source": "h", "target": "a"}]}))
    for name in ("g.txt", "g.gml", "g.json"):
        files[name] = directory / name
    return files


def schedule_argv(command):
    def argv(path, outputs):
        return ["verify", path] if command == "verify" else ["export", path, "--out", outputs / "x.xml"]
    return argv


def routes_argv(command):
    def argv(path, outputs):
        return ["check", path] if command == "check" else ["tables", path, "--out", outputs / "t"]
    return argv


def spec_argv(family, options=""):
    def argv(path, outputs):
        return ["topology", f"{family}:{path}{options}", "--format", "json", "--out", outputs / "t.json"]
    return argv


def test_control_every_valid_file_is_accepted(made):
    """The controls: unchanged, each file's command succeeds (a reader refusing everything cannot pass)."""
    for name in ("lists.json", "lists.h5", "runs.json", "runs.h5", "paths.json", "paths.h5"):
        for command in ("verify", "export") if not name.startswith("runs") else ("verify",):  # (MSCCL has no alltoallv)
            assert in_workspace(made[name].read_bytes(), name, schedule_argv(command)) == 0, (name, command)
    for name in ("routes.json", "routes.h5"):
        for command in ("check", "tables"):
            assert in_workspace(made[name].read_bytes(), name, routes_argv(command)) == 0, (name, command)
    for name in ("fabric.net", "discovered.net"):
        assert in_workspace(made[name].read_bytes(), "f.net", spec_argv("fabric", ":recognize=no")) == 0
    for name in ("g.txt", "g.gml", "g.json"):
        assert in_workspace(made[name].read_bytes(), name, spec_argv("graph", ":p=1" * (name == "g.txt"))) == 0


# ======================================================================================================
# Bytes: cut short, flipped (every format)
# ======================================================================================================

FILES = {  # file: (name in the workspace, the commands that read it)
    "lists.json": ("s.json", [schedule_argv("verify"), schedule_argv("export")]),
    "runs.json": ("s.json", [schedule_argv("verify"), schedule_argv("export")]),
    "paths.json": ("s.json", [schedule_argv("verify")]),
    "lists.h5": ("s.h5", [schedule_argv("verify"), schedule_argv("export")]),
    "runs.h5": ("s.h5", [schedule_argv("verify"), schedule_argv("export")]),
    "paths.h5": ("s.h5", [schedule_argv("verify")]),
    "routes.json": ("r.json", [routes_argv("check"), routes_argv("tables")]),
    "routes.h5": ("r.h5", [routes_argv("check"), routes_argv("tables")]),
    "fabric.net": ("f.net", [spec_argv("fabric", ":recognize=no")]),
    "discovered.net": ("f.net", [spec_argv("fabric")]),
    "g.txt": ("g.txt", [spec_argv("graph", ":p=1:recognize=no")]),
    "g.gml": ("g.gml", [spec_argv("graph")]),
    "g.json": ("g.json", [spec_argv("graph")]),
}


@st.composite
def damaged(draw, content: bytes) -> bytes:
    """Cut short, or a few bytes flipped (in the last half more often: where an HDF5 file keeps its chunks)."""
    if draw(st.booleans()):
        return content[:draw(st.integers(0, len(content.rstrip()) - 1))]
    data = bytearray(content)
    start = draw(st.sampled_from([0, len(data) // 2]))
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(start, len(data) - 1))
        data[at] ^= draw(st.integers(1, 255))
    return bytes(data)


@LIMIT
@pytest.mark.parametrize("name", sorted(FILES))
@settings(PROPERTY, max_examples=12)
@given(data=st.data())
def test_property_damaged_bytes(made, name, data):
    content = made[name].read_bytes()
    target, commands = FILES[name]
    argv = data.draw(st.sampled_from(commands), label="command")
    in_workspace(data.draw(damaged(content), label="content"), target, argv)


# ======================================================================================================
# JSON files: a value of another type, a huge, negative or NaN number, a key removed
# ======================================================================================================

def _nodes(value, path=()):
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield path + (key,), child
        yield from _nodes(child, path + (key,))


def _edited(doc, path, new=None, delete=False):
    doc = json.loads(json.dumps(doc))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return doc


replacements = st.one_of(st.sampled_from(NUMBERS), st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -0.5, 2.5]),
                         st.sampled_from([None, True, "", "x", "\ud800", [], {}, [[[]]], {"a": 1}]), st.text(max_size=6))


@st.composite
def mutated_json(draw, doc):
    nodes = [(p, v) for p, v in _nodes(doc)]
    path, _ = draw(st.sampled_from(nodes))
    if draw(st.integers(0, 4)) == 0:
        return _edited(doc, path, delete=True)
    return _edited(doc, path, draw(replacements))


def _json_text(doc) -> bytes:
    return json.dumps(doc, allow_nan=True).encode("utf-8", "surrogatepass")


JSON_FILES = {"lists.json": "s.json", "runs.json": "s.json", "paths.json": "s.json", "routes.json": "r.json",
              "g.json": "g.json"}


@LIMIT
@pytest.mark.parametrize("name", sorted(JSON_FILES))
@FEW
@given(data=st.data())
def test_property_json_fields_of_another_type_or_size(made, name, data):
    doc = json.loads(made[name].read_text())
    if name.startswith("paths"):  # (its long synthesis record would take most draws)
        doc["synthesis"] = {"method": "x", "sizes": [{"bytes": 1024, "seconds": 1e-6}]}
    content = _json_text(data.draw(mutated_json(doc), label="document"))
    target = JSON_FILES[name]
    commands = FILES[name][1]
    in_workspace(content, target, data.draw(st.sampled_from(commands), label="command"))


# ======================================================================================================
# HDF5 files (schedules, routes): datasets and attributes changed through h5py
# ======================================================================================================

def _set_value(name, index, value):
    def change(f):
        data = f[name][...]
        try:
            data[index % len(data)] = value
        except (OverflowError, ValueError):
            data = data.astype(np.float64)
            data[index % len(data)] = value
        del f[name]
        f.create_dataset(name, data=data)
    return change


def _retype(name, dtype, fill):
    def change(f):
        shape = f[name].shape
        del f[name]
        with np.errstate(invalid="ignore"):  # (NaN cast to an integer: whatever it becomes is the mutation)
            f.create_dataset(name, data=np.full(shape, fill, dtype=dtype))
    return change


def _declare_huge(name, length):
    def change(f):  # a chunked dataset of 2^40 entries, none written: a small file declaring a huge one
        dtype = f[name].dtype
        del f[name]
        f.create_dataset(name, shape=(length,), dtype=dtype, chunks=(1024,))
    return change


def _attribute(key, value):
    def change(f):
        f.attrs[key] = value
    return change


def _delete(key):
    def change(f):
        if key in f:
            del f[key]
        else:
            del f.attrs[key]
    return change


attribute_values = st.one_of(st.sampled_from(NUMBERS), st.sampled_from([math.nan, -1.5, 1e300]),
                             st.sampled_from(["", "x", "{", "[]", '{"a": NaN}', "[" * 5000 + "]" * 5000, "1e999"]),
                             st.just(np.arange(3)), st.just(b"\xff\xfe"))


@st.composite
def hdf5_change(draw, names: list[str], attributes: list[str]):
    kind = draw(st.sampled_from(["value", "value", "retype", "huge", "attribute", "delete"]))
    if kind == "value":
        return _set_value(draw(st.sampled_from(names)), draw(st.integers(0, 1 << 20)),
                          draw(st.sampled_from(NUMBERS + [math.nan])))
    if kind == "retype":
        return _retype(draw(st.sampled_from(names)), draw(st.sampled_from([np.float64, np.int8, np.uint64, "S3"])),
                       draw(st.sampled_from([math.nan, -1, 255, 1e20])))
    if kind == "huge":
        return _declare_huge(draw(st.sampled_from(names)), draw(st.sampled_from([1 << 31, 1 << 40])))
    if kind == "attribute":
        return _attribute(draw(st.sampled_from(attributes)), draw(attribute_values))
    return _delete(draw(st.sampled_from(names + attributes)))


def _change(path: Path, change) -> None:
    with h5py.File(path, "r+") as f:
        try:
            change(f)
        except (TypeError, ValueError, OverflowError):  # a value this dataset cannot take at all: the file stays as it was
            pass


HDF5_FILES = {"lists.h5": "s.h5", "runs.h5": "s.h5", "paths.h5": "s.h5", "routes.h5": "r.h5"}


@LIMIT
@pytest.mark.parametrize("name", sorted(HDF5_FILES))
@FEW
@given(data=st.data())
def test_property_hdf5_datasets_and_attributes(made, name, data):
    with h5py.File(made[name], "r") as f:
        names, attributes = sorted(f.keys()), sorted(f.attrs.keys()) + ["synthesis"] * name.startswith("paths")
    change = data.draw(hdf5_change(names, attributes), label="change")
    argv = data.draw(st.sampled_from(FILES[name][1]), label="command")
    in_workspace(made[name].read_bytes(), HDF5_FILES[name], argv, lambda path: _change(path, change))


# ======================================================================================================
# Text network files (fabric:, graph:): numbers made huge, negative or NaN; lines dropped or repeated
# ======================================================================================================

@st.composite
def edited_text(draw, text: str) -> str:
    lines = text.splitlines()
    kind = draw(st.sampled_from(["number", "number", "line"]))
    if kind == "line":
        at = draw(st.integers(0, len(lines) - 1))
        lines = lines[:at] + lines[at + 1:] if draw(st.booleans()) else lines[:at] + [lines[at]] * 2 + lines[at:]
        return "\n".join(lines) + "\n"
    import re

    numbers = list(re.finditer(r"\d+(?:\.\d+)?", text))
    match = draw(st.sampled_from(numbers))
    new = draw(st.sampled_from(["0", "-1", "nan", "inf", "1e400", str(1 << 64), "9" * 40, "0x1", "1.5", "-0"]))
    return text[:match.start()] + new + text[match.end():]


TEXT_FILES = {"fabric.net": "f.net", "discovered.net": "f.net", "g.txt": "g.txt", "g.gml": "g.gml", "g.json": "g.json"}


@LIMIT
@pytest.mark.parametrize("name", sorted(TEXT_FILES))
@FEW
@given(data=st.data())
def test_property_network_files_with_other_numbers_and_lines(made, name, data):
    text = data.draw(edited_text(made[name].read_text()), label="text")
    in_workspace(text.encode(), TEXT_FILES[name], FILES[name][1][0])


# ======================================================================================================
# Checkpoint directories: the manifest and the parts changed
# ======================================================================================================

ROUTE = ["route", "xgft:2:2,2:1,2", "--traffic", "a2a-lin", "--router", "dmodk", "--quiet"]


@LIMIT
@FEW
@given(which=st.sampled_from(["checkpoint.json", "part"]), data=st.data())
def test_property_damaged_checkpoints(which, data):
    """A checkpoint directory with its manifest or a part cut short or flipped: the rerun resumes (exit 0), or
    says in one line which file cannot be used; its --out is left as it was."""
    with workspace() as (inputs, outputs):
        checkpoint = inputs / "ck"
        assert run(*ROUTE, "--checkpoint", checkpoint, "--out", inputs / "first.json")[0] == 0
        path = checkpoint / "checkpoint.json" if which == "checkpoint.json" else \
            next(p for p in checkpoint.iterdir() if p.suffix == ".pickle")
        path.write_bytes(data.draw(damaged(path.read_bytes()), label="content"))
        before = listing(outputs)
        clean(run(*ROUTE, "--checkpoint", checkpoint, "--out", outputs / "r.json"), outputs, before)


# ======================================================================================================
# The cases the issue found
# ======================================================================================================

def _copy_changed(made, name: str, tmp_path: Path, change) -> Path:
    path = tmp_path / name
    shutil.copy(made[name], path)
    with h5py.File(path, "r+") as f:
        change(f)
    return path


def test_a_corrupted_compressed_chunk_is_a_damaged_file(made, tmp_path):
    with h5py.File(made["lists.h5"], "r") as f:
        dataset = f["block_ids"]
        assert dataset.compression == "gzip"
        chunk = dataset.id.get_chunk_info(0)
    data = bytearray(made["lists.h5"].read_bytes())
    for at in range(chunk.byte_offset + 10, chunk.byte_offset + 40):
        data[at] ^= 0xFF
    (tmp_path / "s.h5").write_bytes(bytes(data))
    for argv in (["verify", tmp_path / "s.h5"], ["export", tmp_path / "s.h5", "--out", tmp_path / "x.xml"]):
        assert_user_error(run(*argv), "is damaged", all_of=(str(tmp_path / "s.h5"),))
    assert not (tmp_path / "x.xml").exists()


@pytest.mark.parametrize("record, message", [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"gap": NaN}', "NaN"),
    ('{"gap": 1e999}', "Infinity"),
    ('{"gap": 1, "gap": 2}', "appears twice"),
    ("[1, 2]", "not the JSON text of an object"),
])
def test_a_synthesis_record_is_read_as_strictly_as_a_json_file(made, tmp_path, record, message):
    path = _copy_changed(made, "paths.h5", tmp_path, _attribute("synthesis", record))
    assert_user_error(run("verify", path), message, all_of=("synthesis",))


@pytest.mark.parametrize("count", [1 << 31, 1 << 40])
def test_a_run_of_a_huge_count_with_stride_0_is_refused(made, tmp_path, count):
    def change(f):
        f["run_count"][0], f["run_stride"][0] = count, 0
    path = _copy_changed(made, "runs.h5", tmp_path, change)
    assert_user_error(run("verify", path), "run_count[0]", all_of=(f"{count}",))


def test_a_run_repeating_its_block_or_running_past_the_blocks_is_refused(made, tmp_path):
    def repeat(f):
        f["run_count"][0], f["run_stride"][0] = 2, 0
    assert_user_error(run("verify", _copy_changed(made, "runs.h5", tmp_path, repeat)), "run_stride 0")

    def past(f):
        f["run_count"][0], f["run_stride"][0] = 2, 1 << 62
    (tmp_path / "runs.h5").unlink()
    assert_user_error(run("verify", _copy_changed(made, "runs.h5", tmp_path, past)), "runs past the blocks")


@pytest.mark.parametrize("name, dataset", [("lists.h5", "block_ptr"), ("lists.h5", "block_ids"), ("lists.h5", "dst"),
                                           ("runs.h5", "run_ptr"), ("runs.h5", "run_first"), ("runs.h5", "size_exchange"),
                                           ("paths.h5", "path_channels"), ("paths.h5", "path_ptr"),
                                           ("paths.h5", "path_src")])
def test_a_dataset_declaring_2_to_the_40_entries_is_refused_before_it_is_read(made, tmp_path, name, dataset):
    path = _copy_changed(made, name, tmp_path, _declare_huge(dataset, 1 << 40))
    assert path.stat().st_size < 1 << 20
    line = assert_user_error(run("verify", path), dataset, "GiB")
    assert "damaged" not in line


def test_the_schedules_of_a_replaced_network_file_are_refused(tmp_path):
    """A schedule made on a fabric: or graph: file records the file's SHA-256; verify, export (and simulate, which
    reads it the same way) refuse it once the file changed, in one line."""
    assert run("topology", "xgft:2:4,4:1,4", "--format", "ibnetdiscover", "--out", tmp_path / "f.net")[0] == 0
    (tmp_path / "g.txt").write_text("a b\nb c\nc d\nd a\n")
    for spec, path in ((f"fabric:{tmp_path / 'f.net'}", tmp_path / "f.net"), (f"graph:{tmp_path / 'g.txt'}:p=1", tmp_path / "g.txt")):
        for suffix in ("json", "h5"):
            schedule = tmp_path / f"s.{suffix}"
            assert run("schedule", "allreduce", "--algorithm", "ring", "--network", spec, "--out", schedule)[0] == 0
            assert run("verify", schedule)[0] == 0
        original = path.read_bytes()
        path.write_bytes(original + b"\n# replaced\n")
        for suffix in ("json", "h5"):
            schedule = tmp_path / f"s.{suffix}"
            assert_user_error(run("verify", schedule), "changed since the schedule was made")
            assert_user_error(run("export", schedule, "--out", tmp_path / "x.xml"), "changed since the schedule was made")
            assert not (tmp_path / "x.xml").exists()
        path.write_bytes(original)
        assert run("verify", tmp_path / "s.json")[0] == 0
        doc = json.loads((tmp_path / "s.json").read_text())
        del doc["network"]["file_sha256"]  # a file from before digests: whether the network changed cannot be told
        (tmp_path / "old.json").write_text(json.dumps(doc))
        assert_user_error(run("verify", tmp_path / "old.json"), "records no network.file_sha256")


def test_the_schedules_the_api_writes_record_their_network_files_digest_too(tmp_path):
    """The digest is stamped where a schedule is made (synth.app), so the API's files carry it as the commands' do."""
    import synth

    graph = tmp_path / "g.txt"
    graph.write_text("a b\nb c\nc d\nd a\n")
    spec = f"graph:{graph}:p=1"
    made = [synth.schedule("allgather", spec, "ring", message_bytes=1024)]
    made += [band.schedule for band in synth.synthesize("allgather", spec, sizes="1KiB", time_limit=2)]
    for k, schedule in enumerate(made):
        for suffix in ("json", "h5"):
            path = synth.write_schedule(schedule, tmp_path / f"s{k}.{suffix}")
            assert synth.verify(path).ok
    graph.write_text("a b\nb c\nc d\nd a\n# replaced\n")
    for k in range(len(made)):
        for suffix in ("json", "h5"):
            assert_user_error(run("verify", tmp_path / f"s{k}.{suffix}"), "changed since the schedule was made")


@pytest.mark.parametrize("name, message", [
    ("", "is empty"), ("  ", "is empty"), ("ab" + os.fsdecode(b"\xff"), "not UTF-8"), ("a\x01b", "control character"),
    ("a\nb", "control character"), ("a\x85", "control character"),
])
def test_export_name_that_the_file_cannot_carry(made, tmp_path, name, message):
    assert_user_error(run("export", made["lists.json"], "--name", name, "--out", tmp_path / "x.xml"), message,
                      all_of=("--name",))
    assert list(tmp_path.iterdir()) == []


def test_export_name_in_any_language_is_kept(made, tmp_path):
    assert run("export", made["lists.json"], "--name", "allreduce-été-全", "--out", tmp_path / "x.xml")[0] == 0
    assert 'name="allreduce-été-全"' in (tmp_path / "x.xml").read_text(encoding="utf-8")


def test_a_fabric_file_synth_writes_its_reader_reads(tmp_path):
    """Node names over the reader's 200 characters, or that UTF-8 cannot write, are refused when written; a file
    over fabric:FILE's size cap too (the cap made small here: torus:540,540 takes a minute to render)."""
    long = "n" * 201
    (tmp_path / "g.txt").write_text(f"{long} b\nb c\nc {long}\n")
    assert_user_error(run("topology", f"graph:{tmp_path / 'g.txt'}:p=1", "--format", "ibnetdiscover",
                          "--out", tmp_path / "g.net"), "201 characters")
    (tmp_path / "s.json").write_text('{"nodes": [{"id": "\\ud800"}, {"id": "b"}, {"id": "c"}], "links": ['
                                     '{"source": "\\ud800", "target": "b"}, {"source": "b", "target": "c"}]}')
    assert_user_error(run("topology", f"graph:{tmp_path / 's.json'}:p=1", "--format", "ibnetdiscover",
                          "--out", tmp_path / "g.net"), "lone surrogate")
    (tmp_path / "g.txt").write_text(f"{'n' * 200} b\nb c\nc {'n' * 200}\n")  # at the limit: written and read back
    assert run("topology", f"graph:{tmp_path / 'g.txt'}:p=1", "--format", "ibnetdiscover", "--out", tmp_path / "g.net")[0] == 0
    assert run("topology", f"fabric:{tmp_path / 'g.net'}", "--format", "json")[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.net", "g.txt", "s.json"]


def test_a_fabric_file_over_the_readers_cap_is_not_written(tmp_path, monkeypatch):
    import synth.topology.fabric as fabric

    assert run("topology", "torus:8,8", "--format", "ibnetdiscover", "--out", tmp_path / "t.net")[0] == 0
    size = (tmp_path / "t.net").stat().st_size
    monkeypatch.setattr(fabric, "MAX_FILE_BYTES", size - 1)  # the writer's check and the reader's cap are one
    assert_user_error(run("topology", "torus:8,8", "--format", "ibnetdiscover", "--out", tmp_path / "u.net"),
                      f"{size:,} bytes", all_of=(f"{size - 1:,}",))
    assert_user_error(run("topology", f"fabric:{tmp_path / 't.net'}"), f"{size - 1:,}")
    monkeypatch.setattr(fabric, "MAX_FILE_BYTES", 1000)  # refused before the text is made
    assert_user_error(run("topology", "torus:8,8", "--format", "ibnetdiscover", "--out", tmp_path / "u.net"), "at least")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.net"]


def test_json_files_over_the_readers_cap_are_not_written(tmp_path, monkeypatch):
    import synth.io.routes_file as routes_file
    import synth.io.schedule_file as schedule_file

    monkeypatch.setattr(schedule_file, "MAX_FILE_BYTES", 20_000)
    assert_user_error(run("schedule", "allreduce", "--algorithm", "swing-b", "--network", "torus:4,4",
                          "--out", tmp_path / "s.json"), "compact form", all_of=("20,000",))
    assert run("schedule", "allreduce", "--algorithm", "swing-b", "--network", "torus:4,4", "--out", tmp_path / "s.h5")[0] == 0
    monkeypatch.setattr(routes_file, "MAX_FILE_BYTES", 5_000)
    assert_user_error(run("route", "xgft:2:4,4:1,4", "--traffic", "a2a-lin", "--router", "dmodk", "--quiet",
                          "--out", tmp_path / "r.json"), "compact form", all_of=("5,000",))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.h5"]


@pytest.mark.parametrize("name, key", [("lists.h5", "algorithm"), ("lists.h5", "spec"), ("lists.h5", "format"),
                                       ("paths.h5", "synthesis"), ("routes.h5", "header"), ("routes.h5", "format")])
def test_an_attribute_that_is_not_utf8_is_one_line(made, tmp_path, name, key):
    """Found by the properties: h5py hands bytes that are not UTF-8 over as lone surrogates, which no output can
    print (exit 70 from export, UnicodeEncodeError)."""
    path = _copy_changed(made, name, tmp_path, _attribute(key, b"\xff\xfe"))
    argv = ["export", path, "--out", tmp_path / "x.xml"] if name != "routes.h5" else ["tables", path, "--out", tmp_path / "t"]
    assert_user_error(run(*argv), key, "synth-schedule file", "compact")
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_a_fabric_whose_description_is_too_long_to_be_a_name_is_written_by_its_ids(made, tmp_path):
    """A description over the reader's 200 characters is no name (its quoted id is): the fabric read, written again
    and read back."""
    text = made["fabric.net"].read_text()
    header = next(line for line in text.splitlines() if line.startswith("Switch"))
    description = header.split("#", 1)[1].split('"')[1]
    (tmp_path / "f.net").write_text(text.replace(f'# "{description}"', f'# "{"x" * 250}"', 1))
    assert run("topology", f"fabric:{tmp_path / 'f.net'}", "--format", "ibnetdiscover", "--out", tmp_path / "back.net")[0] == 0
    code, out, err = run("topology", f"fabric:{tmp_path / 'back.net'}", "--format", "json")
    assert code == 0, err
    assert description in {node["name"] for node in json.loads(out)["nodes"]}  # its id (the writer's quoted name)
