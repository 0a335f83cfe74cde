"""`synth compare --simulate` and `synth report --collectives ... --simulate` (issue 25): every
algorithm replayed on SimGrid at every size next to its alpha-beta time, and where the two rank the
algorithms differently, by how much (synth.app.compare, Comparison.ranking_differences).

Under SimGrid's CM02 model a lone flow takes latency + bytes / bandwidth (no correction factors), and
the route latency is alpha: a bulk-synchronous step of one message per port whose flows are not
slowed by each other takes alpha + beta x its bytes, the model's step; LV08 multiplies the latency by
13.01 (and the bandwidth by 0.97), which moves the small-message rankings.
"""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from helpers import REPO
from synth.pricing.compare import Comparison, RankedFirst, Reordered, Simulated, compare
from synth.simulation import simgrid_module
from synth.topology import parse_topology

needs_simgrid = pytest.mark.skipif(not simgrid_module.available(), reason="SimGrid's Python module is not installed")

ALPHA, BANDWIDTH = 1e-6, 100e9
ALLREDUCE_ON_TORUS = ["swing-b", "swing-l", "bucket", "rd-l", "rd-b", "rabenseifner", "multitree", "ring"]


def synthetic(model: np.ndarray, simulated: np.ndarray, labels=("a", "b", "c", "d")) -> Comparison:
    sizes = [1024 << i for i in range(len(model))]
    candidates = [SimpleNamespace(label=label) for label in labels]
    return Comparison("allreduce", sizes, candidates, np.asarray(model, dtype=float), [], np.zeros(len(sizes)),
                      "minimal", Simulated("LV08", np.asarray(simulated, dtype=float)))


def test_ranking_differences_name_the_sizes_the_orders_and_the_factors():
    nan = np.nan
    # d is not simulated (the synthesized schedule): the fastest by alpha-beta, yet out of the ranking
    model = [[1, 2, 3, 0.5], [1, 2, 3, 0.5], [1, 2, 3, 0.5], [1, 2, 3, 0.5]]
    simulated = [[1, 1 + 1e-9, 3, nan],  # a tie simulated: not ranked otherwise
                 [2, 1, 3, nan],  # b first
                 [1, 3, 2, nan],  # c before b
                 [1, 4, 2, nan]]  # the same orders: one line for both sizes, the larger swap
    result = synthetic(model, simulated)
    firsts, orders = result.ranking_differences()
    assert firsts == [RankedFirst(2048, "b", "a", 2.0, 2.0)]
    assert orders == [Reordered([2048], "a < b < c", "b < a < c", ("b", "a", 2.0, 2.0, 2048)),
                      Reordered([4096, 8192], "a < b < c", "a < c < b", ("c", "b", 2.0, 1.5, 8192))]
    assert result.simulated_best.tolist() == [0, 1, 0, 0]  # a tie goes to the first candidate
    assert result.simulated_crossover_text() == "a -> b at 2KiB; b -> a at 4KiB"
    assert result.ranking_lines() == [
        "SimGrid (LV08) ranks the simulated algorithms otherwise than alpha-beta at 3 of 4 sizes; its fastest is "
        "another at 1",
        "at 2KiB SimGrid ranks b first, alpha-beta a: b is 2x faster than a simulated, a 2x faster than b by alpha-beta",
        "order at 2KiB: alpha-beta a < b < c; SimGrid b < a < c (most: b is 2x faster than a simulated, a 2x faster "
        "than b by alpha-beta)",
        "order at 4KiB..8KiB: alpha-beta a < b < c; SimGrid a < c < b (most: c is 2x faster than b simulated, b 1.5x "
        "faster than c by alpha-beta, at 8KiB)"]


def test_equal_rankings_say_so_in_one_line_and_ties_print_in_the_candidates_order():
    result = synthetic([[1, 2, 2, 3]], [[5, 7 + 1e-9, 7, 9]])
    assert result.ranking_differences() == ([], [])
    assert result.ranking_lines() == ["SimGrid (LV08) ranks the algorithms as alpha-beta does at every size"]
    from synth.pricing.compare import _order_text

    assert _order_text(["a", "b", "c", "d"], np.array([5, 7 + 1e-9, 7, 9])) == "a < b = c < d"


