"""`synth model demand` (Prisacari20 ch.5, eq. 5.1-5.6): any workload's global-link demand on a dragonfly.

The seed's (and the digest's) numbers for the stencil on DF(4,8,4) come out of the general
formulas (5.2, 5.3) applied to the actual stencil traffic and placement, and a naive recount
(plain loops over the messages, groups from the dragonfly's definition: terminals numbered group
by group) agrees on random workloads.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st


def test_two_groups_have_no_indirect_routing(run):
    code, out, err = run("model", "demand", "dragonfly:2,4,2:groups=2", "--traffic", "a2a-lin")
    assert code == 0 and err == ""
    assert demand_rows(out)["direct"][0] > 0
    assert re.search(r"^indirect\s+5\.3\s+-\s+-\s+no intermediate group \(2 groups\)$", out, re.M), out


def demand_rows(out: str) -> dict[str, tuple[float, str, float]]:
    rows = {}
    for line in out.splitlines():
        m = re.match(r"^(direct|indirect)\s+5\.[23]\s+(\S+)\s+(g\d+ -> g\d+|-)\s+(\S+)$", line)
        if m:
            rows[m.group(1)] = (float(m.group(2)), m.group(3), float(m.group(4)))
    return rows


# Prisacari20 ch.5 on DF(4,8,4), alpha = 512^3, beta = 8x8x4 (m = 0.2, 0.2, 0.1): the digest's checks of
# (5.16) (direct) and (5.17) (Valiant, /(a h - 1) = /31). gamma = 1x8x4: direct 6.4; its indirect
# value is (5.17)'s 4 * 32 * 0.2 / 31.
@pytest.mark.parametrize("gamma, direct, indirect", [("4x4x2", 3.2, 0.6194), ("2x2x2", 0.8, 0.2581),
                                                      ("1x8x4", 6.4, 4 * 32 * 0.2 / 31)])
def test_stencil_on_the_seeds_dragonfly(run, gamma, direct, indirect):
    code, out, err = run("model", "demand", "dragonfly:4,8,4", "--traffic", "stencil:512x512x512:8x8x4",
                         "--placement", f"cartesian:{gamma}")
    assert code == 0 and err == "", err
    rows = demand_rows(out)
    assert rows["direct"][0] == pytest.approx(direct, abs=5e-4)
    assert rows["indirect"][0] == pytest.approx(indirect, abs=5e-4)
    assert rows["direct"][2] == pytest.approx(min(1.0, 1.0 / direct), abs=5e-4)  # (5.5) with B_R = B_P = 1


def test_bandwidths_enter_the_bound(run):
    code, out, err = run("model", "demand", "dragonfly:4,8,4", "--traffic", "stencil:512x512x512:8x8x4",
                         "--placement", "cartesian:4x4x2", "--br", "2", "--bp", "0.5")
    assert code == 0
    assert demand_rows(out)["direct"][2] == pytest.approx(min(0.5, 2 / 3.2), abs=5e-4)


def naive_demand(p: int, a: int, links: dict, flows: list[tuple[int, int, int]]) -> dict[str, float]:
    """(5.1)-(5.3) recounted message by message: groups are terminal // (p a)."""
    sent: dict[int, float] = {}
    for s, d, size in flows:
        if s != d:
            sent[s] = sent.get(s, 0.0) + size
    g = 1 + max(max(i, j) for i, j in links)
    direct: dict = {}
    indirect: dict = {}
    for s, d, size in flows:
        if s == d or sent[s] == 0:
            continue
        share = size / sent[s]
        i, j = s // (p * a), d // (p * a)
        if i == j:
            continue
        direct[(i, j)] = direct.get((i, j), 0.0) + share
        for via in range(g):
            if via not in (i, j):
                indirect[(i, via)] = indirect.get((i, via), 0.0) + share / (g - 2)
                indirect[(via, j)] = indirect.get((via, j), 0.0) + share / (g - 2)
    return {name: max((v / links[pair] for pair, v in table.items()), default=0.0)
            for name, table in (("direct", direct), ("indirect", indirect))}


def global_links(run, spec: str) -> dict:
    """Global links per ordered group pair, from the topology JSON (router names g<i>r<x>)."""
    code, out, _ = run("topology", spec, "--format", "json")
    doc = json.loads(out)
    group = {node["id"]: int(re.fullmatch(r"g(\d+)r\d+", node["name"]).group(1))
             for node in doc["nodes"] if node["kind"] == "switch"}
    links: dict = {}
    for c in doc["channels"]:
        if c["src"] in group and c["dst"] in group and group[c["src"]] != group[c["dst"]]:
            key = (group[c["src"]], group[c["dst"]])
            links[key] = links.get(key, 0) + 1
    return links


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])  # run is stateless
@given(st.sampled_from([("dragonfly:1,2,1", 1, 2), ("dragonfly:2,2,2", 2, 2), ("dragonfly:1,4,2:groups=5", 1, 4)]),
       st.lists(st.tuples(st.integers(0, 19), st.integers(0, 19), st.integers(0, 9)), min_size=1, max_size=40))
def test_equals_a_naive_recount(run, tmp_path_factory, case, rows):
    spec, p, a = case
    links = global_links(run, spec)
    n = p * a * (1 + max(i for i, _ in links))
    flows = [(s % n, d % n, size) for s, d, size in rows]
    if not any(s != d and size > 0 for s, d, size in flows):
        flows.append((0, n - 1, 1))
    path = tmp_path_factory.mktemp("demand") / "traffic.csv"
    path.write_text("".join(f"{s},{d},{size}\n" for s, d, size in flows))
    code, out, err = run("model", "demand", spec, "--traffic", f"csv:{path}")
    assert code == 0, err
    rows_out = demand_rows(out)
    expected = naive_demand(p, a, links, flows)
    for routing in ("direct", "indirect"):
        assert rows_out[routing][0] == pytest.approx(expected[routing], rel=1e-3, abs=1e-4), routing


@pytest.mark.parametrize("argv, mention", [
    (["hyperx:3,3", "--traffic", "randperm:1"], "dragonflies"),
    (["dragonfly:1,2,1", "--traffic", "randperm:1", "--bp", "0"], "--bp"),
    (["dragonfly:1,2,1", "--traffic", "randperm:1", "--br", "nan"], "--br"),
    (["dragonfly:1,2,1"], "no traffic"),
])
def test_bad_input_is_one_line(run, argv, mention):
    code, out, err = run("model", "demand", *argv)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and mention in err, err


@pytest.mark.parametrize("gamma, message", [("2x4", "does not divide --beta 12x6"),
                                            ("12x6", "puts 72 tasks in a group of 8 terminals")])
def test_stencil_model_checks_the_block(run, gamma, message):
    code, out, err = run("model", "stencil", "dragonfly:2,4,2", "--alpha", "12x6", "--beta", "12x6", "--gamma", gamma)
    assert code == 2 and out == "" and message in err and len(err.splitlines()) == 1, err
