"""`synth compare alltoallv --sizes SPEC`: an alltoallv's algorithms priced on its matrix scaled to
each message size (synth.pricing.compare's rule: a rank's mean send m; at a size n every block times
n / m, in proportion), checked against schedules made with the scaled matrix itself, the bound of
the scaled matrix, synthesis' figures at m, and SimGrid's replay of each schedule alone (issue 41
item 4: compare covers every collective schedule has)."""

import dataclasses

import numpy as np
import pytest

from synth.collectives.algorithms import ALGORITHMS, Request, grid_shape
from synth.pricing.bounds import COMPARE_LP_PAIRS, exchange_message_bytes, exchange_time_bound, with_strongest_bound
from synth.pricing.compare import REFERENCE_BYTES, compare
from synth.pricing.schedule_cost import map_schedule
from synth.topology import parse_topology

ALPHA, BANDWIDTH = 1e-6, 100e9


def _matrix(ranks: int, seed: int = 3) -> np.ndarray:
    """Skewed block sizes (a few hot destinations, some empty blocks) whose sum P divides, so that a
    rank's mean send m is exact and 2 x the matrix has mean send 2m."""
    rng = np.random.default_rng(seed)
    m = rng.integers(0, 3000, (ranks, ranks))
    m[:, rng.choice(ranks, 2, replace=False)] *= 8  # hot destinations
    m[rng.random((ranks, ranks)) < 0.15] = 0
    m[0, 0] += (-int(m.sum())) % ranks
    return m.reshape(-1).astype(np.int64)


def _priced(label: str, topology, matrix: np.ndarray, router: str):
    """The schedule of `label` (an algorithm, `tuna r=R`) made with `matrix` itself, routed and priced
    without any scaling."""
    name, _, radix = label.partition(" r=")
    ranks = topology.network().num_terminals
    request = Request("alltoallv", ranks, ranks * ranks, REFERENCE_BYTES, topology.spec, 0,
                      grid_shape(topology, 1), int(radix) if radix else None, sizes=matrix)
    return map_schedule(ALGORITHMS[name].generate(request), topology, router)


@pytest.mark.parametrize("spec", ["torus:2,4", "kautz:2", "xgft:2:2,4:1,2"])
def test_a_scaled_matrix_is_priced_as_the_matrix_scaled(spec):
    topology = parse_topology(spec)
    ranks = topology.network().num_terminals
    matrix = _matrix(ranks)
    m = exchange_message_bytes(matrix, ranks)
    assert m * ranks == int(matrix.sum())
    result = compare("alltoallv", topology, [m, 2 * m, 3 * m], None, ALPHA, BANDWIDTH, block_sizes=matrix)
    assert len(result.candidates) >= 5 and result.sizes == [m, 2 * m, 3 * m]
    for j, candidate in enumerate(result.candidates):
        for i, factor in enumerate((1, 2, 3)):  # at n = k m: the schedule of k x the matrix, made and priced as is
            direct = _priced(candidate.label, topology, matrix * factor, result.router)
            assert result.times[i, j] == pytest.approx(direct.time(ALPHA, BANDWIDTH), rel=1e-12), (candidate.label, factor)
            assert candidate.bound(factor * m, ALPHA, BANDWIDTH) == pytest.approx(
                direct.bound.seconds(direct.vector_bytes, ALPHA, BANDWIDTH), rel=1e-12)


@pytest.mark.parametrize("spec", ["torus:2,4", "kautz:2"])
def test_the_bound_is_the_scaled_matrix_bound_and_below_every_time(spec):
    topology = parse_topology(spec)
    ranks = topology.network().num_terminals
    matrix = _matrix(ranks, seed=5)
    m = exchange_message_bytes(matrix, ranks)
    sizes = [32, 1024, m, 2 * m, 1 << 20, 64 << 20]
    result = with_strongest_bound(compare("alltoallv", topology, sizes, None, ALPHA, BANDWIDTH, block_sizes=matrix),
                                  topology, ALPHA, BANDWIDTH)
    assert (result.times >= result.bounds[:, None] * (1 - 1e-12)).all()  # no estimate below a printed bound
    flow = exchange_time_bound("alltoallv", topology, 1, matrix, lp_pairs=COMPARE_LP_PAIRS)
    at_m, twice = sizes.index(m), sizes.index(2 * m)
    # the flow bound of the matrix itself at m, and of 2 x the matrix (its own LP and injection count) at 2m
    assert result.bounds[at_m] >= flow.seconds(m, ALPHA, BANDWIDTH) * (1 - 1e-12)
    doubled = exchange_time_bound("alltoallv", topology, 1, matrix * 2, lp_pairs=COMPARE_LP_PAIRS)
    assert doubled.seconds(2 * m, ALPHA, BANDWIDTH) == pytest.approx(flow.seconds(2 * m, ALPHA, BANDWIDTH), rel=1e-9)
    assert result.bounds[twice] >= doubled.seconds(2 * m, ALPHA, BANDWIDTH) * (1 - 1e-12)
    assert flow.seconds(m, ALPHA, BANDWIDTH) > max(c.bound(m, ALPHA, BANDWIDTH) for c in result.candidates) * 0.999


