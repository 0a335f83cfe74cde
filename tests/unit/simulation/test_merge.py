"""Merging a step's identical transfers into one SimGrid flow (synth.simulation.merge, issue 43 item 6):
exact where every group of a step has the same size under max-min sharing, so the merged and the
unmerged simulations give the same times; not done where it would not be, and what it would cost
there is shown (a group of two beside a lone transfer on one link)."""

from __future__ import annotations

import numpy as np
import pytest

from synth.app.simulate import SimulationOptions, simulate_schedule
from synth.collectives.algorithms import ALGORITHMS, Request
from synth.collectives.schedule import ScheduleBuilder
from synth.core.errors import SynthError
from synth.simulation import simgrid_module
from synth.simulation.merge import mergeable, plan_merge
from synth.simulation.platform import build_platform
from synth.simulation.runner import run
from synth.topology import parse_topology
from synth.topology.paths import Paths


def _simgrid():
    try:
        simgrid_module.locate("CM02")
    except SynthError as exc:
        pytest.skip(str(exc))


def _rd_b(spec: str, q: int, block_bytes: int):
    topology = parse_topology(spec)
    p = topology.num_terminals * q
    request = Request("allgather", p, p, block_bytes, spec, ranks_per_node=q)
    return ALGORITHMS["rd-b"].generate(request), topology


@pytest.mark.parametrize("model, block_bytes", [("CM02", 1000), ("LV08", 1000), ("SMPI", 70000)])
def test_merged_and_unmerged_simulations_give_the_same_times(model, block_bytes):
    _simgrid()
    schedule, topology = _rd_b("torus:4,4", 4, block_bytes)  # 64 ranks: 4 transfers per node pair from step 2 on
    merged = simulate_schedule(schedule, topology, SimulationOptions(model=model))
    alone = simulate_schedule(schedule, topology, SimulationOptions(model=model, merge=False))
    assert merged.platform["flows"] == schedule.num_transfers // 4 and "flows" not in alone.platform
    np.testing.assert_allclose(merged.simulated, alone.simulated, rtol=1e-9)
    np.testing.assert_allclose(merged.ends, alone.ends, rtol=1e-9)
    assert merged.transfers.tolist() == alone.transfers.tolist() and merged.bytes.tolist() == alone.bytes.tolist()


def test_settings_under_which_a_merge_would_not_be_exact_do_not_merge():
    assert mergeable("CM02", "bsp", 0.0, None)
    assert not mergeable("IB", "bsp", 0.0, None)  # penalties count the flows per host
    assert not mergeable("CM02", "async", 0.0, None)  # a rank's messages are its actor's
    assert not mergeable("CM02", "bsp", 1e-6, None)  # the overhead serializes a rank's messages
    assert not mergeable("CM02", "bsp", 0.0, np.zeros(3))  # a rank copies its own messages
    schedule, topology = _rd_b("torus:4,4", 4, 1000)  # SMPI below its last piece: the factor depends on the size
    simulation = simulate_schedule(schedule, topology, SimulationOptions(model="SMPI")) if _has_simgrid() else None
    assert simulation is None or "flows" not in simulation.platform


def _has_simgrid() -> bool:
    try:
        simgrid_module.locate("CM02")
        return True
    except SynthError:
        return False


def _uneven():
    """One switch of four nodes (xgft:1:4:1), two ranks per node: step 0 sends rank 0 -> 4 and 1 -> 5
    (node 0 -> 2) and 2 -> 4 (node 1 -> 2): all three into node 2 over its one link, a group of two
    beside a lone transfer."""
    sb = ScheduleBuilder("allgather", "by-hand", "xgft:1:4:1", 8, 8, 10_000, ranks_per_node=2)
    sb.add_step([0, 1, 2], [4, 5, 4], [[0], [1], [2]])
    return sb.build(), parse_topology("xgft:1:4:1")


def test_a_step_of_groups_of_different_sizes_is_not_merged_and_what_merging_it_would_cost():
    schedule, topology = _uneven()
    src, dst, q = schedule.src, schedule.dst, schedule.ranks_per_node
    from synth.pricing.schedule_cost import transfer_paths

    paths = transfer_paths(schedule, topology)
    assert plan_merge("CM02", schedule.transfer_step(), src // q, dst // q, schedule.transfer_bytes(), paths) is None
    if not _has_simgrid():
        pytest.skip("SimGrid")
    alone = simulate_schedule(schedule, topology, SimulationOptions(model="CM02"))
    assert "flows" not in alone.platform
    # what merging regardless of sizes would do: the pair as one flow of twice the bytes. The three share the link
    # into node 2: each gets 1/3 and all end at 3 units; merged, the pair's flow and the lone one get 1/2
    # each, so the lone transfer ends at 2 units (a rank that waits for it would go on a third earlier)
    network, step, size = topology.network(), schedule.transfer_step(), schedule.transfer_bytes()
    settings = SimulationOptions(model="CM02").settings()

    def finishes(keep, multiplicity):
        platform, transfers = build_platform(network, src[keep], dst[keep], q, paths.select(keep), step[keep],
                                             size[keep], 1e-6, 0.0, 8e9, multiplicity=multiplicity)
        return run(platform, transfers, np.arange(schedule.ranks) // q, settings).finish

    three = finishes(np.arange(3), None)
    two = finishes(np.array([0, 2]), np.array([2, 1]))
    unit = 10_000 / 1e9  # 10,000 B at 1 GB/s (8 Gb/s)
    np.testing.assert_allclose(three - 1e-6, [3 * unit] * 3, rtol=1e-6)
    np.testing.assert_allclose(two - 1e-6, [3 * unit, 2 * unit], rtol=1e-6)


def test_a_group_whose_paths_differ_is_not_merged():
    row = np.zeros(2, dtype=np.int64)
    node = np.zeros(2, dtype=np.int64)
    paths = Paths(np.array([0, 2, 4]), np.array([1, 2, 1, 3]))
    assert plan_merge("CM02", row, node, node + 1, np.array([5, 5]), paths) is None
    same = Paths(np.array([0, 2, 4]), np.array([1, 2, 1, 2]))
    merge = plan_merge("CM02", row, node, node + 1, np.array([5, 5]), same)
    assert merge.keep.tolist() == [0] and merge.multiplicity.tolist() == [2]
    assert plan_merge("CM02", row, node, node + 1, np.array([5, 6]), same) is None  # different bytes
