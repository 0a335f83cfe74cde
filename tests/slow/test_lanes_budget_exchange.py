"""The whole a2a-lin exchange on dragonfly:2,4,2 routed by the paths router within 4, 2 and 1
virtual lanes (issue 22; unrestricted, its routes need 6 by the lane heuristics since issue 26, 10 before). Each routes
file is verified independently (tests/helpers.py, as in tests/unit/routing/test_lane_budget.py: per-lane dependency graphs acyclic by
networkx, paths walked, loads recounted) and by `synth check`; the budget's cost is read from the
`budget` line and checked against the recount. Solver time 1 s per phase keeps it near 30 s a run.
"""

import json

import pytest

from helpers import REPO, budget_figures, route_with_lanes, verify_lanes  # tests/ is on the path (conftest's directory)

README = REPO / "README.md"


@pytest.mark.parametrize("budget", [4, 2, 1])
def test_the_exchange_fits_the_budget(run, tmp_path, budget):
    out = tmp_path / "r.json"
    code, text, err = route_with_lanes(out, "--vls", budget)
    assert code == 0, err
    doc = json.loads(out.read_text())
    contention = verify_lanes(doc, budget)
    assert doc["synthesis"]["lanes"] == budget
    assert "unrestricted, the routes need 6 lanes" in text
    assert "a2a-lin exchange (6 lanes without a budget" in README.read_text()  # the README says what synth prints
    figures = budget_figures(text)
    assert figures["within the budget"] == (max(contention), sum(contention))
    assert figures["LP bound over all routings"][1] <= figures["without it"][1] <= figures["within the budget"][1]
    code, check, _ = run("check", out)
    assert code == 0, check
