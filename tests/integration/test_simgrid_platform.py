"""The SimGrid platform against SimGrid's own model (issue 25): one transfer takes latency +
size / bandwidth with the documented factors of the chosen model, flows on one link share it, a
route crosses exactly synth's channels, and the two disciplines order transfers as defined.

Formulas (SimGrid 3.32's documentation of its network models, "Flow-level models"):
- CM02: a lone flow takes L + S / B (no correction factors).
- LV08 (SimGrid's default): latency x 13.01, bandwidth x 0.97: 13.01 L + S / (0.97 B).
- IB: SMPI's piecewise factors (smpi/lat-factor, smpi/bw-factor defaults) for messages of at least
  65,472 bytes: 11.6436 L + S / (0.940694 B); its InfiniBand penalties apply between concurrent
  flows at a node only.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from synth.collectives.schedule import ScheduleBuilder
from synth.simulation.platform import build_platform
from synth.simulation.runner import Settings, pack, run
from synth.topology import parse_topology
from synth.topology.paths import Paths

LATENCY = 1e-6
LINK = 100e9 / 8  # bytes/s of a link of bandwidth 1 at 100 Gb/s


def star(leaves: int):
    """An XGFT of one level: `leaves` terminals on one switch; channel t leaves terminal t, channel
    leaves + t enters it (checked)."""
    network = parse_topology(f"xgft:1:{leaves}:1").network()
    assert (network.channel_src[:leaves] == np.arange(leaves)).all()
    assert (network.channel_dst[leaves:] == np.arange(leaves)).all()
    return network


def star_paths(leaves: int, src, dst) -> Paths:
    channels = np.stack([np.asarray(src), leaves + np.asarray(dst)], axis=1).ravel()
    return Paths(np.arange(0, 2 * len(src) + 1, 2, dtype=np.int64), channels.astype(np.int64))


def simulate_star(leaves, src, dst, size, step=None, model="CM02", discipline="bsp", overhead=0.0):
    network = star(leaves)
    src, dst = np.asarray(src), np.asarray(dst)
    step = np.zeros(len(src), dtype=np.int64) if step is None else np.asarray(step)
    platform, transfers = build_platform(network, src, dst, 1, star_paths(leaves, src, dst), step,
                                         np.broadcast_to(np.asarray(size), src.shape), LATENCY, 0.0, 100e9)
    return run(platform, transfers, np.arange(leaves), Settings(model=model, discipline=discipline, overhead=overhead))


@pytest.mark.parametrize("size", [1_000_000, 10_000_000, 123_456_789])
@pytest.mark.parametrize("model, formula", [
    ("CM02", lambda s: LATENCY + s / LINK),
    ("LV08", lambda s: 13.01 * LATENCY + s / (0.97 * LINK)),
    ("IB", lambda s: 11.6436 * LATENCY + s / (0.940694 * LINK)),
])
def test_one_transfer_takes_the_models_latency_and_bandwidth(model, formula, size):
    times = simulate_star(2, [0], [1], size, model=model)
    assert times.finish[0] == pytest.approx(formula(size), rel=1e-9)
    assert times.start[0] == 0.0


def test_two_flows_on_one_link_share_it_and_disjoint_flows_do_not():
    size = 10_000_000
    shared = simulate_star(3, [0, 1], [2, 2], size)  # both enter terminal 2 over the switch's one channel
    assert shared.finish == pytest.approx([LATENCY + 2 * size / LINK] * 2, rel=1e-9)
    apart = simulate_star(4, [0, 1], [2, 3], size)
    assert apart.finish == pytest.approx([LATENCY + size / LINK] * 2, rel=1e-9)
    # max-min: a flow alone on its links after the other ends gets the whole link back
    uneven = simulate_star(3, [0, 1], [2, 2], [size, 3 * size])
    assert uneven.finish == pytest.approx([LATENCY + 2 * size / LINK, LATENCY + 4 * size / LINK], rel=1e-9)


def _walks(network, src, dst, paths: Paths) -> None:
    """Every path leaves its source, enters its destination and joins channel to channel (checked
    on the network's own channel arrays, not through synth's routers)."""
    for i, (a, b) in enumerate(zip(src.tolist(), dst.tolist())):
        hops = paths.channels[paths.offsets[i]:paths.offsets[i + 1]]
        assert network.channel_src[hops[0]] == a and network.channel_dst[hops[-1]] == b
        assert (network.channel_dst[hops[:-1]] == network.channel_src[hops[1:]]).all()


ROUTE_QUERY = """
import json, sys
import numpy as np
from synth.simulation.worker import build
with np.load(sys.argv[1]) as archive:
    data = {k: archive[k] for k in archive.files}
