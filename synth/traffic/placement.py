"""Placements: which terminal runs each task of a workload (`--placement`, Prisacari20 ch.5-6).

- `contiguous` (default): task i on terminal i (Prisacari20 ch.6: with terminals numbered group, router,
  terminal, consecutive tasks share routers and groups);
- `random:SEED`: the tasks on a seeded random choice of distinct terminals;
- `cartesian:G1xG2x...`: for a stencil's task grid beta, every group of the network holds one
  G1 x G2 x ... block of tasks (Prisacari20 sec. 5.3.4.1; G_k divides B_k); blocks go to groups in
  order (dimension 1 least significant), and a block's tasks to its group's first terminals
  in the same order. Groups are the network's top-level subnetworks: prod(hierarchy[:-1])
  terminals each (a dragonfly group's p a terminals).
"""

from __future__ import annotations

from math import prod
from typing import Sequence

import numpy as np

from synth.core.errors import SynthError
from synth.core.validate import parse_int, show
from synth.traffic.stencil import parse_grid

PLACEMENTS = ("contiguous", "random:SEED", "cartesian:G1xG2x...")


def placement_map(text: str, tasks: int, terminals: int, hierarchy: Sequence[int] | None,
                  task_grid: tuple[int, ...] | None) -> np.ndarray | None:
    """The terminal of every task, or None for the contiguous placement."""
    if tasks > terminals:
        raise SynthError(f"the workload has {tasks} tasks, the network {terminals} terminals")
    kind, _, argument = text.partition(":")
    if kind == "contiguous" and not argument:
        return None
    if kind == "random":
        seed = parse_int(argument, f"--placement {show(text)}: the seed", 0)
        return np.random.default_rng(seed).permutation(terminals)[:tasks].astype(np.int64)
    if kind == "cartesian":
        return _cartesian(text, parse_grid(argument, f"--placement {show(text)}"), terminals, hierarchy, task_grid)
    raise SynthError(f"unknown placement {show(text)} (known: {', '.join(PLACEMENTS)})")


def _cartesian(text: str, block: tuple[int, ...], terminals: int, hierarchy, task_grid) -> np.ndarray:
    if task_grid is None:
        raise SynthError(f"--placement {show(text)} places the task grid of a stencil pattern; this pattern has none")
    if len(block) != len(task_grid) or any(b % g for b, g in zip(task_grid, block)):
        raise SynthError(f"--placement {show(text)}: the block must have one size per task grid dimension "
                         f"({'x'.join(map(str, task_grid))}), each dividing it")
    if hierarchy is None or len(hierarchy) < 2:
        raise SynthError(f"--placement {show(text)} needs a network made of groups (a hierarchy, e.g. a dragonfly)")
    group_size, groups = prod(hierarchy[:-1]), hierarchy[-1]
    blocks = tuple(b // g for b, g in zip(task_grid, block))
    if prod(block) > group_size or prod(blocks) > groups:
        raise SynthError(f"--placement {show(text)}: {prod(blocks)} blocks of {prod(block)} tasks do not fit "
                         f"{groups} groups of {group_size} terminals")
    tasks = np.arange(prod(task_grid), dtype=np.int64)
    coordinates = [(tasks // prod(task_grid[:k])) % task_grid[k] for k in range(len(task_grid))]
    block_id = sum((c // g) * prod(blocks[:k]) for k, (c, g) in enumerate(zip(coordinates, block)))
    local = sum((c % g) * prod(block[:k]) for k, (c, g) in enumerate(zip(coordinates, block)))
    return block_id * group_size + local
