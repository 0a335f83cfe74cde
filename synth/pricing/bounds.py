"""The time bound of any schedule of a collective under synth's cost model (synth.pricing.alphabeta):
no schedule the verifier accepts costs less, so no printed estimate falls below it. One module for
every command that prints one (schedule, compare, synthesize, report, simulate); the routing
contention bounds are synth.measure.contention_bounds.

A bound is a TimeBound: message starts (alpha terms) and bytes over bandwidth on the steps'
busiest channels (beta terms) per byte of the message (a rank's vector n: the P blocks of an
allgather, the P blocks a rank sends in an all-to-all).

Message starts (`message_starts`): a rank starts at most k messages per alpha (its node's ports,
synth.pricing.alphabeta.node_ports), so in a step whose busiest port starts L messages the ranks
holding anything derived from one rank's data grow at most by a factor 1 + kL <= (1 + k)^L. Where
one rank's data must reach every rank (broadcast, scatter, allgather, reduce-scatter, allreduce,
alltoall with every block non-empty) the sum of L over the steps is at least ceil(log_{1+k} P);
otherwise one message is needed when any block must move. DeSensi24's T_opt = alpha log2 p + beta
n/D is the optimum of schedules that split the vector over the ports (one message per port and
step); under this model a node of 2D ports may start 2D messages per alpha, so its latency term is
log_{2D+1} p (Kautz-C's allreduce takes 4 alpha, below log2 p for d >= 4: Pham26 Table 3.2).

Bytes: the beta term of a step is its busiest channel's bytes over bandwidth, at least the bytes
crossing into a node set S over the bandwidth of the channels into S (a maximum is at least a
weighted mean). Summed over the steps: at least what must enter S over its capacity, for every S.
- Injection (`blocks_bound`, any blocks, any collective): the bytes that must cross the nodes'
  links over their bandwidth (ranks of one node share memory):
  - allreduce: one-way gossip of every element among N nodes takes 2(N - 1) sends (Patarasuk and
    Yuan's 2(p - 1)/p n per node, summed): 2(N - 1) n bytes injected in all;
  - allgather, broadcast: every block reaches the N - 1 nodes that lack it; reduce-scatter,
    reduce: every element collects contributions from N - 1 other nodes: (N - 1) n;
  - alltoall(v), scatter, gather, p2p: the blocks whose source and destination nodes differ; the
    root's (and each node's) own blocks through its own links.
- Cuts (`bandwidth_bound`, equal blocks; the cuts themselves: synth.measure.cuts):
  - allgather: the blocks of the ranks outside S must all enter S (ForestColl's cut bound),
    max over S of (ranks outside S) / C_in(S) in blocks, found by Dinkelbach's iteration on
    min cuts (a ratio of two set functions);
  - reduce-scatter: the same with the channels out of S (the time reverse of an allgather);
  - broadcast (reduce): the whole message enters every S without the root (leaves every S
    without the root): n over the least max-flow from the root to a rank (from a rank to it);
  - allreduce: every element enters and leaves every S that splits the ranks: n over the least
    cut either way, or the injection count, whichever is more.
- Flows (`exchange_time_bound`, alltoall(v)): the multicommodity-flow LP lambda*
  (synth.measure.lp_bound) bounds every schedule, forwarding ones included: a forwarded block's
  hops form a walk from its source to its destination, a routing of its demand, so the channels'
  loads summed over the steps are at least a fractional routing's; or the sweep cut where it is
  more.

Node-internal links (`node_bound`, with NodeCosts' intra-node bandwidth; Q > 1 ranks a node): a
transfer between two ranks of node v crosses v's internal link, one from or to another node crosses
v's links out of or into it. Every (rank r of v, byte r must receive) is delivered to r by some
transfer (its first receipt; one transfer has one receiver, so distinct pairs are distinct bytes),
over v's internal link or a channel into v: summed over the steps, the bytes on those links are at
least IN(v) = sum over r in v of what r must receive, and a maximum is at least the mean weighted by
the links' capacity (bytes per second), so the bytes terms are at least IN(v) over v's capacity in
(internal link plus channels in), and OUT(v) (what v's ranks must send) over v's capacity out. What
a rank must receive: allgather n - (its blocks), broadcast n (not the root), scatter its block,
alltoall(v) its blocks from the other ranks, reduce-scatter its block (something of every element
arrives), allreduce n, reduce n at the root, gather and p2p what the root (the peer) lacks; what it
must send: its own blocks (allgather, gather), n - its block (reduce-scatter), n (allreduce; reduce
but the root; broadcast, p2p from the root), its blocks to the others (alltoall(v)), the others'
blocks (scatter, from the root). With Q = 1 no transfer is within a node, and the injection count
(the same bytes over the channels alone) is stronger: the node bound is left out. The intra-node
latency enters the message starts: a step whose busiest port starts L messages takes at least
min(alpha, intra-node latency) x L. A copy cost adds nothing: a schedule of single-block messages
copies nothing.

Steps (`step_bound`, relative to a transfer graph): a block reaches a rank no sooner than the
distance from its holder in the graph of the transfers a schedule may use, and the ranks holding a
block at most multiply by 1 + (the most transfers a rank sends) per step; what one rank holds
(blocks, or the contributions of a partial: a reduce's) by 1 + (the most it receives). Both bound
the steps of a schedule with these transfers, not of any schedule. An allreduce has the same bound
(each rank's contribution must reach every rank), not twice it: only a reduce-scatter followed by
an allgather needs both halves' steps.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.core.text import counted
from synth.measure.cuts import arcs, cut_ratio, max_flow, sweep_cut_bound
from synth.pricing.alphabeta import FREE, NodeCosts, beta_of, node_ports

SPREADING = ("broadcast", "scatter", "allgather", "reduce-scatter", "allreduce", "alltoall", "alltoallv")
BOUNDED = ("allgather", "reduce-scatter", "allreduce", "broadcast", "reduce")  # the collectives with a cut bound
EXCHANGES = ("alltoall", "alltoallv")
MAX_CUT_NODES = 2048  # the cut bound's max-flows per terminal: above, compare keeps the injection bound (minutes)
MAX_PAIR_CUT_TERMINALS = 4096  # max-flows between terminal pairs (allreduce, broadcast, reduce) up to this many terminals
COMPARE_LP_PAIRS = 8192  # an all-to-all's flow LP in compare: torus:8,8's 4,032 node pairs 4 s; slimfly:5's 39,800 50 s
LP_PAIRS = 1 << 16  # node pairs up to which synthesis bounds an all-to-all by the LP
# The LP runs to lambda* (K(8,2) in 60 s, Slim Fly q = 5 in 120 s here, torus:8,16 118 s to 405 s) within the
# command's --time-limit (synthesis) and never past this guard: past either it is left out, said (the sweep cut
# remains), never replaced by a bracket that depends on the clock; only an LP that ends near the limit may make a
# rerun differ. (It ran to this guard whatever the limit before issue 41: torus:8,16 at --time-limit 2 took 118 s.)
LP_GUARD_SECONDS = 900.0
ROWS_BYTES = 1 << 24  # an all-to-all's block sizes are summed a band of source ranks at a time (P^2 can be 2^28)


@dataclass(frozen=True)
class BandwidthBound:
    """Bytes over bandwidth on the busiest channels, summed over the steps: `busiest` for a message
    of `of_bytes` bytes (1: per byte), in proportion for others."""

    busiest: float
    why: str  # the count or the cut, in words
    of_bytes: float = 1.0

    @property
    def per_byte(self) -> float:
        return self.busiest / self.of_bytes

    def busiest_bytes(self, message_bytes: float) -> float:
        return self.busiest if message_bytes == self.of_bytes else self.busiest * message_bytes / self.of_bytes


@dataclass(frozen=True)
class StepBound:
    steps: int
    why: str


@dataclass(frozen=True)
class NodeBound:
    """Per node, the bytes its ranks must receive (and send) per `of_bytes` of message, with the
    bandwidth of the node's channels in (and out), in links of bandwidth 1 (module docstring): what
    the intra-node bandwidth of NodeCosts bounds. Equal entries are kept once."""

    needs: tuple[float, ...]
    capacity: tuple[float, ...]
    of_bytes: float = 1.0

    def seconds(self, message_bytes: float, bandwidth_bits: float, intra_bandwidth_bits: float) -> float:
        scale = message_bytes / self.of_bytes
        return max((need * scale / ((cap * bandwidth_bits + intra_bandwidth_bits) / 8.0)
                    for need, cap in zip(self.needs, self.capacity)), default=0.0)


@dataclass(frozen=True)
class TimeBound:
    """The time of any schedule of a collective is at least alpha x messages + beta x the bandwidth
    bound's bytes: the one bound type of synth. With node costs (synth.pricing.alphabeta.NodeCosts):
    min(alpha, intra-node latency) x messages, and the bytes term at least the node bound's."""

    messages: int  # alpha terms: message starts at the busiest port, summed over the steps
    bandwidth: BandwidthBound
    ports: int = 1  # k, the messages a rank may start per alpha
    node: NodeBound | None = None  # what must cross each node's internal link or its channels (Q > 1)
    ranks_per_node: int = 1

    def seconds(self, message_bytes: float, alpha: float, bandwidth_bits: float, node: NodeCosts = FREE) -> float:
        if node.free or (node.intra_latency is None and node.intra_bandwidth_bits is None):
            return alpha * self.messages + beta_of(bandwidth_bits) * self.bandwidth.busiest_bytes(message_bytes)
        start = min(alpha, node.latency(alpha)) if self.ranks_per_node > 1 else alpha
        return start * self.messages + self.carried(message_bytes, bandwidth_bits, node)

    def carried(self, message_bytes: float, bandwidth_bits: float, node: NodeCosts = FREE) -> float:
        """The bytes term: beta x the bandwidth bound's bytes, or the node bound's where it is more."""
        carried = beta_of(bandwidth_bits) * self.bandwidth.busiest_bytes(message_bytes)
        if node.intra_bandwidth_bits is None or self.node is None:
            return carried
        return max(carried, self.node.seconds(message_bytes, bandwidth_bits, node.intra_bandwidth_bits))

    def node_binds(self, message_bytes: float, bandwidth_bits: float, node: NodeCosts = FREE) -> bool:
        return (node.intra_bandwidth_bits is not None and self.node is not None and
                self.node.seconds(message_bytes, bandwidth_bits, node.intra_bandwidth_bits)
                > beta_of(bandwidth_bits) * self.bandwidth.busiest_bytes(message_bytes))

    def text(self, message_bytes: float, alpha: float, bandwidth_bits: float, node: NodeCosts = FREE) -> str:
        seconds = self.seconds(message_bytes, alpha, bandwidth_bits, node)
        start = "" if node.intra_latency is None or self.ranks_per_node == 1 or node.intra_latency >= alpha else \
            " (at the intra-node latency)"
        carried = (f"a node's ranks' bytes over its internal link and channels, {self.node.seconds(message_bytes, bandwidth_bits, node.intra_bandwidth_bits) * 1e6:.4g} us"
                   if self.node_binds(message_bytes, bandwidth_bits, node) else
                   f"{self.bandwidth.busiest_bytes(message_bytes):,.0f} B over bandwidth, {self.bandwidth.why}")
        return (f"lower bound {seconds * 1e6:.4g} us (any schedule: "
                f"{self.messages} x alpha{start}, a rank starting at most {counted(self.ports, 'message')} per alpha; "
                f"{carried})")