api, hosts = build(data)
out = []
for a, b in zip(data["route_src"].tolist(), data["route_dst"].tolist()):
    links, latency = hosts[a].route_to(hosts[b])
    out.append([[int(link.name[1:]) for link in links], latency])
print(json.dumps(out))
"""


@pytest.mark.parametrize("spec, router", [("torus:4,4", "dor"), ("dragonfly:2,4,2", "minimal-random"),
                                          ("xgft:2:4,4:1,4", "random")])
def test_every_route_crosses_exactly_synths_channels(spec, router, tmp_path):
    from synth.routing.registry import make_router
    from synth.topology.paths import as_paths

    topology = parse_topology(spec)
    network = topology.network()
    n = network.num_terminals
    rng = np.random.default_rng(7)
    src = rng.integers(0, n, 60)
    dst = (src + rng.integers(1, n, 60)) % n
    step = np.repeat(np.arange(6), 10)
    routed = make_router(router, topology)(topology, src, dst, phase=step, occurrence=np.zeros(60, dtype=np.int64), seed=3)
    paths = as_paths(topology, src, dst, routed.routes)
    _walks(network, src, dst, paths)
    platform, transfers = build_platform(network, src, dst, 1, paths, step, np.full(60, 1000), LATENCY, 2e-7, 100e9)
    np.savez(tmp_path / "in.npz", **pack(platform, transfers, np.arange(n), Settings(model="CM02")))
    found = json.loads(subprocess.run([sys.executable, "-c", ROUTE_QUERY, str(tmp_path / "in.npz")], capture_output=True,
                                      text=True, check=True).stdout)
    assert len(found) == len(platform.route_src)
    by_host = {(a, b): links for (links, _), a, b in zip(found, platform.route_src.tolist(), platform.route_dst.tolist())}
    for i in range(60):  # every transfer's route, from its sending host: its own path, channel by channel
        links = by_host[(int(transfers.src_host[i]), int(transfers.dst_host[i]))]
        assert links == paths.channels[paths.offsets[i]:paths.offsets[i + 1]].tolist()
    for (links, latency) in found:  # latency on the channel leaving the terminal, hop latency between routers
        inner = sum(1 for c in links if network.channel_src[c] >= n and network.channel_dst[c] >= n)
        assert latency == pytest.approx(LATENCY + inner * 2e-7, rel=1e-12)


def test_different_paths_between_one_pair_get_hosts_of_their_own():
    network = parse_topology("torus:3,3").network()
    n = network.num_terminals
    # terminal 0 to terminal 4 two ways (x then y, y then x), found on the channel arrays
    def hop(a, b):
        return int(np.flatnonzero((network.channel_src == a) & (network.channel_dst == b))[0])
    router = lambda t: int(network.channel_dst[np.flatnonzero(network.channel_src == t)[0]])  # noqa: E731
    r = [router(t) for t in range(n)]
    one = [hop(0, r[0]), hop(r[0], r[1]), hop(r[1], r[4]), hop(r[4], 4)]
    two = [hop(0, r[0]), hop(r[0], r[3]), hop(r[3], r[4]), hop(r[4], 4)]
    paths = Paths(np.array([0, 4, 8, 12]), np.array(one + two + one))
    platform, transfers = build_platform(network, np.array([0, 0, 0]), np.array([4, 4, 4]), 1, paths, np.array([0, 1, 2]),
                                         np.array([10, 10, 10]), LATENCY, 0.0, 100e9)
    assert transfers.src_host.tolist() == [0, n, 0] and platform.hosts == 2 * n
    routes = {(a, b): platform.route_links[platform.route_ptr[i]:platform.route_ptr[i + 1]].tolist()
              for i, (a, b) in enumerate(zip(platform.route_src.tolist(), platform.route_dst.tolist()))}
    assert routes == {(0, 4): one, (n, 4): two}


@pytest.mark.parametrize("discipline", ["bsp", "async"])
def test_copies_within_a_node_cross_its_memory_link_alone_and_together(discipline):
    network = star(2)
    # ranks 0..3 on terminal 0 and 4..7 on terminal 1 (Q = 4): a transfer across, then three copies within node 0
    src, dst = np.array([0, 0, 1, 2]), np.array([4, 1, 2, 3])
    platform, transfers = build_platform(network, src, dst, 4, star_paths(2, [0], [1]), np.zeros(4, dtype=np.int64),
                                         np.array([10_000_000] * 4), LATENCY, 0.0, 100e9)
    assert platform.hosts == 2  # a copy goes from its node's host to itself
    times = run(platform, transfers, np.array([0, 0, 0, 0, 1, 1, 1, 1]), Settings(model="CM02", discipline=discipline))
    assert times.finish[0] == pytest.approx(LATENCY + 10_000_000 / LINK, rel=1e-9)
    # the copies: the latency alone (one byte over the memory link), at once, whatever their order
    assert times.start[1:].tolist() == [0.0, 0.0, 0.0]
    assert times.finish[1:] == pytest.approx([LATENCY] * 3, rel=1e-5)  # three bytes at 1 TB/s: 3 ps


def test_a_schedule_with_ranks_sharing_nodes_simulates_at_its_alpha_beta_time_under_cm02():
    """TuNA-coalesced with 4 ranks a node: steps of copies alone cost the model's alpha."""
    from synth.app.schedule import make_schedule, plan_schedule
    from synth.app.simulate import SimulationOptions, simulate_schedule

    topology = parse_topology("torus:4,4")
    plan = plan_schedule("alltoall", "tuna-coalesced", topology, message_bytes=1 << 16, radix=2, ranks_per_node=4)
    schedule = make_schedule(plan)
    simulation = simulate_schedule(schedule, topology, SimulationOptions(model="CM02"))
    copies_only = [i for i, label in enumerate(simulation.labels) if simulation.bytes[i] == 0 and simulation.transfers[i]]
    # 64 one-byte copies share each node's memory link: 4 ps on the latency
    assert copies_only and simulation.simulated[copies_only] == pytest.approx(simulation.model[copies_only], rel=1e-5)
    # the steps across: four ranks of a node start a message each on its one link, which the model charges four
    # alphas (one port, one message at a time) and SimGrid one latency: 3 us less
    across = [i for i in range(len(simulation.labels)) if simulation.bytes[i]]
    assert simulation.simulated[across] == pytest.approx(simulation.model[across] - 3e-6, rel=1e-9)
    # asynchronous ranks with copies (no crash: a copy goes from the node's host to itself); running ahead is not
    # always faster: here steps that overlap share links, 52.0 us against 50.5 us
    free = simulate_schedule(schedule, topology, SimulationOptions(model="CM02", discipline="async"))
    assert free.simulated_total == pytest.approx(51.976976e-6, rel=1e-6)


