"""synth run's per-rank plans (synth.run.plan) without MPI: every rank's plan replayed in one process,
messages handed from sender to receiver in the order both post them, and the promised blocks
compared with what the collective must give, computed here from the definition (a copy's block
value, a reduction's sum over every rank); plus the layout rules the executor relies on."""

import numpy as np
import pytest

from synth.collectives.schedule import COPY, collective
from synth.run.data import Input
from synth.run.plan import block_elements, plan_rank, promised_blocks, starting_blocks


def _replay(schedule, data):
    """Every rank's buffer after the schedule, moved as the executor moves it (numpy, no MPI)."""
    p = schedule.ranks
    plans = [plan_rank(schedule, r, data.elements) for r in range(p)]
    reduction = collective(schedule.collective).reduction
    buffers = []
    for r, plan in enumerate(plans):
        buffer = np.full(plan.elements, np.nan)
        held = starting_blocks(schedule, r)
        if len(held):
            starts, lengths = plan.block_range(held)
            values, k = data.values(held, r if reduction else None).astype(np.float64), 0
            for s, n in zip(starts, lengths):
                buffer[s:s + n] = values[k:k + n]
                k += n
        buffers.append(buffer)
    for step in range(schedule.num_steps):
        outbox = {}  # (sender, receiver) -> payloads in the sender's order
        for r, plan in enumerate(plans):
            for m in plan.steps[step][0]:
                payload = np.concatenate([buffers[r][s:s + n] for s, n in zip(m.starts, m.lengths)]) \
                    if len(m.starts) else np.zeros(0)
                outbox.setdefault((r, m.peer), []).append(payload)
        for want in (True, False):  # copies first
            for r, plan in enumerate(plans):
                taken = {}
                for m in plan.steps[step][1]:
                    i = taken.get(m.peer, 0)
                    taken[m.peer] = i + 1
                    payload = outbox[(m.peer, r)][i]
                    assert len(payload) == m.elements  # both sides agree on the message's size
                    if (m.op == COPY) != want:
                        continue
                    k = 0
                    for s, n in zip(m.starts, m.lengths):
                        if m.op == COPY:
                            buffers[r][s:s + n] = payload[k:k + n]
                        else:
                            buffers[r][s:s + n] += payload[k:k + n]
                        k += n
    return plans, buffers


def _expected(schedule, data, blocks):
    if collective(schedule.collective).reduction:
        return sum(data.values(blocks, r).astype(np.float64) for r in range(schedule.ranks))
    return data.values(blocks, None).astype(np.float64)


CASES = [("allreduce", "ring", "torus:2,4", {}), ("allreduce", "swing-b", "torus:4,4", {}),
         ("allreduce", "rabenseifner", "xgft:2:4,4:1,4", {}), ("reduce-scatter", "ring", "hyperx:2,3", {}),
         ("allgather", "bruck", "kautz:3", {}), ("broadcast", "binomial", "dragonfly:1,2,1", {"root": 4}),
         ("reduce", "multitree", "2dfc:3,3", {"root": 2}), ("scatter", "binomial", "torus:2,4", {"root": 1}),
         ("gather", "kautz-c", "kautz:2", {"root": 3}), ("alltoall", "bruck", "torus:4,4", {}),
         ("alltoall", "md", "2dfc:3,4", {}), ("alltoallv", "tuna", "torus:2,4", {"radix": 3, "sizes": "random:50:2"}),
         ("p2p", "kautz-mp", "kautz:3", {"root": 2, "peer": 7}), ("allreduce", "kautz-m", "kautz:3", {})]


@pytest.mark.parametrize("name, algorithm, spec, extra", CASES)
def test_the_plans_deliver_the_collective(name, algorithm, spec, extra):
    from synth.app.schedule import make_schedule, plan_schedule
    from synth.topology import parse_topology

    schedule = make_schedule(plan_schedule(name, algorithm, parse_topology(spec), message_bytes=3000, **extra))
    for itemsize, size in ((4, None), (8, 1 << 14)):
        elements = block_elements(schedule, itemsize, size)
        data = Input(schedule, elements, "float64" if itemsize == 8 else "float32", "dyadic", 1)
        plans, buffers = _replay(schedule, data)
        for r, plan in enumerate(plans):
            promised = promised_blocks(schedule, r)
            assert np.array_equal(plan.gather(buffers[r], promised), _expected(schedule, data, promised)), (r, size)


def test_block_elements_scale_in_proportion_and_round_up():
    from synth.app.schedule import make_schedule, plan_schedule
    from synth.topology import parse_topology

    s = make_schedule(plan_schedule("allgather", "ring", parse_topology("torus:2,2"), message_bytes=4096))
    assert block_elements(s, 4, None).tolist() == [256] * 4
    assert block_elements(s, 4, 1000).tolist() == [63] * 4  # 250 B a block: 62.5 elements, rounded up
    assert block_elements(s, 8, 1 << 20).tolist() == [32768] * 4


def test_contiguous_messages_are_one_run_and_pieces_join():
    from synth.run.plan import _runs

    starts, lengths = _runs(np.array([0, 4, 8, 20, 25]), np.array([4, 4, 2, 5, 1]))
    assert starts.tolist() == [0, 20] and lengths.tolist() == [10, 6]
    starts, lengths = _runs(np.array([7]), np.array([3]))
    assert starts.tolist() == [7] and lengths.tolist() == [3]
