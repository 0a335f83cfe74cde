"""Multi-port recursive combining, an allreduce that is not a reduce-scatter then an allgather (the
latency end of a true allreduce front): the ranks as the digits of a mixed radix P = r_1 x ... x r_m;
in step j every rank sends its whole partial to the r_j - 1 ranks that differ from it in digit j
alone and adds what it receives (all sends of a step carry the partials held before it), so after
step j a rank's partial holds the contributions of every rank that agrees with it above digit j,
each once. One radix P is the one-step all-pairs reduction (a complete graph's allreduce at its
step and message bounds); two cliques joined by a matching take radices (4, 2): a reduction in each
clique, then the exchange across; all radices 2 is recursive doubling.

The digits: of the rank index, or on a torus or HyperX (up to MAX_GRID_RANKS ranks) each digit a
factor of every coordinate (`factorizations` of the grid; 1: the step leaves that coordinate
alone), so a step's group may be a 2x2 block, a column of four or the corners of the torus.

A digit's step costs the same wherever it stands in the order, so each step is priced once and
every factorization is the sum of its steps: along the router's paths, and where a node is its own
router with several links along paths that leave each rank by distinct ports
(synth.synthesis.port_paths; a radix-4 digit's 3 messages by 3 of a torus node's 4 links: one
alpha where minimal's paths may take two). The steps of the few factorizations of fewest message
starts by distinct ports are routed again by the choice program (busiest channel least), twice.
The factorizations that no other beats in both message starts and busiest bytes are made and
priced whole (the points), each recording the paths it was priced on.

The same digits make an allgather (recursive multiplying, [Bruck97]'s radix-k recursive doubling
on any mixed radix): in step j every rank sends the blocks it holds, those of the ranks that differ
from it in the digits before j alone, to the r_j - 1 ranks that differ from it in digit j, so a
rank's blocks grow r_j-fold and its message starts are the allreduce's (torus 8x8: 3 steps of one
alpha, 4 x 4 x 4 split over the coordinates, where dissemination takes 4). A reduce-scatter runs
it backwards (each partial goes back the way its block came, the digits in reverse order). Step j's
messages carry r_1 ... r_(j-1) blocks, so a factorization's busiest bytes are its digits' steps
weighed by that, in either direction."""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from synth.collectives.schedule import COPY, REDUCE, Schedule, ScheduleBuilder
from synth.core.errors import SynthError
from synth.pricing.alphabeta import node_ports
from synth.solve.budget import Budget
from synth.synthesis import limits
from synth.synthesis.exchange import pareto
from synth.synthesis.front import priced_whole, router_paths
from synth.synthesis.methods import WHOLE, Method
from synth.synthesis.port_paths import PortRouter
from synth.topology.grid import grid_strides
from synth.topology.paths import Paths

DIGIT_PAIRS = "every digit's groups"  # the pairs a combining joins: the ranks differing in one digit
PORT_PATH_MESSAGES = 1 << 16  # a step's messages laid by distinct ports (one Python loop over their hops)
PORT_FANOUT = 2  # partners a step's rank has at most, in ports, for its messages to be laid by distinct ports
MAX_FACTORIZATIONS = 20_000  # ordered factorizations of P summed (4,096 = 2^12: 2,048 of them)
# The program that routes a step's messages by distinct ports (synth.synthesis.port_paths.PortRouter.polished),
# for the steps of the few factorizations of fewest message starts, twice (the second time for those that then
# lead): torus 8x8's 4x4x4 (2x2, 1x4, 4x1 per dimension) at 2 units: 2, 4, 4 messages on its busiest channels,
# against 3, 6, 6 laid greedily (1 unit: 2, 5, 5), 32 B within 1% of the bound (3.026 us, bound 3.001).
POLISH_WORK = 2.0  # CP-SAT deterministic time per step (about 1-2 s here)
POLISHED_FACTORIZATIONS = 3
POLISH_ROUNDS = 2
POLISH_MESSAGES = 512  # a step's messages at most, for the program (a 16x16 torus's radix-4 steps: 768, 5 s each)
# Digits split over a grid's dimensions, and paths by distinct ports, up to this many ranks (a 16x16 torus: 2,568
# factorizations, 120 digits, 6 s of laying paths; a 32x32's 20,000 factorizations took 22 s more and gained nothing)
MAX_GRID_RANKS = 256
# An allgather's or reduce-scatter's deliveries at most, P (P - 1): 1,024 ranks (its schedules are made whole)
MAX_COPY_DELIVERIES = 1 << 20
COLLECTIVES = ("allreduce", "allgather", "reduce-scatter")


