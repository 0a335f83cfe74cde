"""The family-independent network model: nodes and directed channels as numpy arrays.

Terminals are nodes 0..N-1, so a flow names its endpoints by rank; switches follow. Every
directed channel carries (src node, src port, dst node, dst port, bandwidth), ports numbered per
node from 1 as in InfiniBand. Two channels may join the same two nodes (dragonfly global
bundles, HyperX trunks), so a path names channels, never node pairs. Every channel has a class
(XGFT: its stage; direct networks: terminal, local, global, dimension k, ...) for per-class
maxima. A family module builds a Network and keeps its own addressing; everything downstream
(loads, checks, tables) only needs these arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(eq=False)
class Network:
    spec: str
    family: str
    num_terminals: int
    node_level: np.ndarray  # (num_nodes,) layer of every node; terminals are level 0
    node_names: list[str]
    channel_src: np.ndarray  # (num_channels,) node ids
    channel_src_port: np.ndarray
    channel_dst: np.ndarray
    channel_dst_port: np.ndarray
    channel_bandwidth: np.ndarray | None = None  # (num_channels,) relative to 1; None: all 1
    channel_class: np.ndarray | None = None  # (num_channels,) index into class_names; None: the stage
    class_names: tuple[str, ...] = ()
    failed_nodes: np.ndarray | None = None  # degraded networks (synth.topology.degraded): nodes no flow reaches
    # One terminal per router whose link has the router's total bandwidth: the node is its own
    # router (Pham26's Kautz and 2dfc nodes, DeSensi24's torus nodes), and its messages start on the
    # router's ports (synth.pricing.alphabeta).
    nodes_are_routers: bool = False
    # A tree in stages (XGFT): every channel goes up or down one stage and its class is the stage, so
    # loads and maxima are shown per stage and direction (synth.io.loads_csv, the console's stage
    # table). False: direct networks, shown per channel class.
    staged: bool = False
    # A real fabric's own identifiers (synth.topology.fabric), 0 where its file has none; None for the families, whose
    # tables get synthetic ones (synth.io.switch_tables, synth.tables.forwarding.LidPlan): node GUIDs, each
    # terminal's cabled port GUID, and the LIDs its subnet manager gave (a terminal's port base LID, a switch's port
    # 0 LID) under its LMC.
    node_guids: np.ndarray | None = None  # (num_nodes,) uint64
    port_guids: np.ndarray | None = None  # (num_terminals,) uint64
    node_lids: np.ndarray | None = None  # (num_nodes,) int64
    lmc: int = 0
    _channel_keys: np.ndarray | None = field(default=None, repr=False)
    _channel_order: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.channel_bandwidth is None:
            self.channel_bandwidth = np.ones(self.num_channels)
        if self.channel_class is None:  # tree-like networks: the stage of every channel
            stage = self.channel_stage()
            self.channel_class = stage - 1
            self.class_names = tuple(f"stage {k}" for k in range(1, int(stage.max(initial=0)) + 1))

    @property
    def num_nodes(self) -> int:
        return int(self.node_level.shape[0])

    @property
    def num_channels(self) -> int:
        return int(self.channel_src.shape[0])

    @property
    def num_switches(self) -> int:
        return self.num_nodes - self.num_terminals

    def cabled(self) -> np.ndarray:
        """(num_channels,) bool: channels between working nodes (a degraded network's failed
        switches and cut-off terminals keep channels in the arrays, but no cable)."""
        if self.failed_nodes is None:
            return np.ones(self.num_channels, dtype=bool)
        failed = np.zeros(self.num_nodes, dtype=bool)
        failed[self.failed_nodes] = True
        return ~failed[self.channel_src] & ~failed[self.channel_dst]

    def is_terminal(self, node: int) -> bool:
        return 0 <= node < self.num_terminals

    def node_kind(self, node: int) -> str:
        return "terminal" if self.is_terminal(node) else "switch"

    def channel_label(self, channel: int) -> str:
        """A person-readable description of one directed channel."""
        src, dst = int(self.channel_src[channel]), int(self.channel_dst[channel])
        return (
            f"{self.node_names[src]}[{int(self.channel_src_port[channel])}] -> "
            f"{self.node_names[dst]}[{int(self.channel_dst_port[channel])}]"
        )

    def channel_is_up(self) -> np.ndarray:
        """True for channels that climb a level (towards the root of a tree-like network)."""
        return self.node_level[self.channel_dst] > self.node_level[self.channel_src]

    def channel_stage(self) -> np.ndarray:
        """The stage of every channel: the higher of its two endpoint levels (E(l) counts stage l)."""
        return np.maximum(self.node_level[self.channel_src], self.node_level[self.channel_dst])

    def find_channels(self, src_nodes: np.ndarray, dst_nodes: np.ndarray) -> np.ndarray:
        """Channel id for every (src node, dst node) pair, -1 where no channel joins them.

        Independent of any family's addressing: a sorted key lookup over the channel arrays.
        With parallel channels between the same two nodes, the lowest channel id is returned.
        """
        if self._channel_keys is None:
            keys = self.channel_src.astype(np.int64) * self.num_nodes + self.channel_dst
            order = np.argsort(keys, kind="stable")
            self._channel_keys, self._channel_order = keys[order], order
        keys = np.asarray(src_nodes, dtype=np.int64) * self.num_nodes + np.asarray(dst_nodes, dtype=np.int64)
        pos = np.searchsorted(self._channel_keys, keys)
        pos_clipped = np.minimum(pos, len(self._channel_keys) - 1)
        found = (pos < len(self._channel_keys)) & (self._channel_keys[pos_clipped] == keys)
        valid_nodes = (np.asarray(src_nodes) >= 0) & (np.asarray(dst_nodes) >= 0)
        return np.where(found & valid_nodes, self._channel_order[pos_clipped], -1)

    def cost_per_endpoint(self) -> tuple[float, float]:
        """(switch ports, links) per terminal, Prisacari20 sec. 7.2's cost measures: every port of a switch
        counts, terminal ports included; a link is one cable, i.e. one pair of ports (the two
        directions of an undirected link share it, a directed link has its own)."""
        width = int(max(self.channel_src_port.max(initial=0), self.channel_dst_port.max(initial=0))) + 1
        tail = self.channel_src.astype(np.int64) * width + self.channel_src_port
        head = self.channel_dst.astype(np.int64) * width + self.channel_dst_port
        ends = np.concatenate([tail, head])
        switch_ports = np.unique(ends[ends >= self.num_terminals * width])
        cables = np.unique(np.stack([np.minimum(tail, head), np.maximum(tail, head)], axis=1), axis=0)
        return len(switch_ports) / self.num_terminals, len(cables) / self.num_terminals

    def to_json_dict(self) -> dict:
        """The `synth-topology/1` document (see docs/formats.md)."""
        levels = self.node_level.tolist()
        nodes = [
            {"id": i, "name": self.node_names[i], "kind": self.node_kind(i), "level": levels[i]}
            for i in range(self.num_nodes)
        ]
        columns = zip(
            self.channel_src.tolist(),
            self.channel_src_port.tolist(),
            self.channel_dst.tolist(),
            self.channel_dst_port.tolist(),
        )
        channels = [
            {"id": i, "src": s, "src_port": sp, "dst": d, "dst_port": dp}
            for i, (s, sp, d, dp) in enumerate(columns)
        ]
        for channel, bandwidth in zip(np.flatnonzero(self.channel_bandwidth != 1).tolist(),
                                      self.channel_bandwidth[self.channel_bandwidth != 1].tolist()):
            channels[channel]["bandwidth"] = bandwidth  # only where it is not 1, the default
        return {
            "format": "synth-topology/1",
            "spec": self.spec,
            "family": self.family,
            "terminals": self.num_terminals,
            "nodes": nodes,
            "channels": channels,
        }


def differing_rates(network: Network) -> list[float]:
    """The distinct link rates (relative bandwidths) of the cabled channels where the links differ in rate, else [].
    A real fabric (`fabric:`, its CA cables' rates read from the file) differs where any two links do; any other
    network where two terminal links or two router links do: a terminal link at its router's total bandwidth (tori,
    HyperX, Kautz with one terminal per router, a graph whose nodes are the ranks; synth.topology.direct) is how
    those are modeled, not a faster link."""
    cabled = network.cabled()
    rates = np.unique(network.channel_bandwidth[cabled]).tolist()
    if len(rates) <= 1:
        return []
    if str(network.spec).startswith("fabric:"):
        return rates
    n = network.num_terminals
    terminal = (network.channel_src < n) | (network.channel_dst < n)
    for group in (cabled & terminal, cabled & ~terminal):
        if len(np.unique(network.channel_bandwidth[group])) > 1:
            return rates
    return []
