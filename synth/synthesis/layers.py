"""Per-layer synthesis combined by dynamic programming (issue 24; Prisacari20 ch.4's hierarchical
decomposition applied to allgather and reduce-scatter).

A hierarchical network numbers its ranks in mixed radix over its layers (Topology.hierarchy, with
the Q ranks of a node as the first layer): a dragonfly's terminals of a router, routers of a group
and groups; a torus's or HyperX's dimensions. An allgather then splits into one allgather per
layer, in some order: in the stage of layer l every row of ranks that differ only in coordinate l
runs an allgather among its H_l members, each member's block being everything it holds (the
blocks of the ranks that differ from it only in the layers done before). A layer's schedule is
one of LAYER_ALGORITHMS on H_l ranks (sending straight, the ring, Bruck's dissemination, recursive
doubling where H_l is a power of two), embedded in every row at once.

The cost model makes the choice a dynamic program: a stage's transfers are the same whatever was
done before, only each carries prod(H_d, d done) times the blocks, so its alpha terms (message
starts at the busiest port, per step) are fixed and its beta terms (busiest channel's bytes over
bandwidth, per step) scale by that product, and the stages' steps add up. Each (layer, algorithm)
is priced once, along the paths of every rank pair on the real network (all rows at once: their
contention counted), and the program over subsets D of the layers keeps, per D, the Pareto set of
(alpha terms, beta terms) of the orders and algorithms that complete D. The Pareto set of all the
layers holds, for every message size, the least time of any order and choice of layer algorithms
(alpha x A + beta x n x B is least at a Pareto point). What that covers: these layer orders and
these layer algorithms, each stage a whole layer, one after the other.

Splits (Concurrent): every block split into shares run at once, a step being every share's step
of that number: rotations of the leading stages (a torus's x then y with y then x), both ways
round (each layer's members numbered backwards: the links a one-way ring leaves idle), and
pipelined stages. Their merged steps' busiest port and channel are the shares' together, not a
sum, so each is priced whole on the network (synth.synthesis.methods.per_layer), made from the
program's Pareto points (rotations and pipelines) and from one algorithm on every layer
(`uniform`, rotations); the choice per size is the least over the program's front and these
splits, not over every split of every order.

A reduce-scatter is the allgather of the reverse order run backwards (synth.synthesis.exact.
spread_schedule reverses it), priced on the reversed stages.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError

LAYER_ALGORITHMS = ("straight", "ring", "bruck", "rd-b")


def layer_sizes(topology, ranks_per_node: int, ranks: int) -> tuple[int, ...] | None:
    """H_1..H_L (the first the fastest-varying rank coordinate), layers of one dropped; None where
    the family has no hierarchy or it has fewer than two layers."""
    hierarchy = topology.hierarchy()
    if hierarchy is None:
        return None
    sizes = tuple(h for h in ((ranks_per_node,) + tuple(hierarchy)) if h > 1)
    if len(sizes) < 2 or math.prod(sizes) != ranks:
        return None
    return sizes


def layer_steps(algorithm: str, members: int) -> list[list[tuple[int, int, list[int]]]] | None:
    """An allgather among `members` ranks (block j at member j) as steps of (sender, receiver,
    blocks); None where the algorithm does not take that many."""
    if algorithm == "straight":
        return [[(u, v, [u]) for u in range(members) for v in range(members) if u != v]]
    from synth.collectives.algorithms import ALGORITHMS, Request

    request = Request("allgather", members, members, 1, f"torus:{members}", 0, (members,))
    if ALGORITHMS[algorithm].refusal(request) is not None:
        return None
    try:
        schedule = ALGORITHMS[algorithm].generate(request).explicit()
    except SynthError:
        return None
    steps = []
    for s in range(schedule.num_steps):
        transfers = []
        for t in range(int(schedule.step_ptr[s]), int(schedule.step_ptr[s + 1])):
            blocks = schedule.block_ids[schedule.block_ptr[t]:schedule.block_ptr[t + 1]]
            transfers.append((int(schedule.src[t]), int(schedule.dst[t]), sorted(int(b) % members for b in blocks)))
        steps.append(transfers)
    return steps


@dataclass(frozen=True)
class Stage:
    layer: int  # index into the sizes
    algorithm: str
    steps: list  # layer_steps


def stage_deliveries(sizes: tuple[int, ...], stage: Stage, done: tuple[int, ...], chunks,
                     first_step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(step, sender, receiver, block) of every block moved by `stage` after the layers `done`:
    in every row of the layer at once, a member's layer block is its holdings, the blocks of the
    ranks differing from it only in the done layers (`chunks`: every chunk of them, a count, or
    the chunk indices listed; block b is chunk b // ranks of rank b mod ranks)."""
    chunk_ids = np.arange(chunks, dtype=np.int64) if np.ndim(chunks) == 0 else np.asarray(chunks, dtype=np.int64)
    ranks = math.prod(sizes)
    stride = np.array([math.prod(sizes[:k]) for k in range(len(sizes))], dtype=np.int64)
    rank = np.arange(ranks, dtype=np.int64)
    coordinate = (rank[:, None] // stride[None, :]) % np.asarray(sizes, dtype=np.int64)[None, :]
    layer = stage.layer
    base = rank[coordinate[:, layer] == 0]  # one rank per row: member j is base + j stride
    # the holdings of a rank: itself with the done coordinates set to every value
    offsets = np.zeros(1, dtype=np.int64)
    for d in done:
        offsets = (offsets[:, None] + np.arange(sizes[d], dtype=np.int64)[None, :] * stride[d]).ravel()
    steps, senders, receivers, blocks = [], [], [], []
    for s, transfers in enumerate(stage.steps):
        for u, v, layer_blocks in transfers:
            src = base + u * stride[layer]
            dst = base + v * stride[layer]
            for j in layer_blocks:
                owner = base + j * stride[layer]
                zero = owner - sum(coordinate[owner, d] * stride[d] for d in done)
                held = (zero[:, None] + offsets[None, :]).ravel()  # (rows x holdings)
                held = (held[:, None] + chunk_ids[None, :] * ranks).ravel()
                per_row = len(offsets) * len(chunk_ids)
                steps.append(np.full(len(held), first_step + s, dtype=np.int64))
                senders.append(np.repeat(src, per_row))
                receivers.append(np.repeat(dst, per_row))
                blocks.append(held)
    join = (lambda parts: np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64))
    return join(steps), join(senders), join(receivers), join(blocks)


