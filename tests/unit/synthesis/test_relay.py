"""Relay trees (synth.synthesis.relay): the direct relays (two steps) and the gathered relays
(three), and the trees method above its balanced trees' size, where they are the synthesized
schedule (Slim Fly q = 13, 3,380 ranks: tests/bench/RESULTS.md).

Checked independently of the synthesis: the groups from the network's own links (a terminal's
router is the node its link enters), every schedule replayed (helpers.delivers), messages per
port and blocks into every rank counted from the transfers, and each step's busiest channel
recounted from the router's path of every transfer, transfer by transfer.
"""

from __future__ import annotations

import numpy as np
import pytest

import synth.synthesis.limits as synthesize_module
from synth.synthesis.plan import plan_synthesis
from synth.synthesis.portfolio import synthesize_parts
from synth.collectives.verify import verify
from synth.core.errors import SynthError
from synth.routing.registry import make_router
from synth.synthesis.relay import rank_groups
from synth.topology import parse_topology
from synth.topology.paths import as_paths
from tests.helpers import delivers


def terminal_router(network) -> np.ndarray:
    """Per terminal, the node its own link enters (terminals are nodes 0..n-1)."""
    n = network.num_terminals
    router = np.full(n, -1)
    for s, d in zip(network.channel_src.tolist(), network.channel_dst.tolist()):
        if s < n:
            router[s] = d
    return router


def busiest_per_step(topology, schedule, reverse: bool) -> list[int]:
    """Per step, the most blocks a channel carries, the transfers routed one by one (node pairs by
    the family's router; a pair within a node crosses no channel)."""
    network = topology.network()
    router = make_router(topology.default_router, topology)
    step = schedule.transfer_step()
    blocks = np.diff(schedule.block_ptr)
    q = schedule.ranks_per_node
    a, b = schedule.src // q, schedule.dst // q
    if reverse:  # a reduce-scatter's partials flow from the later receiver to the sender
        a, b = b, a
    busiest = []
    for s in range(schedule.num_steps):
        mine = np.flatnonzero((step == s) & (a != b))
        zero = np.zeros(len(mine), dtype=np.int64)
        routed = router(topology, a[mine], b[mine], phase=zero, occurrence=zero, seed=0)
        paths = as_paths(topology, a[mine], b[mine], routed.routes)
        load = np.zeros(network.num_channels)
        for k in range(len(mine)):
            load[paths.path(k)] += blocks[mine[k]]
        busiest.append(int(load.max(initial=0)))
    return busiest


