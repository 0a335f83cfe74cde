"""A SimGrid platform as arrays: hosts, links and routes from a synth network and the channel paths
of the transfers to simulate, and the transfers themselves (what synth.simulation.worker replays).

- A host per terminal (a rank's node; ranks_per_node ranks share it).
- A link per directed channel, SHARED (max-min sharing between the flows crossing it), of the
  channel's bandwidth times the link bandwidth. Latency: `latency` on every channel that leaves a
  terminal, `hop_latency` on every channel between routers, none on the channel into a terminal, so
  a route takes latency + router hops x hop_latency (with the defaults, alpha: the alpha-beta
  model's message start, independent of the path).
- A route per (source, destination, path): the path's channels in travel order, exactly synth's
  path for that transfer. SimGrid keeps one route per pair of hosts (a full zone), so a source whose
  transfers to one destination take k different paths (multi-path routings, a router that routes
  each step anew) gets k hosts: host t + v x terminals is terminal t sending along its v-th path.
- A transfer within a node (ranks_per_node > 1) has no channel: it goes from the node's host to
  itself over the node's memory link (its internal link: NVLink, shared memory), shared by max-min
  between the node's transfers. By default it is a message of no bytes (one, below), so it takes
  the latency alone (the cost model's default: such a transfer costs a message start, alpha, and no
  bytes); with an intra-node bandwidth (synth.pricing.alphabeta.NodeCosts) the link has that
  bandwidth and the transfer its bytes, and with an intra-node latency the link that latency.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.core.memory import budget, gib
from synth.topology.paths import Paths

MEMORY_BANDWIDTH = 1e12  # bytes/s of a node's memory link (its messages have no bytes)
MAX_HOSTS = 16384  # SimGrid's full zone keeps a hosts x hosts table (2 GB here) and fills it at the start
BYTES_PER_HOST_PAIR = 8  # SimGrid's full zone: one pointer per (source, destination) host pair (measured: 4096
# hosts, 134 MB)
BYTES_PER_TRANSFER = 1500  # one simulated transfer: the Comm object in SimGrid and Python (measured: 4096 ranks,
# 16,384 transfers a step of 24: 1.1 GB in all with the platform)
BYTES_PER_HOP = 64  # a route's link in SimGrid's routing table
BYTES_PER_ACTOR = 64 << 10  # an actor per rank (asynchronous): its thread's stack in use and its Python objects
# (measured: 4,096 rank actors, 1.33 GB against 1.11 GB for the one driver)


@dataclass(frozen=True)
class Platform:
    hosts: int
    link_bandwidth: np.ndarray  # (links,) bytes per second
    link_latency: np.ndarray  # (links,) seconds
    route_src: np.ndarray  # (routes,) host ids
    route_dst: np.ndarray
    route_ptr: np.ndarray  # (routes + 1,) offsets into route_links
    route_links: np.ndarray  # link ids, in travel order


@dataclass(frozen=True)
class Transfers:
    """What to simulate: every transfer's step (in order: steps never decrease), hosts, ranks and bytes."""

    step: np.ndarray
    src_host: np.ndarray
    dst_host: np.ndarray
    src_rank: np.ndarray
    dst_rank: np.ndarray
    bytes: np.ndarray  # int64
    # seconds the receiver spends copying it out of its receive buffer after it arrived (NodeCosts' copy cost:
    # a combined copy message's bytes); None: none
    copy: np.ndarray | None = None

    @property
    def count(self) -> int:
        return len(self.step)

    @property
    def steps(self) -> int:
        return int(self.step[-1]) + 1 if len(self.step) else 0


