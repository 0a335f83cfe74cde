"""A lower bound on any schedule of a collective under synth's cost model (synth.pricing.alphabeta):
no schedule of the same blocks on the same network costs less, so no printed estimate falls below it.

Latency: the messages started at one port, summed over the steps. A rank starts at most k
messages per alpha (its node's ports, synth.pricing.alphabeta.node_ports), so in a step whose busiest
port starts L messages the ranks holding anything derived from one rank's data grow at most by a
factor 1 + kL <= (1 + k)^L. Where one rank's data must reach every rank (broadcast, scatter,
allgather, reduce-scatter, allreduce, alltoall with every block non-empty) the sum of L over the
steps is at least ceil(log_{1+k} P); otherwise one message is needed when any block must move.
DeSensi24's T_opt = alpha log2 p + beta n/D is the optimum of schedules that split the vector over the
ports (one message per port and step); under this model a node of 2D ports may start 2D messages
per alpha, so its latency term is log_{2D+1} p (Kautz-C's allreduce takes 4 alpha, below log2 p
for d >= 4: Pham26 Table 3.2).

Bandwidth: the beta term of a step is its busiest channel's bytes over bandwidth, at least the
bytes the step injects over the total injection bandwidth (a maximum is at least a weighted mean),
and likewise per node and for ejection. So the schedule's beta term is at least the bytes that must
cross the nodes' links over their bandwidth, counted per collective from what must move between
nodes (ranks of one node share memory):
- allreduce: one-way gossip of every element among N nodes takes 2(N - 1) sends (Patarasuk and
  Yuan's 2(p - 1)/p n per node, summed): 2(N - 1) n bytes injected in all;
- allgather, broadcast: every block reaches the N - 1 nodes that lack it; reduce-scatter, reduce:
  every element collects contributions from N - 1 other nodes: (N - 1) n;
- alltoall(v), scatter, gather, p2p: the blocks whose source and destination nodes differ; the
  root's (and each node's) own blocks through its own links.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from synth.core.text import counted
from synth.pricing.alphabeta import beta_of, node_ports

SPREADING = ("broadcast", "scatter", "allgather", "reduce-scatter", "allreduce", "alltoall", "alltoallv")


@dataclass(frozen=True)
class CollectiveBound:
    messages: int  # alpha terms: at least this many message starts at one port, summed over the steps
    busiest_bytes: float  # beta terms: at least this many bytes over bandwidth on the steps' busiest channels
    ports: int  # k, the messages a rank may start per alpha
    why_bytes: str  # which count gives busiest_bytes

    def seconds(self, alpha: float, bandwidth_bits: float) -> float:
        return alpha * self.messages + beta_of(bandwidth_bits) * self.busiest_bytes

    def text(self, alpha: float, bandwidth_bits: float) -> str:
        return (f"lower bound {self.seconds(alpha, bandwidth_bits) * 1e6:.4g} us (any schedule: {self.messages} x alpha, "
                f"a rank starting at most {counted(self.ports, 'message')} per alpha; {self.busiest_bytes:,.0f} B over "
                f"bandwidth, {self.why_bytes})")


def collective_bound(schedule, network) -> CollectiveBound:
    """The bound for `schedule`'s collective and blocks on `network` (rank r on terminal r // Q)."""
    p, q = schedule.ranks, schedule.ranks_per_node
    nodes = -(-p // q)
    k = node_ports(network, q)
    name = schedule.collective
    spreading = name in SPREADING and p > 1
    moves = _must_move(schedule, p, q, nodes)
    if name == "alltoallv":  # an empty block need not move: spreading only when every block between ranks has bytes
        spreading = spreading and moves.every_pair_moves
    if spreading:
        messages = math.ceil(math.log(p) / math.log(1 + k) - 1e-12)
    else:
        messages = 1 if moves.total > 0 else 0
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
    return CollectiveBound(messages, busiest, k, why)


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
