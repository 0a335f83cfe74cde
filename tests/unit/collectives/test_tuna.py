"""TuNA ([Fan24]) with the digest's numbers: rounds K, blocks moved D, the temporary
buffer B = P - (K + 1), per-round block counts against the closed form n(x, z), distances, the
hierarchical variants (Figure 5's case, the intra-node K_Q of Q = 32), and the pricing of size
exchanges and of transfers within a node, recomputed here per step."""

from __future__ import annotations

from collections import Counter

import dataclasses
import math

import numpy as np
import pytest

from synth.pricing.schedule_cost import SIZE_BYTES, costs, map_schedule
from synth.collectives.algorithms import ALGORITHMS, Request
from synth.collectives.algorithms.tuna import round_offsets, rounds
from synth.collectives.schedule import BlockRuns
from synth.collectives.verify import verify
from synth.topology import parse_topology



def tuna(p: int, r: int, spec: str = "none", sizes=None):
    request = Request("alltoallv" if sizes is not None else "alltoall", p, p * p, 8, spec, 0, (), r, None, 1, sizes)
    return ALGORITHMS["tuna"].generate(request)


def nonzero_digits(i: int, r: int) -> int:
    count = 0
    while i:
        i, digit = divmod(i, r)
        count += digit != 0
    return count


