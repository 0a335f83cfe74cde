"""The use cases (synth.app) called directly, without the command line: typed inputs in, result
objects out, nothing printed. Their numbers are recomputed here from the routes they return."""

import numpy as np
import pytest

from synth.app.bounds import phase_bounds
from synth.app.model import stencil_model, uniform_model
from synth.app.report import plan_report
from synth.app.route import plan_route, run_route
from synth.app.tables import file_names, read_checked, render_tables
from synth.core.errors import SynthError
from synth.execute import LocalExecutor
from synth.render.progress import Progress
from synth.report.data import CostModel
from synth.routing.registry import RouterOptions
from synth.topology import parse_topology
from synth.topology.paths import as_paths
from synth.traffic.patterns import parse_pattern


def workload_of(spec: str, pattern: str):
    topology = parse_topology(spec)
    workload = parse_pattern(pattern, topology.num_terminals, topology.hierarchy(), 4096, topology=topology)
    return topology, workload


@pytest.mark.parametrize("spec, router", [("xgft:2:4,4:1,4", "dmodk"), ("dragonfly:2,4,2", "minimal"),
                                          ("torus:4,4", "dor")])
def test_route_returns_evaluations_that_a_plain_count_of_its_paths_confirms(spec, router, capsys):
    topology, workload = workload_of(spec, "a2a-lin")
    phases = workload.select("0-5")
    plan = plan_route(topology, workload, "0-5", phases, router, 0, RouterOptions(), [], False, None)
    result = run_route(plan, None, None, LocalExecutor(1), None, Progress(len(phases), enabled=False), True)
    assert [e.phase for e in result.evaluations] == phases.tolist() and result.lanes_note is None
    network = topology.network()
    for e in result.evaluations:
        flows = workload.flows(e.phase)
        routed = plan.router(topology, flows.src, flows.dst, phase=np.full(len(flows.src), e.phase),
                             occurrence=np.zeros(len(flows.src), dtype=np.int64))
        paths = as_paths(topology, flows.src, flows.dst, routed.routes)
        counts = np.zeros(network.num_channels, dtype=np.int64)
        for k in range(paths.num_flows):
            for channel in paths.path(k).tolist():
                counts[channel] += 1
        assert e.max_contention == counts.max() and e.lower_bound <= e.max_contention
    assert capsys.readouterr() == ("", "")  # a use case prints nothing


def test_route_refuses_what_the_router_ignores_before_routing():
    topology, workload = workload_of("dragonfly:2,4,2", "a2a-lin")
    with pytest.raises(SynthError, match="--constraints applies to --router layered"):
        plan_route(topology, workload, "all", workload.select("all"), "minimal", 0, RouterOptions(), ["--constraints"],
                   False, None)
    with pytest.raises(SynthError, match="the dmodk router is for fat trees \\(xgft\\), not dragonfly"):
        plan_route(topology, workload, "all", workload.select("all"), "dmodk", 0, RouterOptions(), [], False, None)


def test_bounds_give_every_cut_and_an_lp_column_at_least_as_strong_on_router_links():
    topology, workload = workload_of("dragonfly:2,4,2", "a2a-lin")
    phases = workload.select("1-3")
    table = phase_bounds(topology, workload, phases, lp=True, executor=LocalExecutor(1))
    assert table.names[-1] == "lp" and table.values.shape == (3, len(table.names))
    assert (table.lower_bounds() == table.values.max(axis=1)).all() and not table.lp_short
    cuts = phase_bounds(topology, workload, phases)
    assert cuts.names == table.names[:-1] and (cuts.values == table.values[:, :-1]).all()


def test_tables_of_a_routes_file_render_every_file_they_name(run, tmp_path):
    routes = tmp_path / "r.json"
    assert run("route", "xgft:2:4,4:1,4", "--traffic", "a2a-lin", "--router", "dmodk", "--out", routes)[0] == 0
    doc, _ = read_checked(str(routes))
    for fmt in ("opensm", "json", "csv"):
        rendered = render_tables(doc, str(routes), fmt, None)
        assert sorted(rendered.texts) == sorted(file_names(doc, fmt)) and rendered.least_lmc
    assert render_tables(doc, str(routes), "opensm", None).texts["routes.json"] == routes.read_text()


def test_report_plan_checks_every_choice_before_any_routing():
    topology = parse_topology("dragonfly:2,4,2")
    cost, options = CostModel(1e-6, 100e9, 4096), RouterOptions()
    plan = plan_report(topology, cost, "all", None, "none", [], options, 0, None, None, None, None)
    assert plan.routers == ["minimal", "valiant", "ugal", "paths", "layered"] and plan.engines == []
    with pytest.raises(SynthError, match="unknown router 'dmodk' for a report on dragonfly"):
        plan_report(topology, cost, "all", "dmodk", "none", [], options, 0, None, None, None, None)
    with pytest.raises(SynthError, match="--lfts takes NAME=DIR"):
        plan_report(topology, cost, "all", None, "none", ["nodir"], options, 0, None, None, None, None)


def test_models_are_checked_and_computed_without_printing():
    topology, bound = uniform_model("dragonfly:2,4,2", None, 1.0, 1.0, 1.0)
    assert topology.family == "dragonfly" and 0 < bound.t <= 1
    with pytest.raises(SynthError, match="for dragonflies"):
        uniform_model("torus:4,4", None, 1.0, 1.0, 1.0)
    model = stencil_model("dragonfly:2,4,2", None, "8x8", 16, None, None)
    assert model.beta is None and set(model.results) and model.shares() is None
