"""Forwarding tables for the flows of a routes file (`synth tables`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.io.routes_file import NODE_PATHS_FORMAT
from synth.tables.forwarding import ForwardingTables, build_tables, channel_hops, route_hops
from synth.topology import Xgft, parse_topology


@dataclass
class RoutedFlows:
    src: np.ndarray
    dst: np.ndarray
    phase: np.ndarray
    paths: list[list[int]]  # node ids, from the source terminal
    channels: list[list[int]] | None = None  # channel ids (synth-routes/2 files): parallel links told apart
    bytes: np.ndarray | None = None  # per flow


def routed_flows(doc: dict, network) -> RoutedFlows:
    """Every flow of every phase of a (shape-checked) routes document, in file order, with its path
    as node ids (synth-routes/2 records channel ids: each becomes the node it enters)."""
    src, dst, phase, paths, channels, size = [], [], [], [], [], []
    for record in doc["phases"]:
        flows = record["flows"]
        if len(flows) != len(record["paths"]):
            raise SynthError(f"routes file: phase {record['phase']} has {len(flows)} flows but {len(record['paths'])} paths")
        src += [int(f[0]) for f in flows]
        dst += [int(f[1]) for f in flows]
        size += [int(f[2]) for f in flows]
        phase += [int(record["phase"])] * len(flows)
        paths += (record["paths"] if doc["format"] == NODE_PATHS_FORMAT else
                  _node_paths(network, record["paths"], [f[0] for f in flows]))
        channels += record["paths"]
    as_array = lambda values: np.asarray(values, dtype=np.int64)  # noqa: E731
    return RoutedFlows(as_array(src), as_array(dst), as_array(phase), paths,
                       None if doc["format"] == NODE_PATHS_FORMAT else channels, as_array(size))


def _node_paths(network, channel_paths: list[list[int]], sources: list[int]) -> list[list[int]]:
    heads, total = network.channel_dst.tolist(), network.num_channels
    if any(c < 0 or c >= total for path in channel_paths for c in path):
        raise SynthError(f"routes file: a path names a channel outside 0..{total - 1}")
    return [[s] + [heads[c] for c in path] for s, path in zip(sources, channel_paths)]


def tables_for_routes(doc: dict, lmc: int | None = None) -> tuple[ForwardingTables, RoutedFlows]:
    topology = parse_topology(doc["topology"]["spec"])
    if isinstance(topology, Xgft) and topology.w[0] != 1:
        raise SynthError(f"{topology.spec}: terminals with {topology.w[0]} ports (W_1 > 1) cannot be rendered as "
                         "one-port InfiniBand CAs; tables need W_1 = 1")
    network = topology.network()
    flows = routed_flows(doc, network)
    bad = (flows.src < 0) | (flows.src >= network.num_terminals) | (flows.dst < 0) | (flows.dst >= network.num_terminals)
    if bad.any():
        raise SynthError(f"routes file: flow {int(np.argmax(bad))} names a rank outside 0..{network.num_terminals - 1}")
    ends_ok = [len(p) > 0 and p[0] == s and p[-1] == d for p, s, d in zip(flows.paths, flows.src.tolist(), flows.dst.tolist())]
    if not all(ends_ok):
        k = ends_ok.index(False)
        raise SynthError(f"routes file: the path of flow {k} does not run from rank {flows.src[k]} to rank {flows.dst[k]}")
    hops = route_hops(network, flows.paths) if flows.channels is None else channel_hops(network, flows.channels)
    return build_tables(topology, network, flows.dst, hops, lmc), flows
