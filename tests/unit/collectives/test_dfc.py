"""DF-C (Pham26 ch.3's dragonfly baseline, Table 3.2's Dragonfly column): every collective verified on
2dfc grids from every root, two steps (four for allreduce), and its alpha-beta cost against the table.

Table 3.2 writes the dragonfly's costs with d_i = ceil(d / 2): for the degree-31 dragonfly 16 x 17
of the evaluation (15 local links, 16 global ones), d_i = 16, the routers of a group. The table's
scatter (M / d_i) and alltoall (2M / (d_i + 1)) are the rounded forms: the schedules send
M / A + M / P and (A + G) M / P over the busiest links (A routers per group, G groups, P = A G),
asserted below exactly, within 4% of the table's on the 16 x 17 dragonfly.
"""

from __future__ import annotations

import pytest

from synth.collectives.algorithms import ALGORITHMS, Request, grid_shape
from synth.collectives.verify import verify
from synth.pricing.schedule_cost import costs, map_schedule
from synth.topology import parse_topology

ALPHA, BANDWIDTH = 1e-6, 100e9
BETA = 8 / BANDWIDTH
ROOTED = ("broadcast", "reduce", "scatter", "gather")


def generated(collective: str, spec: str, root: int = 0, blocks: int | None = None, block_bytes: int = 1000):
    topology = parse_topology(spec)
    p = topology.network().num_terminals
    blocks = blocks or (p * p if collective.startswith("alltoall") else p)
    schedule = ALGORITHMS["df-c"].generate(Request(collective, p, blocks, block_bytes, spec, root, grid_shape(topology)))
    return topology, schedule


@pytest.mark.parametrize("spec", ["2dfc:3,4", "2dfc:4,3", "2dfc:5,5", "hyperx:4,2"])
@pytest.mark.parametrize("collective", ROOTED + ("allgather", "reduce-scatter", "allreduce", "alltoall"))
def test_every_collective_verifies_from_every_root(spec, collective):
    p = parse_topology(spec).network().num_terminals
    for root in range(p) if collective in ROOTED else [0]:
        topology, schedule = generated(collective, spec, root)
        report = verify(schedule)
        assert report.ok, (root, report.violation)
        assert schedule.num_steps == (4 if collective == "allreduce" else 2) and schedule.algorithm == "df-c"
        if collective in ("broadcast", "scatter"):  # everything leaves the root in the first step, to its group only
            first = slice(schedule.step_ptr[0], schedule.step_ptr[1])
            a = grid_shape(topology)[0]  # routers per group: rank y A + x
            assert (schedule.src[first] == root).all()
            assert {int(d) // a for d in schedule.dst[first]} == {root // a}


def beta_coefficient(collective: str, spec: str, m: int, blocks: int, block_bytes: int):
    topology, schedule = generated(collective, spec, 5, blocks, block_bytes)
    c = costs(map_schedule(schedule, topology), schedule.ranks, ALPHA, BANDWIDTH)
    return schedule.num_steps, (c.time - schedule.num_steps * ALPHA) / (BETA * m)


def test_table_3_2_dragonfly_column_on_the_16_x_17_dragonfly():
    spec, a, g = "2dfc:17,16", 16, 17  # G = 17 groups of A = 16 routers
    p = a * g
    m = p * 1024  # M: the vector (broadcast), the buffer (scatter, alltoall), a node's block (allgather)
    assert beta_coefficient("broadcast", spec, m, 1, m) == pytest.approx((2, 2))
    assert beta_coefficient("reduce", spec, m, 1, m) == pytest.approx((2, 2))
    assert beta_coefficient("allgather", spec, m, p, m) == pytest.approx((2, a + 1))  # d_i + 1 = 17
    assert beta_coefficient("reduce-scatter", spec, m, p, m) == pytest.approx((2, a + 1))
    steps, scatter = beta_coefficient("scatter", spec, m, p, m // p)
    assert steps == 2 and scatter == pytest.approx(1 / a + 1 / p) and scatter == pytest.approx(1 / a, rel=0.07)
    steps, alltoall = beta_coefficient("alltoall", spec, m, p * p, m // p)
    assert steps == 2 and alltoall == pytest.approx((a + g) / p) and alltoall == pytest.approx(2 / (a + 1), rel=0.04)
    steps, allreduce = beta_coefficient("allreduce", spec, m, p, m // p)
    # the DO reduce-scatter and allgather of M / P blocks: 2 (A + 1) M / P, here (P = A (A + 1)) the table's 2M / d_i
    assert steps == 4 and allreduce == pytest.approx(2 * (a + 1) / p) == pytest.approx(2 / a)


def test_df_c_refuses_what_is_not_a_grid_of_complete_dimensions():
    algorithm = ALGORITHMS["df-c"]
    topology = parse_topology("torus:4,4")
    refusal = algorithm.refusal(Request("allgather", 16, 16, 8, "torus:4,4", 0, grid_shape(topology)))
    assert refusal is not None and refusal.startswith("df-c runs on a 2D grid")
