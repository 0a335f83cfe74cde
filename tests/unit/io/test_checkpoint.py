"""Checkpoints (`synth route --checkpoint DIR`): parts kept as they arrive, reruns that skip them,
other inputs refused by name, and the parts planned around what a checkpoint holds."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from helpers import TABLE_3_1, assert_user_error
from synth.core.errors import SynthError
from synth.io.checkpoint import MANIFEST
from synth.workflow import plan_parts

EXCHANGE = ["route", TABLE_3_1[64], "--traffic", "a2a-opt", "--quiet"]


def _parts(directory, job="route"):
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(f"{job}-"))


def test_a_rerun_reads_every_phase_back_and_writes_the_same_files(run, tmp_path):
    checkpoint = tmp_path / "ck" / "deeper"  # made with its parents at the first part
    argv = [*EXCHANGE, "--router", "layered", "--checkpoint", checkpoint, "--loads"]
    first = run(*argv, tmp_path / "a.csv", "--out", tmp_path / "a.json")
    assert first[0] == 0, first[2]
    assert len(_parts(checkpoint)) == 64 and _parts(checkpoint, "loads")
    manifest = json.loads((checkpoint / MANIFEST).read_text())
    assert manifest["format"] == "synth-checkpoint/1" and manifest["inputs"]["router"] == "layered"
    assert manifest["inputs"]["phases"]["count"] == 64 and manifest["inputs"]["routes_kept"] is True
    code, out, err = run(*argv[:-1], "--executor", "local:1", "--loads", tmp_path / "b.csv", "--out", tmp_path / "b.json")
    assert code == 0
    assert (tmp_path / "b.json").read_bytes() == (tmp_path / "a.json").read_bytes()
    assert (tmp_path / "b.csv").read_bytes() == (tmp_path / "a.csv").read_bytes()
    assert out.replace("b.", "a.") == first[1]


def test_parts_lost_from_a_checkpoint_are_routed_again_in_other_parts(run, tmp_path):
    """A run without routes kept cuts the phases into a few parts per worker: a rerun with other
    workers cuts the missing positions differently, and the results are the same."""
    checkpoint = tmp_path / "ck"
    argv = ["route", TABLE_3_1[512], "--traffic", "a2a-opt", "--router", "random-msg", "--checkpoint", checkpoint]
    first = run(*argv, "--executor", "local:2")
    assert first[0] == 0
    parts = _parts(checkpoint)
    assert len(parts) == 8  # 4 per worker
    for name in parts[1::2]:
        (checkpoint / name).unlink()
    code, out, err = run(*argv, "--executor", "local:3")
    assert code == 0 and out == first[1]
    assert "checkpoint" in err and "256 of 512 phases done before, 256 to go" in err
    kept = set(parts[0::2])
    assert kept <= set(_parts(checkpoint))
    # the 256 others in 4 parts per worker, cut again where a kept part interrupts one
    assert 12 <= len(set(_parts(checkpoint)) - kept) <= 12 + 4


@pytest.mark.parametrize("change, named", [
    (["--router", "dmodk"], "router: \"layered\" there, \"dmodk\" now"),
    (["--router", "layered", "--seed", "1"], "seed: 0 there, 1 now"),
    (["--router", "layered", "--phase", "0-9"], "phases.count: 64 there, 10 now"),
    (["--router", "layered", "--bytes", "8"], "traffic.message_bytes: 4096 there, 8 now"),
    (["--router", "layered", "--constraints", "relaxed"], "synthesis.constraints: \"strong\" there, \"relaxed\" now"),
])
def test_a_checkpoint_of_other_inputs_is_refused_by_name(run, tmp_path, change, named):
    checkpoint = tmp_path / "ck"
    assert run(*EXCHANGE, "--router", "layered", "--checkpoint", checkpoint)[0] == 0
    before = sorted(p.name for p in checkpoint.iterdir())
    err = assert_user_error(run(*EXCHANGE, *change, "--checkpoint", checkpoint), "was made by a run with other inputs")
    assert named in err and "give another directory, or delete it to start over" in err
    assert sorted(p.name for p in checkpoint.iterdir()) == before


def test_a_checkpoint_without_routes_does_not_serve_a_run_that_writes_them(run, tmp_path):
    checkpoint = tmp_path / "ck"
    assert run(*EXCHANGE, "--router", "dmodk", "--checkpoint", checkpoint)[0] == 0
    err = assert_user_error(run(*EXCHANGE, "--router", "dmodk", "--checkpoint", checkpoint, "--out", tmp_path / "r.json"),
                            "routes_kept: false there, true now")
    assert not (tmp_path / "r.json").exists() and err


def test_a_traffic_matrix_is_an_input_by_content(run, tmp_path):
    matrix = tmp_path / "m.csv"
    matrix.write_text("src,dst,bytes\n0,5,100\n1,2,100\n")
    argv = ["route", TABLE_3_1[16], "--traffic", f"csv:{matrix}", "--router", "dmodk", "--checkpoint", tmp_path / "ck"]
    assert run(*argv)[0] == 0
    matrix.write_text("src,dst,bytes\n0,5,100\n1,3,100\n")
    assert "traffic.matrix_sha256" in assert_user_error(run(*argv), "was made by a run with other inputs")


def test_checkpoint_directories_that_cannot_be_one(run, tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / MANIFEST).write_text("{not json")
    argv = [*EXCHANGE, "--router", "dmodk", "--checkpoint"]
    assert_user_error(run(*argv, a_file), all_of=("--checkpoint", "is a file, not a directory"))
    assert_user_error(run(*argv, other), "is a directory with other files and no checkpoint.json")
    assert_user_error(run(*argv, broken), "checkpoint.json is not a synth-checkpoint/1 manifest")
    assert_user_error(run(*argv, a_file / "below"), "cannot create it (Not a directory)")
    assert_user_error(run(*argv, ""), "--checkpoint '' is empty")
    assert (other / "notes.txt").read_text() == "mine" and a_file.read_text() == "x"


def test_an_unreadable_part_is_named(run, tmp_path):
    checkpoint = tmp_path / "ck"
    assert run(*EXCHANGE, "--router", "layered", "--checkpoint", checkpoint)[0] == 0
    part = checkpoint / _parts(checkpoint)[3]
    part.write_bytes(part.read_bytes()[:20])
    assert_user_error(run(*EXCHANGE, "--router", "layered", "--checkpoint", checkpoint),
                      all_of=(f"checkpoint part '{part}' cannot be read", "delete it and rerun"))


def test_lanes_are_computed_over_phases_read_back(run, tmp_path):
    argv = [*EXCHANGE, "--router", "layered", "--vls", "4", "--checkpoint", tmp_path / "ck", "--out"]
    assert run(*argv, tmp_path / "a.json")[0] == 0
    assert run(*argv, tmp_path / "b.json")[0] == 0
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


# ----- planning parts around a checkpoint ---------------------------------------------------------

@st.composite
def _plans(draw):
    count = draw(st.integers(1, 300))
    cuts = sorted(draw(st.sets(st.integers(0, count), max_size=12)) | {0, count})
    runs = list(zip(cuts, cuts[1:]))
    done = [r for r in runs if r[1] > r[0] and draw(st.booleans())]
    return count, draw(st.integers(1, 40)), draw(st.booleans()), draw(st.integers(1, 16)), done


@settings(max_examples=300, deadline=None)
@given(_plans())
def test_planned_parts_cover_every_position_once_and_keep_the_checkpoint_s(plan):
    count, per_batch, large, workers, done = plan
    parts = plan_parts(count, per_batch, large, workers, done)
    assert [a for a, _ in parts] == [0] + [b for _, b in parts[:-1]] and parts[-1][1] == count  # contiguous, in order
    assert all(b > a for a, b in parts)
    assert set(done) <= set(parts)
    new = [p for p in parts if p not in done]
    if large:
        assert all(b - a <= per_batch for a, b in new)
    else:
        remaining = count - sum(b - a for a, b in done)
        # a few parts per worker, cut again only where a kept part interrupts them
        assert len(new) <= min(remaining, 4 * workers) + len(done)


def test_parts_of_a_run_without_a_checkpoint_are_as_before():
    """Without a checkpoint: one batch per part for kept routes; otherwise 4 parts per worker."""
    assert plan_parts(10, 4, True, 2) == [(0, 4), (4, 8), (8, 10)]
    sizes = [b - a for a, b in plan_parts(100, 4, False, 2)]
    assert sizes == [len(p) for p in np.array_split(np.arange(100), 8)]


def test_a_checkpoint_of_another_synth_version_is_refused(run, tmp_path, monkeypatch):
    import synth
    import synth.app.route

    argv = [*EXCHANGE, "--router", "dmodk", "--checkpoint", tmp_path / "ck"]
    assert run(*argv)[0] == 0
    monkeypatch.setattr(synth.app.route, "__version__", "9.9.9")
    assert_user_error(run(*argv), all_of=(f"synth_version: \"{synth.__version__}\" there, \"9.9.9\" now",))


def test_a_checkpoint_apart_from_the_outputs(run, tmp_path):
    """An output at, inside or around the checkpoint is refused before any routing."""
    argv = [*EXCHANGE, "--router", "layered"]
    for checkpoint, out in [("c", "c"), ("r.json/ck", "r.json"), ("c", "c/r.json")]:
        err = assert_user_error(run(*argv, "--checkpoint", tmp_path / checkpoint, "--out", tmp_path / out), "overlap")
        assert "keep the checkpoint directory apart" in err
    assert_user_error(run(*argv, "--checkpoint", tmp_path / "c", "--loads", tmp_path / "c"), "overlap")
    assert list(tmp_path.iterdir()) == []


def test_parts_beyond_the_selection_and_oddly_named_ones_are_not_read(run, tmp_path):
    checkpoint = tmp_path / "ck"
    argv = [*EXCHANGE, "--router", "layered", "--checkpoint", checkpoint, "--out"]
    assert run(*argv, tmp_path / "a.json")[0] == 0
    stray = (checkpoint / "route-3-4.pickle").read_bytes()
    for name in ("route-64-65.pickle", "route-03-04.pickle", "route-5-5.pickle"):
        (checkpoint / name).write_bytes(stray)
    before = sorted(p.name for p in checkpoint.iterdir())
    assert run(*argv, tmp_path / "b.json")[0] == 0
    assert (tmp_path / "b.json").read_bytes() == (tmp_path / "a.json").read_bytes()
    assert sorted(p.name for p in checkpoint.iterdir()) == before  # nothing routed again


def test_glpk_options_are_an_input(run, tmp_path):
    argv = ["route", TABLE_3_1[16], "--traffic", "a2a-opt", "--router", "layered", "--solver", "glpk", "--phase", "0-1",
            "--quiet", "--checkpoint", tmp_path / "ck"]
    assert run(*argv)[0] == 0
    assert_user_error(run(*argv, "--glpk-options=--nomip"), "glpk_options: null there, \"--nomip\" now")


def test_a_part_of_another_run_is_refused_by_name(run, tmp_path):
    """The issue's case: a valiant run's part copied under a minimal run's checkpoint was used without a
    word (the file written then failed check with 252 problems)."""
    argv = ["route", "dragonfly:2,4,2", "--traffic", "a2a-lin", "--phase", "0-7", "--quiet", "--executor", "local:1"]
    assert run(*argv, "--router", "valiant", "--checkpoint", tmp_path / "v", "--out", tmp_path / "v.json")[0] == 0
    assert run(*argv, "--router", "minimal", "--checkpoint", tmp_path / "m", "--out", tmp_path / "m.json")[0] == 0
    moved = _parts(tmp_path / "m")[0]
    (tmp_path / "m" / moved).write_bytes((tmp_path / "v" / moved).read_bytes())
    out = tmp_path / "r.json"
    assert_user_error(run(*argv, "--router", "minimal", "--checkpoint", tmp_path / "m", "--out", out),
                      all_of=(moved, "another run"))
    assert not out.exists()


@settings(max_examples=20, deadline=None)
@given(result=st.one_of(st.none(), st.integers(), st.text(max_size=5), st.just([]), st.just([()]),
                        st.lists(st.tuples(st.just([]), st.just({}), st.none()), max_size=3),
                        st.tuples(st.integers(), st.integers())))
def test_a_part_whose_result_is_not_the_job_s_is_refused(tmp_path_factory, result):
    """Any result a part may hold that its job does not make (wrong type, empty, other phases) is one
    line naming the part, never a crash later in the run."""
    import pickle

    from synth.cli import main

    directory = tmp_path_factory.mktemp("ck")
    argv = ["route", "dragonfly:1,2,1", "--traffic", "a2a-lin", "--router", "minimal", "--quiet", "--executor", "local:1",
            "--checkpoint", str(directory)]
    assert main(argv) == 0
    name = _parts(directory)[0]
    with open(directory / name, "rb") as handle:
        header = pickle.load(handle)
    (directory / name).write_bytes(pickle.dumps(header) + pickle.dumps(result))
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    assert code == 2 and err.getvalue().count("\n") == 1 and name in err.getvalue(), err.getvalue()


def test_a_huge_manifest_is_refused_before_it_is_read(tmp_path, monkeypatch):
    import synth.io.checkpoint as checkpoint

    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / "checkpoint.json").write_text(json.dumps({"format": checkpoint.FORMAT, "inputs": {"a": "x" * 200}}))
    monkeypatch.setattr(checkpoint, "MAX_MANIFEST_BYTES", 100)
    with pytest.raises(SynthError, match="is not a synth-checkpoint/1 manifest"):
        checkpoint.Checkpoint(tmp_path / "ck", {"a": "x" * 200})


def test_a_damaged_part_that_makes_python_print_its_own_error_is_still_one_line(tmp_path):
    """Found by tests/contract/test_file_formats.py: a part whose numpy buffer is cut makes pickle fail with a
    MemoryError, and the interpreter print "SystemError: deallocated bytearray object has exported buffers" to
    stderr as it unwinds; the command says one line."""
    from helpers import run

    route = ["route", "xgft:2:2,2:1,2", "--traffic", "a2a-lin", "--router", "dmodk", "--quiet", "--checkpoint",
             tmp_path / "ck"]
    assert run(*route, "--out", tmp_path / "a.json")[0] == 0
    part = next((tmp_path / "ck").glob("*.pickle"))
    data = bytearray(part.read_bytes())
    frames = [m for m in range(len(data)) if data[m:m + 1] == b"\x96"]  # pickle's BYTEARRAY8 opcodes (numpy buffers)
    for at in frames[1:]:
        data[at + 1:at + 9] = (1 << 40).to_bytes(8, "little")  # each declares 2^40 bytes
    part.write_bytes(bytes(data))
    assert_user_error(run(*route, "--out", tmp_path / "b.json"), str(part))
    assert not (tmp_path / "b.json").exists()
