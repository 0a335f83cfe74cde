"""The seeds' simulated results (Pham26 ch.3 and ch.4, PhamNK; SimGrid 3.28) rerun on SimGrid with
synth's schedules and paths, with the seeds' parameters (tests/bench/bench_simulate_seeds.py: SMPI
model, asynchronous ranks, 1 us, 100 Gb/s; K(16,2) at 12.5 GB/s per link against the 16 x 17
dragonfly at 6.45 GB/s).

What reproduces, within TOLERANCE of the seed's ratio: the 2dfc alltoall against Bruck at 32 KB
(8 x 8: DO, MULTITREE, MD), MD over DO and over MULTITREE on 16 x 16, MD over DO for allreduce at
32 MB, Kautz multi-path point to point from 2 to 500 MB. Each is also pinned to what synth gets
(MEASURED, 1%), so a change in a schedule, a route or the platform shows.

What does not, asserted as synth gets it (docs/simulation.md says why):
- the 16 x 16 allgather at 4 MB: MD takes 3.06 ms where the seed reports 44.5 ms; 44.5 ms is 15 times
  what the schedule's bytes take on its busiest links at 100 Gb/s, so it holds more than the network
  (the thesis names a memcpy after every combined message); MD over Bruck is then 29.8x, not 6.83x;
- Kautz-C and Kautz-M against DF-C (7x allgather at 32 MB, 11x alltoall at 64 MB): synth gets 1.94x,
  the ratio of the two networks' link bandwidths (12.5 / 6.45 GB/s) for schedules that move the same
  bytes per link (17 M per node both; both contention-free on their networks). The seed's 7x and 11x
  need a dragonfly whose links carry several times the bytes per link: its DF-C ran on a dragonfly
  built otherwise than the 2dfc 16 x 17 that Table 3.3 names.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from helpers import REPO

sys.path.insert(0, str(REPO / "tests" / "bench"))
from bench_simulate_seeds import KB, MB, simulated  # noqa: E402

SEEDS = SimpleNamespace(model="SMPI", discipline="async")
TOLERANCE = 0.20  # of the seed's ratio: the seeds' MPI programs add copies and message handling synth does not model


def ratio(slow, fast) -> float:
    return slow[0] / fast[0]


@pytest.fixture(scope="module")
def alltoall_2dfc():
    out = {}
    for m in (8, 16):
        spec, ranks = f"2dfc:{m},{m}", m * m
        for name in ("bruck", "do", "multitree", "md"):
            out[m, name] = simulated("alltoall", name, spec, 32 * KB * ranks, 100, SEEDS)
    return out


@pytest.mark.parametrize("m, name, seed, measured", [
    (8, "do", 8.78, 8.91), (8, "multitree", 9.60, 11.09), (8, "md", 11.98, 13.27),
])
def test_2dfc_alltoall_against_bruck(alltoall_2dfc, m, name, seed, measured):
    got = ratio(alltoall_2dfc[m, "bruck"], alltoall_2dfc[m, name])
    assert got == pytest.approx(seed, rel=TOLERANCE) and got == pytest.approx(measured, rel=0.01)


def test_16x16_md_against_multitree_and_do(alltoall_2dfc):
    over_multitree = ratio(alltoall_2dfc[16, "multitree"], alltoall_2dfc[16, "md"])
    over_do = ratio(alltoall_2dfc[16, "do"], alltoall_2dfc[16, "md"])
    assert over_multitree == pytest.approx(1.58, rel=TOLERANCE) and over_multitree == pytest.approx(1.39, rel=0.01)
    assert over_do == pytest.approx(1.66, rel=TOLERANCE) and over_do == pytest.approx(1.66, rel=0.01)


@pytest.mark.parametrize("m, seed, measured", [(4, 1.38, 1.32), (8, 1.30, 1.31), (16, 1.17, 1.29)])
def test_2dfc_allreduce_md_against_do(m, seed, measured):
    spec = f"2dfc:{m},{m}"
    got = ratio(simulated("allreduce", "do", spec, 32 * MB, 100, SEEDS), simulated("allreduce", "md", spec, 32 * MB, 100, SEEDS))
    assert got == pytest.approx(seed, rel=TOLERANCE) and got == pytest.approx(measured, rel=0.01)


def test_2dfc_allgather_at_4_mb_does_not_reproduce():
    md = simulated("allgather", "md", "2dfc:16,16", 4 * MB * 256, 100, SEEDS)
    bruck = simulated("allgather", "bruck", "2dfc:16,16", 4 * MB * 256, 100, SEEDS)
    assert md[0] == pytest.approx(3.06e-3, rel=0.01)  # the seed: 44.5 ms
    assert ratio(bruck, md) == pytest.approx(29.8, rel=0.01)  # the seed: 6.83x


@pytest.mark.parametrize("size, measured", [(2 * MB, 5.56), (500 * MB, 10.63)])
def test_kautz_multipath_point_to_point(size, measured):
    single = simulated("p2p", "single-path", "kautz:16", size, 100, SEEDS, root=0, peer=100)
    multi = simulated("p2p", "kautz-mp", "kautz:16", size, 100, SEEDS, root=0, peer=100)
    got = ratio(single, multi)
    assert 6.1 * (1 - TOLERANCE) <= got <= 10.3 * (1 + TOLERANCE) and got == pytest.approx(measured, rel=0.01)


@pytest.mark.parametrize("collective, block, seed", [("allgather", 32 * MB, 7), ("alltoall", 64 * MB, 11)])
def test_kautz_against_df_c_does_not_reproduce(collective, block, seed):
    ranks = 272
    dfc = simulated(collective, "df-c", "2dfc:17,16", block * ranks, 51.6, SEEDS)
    for name in ("kautz-c", "kautz-m"):
        got = ratio(dfc, simulated(collective, name, "kautz:16", block * ranks, 100, SEEDS))
        assert got == pytest.approx(12.5 / 6.45, rel=0.01)  # the seed: 7x (allgather), 11x (alltoall)
