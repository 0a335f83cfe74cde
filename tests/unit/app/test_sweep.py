"""`synth sweep` (synth.app.sweep, issue 43 item 4): every cell is what `synth.compare` gives for its
network and collective (read back from the CSV and compared with the API's own call), reruns and
resumes are byte-identical, and a bad sweep file is one line before any cell runs, with nothing
written. The Dask cluster and an interrupted sweep are in tests/integration/test_dask_cluster.py."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

import synth

pytestmark = pytest.mark.timeout(300)

SWEEP = """networks = ["torus:2,4", "kautz:2,2"]
collectives = ["allgather", "reduce-scatter"]
bytes = "1KiB,1MiB"
synthesize = true
time_limit = 1
"""


@pytest.fixture
def sweep_file(tmp_path):
    path = tmp_path / "sweep.toml"
    path.write_text(SWEEP)
    return path


def _rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_every_cell_is_the_api_comparison_of_its_network_and_collective(run, sweep_file, tmp_path):
    out = tmp_path / "r.csv"
    code, stdout, err = run("sweep", sweep_file, "--out", out, "--executor", "local:1", "--quiet")
    assert code == 0, err
    rows = _rows(out.read_text())
    assert {(r["network"], r["collective"]) for r in rows} == {(n, c) for n in ("torus:2,4", "kautz:2,2")
                                                             for c in ("allgather", "reduce-scatter")}
    for network in ("torus:2,4", "kautz:2,2"):
        for name in ("allgather", "reduce-scatter"):
            expected = synth.compare(name, network, sizes="1KiB,1MiB", synthesized=True, time_limit=1, reproducible=True)
            cell = [r for r in rows if r["network"] == network and r["collective"] == name]
            labels = [c.label for c in expected.candidates]
            assert [r["candidate"] for r in cell] == labels * 2 and labels[-1] == "synthesized"
            assert [int(r["bytes"]) for r in cell] == [1024] * len(labels) + [1 << 20] * len(labels)
            times = np.array([float(r["seconds"]) for r in cell]).reshape(2, -1)
            assert np.array_equal(times, expected.times)  # read back exactly (floats written as repr)
            bounds = np.array([float(r["bound_seconds"]) for r in cell]).reshape(2, -1)
            assert np.array_equal(bounds, np.repeat(expected.bounds[:, None], len(labels), axis=1))
            assert (times >= bounds * (1 - 1e-12)).all()  # no candidate beats its bound
            fastest = np.array([int(r["fastest"]) for r in cell]).reshape(2, -1)
            assert (fastest.sum(axis=1) == 1).all() and list(fastest.argmax(axis=1)) == list(expected.best_index)
            assert int(cell[0]["ranks"]) == synth.network(network).num_terminals
    assert stdout.count(" above the bound") == 4 and f"wrote {out}: {len(rows)} rows" in stdout


def test_reruns_and_resumes_write_the_same_bytes(run, sweep_file, tmp_path):
    outputs = []
    checkpoint = tmp_path / "ck"
    for k, extra in enumerate([(), ("--checkpoint", checkpoint), ("--checkpoint", checkpoint)]):
        out = tmp_path / f"r{k}.csv"
        code, stdout, err = run("sweep", sweep_file, "--out", out, "--executor", "local:2", *extra)
        assert code == 0, err
        outputs.append((out.read_bytes(), stdout.replace(str(out), "OUT")))
        if k == 2:  # every cell read back, none run
            assert err.count("(from the checkpoint)") == 4
    assert outputs[0] == outputs[1] == outputs[2]
    # a part lost (a worker killed as it wrote): that cell alone runs again, the file is the same
    part = sorted(checkpoint.glob("cells-2-3.pickle"))
    assert part
    part[0].unlink()
    out = tmp_path / "r3.csv"
    code, _, err = run("sweep", sweep_file, "--out", out, "--executor", "local:1", "--checkpoint", checkpoint)
    assert code == 0 and err.count("(from the checkpoint)") == 3 and out.read_bytes() == outputs[0][0]
    # another sweep in the same checkpoint directory is refused, nothing run
    other = tmp_path / "other.toml"
    other.write_text(SWEEP.replace('"1KiB,1MiB"', '"1KiB"'))
    code, out_text, err = run("sweep", other, "--checkpoint", checkpoint)
    assert code == 2 and out_text == "" and "was made by a run with other inputs" in err


@pytest.mark.parametrize("text, message", [
    ("networks = ['torus:2,4']\n", "missing 'collectives'"),
    ("networks = ['torus:2,4']\ncollectives = ['allgather']\nsizes = '1KiB'\n", "unknown key 'sizes'"),
    ("networks = ['torus:2,4', 'torus:x']\ncollectives = ['allgather']\n", "network 'torus:x': "),
    ("networks = ['torus:2,4']\ncollectives = ['allgather', 'allgather']\n", "collective 'allgather' is listed twice"),
    ("networks = ['torus:2,4']\ncollectives = ['allscatter']\n", "allscatter"),
    ("networks = ['torus:2,4']\ncollectives = ['alltoallv']\n", "synth compare alltoallv --sizes"),
    ("networks = ['torus:2,4']\ncollectives = ['allgather']\ntime_limit = 5\n", "time_limit applies to synthesize"),
    ("networks = ['torus:2,4']\ncollectives = ['allgather']\nbytes = '1 parsec'\n", "bytes"),
    ("networks = ['torus:2,4']\ncollectives = ['allgather']\nbandwidth = 0\n", "bandwidth must be a positive number"),
    ("networks = ['torus:2,4']\ncollectives = ['allgather']\nranks_per_node = 0\n", "ranks_per_node must be"),
    ("networks = []\ncollectives = ['allgather']\n", "at least one"),
    ("networks = 'torus:2,4'\ncollectives = ['allgather']\n", "networks must be a list"),
    ("format = 'synth-sweep/9'\nnetworks = ['torus:2,4']\ncollectives = ['allgather']\n", "is not synth-sweep/1"),
    ("networks = [\n", "is not valid TOML"),
])
def test_a_bad_sweep_file_is_one_line_and_writes_nothing(run, tmp_path, text, message):
    path, out, checkpoint = tmp_path / "s.toml", tmp_path / "r.csv", tmp_path / "ck"
    path.write_text(text)
    code, stdout, err = run("sweep", path, "--out", out, "--checkpoint", checkpoint)
    assert code == 2 and stdout == "" and message in err, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("synth: error: sweep file")
    assert not out.exists() and not checkpoint.exists()


def test_unreadable_files_and_overlapping_outputs_are_refused(run, sweep_file, tmp_path):
    code, _, err = run("sweep", tmp_path / "missing.toml")
    assert code == 2 and "cannot read sweep file" in err
    code, _, err = run("sweep", sweep_file, "--out", tmp_path / "ck" / "r.csv", "--checkpoint", tmp_path / "ck")
    assert code == 2 and "overlap" in err
    code, _, err = run("sweep", sweep_file, "--out", sweep_file)
    assert code == 2 and not err.count("\n") > 1
    assert sweep_file.read_text() == SWEEP  # the input is never the output


def test_the_api_gives_the_cells_the_command_writes(run, sweep_file, tmp_path):
    out = tmp_path / "r.csv"
    code, _, err = run("sweep", sweep_file, "--out", out, "--quiet")
    assert code == 0, err
    cells = synth.sweep(["torus:2,4", "kautz:2,2"], ["allgather", "reduce-scatter"], sizes="1KiB,1MiB",
                        synthesized=True, time_limit=1, checkpoint=str(tmp_path / "ck"))
    from synth.app.sweep import csv_text

    assert csv_text(cells) == out.read_text()
    with pytest.raises(synth.core.errors.SynthError, match="sweep\\(\\): collective 'alltoallv'|alltoallv's blocks"):
        synth.sweep(["torus:2,4"], ["alltoallv"])
