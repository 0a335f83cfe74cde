"""Stencil traffic (Prisacari20 ch.5, eq. 5.7-5.8) and placements, checked against a direct construction."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from math import prod

import numpy as np
import pytest

from synth.core.errors import SynthError
from synth.traffic.patterns import parse_pattern

SPEC = "xgft:3:4,4,2:1,4,2"  # 32 terminals; hierarchy (4, 4, 2): 2 top-level groups of 16


def expected_messages(alpha, beta, element_bytes):
    """Every task x to x +- e_k (mod beta_k) for beta_k > 1, mu_k = mu prod_{i != k} alpha_i / beta_i."""
    index = lambda x: sum(c * prod(beta[:k]) for k, c in enumerate(x))  # noqa: E731
    messages = Counter()
    for x in itertools.product(*(range(b) for b in beta)):
        for k, b in enumerate(beta):
            if b == 1:
                continue
            face = element_bytes * prod(a // t for i, (a, t) in enumerate(zip(alpha, beta)) if i != k)
            for step in (1, -1):
                y = list(x)
                y[k] = (y[k] + step) % b
                messages[(index(x), index(y), face)] += 1
    return messages


@pytest.mark.parametrize("alpha, beta", [((16, 16), (4, 2)), ((512, 512, 512), (8, 8, 4)), ((12, 8, 6), (3, 2, 1)),
                                         ((9,), (9,)), ((4, 4), (1, 1))])
def test_flows_are_the_symmetric_periodic_neighbours(alpha, beta):
    pattern = f"stencil:{'x'.join(map(str, alpha))}:{'x'.join(map(str, beta))}"
    workload = parse_pattern(pattern, 1024, None, 1024)
    flows = workload.flows(0)
    assert workload.num_ranks == prod(beta) and workload.num_phases == 1
    assert Counter(zip(flows.src.tolist(), flows.dst.tolist(), flows.bytes.tolist())) == expected_messages(alpha, beta, 1024)


def test_two_tasks_along_an_axis_exchange_twice():
    flows = parse_pattern("stencil:8:2", 4, None, 1).flows(0)
    assert sorted(zip(flows.src.tolist(), flows.dst.tolist())) == [(0, 1), (0, 1), (1, 0), (1, 0)]  # eq. 5.11's 1 + 1[beta = 2]


@pytest.mark.parametrize("pattern, message", [
    ("stencil:16x16:3x2", "must divide the domain"),
    ("stencil:16x16:4", "2 dimensions, the task grid 1"),
    ("stencil:16x16", "expected stencil:A1xA2x...:B1xB2x..."),
    ("stencil:16x16:0x2", "between 1 and"),
    ("stencil:64x64:64x1", "64 tasks, the network 32 terminals"),
])
def test_bad_stencils(pattern, message):
    with pytest.raises(SynthError, match=message):
        parse_pattern(pattern, 32, (4, 4, 2), 1)


def test_cartesian_placement_puts_one_block_per_group():
    workload = parse_pattern("stencil:64x64:8x4", 32, (4, 4, 2), 1).place("cartesian:4x4", 32, (4, 4, 2))
    for task in range(32):
        x0 = task % 8  # (the block spans all 4 values of x1)
        group = workload.placement[task] // 16
        assert group == x0 // 4  # blocks of 4 x 4 tasks: the x0 halves go to the two groups
    assert sorted(workload.placement.tolist()) == list(range(32))


def test_random_placement_is_seeded_and_distinct():
    base = parse_pattern("stencil:16x16:4x2", 32, None, 1)
    a, b = base.place("random:5", 32, None), base.place("random:5", 32, None)
    assert np.array_equal(a.placement, b.placement) and len(set(a.placement.tolist())) == 8
    flows = a.flows(0)
    assert set(flows.src.tolist()) == set(a.placement.tolist())
    assert base.place("contiguous", 32, None).placement is None


@pytest.mark.parametrize("placement, message", [
    ("cartesian:3x2", "each dividing it"),
    ("cartesian:8x4", "do not fit"),
    ("diagonal", "unknown placement"),
    ("random:-1", "the seed"),
])
def test_bad_placements(placement, message):
    with pytest.raises(SynthError, match=message):
        parse_pattern("stencil:64x64:8x4", 32, (4, 4, 2), 1).place(placement, 32, (4, 4, 2))


def test_cartesian_needs_a_task_grid():
    with pytest.raises(SynthError, match="has none"):
        parse_pattern("a2a-lin", 32, (4, 4, 2), 1).place("cartesian:2x2", 32, (4, 4, 2))


def test_route_and_check_with_a_placement(run, tmp_path):
    target = tmp_path / "r.json"
    code, out, err = run("route", SPEC, "--traffic", "stencil:64x64:8x4", "--router", "dmodk",
                         "--placement", "cartesian:4x4", "--out", target, "--quiet")
    assert code == 0, err
    doc = json.loads(target.read_text())
    assert doc["traffic"]["placement"] == "cartesian:4x4" and doc["traffic"]["ranks"] == 32
    assert run("check", target)[0] == 0
    doc["traffic"]["placement"] = "random:1"  # the flows no longer match the recorded placement
    target.write_text(json.dumps(doc))
    code, out, _ = run("check", target)
    assert code == 1 and "flows differ" in out
    code, _, err = run("route", SPEC, "--traffic", "a2a-lin", "--router", "dmodk", "--placement", "cartesian:2x2")
    assert code == 2 and "has none" in err
