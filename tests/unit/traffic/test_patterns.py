"""Traffic patterns: the exchanges of [Prisacari20] ch.2 and ch.4, permutations, CSV."""

import numpy as np
import pytest

from helpers import TABLE_2_1
from synth.core.errors import SynthError
from synth.topology import parse_topology
from synth.traffic.patterns import bgh_destinations, ghe_destinations, parse_pattern, xor_destinations

A2A = ["a2a-lin", "a2a-lin:5", "a2a-opt", "a2a-ghe", "a2a-bgh"]
NETWORKS = ["xgft:3:4,2,2:1,4,1", "xgft:3:8,4,2:1,8,2", "xgft:4:8,4,4,2:1,8,4,2",
            "xgft:3:9,9,3:1,9,9", "xgft:3:11,7,5:1,11,7", "xgft:2:3,5:1,3"]


def exchange(pattern, spec):
    xgft = parse_topology(spec)
    workload = parse_pattern(pattern, xgft.num_leaves, xgft.hierarchy())
    _, src, dst, _ = workload.batch(np.arange(workload.num_phases))
    n = xgft.num_leaves
    return workload, src.reshape(n, n), dst.reshape(n, n)


@pytest.mark.parametrize("spec", NETWORKS)
@pytest.mark.parametrize("pattern", A2A)
def test_every_phase_is_a_permutation_and_every_pair_meets_once(pattern, spec):
    workload, src, dst = exchange(pattern, spec)
    n = workload.num_ranks
    assert workload.num_phases == n and workload.is_all_to_all
    for phase in range(n):
        assert sorted(dst[phase]) == list(range(n)), f"phase {phase} is not a permutation"
    pairs = src.ravel() * n + dst.ravel()
    assert np.array_equal(np.sort(pairs), np.arange(n * n)), "some source misses or repeats a destination"


@pytest.mark.parametrize("spec", [s for s in NETWORKS if (parse_topology(s).num_leaves & (parse_topology(s).num_leaves - 1)) == 0])
def test_xor_is_a_valid_exchange(spec):
    workload, src, dst = exchange("a2a-xor", spec)
    n = workload.num_ranks
    assert np.array_equal(np.sort(src.ravel() * n + dst.ravel()), np.arange(n * n))


