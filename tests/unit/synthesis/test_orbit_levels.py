"""The level-by-level dragonfly allgather in orbit form (synth.synthesis.orbit_levels), checked on
dragonflies small enough to expand: both forms verify alike and price alike; expanded, every rank
receives every other rank's block exactly once, each step's deliveries cross exactly the links of
its level (read from the dragonfly's definition here, not from synth's builder: relative: port k of
group i leads to group i + k + 1 mod g; circulant: to i + (k // 2 + 1) for even k, i - (k // 2 + 1)
for odd k), each step's busiest channel carries what the level's closed form says, and where
p <= a - 1 and p <= h those summed over the steps are the P - 1 blocks each terminal must
receive: the time bound's bandwidth term exactly. Orbit synthesis keeps it over the
trees where it is cheaper, and says so in its record; where the levels do not apply it says why."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import run
from synth.collectives.orbit import expand, verify_orbit
from synth.collectives.verify import verify
from synth.pricing.orbit_cost import map_orbit
from synth.pricing.schedule_cost import map_schedule
from synth.synthesis import limits
from synth.synthesis.orbit_levels import LEVEL_STEPS, levels_orbit, levels_refusal
from synth.synthesis.plan import plan_synthesis
from synth.topology import parse_topology

# (spec, p, a, h, arrangement): maximum size, g = a h + 1
SMALL = [("dragonfly:2,4,2:arrangement=relative", 2, 4, 2, "relative"),
         ("dragonfly:2,4,2:arrangement=circulant", 2, 4, 2, "circulant"),
         ("dragonfly:3,2,2:arrangement=relative", 3, 2, 2, "relative"),  # p > a - 1, p > h: links busier
         ("dragonfly:2,4,3:arrangement=relative", 2, 4, 3, "relative"),
         ("dragonfly:1,3,2:arrangement=circulant", 1, 3, 2, "circulant")]


@pytest.fixture
def orbit_limit(monkeypatch):
    monkeypatch.setattr(limits, "MAX_SYMMETRIC_RANKS", 8)


def _far_group(i: int, k: int, g: int, arrangement: str) -> int:
    if arrangement == "relative":
        return (i + k + 1) % g
    return (i + k // 2 + 1) % g if k % 2 == 0 else (i - k // 2 - 1) % g


def _level_of(src: int, dst: int, p: int, a: int, h: int, arrangement: str) -> str:
    """Which level joins two terminals, from the definition: same router, same group (a local
    link), or routers joined by a global link (router x of group i owns ports x h .. x h + h - 1)."""
    rs, rd = src // p, dst // p
    if rs == rd:
        return "router"
    gs, gd = rs // a, rd // a
    if gs == gd:
        return "group"
    g = a * h + 1
    ports = [k for k in range((rs % a) * h, (rs % a + 1) * h) if _far_group(gs, k, g, arrangement) == gd]
    assert len(ports) == 1, (src, dst)  # the router of gs holding the link to gd must be the sender's
    return "global"


def _plan(spec: str, name: str):
    plan = plan_synthesis(name, parse_topology(spec))
    assert plan.orbit is not None
    return plan


@pytest.mark.parametrize("spec,p,a,h,arrangement", SMALL)
def test_the_levels_deliver_every_block_once_along_their_levels(orbit_limit, spec, p, a, h, arrangement):
    plan = _plan(spec, "allgather")
    orbit, parts = levels_orbit(plan)
    ranks = p * a * (a * h + 1)
    assert orbit.ranks == ranks and len(orbit.representatives) == a
    full = expand(orbit, plan.topology)
    assert verify_orbit(orbit, plan.topology).ok and verify(full).ok
    full = full.explicit()
    counts = np.diff(full.block_ptr)
    step = np.repeat(full.transfer_step(), counts)
    src, dst = np.repeat(full.src, counts), np.repeat(full.dst, counts)
    received = np.zeros((ranks, ranks), dtype=np.int64)
    np.add.at(received, (dst, full.block_ids), 1)
    assert np.array_equal(received, 1 - np.eye(ranks, dtype=np.int64))
    # each step's transfers cross the links of its level (steps without deliveries dropped: p = 1)
    levels = [name for name, per in zip(LEVEL_STEPS, (p - 1, 1, 1, p - 1, 1)) if per]
    assert orbit.steps == len(levels) == parts[0]["steps"]
    for s, level in enumerate(levels):
        joined = {_level_of(int(u), int(v), p, a, h, arrangement) for u, v in zip(src[step == s], dst[step == s])}
        assert joined == {level}, (s, joined)
    # per terminal and step, the blocks it receives: p - 1, (a - 1) p, h a, (p - 1) h a, (a - 1) h a p
    expected = [n for n in ((p - 1), (a - 1) * p, h * a, (p - 1) * h * a, (a - 1) * h * a * p) if n]
    per_step = [np.bincount(dst[step == s], minlength=ranks) for s in range(orbit.steps)]
    assert [int(c.min()) for c in per_step] == [int(c.max()) for c in per_step] == expected


@pytest.mark.parametrize("spec,p,a,h,arrangement", SMALL)
@pytest.mark.parametrize("name", ["allgather", "reduce-scatter", "allreduce"])
def test_both_forms_agree_and_meet_the_bandwidth_term(orbit_limit, spec, p, a, h, arrangement, name):
    plan = _plan(spec, name)
    orbit, parts = levels_orbit(plan)
    full = expand(orbit, plan.topology)
    assert verify_orbit(orbit, plan.topology).ok and verify(full).ok
    on_orbit, expanded = map_orbit(orbit, plan.topology), map_schedule(full, plan.topology, paths=full.paths)
    for term in ("channel_bytes", "port_messages", "transfer_bytes"):
        assert np.allclose(getattr(on_orbit, term), getattr(expanded, term)), term
    halves = 2 if name == "allreduce" else 1
    # one-byte blocks over links of bandwidth 1, per step the busiest of a terminal's link and a local or
    # global link carrying every terminal of a router's share: (steps without deliveries dropped)
    busiest = [n for n in (p - 1, max((a - 1) * p, p * p), max(h * a, p * a), (p - 1) * h * a,
                           max((a - 1) * h * a * p, p * h * a * p)) if n]
    half = busiest if name != "reduce-scatter" and name != "allreduce" else busiest[::-1]
    assert on_orbit.channel_bytes.tolist() == (busiest[::-1] + busiest if name == "allreduce" else half)
    if p <= min(a - 1, h):  # a balanced dragonfly (a = 2p = 2h): the terminals' links alone, P - 1 blocks
        assert on_orbit.channel_bytes.sum() == halves * (orbit.ranks - 1)
        assert [part["rounds"] for part in parts] == [orbit.ranks - 1] * halves
    assert int(on_orbit.port_messages.max()) == max(p - 1, a - 1, h)


def test_orbit_synthesis_keeps_the_levels_where_they_are_cheaper(orbit_limit, tmp_path):
    out = tmp_path / "ag.h5"
    code, stdout, _ = run("synthesize", "allgather", "--network", SMALL[0][0], "--bytes", "1MiB", "--out", out)
    assert code == 0, stdout
    assert "5 steps: 71 rounds (levels:" in stdout and "orbit levels over neighbours" in stdout
    code, stdout, _ = run("verify", out)
    assert code == 0 and "allgather by levels on 72 ranks" in stdout and "4 ranks, one per orbit" in stdout


def test_the_levels_say_where_they_do_not_apply():
    bundled = parse_topology("dragonfly:2,4,2:groups=5:arrangement=relative")
    assert "one global link per pair" in levels_refusal(bundled, np.arange(4) * 2)
    assert "not a dragonfly" in levels_refusal(parse_topology("torus:4,4"), np.zeros(1, dtype=np.int64))
    maximum = parse_topology("dragonfly:2,4,2:arrangement=relative")
    assert levels_refusal(maximum, np.arange(4) * 2) is None
    assert "one per router" in levels_refusal(maximum, np.arange(8))


def test_an_orbit_file_of_several_representatives_is_read_strictly(orbit_limit, tmp_path):
    import h5py

    from helpers import assert_user_error

    out = tmp_path / "rs.h5"
    assert run("synthesize", "reduce-scatter", "--network", SMALL[1][0], "--out", out, "--quiet")[0] == 0
    good = out.read_bytes()
    with h5py.File(out, "r") as f:
        assert f["representatives"][:].tolist() == [0, 2, 4, 6] and len(f["origin"]) == len(f["step"])
    out.write_bytes(good)
    with h5py.File(out, "r+") as f:
        del f["origin"]
    assert_user_error(run("verify", out), "representatives without origin")
    out.write_bytes(good)
    with h5py.File(out, "r+") as f:
        f["representatives"][1] = 3  # not the least rank of its orbit
    code, stdout, _ = run("verify", out)
    assert code == 1 and "representatives are not the least rank" in stdout
    out.write_bytes(good)
    with h5py.File(out, "r+") as f:
        f["origin"][0] = 1  # a block of rank 1, not listed
    code, stdout, _ = run("verify", out)
    assert code == 1 and "not a representative" in stdout


# XGFTs with W_1 = 1 and W_(i+1) = M_i, their sizes powers of two or not (3: Bruck's last step partial)
FAT_TREES = [("xgft:2:4,4:1,4", (4, 4)), ("xgft:3:4,3,2:1,4,3", (4, 3, 2)), ("xgft:2:5,3:1,5", (5, 3))]


@pytest.mark.parametrize("spec,sizes", FAT_TREES)
@pytest.mark.parametrize("name", ["allgather", "reduce-scatter", "allreduce"])
def test_the_digit_bruck_meets_the_bound_on_a_fat_tree(orbit_limit, spec, sizes, name):
    from synth.pricing.bounds import time_bound
    from synth.synthesis.orbit_levels import digits_orbit

    plan = _plan(spec, name)
    orbit, parts = digits_orbit(plan)
    full = expand(orbit, plan.topology)
    assert verify_orbit(orbit, plan.topology).ok and verify(full).ok
    ranks = int(np.prod(sizes))
    steps = sum(int(np.ceil(np.log2(s))) for s in sizes)
    halves = 2 if name == "allreduce" else 1
    assert orbit.steps == halves * steps
    on_orbit, expanded = map_orbit(orbit, plan.topology), map_schedule(full, plan.topology, paths=full.paths)
    for term in ("channel_bytes", "port_messages", "transfer_bytes"):
        assert np.allclose(getattr(on_orbit, term), getattr(expanded, term)), term
    # one message a port a step, every link no busier than a terminal's: P - 1 blocks a half in all
    assert on_orbit.port_messages.tolist() == [1] * orbit.steps
    assert on_orbit.channel_bytes.sum() == halves * (ranks - 1)
    if name != "allreduce":  # at the bound of any schedule: log2 P message starts and the bytes
        bound = time_bound(name, plan.topology.network(), 1, 0, [0]).seconds(1 << 20, 1e-6, 1e11)
        if all(s & (s - 1) == 0 for s in sizes):
            assert on_orbit.time(1e-6, 1e11, -(-(1 << 20) // ranks)) == pytest.approx(bound, rel=1e-3)
    explicit = full.explicit()
    counts = np.diff(explicit.block_ptr)
    received = np.zeros((ranks, explicit.blocks), dtype=np.int64)
    np.add.at(received, (np.repeat(explicit.dst, counts), explicit.block_ids), 1)
    if name == "allgather":
        assert np.array_equal(received, 1 - np.eye(ranks, dtype=np.int64))


def test_the_digit_bruck_takes_the_pairs_of_one_digit(orbit_limit):
    from synth.synthesis.orbit_levels import digits_refusal

    assert "neighbours" in digits_refusal(_plan("torus:4,4", "allgather"))
    assert digits_refusal(_plan("xgft:2:4,4:1,4", "allgather")) is None
    code, stdout, _ = run("synthesize", "allgather", "--network", "xgft:2:4,4:1,4", "--bytes", "1MiB")
    assert code == 0 and "orbit digit Bruck over digits transfers" in stdout