@dataclass(frozen=True)
class Combination:
    stages: tuple[Stage, ...]
    alphas: float  # the alpha terms summed over the steps
    betas: float  # the busiest channels' bytes over bandwidth summed, at REFERENCE_BYTES per block

    @property
    def steps(self) -> int:
        return sum(len(stage.steps) for stage in self.stages)

    shares = 1  # its blocks are not split (Concurrent's are)

    def label(self, sizes: tuple[int, ...], first: int = 1) -> str:
        """Its stages in order (layer `first` the fastest-varying coordinate of `sizes`)."""
        return "layers " + " then ".join(f"{s.layer + first} ({sizes[s.layer]}) by {s.algorithm}" for s in self.stages)

    def deliveries(self, sizes: tuple[int, ...], chunks: int):
        """(step, sender, receiver, block) of the whole allgather."""
        return _lane_deliveries(sizes, self.stages, _back_to_back(self.stages), np.arange(chunks))


def _back_to_back(stages) -> tuple[int, ...]:
    """The first step of each stage when each starts as the one before ends."""
    return tuple(itertools.accumulate((len(stage.steps) for stage in stages[:-1]), initial=0))


def _lane_deliveries(sizes, stages, starts, chunk_ids):
    parts, done = [], ()
    for stage, start in zip(stages, starts):
        parts.append(stage_deliveries(sizes, stage, done, chunk_ids, start))
        done += (stage.layer,)
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(4))


