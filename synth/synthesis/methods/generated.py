"""The generated algorithms of the collective (synth.collectives.algorithms, priced as `synth
compare` prices them along the plan's router), with the plan's ranks a node and root; a
reduce-scatter's also the generated allgathers run backwards. A whole alternative: per size the
portfolio takes them where they are faster, so a synthesized schedule is never slower than what
synth already generates."""

from __future__ import annotations

import functools

from synth.collectives.schedule import REDUCE, Schedule, ScheduleBuilder
from synth.collectives.verify import verify
from synth.core.errors import SynthError
from synth.pricing.schedule_cost import map_schedule
from synth.pricing.compare import REFERENCE_BYTES, Candidate
from synth.synthesis.front import judged, relabelled, router_paths, schedule_steps
from synth.synthesis.methods import WHOLE, Method

GENERATED_PAIRS = "the algorithm's own"  # a generated point's transfers: the pairs its algorithm joins


def _points(context) -> list[Candidate]:
    from synth.pricing.compare import candidates

    plan, generated = context.plan, context.generated
    if generated is not None and not len(generated):  # () asks for none
        return []
    if generated is None:
        try:
            generated, _ = candidates(plan.collective, plan.topology, plan.topology.default_router if plan.routes
                                      else plan.graph.router, plan.root, plan.graph.ranks_per_node, plan.routes)
        except SynthError:
            return []
    generated = [c for c in generated if c.make is not None]
    if plan.collective == "reduce-scatter":
        generated = generated + _reversed_allgathers(plan)
    out = []
    # each transfer as candidates() priced it: routed step by step (the file records these paths)
    routing = router_paths(plan.topology, None if plan.routes else plan.graph.router, plan.routes)
    for candidate in generated:
        priced = Candidate(candidate.label, candidate.blocks, candidate.mapped, relabelled(candidate.make),
                        GENERATED_PAIRS, routing=routing)
        priced.point = judged(plan, priced, f"generated: {candidate.label}", GENERATED_PAIRS)
        out.append(priced)
    if out:
        context.say(f"{plan.collective}: {len(generated)} generated algorithms priced along {plan.graph.router}'s "
                    "paths")
    return out


def _reversed_allgathers(plan) -> list:
    """The generated allgathers run backwards as reduce-scatters (a rank's partial of a block goes
    back along the edge the block came by, after its own receivers' partials arrived): valid where
    every rank receives every block once, which the verifier decides; a reduce-scatter has fewer
    generators of its own (Bruck's dissemination reversed takes log P steps on any P)."""
    from synth.pricing.compare import Candidate, candidates

    try:
        found, _ = candidates("allgather", plan.topology, plan.topology.default_router if plan.routes
                              else plan.graph.router, 0, plan.graph.ranks_per_node, plan.routes)
    except SynthError:
        return []
    out = []
    for candidate in found:
        if candidate.make is None:
            continue
        make = functools.partial(time_reversed, candidate.make)
        schedule = make(REFERENCE_BYTES)
        if not verify(schedule).ok:
            continue
        out.append(Candidate(f"{candidate.label} reversed", candidate.blocks,
                             map_schedule(schedule, plan.topology, None if plan.routes else plan.graph.router,
                                          routes=plan.routes), make))
    return out


def time_reversed(make, block_bytes: int) -> Schedule:
    """An allgather's schedule made at `block_bytes`, its steps backwards, every transfer turned
    around and reducing: a reduce-scatter where every rank received every block once."""
    forward = make(block_bytes).explicit()
    builder = ScheduleBuilder("reduce-scatter", forward.algorithm, forward.spec, forward.ranks, forward.blocks,
                              forward.block_bytes, ranks_per_node=forward.ranks_per_node)
    for src, dst, blocks, _ in reversed(list(schedule_steps(forward))):
        builder.add_step(dst, src, blocks, REDUCE)
    return builder.build()


METHOD = Method("generated", "the generated algorithms of the collective (synth schedule --list), priced along the "
                "same paths; a reduce-scatter's also the generated allgathers run backwards", WHOLE,
                ("allgather", "reduce-scatter", "allreduce", "broadcast", "reduce"), _points, order=200,
                prune=False)
