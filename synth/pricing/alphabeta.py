"""synth's one cost model (alpha-beta, multi-port, with combining): defined here, used by every
command that prints a time (schedule, compare, report, route's exchange estimate).

A step (a phase of an exchange, a step of a schedule) is a set of messages, each from one rank to
another, carrying any number of blocks (combining: the blocks a rank sends to one peer in a step
are one message). A message starts at a port:
- a terminal that is a separate endpoint (fat-tree leaves, dragonfly and Slim Fly terminals, any
  network with p > 1 terminals per router) has one port, its injection link;
- a node that is its own router (Pham26's Kautz and 2dfc nodes, DeSensi24's torus nodes: one terminal per
  router, its link given the router's total bandwidth, `Network.nodes_are_routers`) has one port
  per outgoing router link, and a message starts at the first router link of its path;
- a message between two ranks of one node (ranks_per_node > 1) starts at its sender's memory port.
A port starts one message at a time, each costing alpha (Pham26's evaluation, "the seeds' multi-port
model": one combined message per port and step costs one alpha). The bytes of the step move
together: the busiest channel carries its bytes over its bandwidth in beta x bytes / bandwidth.
The step ends when its slowest port and its busiest channel do:

    T_step = alpha x (most messages started at one port) + beta x (most bytes over bandwidth on one channel)

and a schedule or exchange is the sum of its steps. A size exchange before a step (TuNA's metadata,
Fan24) is a step of its own with the same messages carrying 8 bytes per block.

What a node adds (`NodeCosts`; all three off by default, and every number is then the formula above,
to the last bit):
- its internal link (NVLink, shared memory): every byte moved between two ranks of one node in a
  step crosses the node's one internal link, at `intra_bandwidth_bits` (default: unlimited, so such
  bytes are free), and a message between two ranks of one node starts at its sender's memory port
  in `intra_latency` seconds (default: alpha, as any port);
- a copy cost of `copy_cost` seconds per byte (the memcpy Pham26 names, sec. 3.2.2 of
  000_159c61f3158781c2.txt: "a memcpy at the end of the communication to re-organize the order of
  data segments in the combined messages ... proportional to the message size"): a rank copies every block it receives in a combined copy message (two or more
  blocks, op copy) once out of the receive buffer, into its place or into the message it forwards;
  a reduce message is reduced in place by its receiver, which reads it anyway.
A step then ends when its slowest port has started its messages, its busiest channel or node-internal
link has carried its bytes, and its busiest copier has copied what it received:

    T_step = max(alpha x (most messages at one network port), intra_latency x (most at one memory port))
           + max(beta x (most bytes over bandwidth on one channel), (most bytes on one node's internal link) x 8 / intra_bandwidth_bits)
           + copy_cost x (the most bytes one rank copies in the step)

[Pham26] evaluates collectives with alpha = 1 us per message and beta = 8e-11 s per
byte (100 Gb/s links): the defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_ALPHA = 1e-6  # seconds per message start
DEFAULT_BANDWIDTH = 100e9  # bits per second per link of bandwidth 1


def beta_of(bandwidth_bits: float) -> float:
    """Seconds per byte on a link of the given bandwidth (100 Gb/s: 8e-11 s, as in the seed)."""
    return 8.0 / bandwidth_bits


@dataclass(frozen=True)
class NodeCosts:
    """What a node adds to the model (module docstring): its internal link's latency and bandwidth
    and a per-byte copy cost. The defaults add nothing."""

    intra_latency: float | None = None  # seconds a memory port takes to start a message; None: alpha
    intra_bandwidth_bits: float | None = None  # bits per second of a node's internal link; None: unlimited
    copy_cost: float = 0.0  # seconds per byte a rank copies

    @property
    def free(self) -> bool:
        """Nothing added: the model is alpha-beta alone."""
        return self.intra_latency is None and self.intra_bandwidth_bits is None and self.copy_cost == 0.0

    def latency(self, alpha: float) -> float:
        """The latency of a message within a node."""
        return alpha if self.intra_latency is None else self.intra_latency

    def record(self) -> dict:
        """The options that differ from the defaults, as files record them (nothing when free: files
        written without them keep their bytes)."""
        return {**({"intra_latency": self.intra_latency} if self.intra_latency is not None else {}),
                **({"intra_bandwidth_bits": self.intra_bandwidth_bits} if self.intra_bandwidth_bits is not None else {}),
                **({"copy_cost": self.copy_cost} if self.copy_cost else {})}

    def text(self) -> str:
        """The options that differ from the defaults, in words ('' when free)."""
        parts = [f"intra-node latency {self.intra_latency * 1e6:g} us" if self.intra_latency is not None else "",
                 f"intra-node {self.intra_bandwidth_bits / 1e9:g} Gb/s" if self.intra_bandwidth_bits is not None else "",
                 f"copy {self.copy_cost * 1e12:g} ps/B" if self.copy_cost else ""]
        return ", ".join(p for p in parts if p)


FREE = NodeCosts()


@dataclass(frozen=True)
class NodeTerms:
    """Per step, what NodeCosts prices (measured by synth.pricing.schedule_cost.node_terms)."""

    network_messages: np.ndarray  # the most messages one network port starts
    memory_messages: np.ndarray  # the most messages one rank's memory port starts (messages within a node)
    intra_bytes: np.ndarray  # the most bytes on one node's internal link
    copy_bytes: np.ndarray  # the most bytes one rank copies (received in combined copy messages)

    @staticmethod
    def none(steps: int) -> "NodeTerms":
        zero = np.zeros(steps)
        return NodeTerms(zero, zero, zero, zero)

    def select(self, index) -> "NodeTerms":
        return NodeTerms(*(np.asarray(a)[index] for a in (self.network_messages, self.memory_messages,
                                                          self.intra_bytes, self.copy_bytes)))


def step_times(port_messages, busiest_bytes, alpha: float = DEFAULT_ALPHA,
               bandwidth_bits: float = DEFAULT_BANDWIDTH, node: NodeCosts = FREE, terms: NodeTerms | None = None,
               scale: float = 1.0) -> np.ndarray:
    """The model, per step: alpha x (most messages started at one port) + beta x (most bytes over
    bandwidth on one channel), in seconds. A step without messages costs nothing. With node costs
    (`node`, and the steps' `terms`, whose bytes are scaled by `scale` as `busiest_bytes` already
    is): the module docstring's T_step."""
    messages = np.asarray(port_messages, dtype=np.float64)
    busiest = np.asarray(busiest_bytes, dtype=np.float64)
    if node.free or terms is None:
        return alpha * messages + beta_of(bandwidth_bits) * busiest
    latency = alpha * messages if node.intra_latency is None else np.maximum(
        alpha * np.asarray(terms.network_messages, dtype=np.float64),
        node.intra_latency * np.asarray(terms.memory_messages, dtype=np.float64))
    carried = beta_of(bandwidth_bits) * busiest
    if node.intra_bandwidth_bits is not None:
        carried = np.maximum(carried, np.asarray(terms.intra_bytes, dtype=np.float64) * scale
                             * beta_of(node.intra_bandwidth_bits))
    if node.copy_cost:
        return latency + carried + node.copy_cost * np.asarray(terms.copy_bytes, dtype=np.float64) * scale
    return latency + carried


