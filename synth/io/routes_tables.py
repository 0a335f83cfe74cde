"""Forwarding tables for the flows of a routes file (`synth tables`).

The routes are read as arrays (synth.io.routes_file.columnar: per phase an (n, 3) flows array and a
Paths), so a large file's flows are never a Python object each; the lists `paths` and `channels`
are made only for the callers that ask for them (synth opensm-check)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from synth.core.errors import SynthError
from synth.io.routes_file import NODE_PATHS_FORMAT, columnar, routes_topology
from synth.topology.paths import Paths
from synth.tables.forwarding import ForwardingTables, build_tables, channel_hops, route_hops


@dataclass
class RoutedFlows:
    src: np.ndarray
    dst: np.ndarray
    phase: np.ndarray
    node_paths: Paths  # node ids, from the source terminal
    channel_paths: Paths | None = None  # channel ids (synth-routes/2 files): parallel links told apart
    bytes: np.ndarray | None = None  # per flow

    @cached_property
    def paths(self) -> list[list[int]]:
        """Every path as a list of node ids."""
        return self.node_paths.as_lists()

    @cached_property
    def channels(self) -> list[list[int]] | None:
        """Every path as a list of channel ids (None in a synth-routes/1 file)."""
        return None if self.channel_paths is None else self.channel_paths.as_lists()


def routed_flows(doc: dict, network) -> RoutedFlows:
    """Every flow of every phase of a (shape-checked) routes document, in file order, with its path
    as node ids (synth-routes/2 records channel ids: each becomes the node it enters)."""
    doc = columnar(doc)
    records = doc["phases"]
    for record in records:
        if record["paths"].num_flows != len(record["flows"]):
            raise SynthError(f"routes file: phase {record['phase']} has {len(record['flows'])} flows but "
                             f"{record['paths'].num_flows} paths")
    flows = np.concatenate([r["flows"] for r in records]) if records else np.zeros((0, 3), dtype=np.int64)
    phase = np.repeat(np.asarray([r["phase"] for r in records], dtype=np.int64),
                      np.asarray([len(r["flows"]) for r in records], dtype=np.int64))
    paths = Paths.concatenate([r["paths"] for r in records])
    paths = Paths(paths.offsets, paths.channels.astype(np.int64, copy=False))
    src = flows[:, 0].copy()
    if doc["format"] == NODE_PATHS_FORMAT:
        return RoutedFlows(src, flows[:, 1].copy(), phase, paths, None, flows[:, 2].copy())
    return RoutedFlows(src, flows[:, 1].copy(), phase, _node_paths(network, paths, src), paths, flows[:, 2].copy())


def _node_paths(network, channel_paths: Paths, sources: np.ndarray) -> Paths:
    """Channel paths as node paths: the source, then the node each channel enters."""
    total = network.num_channels
    channels = channel_paths.channels
    if len(channels) and (channels.min() < 0 or channels.max() >= total):
        raise SynthError(f"routes file: a path names a channel outside 0..{total - 1}")
    offsets = channel_paths.offsets + np.arange(len(channel_paths.offsets), dtype=np.int64)
    nodes = np.empty(int(offsets[-1]), dtype=np.int64)
    first = offsets[:-1]
    nodes[first] = sources
    rest = np.ones(len(nodes), dtype=bool)
    rest[first] = False
    nodes[rest] = network.channel_dst[channels]
    return Paths(offsets, nodes)


def tables_for_routes(doc: dict, lmc: int | None = None) -> tuple[ForwardingTables, RoutedFlows]:
    topology = routes_topology(doc)
    if topology.ports_per_terminal != 1:  # (only an XGFT's terminals have several: W_1 of them)
        raise SynthError(f"{topology.spec}: terminals with {topology.ports_per_terminal} ports (W_1 > 1) cannot be rendered as "
                         "one-port InfiniBand CAs; tables need W_1 = 1")
    network = topology.network()
    flows = routed_flows(doc, network)
    bad = (flows.src < 0) | (flows.src >= network.num_terminals) | (flows.dst < 0) | (flows.dst >= network.num_terminals)
    if bad.any():
        raise SynthError(f"routes file: flow {int(np.argmax(bad))} names a rank outside 0..{network.num_terminals - 1}")
    nodes = flows.node_paths
    lengths = nodes.lengths()
    last = nodes.channels[np.maximum(nodes.offsets[1:] - 1, 0)] if len(nodes.channels) else np.zeros(len(lengths), np.int64)
    first = nodes.channels[np.minimum(nodes.offsets[:-1], max(len(nodes.channels) - 1, 0))] if len(nodes.channels) \
        else np.zeros(len(lengths), np.int64)
    ends_bad = (lengths == 0) | (first != flows.src) | (last != flows.dst)
    if ends_bad.any():
        k = int(np.argmax(ends_bad))
        raise SynthError(f"routes file: the path of flow {k} does not run from rank {flows.src[k]} to rank {flows.dst[k]}")
    # Forwarding is by destination LID: a path through one switch twice would leave it both times by the port the
    # LID's entry names, so it cannot be expressed (Valiant's two segments may cross; a loop-free route can)
    path_of = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    visits, count = np.unique(path_of * network.num_nodes + nodes.channels, return_counts=True)
    if (count > 1).any():
        k, node = divmod(int(visits[np.argmax(count > 1)]), network.num_nodes)
        twice = int(np.unique(visits[count > 1] // network.num_nodes).size)
        raise SynthError(f"routes file: the path of flow {k} ({flows.src[k]} -> {flows.dst[k]}) passes "
                         f"{network.node_names[node]} twice ({twice} path{'s' * (twice != 1)} do so): forwarding by "
                         f"destination cannot send a packet on two ways from one switch; route with a router whose "
                         f"paths visit each switch once")
    hops = route_hops(network, nodes) if flows.channel_paths is None else channel_hops(network, flows.channel_paths)
    return build_tables(topology, network, flows.dst, hops, lmc), flows
