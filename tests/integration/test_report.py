"""`synth report`: the page is well formed, its figures are real images of the data, and its
numbers are the ones `synth route` and `synth opensm-check` print for the same instance."""

import base64
import contextlib
import io
import json
import re
from html.parser import HTMLParser

import matplotlib.colors
import matplotlib.image
import numpy as np
import pytest

from helpers import TABLE_3_1
from synth.cli import main
from synth.pricing.alphabeta import exchange_time
from synth.report import plots
from synth.report.data import PATTERNS, CostModel, PatternResult, Series
from synth.report.styles import style

SPEC = TABLE_3_1[32]
PATTERN_NAMES = list(PATTERNS)  # N = 32 is a power of two: XOR included
# the report's columns of XGFT routings, as the report labels them
ROUTERS = {"dmodk": "d-mod-k", "smodk": "s-mod-k", "random": "random", "layered": "synth layered",
           "layered-consistent": "synth layered, dest.-consistent", "monolithic-consistent": "synth exact, dest.-consistent"}
DEFAULT_ROUTERS = {name: ROUTERS[name] for name in ("dmodk", "smodk", "random", "layered")}  # the report's default


def cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One report of the 32-leaf Table 3.1 XGFT in both formats."""
    directory = tmp_path_factory.mktemp("report")
    code, out, err = cli("report", SPEC, "--out", directory / "r.html", "--out", directory / "r.md", "--quiet")
    assert code == 0, err
    return directory, out


class StrictHtml(HTMLParser):
    """Every element closed in order (void elements excepted): what a browser needs no repair for."""

    VOID = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.images, self.tags = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "img":
            self.images.append(dict(attrs))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def md_tables(text):
    """Markdown tables after each '## X exchange' heading: {label: [(headers, rows), ...]}."""
    sections = re.split(r"^## (\w+) exchange$", text, flags=re.M)
    out = {}
    for label, body in zip(sections[1::2], sections[2::2]):
        tables, current = [], None
        for line in body.splitlines():
            if line.startswith("|"):
                cells = [c.strip() for c in line.strip("|").split("|")]
                if current is None:
                    current = (cells, [])
                elif not set("".join(cells)) <= set("-:"):
                    current[1].append([int(c) for c in cells])
            elif current is not None:
                tables.append(current)
                current = None
        out[label] = tables
    return out


def per_phase(tables, label):
    headers, rows = md_tables(tables)[label][-1]
    columns = np.array(rows).T
    return dict(zip(headers, columns))


def test_html_is_well_formed_and_its_figures_are_png_images(report):
    directory, _ = report
    text = (directory / "r.html").read_text()
    assert text.startswith("<!DOCTYPE html>")
    parser = StrictHtml()
    parser.feed(text)
    parser.close()
    assert parser.errors == [] and parser.stack == []
    assert parser.tags.count("html") == parser.tags.count("body") == parser.tags.count("title") == 1
    assert len(parser.images) == 1 + len(PATTERN_NAMES)  # the time chart and one per pattern
    for image in parser.images:
        prefix, data = image["src"].split(",", 1)
        assert prefix == "data:image/png;base64" and image.get("alt")
        pixels = matplotlib.image.imread(io.BytesIO(base64.b64decode(data)), format="png")
        assert pixels.shape[0] > 200 and pixels.shape[1] > 400
        assert len(np.unique(pixels.reshape(-1, pixels.shape[2]), axis=0)) > 10  # drawn, not blank


def test_markdown_links_the_png_files_it_wrote(report):
    directory, out = report
    text = (directory / "r.md").read_text()
    linked = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert sorted(linked) == sorted(["r-time.png"] + [f"r-{PATTERNS[p].lower()}.png" for p in PATTERN_NAMES])
    for name in linked:
        assert (directory / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {directory / 'r.html'}" in out


@pytest.mark.parametrize("pattern", PATTERN_NAMES)
def test_report_numbers_equal_synth_route(report, tmp_path, pattern):
    """Per phase: the bound and every routing's max contention as `synth route` writes them."""
    directory, _ = report
    columns = per_phase((directory / "r.md").read_text(), PATTERNS[pattern])
    for router, label in DEFAULT_ROUTERS.items():
        routes = tmp_path / f"{router}.json"
        code, _, err = cli("route", SPEC, "--traffic", pattern, "--router", router, "--out", routes, "--quiet")
        assert code == 0, err
        phases = json.loads(routes.read_text())["phases"]
        assert columns["phase"].tolist() == [p["phase"] for p in phases]
        assert columns["lower bound"].tolist() == [p["lower_bound"] for p in phases]
        assert columns[label].tolist() == [p["max_contention"] for p in phases], label


