"""A schedule on a network: every transfer routed, per step the bytes on every channel and the
messages at every port, and what the cost models make of them.

Mapping: every transfer (src rank -> dst rank, rank r on terminal r // Q) takes the path a router of
synth gives it (the transfers of step s are routed as phase s), a routes file's, or, by default, the
path the schedule records (a synthesized schedule's: the paths its cost was computed on), else the
family's router's (Topology.default_router). Per step, a channel carries the bytes of the transfers
crossing it, over its bandwidth, and a port starts the transfers that leave through it
(synth.pricing.alphabeta: the cost model, with the ports of a node). A transfer within a node moves through memory: no channel, its sender's
memory port.

alpha-beta (synth.pricing.alphabeta, the one model): a step takes alpha x (most messages started at
one port) + beta x (most bytes over bandwidth on one channel), the schedule the sum of its steps. A
step preceded by a size exchange (TuNA's metadata: 8 bytes per block, on the transfers' paths) is
one more step of the same messages. The lower bound of any schedule of the collective under the
same model is synth.pricing.bounds.

Deficiency model (DeSensi24 eq. 1, allreduce): T(n) = log2(p) alpha Lambda + (n / D) beta Psi Xi, with n
the vector (a rank's buffer) and 2D the ports of a node (a torus's dimensions; otherwise half the
router-to-router links of a rank's router). Measured from the mapped schedule:
- Lambda = (alpha terms of the model) / log2 p (latency deficiency; the steps, when every port
  starts one message per step);
- Psi = (sum over steps of the largest transfer) / (n / D): the bytes a step would need with every
  transfer alone on its own port (bandwidth deficiency: extra bytes, unused ports);
- Xi = (sum over steps of the busiest channel's bytes) / (sum over steps of the largest transfer):
  the slowdown from transfers of the same collective sharing links (congestion deficiency).
So the deficiency model's T equals the alpha-beta estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from synth.pricing.alphabeta import (DEFAULT_ALPHA, DEFAULT_BANDWIDTH, FREE, NodeCosts, NodeTerms, beta_of, message_ports,
                                     most_per_port, step_times)
from synth.pricing.bounds import TimeBound, blocks_bound, vector_bytes
from synth.measure.loads import weighted_counts
from synth.topology.paths import Paths, as_paths
from synth.collectives.schedule import Schedule


SIZE_BYTES = 8  # a block's size in a size exchange (one 64-bit count, Fan24's metadata)
DENSE_LOADS = 1 << 22  # (step, channel) cells of one load matrix: steps are taken in groups that fit


@dataclass
class MappedSchedule:
    steps: int
    channel_bytes: np.ndarray  # per step: the most bytes over bandwidth on one channel
    transfer_bytes: np.ndarray  # per step: the largest transfer
    flows: np.ndarray  # per step: the most transfers sharing one router-to-router channel
    hops: np.ndarray  # per step: the longest path in router-to-router hops
    vector_bytes: int  # n: a rank's buffer
    ports: int  # 2D of the deficiency model
    size_bytes: np.ndarray  # per step: the busiest channel's bytes of the size exchange before it (0 without one)
    port_messages: np.ndarray  # per step: the most messages started at one port (the model's alpha terms)
    size_port_messages: np.ndarray  # per step: the same for the size exchange before it (0 without one)
    bound: TimeBound  # no schedule of these blocks on this network costs less (synth.pricing.bounds), per vector_bytes
    node_terms: NodeTerms | None = None  # per step what the node costs price (None: as NodeTerms.none)
    size_node_terms: NodeTerms | None = None  # the same for the size exchange before it

    @property
    def size_exchanges(self) -> int:
        return int((self.size_port_messages > 0).sum())

    @property
    def messages(self) -> int:
        """The alpha terms of the model: message starts at the busiest port, summed over the steps."""
        return int(self.port_messages.sum() + self.size_port_messages.sum())

    def time(self, alpha: float, bandwidth_bits: float, scale: float = 1.0, node: NodeCosts = FREE) -> float:
        """The model's estimate (seconds), with every block's bytes scaled by `scale` (the size
        exchanges' 8 bytes per block are not); `node`: what a node adds (synth.pricing.alphabeta)."""
        return float(self.step_seconds(alpha, bandwidth_bits, scale, node).sum()
                     + self.size_seconds(alpha, bandwidth_bits, node).sum())

    def step_seconds(self, alpha: float, bandwidth_bits: float, scale: float = 1.0, node: NodeCosts = FREE) -> np.ndarray:
        """Per step, the model's time of its transfers (without the size exchange before it)."""
        return step_times(self.port_messages, self.channel_bytes * scale, alpha, bandwidth_bits, node, self.node_terms,
                          scale)

    def size_seconds(self, alpha: float, bandwidth_bits: float, node: NodeCosts = FREE) -> np.ndarray:
        """Per step, the model's time of the size exchange before it (0 without one)."""
        return step_times(self.size_port_messages, self.size_bytes, alpha, bandwidth_bits, node, self.size_node_terms)


def map_schedule(schedule: Schedule, topology, router: str | None = None, seed: int = 0, routes: dict | None = None,
                 paths: Paths | None = None, forests=None) -> MappedSchedule:
    """Route every transfer between nodes (with `router`, along the paths of a routes file `routes`,
    along `paths`, one per transfer between nodes, in order, along `forests` (a
    synth.measure.forests routing: no path listed, for exchanges too large to), or by default along
    the schedule's recorded paths, else the family's router's: transfer_paths) and
    measure every step. Transfers within a node (ranks_per_node > 1) move through memory: no
    channel, their sender's memory port."""
    network = topology.network()
    q = schedule.ranks_per_node
    step = schedule.transfer_step()
    across = (schedule.src // q) != (schedule.dst // q)
    step_across = step[across]
    size = schedule.transfer_bytes()
    n = schedule.num_steps
    ports = np.empty(len(step), dtype=np.int64)
    if forests is not None:
        from synth.measure.forests import step_loads

        a, b = schedule.src[across] // q, schedule.dst[across] // q
        walked = step_loads(forests, network, step_across, a, b, size[across], n)
        channel_bytes, flows, hops, ports[across] = walked.channel_bytes, walked.flows, walked.hops, walked.ports
    else:
        if paths is None:
            paths = transfer_paths(schedule, topology, router, seed, routes)
        channel_bytes, flows = busiest_channels(network, paths, step_across, size[across], n)
        hops = per_step_max(step_across, np.maximum(paths.lengths() - 2, 0).astype(np.float64), n).astype(np.int64)
        ports[across] = message_ports(network, paths)
    ports[~across] = network.num_channels + schedule.src[~across]  # a memory copy: the sender's memory port
    port_messages = most_per_port(step, ports, n)
    size_bytes, size_port_messages = np.zeros(n), np.zeros(n, dtype=np.int64)
    if schedule.size_exchange is not None:
        counts = schedule.block_counts()[across] * SIZE_BYTES
        exchanged = np.isin(step_across, schedule.size_exchange)
        if forests is not None:
            size_bytes = step_loads(forests, network, step_across[exchanged], a[exchanged], b[exchanged],
                                    counts[exchanged], n).channel_bytes
        else:
            size_bytes, _ = busiest_channels(network, paths.select(np.flatnonzero(exchanged)), step_across[exchanged],
                                             counts[exchanged], n)
        announced = np.isin(step, schedule.size_exchange)
        size_port_messages = most_per_port(step[announced], ports[announced], n)
    terms, size_terms = node_terms(schedule, step, across, ports, size)
    return MappedSchedule(
        steps=n,
        channel_bytes=channel_bytes,
        transfer_bytes=per_step_max(step, size.astype(np.float64), n),
        flows=flows.astype(np.int64),
        hops=hops,
        vector_bytes=vector_bytes(schedule),
        ports=deficiency_ports(topology),
        size_bytes=size_bytes,
        port_messages=port_messages,
        size_port_messages=size_port_messages,
        bound=blocks_bound(schedule, network),
        node_terms=terms,
        size_node_terms=size_terms,
    )


def node_terms(schedule: Schedule, step: np.ndarray, across: np.ndarray, ports: np.ndarray,
               size: np.ndarray) -> tuple[NodeTerms, NodeTerms]:
    """Per step (and per size exchange before it) what the node costs price (synth.pricing.alphabeta):
    the most messages at one network port and at one memory port, the most bytes within one node (its
    internal link carries every transfer between two of its ranks), and the most bytes one rank
    receives in combined copy messages (two or more blocks, op copy: copied once out of its receive
    buffer). `ports` per transfer (a memory port: num_channels + sender), `size` its bytes."""
    from synth.collectives.schedule import COPY

    n, q = schedule.num_steps, schedule.ranks_per_node
    within = ~across
    node = schedule.src // q
    counts = schedule.block_counts()
    combined = (counts >= 2) & (schedule.op == COPY)
    terms = NodeTerms(most_per_port(step[across], ports[across], n), most_per_port(step[within], ports[within], n),
                      _most_per_key(step[within], node[within], size[within], n),
                      _most_per_key(step[combined], schedule.dst[combined], size[combined], n))
    if schedule.size_exchange is None:
        return terms, NodeTerms.none(n)
    announced = np.isin(step, schedule.size_exchange)
    inside = announced & within
    return terms, NodeTerms(most_per_port(step[announced & across], ports[announced & across], n),
                            most_per_port(step[inside], ports[inside], n),
                            _most_per_key(step[inside], node[inside], counts[inside] * SIZE_BYTES, n), np.zeros(n))


def _most_per_key(step: np.ndarray, key: np.ndarray, weight: np.ndarray, steps: int) -> np.ndarray:
    """Per step, the largest sum of `weight` over the entries of one key."""
    out = np.zeros(steps)
    if len(step) == 0:
        return out
    keys = np.asarray(step, dtype=np.int64) * (int(key.max()) + 1) + key
    unique, inverse = np.unique(keys, return_inverse=True)
    sums = np.bincount(inverse, weights=np.asarray(weight, dtype=np.float64), minlength=len(unique))
    np.maximum.at(out, unique // (int(key.max()) + 1), sums)
    return out


def transfer_paths(schedule: Schedule, topology, router: str | None = None, seed: int = 0,
                   routes: dict | None = None) -> Paths:
    """The path of every transfer between nodes, in order: along a routes file's paths (`routes`),
    as `router` routes them (the transfers of step s as phase s), or, with neither, along the paths
    the schedule records (`Schedule.paths`: a synthesized schedule's, the paths its cost was computed
    on, kept by its file) where it has them on this network, else as the family's router does."""
    from synth.routing.registry import make_router

    if routes is None and router is None and recorded_paths(schedule, topology):
        return schedule.paths
    q = schedule.ranks_per_node
    across = (schedule.src // q) != (schedule.dst // q)
    src, dst = schedule.src[across] // q, schedule.dst[across] // q
    if routes is not None:
        return paths_from_routes(routes, topology, src, dst)
    route = make_router(router or topology.default_router, topology)
    routed = route(topology, src, dst, phase=schedule.transfer_step()[across], occurrence=np.zeros(len(src), dtype=np.int64),
                   seed=seed)
    return as_paths(topology, src, dst, routed.routes)


def recorded_paths(schedule: Schedule, topology) -> bool:
    """Whether the schedule records its transfers' paths on this network (what prices it by default)."""
    return schedule.paths is not None and topology.spec == schedule.spec


def busiest_channels(network, paths: Paths, step: np.ndarray, size: np.ndarray, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Per step, the most bytes over bandwidth on one channel and the most transfers on one
    router-to-router channel. The transfers come in step order; a group of steps at a time gets
    one (step, channel) matrix of at most DENSE_LOADS cells (no sort of the hops)."""
    channels = network.num_channels
    inner = (network.channel_src >= network.num_terminals) & (network.channel_dst >= network.num_terminals)
    loads, flows = np.zeros(steps), np.zeros(steps)
    rows = max(1, DENSE_LOADS // max(1, channels))
    for s0 in range(0, steps, rows):
        s1 = min(steps, s0 + rows)
        t0, t1 = np.searchsorted(step, [s0, s1])
        if t0 == t1:
            continue
        h0, h1 = paths.offsets[t0], paths.offsets[t1]
        lengths = np.diff(paths.offsets[t0:t1 + 1])
        keys = np.repeat((step[t0:t1] - s0) * channels, lengths) + paths.channels[h0:h1]
        cells = (s1 - s0) * channels
        load = weighted_counts(keys, np.repeat(size[t0:t1], lengths), cells).reshape(s1 - s0, channels)
        loads[s0:s1] = (load / network.channel_bandwidth).max(axis=1, initial=0.0)
        flows[s0:s1] = (np.bincount(keys, minlength=cells).reshape(s1 - s0, channels) * inner).max(axis=1, initial=0)
    return loads, flows


def per_step_max(step: np.ndarray, values: np.ndarray, steps: int) -> np.ndarray:
    """The largest value of each step (0 where a step has none)."""
    out = np.zeros(steps)
    np.maximum.at(out, step, values)
    return out


def deficiency_ports(topology) -> int:
    """2D of DeSensi24's deficiency model: a torus's 2 x dimensions; otherwise the router-to-router links
    of rank 0's router."""
    from synth.topology.grid import RouterGrid

    if isinstance(topology, RouterGrid):
        return 2 * topology.dimensions
    network = topology.network()
    n = network.num_terminals
    first = network.channel_dst[np.flatnonzero(network.channel_src == 0)[0]]
    return int(((network.channel_src == first) & (network.channel_dst >= n)).sum())


@dataclass(frozen=True)
class Costs:
    alpha: float
    beta: float
    steps: int
    time: float  # the model's estimate, seconds
    lower_bound: float  # no schedule of the collective's blocks on the network costs less (seconds)
    latency_deficiency: float  # Lambda
    bandwidth_deficiency: float  # Psi
    congestion_deficiency: float  # Xi


def costs(mapped: MappedSchedule, ranks: int, alpha: float = DEFAULT_ALPHA, bandwidth_bits: float = DEFAULT_BANDWIDTH,
          node: NodeCosts = FREE) -> Costs:
    beta = beta_of(bandwidth_bits)
    per_port = mapped.vector_bytes / (mapped.ports / 2) if mapped.ports else math.inf
    log_p = math.log2(ranks) if ranks > 1 else 1.0
    alone, shared = float(mapped.transfer_bytes.sum()), float(mapped.channel_bytes.sum())
    return Costs(
        alpha=alpha, beta=beta, steps=mapped.steps,
        time=mapped.time(alpha, bandwidth_bits, node=node),
        lower_bound=mapped.bound.seconds(mapped.vector_bytes, alpha, bandwidth_bits, node),
        latency_deficiency=mapped.messages / log_p,
        bandwidth_deficiency=alone / per_port if per_port else 0.0,
        congestion_deficiency=shared / alone if alone else 1.0,
    )


def paths_from_routes(doc: dict, topology, src: np.ndarray, dst: np.ndarray) -> Paths:
    """The path of every (src, dst) terminal pair from a routes file (synth-routes/2, its first path
    for the pair in file order); a pair the file does not route is a user error."""
    from synth.core.errors import SynthError

    if doc["topology"]["spec"] != topology.spec:
        raise SynthError(f"the routes file is for {doc['topology']['spec']}, the schedule for {topology.spec}")
    if doc["format"] != "synth-routes/2":
        raise SynthError(f"schedules take channel paths (synth-routes/2), not {doc['format']}")
    known: dict[tuple[int, int], list[int]] = {}
    for phase in doc["phases"]:
        for flow, path in zip(phase["flows"], phase["paths"]):
            known.setdefault((flow[0], flow[1]), path)
    rows = []
    for a, b in zip(src.tolist(), dst.tolist()):
        path = known.get((a, b))
        if path is None:
            raise SynthError(f"the routes file has no path from terminal {a} to terminal {b}, which the schedule needs")
        rows.append(path)
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    channels = np.fromiter((c for r in rows for c in r), dtype=np.int64, count=int(offsets[-1]))
    return Paths(offsets, channels)
