"""The allreduce as a reduce then a broadcast over packed spanning trees (synth.synthesis.reduce_broadcast,
the reduce-broadcast-trees method; issue 40, item 4; Sanders09's two trees, Zhao24's ForestColl forests).

Checked independently: every candidate's schedule replayed here (tests.helpers.delivers: each rank ends
with every contribution once) and by synth's verifier, and none below the time bound of any schedule
(its message starts and its busiest bytes both at or above the bound's); the trees walked here (every
rank reaches the root up the reduce tree and is reached down the broadcast tree); a re-rooted tree's
depth its radius; the round trips' channels those of the two directions. Where the trees win: DGX-1's
cube-mesh and two 4-GPU nodes at large sizes (16 trees meet the allreduce cut bound on DGX-1, where
reduce-scatter + allgather moves n / 2 against 7 n / 16), chosen by the portfolio there, verified,
and the same bytes on a rerun."""

from __future__ import annotations

import numpy as np
import pytest

from synth.collectives.verify import verify
from synth.pricing.compare import REFERENCE_BYTES
from synth.synthesis.front import Context
from synth.synthesis.methods import methods
from synth.synthesis.plan import plan_synthesis
from synth.synthesis.portfolio import bands, synthesize_parts
from synth.synthesis.reduce_broadcast import reduce_broadcast_schedule, rerooted, round_trip_graph
from synth.synthesis.transfers import transfer_graph
from synth.topology import parse_topology
from tests.helpers import delivers

DGX1 = "graph:instances/gpu/dgx1-cube-mesh.gml"
TWO_NODES = "graph:instances/gpu/two-nodes-4-gpus.gml"
ALPHA, BANDWIDTH = 1e-6, 100e9


def _method():
    return next(m for m in methods() if m.name == "reduce-broadcast-trees")


def _candidates(spec: str):
    plan = plan_synthesis("allreduce", parse_topology(spec), time_limit=5)
    return plan, _method().points(Context(plan, 5, methods=("reduce-broadcast-trees",)))


def _walks_to(parent: np.ndarray, root: int) -> bool:
    """Every rank reaches `root` along `parent` within P steps (a spanning tree rooted there)."""
    p = len(parent)
    for v in range(p):
        at, hops = v, 0
        while at != root and hops <= p:
            at, hops = int(parent[at]), hops + 1
            if at < 0:
                return False
        if at != root:
            return False
    return True


@pytest.mark.timeout(60)
@pytest.mark.parametrize("spec", ["torus:4,4", "kautz:3,2", DGX1])
def test_every_tree_schedule_delivers_and_none_is_below_the_bound(spec):
    plan, found = _candidates(spec)
    assert found, "the method made no points"
    bound = plan.time_bound
    for candidate in found:
        schedule = candidate.make(REFERENCE_BYTES)
        assert verify(schedule).ok, candidate.label
        if schedule.num_block_sends <= 4096:  # the independent replay is a Python loop over the block sends
            assert delivers(schedule), candidate.label
        mapped = candidate.mapped
        assert mapped.messages >= bound.messages
        assert float(mapped.channel_bytes.sum()) >= bound.bandwidth.per_byte * candidate.blocks * REFERENCE_BYTES \
            * (1 - 1e-9), candidate.label


@pytest.mark.parametrize("spec", ["torus:4,4", DGX1])
def test_the_round_trip_of_a_pair_crosses_both_directions(spec):
    topology = parse_topology(spec)
    graph = transfer_graph(topology, 1, "neighbours")
    trips = round_trip_graph(graph)
    keys = {(int(a), int(b)): k for k, (a, b) in enumerate(zip(graph.src, graph.dst))}
    for k, (a, b) in enumerate(zip(graph.src.tolist(), graph.dst.tolist())):
        there, back = graph.paths.path(k).tolist(), graph.paths.path(keys[b, a]).tolist()
        assert trips.paths.path(k).tolist() == there + back


def test_a_one_way_network_has_no_round_trips():
    graph = transfer_graph(parse_topology("kautz:3,2"), 1, "neighbours")
    assert round_trip_graph(graph) is None


def test_a_path_rerooted_at_its_centre_is_as_deep_as_its_radius():
    p = 9  # the path 0 - 1 - ... - 8, rooted at 0: 8 deep; at its centre 4: 4 deep
    parent = np.array([[-1] + list(range(p - 1))], dtype=np.int64)
    again = rerooted(parent)
    assert again[0, 4] == -1 and _walks_to(again[0], 4)
    from synth.synthesis.tree_packing import tree_depths

    assert int(tree_depths(again).max()) == 4


