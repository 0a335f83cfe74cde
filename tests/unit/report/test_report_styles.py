"""One look per series (synth.report.styles, issue 22 item 7): every routing and algorithm synth
can draw has its own style, two series that can share a figure differ in colour or line style, and
a series looks the same in every figure: the reports' and `synth compare`'s."""

import matplotlib.colors
import numpy as np
from hypothesis import given, settings, strategies as st

from synth.opensm.engines import ENGINES
from synth.report import plots
from synth.report.data import PatternResult, Series
from synth.report.styles import COLOURS, FIGURES, LINES, REGISTRY, style, styles_for
from synth.routing.registry import ROUTERS
from synth.collectives.algorithms import ALGORITHMS


def every_series_name() -> set[str]:
    """Every name a report or synth compare gives a series, from synth's own registries."""
    routings = ({label for spec in ROUTERS.specs() for label, _ in spec.report.values()}
                | {f"OpenSM {e}" for e in ENGINES})
    algorithms = {a for a in ALGORITHMS if a != "tuna"}  # TuNA by its radix's role: "tuna (smallest radix)"...
    return routings | algorithms | {f"tuna ({role} radix)" for role in ("smallest", "middle", "largest")}


def test_every_routing_and_algorithm_has_a_registered_style():
    assert every_series_name() <= set(REGISTRY)


def test_series_that_can_share_a_figure_differ_in_colour_or_line():
    for group, names in FIGURES.items():
        looks = [(REGISTRY[n].colour, REGISTRY[n].line) for n in names]
        assert len(set(looks)) == len(looks), group
    triples = [(s.colour, s.line, s.marker) for s in REGISTRY.values()]
    assert len(set(triples)) == len(triples)


def test_a_reports_default_series_differ_in_colour():
    """A direct network's default routers with the five engines its committed reports run (10 series),
    and a fat tree's four routers with OpenSM's four fat-tree engines: no colour twice. Beyond ten
    series (16 on a direct network) the line style tells them apart."""
    engines = ("minhop", "updn", "dfsssp", "nue", "lash")
    direct = ["minimal", "valiant", "ugal", "synth paths", "synth layered"] + [f"OpenSM {e}" for e in engines]
    fat_tree = ["d-mod-k", "s-mod-k", "random", "synth layered"] + [f"OpenSM {e}" for e in
                                                                    ("minhop", "updn", "ftree", "dfsssp")]
    for names in (direct, fat_tree):
        assert len({REGISTRY[n].colour for n in names}) == len(names)
    every = FIGURES["direct network"]
    assert len(every) > len(COLOURS) and len({(REGISTRY[n].colour, REGISTRY[n].line) for n in every}) == len(every)


def test_tuna_radices_take_their_role():
    small, middle, large = styles_for(["tuna r=2", "tuna r=9", "tuna r=71"])
    assert [small, middle, large] == [REGISTRY[f"tuna ({r} radix)"] for r in ("smallest", "middle", "largest")]
    assert styles_for(["tuna r=71", "tuna r=2"]) == [REGISTRY["tuna (largest radix)"],
                                                     REGISTRY["tuna (smallest radix)"]]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=len(COLOURS) * len(LINES), unique=True))
def test_unknown_names_are_stable_and_distinct_in_one_figure(names):
    """Names no registry knows (tables given as --lfts NAME=DIR): the same style on every call, and
    no two series of one figure alike while the 40 colour and line pairs last."""
    first = styles_for(names)
    assert first == styles_for(list(names))
    assert len({(s.colour, s.line) for s in first}) == len(names)
    for name in names:
        assert style(name) == style(name)


def test_a_series_looks_the_same_in_every_figure():
    """"synth paths" in a contention panel, a one-phase bar chart, the summary and another report's
    figure with other series beside it: one colour and line style."""
    from synth.report.data import CostModel

    phases = np.arange(12)
    many = PatternResult("a2a-lin", "LIN", phases, np.full(12, 1),
                         [Series("minimal", phases % 3 + 1, 0.0), Series("synth paths", np.full(12, 1), 0.0)])
    one = PatternResult("randperm:1", "randperm:1", np.arange(1), np.array([1]),
                        [Series("OpenSM nue", np.array([4]), 0.0), Series("synth paths", np.array([1]), 0.0),
                         Series("mine", np.array([2]), 0.0)])
    expected = REGISTRY["synth paths"]
    panels = plots.contention_figure(many)
    (line,) = [line for line in panels.axes[1].get_lines() if line.get_label() == "synth paths"]
    assert matplotlib.colors.same_color(line.get_color(), expected.colour) and line.get_linestyle() == expected.line
    index = [s.routing for s in one.series].index("synth paths")
    for figure in (plots.contention_figure(one), plots.time_figure([one], CostModel(1e-6, 1e11, 64))):
        (axes,) = figure.axes
        bars = [p for p in axes.patches if p.get_height() > 0]
        assert matplotlib.colors.same_color(bars[index].get_facecolor(), expected.colour)
        assert (bars[index].get_hatch() or "") == expected.hatch


def test_compare_figure_uses_the_registry():
    """synth compare's figure (plots.collective_figure): each algorithm's line in its registered style."""
    from synth.pricing.compare import compare
    from synth.topology import parse_topology

    result = compare("allreduce", parse_topology("torus:4,4"), [1024, 1 << 20], "minimal", 1e-6, 100e9)
    figure = plots.collective_figure(result, "torus")
    labels = {c.label for c in result.candidates}
    lines = [line for line in figure.axes[0].get_lines() if line.get_label() in labels]  # (not the bound, crossovers)
    assert [line.get_label() for line in lines] == [c.label for c in result.candidates]
    for line, candidate in zip(lines, result.candidates):
        expected = REGISTRY[candidate.label]
        assert matplotlib.colors.same_color(line.get_color(), expected.colour)
        assert line.get_linestyle() == expected.line and line.get_marker() == expected.marker
    pairs = [(line.get_color(), line.get_linestyle()) for line in lines]
    assert len(set(pairs)) == len(pairs)