@needs_simgrid
def test_cm02_replays_contention_free_schedules_at_their_alpha_beta_times():
    from synth.app.compare import simulate_comparison

    topology = parse_topology("torus:4,4")
    sizes = [1024, 65536, 1 << 20]
    for collective in ("allreduce", "alltoall"):
        result = simulate_comparison(compare(collective, topology, sizes, None, ALPHA, BANDWIDTH), topology, "CM02",
                                     ALPHA, BANDWIDTH)
        assert result.simulated.times.shape == (len(sizes), len(result.candidates))
        assert not np.isnan(result.simulated.times).any() and result.simulated.notes == ()
        ratio = result.simulated.times / result.times
        # one message per port per step: every step alpha + the busiest channel's bytes over its bandwidth
        calm = [j for j, c in enumerate(result.candidates) if c.mapped.port_messages.max() == 1]
        labels = {result.candidates[j].label for j in calm}
        assert {"swing-b", "ring"} <= labels or {"pairwise", "tuna r=2"} <= labels
        np.testing.assert_allclose(ratio[:, calm], 1.0, rtol=1e-6)
        if collective == "alltoall":  # TuNA's size exchanges are replayed too (8 bytes per block before a step)
            tuna = next(j for j, c in enumerate(result.candidates) if c.label == "tuna r=2")
            assert result.candidates[tuna].mapped.size_exchanges > 0
            assert abs(ratio[0, tuna] - 1) < 1e-6


@needs_simgrid
def test_lv08_latency_factor_reorders_allreduce_and_cm02_does_not():
    from synth.app.compare import simulate_comparison

    topology = parse_topology("torus:4,4")
    comparison = compare("allreduce", topology, [1024, 131072], None, ALPHA, BANDWIDTH)
    assert comparison.best == ["swing-l", "swing-b"]
    lv08 = simulate_comparison(comparison, topology, "LV08", ALPHA, BANDWIDTH)
    firsts, orders = lv08.ranking_differences()
    # LV08's 13.01 x latency on swing-b's twice as many steps outweighs swing-l's longer paths at 128KiB
    assert [(f.size, f.simulated, f.model) for f in firsts] == [(131072, "swing-l", "swing-b")]
    assert firsts[0].simulated_factor > 1.5 and firsts[0].model_factor > 1.1
    assert any(line.startswith("at 128KiB SimGrid ranks swing-l first, alpha-beta swing-b: swing-l is ")
               for line in lv08.ranking_lines())
    assert [o.sizes for o in orders] == [[131072]]
    cm02 = simulate_comparison(comparison, topology, "CM02", ALPHA, BANDWIDTH)
    assert cm02.ranking_differences() == ([], [])
    assert cm02.ranking_lines() == ["SimGrid (CM02) ranks the algorithms as alpha-beta does at every size"]


@needs_simgrid
def test_compare_simulate_from_the_command_line_prints_the_table_and_the_differences_alike_twice():
    argv = [sys.executable, "-m", "synth", "compare", "allreduce", "--network", "torus:4,4", "--bytes", "1KiB,128KiB",
            "--simulate"]
    first = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    header = lines.index("simulated on SimGrid (LV08), bulk-synchronous: each algorithm alone on the idle network, a "
                         "step starts when the previous one has ended everywhere")
    columns = lines[header + 1].split()
    assert columns[0] == "bytes" and columns[-1] == "best" and sorted(columns[1:-1]) == sorted(ALLREDUCE_ON_TORUS)
    assert lines[header + 2].split()[0] == "1KiB" and lines[header + 3].split()[-1] == "swing-l"
    assert "ranking: SimGrid (LV08) ranks the algorithms otherwise than alpha-beta at 1 of 2 sizes; its fastest is " \
           "another at 1" in lines
    assert any(line.startswith("  at 128KiB SimGrid ranks swing-l first, alpha-beta swing-b: ") for line in lines)
    second = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert second.stdout == first.stdout


