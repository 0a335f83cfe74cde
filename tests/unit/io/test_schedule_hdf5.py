"""The compact schedule file (synth-schedule/1 and /2 as HDF5, synth.io.schedule_hdf5; issue 23): every
algorithm's schedule reads back as the same arrays as from JSON, reruns are byte-identical, and a
tampered file is refused in one line (exit 2) or fails verify (exit 1), never a traceback."""

from __future__ import annotations

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")

from synth.collectives.algorithms import ALGORITHMS  # noqa: E402
from synth.io.schedule_file import read_schedule  # noqa: E402

FIELDS = ("step_ptr", "src", "dst", "op", "block_bytes", "root", "peer", "ranks_per_node", "collective", "algorithm",
          "spec", "ranks", "blocks")

CASES = [  # (collective, algorithm, network, extra options): lists, runs, a root, a peer, sizes, ranks per node
    ("allreduce", "swing-b", "torus:4,4", []),
    ("alltoall", "bruck", "dragonfly:2,4,2", []),
    ("alltoallv", "tuna", "torus:4,4", ["--radix", "4", "--sizes", "random:100:3"]),
    ("broadcast", "binomial", "hyperx:3,3", ["--root", "2"]),
    ("p2p", "kautz-mp", "kautz:2", ["--root", "1", "--peer", "4"]),
    ("allgather", "ring", "xgft:2:4,4:1,4", ["--ranks-per-node", "2"]),
]


def _same(a, b) -> None:
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y, name
    assert (a.size_exchange is None) == (b.size_exchange is None)
    ea, eb = a.explicit(), b.explicit()
    assert np.array_equal(ea.block_ptr, eb.block_ptr) and np.array_equal(ea.block_ids, eb.block_ids)


@pytest.mark.parametrize("collective, algorithm, spec, extra", CASES)
def test_the_compact_file_reads_back_as_the_json_file_and_verifies(run, tmp_path, collective, algorithm, spec, extra):
    if algorithm not in ALGORITHMS:
        pytest.skip(f"{algorithm} is not an algorithm of this synth")
    outs = {}
    for name in ("s.json", "s.h5", "again.h5"):
        code, out, err = run("schedule", collective, "--algorithm", algorithm, "--network", spec, *extra, "--bytes", 4096,
                             "--out", tmp_path / name)
        assert code == 0, err
        outs[name] = out
    assert outs["s.json"] == outs["s.h5"].replace("s.h5", "s.json")  # the same schedule, priced alike
    assert (tmp_path / "s.h5").read_bytes() == (tmp_path / "again.h5").read_bytes()  # byte-identical reruns
    _same(read_schedule(str(tmp_path / "s.json")), read_schedule(str(tmp_path / "s.h5")))
    code, out, err = run("verify", tmp_path / "s.h5")
    assert code == 0 and out.startswith("OK: "), err


def _tampered(run, tmp_path, change) -> tuple[int, str, str]:
    path = tmp_path / "s.h5"
    if not path.exists():
        assert run("schedule", "allreduce", "--algorithm", "swing-b", "--network", "torus:4,4", "--out", path)[0] == 0
    target = tmp_path / "t.h5"
    target.write_bytes(path.read_bytes())
    with h5py.File(target, "r+") as f:
        change(f)
    return run("verify", target)


def _replace(name, values):
    def change(f):
        dtype = f[name].dtype
        del f[name]
        f.create_dataset(name, data=np.asarray(values, dtype=dtype))
    return change


def _set(index, name, value):
    def change(f):
        f[name][index] = value
    return change


@pytest.mark.parametrize("change, message", [
    (lambda f: f.attrs.__setitem__("format", "other/1"), "is not a synth-schedule file"),
    (lambda f: f.attrs.__delitem__("ranks"), "no attribute ranks"),
    (lambda f: f.attrs.__setitem__("ranks", 17), "ranks 17 is not the 16 terminals"),
    (lambda f: f.attrs.__setitem__("collective", "allfoo"), "collective 'allfoo'"),
    (lambda f: f.attrs.__setitem__("root", 3), "allreduce has no root"),
    (lambda f: f.attrs.__setitem__("spec", "torus:nope"), "network.spec"),
    (lambda f: f.__delitem__("block_ids"), "no one-dimensional integer dataset 'block_ids'"),
    (_set(0, "src", 16), "src[0] is 16, expected 0..15"),
    (_set(3, "op", 5), "op[3] is 5"),
    (_set(7, "block_ids", 1 << 20), "block_ids[7]"),
    (_set(0, "step_ptr", 1), "step_ptr must run from 0"),
    (_set(1, "block_ptr", 0), "block_ptr must rise strictly"),
    (_replace("dst", [0, 1]), "dst has 2 entries"),
])
def test_a_tampered_compact_file_is_refused_in_one_line(run, tmp_path, change, message):
    code, out, err = _tampered(run, tmp_path, change)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert message in err


def test_a_compact_file_whose_schedule_is_wrong_fails_verify(run, tmp_path):
    """Well-formed but wrong: a transfer's block changed (in range), so a contribution is lost or
    counted twice: verify's replay finds it, exit 1."""
    def change(f):
        ids = f["block_ids"][...]
        ids[0] = (ids[0] + 1) % f.attrs["blocks"]
        f["block_ids"][...] = ids
    code, out, _ = _tampered(run, tmp_path, change)
    assert code == 1 and out.startswith("FAIL: ")


def test_not_hdf5_after_the_signature_is_one_line(run, tmp_path):
    path = tmp_path / "broken.h5"
    path.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 100)
    code, out, err = run("verify", path)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not a readable HDF5 file" in err


def test_an_unwritable_compact_output_is_one_line_and_nothing_is_left(run, tmp_path):
    (tmp_path / "file").write_text("")
    code, out, err = run("schedule", "allreduce", "--algorithm", "swing-b", "--network", "torus:4,4",
                         "--out", tmp_path / "file" / "s.h5")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "cannot write" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
