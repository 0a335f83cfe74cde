"""Lower bounds of a collective's schedules on a network, for synthesis.

- Steps (with a transfer graph): a block reaches a rank no sooner than the distance from its
  holder in the graph of the transfers a schedule may use, and the ranks holding a block at most
  multiply by 1 + (the most transfers a rank sends) per step; what one rank holds (blocks, or the
  contributions of a partial: a reduce's) by 1 + (the most it receives). Both bound the steps of a schedule
  with these transfers, not of any schedule. An allreduce has the same bound (each rank's
  contribution must reach every rank), not twice it: only a reduce-scatter followed by an
  allgather needs both halves' steps.
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
    # What grows per step, by at most 1 + a degree: the ranks holding something of one rank's data
    # (a block's holders; one rank's contributions, which must reach every owner) through the most
    # transfers a rank sends, and what one rank holds (blocks, or contributions to a partial) through
    # the most it receives. A broadcast has only the first (one rank's data), a reduce the second (one
    # partial); the others both.
    out_degree, in_degree = max(1, graph.max_out_degree()), max(1, graph.max_in_degree())
    grows = {"broadcast": (out_degree,), "reduce": (in_degree,)}.get(collective, (out_degree, in_degree))
    degree = min(grows)
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
        src, dst, capacity, scale = _arcs(network)
        ratio, inside = _cut_ratio((dst, src, capacity, scale) if reverse else (src, dst, capacity, scale),
                                   network.num_nodes, n, q,
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
    injection = float(network.channel_bandwidth[network.channel_src < n].sum())
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


def _arcs(network) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """An arc per linked node pair (source, destination, the bandwidth of its channels made
    integers: synth.synthesis.exact's scale) and the scale (integer units per bandwidth unit)."""
    from synth.synthesis.exact import integer_bandwidth

    scaled = integer_bandwidth(network)
    count = network.num_nodes
    keys = network.channel_src.astype(np.int64) * count + network.channel_dst
    unique, where = np.unique(keys, return_inverse=True)
    capacity = np.bincount(where, weights=scaled, minlength=len(unique)).round().astype(np.int64)
    return unique // count, unique % count, capacity, float(scaled[0]) / float(network.channel_bandwidth[0])


def _max_flow(network):
    """max-flow value between two nodes, by scipy's Dinic on the channels' integer bandwidths, in
    bandwidth units: thousands of flows a second."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    src, dst, capacity, scale = _arcs(network)
    count = network.num_nodes
    matrix = csr_matrix((capacity.astype(np.int32), (src, dst)), shape=(count, count))
    return lambda a, b: maximum_flow(matrix, int(a), int(b), method="dinic").flow_value / scale


INT32 = 2**31 - 1  # scipy's maximum_flow takes int32 capacities (larger ones are silently wrong)


def _cut_ratio(arcs, count: int, n: int, q: int, sinks) -> tuple[float, set]:
    """max over node sets S holding a terminal of (ranks outside S) / (bandwidth into S), and S.
    Dinkelbach: with lam = a / b the best ratio so far, a set S with q (ranks outside S) - lam
    C_in(S) > 0 is better; the least of q |terminals in S| + lam C_in(S) over S holding terminal v
    is a min cut (source -> every terminal with capacity q, the arcs with lam x bandwidth, sink v),
    here times b: integer capacities q b and a x bandwidth, so the ratios compare exactly. Each cut
    by scipy's Dinic (the sink side: what the source cannot reach in the residual graph), or by
    networkx where the capacities pass int32."""
    src, dst, capacity, scale = arcs
    p = n * q
    into_node = np.bincount(dst, weights=capacity, minlength=count).astype(np.int64)
    # the single nodes first: every rank's own blocks arrive through its links
    candidates = [(p - q, int(into_node[v]), v) for v in range(n) if into_node[v] > 0]
    a, b, v0 = max(candidates, key=lambda c: (c[0] / c[1], -c[2]))
    inside = {v0}
    source = count
    while True:
        improved = None
        cut_capacity = np.concatenate([a * capacity, np.full(n, q * b, dtype=np.int64)])
        tails = np.concatenate([src, np.full(n, source)])
        heads = np.concatenate([dst, np.arange(n)])
        min_cut = _scipy_min_cut if n * q * b <= INT32 and int(cut_capacity.max()) <= INT32 else _networkx_min_cut
        for v in sinks:
            value, sink_side = min_cut(tails, heads, cut_capacity, count + 1, source, int(v))
            if p * b - value > 0:
                into = int(capacity[~sink_side[src] & sink_side[dst]].sum())
                outside = p - q * int(sink_side[:n].sum())
                if into > 0 and outside * b > a * into:
                    improved = (outside, into, set(np.flatnonzero(sink_side[:count]).tolist()))
                    break
        if improved is None:
            return a / (b / scale), inside
        a, b, inside = improved


def _scipy_min_cut(tails, heads, capacity, count: int, source: int, sink: int) -> tuple[int, np.ndarray]:
    """The min cut's value and its sink side (a mask): the nodes the source does not reach along
    arcs with capacity left."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order, maximum_flow

    matrix = csr_matrix((capacity.astype(np.int32), (tails, heads)), shape=(count, count))
    result = maximum_flow(matrix, source, sink, method="dinic")
    # the flow is antisymmetric: a reverse arc's room is its flow (in int64: cap + flow may pass int32)
    residual = (matrix.astype(np.int64) - result.flow.astype(np.int64)).tocsr()
    residual.data[residual.data < 0] = 0
    residual.eliminate_zeros()
    reached = breadth_first_order(residual, source, directed=True, return_predecessors=False)
    sink_side = np.ones(count, dtype=bool)
    sink_side[reached] = False
    return int(result.flow_value), sink_side


def _networkx_min_cut(tails, heads, capacity, count: int, source: int, sink: int) -> tuple[int, np.ndarray]:
    graph = nx.DiGraph()
    graph.add_nodes_from(range(count))
    graph.add_edges_from((int(t), int(h), {"capacity": int(c)}) for t, h, c in zip(tails, heads, capacity))
    value, (_, sink_nodes) = nx.minimum_cut(graph, source, sink)
    sink_side = np.zeros(count, dtype=bool)
    sink_side[list(sink_nodes)] = True
    return int(value), sink_side


MAX_CUT_NODES = 2048  # the cut bound's max-flows per terminal: above, compare keeps the injection bound (minutes)
COMPARE_LP_PAIRS = 8192  # an all-to-all's flow LP in compare: torus:8,8's 4,032 node pairs 4 s; slimfly:5's 39,800 50 s


def any_schedule_bound(collective: str, topology, ranks_per_node: int = 1, root: int = 0) -> TimeBound | None:
    """The strongest time bound synth has for any schedule of `collective` (equal blocks) on
    `topology`: the cut bound of every node set with the message starts (allgather, reduce-scatter,
    allreduce, broadcast, reduce), or an all-to-all's flow bound (the multicommodity-flow LP over
    routing, up to COMPARE_LP_PAIRS node pairs, else the sweep cut); None where synth has none beyond
    synth.pricing.collective_bound's injection count (other collectives, or more than MAX_CUT_NODES
    nodes)."""
    network = topology.network()
    if network.num_nodes > MAX_CUT_NODES:
        return None
    if collective == "alltoall":
        from synth.synthesis.exchange import exchange_time_bound

        return exchange_time_bound(collective, topology, ranks_per_node, None, lp_pairs=COMPARE_LP_PAIRS)
    if collective in BOUNDED:
        return time_bound(collective, network, ranks_per_node, root)
    return None


def with_strongest_bound(comparison, topology, alpha: float, bandwidth_bits: float, ranks_per_node: int = 1,
                         root: int = 0):
    """`comparison` (synth.pricing.compare.Comparison) with its bounds raised to `any_schedule_bound`'s
    at every size: `compare` and `report` print the bound `synthesize` proves."""
    import dataclasses

    bound = any_schedule_bound(comparison.collective, topology, ranks_per_node, root)
    if bound is None:
        return comparison
    strongest = [max(b, bound.seconds(n, alpha, bandwidth_bits)) for b, n in zip(comparison.bounds, comparison.sizes)]
    return dataclasses.replace(comparison, bounds=np.array(strongest))