def message_starts(collective: str, ranks: int, ports: int, moves: bool = True, every_pair_moves: bool = True) -> int:
    """The least message starts at one port, summed over the steps, of any schedule: ceil(log_{1+k}
    P) where one rank's data must reach every rank (an alltoallv only when every block between two
    ranks has bytes), else 1 when anything must move."""
    if collective in SPREADING and ranks > 1 and every_pair_moves:
        return math.ceil(math.log(ranks) / math.log(1 + ports) - 1e-12)
    return 1 if moves else 0


def vector_bytes(schedule) -> int:
    """n: the vector of a reduction or broadcast, the P blocks a rank gathers or scatters, the P
    blocks a rank sends in an all-to-all."""
    total = int(schedule.block_bytes.sum())
    return total // schedule.ranks if schedule.collective in EXCHANGES else total


def blocks_bound(schedule, network) -> TimeBound:
    """The bound for any schedule of `schedule`'s collective and blocks on `network` (rank r on
    terminal r // Q), by the injection count; per byte of its vector_bytes."""
    p, q = schedule.ranks, schedule.ranks_per_node
    nodes = -(-p // q)
    k = node_ports(network, q)
    name = schedule.collective
    moves = _must_move(schedule, p, q, nodes)
    messages = message_starts(name, p, k, moves.total > 0, name != "alltoallv" or moves.every_pair_moves)
    busiest, why = _injection(moves, network, nodes)
    of_bytes = max(1, vector_bytes(schedule))
    node = node_bound(name, schedule.block_bytes, p, q, network, schedule.root or 0, schedule.peer, of_bytes)
    return TimeBound(messages, BandwidthBound(busiest, why, of_bytes), k, node, q)


def node_bound(name: str, block_bytes, p: int, q: int, network, root: int = 0, peer: int | None = None,
               of_bytes: float = 1.0) -> NodeBound | None:
    """What the ranks of every node must receive and send (module docstring), with the bandwidth of
    the node's channels in and out; None with one rank a node (no internal link is used) or one node."""
    nodes = -(-p // q)
    if q == 1 or nodes == 1 or p == 1:
        return None
    receive, send = _rank_needs(name, block_bytes, p, root, peer)
    node = np.arange(p) // q
    inject, eject = _link_bandwidth(network)
    needs = np.concatenate([np.bincount(node, receive, nodes), np.bincount(node, send, nodes)])
    capacity = np.concatenate([eject[:nodes], inject[:nodes]])
    pairs = np.unique(np.stack([needs, capacity], axis=1), axis=0)
    pairs = pairs[pairs[:, 0] > 0]
    return NodeBound(tuple(pairs[:, 0].tolist()), tuple(pairs[:, 1].tolist()), float(of_bytes))


def _rank_needs(name: str, block_bytes, p: int, root: int, peer: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Per rank, the bytes it must receive and the bytes it must send in any schedule (module docstring)."""
    sizes = np.asarray(block_bytes)
    receive, send = np.zeros(p), np.zeros(p)
    if name in EXCHANGES:  # block s P + d (of every part) from rank s to rank d; a band of sources at a time
        parts = sizes.reshape(-1, p, p)
        band = max(1, ROWS_BYTES // (8 * p * len(parts)))
        for r0 in range(0, p, band):
            r1 = min(p, r0 + band)
            rows = parts[:, r0:r1, :].astype(np.float64).sum(axis=0)
            rows[np.arange(r1 - r0), np.arange(r0, r1)] = 0.0  # a rank's block to itself need not move
            send[r0:r1] = rows.sum(axis=1)
            receive += rows.sum(axis=0)
        return receive, send
    n = float(sizes.sum())
    own = np.bincount(np.arange(len(sizes)) % p, sizes.astype(np.float64), p)
    others = np.arange(p) != root
    if name == "allgather":
        return n - own, own
    if name == "reduce-scatter":
        return own, n - own
    if name == "allreduce":
        return np.full(p, n), np.full(p, n)
    if name == "broadcast":
        send[root] = n
        return np.where(others, n, 0.0), send
    if name == "reduce":
        receive[root] = n
        return receive, np.where(others, n, 0.0)
    if name == "scatter":
        send[root] = n - own[root]
        return np.where(others, own, 0.0), send
    if name == "gather":
        receive[root] = n - own[root]
        return receive, np.where(others, own, 0.0)
    if name == "p2p":
        target = root if peer is None else peer
        if target != root:
            send[root], receive[target] = n, n
        return receive, send
    raise ValueError(f"no bound for {name}")


def _injection(moves: "_Moves", network, nodes: int) -> tuple[float, str]:
    inject, eject = _link_bandwidth(network)
    used = slice(0, nodes)
    candidates = [(moves.total / float(inject[used].sum()), "the bytes that must cross between nodes over the "
                   "nodes' injection bandwidth")]
    if moves.out_of is not None:
        candidates.append((float((moves.out_of / inject[used]).max(initial=0.0)), "the busiest node's bytes out"))
    if moves.into is not None:
        candidates.append((float((moves.into / eject[used]).max(initial=0.0)), "the busiest node's bytes in"))
    busiest, why = max(candidates, key=lambda c: c[0])
    if moves.gossip:
        why += " (allreduce: 2(N - 1) n)"
    return busiest, why


def step_bound(collective: str, graph, root: int = 0, representatives=None) -> StepBound:
    """The fewest steps of a schedule of `collective` using only the transfers of `graph`;
    `representatives`: ranks that automorphisms of the graph move onto every rank (rank 0 alone
    under a torus's translations, a group's routers under a dragonfly's rotation; checked by the
    caller), so every rank is as far from the others as one of them and the diameter is their
    largest eccentricity (a breadth-first search each instead of P)."""
    p = graph.ranks
    if p == 1:
        return StepBound(0, "one rank")
    # What grows per step, by at most 1 + a degree: the ranks holding something of one rank's data
    # (a block's holders; one rank's contributions, which must reach every owner) through the most
    # transfers a rank sends, and what one rank holds (blocks, or contributions to a partial) through
    # the most it receives. A broadcast has only the first (one rank's data), a reduce the second (one
    # partial); the others both.
    out_degree, in_degree = max(1, graph.max_out_degree()), max(1, graph.max_in_degree())
    grows = {"broadcast": (out_degree,), "reduce": (in_degree,)}.get(collective, (out_degree, in_degree))
    degree = min(grows)
    spread = math.ceil(math.log(p) / math.log(1 + degree) - 1e-12)
    if not graph.joins_every_rank():
        raise SynthError(f"the {graph.reach} transfers do not join every rank pair (use --transfers all)")
    # the distances a bound reads, and no more (P x P of them are 8 GiB at 65,536 ranks)
    if collective in ("broadcast",):
        far = int(graph.distances_from(root).max())
        what = f"rank {root} reaches every rank in {far}"
    elif collective in ("reduce",):
        far = int(graph.distances_to(root).max())
        what = f"every rank reaches rank {root} in {far}"
    else:
        far = int(graph.distances().max() if representatives is None else
                  max(int(graph.distances_from(int(r)).max()) for r in representatives))
        what = f"the transfer graph's diameter is {far}"
    # An allreduce is not always a reduce-scatter then an allgather (one step of all-pairs
    # reductions on a complete graph, a reduction in each clique then an exchange across): its
    # bound is the spreading one, since every rank's final vector holds every rank's contribution
    # (rank r's data reaches every rank: its holders grow as a block's do; the distance argument too).
    steps = max(spread, far)
    grower = {"broadcast": "a block's holders", "reduce": "a partial's contributions"}.get(
        collective, "a rank's data's holders and what a rank holds")
    why = f"{what}; {grower} grow at most {1 + degree}-fold per step (log_{1 + degree} {p} -> {spread})"
    return StepBound(steps, why)


def bandwidth_bound(collective: str, network, ranks_per_node: int = 1, root: int = 0,
                    representatives=None) -> BandwidthBound:
    """Bytes over bandwidth on the busiest channels, summed over the steps, that any schedule of
    `collective` needs per byte of message (a rank's whole vector: the P blocks of an allgather).
    `representatives`: terminals meeting every orbit of a group of automorphisms (synth.synthesis.symmetry);
    an automorphism moves a cut onto one of the same ratio, so the cuts holding one of them suffice."""
    if collective not in BOUNDED:
        raise SynthError(f"no synthesis bound for {collective} (bounded: {', '.join(BOUNDED)})")
    n, q = network.num_terminals, ranks_per_node
    p = n * q
    if p == 1 or n == 1:
        return BandwidthBound(0.0, "one node: no channel needs to be crossed")
    if collective in ("allgather", "reduce-scatter"):
        reverse = collective == "reduce-scatter"
        src, dst, capacity, scale = arcs(network)
        ratio, inside = cut_ratio((dst, src, capacity, scale) if reverse else (src, dst, capacity, scale),
                                   network.num_nodes, n, q,
                                   range(n) if representatives is None else sorted(set(representatives)))
        way = "leave" if reverse else "enter"
        count = p - q * sum(1 for v in inside if v < n)
        return BandwidthBound(ratio / p, f"{count} of {p} blocks must {way} a set of "
                              f"{sum(1 for v in inside if v < n)} nodes through bandwidth {count / ratio:g}")
    if collective in ("broadcast", "reduce") and n > MAX_PAIR_CUT_TERMINALS:
        # N - 1 max-flows would take hours: the root's own cut and every other terminal's (the whole message leaves
        # the root and enters each other node), a bound for every schedule, at most the pairs' least cut
        node = root // q
        out_of, into = (network.channel_src, network.channel_dst) if collective == "broadcast" else \
            (network.channel_dst, network.channel_src)
        others = np.delete(np.arange(n), node)
        ends = _link_bandwidths(network, into)[others]
        least = float(min(_link_bandwidths(network, out_of)[node], ends.min()))
        return BandwidthBound(1.0 / least, f"the whole message {'leaves' if collective == 'broadcast' else 'enters'} "
                              f"node {node} and {'enters' if collective == 'broadcast' else 'leaves'} every other "
                              f"through at least bandwidth {least:g} (above {MAX_PAIR_CUT_TERMINALS:,} terminals the "
                              "pairs' cuts are not computed, one terminal's only)")
    if collective in ("broadcast", "reduce"):
        flow = max_flow(network)
        node = root // q
        least, other = min(((flow(node, v) if collective == "broadcast" else flow(v, node)), v)
                           for v in range(n) if v != node)
        way = f"from node {node} to node {other}" if collective == "broadcast" else f"from node {other} to node {node}"
        return BandwidthBound(1.0 / least, f"the whole message flows {way} through a cut of bandwidth {least:g}")
    injection = float(network.channel_bandwidth[network.channel_src < n].sum())
    gossip = 2 * (n - 1) / injection  # blocks_bound's count: 2(N - 1) n injected in all
    if n > MAX_PAIR_CUT_TERMINALS:
        # 2(N - 1) max-flows would take hours: the cuts of one terminal alone (every element enters and leaves
        # each terminal), a bound for every schedule still, at most the pairs' (their least cut is at most these)
        single = float(min(_terminal_links(network, network.channel_src), _terminal_links(network, network.channel_dst)))
        if gossip >= 1.0 / single:
            return BandwidthBound(gossip, f"2(N - 1) = {2 * (n - 1)} vectors injected through bandwidth {injection:g} "
                                          f"(above {MAX_PAIR_CUT_TERMINALS:,} terminals the pairs' cuts are not "
                                          "computed, one terminal's only)")
        return BandwidthBound(1.0 / single, f"every element enters and leaves a terminal through bandwidth {single:g} "
                                            f"(above {MAX_PAIR_CUT_TERMINALS:,} terminals the pairs' cuts are not "
                                            "computed)")
    flow = max_flow(network)
    # A set S splitting the nodes holds node 0 or not; a node b on the other side: C_in(S) is at
    # least the min cut from b to 0 or from 0 to b.
    least = min(min(flow(0, b), flow(b, 0)) for b in range(1, n))
    if gossip >= 1.0 / least:
        return BandwidthBound(gossip, f"2(N - 1) = {2 * (n - 1)} vectors injected through bandwidth {injection:g}")
    return BandwidthBound(1.0 / least, f"every element enters and leaves each side of a cut of bandwidth {least:g}")


def _link_bandwidths(network, end: np.ndarray) -> np.ndarray:
    """Per terminal, the bandwidth of its channels at `end` (channel_src: leaving it; channel_dst:
    entering it)."""
    n = network.num_terminals
    at = end < n
    return np.bincount(end[at], weights=network.channel_bandwidth[at], minlength=n)


def _terminal_links(network, end: np.ndarray) -> float:
    """The least bandwidth of a terminal's channels at `end`."""
    return float(_link_bandwidths(network, end).min())


def time_bound(collective: str, network, ranks_per_node: int = 1, root: int = 0, representatives=None) -> TimeBound:
    """The message starts (log_{1+k} P where one rank's data must reach every rank; a reduce only 1:
    the model charges a message to the port that starts it, so every rank sending straight to the
    root takes one alpha) and the cut bound, for equal blocks."""
    p = network.num_terminals * ranks_per_node
    k = node_ports(network, ranks_per_node)
    blocks = np.ones(p if collective in ("allgather", "reduce-scatter") else 1)  # equal blocks, per byte of message
    return TimeBound(message_starts(collective, p, k, p > 1),
                     bandwidth_bound(collective, network, ranks_per_node, root, representatives), k,
                     node_bound(collective, blocks, p, ranks_per_node, network, root, None, float(blocks.sum())),
                     ranks_per_node)


def node_demand(network, ranks_per_node: int, sizes: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every ordered pair of distinct nodes with what it carries: blocks (alltoall: Q^2 per pair) or
    bytes (alltoallv: its rank pairs' blocks summed)."""
    n, q = network.num_terminals, ranks_per_node
    a, b = np.nonzero(~np.eye(n, dtype=bool))
    if sizes is None:
        weights = np.full(len(a), q * q, dtype=np.int64)
    else:
        per_node = np.asarray(sizes, dtype=np.int64).reshape(n, q, n, q).sum(axis=(1, 3))
        weights = per_node[a, b]
    return a.astype(np.int64), b.astype(np.int64), weights


def flow_bound(network, ranks_per_node: int, sizes: np.ndarray | None, say=lambda text: None,
               lp_pairs: int = LP_PAIRS, lp_seconds: float = LP_GUARD_SECONDS) -> tuple[float, str]:
    """A lower bound on lambda* (blocks, or an alltoallv's bytes, over bandwidth on the busiest
    channel, every node pair sending at once) and why: the multicommodity-flow LP over every routing
    up to `lp_pairs` node pairs, solved to lambda* within `lp_seconds` of wall clock (the command's
    --time-limit, at most LP_GUARD_SECONDS; left out past it, said: only a run whose LP ends near
    its limit may differ on a rerun), or the sweep cut bound where it is more."""
    from synth.measure.lp_bound import lp_bound

    a, b, weights = node_demand(network, ranks_per_node, sizes)
    lp, why = 0.0, ""
    if len(a) <= lp_pairs:
        seconds = min(float(lp_seconds), LP_GUARD_SECONDS)
        say(f"the multicommodity-flow LP bound (within {seconds:g} s)")
        found = lp_bound(network, a, b, exact=True, weights=weights, time_limit=seconds)
        if found.status == "optimal":  # lambda* itself; past its limit it is left out (a bracket depends on the clock)
            lp, why = found.lower, "the multicommodity-flow LP over every routing"
        else:
            say(f"the multicommodity-flow LP bound left out: not solved within {seconds:g} s (the sweep cut instead)")
            why = f"no LP bound (not solved within {seconds:g} s)"
    cut, cut_why = sweep_cut_bound(network, a, b, weights)
    if cut > lp * (1 + 1e-9):
        lp, why = cut, cut_why
    return lp, why


def exchange_message_bytes(matrix: np.ndarray, ranks: int) -> int:
    """An alltoallv's message size as the size bands show it: the bytes a rank sends, on average."""
    return max(1, int(np.asarray(matrix, dtype=np.int64).sum()) // ranks)


def exchange_time_bound(name: str, topology, ranks_per_node: int, matrix, lp: float | None = None,
                        lp_why: str = "", lp_pairs: int = LP_PAIRS) -> TimeBound:
    """The time bound of any schedule of an all-to-all(v): the message starts and injection bytes of
    its blocks (`matrix`: an alltoallv's bytes per rank pair; None: equal blocks), and the flow bound
    (`lp`, computed here unless given) where it is more; per byte of a rank's message."""
    network = topology.network()
    ranks = network.num_terminals * ranks_per_node
    if lp is None:
        lp, lp_why = flow_bound(network, ranks_per_node, matrix, lp_pairs=lp_pairs)
    nodes = -(-ranks // ranks_per_node)
    # equal blocks counted in blocks (one byte each): lambda* is in blocks too
    blocks = np.ones(ranks * ranks, dtype=np.int64) if matrix is None else np.asarray(matrix, dtype=np.int64).ravel()
    moves = _Moves(0.0) if nodes == 1 else _alltoall_moves(blocks, ranks, ranks_per_node, nodes)
    k = node_ports(network, ranks_per_node)
    messages = message_starts(name, ranks, k, moves.total > 0, name != "alltoallv" or moves.every_pair_moves)
    floor, floor_why = _injection(moves, network, nodes)  # of the blocks alone: no path enters it
    if matrix is None:  # lambda* in blocks, not rounded up: a schedule may split its blocks (MD, DO) over paths
        per_byte = max(lp, floor) / ranks  # a rank's message is P blocks
    else:
        per_byte = max(lp, floor) / exchange_message_bytes(matrix, ranks)
    why = f"{lp_why or 'no flow bound'} (>= {lp:.6g} {'blocks' if matrix is None else 'B'} over bandwidth) or {floor_why}"
    node = node_bound(name, blocks, ranks, ranks_per_node, network, 0, None,
                      ranks if matrix is None else exchange_message_bytes(matrix, ranks))
    return TimeBound(messages, BandwidthBound(per_byte, why), k, node, ranks_per_node)


def any_schedule_bound(collective: str, topology, ranks_per_node: int = 1, root: int = 0,
                       matrix: np.ndarray | None = None) -> TimeBound | None:
    """The strongest time bound synth has for any schedule of `collective` (equal blocks; an
    alltoallv's: `matrix`, per byte of its exchange_message_bytes) on `topology`: the cut bound of
    every node set with the message starts (allgather, reduce-scatter, allreduce, broadcast, reduce),
    or an all-to-all(v)'s flow bound (the multicommodity-flow LP over routing, up to COMPARE_LP_PAIRS
    node pairs, else the sweep cut); None where synth has none beyond blocks_bound's injection count
    (other collectives, an alltoallv without its matrix, or more than MAX_CUT_NODES nodes)."""
    network = topology.network()
    if network.num_nodes > MAX_CUT_NODES:
        return None
    if collective == "alltoall" or (collective == "alltoallv" and matrix is not None):
        return exchange_time_bound(collective, topology, ranks_per_node, matrix, lp_pairs=COMPARE_LP_PAIRS)
    if collective in BOUNDED:
        return time_bound(collective, network, ranks_per_node, root)
    return None


def schedule_bound(schedule, topology, blocks: TimeBound | None = None) -> TimeBound:
    """The strongest bound synth has for any schedule of `schedule`'s collective and blocks on
    `topology`, per byte of its vector_bytes: any_schedule_bound's where it is more than the
    injection count of its blocks (`blocks`, computed unless given)."""
    blocks = blocks if blocks is not None else blocks_bound(schedule, topology.network())
    matrix = None  # (summed only where the flow bound will use it: P^2 of them)
    if schedule.collective == "alltoallv" and topology.network().num_nodes <= MAX_CUT_NODES:
        matrix = exchange_blocks(schedule)
    stronger = any_schedule_bound(schedule.collective, topology, schedule.ranks_per_node, schedule.root or 0, matrix)
    if stronger is None:
        return blocks
    n = vector_bytes(schedule)
    bandwidth = stronger.bandwidth if stronger.bandwidth.busiest_bytes(n) > blocks.bandwidth.busiest_bytes(n) \
        else blocks.bandwidth
    return TimeBound(max(blocks.messages, stronger.messages), bandwidth, blocks.ports, blocks.node, blocks.ranks_per_node)


def exchange_blocks(schedule) -> np.ndarray:
    """An alltoallv schedule's bytes per rank pair (P^2, flat): its blocks' parts summed (a schedule
    may split every block into parts: MD's, part k of block b is block k P^2 + b)."""
    p = schedule.ranks
    sizes = np.asarray(schedule.block_bytes)
    return sizes if len(sizes) == p * p else sizes.astype(np.int64).reshape(-1, p * p).sum(axis=0)


def with_strongest_bound(comparison, topology, alpha: float, bandwidth_bits: float, ranks_per_node: int = 1,
                         root: int = 0, node: NodeCosts = FREE):
    """`comparison` (synth.pricing.compare.Comparison) with its bounds raised to `any_schedule_bound`'s
    at every size: `compare` and `report` print the bound `synthesize` proves."""
    bound = any_schedule_bound(comparison.collective, topology, ranks_per_node, root, comparison.matrix)
    if bound is None:
        return comparison
    strongest = [max(b, bound.seconds(n, alpha, bandwidth_bits, node)) for b, n in zip(comparison.bounds, comparison.sizes)]
    return dataclasses.replace(comparison, bounds=np.array(strongest))


@dataclass
class _Moves:
    total: float  # bytes injected into the network in all
    out_of: np.ndarray | None = None  # per node, bytes it must send to other nodes
    into: np.ndarray | None = None  # per node, bytes it must receive from other nodes
    gossip: bool = False
    every_pair_moves: bool = True  # all-to-all: every block between two ranks has bytes


def _must_move(schedule, p: int, q: int, nodes: int) -> _Moves:
    name = schedule.collective
    if nodes == 1:
        return _Moves(0.0)
    if name in ("alltoall", "alltoallv"):  # P^2 blocks (2^28 at P = 16384): no temporary of their number
        return _alltoall_moves(schedule.block_bytes, p, q, nodes)
    sizes = np.asarray(schedule.block_bytes, dtype=np.float64)
    n = float(sizes.sum())
    node_of_block = (np.arange(len(sizes)) % p) // q  # the P-block collectives: block b plays rank b mod P
    if name == "allreduce":
        return _Moves(2.0 * (nodes - 1) * n, np.full(nodes, n), np.full(nodes, n), gossip=True)
    if name in ("allgather", "broadcast"):
        own = np.bincount(node_of_block, sizes, nodes) if name == "allgather" else _root_share(schedule, n, nodes, q)
        return _Moves((nodes - 1) * n, into=n - own)
    if name in ("reduce-scatter", "reduce"):
        own = np.bincount(node_of_block, sizes, nodes) if name == "reduce-scatter" else _root_share(schedule, n, nodes, q)
        return _Moves((nodes - 1) * n, out_of=n - own)
    root = (schedule.root or 0) // q
    if name in ("scatter", "gather"):
        crossing = sizes * (node_of_block != root)
        per_node = np.bincount(node_of_block, crossing, nodes)
        at_root = np.zeros(nodes)
        at_root[root] = crossing.sum()
        return _Moves(float(crossing.sum()), *((at_root, per_node) if name == "scatter" else (per_node, at_root)))
    if name == "p2p":
        peer = (schedule.peer if schedule.peer is not None else root) // q
        if peer == root:
            return _Moves(0.0)
        ends = np.zeros(nodes)
        out_of, into = ends.copy(), ends.copy()
        out_of[root], into[peer] = n, n
        return _Moves(n, out_of, into)
    raise ValueError(f"no bound for {name}")


def _root_share(schedule, n: float, nodes: int, q: int) -> np.ndarray:
    own = np.zeros(nodes)
    own[(schedule.root or 0) // q] = n
    return own


ROWS_BYTES = 1 << 24  # an all-to-all's block sizes are summed a band of source ranks at a time (P^2 can be 2^28)


def _alltoall_moves(block_bytes, p: int, q: int, nodes: int) -> _Moves:
    """Block s P + d (of every part) goes from rank s to rank d: per node the bytes to and from other
    nodes, summed a band of source ranks at a time without a P^2 temporary."""
    parts = np.asarray(block_bytes).reshape(-1, p, p)  # (parts, src, dst), a view
    out_of, into = np.zeros(nodes), np.zeros(nodes)
    every_pair_moves = True
    band = max(1, ROWS_BYTES // (8 * p * len(parts)))
    for r0 in range(0, p, band):
        r1 = min(p, r0 + band)
        rows = parts[:, r0:r1, :].astype(np.float64).sum(axis=0)  # (band, dst): bytes from each source
        src = np.arange(r0, r1)
        same = rows.reshape(r1 - r0, nodes, q)[np.arange(r1 - r0), src // q].sum(axis=1)  # to the source's own node
        out_of += np.bincount(src // q, rows.sum(axis=1) - same, nodes)
        into += rows.reshape(r1 - r0, nodes, q).sum(axis=2).sum(axis=0)
        np.subtract.at(into, src // q, same)
        off = rows.copy()
        off[np.arange(r1 - r0), src] = 1.0  # (a rank's block to itself need not move)
        every_pair_moves = every_pair_moves and bool((off > 0).all())
    return _Moves(float(out_of.sum()), out_of, into, every_pair_moves=every_pair_moves)


def _link_bandwidth(network) -> tuple[np.ndarray, np.ndarray]:
    """Per terminal, the bandwidth of its links into the network and out of it."""
    n = network.num_terminals
    src, dst, bandwidth = network.channel_src, network.channel_dst, network.channel_bandwidth
    out = src < n
    into = dst < n
    inject = np.bincount(src[out], bandwidth[out], n)
    eject = np.bincount(dst[into], bandwidth[into], n)
    return np.maximum(inject, 1e-300), np.maximum(eject, 1e-300)
