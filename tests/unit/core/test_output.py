"""Directory outputs (synth.core.output, issue 41): written beside the target, swapped in whole; an earlier
run's directory replaced (said), anything else refused; a missing parent refused, never made."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from synth.core.errors import SynthError
from synth.core.output import OutputSet


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def write_dir(target, contents: dict[str, str], owned=None) -> None:
    with OutputSet() as outputs:
        entry = outputs.reserve_dir(target, list(contents), owned=owned)
        for name, text in contents.items():
            entry[name].write(text)


def test_a_new_directory_appears_whole_and_nothing_else_is_left(tmp_path):
    write_dir(tmp_path / "t", {"a": "1", "b": "2"})
    assert tree(tmp_path) == ["t", "t/a", "t/b"]
    mode = os.stat(tmp_path / "t").st_mode & 0o777
    mask = os.umask(0)
    os.umask(mask)
    assert mode == 0o777 & ~mask


def test_an_earlier_runs_directory_is_replaced_whole_and_said(tmp_path, capsys):
    write_dir(tmp_path / "t", {"a": "1", "qos": "lanes"})
    write_dir(tmp_path / "t", {"a": "2"}, owned={"a", "qos"}.__contains__)
    assert tree(tmp_path) == ["t", "t/a"]  # the first run's qos is gone: never a mix of two runs
    assert (tmp_path / "t" / "a").read_text() == "2"
    assert capsys.readouterr().err.strip() == f"note: replacing {tmp_path / 't'} whole (it held an earlier run's a, qos)"


def test_an_empty_directory_is_taken_without_a_word(tmp_path, capsys):
    (tmp_path / "t").mkdir()
    write_dir(tmp_path / "t", {"a": "1"})
    assert tree(tmp_path) == ["t", "t/a"] and capsys.readouterr().err == ""


@pytest.mark.parametrize("foreign", ["notes.txt", "sub/"])
def test_a_directory_holding_what_synth_does_not_write_is_refused_before_any_work(tmp_path, foreign):
    target = tmp_path / "t"
    target.mkdir()
    (target / "a").write_text("old")
    if foreign.endswith("/"):
        (target / foreign).mkdir()
    else:
        (target / foreign).write_text("someone else's")
    before = tree(tmp_path)
    with pytest.raises(SynthError, match=f"cannot write {target}: it holds what synth does not write there "
                                         f"\\({foreign}\\); --out replaces its directory whole"):
        OutputSet().reserve_dir(target, ["a"])
    assert tree(tmp_path) == before and (target / "a").read_text() == "old"


def test_files_that_appear_during_the_run_refuse_the_swap(tmp_path):
    target = tmp_path / "t"
    with pytest.raises(SynthError, match="it holds what synth does not write there"):
        with OutputSet() as outputs:
            entry = outputs.reserve_dir(target, ["a"])
            entry["a"].write("new")
            target.mkdir()
            (target / "intruder").write_text("x")
    assert tree(tmp_path) == ["t", "t/intruder"]


def test_a_failed_run_leaves_the_earlier_directory_as_it_was(tmp_path):
    write_dir(tmp_path / "t", {"a": "1"})
    with pytest.raises(RuntimeError):
        with OutputSet() as outputs:
            outputs.reserve_dir(tmp_path / "t", ["a"])["a"].write("2")
            raise RuntimeError("the run failed")
    assert tree(tmp_path) == ["t", "t/a"] and (tmp_path / "t" / "a").read_text() == "1"


def test_a_missing_parent_is_refused_not_made(tmp_path):
    with pytest.raises(SynthError, match=f"cannot write {tmp_path / 'no' / 't'}: no directory {tmp_path / 'no'}"):
        OutputSet().reserve_dir(tmp_path / "no" / "t", ["a"])
    with pytest.raises(SynthError, match=f"cannot write {tmp_path / 'no' / 'x.json'}: no directory {tmp_path / 'no'}"):
        OutputSet().reserve(tmp_path / "no" / "x.json")
    assert tree(tmp_path) == []


def test_a_link_to_a_directory_replaces_the_directory_and_keeps_the_link(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a").write_text("1")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    write_dir(tmp_path / "link", {"a": "2"})
    assert (tmp_path / "link").is_symlink() and (tmp_path / "real" / "a").read_text() == "2"
    assert tree(tmp_path) == ["link", "real", "real/a"]


def test_the_current_directory_and_an_input_inside_the_target_are_refused(tmp_path, monkeypatch):
    (tmp_path / "t").mkdir()
    monkeypatch.chdir(tmp_path / "t")
    with pytest.raises(SynthError, match="it holds the current directory"):
        OutputSet().reserve_dir(".", ["a"])
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t" / "a").write_text("routes")
    outputs = OutputSet()
    outputs.protect(tmp_path / "t" / "a")
    with pytest.raises(SynthError, match="is an input of this run inside t, which --out replaces whole"):
        outputs.reserve_dir("t", ["a"])
    assert tree(tmp_path) == ["t", "t/a"]