def test_alpha_beta_estimates_use_the_seed_defaults(report):
    """Summary estimates: sum over phases of 1 us + 8e-11 s/B * 4096 B * max contention."""
    directory, _ = report
    text = (directory / "r.md").read_text()
    columns = per_phase(text, "OPT")
    summary = text.split("### OPT")[1].split("###")[0]
    estimates = {line.split("|")[1].strip(): float(line.split("|")[5]) for line in summary.splitlines()
                 if line.startswith("| ") and not line.startswith("| routing")}
    for label in ["lower bound", *DEFAULT_ROUTERS.values()]:
        expected = 32 * 1e-6 + 8e-11 * 4096 * columns[label].sum()
        assert estimates[label] == pytest.approx(expected * 1e6, abs=0.006)
        assert expected == pytest.approx(exchange_time(columns[label], 4096))


def test_contention_figure_plots_the_series_against_the_bound_on_one_scale():
    """A panel per routing, every panel with the bound's line and the series' line, all on one y
    scale that holds the highest series (a routing at 3 is drawn lower than one at 24)."""
    phases = np.arange(16)
    bound = np.where(phases < 8, 2, 1)
    result = PatternResult("a2a-opt", "OPT", phases, bound,
                           [Series("synth paths", phases % 3, 0.0), Series("OpenSM nue", np.full(16, 24), 0.0)])
    figure = plots.contention_figure(result)
    limits = {axes.get_ylim() for axes in figure.axes}
    assert len(figure.axes) == 2 and len(limits) == 1
    (low, high), = limits
    assert low == 0 and 24 < high <= 24 * 1.2
    for axes, series in zip(figure.axes, result.series):
        lines = {line.get_label(): line for line in axes.get_lines()}
        assert set(lines) == {"lower bound", series.routing}
        assert np.array_equal(lines["lower bound"].get_ydata(), bound)
        line = lines[series.routing]
        assert np.array_equal(line.get_xdata(), phases) and np.array_equal(line.get_ydata(), series.max_contention)
        assert matplotlib.colors.same_color(line.get_color(), style(series.routing).colour)
        assert line.get_linestyle() == style(series.routing).line
    changed = PatternResult("a2a-opt", "OPT", phases, bound, [Series("synth paths", phases % 4, 0.0), result.series[1]])
    assert plots.png(plots.contention_figure(changed)) != plots.png(plots.contention_figure(result))


@pytest.mark.parametrize("count", [1, 2, plots.BAR_PHASES])
def test_a_pattern_of_few_phases_is_drawn_as_bars(count):
    """randperm:1 or shift:8 (one phase): a bar per routing of its contention, the bound a line over
    them, a y axis from 0 (not a step line over one phase on an axis from -0.04 to 0.04)."""
    phases = np.arange(count)
    bound = np.full(count, 2)
    series = [Series("minimal", np.full(count, 3), 0.0), Series("synth paths", np.full(count, 2), 0.0),
              Series("valiant", np.arange(count) + 5, 0.0)]
    figure = plots.contention_figure(PatternResult("randperm:1", "randperm:1", phases, bound, series))
    (axes,) = figure.axes
    assert axes.get_lines() == [] and axes.get_ylim()[0] == 0 and axes.get_ylim()[1] > count + 4
    bars = [patch for patch in axes.patches if patch.get_height() > 0]
    assert len(bars) == count * len(series)
    for j, s in enumerate(series):
        mine = bars[j * count:(j + 1) * count]
        assert [b.get_height() for b in mine] == s.max_contention.tolist()
        assert all(matplotlib.colors.same_color(b.get_facecolor(), style(s.routing).colour) for b in mine)
    (segments,) = [c for c in axes.collections if c.get_label() == "lower bound"]
    assert sorted(float(seg[0][1]) for seg in segments.get_segments()) == bound.tolist()