@dataclass(frozen=True)
class Lane:
    """A share of every block going through its own order of stages, each from a given step."""

    share: int  # the lane moves chunks share, share + shares, ... of the split blocks
    stages: tuple[Stage, ...]
    starts: tuple[int, ...]


@dataclass(frozen=True)
class Concurrent:
    """A combination with every block split into `shares` chunks, the lanes of chunks running at
    once (steps merged: a step is every lane's step of that number): the chunk split between layer
    orders (`rotated`) or pipelined stages (`pipelined`). Stages of different layers use different
    links, and where the ports differ too (a node that is its own router) their alpha terms
    overlap as well: the merged steps cost less than the stages one after the other. Its cost is
    not the stages' sum (the busiest port and channel of a merged step are the lanes' together),
    so it is priced whole, on the network."""

    base: Combination
    how: str
    shares: int
    lanes: tuple[Lane, ...]

    @property
    def steps(self) -> int:
        return max(start + len(stage.steps) for lane in self.lanes for stage, start in zip(lane.stages, lane.starts))

    def label(self, sizes: tuple[int, ...], first: int = 1) -> str:
        return f"{self.base.label(sizes, first)}, {self.how}"

    def deliveries(self, sizes: tuple[int, ...], chunks: int):
        """(step, sender, receiver, block) of the whole allgather, each of the `chunks` blocks of
        a rank split into `shares` (block b: chunk b // ranks of rank b mod ranks)."""
        total = chunks * self.shares
        parts = [_lane_deliveries(sizes, lane.stages, lane.starts, np.arange(lane.share, total, self.shares))
                 for lane in self.lanes]
        return tuple(np.concatenate([p[k] for p in parts]) for k in range(4))


def mirrored(stage: Stage, members: int) -> Stage:
    """The stage with its members numbered backwards (member j as -j mod H): a ring the other way
    round, a dissemination to the other side; on a torus or a HyperX row the other links."""
    def flip(j: int) -> int:
        return -j % members
    return Stage(stage.layer, stage.algorithm,  # transfers sorted, as layer_steps lists them: a stage the same
                 [sorted((flip(u), flip(v), sorted(flip(j) for j in blocks)) for u, v, blocks in step)
                  for step in stage.steps])


def rotated(combination: Combination, sizes: tuple[int, ...], leading: int, both_ways: bool = False) -> Concurrent | None:
    """The chunk split between layer orders: the first `leading` stages rotated, r shares, share
    g taking them from the g-th on, then the first ones (each of those layers busy from the first
    step, each with a share), then the other stages in order (the ranks of a node last: their
    copies through memory, each block entering a node once); `both_ways`: 2r shares, the second r
    with every stage mirrored (the links a one-way ring or an uneven route leaves idle). None with
    fewer than two stages to rotate (and, both ways, where no stage changes when mirrored)."""
    stages = combination.stages
    if not 2 <= leading <= len(stages):
        return None
    head, tail = stages[:leading], stages[leading:]
    orders = [head[g:] + head[:g] + tail for g in range(leading)]
    if both_ways:
        flipped = tuple(mirrored(stage, sizes[stage.layer]) for stage in stages)
        if flipped == stages:
            return None
        orders += [flipped[g:leading] + flipped[:g] + flipped[leading:] for g in range(leading)]
    lanes = tuple(Lane(g, order, _back_to_back(order)) for g, order in enumerate(orders))
    which = "the order" if leading == len(stages) else f"the first {leading} stages"
    how = f"1/{len(lanes)} of each block in each rotation of {which}" + (", both ways round" if both_ways else "")
    return Concurrent(combination, how, len(lanes), lanes)