def test_without_sizes_the_matrix_is_priced_as_given():
    topology = parse_topology("torus:2,4")
    result = compare("alltoallv", topology, None, None, ALPHA, BANDWIDTH, block_sizes="random:4096:1")
    ranks = 8
    from synth.collectives.sizes import parse_sizes

    assert result.sizes == [exchange_message_bytes(parse_sizes("random:4096:1", ranks), ranks)]
    assert all(c.scale(result.sizes[0]) == 1.0 for c in result.candidates)
    assert compare("allreduce", topology, None, None, ALPHA, BANDWIDTH).sizes[0] == 32  # the others' default range


def test_the_synthesized_column_at_m_is_synthesis_figure():
    from synth.app.synthesize import SynthesisRequest, synthesize
    from synth.synthesis.portfolio import compare_with_synthesis

    topology = parse_topology("torus:2,4")
    matrix = _matrix(8, seed=7)
    m = exchange_message_bytes(matrix, 8)
    result = compare("alltoallv", topology, [1024, m, 4 * m], None, ALPHA, BANDWIDTH, block_sizes=matrix)
    result = compare_with_synthesis(with_strongest_bound(result, topology, ALPHA, BANDWIDTH), topology, ALPHA,
                                    BANDWIDTH, 10.0)
    assert result.candidates[-1].label == "synthesized", result.skipped
    assert (result.times >= result.bounds[:, None] * (1 - 1e-12)).all()
    (band,) = synthesize(SynthesisRequest("alltoallv", topology, [m], time_limit=10.0, block_sizes=matrix)).bands
    (at_m,) = band.schedule.synthesis["sizes"]
    assert at_m["bytes"] == m and at_m["seconds"] == pytest.approx(result.times[1, -1], rel=1e-9)
    assert at_m["bound_seconds"] == pytest.approx(result.bounds[1], rel=1e-9)


def test_simulated_like_each_schedule_alone():
    """compare --simulate replays each schedule (TuNA's size exchanges of 8 bytes a block included)
    as `synth simulate` does the same schedule alone, at the matrix's own size."""
    from synth.app.compare import require_simgrid, simulate_comparison
    from synth.app.simulate import SimulationOptions, simulate_schedule
    from synth.core.errors import SynthError

    try:
        require_simgrid("CM02")
    except SynthError as exc:
        pytest.skip(str(exc))
    topology = parse_topology("torus:2,4")
    matrix = _matrix(8, seed=11)
    m = exchange_message_bytes(matrix, 8)
    result = simulate_comparison(compare("alltoallv", topology, [m], None, ALPHA, BANDWIDTH, block_sizes=matrix),
                                 topology, "CM02", ALPHA, BANDWIDTH)
    options = SimulationOptions(model="CM02", discipline="bsp", alpha=ALPHA, bandwidth_bits=BANDWIDTH)
    for j, candidate in enumerate(result.candidates):
        if not candidate.label.startswith(("tuna", "bruck", "pairwise")):
            continue
        alone = simulate_schedule(candidate.make(REFERENCE_BYTES), topology, options, result.router, 0)
        assert result.simulated.times[0, j] == pytest.approx(alone.simulated_total, rel=1e-6), candidate.label


def test_the_command(run, tmp_path):
    code, out, err = run("compare", "alltoallv", "--network", "torus:2,4", "--sizes", "random:4096:1")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1].startswith("blocks    random:4096:1: ") and "a rank sends" in lines[1] and "scaled" not in lines[1]
    assert len([l for l in lines if l.strip().endswith(("multitree", "spread-out", "bruck"))]) == 1  # one row: m
    code, out, err = run("compare", "alltoallv", "--network", "torus:2,4", "--sizes", "random:4096:1", "--bytes",
                         "1KiB..1MiB", "--out", tmp_path / "v.png")
    assert code == 0, err
    assert "every block is scaled by n / " in out and "crossovers: " in out and (tmp_path / "v.png").stat().st_size > 0
    code, again, _ = run("compare", "alltoallv", "--network", "torus:2,4", "--sizes", "random:4096:1", "--bytes",
                         "1KiB..1MiB", "--out", tmp_path / "w.png")
    assert again.replace("w.png", "v.png") == out  # byte-identical reruns
    csv = tmp_path / "m.csv"
    csv.write_text("\n".join(",".join(str(v) for v in row) for row in _matrix(8).reshape(8, 8)) + "\n")
    code, out, err = run("compare", "alltoallv", "--network", "torus:2,4", "--sizes", f"csv:{csv}", "--bytes", "4KiB")
    assert code == 0 and "4KiB" in out, err


def test_the_api():
    import synth

    c = synth.compare("alltoallv", "torus:2,4", block_sizes=_matrix(8), sizes="1KiB,64KiB")
    assert len(c.best) == 2 and (c.times.min(axis=1) >= c.bounds).all()
    b = synth.compare("broadcast", "torus:2,4", root=3, sizes="1KiB")
    assert b.root == 3 and "binomial" in [x.label for x in b.candidates]
    assert synth.compare("p2p", "kautz:2", root=0, peer=3, sizes="1KiB").peer == 3


def test_a_report_refuses_alltoallv_before_any_routing(run, tmp_path):
    """A report's collectives have no matrix option: refused up front (it was refused after minutes of routing)."""
    code, out, err = run("report", "torus:2,2", "--patterns", "randperm:1", "--collectives", "allreduce,alltoallv",
                         "--out", tmp_path / "r.md")
    assert code == 2 and "synth compare alltoallv --sizes SPEC" in err and err.count("\n") == 1, err
    assert not (tmp_path / "r.md").exists()
