"""The terminal's lines of a synthesis (`synth synthesize`): the network and transfers, the plan's
method, the bounds, every part's front with what each point may claim (synth.synthesis.claims),
and per size the time, the bound, the gap and the status."""

from __future__ import annotations

from synth.core.text import counted
from synth.core.sizes import size_text
from synth.synthesis.claims import point_claim, short, steps_claim
from synth.synthesis.transfers import DIGITS, LANES, REACHES


def header_lines(topology, plan) -> list[str]:
    graph, bound = plan.graph, plan.time_bound
    return [f"network   {topology.label()}: {graph.ranks} ranks; transfers: {graph.reach} "
            f"({counted(plan.exchange.num_pairs if plan.exchange is not None else graph.num_pairs, 'rank pair')}, "
            f"routed by {graph.router})",
            f"method    {plan.method}",
            f"bounds    steps >= {plan.step_bound.steps} with {graph.reach} transfers ({plan.step_bound.why}; points "
            f"over every pair and generated ones may take fewer); any schedule: >= {bound.messages} x alpha, "
            f">= {bound.bandwidth.per_byte:.4g} B over bandwidth per byte ({bound.bandwidth.why})"]


def part_line(plan, part) -> str:
    def claim(k: int) -> str:
        return short(*point_claim(plan, part, k))

    graph = plan.graph
    if plan.exchange is not None:
        unit = "B" if plan.sizes is not None else "blocks"
        front = "; ".join(f"{counted(f.steps, 'step')}: busiest {f.rounds:g} {unit} ({f.method}"
                          + (f" along {f.graph.router}'s paths" if f.graph is not None else "") + f", {claim(k)})"
                          for k, f in enumerate(part.front))
        return f"front     {part.collective}: {front}"
    if part.whole:  # the generated algorithms or another pool of whole schedules, priced along the same paths
        front = "; ".join(f"{f.method.removeprefix('generated: ')} {counted(f.steps, 'step')}, {f.rounds:g} "
                          f"rounds ({claim(k)})" for k, f in enumerate(part.front))
        if part.pool == "generated":
            return f"generated {part.collective} along {graph.router}'s paths: {front}"
        return f"front     {part.collective} by {part.pool}: {front}"
    swept = len({f.chunks for f in part.front}) > 1  # a front over several chunk counts (--chunks A..B)
    front = "; ".join(f"{counted(f.steps, 'step')}: " + (counted(f.rounds, "round") if f.rounds is not None
                                                          else "none")
                      + (f" of {counted(f.chunks, 'chunk')}" if swept else "") + f" ({f.method}, {claim(k)})"
                      for k, f in enumerate(part.front))
    one = (f"{part.one_round} ({steps_claim(plan, part.one_round_status, rounds=True)})" if part.one_round is not None
           else "not on the front")
    least = (f"{part.least_steps} ({steps_claim(plan, part.least_status)})" if part.least_steps is not None
             else "not reached by a point over them")
    return (f"front     {part.collective}: least steps with {graph.reach} transfers {least}, of one round each {one}; "
            f"{front}")


def orbit_part_line(part: dict) -> str:
    """An orbit synthesis' half: its trees' steps and rounds (the whole schedule's, counted on the orbit)."""
    several = part.get("representatives", 1)
    whose = "rank 0" if several == 1 else f"{several} ranks, one per orbit"
    how = part.get("how", "balanced breadth-first trees, loads counted per channel orbit")
    return (f"front     {part['collective']}: {counted(part['steps'], 'step')}: {counted(part['rounds'], 'round')} "
            f"({how}; the blocks of {whose}; feasible)")


def size_lines(schedule) -> list[str]:
    record = schedule.synthesis
    named = REACHES + (DIGITS, LANES)
    how = " then ".join(part["method"] + (f" over {part['transfers']} transfers" if part["transfers"] in named else "")
                        for part in record["parts"])
    proofs = "; ".join(f"{part['collective']}: {part['proof']}" if len(record["parts"]) > 1 else part["proof"]
                       for part in record["parts"] if part.get("proof") and part["status"] != "optimal")
    lines = []
    for entry in record["sizes"]:
        status = entry["status"]
        gap = entry["gap"] * 100
        said = ("optimal: at the time bound of any schedule" if status == "optimal" else
                f"{status}: {gap:.1f}% above the time bound of any schedule" if gap >= 0.05 else
                f"{status}: {gap:.2g}% above the time bound of any schedule")
        lines.append(f"size      {size_text(entry['bytes'])}: {counted(schedule.num_steps, 'step')}, "
                     f"{entry['seconds'] * 1e6:.4g} us, bound {entry['bound_seconds'] * 1e6:.4g} us, gap "
                     f"{entry['gap'] * 100:.1f}%; {how}: {said}" + (f" ({proofs})" if proofs else ""))
    return lines


def query_line(plan, steps: int, rounds: int, found) -> str:
    asked = f"{counted(steps, 'step')}, at most {counted(rounds, 'round')}, {counted(plan.chunks, 'chunk')}"
    least = "" if found.rounds is None else (f"; least rounds found {found.rounds}"
                                             + (" (proven)" if found.solver_status == "optimal" else ""))
    return f"query     {asked}: {found.status} among {found.scope}{least}"