def uniform(sizes: tuple[int, ...], memory_layer: bool) -> list[Combination]:
    """Per layer algorithm, the combination taking it on every layer where it applies (else
    straight), the layers in order, the ranks of a node (`memory_layer`: layer 0) last: the bases
    of the concurrent splits besides the sequential front (a split's best order is not the
    sequential one's, where memory copies are free and a node's blocks should cross the network
    once)."""
    layers = list(range(1, len(sizes))) + [0] if memory_layer else list(range(len(sizes)))
    out, seen = [], set()
    for algorithm in LAYER_ALGORITHMS:
        chosen = [algorithm if layer_steps(algorithm, sizes[layer]) is not None else "straight" for layer in layers]
        if tuple(chosen) not in seen:
            seen.add(tuple(chosen))
            out.append(Combination(tuple(Stage(layer, a, layer_steps(a, sizes[layer])) for layer, a in zip(layers, chosen)),
                                   math.nan, math.nan))
    return out


def pipelined(combination: Combination, pieces: int) -> Concurrent | None:
    """Pipelined stages: `pieces` shares in the same order, share i starting each stage i x D steps
    later (D the longest stage: a share's stage never meets the next share's same stage), so the
    stages of different layers overlap; None with one stage."""
    stages = combination.stages
    if len(stages) < 2 or pieces < 2:
        return None
    delay = max(len(stage.steps) for stage in stages)
    first = _back_to_back(stages)
    lanes = tuple(Lane(i, stages, tuple(start + i * delay for start in first)) for i in range(pieces))
    return Concurrent(combination, f"pipelined in {pieces} pieces", pieces, lanes)