def build_platform(network, src_rank: np.ndarray, dst_rank: np.ndarray, ranks_per_node: int, paths: Paths,
                   step: np.ndarray, size: np.ndarray, latency: float, hop_latency: float,
                   bandwidth_bits: float, intra_latency: float | None = None,
                   intra_bandwidth_bits: float | None = None,
                   multiplicity: np.ndarray | None = None) -> tuple[Platform, Transfers]:
    """The platform and transfers for transfers src_rank -> dst_rank (rank r on terminal r // Q),
    `paths` the channel paths of those between nodes, in order; a node's memory link has
    `intra_latency` (None: `latency`) and `intra_bandwidth_bits` (None: MEMORY_BANDWIDTH, and the
    transfers within a node carry no bytes). `multiplicity`: per transfer, how many identical ones it
    stands for (synth.simulation.merge): its bytes, the one byte of a message of none included, times that."""
    n = network.num_terminals
    check_planned(n, len(src_rank))
    src_node, dst_node = src_rank // ranks_per_node, dst_rank // ranks_per_node
    across = src_node != dst_node
    if int(across.sum()) != paths.num_flows:
        raise ValueError("one path per transfer between nodes")
    channels = network.num_channels
    leaves_terminal = network.channel_src < n
    between_routers = ~leaves_terminal & (network.channel_dst >= n)
    link_latency = np.where(leaves_terminal, latency, np.where(between_routers, hop_latency, 0.0))
    link_bandwidth = network.channel_bandwidth * (bandwidth_bits / 8.0)
    variant = _path_variants(src_node[across], dst_node[across], paths)
    variants = int(variant.max()) + 1 if len(variant) else 1
    hosts = n * variants
    if hosts > MAX_HOSTS:
        raise SynthError(f"these transfers take up to {variants} different paths between one source and destination, "
                         f"so the platform needs {hosts:,} hosts (a host per terminal and path), more than the "
                         f"{MAX_HOSTS:,} SimGrid's full routing table (hosts^2) allows here: a router that routes each "
                         "step anew (valiant, random) takes many; a deterministic one (the family's) takes one")
    src_host = src_node.astype(np.int64)
    dst_host = dst_node.astype(np.int64)
    src_host[across] += variant * n
    # one route per distinct (source host, destination host): the first transfer's path stands for all; a copy
    # within a node goes from its host to itself over the node's memory link
    keys = src_host * hosts + dst_host
    _, first = np.unique(keys, return_index=True)
    first = np.sort(first)
    index_of = np.full(len(src_rank), -1, dtype=np.int64)
    index_of[np.flatnonzero(across)] = np.arange(int(across.sum()))
    routes: list[tuple[int, int, np.ndarray]] = []
    for t in first.tolist():
        if across[t]:
            i = index_of[t]
            routes.append((int(src_host[t]), int(dst_host[t]), paths.channels[paths.offsets[i]:paths.offsets[i + 1]]))
        else:
            routes.append((int(src_host[t]), int(dst_host[t]), np.array([channels + src_node[t]], dtype=np.int64)))
    # A rank that sends along another path moves to that path's host (the asynchronous discipline's actors), and
    # messages to it meanwhile go to where it is: every host of a terminal is reached as the terminal is.
    if variants > 1:
        moved = set(src_host[src_host >= n].tolist())
        routes += [(a, b + v * n, links) for a, b, links in routes for v in range(1, variants) if b + v * n in moved]
    memory = not across.all()
    if memory:
        link_latency = np.concatenate([link_latency, np.full(n, latency if intra_latency is None else intra_latency)])
        link_bandwidth = np.concatenate([link_bandwidth, np.full(n, MEMORY_BANDWIDTH if intra_bandwidth_bits is None
                                                                 else intra_bandwidth_bits / 8.0)])
    route_ptr = np.concatenate([[0], np.cumsum([len(links) for _, _, links in routes])]).astype(np.int64)
    platform = Platform(
        hosts=hosts, link_bandwidth=link_bandwidth.astype(np.float64), link_latency=link_latency.astype(np.float64),
        route_src=np.array([a for a, _, _ in routes], dtype=np.int64),
        route_dst=np.array([b for _, b, _ in routes], dtype=np.int64), route_ptr=route_ptr,
        route_links=(np.concatenate([links for _, _, links in routes]) if routes else np.zeros(0)).astype(np.int64))
    # a message of no bytes is one byte: SimGrid 3.32 starts an empty communication only once it is waited for
    # (so one after another), and one byte adds 0.08 ns at 100 Gb/s
    carried = across if intra_bandwidth_bits is None else np.ones(len(across), dtype=bool)
    transfers = Transfers(step=np.asarray(step, dtype=np.int64), src_host=src_host, dst_host=dst_host,
                          src_rank=np.asarray(src_rank, dtype=np.int64), dst_rank=np.asarray(dst_rank, dtype=np.int64),
                          bytes=np.maximum(np.where(carried, np.asarray(size, dtype=np.int64), 0), 1)
                          * (1 if multiplicity is None else multiplicity))
    return platform, transfers


def _path_variants(src: np.ndarray, dst: np.ndarray, paths: Paths) -> np.ndarray:
    """Per transfer, which of the different paths from its source to its destination it takes
    (0 for the first path seen, 1 for the second, ...): paths compared channel by channel."""
    variant = np.zeros(len(src), dtype=np.int64)
    channels, offsets = paths.channels.astype(np.int64), paths.offsets.tolist()
    seen: dict[tuple[int, int], dict[bytes, int]] = {}
    for t, (a, b) in enumerate(zip(src.tolist(), dst.tolist())):
        known = seen.setdefault((a, b), {})
        variant[t] = known.setdefault(channels[offsets[t]:offsets[t + 1]].tobytes(), len(known))
    return variant


def memory_needed(platform: Platform, transfers: Transfers, actors: int = 1) -> int:
    return (platform.hosts ** 2 * BYTES_PER_HOST_PAIR + len(platform.route_links) * BYTES_PER_HOP
            + transfers.count * BYTES_PER_TRANSFER + actors * BYTES_PER_ACTOR)


# What build_platform allocates per transfer on its way (the hosts, variants, keys and index arrays, the transfers'
# own arrays): a dozen int64 arrays and their temporaries
BUILD_BYTES_PER_TRANSFER = 160


def check_planned(terminals: int, transfers: int, actors: int = 1) -> None:
    """check_size before anything of the platform is made: at least a host per terminal and the
    transfers' SimGrid objects, with what building the platform allocates per transfer (a run
    that would not fit is refused here, not found dying in build_platform under `ulimit -v`)."""
    if terminals > MAX_HOSTS:  # a host per terminal at least: known before a path is routed or a byte read
        raise SynthError(f"simulating {terminals:,} terminals takes a host each, more than the {MAX_HOSTS:,} SimGrid's full "
                         "routing table (hosts^2) allows here; with --ranks-per-node the ranks share fewer hosts")
    need, have = (terminals ** 2 * BYTES_PER_HOST_PAIR + transfers * (BYTES_PER_TRANSFER + BUILD_BYTES_PER_TRANSFER)
                  + actors * BYTES_PER_ACTOR), budget()
    if need > have.bytes:
        raise SynthError(f"simulating {transfers:,} transfers on {terminals:,} hosts needs about {gib(need)}, "
                         f"more than the {have} this run may use")


def check_size(platform: Platform, transfers: Transfers, actors: int = 1) -> None:
    """Refuse a simulation that would not fit, before it starts (one line: the size and the limit)."""
    need, have = memory_needed(platform, transfers, actors), budget()
    if need > have.bytes:
        raise SynthError(f"simulating {transfers.count:,} transfers on {platform.hosts:,} hosts needs about {gib(need)}, "
                         f"more than the {have} this run may use")
