"""The portfolio: every registered synthesis method (synth.synthesis.methods) that applies to a plan
is run, their points are gathered into parts (the spreading halves, and the whole alternatives by
pool), and per message size the points of least time under the cost model are chosen; sizes that
choose the same points form a band with its verified schedule and its record.

The halves of an allreduce are a reduce-scatter then an allgather, with three quarters of the
programs' time and what the whole methods' programs left of their quarter, in two shares (the
allgather also gets what the reduce-scatter's programs left); a broadcast (reduce) gives half its time to the spreading half and half to the rooted
constructions' scatter-then-allgather. The generated algorithms are one more whole part, so a
synthesized schedule is never slower than what synth already generates.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np

from synth.collectives.schedule import Schedule, ScheduleBuilder, collective
from synth.collectives.verify import verify
from synth.core.errors import SynthError
from synth.pricing.alphabeta import FREE, NodeCosts
from synth.pricing.schedule_cost import map_schedule
from synth.solve.budget import Budget
from synth.synthesis.claims import (FEASIBLE, OPTIMAL, PROVEN, TIMEOUT, at_least, bounds_record, point_claim, size_entry,
                                    steps_claim)
from synth.synthesis.exact import one_round_steps
from synth.pricing.bounds import EXCHANGES
from synth.synthesis.exchange import pareto
from synth.pricing.compare import Candidate
from synth.synthesis.front import Context, HalfContext, Part, judged, point_maker, schedule_steps
from synth.synthesis.methods import HALF, WHOLE, applicable
from synth.synthesis.plan import plan_synthesis
from synth.synthesis.transfers import transfer_paths
from synth.topology.paths import Paths


@dataclass(frozen=True)
class Band:
    """Consecutive message sizes that choose the same front points, and one schedule for them all."""

    sizes: list[int]
    points: tuple[int, ...]  # per part, the front point chosen
    schedule: Schedule  # verified, with its synthesis record; its blocks sized for message_bytes
    # the message size the schedule's blocks are made for (the band's first size); its record prices every size of the
    # band, but a file is for this one: synthesize another size on its own for a schedule sized for it
    message_bytes: int = 0


WHOLE_PROGRAMS = 0.25  # of an allreduce's --time-limit: the whole methods' programs (the rest: its two halves)


def synthesize_parts(plan, time_limit: float, solver: str = "cpsat", say=lambda text: None,
                     generated=None, methods: tuple[str, ...] | None = None, sweep: list | None = None) -> list[Part]:
    """The parts of the plan's collective: its spreading halves, each from every HALF method that
    applies (an allreduce: a reduce-scatter, then an allgather, each with half the program's time),
    and each pool of WHOLE methods as one whole part (`generated`: synth.pricing.compare's
    candidates along the plan's router, when already made; `methods`: the registered methods to
    run, default every one; `sweep`: plans of the same collective with other chunk counts, whose
    halves' points join the plan's, the program's time shared equally among them all)."""
    if sweep:
        time_limit /= 1 + len(sweep)
    context = Context(plan, time_limit, solver, say, generated, methods)
    context.spreading_parts = functools.partial(_spreading_parts_for, context)
    rooted = plan.collective in ("broadcast", "reduce")  # half the time for the scatter's allgather
    # an allreduce's whole methods solve programs of their own (combining's routing by distinct ports): they
    # come first with a quarter, and the halves get the rest with what the whole methods' programs left
    halves = ("reduce-scatter", "allgather") if plan.collective == "allreduce" else (plan.collective,)
    if not any(applicable(HALF, name, methods) for name in halves):  # no half to make: the whole methods take it all
        halves_limit = 0.0
    else:
        halves_limit = time_limit / 2 if rooted else time_limit * (1 - WHOLE_PROGRAMS) \
            if plan.collective == "allreduce" else time_limit
    ledger = Budget(time_limit - halves_limit)  # charged by the whole methods' programs
    whole = dataclasses.replace(context, time_limit=time_limit - halves_limit, ledger=ledger) \
        if halves_limit < time_limit else context
    wholes = _whole_parts(plan, whole, methods, say)
    if plan.collective == "allreduce" and halves_limit:
        halves_limit += ledger.seconds_unspent()
    parts = [] if plan.exchange is not None else spreading_parts(context, halves_limit)
    for other in sweep or ():
        say(f"{plan.collective}: {other.chunks} chunks")
        more = spreading_parts(Context(other, time_limit, solver, say, methods=methods),
                               halves_limit)
        parts = [_merged(part, extra) for part, extra in zip(parts, more)]
    return parts + wholes


def _whole_parts(plan, whole: Context, methods, say) -> list[Part]:
    """The parts of the WHOLE methods that apply: one per method that judges its own points (an
    all-to-all's phases), one per pool of the others' candidates."""
    parts = []
    pools: dict[str, list] = {}
    for method in applicable(WHOLE, plan.collective, methods):
        if _refused(method, plan, say):
            continue
        found = method.points(whole)
        if isinstance(found, Part):  # a method that judges its own points (an all-to-all's phases)
            for point in found.front:
                point.source = method.name
            parts.append(found)
            continue
        for candidate in found:
            candidate.source = method.name
        pool = pools.setdefault(method.pool or method.name, [])
        pool += [(method, c) for c in found]
    for name, found in pools.items():
        part = _whole_part(plan, name, [c for _, c in found], prune=found[0][0].prune if found else True)
        if part is not None:
            parts.append(part)
            if name == "rooted":
                say(f"{plan.collective}: {len(found)} scatter, chain and packed-tree points priced, "
                    f"{len(part.front)} kept")
    return parts


def _merged(part: Part, extra: Part) -> Part:
    """A half's front with another chunk count's points, each with its own blocks, pruned again: the
    front of (steps, rounds, chunks) over every chunk count. Its least steps and one-round steps stay
    the first plan's."""
    front = part.front + extra.front
    priced = list(zip(part.makers + extra.makers, part.priced + extra.priced,
                      [part.blocks_of(k) for k in range(len(part.front))]
                      + [extra.blocks_of(k) for k in range(len(extra.front))], part.routing + extra.routing))
    kept = _undominated(priced)
    return dataclasses.replace(part, front=[front[i] for i in kept], makers=[priced[i][0] for i in kept],
                               priced=[priced[i][1] for i in kept], point_blocks=[priced[i][2] for i in kept],
                               routing=[priced[i][3] for i in kept])


def _whole_part(plan, pool: str, found: list[Candidate], prune: bool) -> Part | None:
    """A pool's candidates as one whole part: with `prune`, the ones no other beats in both message
    starts and busiest bytes per byte of message; each judged against the bounds of any schedule
    unless its method judged it."""
    if not found:
        return None
    kept = (pareto([(float(c.mapped.port_messages.sum()), float(c.mapped.channel_bytes.sum()) / c.blocks)
                    for c in found]) if prune else range(len(found)))
    chosen = [found[i] for i in kept]
    for c in chosen:
        if c.point is None:
            c.point = judged(plan, c, c.label, c.reach)
        c.point.source = c.source
    return Part(plan.collective, None, "not synthesized", [c.point for c in chosen], None, "not on the front",
                blocks=found[0].blocks, whole=True, point_blocks=[c.blocks for c in chosen],
                makers=[c.make for c in chosen], priced=[c.mapped for c in chosen], routing=[c.routing for c in chosen],
                per_byte=plan.time_bound.bandwidth.per_byte, pool=pool)


def _priced_point(plan, name: str, half: HalfContext, point):
    """A half point's maker, its schedule priced along its pairs' paths, its blocks and those paths as a
    function of its schedule ((None, None, 0, None): no schedule found)."""
    if point.choice is None:
        return None, None, 0, None
    # the program's and the balanced trees' points are the representatives' (translated when made)
    maker = point_maker(plan, name, point, point.blocks or len(half.sources), half.reverse,
                        half.symmetry if point.method in ("program", "trees") else None, half.designed)
    routing = functools.partial(transfer_paths, point.graph or plan.graph)
    schedule = maker()
    return maker, map_schedule(schedule, plan.topology, paths=routing(schedule)), point.blocks or len(half.sources), \
        routing


def _undominated(priced: list) -> list[int]:
    """The points no other beats at every message size: B is dropped where an A starts no more
    messages and carries no more busiest bytes per byte of message, with blocks dividing B's (then at
    any size A's blocks, rounded up to whole bytes, are no larger in total than B's); between equals
    the first stays. Points without a schedule stay (they say which step counts were tried)."""
    def beats(a, b) -> bool:
        (_, ma, blocks_a, _), (_, mb, blocks_b, _) = a, b
        if ma.messages <= mb.messages:
            return (blocks_b % blocks_a == 0 and float(ma.channel_bytes.sum()) / blocks_a
                    <= float(mb.channel_bytes.sum()) / blocks_b * (1 + 1e-12))
        return False

    kept = []
    for j, b in enumerate(priced):
        if b[1] is None or not any(a[1] is not None and beats(a, b) and (i < j or not beats(b, a))
                                   for i, a in enumerate(priced) if i != j):
            kept.append(j)
    return kept


def _spreading_parts_for(context: Context, plan, time_limit: float, say) -> list[Part]:
    """The spreading halves of another plan with the same solver and methods (the allgather of a
    scatter-then-allgather broadcast)."""
    return spreading_parts(Context(plan, time_limit, context.solver, say, methods=context.methods), time_limit)


def _refused(method, plan, say) -> bool:
    """Whether `method` refuses `plan`, said in one line (the registry's refusal: its size limits)."""
    why = method.refusal(plan)
    if why is not None:
        say(f"{plan.collective}: {method.name}: {why}")
    return why is not None


def spreading_parts(context: Context, time_limit: float) -> list[Part]:
    """The plan's spreading halves, each a part of the points of every HALF method that applies,
    in the methods' order, sorted by steps (a tie kept in that order)."""
    plan, say = context.plan, context.say
    halves = ["reduce-scatter", "allgather"] if plan.collective == "allreduce" else [plan.collective]
    parts = []
    ledger = Budget(time_limit, len(halves))  # the later half also gets what the earlier one's programs left
    for i, name in enumerate(halves):
        half = HalfContext.of(context, name, ledger.seconds_unspent(i + 1))
        half.ledger = ledger
        p = plan.graph.ranks
        say(f"{name}: {len(half.designed) * (p - 1):,} deliveries, at least {half.least} steps and "
            f"{half.rounds_bound} rounds")
        found, proving = [], []
        for method in applicable(HALF, name, context.methods):
            if _refused(method, plan, say):
                continue
            points = method.points(half, found)
            for point in points:
                point.source, point.chunks = method.name, plan.chunks
            if method.proves_steps:
                proving = points
            found = found + points
        front = sorted(found, key=lambda f: f.steps)
        priced = [_priced_point(plan, name, half, point) for point in front]
        kept = _undominated(priced)
        front, priced = [front[i] for i in kept], [priced[i] for i in kept]
        # A schedule of `least` steps over the plan's transfers (the step bound) proves the least steps, whatever
        # its rounds; the least steps of one round each, from the same points.
        solved = bool(proving) and proving[0].rounds is not None
        one_round = one_round_steps(proving)
        part = Part(name, half.least if solved else None,
                    "optimal" if solved else front[0].status if front else "timeout", front, *one_round,
                    blocks=len(half.sources), per_byte=half.per_byte, rounds_bound=half.rounds_bound)
        if any(point.blocks for point in front):  # per-layer points with every block split in shares
            part.point_blocks = [point.blocks or len(half.sources) for point in front]
        for point, (maker, mapped, _, routing) in zip(front, priced):
            part.makers.append(maker)
            part.priced.append(mapped)
            part.routing.append(routing)
        parts.append(part)
    return parts


def choose(parts: list[Part], size: int, alpha: float, bandwidth_bits: float,
           node: NodeCosts = FREE) -> tuple[tuple[int, ...], float]:
    """Per part, the front point of least time at message size `size` (-1: the part is not used),
    and the total time: the synthesized parts together (an allreduce's two halves) or one whole
    part (the generated algorithms), whichever takes less; the synthesized ones on a tie."""
    best = [part.best(size, alpha, bandwidth_bits, node) for part in parts]
    halves = [i for i, part in enumerate(parts) if not part.whole]
    options = []
    if halves and all(best[i][1] < math.inf for i in halves):
        options.append((sum(best[i][1] for i in halves), halves))
    options += [(best[i][1], [i]) for i, part in enumerate(parts) if part.whole and best[i][1] < math.inf]
    if not options:
        missing = [part.collective for part, (_, time) in zip(parts, best) if time == math.inf]
        raise SynthError(f"no {missing[0]} schedule was found in the time given (--time-limit)")
    total, used = min(options, key=lambda option: option[0])
    return tuple(best[i][0] if i in used else -1 for i in range(len(parts))), total


def bands(plan, parts: list[Part], sizes: list[int], alpha: float, bandwidth_bits: float,
          node: NodeCosts = FREE) -> list[Band]:
    """Consecutive sizes that choose the same points, each with its schedule (verified, recorded)."""
    out: list[Band] = []
    groups: list[tuple[tuple[int, ...], list[int]]] = []
    for size in sizes:
        points, _ = choose(parts, size, alpha, bandwidth_bits, node)
        if groups and groups[-1][0] == points:
            groups[-1][1].append(size)
        else:
            groups.append((points, [size]))
    for points, members in groups:
        made = members[0]
        schedule = _joined(plan, parts, points, made)
        report = verify(schedule)
        if not report.ok:  # a bug of the synthesis, never written
            raise AssertionError(f"the synthesized {plan.collective} schedule is wrong: {report.violation}")
        schedule.synthesis = record(plan, parts, points, members, alpha, bandwidth_bits, node)
        out.append(Band(members, points, schedule, made))
    return out


def _joined(plan, parts: list[Part], points: tuple[int, ...], size: int) -> Schedule:
    """The schedule of the chosen points at `size` (an allreduce: the reduce-scatter's steps, then
    the allgather's)."""
    whole = [(part, k) for part, k in zip(parts, points) if k >= 0 and part.whole]
    if whole:  # an all-to-all's or a generated algorithm's, made again at the size's blocks (size exchanges kept)
        part, k = whole[0]
        made = part.makers[k](-(-size // part.blocks_of(k)))
        return dataclasses.replace(made, paths=part.routing[k](made))  # the paths it was priced on
    used = [(part, k) for part, k in zip(parts, points) if k >= 0]
    chosen = [part.schedule(k) for part, k in used]
    # each half along the paths it was priced on, the halves' transfers in order
    paths = Paths.concatenate([part.routing[k](schedule) for (part, k), schedule in zip(used, chosen)])
    # halves with blocks split in different shares: each block of a half split further, to their least common
    # multiple (block b's pieces b + j x blocks: the same rank's, as block b mod ranks is rank b's)
    blocks = math.lcm(*(schedule.blocks for schedule in chosen))
    per_block = -(-size // blocks)
    root = plan.root if collective(plan.collective).rooted else None
    builder = ScheduleBuilder(plan.collective, "synthesized", plan.topology.spec, plan.graph.ranks, blocks, per_block,
                              root=root, ranks_per_node=plan.graph.ranks_per_node)
    for schedule in chosen:
        split = blocks // schedule.blocks
        pieces = np.arange(split, dtype=np.int64) * schedule.blocks
        for src, dst, (counts, ids), op in schedule_steps(schedule):
            builder.add_step(src, dst, (counts * split, (ids[:, None] + pieces[None, :]).ravel()), op)
    return dataclasses.replace(builder.build(), paths=paths)


def record(plan, parts: list[Part], points: tuple[int, ...], sizes: list[int], alpha: float,
           bandwidth_bits: float, node: NodeCosts = FREE) -> dict:
    """What the file says of its synthesis: method, bounds, the front, the cost and gap per size,
    and honest statuses (synth.synthesis.claims): a size is optimal only where its time meets the
    bound of any schedule; a point's proof relative to its steps is `proven`, with what it is."""
    used = [(part, k) for part, k in zip(parts, points) if k >= 0]
    point_statuses = [part.front[k].status for part, k in used]
    per_size = [size_entry(plan, size, choose(parts, size, alpha, bandwidth_bits, node)[1], point_statuses, alpha,
                           bandwidth_bits, node) for size in sizes]
    statuses = {entry["status"] for entry in per_size}
    status = OPTIMAL if statuses == {OPTIMAL} else TIMEOUT if TIMEOUT in statuses else FEASIBLE

    def claimed(part: Part, k: int) -> dict:
        what, proof = point_claim(plan, part, k)
        if what == OPTIMAL and not node.free:  # its alpha-beta terms meet the bounds; the node's costs are not proven
            what, proof = PROVEN, "message starts and network bytes at the bounds of any schedule (the node's costs " \
                                  "are priced above them, not proven least)"
        return {"status": what, **({"proof": proof} if proof else {})}

    return {
        "method": plan.method,
        "transfers": plan.graph.reach,
        "router": plan.graph.router,
        "chunks": plan.chunks,
        "status": status,
        "parts": [{"collective": part.collective, "least_steps": part.least_steps,
                   "least_steps_status": steps_claim(plan, part.least_status),
                   "one_round_steps": part.one_round, "one_round_status": steps_claim(plan, part.one_round_status, rounds=True),
                   "steps": part.front[k].steps, "rounds": part.front[k].rounds, **claimed(part, k),
                   **_chunked(part.front[k]),
                   "method": part.front[k].method, "by": part.front[k].source,
                   "transfers": part.front[k].reach or (part.front[k].graph or plan.graph).reach,
                   "router": (part.front[k].graph or plan.graph).router,
                   **({"optimal_among": part.front[k].among} if part.front[k].among else {}),
                   "front": [{"steps": f.steps, "rounds": f.rounds, **claimed(part, j), "method": f.method,
                              "by": f.source, **_chunked(f), "router": (f.graph or plan.graph).router,
                              **({"invariant_status": f.invariant_status} if f.invariant_status else {})}
                             for j, f in enumerate(part.front)]}
                  for part, k in used],
        **bounds_record(plan, alpha, bandwidth_bits, node),
        "sizes": per_size,
        **({"routing": plan.exchange.as_dict()} if plan.exchange is not None else {}),
    }



def _chunked(point) -> dict:
    """A half point's chunks and its rounds per chunk (its bandwidth in rounds of a rank's message
    over the ranks, comparable across chunk counts, as SCCL's R / C), where it has them."""
    if not point.chunks:
        return {}
    return {"chunks": point.chunks,
            **({"rounds_per_chunk": round(point.rounds / point.chunks, 6)} if point.rounds is not None else {})}


@dataclass
class SynthesizedCandidate:
    """The synthesized schedule as a column of `synth compare`: at each size the front points of
    least time (a schedule per size band), priced as the generated algorithms are."""

    plan: object  # synth.synthesis.plan.SynthesisPlan
    parts: list[Part]
    label: str = "synthesized"

    def time(self, size: int, alpha: float, bandwidth_bits: float, node: NodeCosts = FREE) -> float:
        return at_least(choose(self.parts, size, alpha, bandwidth_bits, node)[1],
                        self.bound(size, alpha, bandwidth_bits, node))

    def bound(self, size: int, alpha: float, bandwidth_bits: float, node: NodeCosts = FREE) -> float:
        """The time bound of any schedule (the cut bound's bandwidth term: at least the others')."""
        return self.plan.time_bound.seconds(size, alpha, bandwidth_bits, node)


def compare_with_synthesis(comparison, topology, alpha: float, bandwidth_bits: float, time_limit: float,
                           say=lambda text: None, node: NodeCosts = FREE):
    """`comparison` (synth.pricing.compare.Comparison) with the synthesized schedule as one more
    column and the cut bound in the bounds; where synthesis does not apply, one more "left out" line."""
    try:
        # an exchange's pairs are routed by its synthesis (the program), the others' by the comparison's router
        router = None if comparison.collective in EXCHANGES else comparison.router
        plan = plan_synthesis(comparison.collective, topology, router=router, time_limit=time_limit, say=say,
                              ranks_per_node=comparison.ranks_per_node, root=comparison.root, sizes=comparison.matrix)
        # the comparison's algorithms are the generated part (priced along the same router), not made again
        parts = synthesize_parts(plan, time_limit, say=say, generated=comparison.candidates)
        candidate = SynthesizedCandidate(plan, parts)
        times = np.array([[candidate.time(n, alpha, bandwidth_bits, node)] for n in comparison.sizes])
    except SynthError as exc:
        return dataclasses.replace(comparison, skipped=[*comparison.skipped, f"synthesized: {exc}"])
    bounds = np.maximum(comparison.bounds, [candidate.bound(n, alpha, bandwidth_bits, node) for n in comparison.sizes])
    return dataclasses.replace(comparison, candidates=[*comparison.candidates, candidate],
                               times=np.hstack([comparison.times, times]), bounds=bounds)