def test_summary_figure_shows_each_estimate_over_the_bound():
    """Bars of estimate / estimate at the bound, by the model's formula (per phase alpha + beta x
    bytes x contention, Prisacari20's alpha-beta): 72 phases and one phase on one readable axis."""
    cost = CostModel(1e-6, 100e9, 4096)
    one = PatternResult("randperm:1", "randperm:1", np.arange(1), np.array([2]),
                        [Series("minimal", np.array([3]), 0.0), Series("synth paths", np.array([2]), 0.0)])
    many = PatternResult("a2a-lin", "LIN", np.arange(72), np.full(72, 2),
                         [Series("minimal", np.full(72, 8), 0.0), Series("synth paths", np.full(72, 2), 0.0)])
    figure = plots.time_figure([one, many], cost)
    (axes,) = figure.axes

    def estimate(contention):
        return sum(1e-6 + 8e-11 * 4096 * c for c in contention)

    heights = [patch.get_height() for patch in axes.patches]
    expected = [estimate(r.series[j].max_contention) / estimate(r.lower_bound) for j in range(2) for r in (one, many)]
    assert heights == pytest.approx(expected)
    assert min(heights) >= 1 and axes.get_yscale() == "linear" and axes.get_ylim()[0] == 0
    assert [line.get_ydata()[0] for line in axes.get_lines()] == [1.0]  # the bound
    for patch, name in zip(axes.patches, ["minimal"] * 2 + ["synth paths"] * 2):
        assert matplotlib.colors.same_color(patch.get_facecolor(), style(name).colour)


def test_report_shows_opensm_engines_as_opensm_check_does(tmp_path):
    """Engine columns equal `synth opensm-check` on tables of the same workload."""
    spec = TABLE_3_1[16]
    code, _, err = cli("report", spec, "--patterns", "opt", "--routers", "dmodk", "--opensm", "minhop,ftree",
                       "--out", tmp_path / "r.md", "--quiet")
    assert code == 0, err
    columns = per_phase((tmp_path / "r.md").read_text(), "OPT")
    for engine, row in opensm_check_rows(tmp_path, spec, "a2a-opt", "dmodk", ("minhop", "ftree")).items():
        assert int(row[2]) == columns[f"OpenSM {engine}"].max()
        assert int(row[3]) == int((columns[f"OpenSM {engine}"] > columns["lower bound"]).sum())


def opensm_check_rows(tmp_path, spec, pattern, router, engines) -> dict:
    """{engine: its row of `synth opensm-check` (split)} on the tables of `router`'s routes."""
    routes = tmp_path / "routes.json"
    assert cli("route", spec, "--traffic", pattern, "--router", router, "--out", routes, "--quiet")[0] == 0
    assert cli("tables", routes, "--out", tmp_path / "t")[0] == 0
    code, out, err = cli("opensm-check", tmp_path / "t", "--engines", ",".join(engines))
    assert code == 0, out + err
    return {e: next(line.split() for line in out.splitlines() if line.startswith(f"opensm {e}")) for e in engines}


