"""Per-layer synthesis (synth.synthesis.layers): the dynamic program against every order and
choice of layer algorithms, the stage costs' additivity counted from the schedule's transfers, and
every layered point replayed (allgather, reduce-scatter, an allreduce's halves; Q ranks a node as
a layer)."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from synth.app.synthesize import plan_synthesis, synthesize_parts
from synth.collectives.verify import verify
from synth.pricing.compare import REFERENCE_BYTES
from synth.synthesis.layers import LAYER_ALGORITHMS, layer_steps, pareto_program
from synth.topology import parse_topology
from tests.helpers import delivers


@pytest.mark.parametrize("sizes, seed", [((2, 3, 4), 1), ((4, 4), 2), ((3, 2, 2, 2), 3), ((5, 7), 4)])
def test_the_program_finds_the_least_time_of_every_order_and_algorithm_choice(sizes, seed):
    """Stage costs drawn at random per (layer, algorithm); every order of the layers and every
    choice of algorithm per layer priced here by its definition (alpha terms add up; a stage's beta
    terms times the product of the layers before it), and the least time at sizes from tiny to
    huge equals the least over the program's Pareto front."""
    rng = random.Random(seed)
    table = {}

    def cost(stage):
        return table.setdefault((stage.layer, stage.algorithm), (rng.randint(1, 30), rng.uniform(0.1, 40.0)))

    front = pareto_program(sizes, cost)
    usable = {layer: [a for a in LAYER_ALGORITHMS if layer_steps(a, sizes[layer]) is not None]
              for layer in range(len(sizes))}
    every = []
    for order in itertools.permutations(range(len(sizes))):
        for algorithms in itertools.product(*(usable[layer] for layer in order)):
            alphas, betas, scale = 0.0, 0.0, 1
            for layer, algorithm in zip(order, algorithms):
                a, b = table[layer, algorithm]
                alphas, betas, scale = alphas + a, betas + b * scale, scale * sizes[layer]
            every.append((alphas, betas))
    for weight in (0.0, 1e-4, 1e-2, 1.0, 1e2, 1e4, 1e8):
        least = min(a + weight * b for a, b in every)
        assert math.isclose(min(c.alphas + weight * c.betas for c in front), least, rel_tol=1e-12)
    assert all(x.alphas < y.alphas and x.betas > y.betas for x, y in zip(front, front[1:]))  # a Pareto front


def test_a_layered_allgather_is_priced_as_its_stages_add_up_counted_from_its_transfers():
    """dragonfly (2,4,2), layers of 2 terminals, 4 routers, 9 groups, each by straight sends: per
    step a rank sends 1, 3 and 8 messages, and receives 1, 3 x 2 and 8 x 8 blocks (what it holds
    doubles, then quadruples); the terminal links are the busiest, 71 rounds in all."""
    plan = plan_synthesis("allgather", parse_topology("dragonfly:2,4,2"))
    (part,) = synthesize_parts(plan, 10, generated=())
    (k,) = [i for i, f in enumerate(part.front) if f.method == "layers 2 by straight then 4 by straight then 9 by straight"]
    schedule = part.schedule(k)
    assert verify(schedule).ok and delivers(schedule)
    step, blocks = schedule.transfer_step(), np.diff(schedule.block_ptr)
    sent = [np.bincount(schedule.src[step == s], minlength=72).max() for s in range(3)]
    received = [np.bincount(schedule.dst[step == s], weights=blocks[step == s], minlength=72).max() for s in range(3)]
    assert sent == [1, 3, 8] and received == [1, 6, 64]
    mapped = part.priced[k]
    assert mapped.port_messages.tolist() == [1, 3, 8]
    assert (mapped.channel_bytes / REFERENCE_BYTES).tolist() == [1, 6, 64]
    assert part.front[k].rounds == 71 and part.front[k].status == "optimal"


@pytest.mark.parametrize("collective, spec, q", [("allgather", "torus:3,4", 2), ("reduce-scatter", "torus:3,4", 2),
                                                 ("reduce-scatter", "dragonfly:2,4,2", 1), ("allreduce", "hyperx:2,3", 1)])
def test_every_layered_point_delivers_its_collective(collective, spec, q):
    plan = plan_synthesis(collective, parse_topology(spec), ranks_per_node=q, time_limit=5)
    parts = synthesize_parts(plan, 5, generated=())
    layered = [(part, k) for part in parts for k, f in enumerate(part.front) if f.method.startswith("layers")]
    assert layered
    for part, k in layered:
        schedule = part.schedule(k)
        assert verify(schedule).ok and delivers(schedule), part.front[k].method
        assert part.front[k].steps == schedule.num_steps
