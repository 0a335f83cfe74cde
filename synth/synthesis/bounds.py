"""Lower bounds of a collective's schedules on a network, for synthesis.

- Steps (with a transfer graph): a block reaches a rank no sooner than the distance from its
  holder in the graph of the transfers a schedule may use, and the ranks holding a block at most
  multiply by 1 + (the most transfers a rank has) per step. Both bound the steps of a schedule
  with these transfers, not of any schedule.
- Bandwidth (any schedule): the beta term of a step is its busiest channel's bytes over bandwidth,
  at least the bytes crossing into a node set S over the bandwidth of the channels into S (a
  maximum is at least a weighted mean). Summed over the steps: at least what must enter S over
  its capacity, for every S; the bound is the largest over the cuts, found by max-flow:
  - allgather: the blocks of the ranks outside S must all enter S (ForestColl's cut bound),
    max over S of (ranks outside S) / C_in(S) in blocks, found by Dinkelbach's iteration on
    min cuts (a ratio of two set functions);
  - reduce-scatter: the same with the channels out of S (the time reverse of an allgather);
  - broadcast (reduce): the whole message enters every S without the root (leaves every S
    without the root): n over the least max-flow from the root to a rank (from a rank to it);
  - allreduce: every element enters and leaves every S that splits the ranks: n over the least
    cut either way, or the injection count of synth.pricing.collective_bound, whichever is more.
- Time per message size: alpha x (the least message starts of synth.pricing.collective_bound) +
  beta x (the bandwidth bound); no schedule costs less under synth's cost model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx
import numpy as np

from synth.core.errors import SynthError
from synth.pricing.alphabeta import beta_of, node_ports

EPSILON = 1e-9  # relative: a cut better than the current ratio by less is no improvement
BOUNDED = ("allgather", "reduce-scatter", "allreduce", "broadcast", "reduce")


@dataclass(frozen=True)
class BandwidthBound:
    per_byte: float  # bytes over bandwidth on the busiest channels, summed over the steps, per byte of message
    why: str  # the cut, in words

    def busiest_bytes(self, message_bytes: float) -> float:
        return self.per_byte * message_bytes


@dataclass(frozen=True)
class StepBound:
    steps: int
    why: str


@dataclass(frozen=True)
class TimeBound:
    messages: int  # alpha terms: message starts at the busiest port, summed over the steps (any schedule)
    bandwidth: BandwidthBound

    def seconds(self, message_bytes: float, alpha: float, bandwidth_bits: float) -> float:
        return alpha * self.messages + beta_of(bandwidth_bits) * self.bandwidth.busiest_bytes(message_bytes)


def step_bound(collective: str, graph, root: int = 0) -> StepBound:
    """The fewest steps of a schedule of `collective` using only the transfers of `graph`."""
    p = graph.ranks
    if p == 1:
        return StepBound(0, "one rank")
    degree = max(1, graph.max_out_degree())
    spread = math.ceil(math.log(p) / math.log(1 + degree) - 1e-12)
    distance = graph.distances()
    if (distance < 0).any():
        raise SynthError(f"the {graph.reach} transfers do not join every rank pair (use --transfers all)")
    if collective in ("broadcast",):
        far, what = int(distance[root].max()), f"rank {root} reaches every rank in {int(distance[root].max())}"
    elif collective in ("reduce",):
        far, what = int(distance[:, root].max()), f"every rank reaches rank {root} in {int(distance[:, root].max())}"
    else:
        far, what = int(distance.max()), f"the transfer graph's diameter is {int(distance.max())}"
    steps = max(spread, far)
    twice = collective == "allreduce"  # a reduce-scatter, then an allgather: each needs the bound
    why = (f"{what}; a block's holders grow at most {1 + degree}-fold per step (log_{1 + degree} {p} -> {spread})")
    return StepBound(2 * steps if twice else steps, why + ("; twice: reduce-scatter then allgather" if twice else ""))


def bandwidth_bound(collective: str, network, ranks_per_node: int = 1, root: int = 0,
                    representatives=None) -> BandwidthBound:
    """Bytes over bandwidth on the busiest channels, summed over the steps, that any schedule of
    `collective` needs per byte of message (a rank's whole vector: the P blocks of an allgather).
    `representatives`: terminals meeting every orbit of a group of automorphisms (synth.synthesis.symmetry);
    an automorphism moves a cut onto one of the same ratio, so the cuts holding one of them suffice."""
    if collective not in BOUNDED:
        raise SynthError(f"no synthesis bound for {collective} (bounded: {', '.join(BOUNDED)})")
    graph = _capacity_graph(network)
    n, q = network.num_terminals, ranks_per_node
    p = n * q
    if p == 1 or n == 1:
        return BandwidthBound(0.0, "one node: no channel needs to be crossed")
    if collective in ("allgather", "reduce-scatter"):
        reverse = collective == "reduce-scatter"
        ratio, inside = _cut_ratio(graph.reverse(copy=False) if reverse else graph, n, q,
                                   range(n) if representatives is None else sorted(set(representatives)))
        way = "leave" if reverse else "enter"
        count = p - q * sum(1 for v in inside if v < n)
        return BandwidthBound(ratio / p, f"{count} of {p} blocks must {way} a set of "
                              f"{sum(1 for v in inside if v < n)} nodes through bandwidth {count / ratio:g}")
    flow = _max_flow(network)
    if collective in ("broadcast", "reduce"):
        node = root // q
        least, other = min(((flow(node, v) if collective == "broadcast" else flow(v, node)), v)
                           for v in range(n) if v != node)
        way = f"from node {node} to node {other}" if collective == "broadcast" else f"from node {other} to node {node}"
        return BandwidthBound(1.0 / least, f"the whole message flows {way} through a cut of bandwidth {least:g}")
    # A set S splitting the nodes holds node 0 or not; a node b on the other side: C_in(S) is at
    # least the min cut from b to 0 or from 0 to b.
    least = min(min(flow(0, b), flow(b, 0)) for b in range(1, n))
    injection = float(sum(d["capacity"] for _, _, d in graph.out_edges(range(n), data=True)))
    gossip = 2 * (n - 1) / injection  # synth.pricing.collective_bound's count: 2(N - 1) n injected in all
    if gossip >= 1.0 / least:
        return BandwidthBound(gossip, f"2(N - 1) = {2 * (n - 1)} vectors injected through bandwidth {injection:g}")
    return BandwidthBound(1.0 / least, f"every element enters and leaves each side of a cut of bandwidth {least:g}")


def time_bound(collective: str, network, ranks_per_node: int = 1, root: int = 0, representatives=None) -> TimeBound:
    """The message starts as synth.pricing.collective_bound counts them (log_{1+k} P where one
    rank's data must reach every rank; a reduce only 1: the model charges a message to the port
    that starts it, so every rank sending straight to the root takes one alpha), and the cut bound."""
    from synth.pricing.collective_bound import SPREADING

    p = network.num_terminals * ranks_per_node
    k = node_ports(network, ranks_per_node)
    messages = (math.ceil(math.log(p) / math.log(1 + k) - 1e-12) if collective in SPREADING else 1) if p > 1 else 0
    return TimeBound(messages, bandwidth_bound(collective, network, ranks_per_node, root, representatives))


def _capacity_graph(network) -> nx.DiGraph:
    """The network's nodes, an arc per linked pair with the bandwidth of its channels."""
    keys = network.channel_src.astype(np.int64) * network.num_nodes + network.channel_dst
    unique, where = np.unique(keys, return_inverse=True)
    capacity = np.bincount(where, weights=network.channel_bandwidth, minlength=len(unique))
    graph = nx.DiGraph()
    graph.add_nodes_from(range(network.num_nodes))
    graph.add_edges_from((int(k // network.num_nodes), int(k % network.num_nodes), {"capacity": float(c)})
                         for k, c in zip(unique.tolist(), capacity.tolist()))
    return graph


def _max_flow(network):
    """max-flow value between two nodes, by scipy's Dinic on the channels' bandwidths (made
    integers: synth.synthesis.exact's scale), in bandwidth units: thousands of flows a second."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    from synth.synthesis.exact import integer_bandwidth

    scaled = integer_bandwidth(network)
    scale = float(scaled[0]) / float(network.channel_bandwidth[0])
    count = network.num_nodes
    keys = network.channel_src.astype(np.int64) * count + network.channel_dst
    unique, where = np.unique(keys, return_inverse=True)
    capacity = np.bincount(where, weights=scaled, minlength=len(unique)).astype(np.int32)
    matrix = csr_matrix((capacity, (unique // count, unique % count)), shape=(count, count))
    return lambda a, b: maximum_flow(matrix, int(a), int(b), method="dinic").flow_value / scale


def _cut_ratio(graph: nx.DiGraph, n: int, q: int, sinks) -> tuple[float, set]:
    """max over node sets S holding a terminal of (ranks outside S) / (bandwidth into S), and S.
    Dinkelbach: with lam the best ratio so far, a set S with q (ranks outside S) - lam C_in(S) > 0
    is better; the least of q |terminals in S| + lam C_in(S) over S holding terminal v is a min cut
    (source -> every terminal with capacity q, the channels with lam x bandwidth, sink v)."""
    p = n * q
    best, inside = -1.0, set()
    for v in range(n):  # the single nodes first: every rank's own blocks arrive through its links
        into = sum(d["capacity"] for _, _, d in graph.in_edges(v, data=True))
        if into > 0 and (p - q) / into > best:
            best, inside = (p - q) / into, {v}
    while True:
        cuts = nx.DiGraph()
        cuts.add_edges_from((a, b, {"capacity": best * d["capacity"]}) for a, b, d in graph.edges(data=True))
        cuts.add_edges_from(("source", u, {"capacity": float(q)}) for u in range(n))
        improved = None
        for v in sinks:
            value, (_, sink_side) = nx.minimum_cut(cuts, "source", v)
            if p - value > EPSILON * p:
                sink_side = set(sink_side)
                into = sum(d["capacity"] for a, b, d in graph.edges(data=True) if a not in sink_side and b in sink_side)
                outside = p - q * sum(1 for u in sink_side if isinstance(u, int) and u < n)
                if into > 0 and outside / into > best * (1 + EPSILON):
                    improved = (outside / into, sink_side)
                    break
        if improved is None:
            return best, inside
        best, inside = improved