@pytest.mark.parametrize("argv, message", [
    (["--out", "r.txt"], "--out must name a .html or .md file"),
    (["--out", "r.html", "--patterns", "opt,ring"], "unknown exchange 'ring'"),
    (["--out", "r.html", "--routers", "dmodk,ecmp"], "unknown router 'ecmp'"),
    (["--out", "r.html", "--opensm", "fattree"], "unknown OpenSM engine 'fattree'"),
    (["--out", "r.html", "--alpha", "0"], "--alpha must be a positive number, got '0'"),
    (["--out", "r.html", "--bandwidth", "100", "--beta", "1e-10"], "not allowed with argument"),
])
def test_bad_report_options_exit_2_and_write_nothing(tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("report", TABLE_3_1[16], *argv)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_xor_is_left_out_of_all_on_other_sizes(tmp_path):
    code, out, err = cli("report", "xgft:2:3,2:1,3", "--routers", "dmodk", "--out", tmp_path / "r.md", "--quiet")
    assert code == 0, err
    assert "XOR" not in out and "LIN:" in out and "BGH:" in out


def test_tables_given_as_a_directory_are_evaluated_like_the_routes_they_hold(tmp_path):
    """--lfts NAME=DIR: d-mod-k tables written by `synth tables` give d-mod-k's numbers; tables of
    another network or an incomplete directory are refused with one line."""
    spec = TABLE_3_1[32]
    routes = tmp_path / "routes.json"
    assert cli("route", spec, "--traffic", "a2a-lin", "--router", "dmodk", "--out", routes, "--quiet")[0] == 0
    assert cli("tables", routes, "--out", tmp_path / "t")[0] == 0
    code, _, err = cli("report", spec, "--patterns", "opt,lin", "--routers", "dmodk", "--lfts", f"mine={tmp_path / 't'}",
                       "--out", tmp_path / "r.md", "--quiet")
    assert code == 0, err
    text = (tmp_path / "r.md").read_text()
    assert text.startswith(f"# synth cost report: {spec}\n") and f"mine: tables read from {tmp_path / 't'}" in text
    for label in ("OPT", "LIN"):
        columns = per_phase(text, label)
        assert columns["mine"].tolist() == columns["d-mod-k"].tolist()
    code, _, err = cli("report", TABLE_3_1[16], "--lfts", f"mine={tmp_path / 't'}", "--out", tmp_path / "x.md")
    assert code == 2 and "does not describe the network" in err
    (tmp_path / "t" / "lfts.dump").unlink()
    code, _, err = cli("report", spec, "--lfts", f"mine={tmp_path / 't'}", "--out", tmp_path / "x.md")
    assert code == 2 and "tables need guid2lid and one of lfts.dump" in err
    assert not (tmp_path / "x.md").exists()


def test_destination_consistent_routings_equal_synth_route_with_consistency(tmp_path):
    spec = TABLE_3_1[16]
    code, _, err = cli("report", spec, "--patterns", "opt", "--routers", "layered-consistent,monolithic-consistent",
                       "--out", tmp_path / "r.md", "--quiet", "--time-limit", "30")
    assert code == 0, err
    columns = per_phase((tmp_path / "r.md").read_text(), "OPT")
    for router, label in (("layered", ROUTERS["layered-consistent"]), ("monolithic", ROUTERS["monolithic-consistent"])):
        routes = tmp_path / f"{router}.json"
        code, _, err = cli("route", spec, "--traffic", "a2a-opt", "--router", router, "--consistency", "destination",
                           "--time-limit", "30", "--out", routes, "--quiet")
        assert code == 0, err
        assert columns[label].tolist() == [p["max_contention"] for p in json.loads(routes.read_text())["phases"]]


# ----- reports of direct networks (issue 11) -------------------------------------------------------

DIRECT = "dragonfly:2,4,2"
DIRECT_PATTERNS = {"a2a-lin": "LIN", "randperm:2": "randperm:2", "shift:8": "shift:8"}
DIRECT_ROUTERS = {"minimal": "minimal", "ugal": "ugal", "paths": "synth paths", "layered": "synth layered"}


def direct_args(out):
    return ("report", DIRECT, "--patterns", ",".join(DIRECT_PATTERNS), "--routers", ",".join(DIRECT_ROUTERS),
            "--opensm", "minhop,dfsssp", "--out", out, "--quiet")


@pytest.fixture(scope="module")
def direct_report(tmp_path_factory):
    directory = tmp_path_factory.mktemp("direct")
    code, out, err = cli(*direct_args(directory / "r.md"))
    assert code == 0, err
    return directory


def sections(text):
    """{heading: the rows (lists of cells) of the last table under it} for every '## ' and '### '
    heading: the summary under '### LABEL (N phases)', every phase under '## LABEL'."""
    out, heading, previous = {}, None, ""
    for line in text.splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif line.startswith("|") and heading is not None:
            if not previous.startswith("|"):
                out[heading] = []  # a new table
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not set("".join(cells)) <= set("-:"):
                out[heading].append(cells)
        previous = line
    return out


def test_direct_report_numbers_equal_synth_route(direct_report, tmp_path):
    """Per phase: every routing's max contention as `synth route` writes it; the bound is the cut
    bound raised to the LP bound the synthesizing routers record."""
    tables = sections((direct_report / "r.md").read_text())
    for pattern, label in DIRECT_PATTERNS.items():
        rows = tables[label]
        columns = dict(zip(rows[0], np.array([[int(c) for c in row] for row in rows[1:]]).T))
        bound = None
        for router, column in DIRECT_ROUTERS.items():
            routes = tmp_path / f"{router}-{label}.json"
            code, _, err = cli("route", DIRECT, "--traffic", pattern, "--router", router, "--out", routes, "--quiet")
            assert code == 0, err
            phases = json.loads(routes.read_text())["phases"]
            assert columns["phase"].tolist() == [p["phase"] for p in phases]
            assert columns[column].tolist() == [p["max_contention"] for p in phases], column
            here = np.array([max(p["lower_bound"], p.get("solver", {}).get("lp_bound", 0)) for p in phases])
            bound = here if bound is None else np.maximum(bound, here)
        assert columns["lower bound"].tolist() == bound.tolist()


def test_direct_report_lanes_are_what_synth_vls_needs(direct_report, tmp_path):
    summary = sections((direct_report / "r.md").read_text())["LIN (72 phases)"]
    lanes = {row[0]: row[summary[0].index("lanes")] for row in summary[1:]}
    routes, with_lanes = tmp_path / "r.json", tmp_path / "v.json"
    assert cli("route", DIRECT, "--traffic", "a2a-lin", "--router", "paths", "--out", routes, "--quiet")[0] == 0
    code, out, _ = cli("vls", routes, "--out", with_lanes, "--max-vls", "15")
    assert code == 0
    needed = max(max(p["vls"]) for p in json.loads(with_lanes.read_text())["phases"]) + 1
    assert lanes["synth paths"] == str(needed)
    assert "needed" in lanes["OpenSM dfsssp"]


def test_direct_report_engines_equal_opensm_check(direct_report, tmp_path):
    rows = sections((direct_report / "r.md").read_text())["randperm:2"]
    columns = dict(zip(rows[0], np.array([[int(c) for c in row] for row in rows[1:]]).T))
    for engine, row in opensm_check_rows(tmp_path, DIRECT, "randperm:2", "minimal", ("minhop", "dfsssp")).items():
        assert int(row[2]) == columns[f"OpenSM {engine}"].max()


def test_direct_report_reruns_are_byte_identical(tmp_path, monkeypatch):
    pages = []
    for run in ("a", "b"):
        (tmp_path / run).mkdir()
        monkeypatch.chdir(tmp_path / run)
        assert cli("report", DIRECT, "--patterns", "randperm:1,shift:8", "--routers", "minimal,paths,layered",
                   "--out", "r.md", "--out", "r.html", "--quiet")[0] == 0
        pages.append({p.name: p.read_bytes() for p in sorted((tmp_path / run).iterdir())})
    assert pages[0] == pages[1]
    assert "r-randperm-1.png" in pages[0] and "r-shift-8.png" in pages[0]  # figure names without ':'


@pytest.mark.parametrize("spec, expected", [
    ("dragonfly:2,4,2", ["a2a-lin", "a2a-lat", "randperm:1", "shift:8"]),  # 8 terminals per group
    ("slimfly:5", ["a2a-lin", "randperm:1", "worst-case"]),
    ("hyperx:5,5:p=4", ["a2a-lin", "randperm:1", "shift:4"]),  # 4 terminals per router
    ("mlfm:3", ["a2a-lin", "randperm:1", "worst-case"]),
    ("dragonfly:2,4,2@fail=g1r2", ["a2a-lin", "a2a-lat", "randperm:1", "shift:8"]),  # a degraded one: its family's
])
def test_default_patterns_of_each_family(spec, expected):
    """Each family's report patterns are its own (Topology.report_patterns)."""
    from synth.topology import parse_topology

    assert parse_topology(spec).report_patterns() == expected


@pytest.mark.parametrize("argv, message", [
    (["--routers", "dmodk"], "unknown router 'dmodk' for a report on dragonfly"),
    (["--patterns", "a2a-lin,bogus"], "bogus"),
    (["--patterns", "randperm:1,randperm:1"], "twice"),
])
def test_bad_direct_report_options(tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("report", DIRECT, "--out", "r.md", *argv)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_title_names_every_collective(tmp_path):
    """`--collectives allreduce,alltoall`: the title names the network and both collectives (it was
    "synth cost report: alltoall", the last collective's name in the report's place)."""
    code, _, err = cli("report", DIRECT, "--patterns", "randperm:1", "--routers", "minimal", "--collectives",
                       "allreduce,alltoall", "--collective-bytes", "1KiB,4KiB", "--out", tmp_path / "r.md",
                       "--out", tmp_path / "r.html", "--quiet")
    assert code == 0, err
    title = f"synth cost report: {DIRECT}; collectives allreduce, alltoall"
    text = (tmp_path / "r.md").read_text()
    assert text.startswith(f"# {title}\n")
    assert "### randperm:1 (1 phase)\n" in text and "every phase (1 row)" in text  # (not "1 phases")
    html = (tmp_path / "r.html").read_text()
    assert f"<title>{title}</title>" in html and f"<h1>{title}</h1>" in html


def seed_ideal_time(m, message_bytes, bandwidth_bits):
    """[Prisacari20] sec. 2.5.1, written out here: T = sum_l M_1..M_{l-1} (M_l - 1) T(l),
    T(l) = 2 t_path(l) + (F + 1) S / B, t_path(l) = 2 * 500 ns + (2l - 1) * 50 ns + 2l * 100 ns,
    F = ceil(bytes / 64) flits of S = 64 B."""
    flits = max(1, -(-message_bytes // 64))
    total, below = 0.0, 1
    for layer, m_l in enumerate(m, start=1):
        t_path = 1000e-9 + (2 * layer - 1) * 50e-9 + 2 * layer * 100e-9
        total += below * (m_l - 1) * (2 * t_path + (flits + 1) * 64 * 8 / bandwidth_bits)
        below *= m_l
    return total


@pytest.mark.parametrize("bandwidth", [None, "25"])
def test_fat_tree_section_uses_the_cost_models_bandwidth(tmp_path, bandwidth):
    """One bandwidth in a report: the fat-tree section's ideal time is at the cost model's link
    bandwidth (default 100 Gb/s; --bandwidth 25), not at the seed's simulated 10 Gb/s."""
    assert seed_ideal_time((4, 2), 4096, 10e9) == pytest.approx(43196e-9)  # the seed's FT(2; 4, 2), by hand
    extra = ["--bandwidth", bandwidth] if bandwidth else []
    code, _, err = cli("report", TABLE_3_1[16], "--patterns", "opt", "--routers", "dmodk", *extra,
                       "--out", tmp_path / "r.md", "--quiet")
    assert code == 0, err
    text = (tmp_path / "r.md").read_text()
    gbps = float(bandwidth or 100)
    model = re.search(r"alpha = [\d.e-]+ us, ([\d.]+) Gb/s links", text)
    fat_tree = re.search(r"Ideal all-to-all time \(sec\. 2\.5\.1\) at the cost model's ([\d.]+) Gb/s links", text)
    assert float(model.group(1)) == float(fat_tree.group(1)) == gbps
    ideal = float(re.search(r"\*\*([\d.]+) us\*\* for 4096 B messages", text).group(1))
    assert ideal == pytest.approx(seed_ideal_time((8, 2), 4096, gbps * 1e9) * 1e6, abs=0.006)
    assert ideal != pytest.approx(seed_ideal_time((8, 2), 4096, 10e9) * 1e6, abs=0.006)