@dataclass(frozen=True)
class Leaders:
    """With Q ranks a node: every rank's blocks gathered to its node's first rank, a combination
    over the network's layers among those leaders only (a node's Q ranks' blocks its chunks: one
    message a port where all Q ranks would start theirs at the node's shared port), then a
    binomial broadcast in each node (ceil log2 Q steps of one copy a rank). The gather: `direct`,
    one step, each rank one copy at its own memory port; or `binomial`, ceil log2 Q steps, member i
    passing what it holds to i - 2^j at step j where i mod 2^(j+1) = 2^j: run backwards (a
    reduce-scatter) the direct gather is the leader scattering Q - 1 copies at its one port, the
    binomial one log2 Q. The small-message end with Q > 1: message starts of one rank a node."""

    network: Combination | Concurrent  # over the layers without the node's (sizes[1:])
    q: int
    gather: str = "direct"  # or binomial

    @property
    def shares(self) -> int:
        return self.network.shares

    @property
    def gather_steps(self) -> int:
        return 1 if self.gather == "direct" else (self.q - 1).bit_length()

    @property
    def steps(self) -> int:
        return self.gather_steps + self.network.steps + (self.q - 1).bit_length()

    def label(self, sizes: tuple[int, ...]) -> str:
        among = self.network.label(sizes[1:], first=2).removeprefix("layers ")
        how = "" if self.gather == "direct" else " binomially"
        return f"layers gathered{how} to a leader a node, then {among}, then a binomial broadcast in the node"

    def deliveries(self, sizes: tuple[int, ...], chunks: int):
        """(step, sender, receiver, block): block b is chunk b // P of rank b mod P, rank m Q + i the
        i-th of node m; the leaders' chunk c of node m is rank m Q + c mod Q's chunk c // Q (each of
        the `chunks` split in the network's shares)."""
        q, nodes = self.q, math.prod(sizes[1:])
        ranks = nodes * q
        parts = [self.network_deliveries(sizes, chunks, self.gather_steps)]
        chunks *= self.shares
        chunk = np.arange(chunks, dtype=np.int64)
        node = np.arange(nodes, dtype=np.int64) * q
        for i in range(1, q):  # the gather: member i's blocks and those it gathered, once, to a member below
            if self.gather == "direct":
                step, to, held = 0, 0, [i]
            else:
                step = (i & -i).bit_length() - 1  # i's lowest set bit j: it sends at step j to i - 2^j
                to, held = i - (1 << step), range(i, min(i + (1 << step), q))
            rank = (node[:, None] + np.asarray(held, dtype=np.int64)[None, :]).ravel()
            blocks = (rank[:, None] + chunk[None, :] * ranks).ravel()
            sender = np.repeat(node + i, len(held) * chunks)
            parts.append((np.full(len(blocks), step, dtype=np.int64), sender, sender - i + to, blocks))
        # the broadcast: member i receives from i - 2^floor(log2 i) at that step every block it does not hold
        # (its own; after a binomial gather also those of the members it gathered, i + 1 .. i + 2^j - 1)
        everything = np.arange(ranks * chunks, dtype=np.int64)
        owner = everything % ranks
        first = self.gather_steps + self.network.steps
        for i in range(1, q):
            top = 1 << (i.bit_length() - 1)
            span = 1 if self.gather == "direct" else 1 << ((i & -i).bit_length() - 1)
            to = np.arange(nodes, dtype=np.int64) * q + i
            lacks = ~((owner[None, :] >= to[:, None]) & (owner[None, :] < to[:, None] - i + min(i + span, q)))
            count = lacks.sum(axis=1)
            parts.append((np.full(int(count.sum()), first + i.bit_length() - 1, dtype=np.int64),
                          np.repeat(to - top, count), np.repeat(to, count), np.nonzero(lacks)[1]))
        return tuple(np.concatenate([p[k] for p in parts]) for k in range(4))

    def network_deliveries(self, sizes: tuple[int, ...], chunks: int, first_step: int):
        """The network stages' deliveries among the leaders, from `first_step`."""
        q, nodes = self.q, math.prod(sizes[1:])
        step, sender, receiver, block = self.network.deliveries(sizes[1:], q * chunks)
        node, c = block % nodes, block // nodes
        return step + first_step, sender * q, receiver * q, node * q + c % q + (c // q) * nodes * q


def pareto_program(sizes: tuple[int, ...], cost) -> list[Combination]:
    """The dynamic program over subsets of the layers: per subset D, the Pareto set (alpha terms,
    beta terms) of the orders and layer algorithms completing D; `cost(stage)` gives a Stage's
    (alpha terms, beta terms) after no other layer (one rank's blocks per member). Every Pareto
    point is kept (a few: at most the orders times the choices)."""
    layers = len(sizes)
    stages = {}
    for layer in range(layers):
        for algorithm in LAYER_ALGORITHMS:
            steps = layer_steps(algorithm, sizes[layer])
            if steps is not None:
                stages[layer, algorithm] = (Stage(layer, algorithm, steps), *cost(Stage(layer, algorithm, steps)))
    best: dict[int, list[Combination]] = {0: [Combination((), 0.0, 0.0)]}
    for mask in range(1 << layers):  # subsets in increasing order: each after every subset of it
        best[mask] = _pareto(best.get(mask, []))
        for combination in best[mask]:
            scale = math.prod(sizes[d] for d in range(layers) if mask >> d & 1)
            for (layer, _), (stage, alphas, betas) in stages.items():
                if mask >> layer & 1:
                    continue
                grown = Combination(combination.stages + (stage,), combination.alphas + alphas,
                                    combination.betas + betas * scale)
                best.setdefault(mask | 1 << layer, []).append(grown)
    return best[(1 << layers) - 1]


def _pareto(found: list[Combination]) -> list[Combination]:
    """The points no other beats in both alpha and beta terms (ties: the first found), fewest
    alpha terms first."""
    order = sorted(range(len(found)), key=lambda i: (found[i].alphas, found[i].betas, i))
    kept, least = [], math.inf
    for i in order:
        if found[i].betas < least * (1 - 1e-12):
            kept.append(found[i])
            least = found[i].betas
    return kept
