"""The node-internal link and the copy cost on SimGrid (synth.simulation, issue 40 item 5): a node's
memory link takes the intra-node bandwidth and latency, a transfer within a node its bytes, and a
receiver copies a combined copy message after it arrived; with CM02, one message a port and no link
shared in a step, the bulk-synchronous simulation is the cost model step by step."""

from __future__ import annotations

import numpy as np
import pytest

from synth.app.simulate import SimulationOptions, simulate_schedule
from synth.collectives.schedule import COPY, REDUCE, ScheduleBuilder
from synth.core.errors import SynthError
from synth.pricing.alphabeta import NodeCosts
from synth.pricing.schedule_cost import map_schedule, transfer_paths
from synth.simulation import simgrid_module
from synth.simulation.platform import MEMORY_BANDWIDTH, build_platform
from synth.topology import parse_topology


def _simgrid():
    try:
        simgrid_module.locate("CM02")
    except SynthError as exc:
        pytest.skip(str(exc))


def _by_hand():
    """Two nodes of two ranks (hyperx:2), blocks of 100 B: step 0, rank 0 -> 1 blocks 0, 1 (within node
    0, combined: copied), 2 -> 3 block 2 (within node 1), 1 -> 2 block 1 (across); step 1, rank 3 reduces
    blocks 0, 1 into rank 0 and rank 0 copies blocks 2, 3 to rank 2 (across, opposite ways)."""
    sb = ScheduleBuilder("allgather", "by-hand", "hyperx:2", 4, 4, 100, ranks_per_node=2)
    sb.add_step([0, 2, 1], [1, 3, 2], [[0, 1], [2], [1]])
    sb.add_step([3, 0], [0, 2], [[0, 1], [2, 3]], np.array([REDUCE, COPY], dtype=np.int8))
    return sb.build()


NODE = NodeCosts(intra_bandwidth_bits=4e9, copy_cost=1e-9)  # an internal link of 0.5 GB/s, 1 ns a byte copied


def test_the_memory_link_takes_the_intra_node_bandwidth_and_latency():
    schedule, topology = _by_hand(), parse_topology("hyperx:2")
    network = topology.network()
    paths = transfer_paths(schedule, topology)
    args = (network, schedule.src, schedule.dst, 2, paths, schedule.transfer_step(), schedule.transfer_bytes(), 1e-6,
            0.0, 8e9)
    plain, moved = build_platform(*args)
    memory = slice(network.num_channels, None)
    assert (plain.link_bandwidth[memory] == MEMORY_BANDWIDTH).all() and (plain.link_latency[memory] == 1e-6).all()
    assert moved.bytes.tolist() == [1, 1, 100, 200, 200]  # within a node: a message of no bytes (one)
    platform, transfers = build_platform(*args, intra_latency=2e-7, intra_bandwidth_bits=4e9)
    assert (platform.link_bandwidth[memory] == 0.5e9).all() and (platform.link_latency[memory] == 2e-7).all()
    assert transfers.bytes.tolist() == [200, 100, 100, 200, 200]
    assert (platform.link_bandwidth[:network.num_channels] == plain.link_bandwidth[:network.num_channels]).all()


@pytest.mark.timeout(60)
def test_bulk_synchronous_cm02_is_the_model_step_by_step():
    """Step 0: 1 us + max(100 B at 1 GB/s, 200 B at 0.5 GB/s) + 200 B copied by rank 1 = 1.6 us; step 1:
    1 us + 200 B at 1 GB/s + 200 B copied by rank 2 (the reduce into rank 0 copies nothing) = 1.4 us."""
    _simgrid()
    schedule, topology = _by_hand(), parse_topology("hyperx:2")
    options = SimulationOptions(model="CM02", discipline="bsp", bandwidth_bits=8e9, node=NODE)
    simulation = simulate_schedule(schedule, topology, options)
    assert simulation.model == pytest.approx([1.6e-6, 1.4e-6], rel=1e-12)
    assert simulation.simulated == pytest.approx(simulation.model, rel=1e-9)
    mapped = map_schedule(schedule, topology)
    assert simulation.model_total == pytest.approx(mapped.time(1e-6, 8e9, node=NODE), rel=1e-12)
    plain = simulate_schedule(schedule, topology, SimulationOptions(model="CM02", bandwidth_bits=8e9))
    assert plain.simulated == pytest.approx([1.1e-6, 1.2e-6], rel=1e-6)  # a copy within a node: its latency alone


@pytest.mark.timeout(60)
def test_an_asynchronous_rank_copies_before_it_is_done():
    """With one actor per rank a receiver copies what it took (rank 1 takes its combined message of
    step 0 at the end, 1.4 us, and copies 200 B: the row ends 0.2 us later than without a copy cost)."""
    _simgrid()
    schedule, topology = _by_hand(), parse_topology("hyperx:2")
    ends = []
    for node in (NodeCosts(intra_bandwidth_bits=4e9), NODE):
        options = SimulationOptions(model="CM02", discipline="async", bandwidth_bits=8e9, node=node)
        ends.append(simulate_schedule(schedule, topology, options).ends)
    assert ends[0][0] == pytest.approx(1.4e-6, rel=1e-9)
    assert ends[1][0] - ends[0][0] == pytest.approx(2e-7, rel=1e-6)