def test_ranks_that_send_along_several_paths_receive_wherever_they_are():
    """Asynchronous ranks move to a path's host to send along it; messages to them meanwhile still arrive
    (the router here routes every step anew, so pairs take several paths)."""
    from synth.app.schedule import make_schedule, plan_schedule
    from synth.app.simulate import SimulationOptions, simulate_schedule

    topology = parse_topology("torus:4,4")
    schedule = make_schedule(plan_schedule("allgather", "ring", topology, message_bytes=1 << 16, router="valiant"))
    bsp = simulate_schedule(schedule, topology, SimulationOptions(model="CM02"), router="valiant")
    free = simulate_schedule(schedule, topology, SimulationOptions(model="CM02", discipline="async"), router="valiant")
    assert bsp.platform["hosts"] > 16  # several paths between some pairs
    assert 0 < free.simulated_total <= bsp.simulated_total * (1 + 1e-9)


def test_bulk_synchronous_steps_wait_for_each_other_and_asynchronous_ranks_do_not():
    size = 10_000_000
    one, three = LATENCY + size / LINK, LATENCY + 3 * size / LINK
    # step 0: 0 -> 1 (size) and 2 -> 3 (3 x size); step 1: 1 -> 2 (after its step-0 message) and 4 -> 0 (after nothing);
    # all four on links of their own
    src, dst, sizes, step = [0, 2, 1, 4], [1, 3, 2, 0], [size, 3 * size, size, size], [0, 0, 1, 1]
    bsp = simulate_star(5, src, dst, sizes, step)
    assert bsp.finish[:2] == pytest.approx([one, three], rel=1e-9)
    assert bsp.start[2:] == pytest.approx([three, three], rel=1e-9)
    assert bsp.finish[2:] == pytest.approx([three + one, three + one], rel=1e-9)
    free = simulate_star(5, src, dst, sizes, step, discipline="async")
    assert free.start[3] == 0.0 and free.finish[3] == pytest.approx(one, rel=1e-9)  # rank 4 received nothing first
    assert free.start[2] == pytest.approx(one, rel=1e-9)  # rank 1 sends once its step-0 message is in
    assert free.finish[2] == pytest.approx(2 * one, rel=1e-9)
    assert max(free.finish) == pytest.approx(three, rel=1e-9)
    assert max(free.finish) < max(bsp.finish)


