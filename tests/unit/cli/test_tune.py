"""synth tune: the bands it prints are the rules it writes, reruns are byte-identical, and bad input is one
line, exit 2, nothing written (issue 42 item 3; Open MPI itself: tests/integration/test_tune_openmpi.py)."""

from __future__ import annotations

from synth.io.coll_tuned import read_rules


def test_bands_are_the_rules_and_reruns_are_identical(run, tmp_path):
    first, second = tmp_path / "a.rules", tmp_path / "b.rules"
    code, out, err = run("tune", "allreduce", "alltoall", "--network", "torus:2,4", "--bytes", "32B..1MiB", "--out", first)
    assert code == 0, err
    again = run("tune", "allreduce", "alltoall", "--network", "torus:2,4", "--bytes", "32B..1MiB", "--out", second)[1]
    assert again.replace(str(second), str(first)) == out
    assert first.read_bytes() == second.read_bytes()
    allreduce, alltoall = read_rules(first.read_text())
    assert (allreduce.collective_id, allreduce.comm_size, alltoall.collective_id) == (2, 8, 3)
    assert [(r.message_size, r.algorithm) for r in allreduce.rules] == [(0, 3), (32768, 6), (131072, 4)]
    assert [(r.message_size, r.algorithm) for r in alltoall.rules] == [(0, 3), (16384, 1)]
    table = out.splitlines()
    assert any(line.split()[:4] == ["0", "32B..16KiB", "3", "recursive_doubling"] for line in table), out
    assert any(line.split()[:4] == ["32KiB", "32KiB..64KiB", "6", "rabenseifner"] for line in table), out
    assert any(line.split()[:4] == ["16KiB", "16KiB..1MiB", "1", "linear"] for line in table), out
    assert "left out  swing-b: not one of coll_tuned's allreduce algorithms" in out


def test_a_torus_ring_that_is_not_the_rank_ring_is_left_out(run, tmp_path):
    """On torus:4,4 synth's ring allreduce runs four Hamiltonian rings: not coll_tuned's ring."""
    code, out, err = run("tune", "allreduce", "--network", "torus:4,4", "--bytes", "1MiB", "--out", tmp_path / "r")
    assert code == 0, err
    assert "left out  ring: not the ring r -> r + 1 of coll_tuned's ring here" in out
    assert all(r.algorithm != 4 for r in read_rules((tmp_path / "r").read_text())[0].rules)


def _refused(run, tmp_path, *argv, message):
    target = tmp_path / "rules"
    code, out, err = run("tune", *argv, "--out", target)
    assert code == 2 and out == "", (code, out, err)
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert not target.exists() and list(tmp_path.iterdir()) == []


def test_an_unknown_collective(run, tmp_path):
    _refused(run, tmp_path, "allreduc", "--network", "torus:2,4", message="unknown collective 'allreduc'")


def test_a_collective_coll_tuned_has_no_rules_for(run, tmp_path):
    _refused(run, tmp_path, "p2p", "--network", "torus:2,4", message="p2p has no coll_tuned dynamic rules here")


def test_a_collective_given_twice_or_one_of_several_refused(run, tmp_path):
    """Nothing is written when any collective of several is refused."""
    _refused(run, tmp_path, "allreduce", "allreduce", "--network", "torus:2,4", message="collective allreduce given twice")
    _refused(run, tmp_path, "allreduce", "p2p", "--network", "torus:2,4", message="p2p has no coll_tuned dynamic rules")


def test_a_missing_parent_directory(run, tmp_path):
    code, out, err = run("tune", "allreduce", "--network", "torus:2,4", "--out", tmp_path / "nope" / "rules")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "nope" in err and not (tmp_path / "nope").exists()