@needs_simgrid
def test_compare_simulate_cm02_in_process_agrees_and_keeps_the_synthesized_column_empty(run):
    code, out, err = run("compare", "allgather", "--network", "hyperx:4,4", "--bytes", "1KiB,16KiB", "--simulate",
                         "--sim-model", "CM02", "--synthesize", "--time-limit", "5")
    assert code == 0, err
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("simulated on SimGrid (CM02)"))
    assert lines[header + 1].split()[-2:] == ["synthesized", "best"]
    assert lines[header + 2].split()[-2] == "-"
    assert "not simulated: synthesized (its schedule changes with the size)" in lines
    assert "ranking: SimGrid (CM02) ranks the simulated algorithms as alpha-beta does at every size" in lines
    assert not any("SimGrid ranks" in line and "first" in line for line in lines)


def test_simulate_options_are_checked_before_any_work(run, tmp_path, monkeypatch):
    code, out, err = run("compare", "allreduce", "--network", "torus:4,4", "--sim-model", "CM02")
    assert code == 2 and out == "" and err.strip() == "synth: error: --sim-model applies to --simulate: add --simulate"
    code, _, err = run("compare", "allreduce", "--network", "torus:4,4", "--simulate", "--sim-model", "XY")
    assert code == 2 and "invalid choice: 'XY'" in err
    code, out, err = run("report", "torus:4,4", "--out", tmp_path / "r.md", "--simulate")
    assert code == 2 and out == "" and "--collectives LIST" in err and len(err.strip().splitlines()) == 1
    monkeypatch.setenv("SYNTH_SIMGRID", str(tmp_path))  # a directory without SimGrid's module: one line, exit 2
    for argv in (("compare", "allreduce", "--network", "torus:4,4", "--simulate"),
                 ("report", "torus:4,4", "--out", tmp_path / "r.md", "--collectives", "allreduce", "--simulate")):
        code, out, err = run(*argv)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
        assert err.startswith("synth: error: SYNTH_SIMGRID=") and "holds no simgrid module" in err
    assert list(tmp_path.iterdir()) == []


@needs_simgrid
def test_report_collectives_with_simulate_add_the_table_and_the_lines_in_both_pages(run, tmp_path):
    def report(folder):
        folder.mkdir()
        code, out, err = run("report", "torus:4,4", "--out", folder / "r.md", "--out", folder / "r.html", "--patterns",
                             "a2a-lin", "--routers", "minimal", "--collectives", "allreduce", "--collective-bytes",
                             "1KiB,128KiB", "--simulate", "--quiet")
        assert code == 0, err  # (the pages name the command, with the folder)
        return {p.name: p.read_bytes().replace(str(folder).encode(), b"FOLDER") for p in sorted(folder.iterdir())}

    first = report(tmp_path / "one")
    markdown, html = first["r.md"].decode(), first["r.html"].decode()
    assert "### allreduce simulated (SimGrid LV08)" in markdown
    header = next(line for line in markdown[markdown.index("### allreduce simulated"):].splitlines()
                  if line.startswith("| bytes |")).strip("| ").split(" | ")
    assert header[0] == "bytes" and header[-1] == "best"  # (the algorithms in the order of the registry)
    assert sorted(header[1:-1]) == sorted(ALLREDUCE_ON_TORUS)
    assert "SimGrid (LV08) ranks the algorithms otherwise than alpha-beta at 1 of 2 sizes; its fastest is another at 1:" \
           in markdown
    assert "\n- at 128KiB SimGrid ranks swing-l first, alpha-beta swing-b: swing-l is " in markdown
    assert "<h3>allreduce simulated (SimGrid LV08)</h3>" in html
    assert "<li>at 128KiB SimGrid ranks swing-l first, alpha-beta swing-b: swing-l is " in html
    assert report(tmp_path / "two") == first  # byte-identical reruns, figures too