def test_asynchronous_messages_of_one_rank_share_its_link():
    """A rank that runs ahead sends its steps' messages together: they share its one link."""
    size = 10_000_000
    free = simulate_star(3, [0, 0], [1, 2], size, [0, 1], discipline="async")
    assert free.start.tolist() == [0.0, 0.0]
    assert free.finish == pytest.approx([LATENCY + 2 * size / LINK] * 2, rel=1e-9)


def test_the_overhead_delays_a_ranks_messages_one_after_another():
    o = 5e-6
    times = simulate_star(4, [0, 0, 0], [1, 2, 3], 1_000_000, overhead=o)
    assert sorted(times.start.tolist()) == pytest.approx([o, 2 * o, 3 * o], rel=1e-9)
    asynchronous = simulate_star(4, [0, 0, 0], [1, 2, 3], 1_000_000, overhead=o, discipline="async")
    assert sorted(asynchronous.start.tolist()) == pytest.approx([o, 2 * o, 3 * o], rel=1e-9)


def test_replays_of_runs_are_independent_of_each_other():
    """Runs (compare --simulate) replay on the idle network: each takes what it takes alone."""
    network = star(3)
    src, dst = np.array([0, 1, 0]), np.array([2, 2, 1])
    step = np.array([0, 0, 1])  # run 0: step 0 (two flows into 2); run 1: step 1
    platform, transfers = build_platform(network, src, dst, 1, star_paths(3, src, dst), step, np.array([1, 1, 1]),
                                         LATENCY, 0.0, 100e9)
    times = run(platform, transfers, np.arange(3), Settings(model="CM02"),
                runs=(np.array([0, 1, 2]), np.array([[1e6, 2e6], [1e6, 3e6]])))
    assert times.run_times.ravel() == pytest.approx([LATENCY + 2e6 / LINK, LATENCY + 4e6 / LINK,
                                                     LATENCY + 1e6 / LINK, LATENCY + 3e6 / LINK], rel=1e-9)


def test_a_schedule_without_contention_simulates_at_its_alpha_beta_time_under_cm02():
    """Swing-B on a torus: every step's transfers on distinct links, one message per port: the
    bulk-synchronous simulation is the alpha-beta model, step by step (CM02, latency alpha)."""
    from synth.app.schedule import make_schedule, plan_schedule
    from synth.app.simulate import SimulationOptions, simulate_schedule

    topology = parse_topology("torus:4,4")
    plan = plan_schedule("allreduce", "swing-b", topology, message_bytes=1 << 24)
    schedule = make_schedule(plan)
    simulation = simulate_schedule(schedule, topology, SimulationOptions(model="CM02"))
    assert simulation.simulated == pytest.approx(simulation.model, rel=1e-9)
    assert simulation.simulated_total == pytest.approx(simulation.model_total, rel=1e-9)


def test_a_hand_made_schedule_replays_its_steps_in_order():
    builder = ScheduleBuilder("allgather", "hand", "xgft:1:2:1", 2, 2, 1_000_000)
    builder.add_step([0], [1], [np.array([0])])
    builder.add_step([1], [0], [np.array([1])])
    schedule = builder.build()
    from synth.app.simulate import SimulationOptions, simulate_schedule

    simulation = simulate_schedule(schedule, parse_topology("xgft:1:2:1"), SimulationOptions(model="CM02"))
    one = LATENCY + 1_000_000 / LINK
    assert simulation.ends == pytest.approx([one, 2 * one], rel=1e-9)
    assert simulation.labels == ["step 0", "step 1"]