def phase_times(max_contention, message_bytes: float, alpha: float = DEFAULT_ALPHA,
                bandwidth_bits: float = DEFAULT_BANDWIDTH, port_messages=1) -> np.ndarray:
    """Phases of equal messages of `message_bytes`: the busiest channel carries max contention of
    them (per phase); `port_messages` (per phase, or one number) the most a port starts."""
    contention = np.asarray(max_contention, dtype=np.float64)
    messages = np.broadcast_to(np.asarray(port_messages, dtype=np.float64), contention.shape)
    return step_times(np.where(contention > 0, messages, 0.0), message_bytes * contention, alpha, bandwidth_bits)


def exchange_time(max_contention, message_bytes: float, alpha: float = DEFAULT_ALPHA,
                  bandwidth_bits: float = DEFAULT_BANDWIDTH, port_messages=1) -> float:
    """The whole exchange: the sum of its phases' times (seconds)."""
    return float(phase_times(max_contention, message_bytes, alpha, bandwidth_bits, port_messages).sum())


def message_ports(network, paths, sender=None) -> np.ndarray:
    """The port every routed message starts at (one id per port of the network): its first
    channel, or on networks whose nodes are their own routers its first router link. A message
    with no channel (within a node) starts at its sender's memory port, num_channels + sender."""
    lengths = np.diff(paths.offsets)
    hop = 1 if network.nodes_are_routers else 0
    ports = np.full(len(lengths), -1, dtype=np.int64)
    routed = lengths > hop
    ports[routed] = paths.channels[paths.offsets[:-1][routed] + hop]
    if not routed.all():
        if sender is None:
            raise ValueError("messages without channels need their senders")
        ports[~routed] = network.num_channels + np.asarray(sender, dtype=np.int64)[~routed]
    return ports


def most_per_port(step: np.ndarray, ports: np.ndarray, steps: int) -> np.ndarray:
    """Per step, the most messages started at one port (`step` and `ports` per message)."""
    out = np.zeros(steps, dtype=np.int64)
    if len(step) == 0:
        return out
    keys = np.asarray(step, dtype=np.int64) * (int(ports.max()) + 1) + ports
    unique, counts = np.unique(keys, return_counts=True)
    np.maximum.at(out, unique // (int(ports.max()) + 1), counts)
    return out


def node_ports(network, ranks_per_node: int = 1) -> int:
    """The most messages a rank can start at once: the ports of its node (the router's outgoing
    links when the node is its own router, else the terminal's links), plus its memory port when
    it shares the node with other ranks."""
    n = network.num_terminals
    src = network.channel_src
    if network.nodes_are_routers:
        routers = network.channel_dst[src < n]
        links = (src >= n) & (network.channel_dst >= n)
        counts = np.bincount(src[links], minlength=network.num_nodes)
        ports = int(counts[routers].max(initial=1))
    else:
        ports = int(np.bincount(src[src < n], minlength=n).max(initial=1))
    return max(1, ports) + (1 if ranks_per_node > 1 else 0)


def single_port(network) -> bool:
    """Every terminal starts its messages on one port (its one link): the start ports need no routes."""
    return not network.nodes_are_routers and node_ports(network) == 1
