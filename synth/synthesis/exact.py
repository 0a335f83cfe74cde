"""Exact step synthesis: a time-expanded integer program in the choice form (synth.solve.problem).

Spreading collectives (allgather, broadcast): a block starts at its source rank and must reach
every other rank. Every (block b, rank v) that lacks it at the start is an item; its candidates are
the (step s, transfer u -> v of the graph) by which v receives b, once:
- a block is sent only once held: item (b, v) choosing (s, u -> v), with u not b's source, and item
  (b, u) choosing a step >= s are never both chosen (a group of bound 1);
- capacity per link and step: in step s a channel c carries at most bandwidth(c) x z_s blocks,
  z_s the step's rounds (capped groups of coefficient bandwidth(c), one z per step); the sum of the
  rounds is minimized.
So a step's beta term (its busiest channel's bytes over bandwidth) is at most z_s blocks, and
exactly z_s where every channel has bandwidth 1 (otherwise the rounds round it up).

The Pareto front: for S from the step bound up (the least steps: reached, every holder sending to
every neighbour), the least total rounds, until the rounds reach the bandwidth bound (or stop
falling, or the time is spent). The least steps of one round each is the first point whose rounds
equal its steps, proven when the points before it are proven. A reduce-scatter (reduce) is an allgather
(broadcast) on the reversed transfers run backwards, copies turned into reductions: each rank sends
its partial of a block once, after its senders' partials arrived (the spreading tree reversed).
An allreduce is the reduce-scatter followed by the allgather.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.collectives.schedule import COPY, REDUCE, Schedule, ScheduleBuilder
from synth.solve import solve
from synth.solve.budget import Budget
from synth.measure.cuts import integer_bandwidth
from synth.solve.problem import FEASIBLE, OPTIMAL, ProblemBuilder

MAX_TERMS = 8_000_000  # (item, candidate) pairs over all groups of one program: the size guard


@dataclass(frozen=True)
class Delivery:
    """The transfers by which each rank receives, in forward time: for rank v, `sender[v]` and the
    real transfer (a pair of the TransferGraph) each uses; reversed for reductions."""

    sender: list[np.ndarray]
    pair: list[np.ndarray]


@dataclass
class FrontPoint:
    steps: int
    rounds: int | None  # the least total rounds found (None: none found in time)
    status: str  # optimal | feasible | timeout | infeasible
    seconds: float
    choice: object = None  # (step, pair, block, receiver) per delivery of the solution, or a function making them
    invariant_status: str = ""  # symmetric synthesis: the program's status among translation-invariant schedules
    method: str = "program"  # program | trees (balanced breadth-first) | dissemination (synth.synthesis.dissemination)
    graph: object = None  # the TransferGraph of its pairs when not the plan's
    among: str = ""  # an all-to-all's point: the schedules its status is about (synth.synthesis.methods.phases)
    reach: str = ""  # the pairs its transfers join where not a TransferGraph's (a generated algorithm's own)
    blocks: int = 0  # its blocks where not its part's (a per-layer point with every block split in shares)
    source: str = ""  # the registered synthesis method that made it (synth.synthesis.methods)
    chunks: int = 0  # a half point's chunks (blocks per rank, or in all where rooted): its plan's


def delivery(graph, reverse: bool) -> Delivery:
    """Forward-time deliveries: along the pairs, or (reverse) along the reversed pairs."""
    key = graph.src if reverse else graph.dst
    other = graph.dst if reverse else graph.src
    order = np.argsort(key, kind="stable")  # per rank its pairs in pair order (a scan per rank is P x pairs)
    bounds = np.searchsorted(key[order], np.arange(graph.ranks + 1))
    pairs = [order[bounds[v]:bounds[v + 1]] for v in range(graph.ranks)]
    return Delivery([other[mine] for mine in pairs], pairs)


@dataclass(frozen=True)
class SpreadProblem:
    """The items of a spreading collective and the numbering of their candidates."""

    sources: np.ndarray  # per block, its source rank
    item_block: np.ndarray
    item_rank: np.ndarray

    @staticmethod
    def of(sources: np.ndarray, ranks: int) -> "SpreadProblem":
        blocks = np.repeat(np.arange(len(sources)), ranks)
        rank = np.tile(np.arange(ranks), len(sources))
        keep = rank != sources[blocks]
        return SpreadProblem(sources, blocks[keep], rank[keep])

    @functools.cached_property
    def item_of(self) -> dict:
        """(block, rank) -> item: the program's lookups, made when a program is built (a dict of
        every delivery is gigabytes at thousands of ranks, where no program is)."""
        return {(b, v): i for i, (b, v) in enumerate(zip(self.item_block.tolist(), self.item_rank.tolist()))}


@dataclass(frozen=True)
class LoadClasses:
    """What a capacity group counts: channels in classes (each channel its own, or the orbits of a
    symmetry, synth.synthesis.symmetry), a crossing of class k counted `repeat[k]` times against
    `bandwidth[k]` x z_s."""

    of_channel: np.ndarray  # (channels,) class
    repeat: np.ndarray  # (classes,)
    bandwidth: np.ndarray  # (classes,) integers

    @staticmethod
    def channels(bandwidth: np.ndarray) -> "LoadClasses":
        return LoadClasses(np.arange(len(bandwidth)), np.ones(len(bandwidth), dtype=np.int64), bandwidth)

    @staticmethod
    def orbits(symmetry, bandwidth: np.ndarray) -> "LoadClasses":
        first = np.unique(symmetry.channel_class, return_index=True)[1]
        return LoadClasses(symmetry.channel_class, symmetry.repeat(), bandwidth[first])


def build_program(spread: SpreadProblem, route: Delivery, graph, classes: LoadClasses, steps: int):
    """The choice problem: per item, candidate k = s x (senders of its rank) + j."""
    degree = np.array([len(s) for s in route.sender], dtype=np.int64)
    num_candidates = steps * degree[spread.item_rank]
    # per candidate (s, u -> v): its precedence group holds it and the (S - s) x deg(u) later candidates of (b, u)
    top = int(degree.max(initial=0))
    terms = int((degree[spread.item_rank] * (steps + top * steps * (steps + 1) // 2)).sum())
    if terms > MAX_TERMS:
        raise SynthError(f"the exact program of {len(spread.item_block):,} deliveries over {steps} steps has about "
                         f"{terms:,} terms, more than {MAX_TERMS:,}: use fewer ranks or chunks")
    builder = ProblemBuilder(num_candidates)
    load_items, load_candidates, load_keys = [], [], []
    channels = len(classes.repeat)
    for i, (b, v) in enumerate(zip(spread.item_block.tolist(), spread.item_rank.tolist())):
        senders, pairs = route.sender[v], route.pair[v]
        d = len(senders)
        for j, u in enumerate(senders.tolist()):
            path = classes.of_channel[graph.paths.path(int(pairs[j]))]
            path = np.repeat(path, classes.repeat[path])
            for s in range(steps):
                k = s * d + j
                if path.size:
                    load_items.append(np.full(path.size, i))
                    load_candidates.append(np.full(path.size, k))
                    load_keys.append(s * channels + path)
                if u == spread.sources[b]:
                    continue
                holder = spread.item_of[(b, u)]
                later = np.arange(s * degree[u], steps * degree[u])
                builder.add(np.concatenate([[i], np.full(len(later), holder)]), np.concatenate([[k], later]), upper=1)
    if load_keys:
        items, candidates, keys = (np.concatenate(a) for a in (load_items, load_candidates, load_keys))
        order = np.argsort(keys, kind="stable")
        items, candidates, keys = items[order], candidates[order], keys[order]
        starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
        ends = np.append(starts[1:], len(keys))
        for a, e in zip(starts.tolist(), ends.tolist()):
            s, c = divmod(int(keys[a]), channels)
            builder.add(items[a:e], candidates[a:e], capped=True, z=s, coef=int(classes.bandwidth[c]))
    # a class carries at most every delivery, each crossing it at most its path's length of times, repeated
    longest = int(np.diff(graph.paths.offsets).max(initial=1))
    return builder.build(z_upper=len(spread.item_block) * max(1, longest) * int(classes.repeat.max(initial=1)))


def balanced_trees(spread: SpreadProblem, route: Delivery, graph, classes: LoadClasses) -> np.ndarray:
    """Breadth-first spreading trees with their loads balanced greedily: rank v receives block b in
    step dist(source, v) - 1 (so the steps are the farthest distance, feasible for any step count
    from there up) from a sender one step nearer; step by step, the deliveries with the fewest such
    senders first, each from the sender whose path leaves the step's busiest channel class least
    loaded (loads in the program's units: crossings x repeat / bandwidth; ties: the lower sender).
    The program's starting point, and the schedule itself where the program is too large."""
    far = _levels(route, np.unique(spread.sources), graph.ranks)
    source = spread.sources[spread.item_block]
    level = np.array([far[int(r)][v] for r, v in zip(source.tolist(), spread.item_rank.tolist())], dtype=np.int64)
    weight = classes.repeat / classes.bandwidth  # a crossing's share of a step's rounds
    paths = [classes.of_channel[graph.paths.path(k)] for k in range(graph.num_pairs)]
    choice = np.empty(len(spread.item_block), dtype=np.int64)
    for s in range(int(level.max(initial=0))):
        mine = np.flatnonzero(level == s + 1)
        options = []
        for i in mine.tolist():
            v, r = int(spread.item_rank[i]), int(source[i])
            near = np.flatnonzero(far[r][route.sender[v]] == s)
            options.append(near)
        option_paths = [[paths[int(route.pair[int(spread.item_rank[i])][j])] for j in near.tolist()]
                        for i, near in zip(mine.tolist(), options)]
        picked = _flow_balanced(option_paths, classes)
        if picked is None:
            picked = _greedy_balanced(option_paths, weight)
        for i, near, k in zip(mine.tolist(), options, picked):
            choice[i] = s * len(route.sender[int(spread.item_rank[i])]) + int(near[k])
    return choice


def _greedy_balanced(option_paths: list[list[np.ndarray]], weight: np.ndarray) -> list[int]:
    """Per delivery an option, the fewest-options first, each leaving the busiest class least loaded."""
    load = np.zeros(len(weight))
    picked = [0] * len(option_paths)
    for t in sorted(range(len(option_paths)), key=lambda t: (len(option_paths[t]), t)):
        best_key = None
        for k, path in enumerate(option_paths[t]):
            after = load[path] + weight[path]
            key = (float(after.max(initial=0.0)), float(after.sum()))
            if best_key is None or key < best_key:
                picked[t], best_key = k, key
        path = option_paths[t][picked[t]]
        np.add.at(load, path, weight[path])
    return picked


def _flow_balanced(option_paths: list[list[np.ndarray]], classes: LoadClasses) -> list[int] | None:
    """Per delivery an option, the step's rounds least, where every delivery's options differ in
    one class crossing only (the rest, e.g. the sender's and receiver's terminal links, common to
    all): then a max-flow (deliveries -> the class each option adds -> sink, a class's capacity the
    crossings it takes in T rounds) decides whether T rounds suffice, and a bisection finds the
    least T. None where the options differ otherwise (the greedy balances those)."""
    import networkx as nx

    common = np.zeros(len(classes.repeat), dtype=np.int64)
    varying = []
    for paths in option_paths:
        counts = [np.bincount(p, minlength=len(classes.repeat)) for p in paths]
        shared = np.minimum.reduce(counts)
        extra = [np.flatnonzero(c - shared) for c in counts]
        if len(paths) > 1 and any(len(e) != 1 or (c - shared)[e].sum() != 1 for e, c in zip(extra, counts)):
            return None
        common += shared
        varying.append([int(e[0]) for e in extra] if len(paths) > 1 else [])

    SOURCE, SINK, classes_at = 0, 1, 2 + len(varying)

    def capacity(rounds: int) -> np.ndarray:  # crossings a class takes in `rounds` rounds
        return (rounds * classes.bandwidth) // classes.repeat

    def fits(rounds: int) -> dict | None:
        room = capacity(rounds) - common
        if (room < 0).any():
            return None
        # integer nodes (source 0, sink 1, delivery t at 2 + t, class c after them): a string's hash
        # changes from process to process, and with it the flow networkx finds among equal ones, so
        # the trees (and the files) of two runs differed
        graph = nx.DiGraph()
        for t, options in enumerate(varying):
            if options:
                graph.add_edge(SOURCE, 2 + t, capacity=1)
                for c in sorted(set(options)):
                    graph.add_edge(2 + t, classes_at + c, capacity=1)
                    graph.add_edge(classes_at + c, SINK, capacity=int(room[c]))
        if graph.number_of_nodes() == 0:
            return {}
        value, flow = nx.maximum_flow(graph, SOURCE, SINK)
        return flow if value == sum(1 for o in varying if o) else None

    low = int(max(1, (-(-(common * classes.repeat) // classes.bandwidth)).max(initial=1)))
    high = low
    while fits(high) is None:
        high *= 2
    while low < high:
        middle = (low + high) // 2
        if fits(middle) is None:
            low = middle + 1
        else:
            high = middle
    flow = fits(low)
    picked = []
    for t, options in enumerate(varying):
        if not options:
            picked.append(0)
            continue
        sent = next(c for c, f in flow[2 + t].items() if f > 0) - classes_at
        picked.append(options.index(sent))
    return picked


def _levels(route: Delivery, sources: np.ndarray, ranks: int) -> dict[int, np.ndarray]:
    """Per source, the steps from it to every rank along the deliveries (breadth-first, in
    compiled code: scipy's unweighted shortest paths; -1: unreachable)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    receiver = np.concatenate([np.full(len(s), v, dtype=np.int64) for v, s in enumerate(route.sender)])
    sender = np.concatenate([np.asarray(s, dtype=np.int64) for s in route.sender])
    arcs = csr_matrix((np.ones(len(sender)), (sender, receiver)), shape=(ranks, ranks))
    found = shortest_path(arcs, directed=True, unweighted=True, indices=np.asarray(sources, dtype=np.int64))
    found = np.where(np.isinf(found), -1, found).astype(np.int64)
    return {int(r): row for r, row in zip(np.asarray(sources).tolist(), found)}


def decode(spread: SpreadProblem, route: Delivery, choice: np.ndarray) -> tuple:
    """(step, pair, block, receiver) per delivery of a solution."""
    degree = np.array([len(s) for s in route.sender], dtype=np.int64)
    d = degree[spread.item_rank]
    step, j = choice // d, choice % d
    pair = np.array([route.pair[v][k] for v, k in zip(spread.item_rank.tolist(), j.tolist())], dtype=np.int64)
    return step, pair, spread.item_block.copy(), spread.item_rank.copy()


def synthesize_spread(spread: SpreadProblem, route: Delivery, graph, network, least: int, *, time_limit: float,
                      solver: str = "cpsat", rounds_bound: int = 0, extra_steps: int = 4, threads: int = 1,
                      symmetry=None, program: bool = True, say=lambda text: None, ledger=None) -> list[FrontPoint]:
    """The Pareto front of steps against total rounds: from `least` steps (the step bound, which
    is reached: with rounds unlimited every holder sends to every neighbour in each step) up, the
    least total rounds of each step count, until the rounds reach `rounds_bound` (the bandwidth
    bound), stop falling, or the time is spent: `time_limit` wall-clock seconds for all the step
    counts' programs, spent as CP-SAT's deterministic work (synth.solve.budget), and charged to
    `ledger` too (a Budget of several such fronts) where given.

    The balanced breadth-first trees come first: where they meet the bandwidth bound they are
    optimal and no program is solved; where the program would exceed the size guard they are the
    one point of the front (feasible, with their gap), so a network of thousands of ranks still
    gets a schedule; without `program` they are the front's one point (the trees method)."""
    bandwidth = integer_bandwidth(network)
    classes = LoadClasses.channels(bandwidth) if symmetry is None else LoadClasses.orbits(symmetry, bandwidth)
    trees = balanced_trees(spread, route, graph, classes)
    first = max(1, least)
    rounds = tree_rounds(spread, route, graph, classes, trees, first)
    say(f"{first} steps: balanced breadth-first trees take {rounds} rounds")
    if rounds <= rounds_bound or not program:
        return [FrontPoint(first, rounds, OPTIMAL if rounds <= rounds_bound else FEASIBLE, 0.0,
                           decode(spread, route, trees), method="trees")]
    # `time_limit` is wall-clock seconds for the step counts' programs: each gets an equal share and
    # what the earlier ones left, as CP-SAT's deterministic work (synth.solve.budget), so the same
    # inputs give the same front, byte for byte; a step count proven stops at its proof.
    budget = Budget(time_limit, 1 + extra_steps, ledger=ledger)
    front: list[FrontPoint] = []
    best = None
    for steps in range(first, first + 1 + extra_steps):
        share = budget.share()  # before the building, which its clock counts
        try:
            problem = build_program(spread, route, graph, classes, steps)
        except SynthError as exc:
            if steps > first:
                break
            say(f"{exc}: the balanced trees are the schedule")
            return [FrontPoint(first, rounds, FEASIBLE, 0.0, decode(spread, route, trees), method="trees")]
        result = solve(problem, solver, threads=threads, hint=trees, share=share)
        budget.spend(share, result.work)
        if share.clock_ended():
            say(f"{steps} steps: stopped by the clock before its work (a slow machine: a rerun may differ)")
        if steps == first and (not result.solved or result.objective > rounds):
            # the trees are a schedule of these steps all the same, and the better one
            say(f"{steps} steps: {result.status} ({result.seconds:.1f} s); the balanced trees stand")
            front.append(FrontPoint(steps, rounds, FEASIBLE, result.seconds, decode(spread, route, trees), method="trees"))
            best = rounds
            continue
        if not result.solved:
            say(f"{steps} steps: {result.status} ({result.seconds:.1f} s)")
            front.append(FrontPoint(steps, None, result.status, result.seconds))
            break
        found = int(result.objective)
        say(f"{steps} steps: {found} rounds, {result.status} ({result.seconds:.1f} s)")
        front.append(FrontPoint(steps, found, result.status, result.seconds, decode(spread, route, result.choice)))
        if found <= rounds_bound or (best is not None and found >= best):
            break
        best = found
    return front


def tree_rounds(spread: SpreadProblem, route: Delivery, graph, classes: LoadClasses, choice: np.ndarray,
                steps: int) -> int:
    """The program's objective of a choice, counted directly (no program built): per step, the
    busiest channel class's crossings x repeat over its bandwidth, rounded up, summed."""
    step, pair, _, _ = decode(spread, route, choice)
    return delivery_rounds(graph, classes, step, pair, steps)


def delivery_rounds(graph, classes: LoadClasses, step: np.ndarray, pair: np.ndarray, steps: int) -> int:
    """Per step, the busiest channel class's crossings x repeat over its bandwidth, rounded up,
    summed: the rounds of deliveries (step, pair) along `graph`'s paths."""
    lengths = np.diff(graph.paths.offsets)[pair]
    channel = classes.of_channel[graph.paths.select(pair).channels]
    keys = np.repeat(step, lengths) * len(classes.repeat) + channel
    unique, counts = np.unique(keys, return_counts=True)
    cls = unique % len(classes.repeat)
    needed = -(-(counts * classes.repeat[cls]) // classes.bandwidth[cls])
    per_step = np.zeros(steps, dtype=np.int64)
    np.maximum.at(per_step, unique // len(classes.repeat), needed)
    return int(per_step.sum())


def one_round_steps(front: list[FrontPoint]) -> tuple[int | None, str]:
    """The least steps of one round each (a point whose rounds equal its steps), proven least when
    every point before it is optimal with more rounds than steps."""
    for k, point in enumerate(front):
        if point.rounds is not None and point.rounds <= point.steps:
            proven = all(p.status == OPTIMAL for p in front[:k + 1])
            return point.steps, OPTIMAL if proven else FEASIBLE
    return None, "not on the front"


def spread_schedule(collective: str, graph, spec: str, blocks: int, block_bytes: int, deliveries: tuple, steps: int,
                    reverse: bool, root: int | None) -> Schedule:
    """The schedule of a solution: per step, one transfer per (sender, receiver) with its blocks;
    reversed (steps backwards, pairs turned around, reductions) for reduce-scatter and reduce."""
    step, pair, block, _ = deliveries
    builder = ScheduleBuilder(collective, "synthesized", spec, graph.ranks, blocks, block_bytes, root=root,
                              ranks_per_node=graph.ranks_per_node)
    # One sort by (step, pair, block) for all steps (a key of one integer: P (P - 1) deliveries per chunk at
    # thousands of ranks), then the steps as slices of it.
    key = (np.asarray(step, dtype=np.int64) * max(1, graph.num_pairs) + pair) * blocks + block
    by = np.argsort(key, kind="stable")
    sorted_step = np.asarray(step)[by]
    bounds = np.searchsorted(sorted_step, np.arange(steps + 1))
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    for s in order:
        mine = by[bounds[s]:bounds[s + 1]]
        if not len(mine):
            continue
        pairs, ids = pair[mine], block[mine]
        unique, first = np.unique(pairs, return_index=True)
        counts = np.diff(np.append(first, len(pairs)))
        src, dst = graph.src[unique], graph.dst[unique]
        builder.add_step(src, dst, (counts, ids), op=REDUCE if reverse else COPY)
    return builder.build()


def rounds_lower_bound(per_byte: float, blocks: int) -> int:
    """The bandwidth bound in rounds of one block per unit of bandwidth (the program's z units)."""
    return max(1, math.ceil(per_byte * blocks - 1e-9))


def straight_point(spread: SpreadProblem, graph, network, reverse: bool, rounds_bound: int) -> FrontPoint:
    """Every block straight from its source to every rank in one step (reversed: every partial to
    the block's owner), over `graph`'s pairs (every pair): its rounds are the busiest channel's
    blocks. Made with arrays: each delivery has one sender, its block's source."""
    source = spread.sources[spread.item_block]
    a, b = (spread.item_rank, source) if reverse else (source, spread.item_rank)
    pair = graph.pair_index(a, b)
    step = np.zeros(len(pair), dtype=np.int64)
    rounds = delivery_rounds(graph, LoadClasses.channels(integer_bandwidth(network)), step, pair, 1)
    return FrontPoint(1, rounds, OPTIMAL if rounds <= rounds_bound else FEASIBLE, 0.0,
                      (step, pair, spread.item_block.copy(), spread.item_rank.copy()), method="straight", graph=graph)
