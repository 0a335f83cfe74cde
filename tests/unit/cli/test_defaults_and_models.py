"""Commands behave like their neighbours: the family's default router everywhere, models printed only
where they apply, compare covering the collectives schedule generates, one number style, counts in
the right number, the simulation's default model said (issue 41 item 4)."""

import re

import pytest

from synth.core.text import counted, figure


def test_route_without_a_router_takes_the_familys_default_and_says_so(run):
    for spec, router in (("torus:2,2", "minimal"), ("xgft:2:2,2:1,2", "dmodk")):
        code, out, err = run("route", spec, "--traffic", "a2a-lin", "--quiet")
        assert code == 0, err
        line = next(line for line in out.splitlines() if line.startswith("router"))
        assert line.split()[1] == router and "family's default" in line
        code, given, _ = run("route", spec, "--traffic", "a2a-lin", "--quiet", "--router", router)
        assert "family's default" not in given
        assert [l for l in given.splitlines() if not l.startswith("router")] == \
            [l for l in out.splitlines() if not l.startswith("router")]  # the same routing


def test_the_api_and_the_command_line_choose_the_same_router():
    import synth

    assert synth.route("torus:2,2", "a2a-lin").router == synth.network("torus:2,2").default_router


@pytest.mark.parametrize("spec, printed", [("torus:4,4", True), ("torus:2,2,2", True), ("xgft:2:4,4:1,4", False),
                                           ("dragonfly:1,4,1", False), ("hyperx:4,4", False), ("torus:4,4:p=2", False)])
def test_desensi24s_model_only_on_tori(run, spec, printed):
    code, out, err = run("schedule", "allreduce", "--algorithm", "rabenseifner", "--network", spec)
    assert code == 0, err
    assert ("DeSensi24 eq. 1" in out) == printed


@pytest.mark.parametrize("collective, extra", [("broadcast", ()), ("reduce", ("--root", "3")), ("scatter", ()),
                                               ("gather", ("--root", "1"))])
def test_compare_covers_the_rooted_collectives(run, collective, extra):
    code, out, err = run("compare", collective, "--network", "torus:2,2", "--bytes", "1KiB,1MiB", *extra)
    assert code == 0, err
    assert "binomial" in out.splitlines()[1] and "crossovers:" in out


def test_compare_p2p_and_its_refusals(run):
    code, out, err = run("compare", "p2p", "--network", "kautz:2", "--peer", "3", "--bytes", "1KiB")
    assert code == 0 and "single-path" in out, err
    for argv, message in ((("p2p", "--network", "kautz:2"), "p2p needs --peer"),
                          (("allgather", "--network", "kautz:2", "--root", "1"), "allgather has no root"),
                          (("broadcast", "--network", "kautz:2", "--root", "99"), "--root 99 is not a rank"),
                          (("alltoallv", "--network", "kautz:2"), "alltoallv needs its block sizes (--sizes)"),
                          (("alltoall", "--network", "kautz:2", "--sizes", "random:64:1"),
                           "--sizes gives an alltoallv's block sizes, not alltoall's"),
                          (("alltoallv", "--network", "kautz:2", "--sizes", "random:0:1"),
                           "every block between two ranks of this alltoallv is empty"),
                          (("alltoallv", "--network", "kautz:2", "--sizes", "csv:/nonexistent.csv"), "sizes matrix")):
        code, out, err = run("compare", *argv)
        assert code == 2 and message in err and err.count("\n") == 1, err


def test_the_top_level_help_names_schedules(run, capsys):
    from synth.cli.main import build_parser

    text = build_parser().format_help()
    assert "schedule" in text.split("positional")[0] and "Contention-optimal routing synthesis" not in text


def test_one_number_style():
    assert [figure(v) for v in (18834.2, 7939.0, 4.41, 0.5, 339.49, 1e-3)] == ["18,834", "7,939", "4.41", "0.5", "339.5",
                                                                               "0.001"]
    assert figure(float("nan")) == "-" and figure(1234567.891, 6) == "1,234,568" and figure(34.630123, 6) == "34.6301"


def test_compare_tables_have_no_exponents(run):
    code, out, err = run("compare", "allreduce", "--network", "torus:4,4", "--bytes", "32B,256MiB")
    assert code == 0, err
    assert not re.search(r"\de[+-]\d", out)


def test_counts_in_the_right_number(run, tmp_path):
    assert counted(1, "step") == "1 step" and counted(2, "step") == "2 steps"
    target = tmp_path / "s.json"
    assert run("schedule", "alltoall", "--algorithm", "spread-out", "--network", "torus:2,2", "--out", target)[0] == 0
    code, out, _ = run("verify", target)
    assert code == 0 and ": 1 step, " in out and "1 steps" not in out


def test_the_default_simulation_model_is_said(run, tmp_path):
    pytest.importorskip("synth.simulation.runner")
    from synth.app.compare import require_simgrid
    from synth.core.errors import SynthError

    try:
        require_simgrid("LV08")
    except SynthError:
        pytest.skip("SimGrid is not installed")
    target = tmp_path / "s.json"
    assert run("schedule", "allreduce", "--algorithm", "ring", "--network", "torus:2,2", "--out", target)[0] == 0
    code, out, err = run("simulate", target)
    assert code == 0 and "calibrated on TCP" in out and "--model IB" in out, err
    code, out, err = run("simulate", target, "--model", "LV08")
    assert code == 0 and "calibrated on TCP" not in out


def test_df_c_applies_where_its_documentation_says(run):
    code, out, err = run("schedule", "allgather", "--algorithm", "df-c", "--network", "2dfc:4,4")
    assert code == 0 and "allgather by df-c: 2 steps" in out, err
    code, out, err = run("schedule", "allgather", "--algorithm", "df-c", "--network", "dragonfly:1,4,3:groups=4")
    assert code == 2 and err.count("\n") == 1 and "2dfc:4,4" in err and "hyperx:A,G" in err
    from synth.collectives.algorithms import ALGORITHMS

    assert "2dfc:G,A" in ALGORITHMS.get("df-c").summary
