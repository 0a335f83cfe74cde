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

[Pham26] evaluates collectives with alpha = 1 us per message and beta = 8e-11 s per
byte (100 Gb/s links): the defaults.
"""

from __future__ import annotations

import numpy as np

DEFAULT_ALPHA = 1e-6  # seconds per message start
DEFAULT_BANDWIDTH = 100e9  # bits per second per link of bandwidth 1


def beta_of(bandwidth_bits: float) -> float:
    """Seconds per byte on a link of the given bandwidth (100 Gb/s: 8e-11 s, as in the seed)."""
    return 8.0 / bandwidth_bits


def step_times(port_messages, busiest_bytes, alpha: float = DEFAULT_ALPHA,
               bandwidth_bits: float = DEFAULT_BANDWIDTH) -> np.ndarray:
    """The model, per step: alpha x (most messages started at one port) + beta x (most bytes over
    bandwidth on one channel), in seconds. A step without messages costs nothing."""
    messages = np.asarray(port_messages, dtype=np.float64)
    return alpha * messages + beta_of(bandwidth_bits) * np.asarray(busiest_bytes, dtype=np.float64)


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
