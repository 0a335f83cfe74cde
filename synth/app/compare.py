"""`synth compare --simulate` and the reports' collectives sections with `--simulate`: every
algorithm of a comparison (synth.pricing.compare) replayed on SimGrid at every message size, next to
the alpha-beta times, and where the two rank the algorithms differently
(Comparison.ranking_differences).

One worker process simulates every candidate at every size (synth.app.simulate.simulate_sizes):
bulk-synchronously (a step starts when the previous one has ended everywhere, as the model assumes),
each replay alone on the idle network, a transfer's bytes its blocks times the candidate's block
size at that message size (the message over its blocks, rounded up; an alltoallv's matrix in
proportion: Candidate.scale, as Candidate.time scales the schedule made with blocks of
REFERENCE_BYTES; its transfers are scaled alike). TuNA's size exchanges
(8 bytes per block before a step, Candidate.time prices them) are replayed as a schedule of their
own at 8 bytes per block, their time added. The synthesized schedule (--synthesize) is not
simulated: its column is left empty.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from synth.app.simulate import SimulationOptions, simulate_sizes
from synth.collectives.schedule import BlockRuns
from synth.pricing.alphabeta import FREE, NodeCosts
from synth.pricing.compare import REFERENCE_BYTES, Candidate, Comparison, Simulated
from synth.pricing.schedule_cost import SIZE_BYTES
from synth.simulation import simgrid_module

PROGRESS_TRANSFERS = 200_000  # transfers replayed (over all sizes) from which the worker's progress is shown


def require_simgrid(model: str) -> None:
    """One line (SynthError) when SimGrid's Python module for `model` is missing: checked before any
    schedule is made."""
    simgrid_module.locate(model)


def simulate_comparison(comparison: Comparison, topology, model: str, alpha: float, bandwidth_bits: float,
                        say=lambda text: None, node: NodeCosts = FREE) -> Comparison:
    """`comparison` with its candidates' simulated times (Comparison.simulated) under SimGrid's
    network `model`, the route latency alpha and links of `bandwidth_bits` per bandwidth unit, and
    the node's internal link and copy cost (`node`)."""
    options = SimulationOptions(model=model, discipline="bsp", alpha=alpha, bandwidth_bits=bandwidth_bits, node=node)
    require_simgrid(model)
    columns = [j for j, c in enumerate(comparison.candidates) if isinstance(c, Candidate) and c.make is not None]
    notes = tuple(f"{c.label} (its schedule changes with the size)" for j, c in enumerate(comparison.candidates)
                  if j not in columns)
    schedules, scales, owner, copying = [], [], [], []
    for j in columns:
        candidate = comparison.candidates[j]
        schedule = candidate.make(REFERENCE_BYTES)  # the blocks' number is what counts: the bytes are the scales
        schedules.append(schedule)
        scales.append([candidate.scale(n) for n in comparison.sizes])
        owner.append(j)
        copying.append(True)
        if schedule.size_exchange is not None:
            schedules.append(size_exchanges(schedule))
            scales.append([SIZE_BYTES / REFERENCE_BYTES] * len(comparison.sizes))
            owner.append(j)
            copying.append(False)  # a size exchange's counts are not copied
    times = np.full((len(comparison.sizes), len(comparison.candidates)), np.nan)
    if schedules:
        replayed = sum(s.num_transfers for s in schedules) * len(comparison.sizes)
        large = replayed >= PROGRESS_TRANSFERS
        if large:
            say(f"collective {comparison.collective}: simulating {len(columns)} algorithms at {len(comparison.sizes)} "
                f"sizes on SimGrid ({model}), {replayed:,} transfers")
        simulated = simulate_sizes(schedules, scales, topology, options, router=comparison.router,
                                   progress=say if large else None, copying=copying)
        summed = np.zeros((len(comparison.sizes), len(comparison.candidates)))
        np.add.at(summed.T, np.asarray(owner), simulated)
        times[:, columns] = summed[:, columns]
    return dataclasses.replace(comparison, simulated=Simulated(model, times, notes))


def size_exchanges(schedule):
    """A schedule's size exchanges as a schedule of their own: the transfers of every step preceded by
    one, in their steps (the others left empty, so every transfer is routed in its own phase as
    before), each of as many blocks of REFERENCE_BYTES as it announces (their ids are not what is
    replayed)."""
    step = schedule.transfer_step()
    keep = np.flatnonzero(np.isin(step, schedule.size_exchange))
    counts = schedule.block_counts()[keep].astype(np.int64)
    step_ptr = np.concatenate([[0], np.cumsum(np.bincount(step[keep], minlength=schedule.num_steps))]).astype(np.int64)
    runs = BlockRuns(np.arange(len(keep) + 1, dtype=np.int64), np.zeros(len(keep), dtype=np.int64),
                     np.ones(len(keep), dtype=np.int64), counts)
    paths = schedule.paths
    if paths is not None:  # the recorded paths of the transfers kept (those between nodes)
        q = schedule.ranks_per_node
        across = (schedule.src // q) != (schedule.dst // q)
        paths = paths.select((np.cumsum(across) - 1)[keep][across[keep]])
    # blocks of REFERENCE_BYTES, as the scale (SIZE_BYTES / REFERENCE_BYTES) takes them: an alltoallv's own sizes
    # would price its announcements as its blocks' bytes
    announced = np.full(max(1, int(counts.max(initial=0))), REFERENCE_BYTES, dtype=np.int64)
    return dataclasses.replace(schedule, step_ptr=step_ptr, src=schedule.src[keep], dst=schedule.dst[keep],
                               op=schedule.op[keep], block_ptr=None, block_ids=None, runs=runs, size_exchange=None,
                               paths=paths, blocks=len(announced), block_bytes=announced)
