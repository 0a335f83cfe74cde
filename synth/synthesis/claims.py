"""What a synthesized schedule may claim, in the one status vocabulary of routes and schedules:

- `optimal`: the achieved cost equals a proven lower bound of the whole problem at that size (the
  time bound of any schedule the verifier accepts under the cost model, synth.pricing.bounds);
  a front point is optimal only where it meets both that bound's message starts and its bytes, so
  at every size;
- `proven`: a proof relative to something, said with it: the least rounds for its step count
  among schedules whose rank pairs take their one path each (the step program's proof), or rounds
  at the cut bound of any schedule (bandwidth alone, its message starts above their bound);
- `feasible`: a valid schedule above the bound, nothing proven; also where the method's model is
  coarser than the network (parallel channels between two nodes: each pair's transfer takes one of
  them, so a schedule splitting it may take fewer rounds), with why;
- `timeout` / `infeasible`: the program ran out of time with nothing proven / proved no schedule.
"""

from __future__ import annotations

import numpy as np

from synth.pricing.alphabeta import FREE, NodeCosts
from synth.pricing.compare import REFERENCE_BYTES

OPTIMAL, PROVEN, FEASIBLE, TIMEOUT = "optimal", "proven", "feasible", "timeout"
TOLERANCE = 1e-9  # a time or a load that meets its bound is the bound (the same terms summed in another order)


def parallel_channels(network) -> str:
    """Why a model of one channel per rank pair's transfer is coarser than the network ('' where no
    two channels join the same two nodes)."""
    keys = network.channel_src.astype(np.int64) * network.num_nodes + network.channel_dst
    unique, counts = np.unique(keys, return_counts=True)
    doubled = int((counts > 1).sum())
    if not doubled:
        return ""
    return (f"parallel channels join {doubled} node pair(s) and a rank pair's transfer takes one of them, so a "
            "schedule splitting it may take fewer rounds: not proven")


def meets_time_bound(plan, mapped, blocks: int) -> bool:
    """A schedule (priced at REFERENCE_BYTES per block) whose message starts and busiest bytes both
    meet the time bound of any schedule of the plan's collective: optimal at every size (but for
    blocks rounded up to whole bytes)."""
    bound = plan.time_bound
    return (mapped.messages <= bound.messages and float(mapped.channel_bytes.sum())
            <= bound.bandwidth.per_byte * blocks * REFERENCE_BYTES * (1 + TOLERANCE))


def point_claim(plan, part, k: int) -> tuple[str, str]:
    """(status, proof) of front point k of `part`: what it may claim and, for `proven` and a
    coarse model's `feasible`, relative to what."""
    point, mapped = part.front[k], part.priced[k] if k < len(part.priced) else None
    if point.rounds is None:
        return point.status, "no schedule found in the time given" if point.status == TIMEOUT else ""
    if plan.exchange is not None:  # an all-to-all's busiest load against the least of its kind
        if point.status != OPTIMAL:
            return point.status, ""
        if point.among == "any schedule" and mapped is not None and mapped.messages <= plan.time_bound.messages:
            return OPTIMAL, "at the time bound of any schedule (message starts and bytes)"
        return PROVEN, f"busiest load the least among {point.among}"
    whole_problem = part.whole or part.collective == plan.collective
    if mapped is not None and whole_problem and meets_time_bound(plan, mapped, part.blocks_of(k)):
        return OPTIMAL, "at the time bound of any schedule (message starts and bytes)"
    if mapped is not None and part.per_byte is not None and float(mapped.channel_bytes.sum()) <= \
            part.per_byte * part.blocks_of(k) * REFERENCE_BYTES * (1 + TOLERANCE):
        return PROVEN, "rounds at the cut bound of any schedule"
    if part.rounds_bound and not point.blocks and point.chunks in (0, plan.chunks) and \
            point.rounds <= part.rounds_bound:
        return PROVEN, "rounds at the cut bound rounded up to whole blocks (of schedules that do not split them)"
    if point.status != OPTIMAL:
        if point.invariant_status == OPTIMAL:
            return FEASIBLE, (f"least rounds for {point.steps} steps among translation-invariant schedules, proven; "
                              "not among all")
        return point.status, ""
    if part.whole:  # a whole point's own status is about the time bound, checked above
        return FEASIBLE, ""
    coarse = parallel_channels(plan.topology.network())
    if coarse:
        return FEASIBLE, coarse
    graph = point.graph or plan.graph
    return PROVEN, (f"least rounds for {point.steps} steps, proven, among schedules over {graph.reach} transfers, "
                    f"each rank pair on its {graph.router} path")


def steps_claim(plan, status: str, rounds: bool = False) -> str:
    """The least steps with the plan's transfers (`proven` where the program reached the step bound),
    or (`rounds`) the least steps of one round each, which rest on the program's rounds: feasible
    where its model is coarser than the network."""
    if status != OPTIMAL:
        return status
    return FEASIBLE if rounds and parallel_channels(plan.topology.network()) else PROVEN


def size_status(seconds: float, bound: float, points_status: list[str]) -> str:
    """A size's status: optimal where its time meets the bound of any schedule, else timeout where a
    chosen point's program ran out of time, else feasible."""
    if seconds <= bound * (1 + TOLERANCE):
        return OPTIMAL
    return TIMEOUT if TIMEOUT in points_status else FEASIBLE


def short(status: str, proof: str) -> str:
    """How a front line shows a point's claim."""
    if status == PROVEN and proof.startswith("least rounds"):
        return "least rounds for its steps, proven"
    if status == PROVEN:
        return "at the cut bound"
    return status


def at_least(seconds: float, bound: float) -> float:
    """A time that meets its bound is the bound: the two are the same terms summed in another order,
    and may differ in the last bits; a time below the bound by more is a bug, and stays visible."""
    return bound if bound * (1 - 1e-9) <= seconds < bound else seconds


def size_entry(plan, size: int, seconds: float, point_statuses: list[str], alpha: float, bandwidth_bits: float,
               node: NodeCosts = FREE) -> dict:
    """A record's entry of one message size: the time (at its bound where it meets it), the bound of
    any schedule, the gap and the size's status (synth.synthesis.claims.size_status)."""
    bound = plan.time_bound.seconds(size, alpha, bandwidth_bits, node)
    seconds = at_least(seconds, bound)
    return {"bytes": size, "seconds": seconds, "bound_seconds": bound,
            "gap": (seconds - bound) / bound if bound > 0 else 0.0,
            "status": size_status(seconds, bound, point_statuses)}


def bounds_record(plan, alpha: float, bandwidth_bits: float, node: NodeCosts = FREE) -> dict:
    """A record's bounds of any schedule and the cost model it was priced with."""
    return {"bounds": {"steps": plan.step_bound.steps, "steps_why": plan.step_bound.why,
                       "messages": plan.time_bound.messages,
                       "busiest_bytes_per_byte": plan.time_bound.bandwidth.per_byte,
                       "bandwidth_why": plan.time_bound.bandwidth.why},
            "cost_model": {"alpha": alpha, "bandwidth_bits": bandwidth_bits, **node.record()}}