def test_opt_on_ft_2_4_2_is_the_seeds_intuitive_pattern():
    """Sec. 2.3.2: on FT(2; 4, 2), d = (((s mod 2) + (p mod 2)) mod 2) * 4 + ((s/2) + (p/2)) mod 4."""
    workload = parse_pattern("a2a-opt", 8, (4, 2))
    for p in range(8):
        flows = workload.flows(p)
        expected = [(((s % 2) + (p % 2)) % 2) * 4 + ((s // 2) + (p // 2)) % 4 for s in range(8)]
        assert flows.dst.tolist() == expected


def test_lin_is_a_shift_by_phase_plus_shift():
    workload = parse_pattern("a2a-lin:3", 16, (4, 4))
    assert workload.flows(5).dst.tolist() == [(s + 5 + 3) % 16 for s in range(16)]


@pytest.mark.parametrize("hierarchy", [(1, 4, 4), (2, 3, 4), (1, 8, 4, 2), (3, 5, 7)])
@pytest.mark.parametrize("destinations", [ghe_destinations, bgh_destinations])
def test_exactly_n_l_phases_are_contained_in_layer_l(hierarchy, destinations):
    """Eq. 4.2-4.9: a phase stays inside the layer-l subnetworks for exactly N_l = H_0*...*H_l phases."""
    n = int(np.prod(hierarchy))
    src = np.arange(n)
    for level in range(len(hierarchy)):
        block = int(np.prod(hierarchy[: level + 1]))
        contained = [p for p in range(n) if (destinations(src, np.full(n, p), hierarchy) // block == src // block).all()]
        assert contained == list(range(block)), "the contained phases are the first N_l ones"


def test_contained_counts_for_h_1_4_4():
    """The seed's example hierarchy H = (1, 4, 4): 1, 4 and 16 phases contained in layers 0, 1, 2."""
    n, src = 16, np.arange(16)
    counts = []
    for block in (1, 4, 16):
        counts.append(sum((ghe_destinations(src, np.full(n, p), (1, 4, 4)) // block == src // block).all() for p in range(n)))
    assert counts == [1, 4, 16]


def test_bgh_spreads_phase_4_over_subnetworks():
    """Sec. 4.4.2 example, H = (1, 4, 4), phase 4: sources 0-3 go to subnetworks [1,1,1,1] in GHE
    and [1,2,3,1] in BGH."""
    src = np.arange(4)
    assert (ghe_destinations(src, np.full(4, 4), (1, 4, 4)) // 4).tolist() == [1, 1, 1, 1]
    assert (bgh_destinations(src, np.full(4, 4), (1, 4, 4)) // 4).tolist() == [1, 2, 3, 1]


@pytest.mark.parametrize("levels", [1, 3, 5])
def test_xor_equals_ghe_when_every_level_has_two(levels):
    n = 2 ** levels
    src = np.repeat(np.arange(n), n)
    phase = np.tile(np.arange(n), n)
    assert np.array_equal(xor_destinations(src, phase, n), ghe_destinations(src, phase, (2,) * levels))
    assert np.array_equal(xor_destinations(src, phase, n), ghe_destinations(src, phase, (1,) + (2,) * levels))


def test_single_permutations():
    n = 16
    hier = (4, 4)
    assert parse_pattern("shift:3", n, hier).flows(0).dst.tolist() == [(s + 3) % n for s in range(n)]
    assert parse_pattern("shift:-1", n, hier).flows(0).dst.tolist() == [(s - 1) % n for s in range(n)]
    assert parse_pattern("bitcomp", n, hier).flows(0).dst.tolist() == [n - 1 - s for s in range(n)]
    assert parse_pattern("bitrev", n, hier).flows(0).dst.tolist() == [int(f"{s:04b}"[::-1], 2) for s in range(n)]
    perm = parse_pattern("randperm:7", n, hier).flows(0).dst
    assert sorted(perm.tolist()) == list(range(n))
    assert np.array_equal(perm, parse_pattern("randperm:7", n, hier).flows(0).dst)
    assert not np.array_equal(perm, parse_pattern("randperm:8", n, hier).flows(0).dst)
    uniform = parse_pattern("uniform:1", n, hier).flows(0)
    assert (uniform.dst != uniform.src).all() and ((0 <= uniform.dst) & (uniform.dst < n)).all()
    for name in ("shift:1", "bitcomp", "randperm:2", "uniform:3"):
        workload = parse_pattern(name, n, hier)
        assert workload.num_phases == 1 and len(workload.flows(0)) == n


def test_message_size_applies_to_every_flow():
    workload = parse_pattern("a2a-opt", 16, (4, 4), message_bytes=65536)
    assert set(workload.flows(3).bytes.tolist()) == {65536}


def test_csv_traffic(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("src,dst,bytes,phase\n0,5,100,0\n# a comment\n1,2,200,1\n3,3,50,1\n")
    workload = parse_pattern(f"csv:{path}", 8, (4, 2))
    assert workload.num_phases == 2
    assert workload.flows(0).rows() == [[0, 5, 100]]
    assert workload.flows(1).rows() == [[1, 2, 200], [3, 3, 50]]
    plain = tmp_path / "plain.csv"
    plain.write_text("0,1\n2,3\n")
    assert parse_pattern(f"csv:{plain}", 8, (4, 2), 77).flows(0).rows() == [[0, 1, 77], [2, 3, 77]]


@pytest.mark.parametrize("content, message", [
    ("0,9,1\n", "line 1: dst must be between 0 and 7, got 9"),
    ("0,x,1\n", "line 1: dst must be an integer, got 'x'"),
    ("0,1,2,3,4\n", "expected src,dst"),
    ("0,1,-5\n", "line 1: bytes must be between 0 and"),
    ("src,dst\n", "no flows"),
    (b"\xff\xfe\x00bad", "is not UTF-8 text"),
])
def test_bad_csv(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(SynthError, match=message):
        parse_pattern(f"csv:{path}", 8, (4, 2))


@pytest.mark.parametrize("pattern, message", [
    ("a2a-foo", "unknown traffic pattern"),
    ("a2a-xor", "power-of-two"),
    ("shift", "needs an offset"),
    ("shift:x", "must be an integer"),
    ("csv:/nonexistent/file.csv", "cannot read traffic file"),
    ("a2a-opt:3", "takes no argument"),
])
def test_bad_patterns(pattern, message):
    with pytest.raises(SynthError, match=message):
        parse_pattern(pattern, 12, (4, 3))


def test_phase_out_of_range():
    workload = parse_pattern("a2a-opt", 16, (4, 4))
    with pytest.raises(SynthError, match="phase 16 is not a phase of 'a2a-opt' \\(phases 0..15\\)"):
        workload.flows(16)


def test_table_2_1_sizes_are_powers_of_two():
    for n, spec in TABLE_2_1.items():
        assert parse_topology(spec).num_leaves == n


def test_bitrev_on_a_non_power_of_two_reverses_the_largest_power_of_two_prefix():
    """Prisacari20 ch.6 leaves bit reversal on N = 1056 open; synth's rule: ranks below 2^10 = 1024 reversed
    in 10 bits, ranks 1024..1055 to themselves. A permutation either way."""
    dst = parse_pattern("bitrev", 1056, None).flows(0).dst.tolist()
    assert dst[:1024] == [int(f"{s:010b}"[::-1], 2) for s in range(1024)]
    assert dst[1024:] == list(range(1024, 1056))
    assert sorted(dst) == list(range(1056))


def test_a2a_all_is_every_ordered_pair_once_in_one_phase():
    workload = parse_pattern("a2a-all", 5, None, 77)
    flows = workload.flows(0)
    assert workload.num_phases == 1
    assert sorted(zip(flows.src.tolist(), flows.dst.tolist())) == [(a, b) for a in range(5) for b in range(5) if a != b]
    assert (flows.bytes == 77).all()


def test_a2a_lat_refuses_ranks_that_are_not_the_terminals():
    """It pairs terminals by their routers' links: with Q ranks a terminal (synth synthesize
    alltoall --ranks-per-node 2 priced it) its table was indexed past its terminals."""
    topology = parse_topology("dragonfly:2,4,2")
    with pytest.raises(SynthError, match="one rank a terminal"):
        parse_pattern("a2a-lat", 144, topology.hierarchy(), topology=topology)
