"""Multi-port recursive combining, an allreduce that is not a reduce-scatter then an allgather (the
latency end of a true allreduce front): the ranks as the digits of a mixed radix P = r_1 x ... x r_m;
in step j every rank sends its whole partial to the r_j - 1 ranks that differ from it in digit j
alone and adds what it receives (all sends of a step carry the partials held before it), so after
step j a rank's partial holds the contributions of every rank that agrees with it above digit j,
each once. One radix P is the one-step all-pairs reduction (a complete graph's allreduce at its
step and message bounds); two cliques joined by a matching take radices (4, 2): a reduction in each
clique, then the exchange across; all radices 2 is recursive doubling.

A digit's step costs the same wherever it stands in the order, so each (stride, radix) step is
priced once along the plan's paths and every factorization is the sum of its steps; the
factorizations that no other beats in both message starts and busiest bytes are made and priced
whole (the points)."""

from __future__ import annotations

import functools

import numpy as np

from synth.collectives.schedule import REDUCE, Schedule, ScheduleBuilder
from synth.synthesis import limits
from synth.synthesis.exchange import pareto
from synth.synthesis.front import priced_whole
from synth.synthesis.methods import WHOLE, Method

DIGIT_PAIRS = "every digit's groups"  # the pairs a combining joins: the ranks differing in one digit
MAX_FACTORIZATIONS = 20_000  # ordered factorizations of P summed (4,096 = 2^12: 2,048 of them)


def factorizations(p: int, limit: int = MAX_FACTORIZATIONS) -> list[tuple[int, ...]]:
    """The ordered factorizations of p into factors >= 2 (digit 1, the least significant, first),
    at most `limit` of them, fewest factors first."""
    out: list[tuple[int, ...]] = []

    def extend(rest: int, prefix: tuple[int, ...]) -> None:
        if len(out) >= limit:
            return
        if rest == 1:
            out.append(prefix)
            return
        for factor in range(2, rest + 1):
            if rest % factor == 0:
                extend(rest // factor, prefix + (factor,))

    extend(p, ())
    return sorted(out, key=len)


def digit_pairs(p: int, stride: int, radix: int) -> tuple[np.ndarray, np.ndarray]:
    """Every rank to the radix - 1 ranks that differ from it in the digit of `stride` alone."""
    rank = np.arange(p, dtype=np.int64)
    digit = (rank // stride) % radix
    base = rank - digit * stride
    others = (digit[:, None] + np.arange(1, radix, dtype=np.int64)[None, :]) % radix
    return np.repeat(rank, radix - 1), (base[:, None] + others * stride).ravel()


def digit_steps(radices: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """Per step, (stride, radix) of its digit."""
    strides = np.cumprod((1,) + radices[:-1])
    return tuple(zip(strides.tolist(), radices))


def combining_schedule(spec: str, p: int, ranks_per_node: int, steps: tuple[tuple[int, int], ...],
                       block_bytes: int) -> Schedule:
    """The steps' reductions, one block (a rank's whole vector); every digit once: an allreduce."""
    builder = ScheduleBuilder("allreduce", "synthesized", spec, p, 1, block_bytes, ranks_per_node=ranks_per_node)
    for stride, radix in steps:
        src, dst = digit_pairs(p, stride, radix)
        builder.add_step(src, dst, np.zeros((len(src), 1), dtype=np.int64), REDUCE)
    return builder.build()


def _label(radices: tuple[int, ...]) -> str:
    if len(radices) == 1:
        return "all-pairs reduction"
    return f"combining {'x'.join(map(str, radices))}"


def _points(context):
    plan = context.plan
    p, q = plan.graph.ranks, plan.graph.ranks_per_node
    if p < 2:
        return []
    spec = plan.topology.spec
    steps: dict[tuple[int, int], tuple[float, float] | None] = {}

    def step_cost(stride: int, radix: int):  # (alpha terms, busiest bytes over bandwidth) of one digit's step
        if (stride, radix) not in steps:
            steps[stride, radix] = None
            if p * (radix - 1) <= limits.MAX_EVERY_PAIRS:
                found = priced_whole(context, f"digit {stride} x {radix}", 1, functools.partial(
                    combining_schedule, spec, p, q, ((stride, radix),)))
                if found is not None:
                    steps[stride, radix] = (float(found.mapped.port_messages[0]), float(found.mapped.channel_bytes[0]))
        return steps[stride, radix]

    costed = []
    for radices in factorizations(p):
        total, stride = [0.0, 0.0], 1
        for radix in radices:
            cost = step_cost(stride, radix)
            if cost is None:
                break
            total = [total[0] + cost[0], total[1] + cost[1]]
            stride *= radix
        else:
            costed.append((radices, total))
    kept = pareto([tuple(total) for _, total in costed])
    context.say(f"allreduce: {len(costed)} recursive combinings priced by their digits' steps, {len(kept)} kept")
    made = [priced_whole(context, _label(costed[i][0]), 1,
                         functools.partial(combining_schedule, spec, p, q, digit_steps(costed[i][0])),
                         reach=DIGIT_PAIRS) for i in kept]
    return [c for c in made if c is not None]


METHOD = Method("combining", "multi-port recursive combining: every rank's whole partial to the ranks that differ "
                "from it in one digit of a mixed radix, per step (one radix: the one-step all-pairs reduction; "
                "all 2: recursive doubling)", WHOLE, ("allreduce",), _points, order=150, pool="combining")