def test_groups_are_a_dragonflys_groups_else_the_ranks_of_a_router():
    dragonfly = parse_topology("dragonfly:2,4,2")  # 9 groups of 4 routers of 2 terminals
    assert (rank_groups(dragonfly, 1) == np.arange(72) // 8).all()
    slimfly = parse_topology("slimfly:5")  # 50 routers of 4 terminals, no groups of routers
    router = terminal_router(slimfly.network())
    groups = rank_groups(slimfly, 2)
    assert len(groups) == 400
    assert (groups[0::2] == groups[1::2]).all()  # the two ranks of a node
    same = groups[0::2][:, None] == groups[0::2][None, :]
    assert (same == (router[:, None] == router[None, :])).all()
    assert rank_groups(parse_topology("torus:4,4@fail=random:1:0"), 1) is None  # one rank a router


@pytest.mark.parametrize("collective", ["allgather", "reduce-scatter"])
def test_gathered_relays_start_few_messages_and_every_rank_receives_its_blocks_once(collective):
    """dragonfly (2,4,2), 9 groups of 8: a rank sends to its 7 group-mates, then its group's 8
    blocks to one rank of one other group (8 other groups over 8 ranks: one message each), then
    passes what it got to its 7 group-mates: 7, 1 and 7 messages a port, 71 blocks into every
    rank. The rounds the point claims are the busiest channels recounted transfer by transfer."""
    topology = parse_topology("dragonfly:2,4,2")
    plan = plan_synthesis(collective, topology)
    (part,) = synthesize_parts(plan, 10, methods=("relay",))  # its points alone (another method's may beat them)
    (k,) = [i for i, f in enumerate(part.front) if f.method == "gathered relays"]
    assert part.front[k].steps == 3
    schedule = part.schedule(k)
    assert verify(schedule).ok and delivers(schedule)
    reverse = collective == "reduce-scatter"
    step = schedule.transfer_step()
    blocks = np.diff(schedule.block_ptr)
    order = (0, 1, 2) if not reverse else (2, 1, 0)  # a reduce-scatter runs them backwards
    for s, most, each in zip(order, (7, 1, 7), (1, 8, 1)):
        mine = step == s
        sender = schedule.dst[mine] if reverse else schedule.src[mine]
        assert np.bincount(sender, minlength=72).max() == most
        if s == order[1]:
            assert (blocks[mine] == each).all()  # a group's blocks in one message
    into = np.bincount(schedule.src if reverse else schedule.dst, weights=blocks, minlength=72)
    assert (into == 71).all()
    busiest = busiest_per_step(topology, schedule, reverse)
    assert part.front[k].rounds == sum(busiest)


@pytest.fixture
def relay_only(monkeypatch):
    """The size guards of thousands of ranks made small: the balanced trees' deliveries and the
    every-pair graph, so a 200-rank Slim Fly takes the path a 3,380-rank one takes."""
    monkeypatch.setattr(synthesize_module, "MAX_TREE_DELIVERIES", 1000)
    monkeypatch.setattr(synthesize_module, "MAX_EVERY_PAIRS", 1000)


@pytest.mark.parametrize("collective", ["allgather", "reduce-scatter", "allreduce"])
def test_above_the_balanced_trees_size_the_relays_over_their_own_pairs_are_the_schedule(relay_only, collective):
    import synth

    topology = parse_topology("slimfly:5")
    plan = plan_synthesis(collective, topology)
    assert plan.relay_only and plan.method.startswith("trees: relay trees")
    bands = synth.synthesize(collective, topology, sizes="32B,1MiB,256MiB")
    for band in bands:
        record = band.schedule.synthesis
        assert verify(band.schedule).ok and delivers(band.schedule)
        for entry in record["sizes"]:
            assert entry["seconds"] >= entry["bound_seconds"] > 0
        for part in record["parts"]:
            methods = {f["method"] for f in part["front"]}
            assert methods == {"relay trees", "gathered relays"} or part["method"].startswith("generated: ")
            if not part["method"].startswith("generated: "):
                assert part["transfers"] == "relay"
    # 256 MiB: a relay point, its rounds the busiest channels recounted transfer by transfer
    last = bands[-1].schedule
    assert {p["method"] for p in last.synthesis["parts"]} <= {"relay trees", "gathered relays"}
    if collective != "allreduce":
        (part,) = last.synthesis["parts"]
        assert part["rounds"] == sum(busiest_per_step(topology, last, collective == "reduce-scatter"))


def test_above_the_balanced_trees_size_a_network_without_groups_is_one_line(relay_only):
    with pytest.raises(SynthError, match="relay trees, which need ranks in groups"):
        plan_synthesis("allgather", parse_topology("torus:9,9@fail=random:1:0"))


@pytest.mark.parametrize("seed", range(40))
def test_relays_of_uneven_groups_deliver_every_block_once_from_a_holder(seed):
    """Random group labels (not contiguous, of unequal sizes), 1 to 3 chunks: replayed step by
    step, every block reaches every rank but its source exactly once, from a rank holding it."""
    from synth.synthesis.relay import RelayTrees

    rng = np.random.default_rng(seed)
    p = int(rng.integers(3, 30))
    group = rng.integers(0, int(rng.integers(2, 8)), size=p) * 7
    sources = np.arange(p * int(rng.integers(1, 4))) % p
    for make, steps in ((RelayTrees.direct, 2), (RelayTrees.gathered, 3)):
        trees = make(sources, group)
        if len(np.unique(group)) < 2:
            assert trees is None
            continue
        assert trees.steps == steps
        held = {(b, int(sources[b])): -1 for b in range(len(sources))}
        for s in range(steps):
            mine = np.flatnonzero(trees.step == s)
            for i in mine.tolist():
                b, u, v = int(trees.block[i]), int(trees.sender[i]), int(trees.receiver[i])
                assert held.get((b, u), steps) < s and (b, v) not in held
            for i in mine.tolist():
                held[int(trees.block[i]), int(trees.receiver[i])] = s
        assert len(held) == len(sources) * p


def test_one_group_is_no_group():
    """A one-level fat tree: every terminal on one switch, nothing to relay to."""
    assert rank_groups(parse_topology("xgft:1:8:1"), 1) is None


def test_relay_only_with_two_ranks_a_node_claims_no_step_bound_its_points_do_not_use(relay_only):
    """Q = 2 on the (2,4,2) dragonfly (144 ranks): the relays' pairs are not the plan's neighbour
    transfers, so their steps do not show the plan's step bound reached."""
    import synth

    (band,) = synth.synthesize("allgather", "dragonfly:2,4,2", ranks_per_node=2, sizes="256MiB")
    assert verify(band.schedule).ok and delivers(band.schedule)
    (part,) = band.schedule.synthesis["parts"]
    assert part["method"] in ("relay trees", "gathered relays")
    assert part["least_steps"] is None and part["least_steps_status"] != "optimal"


def test_a_pair_the_graph_lacks_is_one_line_not_a_wrong_index():
    from synth.synthesis.transfers import transfer_graph

    graph = transfer_graph(parse_topology("torus:4,4"), 1, "neighbours")
    assert (graph.pair_index(graph.src[:5], graph.dst[:5]) == np.arange(5)).all()
    with pytest.raises(SynthError, match="transfers lack pairs"):
        graph.pair_index(np.array([0]), np.array([10]))  # two hops apart: not a neighbour pair