def factorizations(sizes: tuple[int, ...], limit: int = MAX_FACTORIZATIONS) -> list[tuple[tuple[int, ...], ...]]:
    """The ordered factorizations of a grid of `sizes` (one dimension: of P): per step, a factor
    of every dimension (1: the step leaves that coordinate alone), their product >= 2 (step 1 the
    least significant digit first), at most `limit` of them, fewest steps first."""
    out: list[tuple[tuple[int, ...], ...]] = []

    def extend(rest: tuple[int, ...], prefix: tuple) -> None:
        if len(out) >= limit:
            return
        if all(r == 1 for r in rest):
            out.append(prefix)
            return
        for factors in itertools.product(*(_divisors(r) for r in rest)):
            if math.prod(factors) >= 2:
                extend(tuple(r // f for r, f in zip(rest, factors)), prefix + (factors,))

    extend(tuple(sizes), ())
    return sorted(out, key=len)


@functools.lru_cache(maxsize=None)
def _divisors(n: int) -> tuple[int, ...]:
    return tuple(d for d in range(1, n + 1) if n % d == 0)


def digit_pairs(sizes: tuple[int, ...], digit: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, np.ndarray]:
    """Every rank to the ranks that differ from it in the digit alone: per dimension of the grid
    (rank = sum of coordinate k x the product of the sizes below k), (stride, factor) of the
    digit's part of that coordinate; the others in cyclic order after the rank's own value."""
    p = math.prod(sizes)
    rank = np.arange(p, dtype=np.int64)
    place = np.asarray(grid_strides(tuple(sizes)), dtype=np.int64)
    base, own, offset, radix = rank.copy(), np.zeros(p, dtype=np.int64), np.zeros(1, dtype=np.int64), 1
    for k, (stride, factor) in enumerate(digit):
        value = (rank // place[k] // stride) % factor
        base -= value * stride * place[k]
        own = own * factor + value  # the rank's own value of the digit, the last dimension fastest
        offset = (offset[:, None] + np.arange(factor, dtype=np.int64)[None, :] * stride * place[k]).ravel()
        radix *= factor
    others = (own[:, None] + np.arange(1, radix, dtype=np.int64)[None, :]) % radix
    return np.repeat(rank, radix - 1), (base[:, None] + offset[others]).ravel()


def digit_steps(factors: tuple[tuple[int, ...], ...]) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Per step, its digit: per dimension (stride, factor), the stride the product of that
    dimension's factors before it (a factor of 1: stride 1, the same pairs wherever it stands)."""
    strides = [1] * len(factors[0])
    steps = []
    for step in factors:
        steps.append(tuple((stride if f > 1 else 1, f) for stride, f in zip(strides, step)))
        strides = [stride * f for stride, f in zip(strides, step)]
    return tuple(steps)


def combining_schedule(spec: str, sizes: tuple[int, ...], ranks_per_node: int, steps, block_bytes: int,
                       collective: str = "allreduce") -> Schedule:
    """Every digit once, in the order of `steps`: an allreduce's reductions of one block (a rank's
    whole vector); an allgather's copies of the blocks each rank holds (block b first rank b's); a
    reduce-scatter's, the allgather of the same digits run backwards, its steps in reverse order
    (the transfers of a step in digit_pairs' order either way: the paths of DigitPortPaths)."""
    p = math.prod(sizes)
    blocks = 1 if collective == "allreduce" else p
    builder = ScheduleBuilder(collective, "synthesized", spec, p, blocks, block_bytes, ranks_per_node=ranks_per_node)
    if collective == "allreduce":
        for digit in steps:
            src, dst = digit_pairs(sizes, digit)
            builder.add_step(src, dst, np.zeros((len(src), 1), dtype=np.int64), REDUCE)
    elif collective == "allgather":
        for (src, dst), held in zip(*_holdings(sizes, steps)):
            builder.add_step(src, dst, held[src], COPY)
    else:  # the allgather's step over digit j carried held[a] a -> b; backwards b -> a reduces the same blocks
        for (src, dst), held in reversed(list(zip(*_holdings(sizes, steps)))):
            builder.add_step(src, dst, held[dst], REDUCE)
    return builder.build()


def _holdings(sizes: tuple[int, ...], steps) -> tuple[list, list]:
    """Per step of the allgather over `steps`, its (src, dst) pairs and per rank the blocks it holds
    before the step (a P x r_1 ... r_(j-1) array: the ranks differing from it in the earlier digits)."""
    p = math.prod(sizes)
    held = np.arange(p, dtype=np.int64)[:, None]
    pairs, holdings = [], []
    for digit in steps:
        src, dst = digit_pairs(sizes, digit)
        pairs.append((src, dst))
        holdings.append(held)
        held = np.hstack([held, held[dst.reshape(p, -1)].reshape(p, -1)])  # src is each rank repeated, in order
    return pairs, holdings


def step_weights(factors: tuple[tuple[int, ...], ...], collective: str) -> list[int]:
    """Per digit of a factorization (in the allgather's order), the blocks each of its messages
    carries: one for an allreduce (the whole vector), r_1 ... r_(j-1) for an allgather or a
    reduce-scatter."""
    if collective == "allreduce":
        return [1] * len(factors)
    weights, held = [], 1
    for step in factors:
        weights.append(held)
        held *= math.prod(step)
    return weights


def combining_grid(plan) -> tuple[int, ...]:
    """The grid whose coordinates the digits split: a torus's or HyperX's (one rank a router, up
    to MAX_GRID_RANKS ranks), else the ranks in one dimension."""
    from synth.collectives.algorithms import grid_shape

    dims = grid_shape(plan.topology, plan.graph.ranks_per_node)
    return tuple(dims) if len(dims) > 1 and math.prod(dims) <= MAX_GRID_RANKS else (plan.graph.ranks,)


def _label(factors: tuple[tuple[int, ...], ...], by_ports: bool, collective: str = "allreduce") -> str:
    radices = [math.prod(step) for step in factors]
    kind = {"allreduce": ("all-pairs reduction", "combining"), "allgather": ("all-pairs exchange", "multiplying"),
            "reduce-scatter": ("all-pairs reduction", "multiplying backwards")}[collective]
    name = kind[0] if len(radices) == 1 else f"{kind[1]} {'x'.join(map(str, radices))}"
    if len(factors[0]) > 1:  # the digits' parts per dimension
        name += f" ({', '.join('x'.join(map(str, step)) for step in factors)} per dimension)"
    return f"{name} by distinct ports" if by_ports else name


class DigitPortPaths:
    """Per digit, its step's paths leaving every node by distinct ports (synth.synthesis.port_paths),
    made once; a digit with more partners than PORT_FANOUT times a node's ports takes the router's
    paths (`routed`: a one-step schedule's), its messages queueing at the ports either way. Called
    with a combining's digits and its schedule, the paths of the schedule's transfers between
    nodes, in order."""

    def __init__(self, router, sizes: tuple[int, ...], q: int, routed):
        self.router, self.sizes, self.q, self.routed, self.made = router, sizes, q, routed, {}
        self.ports = node_ports(router.network)

    def spread(self, digit) -> bool:
        """Whether the digit's messages are laid by distinct ports (else along the router's paths)."""
        return math.prod(f for _, f in digit) - 1 <= PORT_FANOUT * self.ports

    def step(self, digit: tuple[tuple[int, int], ...]) -> Paths:
        if digit not in self.made:
            if not self.spread(digit):
                self.made[digit] = self.routed(digit)
            else:
                src, dst = digit_pairs(self.sizes, digit)
                across = src // self.q != dst // self.q
                self.made[digit] = self.router.step_paths(src[across] // self.q, dst[across] // self.q)
        return self.made[digit]

    def polish(self, digit: tuple[tuple[int, int], ...], work: float, budget=None) -> None:
        """The digit's paths improved by the routing program (PortRouter.polished), within `budget`."""
        src, dst = digit_pairs(self.sizes, digit)
        across = src // self.q != dst // self.q
        self.made[digit] = self.router.polished(src[across] // self.q, dst[across] // self.q, self.step(digit), work,
                                                budget)

    def __call__(self, digits, schedule) -> Paths:
        return Paths.concatenate([self.step(digit) for digit in digits])


def port_paths(context, sizes: tuple[int, ...]) -> DigitPortPaths | None:
    """The distinct-port paths where a rank's messages may leave by several ports (its node its own
    router, with more than one link), else None: every message starts at one port anyway."""
    network = context.network
    plan = context.plan
    if plan.routes is not None or not network.nodes_are_routers or node_ports(network) < 2 \
            or plan.graph.ranks > MAX_GRID_RANKS:
        return None
    routing = router_paths(plan.topology, context.router, None)
    q = plan.graph.ranks_per_node

    def routed(digit):
        return routing(combining_schedule(plan.topology.spec, sizes, q, (digit,), 1))

    try:
        return DigitPortPaths(PortRouter(network), sizes, q, routed)
    except SynthError as exc:
        context.say(f"{plan.collective}: no combining by distinct ports: {exc}")
        return None


def _points(context):
    plan = context.plan
    p, q, collective = plan.graph.ranks, plan.graph.ranks_per_node, plan.collective
    if p < 2:
        return []
    if collective != "allreduce" and p * (p - 1) > MAX_COPY_DELIVERIES:
        context.say(f"{collective}: no recursive multiplying: {p:,} ranks' {p * (p - 1):,} deliveries, more than "
                    f"{MAX_COPY_DELIVERIES:,}")
        return []
    spec, sizes = plan.topology.spec, combining_grid(plan)
    ports = port_paths(context, sizes)
    steps: dict[tuple, tuple[float, float] | None] = {}

    def routing(by_ports: bool, digits):  # digits in the allgather's order; a reduce-scatter's steps run backwards
        order = digits[::-1] if collective == "reduce-scatter" else digits
        return functools.partial(ports, order) if by_ports else None

    def step_cost(digit, by_ports: bool):  # (alpha terms, busiest bytes over bandwidth) of one digit's step
        if (digit, by_ports) not in steps:
            steps[digit, by_ports] = None
            radix = math.prod(f for _, f in digit)
            if by_ports and not ports.spread(digit):  # the router's paths: the same step as without
                steps[digit, by_ports] = step_cost(digit, False)
            elif p * (radix - 1) <= (PORT_PATH_MESSAGES if by_ports else limits.MAX_EVERY_PAIRS):
                found = priced_whole(context, f"digit {digit}", 1, functools.partial(
                    combining_schedule, spec, sizes, q, (digit,)), routing=routing(by_ports, (digit,)))
                if found is not None:
                    steps[digit, by_ports] = (float(found.mapped.port_messages[0]),
                                              float(found.mapped.channel_bytes[0]))
        return steps[digit, by_ports]

    def costed_all():  # every factorization's (alpha terms, busiest bytes): the sum of its digits' steps
        out = []
        for by_ports in (False, True) if ports is not None else (False,):
            for factors in factorizations(sizes):
                costs = [step_cost(digit, by_ports) for digit in digit_steps(factors)]
                if all(cost is not None for cost in costs):
                    weights = step_weights(factors, collective)
                    out.append((factors, by_ports, (sum(c[0] for c in costs),
                                                    sum(w * c[1] for w, c in zip(weights, costs)))))
        return out

    costed = costed_all()
    polished: set = set()
    # the routing programs take the whole methods' share of --time-limit (synth.synthesis.portfolio; what they
    # leave goes to the halves), in equal shares with the earlier ones' leftover, as CP-SAT's deterministic
    # work: reruns stay identical
    budget = Budget(context.time_limit, POLISH_ROUNDS * POLISHED_FACTORIZATIONS, ledger=context.ledger)
    for _ in range(POLISH_ROUNDS if ports is not None else 0):
        # the fewest message starts by distinct ports: the best few's steps routed by the program, then again
        by_ports = sorted((total, k) for k, (_, ported, total) in enumerate(costed) if ported)
        least = [k for total, k in by_ports if total[0] == by_ports[0][0][0]][:POLISHED_FACTORIZATIONS] \
            if by_ports else []
        fresh = list(dict.fromkeys(d for k in least for d in digit_steps(costed[k][0]) if d not in polished
                                   and ports.spread(d) and p * (math.prod(f for _, f in d) - 1) <= POLISH_MESSAGES))
        if not fresh:
            break
        for digit in fresh:
            ports.polish(digit, POLISH_WORK, budget)
            polished.add(digit)
            del steps[digit, True]
        costed = costed_all()
    if polished:
        context.say(f"{collective}: {len(polished)} combining steps routed by distinct ports by the program")
    kept = pareto([total for _, _, total in costed])
    context.say(f"{collective}: {len(costed)} recursive {'combinings' if collective == 'allreduce' else 'multiplyings'}"
                " priced by their digits' steps"
                f"{' (along the router and by distinct ports)' if ports is not None else ''}, {len(kept)} kept")
    made = []
    for i in kept:
        factors, by_ports, _ = costed[i]
        digits = digit_steps(factors)
        made.append(priced_whole(context, _label(factors, by_ports, collective), 1 if collective == "allreduce" else p,
                                 functools.partial(combining_schedule, spec, sizes, q, digits, collective=collective),
                                 reach=DIGIT_PAIRS, routing=routing(by_ports, digits)))
    return [c for c in made if c is not None]


METHOD = Method("combining", "multi-port recursive combining: every rank's whole partial to the ranks that differ "
                "from it in one digit of a mixed radix (on a torus or HyperX, digits split over its dimensions), "
                "per step (one radix: the one-step all-pairs reduction; all 2: recursive doubling), along the "
                "router's paths and along paths leaving by distinct ports; an allgather's the blocks each rank "
                "holds over the same digits (recursive multiplying), a reduce-scatter's that backwards", WHOLE,
                COLLECTIVES, _points,
                order=150, pool="combining")