def n_closed_form(p: int, r: int, x: int, z: int) -> int:
    """The digest's count of blocks in round (x, z)."""
    return (p // r ** (x + 1)) * r ** x + min(r ** x, max(0, (p % r ** (x + 1)) - z * r ** x))


@pytest.mark.parametrize("p,r,k,d,b", [(64, 4, 9, 144, 54), (64, 2, 6, 192, 57), (64, 8, 14, 112, 49), (64, 64, 63, 63, 0),
                                       (8, 2, 3, 12, 4), (8, 3, 4, 10, 3), (8, 4, 4, 10, 3), (2048, 2, 11, 11264, None),
                                       (2048, 45, 89, 4005, None), (2048, 46, 89, 4005, None),
                                       (16384, 2, 14, 114688, None), (16384, 128, 254, 32512, None)])
def test_rounds_blocks_and_buffer(p, r, k, d, b):
    assert len(rounds(p, r)) == k
    w = math.ceil(math.log(p, r) - 1e-12)
    assert k == (w - 1) * (r - 1) + (p - 1) // r ** (w - 1)  # the digest's closed form
    counts = [len(round_offsets(p, r, x, z)) for x, z in rounds(p, r)]
    assert sum(counts) == d == sum(nonzero_digits(i, r) for i in range(1, p))
    assert counts == [n_closed_form(p, r, x, z) for x, z in rounds(p, r)]
    if b is not None:
        assert p - (k + 1) == b


def test_p64_radix4_schedule():
    runs = tuna(64, 4)
    assert runs.runs is not None and verify(runs).ok  # generated as runs (synth.collectives.schedule.BlockRuns)
    schedule = runs.explicit()
    assert verify(schedule).ok
    assert schedule.num_steps == 9
    per_step = np.diff(schedule.block_ptr)[schedule.step_ptr[:-1]]
    assert per_step.tolist() == [16] * 9  # 16 blocks in every round's message
    distances = ((schedule.dst - schedule.src) % 64)[schedule.step_ptr[:-1]]
    assert distances.tolist() == [1, 2, 3, 4, 8, 12, 16, 32, 48]
    assert len(schedule.block_ids) == 64 * 144
    assert schedule.size_exchange.tolist() == list(range(9))


def test_radix_extremes():
    """r = 2 is the two-phase non-uniform Bruck (log2 P rounds); r >= P - 1 spread-out (P - 1 single-block rounds)."""
    assert tuna(16, 2).num_steps == 4
    spread = tuna(16, 15).explicit()
    assert spread.num_steps == 15 and set(np.diff(spread.block_ptr).tolist()) == {1}
    assert spread.size_exchange is None  # single-block rounds: no metadata (the authors' code)


def digit(i: int, r: int, x: int) -> int:
    """Base-r digit x of i, by repeated division."""
    for _ in range(x):
        i //= r
    return i % r


def paper_rounds(p: int, r: int) -> list[tuple[int, list[int]]]:
    """Fan24 sec. 3, built here from its definition: round (x, z) for every digit position x of
    offsets 1..P-1 (x outer) and value 1 <= z < r that some offset has at x, carrying, to distance
    z r^x, the blocks whose offset has digit x equal to z. Returns (distance, offsets) per round."""
    out, x = [], 0
    while any(digit(i, r, x) for i in range(1, p)):
        for z in range(1, r):
            offsets = [i for i in range(1, p) if digit(i, r, x) == z]
            if offsets:
                out.append((z * r ** x, offsets))
        x += 1
    return out


@pytest.mark.parametrize("p,r", [(2, 2), (5, 2), (5, 3), (5, 4), (8, 2), (8, 3), (8, 7), (10, 3), (10, 9), (12, 5),
                                 (16, 2), (16, 4), (16, 15), (16, 16), (16, 40), (17, 4), (17, 16), (27, 3), (30, 4),
                                 (30, 29), (64, 8), (100, 2), (100, 10), (100, 99), (257, 16), (257, 256)])
def test_size_exchange_only_before_rounds_of_more_than_one_block(p, r):
    """A round is preceded by an exchange of sizes exactly when every rank sends more than one block
    in it (the authors' implementation of Fan24 sends a single-block round directly, its size known
    from the receive counts). In such a round the one block is the sender's own and goes straight to
    its destination. Checked against the rounds built above from the paper's definition."""
    expected = paper_rounds(p, r)
    schedule = tuna(p, r).explicit()
    assert verify(schedule).ok
    assert schedule.num_steps == len(expected)
    exchanged = [] if schedule.size_exchange is None else schedule.size_exchange.tolist()
    assert exchanged == [k for k, (_, offsets) in enumerate(expected) if len(offsets) > 1]
    counts = np.diff(schedule.block_ptr)
    for k, (distance, offsets) in enumerate(expected):
        span = slice(schedule.step_ptr[k], schedule.step_ptr[k + 1])
        src, dst = schedule.src[span], schedule.dst[span]
        assert sorted(src.tolist()) == list(range(p)) and ((dst - src) % p == distance).all()
        assert (counts[span] == len(offsets)).all()
        if len(offsets) == 1:
            ids = schedule.block_ids[schedule.block_ptr[span.start]:schedule.block_ptr[span.stop]]
            assert (ids == src * p + dst).all()  # block src -> dst, straight from the send buffer
    if r >= p - 1:
        assert schedule.size_exchange is None and len(expected) == p - 1  # spread-out: P - 1 rounds, no metadata
    if r == 2 and p & (p - 1) == 0 and p > 2:
        assert exchanged == list(range(len(expected)))  # Bruck: P / 2 blocks every round


def hierarchical(name, p, q, r=2, batch=1, spec="none"):
    request = Request("alltoall", p, p * p, 8, spec, 0, (), r, batch, q)
    return ALGORITHMS[name].generate(request)


def test_figure5_case():
    """P = 15, N = 3 nodes of Q = 5, r = 2: intra distances 1, 2, 4 with 6, 6, 3 blocks per message;
    inter-node 2 coalesced rounds of 5 blocks, or 10 single-block staggered messages."""
    coalesced = hierarchical("tuna-coalesced", 15, 5)
    staggered = hierarchical("tuna-staggered", 15, 5)
    for schedule in (coalesced, staggered):
        assert verify(schedule).ok
        first = schedule.step_ptr[:3]
        assert ((schedule.dst - schedule.src) % 5)[first].tolist() == [1, 2, 4]
        assert np.diff(schedule.block_ptr)[first].tolist() == [6, 6, 3]
    assert coalesced.num_steps == 3 + 2 and set(np.diff(coalesced.block_ptr)[coalesced.step_ptr[3]:].tolist()) == {5}
    assert staggered.num_steps == 3 + 10 and set(np.diff(staggered.block_ptr)[staggered.step_ptr[3]:].tolist()) == {1}
    assert hierarchical("tuna-coalesced", 15, 5, batch=2).num_steps == 3 + 1
    assert hierarchical("tuna-staggered", 15, 5, batch=4).num_steps == 3 + 3


@pytest.mark.parametrize("p,q,r", [(15, 5, 2), (15, 5, 4), (20, 5, 4), (12, 4, 3), (12, 2, 2), (18, 6, 6), (10, 1, 2),
                                   (24, 8, 7)])
def test_hierarchical_size_exchanges(p, q, r):
    """Every intra-node round's message carries N n_Q(x, z) >= N >= 2 blocks (for every node, the
    blocks of its local round): a size exchange before each, even where n_Q = 1 (the authors' code:
    metadata in every intra-node round); the inter-node messages carry final blocks, whose sizes the
    receivers know: none. Rounds built here from Fan24's definition (paper_rounds)."""
    nodes = p // q
    intra = paper_rounds(q, r) if q > 1 else []
    for name in ("tuna-coalesced", "tuna-staggered"):
        schedule = hierarchical(name, p, q, r)
        assert verify(schedule).ok
        exchanged = [] if schedule.size_exchange is None else schedule.size_exchange.tolist()
        assert exchanged == [k for k, (_, offsets) in enumerate(intra) if nodes * len(offsets) > 1]
        assert exchanged == list(range(len(intra)))
        counts = np.diff(schedule.block_ptr)
        for k, (_, offsets) in enumerate(intra):
            assert (counts[schedule.step_ptr[k]:schedule.step_ptr[k + 1]] == nodes * len(offsets)).all()


def test_intra_node_rounds_of_q32():
    assert [len(rounds(32, r)) for r in range(2, 11)] == [5, 7, 7, 9, 10, 10, 10, 11, 12]


@pytest.mark.parametrize("p,q,r,batch", [(12, 3, 2, 1), (12, 4, 3, 2), (16, 4, 4, 3), (10, 1, 2, 1), (18, 6, 6, 7)])
def test_hierarchical_schedules_verify(p, q, r, batch):
    for name in ("tuna-coalesced", "tuna-staggered"):
        assert verify(hierarchical(name, p, q, r, batch)).ok


def test_size_exchanges_and_memory_transfers_are_priced():
    """Per step: alpha x the most messages one port starts + beta x busiest channel; a size exchange
    before it is a step of the same messages with 8 B per block; transfers within a node use no
    channel and start at their sender's memory port; the dragonfly's terminals have one port each
    (their injection link), shared by the node's q ranks. Recomputed naively."""
    spec = "dragonfly:1,2,1"
    topology = parse_topology(spec)
    network = topology.network()
    q = 2
    p = network.num_terminals * q
    rng = np.random.default_rng(4)
    sizes = rng.integers(0, 5000, p * p)
    schedule = ALGORITHMS["tuna-coalesced"].generate(Request("alltoallv", p, p * p, 8, spec, 0, (), 2, 2, q, sizes))
    assert verify(schedule).ok
    from synth.routing.minimal import minimal

    total, alpha, beta = 0.0, 1e-6, 8 / 100e9
    exchanged = set(schedule.size_exchange.tolist())
    for step in range(schedule.num_steps):
        data, meta = np.zeros(network.num_channels), np.zeros(network.num_channels)
        starts = Counter()
        for t in range(schedule.step_ptr[step], schedule.step_ptr[step + 1]):
            a, b = int(schedule.src[t]) // q, int(schedule.dst[t]) // q
            if a == b:
                starts[("memory", int(schedule.src[t]))] += 1  # within a node
                continue
            starts[("node", a)] += 1
            ids = schedule.block_ids[schedule.block_ptr[t]:schedule.block_ptr[t + 1]]
            for channel in minimal(topology, np.array([a]), np.array([b])).channels:
                data[channel] += sizes[ids].sum()
                meta[channel] += SIZE_BYTES * len(ids)
        busiest_port = max(starts.values(), default=0)
        total += alpha * busiest_port + beta * (data / network.channel_bandwidth).max(initial=0)
        if step in exchanged:
            total += alpha * busiest_port + beta * (meta / network.channel_bandwidth).max(initial=0)
    c = costs(map_schedule(schedule, topology), p)
    assert c.time == pytest.approx(total, rel=1e-12)


# ----- blocks as runs (synth.collectives.schedule.BlockRuns) ----------------------------------------

def _listed_tuna(p: int, r: int) -> list[np.ndarray]:
    """Per round, per rank, the sorted blocks TuNA's rule puts in its message, listed directly
    (the block s -> d with offset o = d - s sits at s + (o mod r^x) before round (x, z))."""
    q = np.arange(p)
    out = []
    for x, z in rounds(p, r):
        o = np.array([v for v in range(1, p) if (v // r ** x) % r == z])
        s = (q[:, None] - (o % r ** x)[None, :]) % p
        out.append(np.sort(s * p + (s + o[None, :]) % p, axis=1))
    return out


@pytest.mark.parametrize("p", [2, 3, 5, 8, 12, 16, 17, 27, 30])
def test_runs_hold_the_listed_blocks(p):
    """Every transfer's runs expand to exactly the blocks of TuNA's rule, for every radix."""
    for r in range(2, p + 2):
        schedule = tuna(p, r)
        assert schedule.runs is not None
        listed = schedule.explicit()
        for step, blocks in enumerate(_listed_tuna(p, r)):
            for q in range(p):
                t = step * p + q
                got = np.sort(listed.block_ids[listed.block_ptr[t]:listed.block_ptr[t + 1]])
                assert got.tolist() == blocks[q].tolist(), (p, r, step, q)
        assert len(schedule.runs.count) <= 2 * len(schedule.src) * max(1, r)  # runs, not one per block


def test_runs_are_verified_priced_and_written_as_their_lists(tmp_path, monkeypatch):
    """The replay of runs (in groups of blocks when they are many: forced here) gives the verdict and
    message of the replay of the listed blocks; broken runs are caught; bytes and the file are the
    listed schedule's."""
    import synth.collectives.verify as verify_module
    from synth.io.schedule_file import read_schedule, write_schedule

    p = 12
    sizes = np.random.default_rng(5).integers(0, 1000, p * p, dtype=np.uint16)
    runs = tuna(p, 3, spec="torus:3,4", sizes=sizes)  # (a schedule file names a network holding its ranks)
    listed = runs.explicit()
    assert (runs.transfer_bytes() == listed.transfer_bytes()).all()
    assert (runs.block_counts() == np.diff(listed.block_ptr)).all() and runs.num_block_sends == len(listed.block_ids)
    rng = np.random.default_rng(1)
    verdicts = set()
    for group_blocks in (1 << 18, 7):
        monkeypatch.setattr(verify_module, "GROUP_BLOCKS", group_blocks)
        assert verify(runs).ok
        for _ in range(60):
            r = runs.runs
            first, stride, count = r.first.copy(), r.stride.copy(), r.count.copy()
            k = int(rng.integers(len(first)))
            change = int(rng.integers(3))
            if change == 0:
                first[k] = rng.integers(p * p)
                count[k] = 1
            elif change == 1 and count[k] > 1:
                count[k] -= 1
            else:
                stride[k] = -stride[k] if count[k] > 1 else stride[k]
                first[k] = first[k] if count[k] == 1 else first[k] - stride[k] * (count[k] - 1)  # the same blocks
            broken = dataclasses.replace(runs, runs=BlockRuns(r.ptr, first, stride, count))
            a, b = verify(broken), verify(broken.explicit())
            assert a.ok == b.ok
            if not a.ok and "run of" not in a.violation and "twice" not in a.violation:
                assert a.violation == b.violation
            verdicts.add(a.ok)
    assert verdicts == {True, False}  # both verdicts happened
    path = tmp_path / "t.json"
    with open(path, "w") as handle:
        write_schedule(handle, runs)
    back = read_schedule(str(path))
    assert back.runs is None and (back.block_ids == listed.block_ids).all() and (back.block_bytes == sizes).all()


def test_loads_in_groups_of_steps_equal_one_matrix(monkeypatch):
    """Pricing takes the steps in groups whose (step, channel) matrix fits DENSE_LOADS cells: tiny
    groups give the very numbers of one matrix (TuNA with its size exchanges, on a torus)."""
    import synth.pricing.schedule_cost as cost

    topology = parse_topology("torus:4,4")
    sizes = np.random.default_rng(2).integers(0, 100, 256, dtype=np.uint16)
    schedule = tuna(16, 3, "torus:4,4", sizes)
    whole = map_schedule(schedule, topology)
    monkeypatch.setattr(cost, "DENSE_LOADS", 7)  # one step a group
    grouped = map_schedule(schedule, topology)
    for field in ("channel_bytes", "flows", "size_bytes", "transfer_bytes", "hops"):
        assert np.array_equal(getattr(whole, field), getattr(grouped, field)), field
    assert whole.channel_bytes.max() > 0 and whole.size_bytes.max() > 0


def test_runs_out_of_range_by_overflow_and_transfers_without_runs():
    """Found by review: a run whose last block wraps around 2^63 back into range is out of range
    (not a segmentation fault); a transfer without runs moves no block (counts, bytes, lists)."""
    runs = tuna(2, 2)  # alltoall on 2 ranks: 4 blocks, one transfer per rank
    r = runs.runs
    wrapped = dataclasses.replace(runs, runs=BlockRuns(r.ptr, np.array([1, 2]), np.array([1 << 62, 1]),
                                                       np.array([5, 1])))
    assert "not all blocks (0..3)" in verify(wrapped).violation
    empty = dataclasses.replace(runs, runs=BlockRuns(np.array([0, 1, 1]), r.first[:1], r.stride[:1], r.count[:1]))
    assert empty.block_counts().tolist() == [1, 0] and empty.transfer_bytes().tolist() == [8, 0]
    assert empty.explicit().block_ptr.tolist() == [0, 1, 1] and empty.runs.blocks_of(1).tolist() == []
    assert not verify(empty).ok  # block 3 (1 -> 0) never arrives


def test_runs_that_repeat_blocks_are_found_without_listing_them():
    """Issue 41: a run of 2^40 blocks with stride 0, or runs that together list far more blocks than there are,
    repeat a block; verify says so in a moment, allocating at most B + 1 blocks (not 8 TiB)."""
    runs = tuna(2, 2)  # 4 blocks, one transfer per rank
    r = runs.runs
    huge = dataclasses.replace(runs, runs=BlockRuns(r.ptr, np.array([1, 2]), np.array([0, 1]),
                                                    np.array([1 << 40, 1])))
    assert "sends block 1 twice in one transfer" in verify(huge).violation
    overlapping = dataclasses.replace(runs, runs=BlockRuns(np.array([0, 2, 3]), np.array([3, 0, 2]),
                                                           np.array([-1, 1, 1]), np.array([4, 4, 1])))
    assert "twice in one transfer" in verify(overlapping).violation
