"""An all-to-all(v) by phases (synth.synthesis.exchange): every block in one phase along the paths
the plan chose for all pairs at once, or forwarding along them or the family's (TuNA's radix-r
rounds, Bruck's index algorithm where every size is known), and the generated algorithms; the
points no other beats in both message starts and busiest bytes, each optimal where its busiest load
meets the least of its kind (a schedule of whole blocks each on one path, or any schedule)."""

from __future__ import annotations

import dataclasses
import functools

from synth.collectives.schedule import Schedule
from synth.pricing.compare import REFERENCE_BYTES
from synth.pricing.schedule_cost import map_schedule
from synth.synthesis.exact import FrontPoint
from synth.pricing.bounds import EXCHANGES, exchange_message_bytes, node_demand
from synth.synthesis.exchange import MAX_RADICES, SCALE_RADICES, exchange_schedule, pareto, radices
from synth.synthesis.front import Part
from synth.synthesis.methods import WHOLE, Method
from synth.synthesis.transfers import pairs_graph, transfer_paths


def _points(context) -> Part:
    """The front of an all-to-all(v): one phase, TuNA's radices and the generated algorithms, each
    along the plan's pair paths and the family's; the points no other beats in both alpha terms and
    busiest bytes."""
    from synth.collectives.algorithms import ALGORITHMS

    plan, say = context.plan, context.say
    ranks_per_node = plan.graph.ranks_per_node
    forests = plan.exchange.forests  # at scale every schedule along the forests, no path listed
    graphs = [plan.graph]
    if forests is None and plan.routes is None and plan.graph.router != plan.topology.default_router:
        # the family's paths too: forwarding steps may prefer them (not where a routes file gives the fabric's)
        a, b, _ = node_demand(plan.topology.network(), ranks_per_node, None)
        graphs.append(pairs_graph(plan.topology, ranks_per_node, "all", (a, b), plan.topology.default_router))
    found = []
    unit = 1.0 if plan.sizes is not None else float(REFERENCE_BYTES)  # loads in bytes (alltoallv) or blocks
    forwarding = "tuna" if plan.sizes is not None else "radix-r bruck"  # TuNA's rounds; uniform: no size exchange
    # the generated algorithms of the collective too (Kautz-C's two steps on K(d,2), ...): the front is the best
    # of what synth can make, each point saying what it is
    # at scale (forests) the direct exchanges are left out (along the same paths none is cheaper than the one
    # phase), and the generators that take minutes there
    generated = [(f"{name} (generated)", name, None) for name, algorithm in ALGORITHMS.items()
                 if plan.collective in algorithm.collectives and name not in ("spread-out", "tuna")
                 and not (forests is not None and (algorithm.direct or (algorithm.quick_ranks or plan.graph.ranks)
                                                   < plan.graph.ranks))]
    tried = radices(plan.graph.ranks, SCALE_RADICES if forests is not None else MAX_RADICES)
    for label, algorithm, radix in [("one phase", "spread-out", None),
                                    *((f"{forwarding} r={r}", "tuna", r) for r in tried),
                                    *generated]:
        schedule = exchange_schedule(plan.collective, plan.topology, ranks_per_node, plan.sizes, algorithm, radix,
                                      REFERENCE_BYTES)
        if schedule is None:
            continue
        for graph in graphs:
            if forests is not None:
                mapped = map_schedule(schedule, plan.topology, forests=forests)
            else:
                mapped = map_schedule(schedule, plan.topology, paths=transfer_paths(graph, schedule))
            busiest = float(mapped.channel_bytes.sum() + mapped.size_bytes.sum()) / unit
            alphas = int(mapped.port_messages.sum() + mapped.size_port_messages.sum())
            whole = schedule.blocks == plan.graph.ranks ** 2  # every block moved whole (no parts), along one path
            found.append((label, algorithm, radix, schedule.num_steps, busiest, alphas, mapped, graph, whole))
            say(f"{label}: {schedule.num_steps} steps, busiest {busiest:.6g} {'B' if plan.sizes is not None else 'blocks'}, "
                f"{alphas} message starts")
        del schedule
    say(f"{plan.collective}: {len(found)} schedules priced along the pairs' paths")
    keep = pareto([(f[5], f[4]) for f in found])
    matrix_bytes = exchange_message_bytes(plan.sizes, plan.graph.ranks) if plan.sizes is not None else None
    part = Part(plan.collective, 1, "optimal", [], None, "not on the front", blocks=plan.graph.ranks, whole=True,
                fixed_bytes=matrix_bytes, alternatives=[(f[0], f[6]) for f in found])
    # a point is optimal when its busiest load meets the least of its kind: a schedule of whole blocks, each on one
    # path (lambda* rounded up to whole blocks), or any schedule (lambda*); the gap is always to any schedule's bound
    message = matrix_bytes if plan.sizes is not None else plan.graph.ranks
    least_any = plan.time_bound.bandwidth.per_byte * message
    for i in keep:
        label, algorithm, radix, steps, busiest, _, mapped, graph, whole = found[i]
        least = plan.exchange.bound(least_any) if whole else least_any
        optimal = busiest <= least * (1 + 1e-9)
        status = "optimal" if optimal else "feasible"
        among = "schedules moving whole blocks" if whole else "any schedule"
        part.front.append(FrontPoint(steps, round(busiest, 6), status, 0.0, label, method=label,
                                     graph=None if graph is plan.graph else graph, among=among))

        def make(block_bytes: int = REFERENCE_BYTES, algorithm=algorithm, radix=radix) -> Schedule:
            made = exchange_schedule(plan.collective, plan.topology, ranks_per_node, plan.sizes, algorithm, radix,
                                      block_bytes)
            return dataclasses.replace(made, algorithm="synthesized")
        part.makers.append(make)
        part.priced.append(mapped)
        # at scale the file records no paths (P^2 of them): its forests' routing is not a routes file
        part.routing.append(functools.partial(transfer_paths, graph) if forests is None else _unrecorded)
    return part


def _unrecorded(schedule: Schedule) -> None:
    return None


METHOD = Method("phases", "an all-to-all by phases: every block in one phase along paths chosen for all pairs at once, "
                "TuNA's radix-r forwarding rounds, and the generated algorithms, each along those paths or the "
                "family's", WHOLE, EXCHANGES, _points, order=300, prune=False, cites="[Fan24] TuNA")