@pytest.mark.parametrize("spec", ["kautz:3,2", "torus:4,4"])
def test_the_packed_trees_span_from_their_roots(spec):
    from synth.synthesis.methods.reduce_broadcast_trees import packed

    plan = plan_synthesis("allreduce", parse_topology(spec), time_limit=5)
    context = Context(plan, 5)
    for trees in (1, 2, 4):
        up, down, per_byte, _ = packed(context, trees)
        for t in range(trees):
            root = int(np.flatnonzero(up[t] < 0)[0])
            assert int(np.flatnonzero(down[t] < 0)[0]) == root  # the sum is broadcast from where it was reduced
            assert _walks_to(up[t], root) and _walks_to(down[t], root)
        assert per_byte >= plan.time_bound.bandwidth.per_byte * (1 - 1e-9)
        schedule = reduce_broadcast_schedule(plan.topology.spec, 1, up, down, 2, 64)
        assert verify(schedule).ok and delivers(schedule)


def test_sixteen_trees_meet_the_allreduce_cut_bound_on_the_dgx1_cube_mesh():
    from synth.synthesis.methods.reduce_broadcast_trees import packed, tree_counts

    plan = plan_synthesis("allreduce", parse_topology(DGX1), time_limit=5)
    cut = plan.time_bound.bandwidth.per_byte
    assert cut == pytest.approx(7 / 16)  # 2 (N - 1) = 14 vectors through the 8 GPUs' 32 NVLink ports
    assert 16 in tree_counts(cut, 1.0)
    _, _, per_byte, _ = packed(Context(plan, 5), 16)
    assert per_byte == pytest.approx(cut)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("spec, size, gain", [(DGX1, 256 << 20, 0.08), (TWO_NODES, 16 << 20, 0.12),
                                              (TWO_NODES, 256 << 20, 0.18)])
def test_the_trees_are_on_the_front_where_they_beat_reduce_scatter_then_allgather(spec, size, gain):
    plan = plan_synthesis("allreduce", parse_topology(spec), time_limit=5)
    parts = synthesize_parts(plan, 5)
    halves = sum(part.best(size, ALPHA, BANDWIDTH)[1] for part in parts if not part.whole)
    generated = next(part for part in parts if part.pool == "generated").best(size, ALPHA, BANDWIDTH)[1]
    trees = next(part for part in parts if part.pool == "reduce-broadcast").best(size, ALPHA, BANDWIDTH)[1]
    assert trees < (1 - gain) * min(halves, generated)
    (band,) = bands(plan, parts, [size], ALPHA, BANDWIDTH)
    assert [p["by"] for p in band.schedule.synthesis["parts"]] == ["reduce-broadcast-trees"]
    assert band.schedule.synthesis["sizes"][0]["seconds"] == pytest.approx(trees)
    assert verify(band.schedule).ok


@pytest.mark.timeout(60)
def test_a_rerun_writes_the_same_bytes(run, tmp_path):
    outputs = []
    for k in range(2):
        out = tmp_path / f"run{k}.json"
        code, _, err = run("synthesize", "allreduce", "--network", DGX1, "--bytes", "256MiB", "--quiet", "--out", out)
        assert code == 0, err
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    assert b"reduce-broadcast-trees" in outputs[0]


def test_a_method_that_refuses_a_plan_is_skipped_with_its_reason(monkeypatch):
    """The registry's refusal (Method.refusal) is asked before a method runs: past its size limit the
    trees make no point, and the progress says why in one line."""
    import synth.synthesis.methods.reduce_broadcast_trees as trees

    plan = plan_synthesis("allreduce", parse_topology("torus:2,4"), time_limit=5)
    said: list[str] = []
    kept = synthesize_parts(plan, 5, say=said.append, methods=("reduce-broadcast-trees",))
    assert any(part.pool == "reduce-broadcast" and part.front for part in kept)
    monkeypatch.setattr(trees, "MAX_RANKS", 4)
    said.clear()
    refused = synthesize_parts(plan, 5, say=said.append, methods=("reduce-broadcast-trees",))
    assert "allreduce: reduce-broadcast-trees: not above 4 ranks (its packings' work)" in said
    assert not any(part.pool == "reduce-broadcast" for part in refused)
