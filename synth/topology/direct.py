"""Direct networks (dragonfly, HyperX, torus, Kautz, Slim Fly, MLFM, OFT): a router graph with
terminals attached, turned into the Network arrays every family shares.

Node ids: terminals 0..N-1 (numbered router by router, so router r's terminals are contiguous),
then routers N..N+R-1. Channel ids: terminal t's injection channel 2t (terminal -> router) and
ejection channel 2t+1; then the router links in the order the family lists them: an undirected
link i gives channels 2N+2i (listed direction) and 2N+2i+1 (reverse), a directed link i (Kautz)
the one channel 2N+i. Ports: a terminal has port 1; a router numbers its terminal ports 1..p
first, then one port per incident link in link order (a directed link takes an out-port at its
source and an in-port at its destination).

Terminal bandwidth: 1 by default; `"degree"` gives each terminal link the router's total
outgoing link bandwidth, for networks whose nodes are their own routers (Pham26, DeSensi24): a node with d
ports of bandwidth 1 injects at up to d, and an injection link of bandwidth 1 would throttle it
artificially (Pham26's fair-comparison rule: a fixed bandwidth per node, divided over its ports).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.topology.network import Network

TERMINAL_CLASS = "terminal"


@dataclass
class RouterGraph:
    router_names: list[str]
    terminals_per_router: np.ndarray  # (R,) terminals attached to each router
    link_src: np.ndarray  # (L,) router indices 0..R-1; parallel links repeat a pair
    link_dst: np.ndarray
    link_class: np.ndarray  # (L,) index into class_names
    class_names: tuple[str, ...]  # of router links, e.g. ("local", "global")
    directed: bool = False
    terminal_bandwidth: str | float = 1.0  # a number, or "degree"
    router_level: np.ndarray | None = None  # (R,) level for tiered networks (OFT, MLFM); default 1

    @property
    def num_routers(self) -> int:
        return len(self.router_names)

    @property
    def num_terminals(self) -> int:
        return int(self.terminals_per_router.sum())

    @property
    def num_channels(self) -> int:
        return 2 * self.num_terminals + len(self.link_src) * (1 if self.directed else 2)


def build_direct_network(spec: str, family: str, graph: RouterGraph) -> Network:
    n, r = graph.num_terminals, graph.num_routers
    src, dst = graph.link_src.astype(np.int64), graph.link_dst.astype(np.int64)
    links = len(src)
    terminal_router = np.repeat(np.arange(r, dtype=np.int64), graph.terminals_per_router)
    first_terminal = np.concatenate([[0], np.cumsum(graph.terminals_per_router)[:-1]]).astype(np.int64)
    terminal_port = np.arange(n, dtype=np.int64) - first_terminal[terminal_router] + 1

    # One port per (link, endpoint), numbered per router in link order after its terminal ports.
    ends = np.concatenate([src, dst])
    link_index = np.tile(np.arange(links), 2)
    side = np.repeat([0, 1], links)  # within a link: its source end first
    order = np.lexsort((side, link_index, ends))
    sorted_ends = ends[order]
    starts = np.searchsorted(sorted_ends, np.arange(r))
    rank_in_router = np.arange(2 * links) - starts[sorted_ends]
    port = np.empty(2 * links, dtype=np.int64)
    port[order] = graph.terminals_per_router[sorted_ends] + 1 + rank_in_router
    src_port, dst_port = port[:links], port[links:]

    router_node = lambda routers: routers + n  # noqa: E731
    terminals = np.arange(n, dtype=np.int64)
    t_src = np.stack([terminals, router_node(terminal_router)], axis=1).ravel()
    t_dst = np.stack([router_node(terminal_router), terminals], axis=1).ravel()
    t_src_port = np.stack([np.ones(n, dtype=np.int64), terminal_port], axis=1).ravel()
    t_dst_port = np.stack([terminal_port, np.ones(n, dtype=np.int64)], axis=1).ravel()
    if graph.directed:
        l_src, l_dst, l_src_port, l_dst_port = router_node(src), router_node(dst), src_port, dst_port
        l_class = graph.link_class
    else:
        l_src = np.stack([router_node(src), router_node(dst)], axis=1).ravel()
        l_dst = np.stack([router_node(dst), router_node(src)], axis=1).ravel()
        l_src_port = np.stack([src_port, dst_port], axis=1).ravel()
        l_dst_port = np.stack([dst_port, src_port], axis=1).ravel()
        l_class = np.repeat(graph.link_class, 2)

    out_degree = np.bincount(l_src - n, minlength=r).astype(np.float64)
    if graph.terminal_bandwidth == "degree":
        t_bandwidth = np.repeat(out_degree[terminal_router], 2)
    else:
        t_bandwidth = np.full(2 * n, float(graph.terminal_bandwidth))
    levels = np.ones(r, dtype=np.int64) if graph.router_level is None else graph.router_level.astype(np.int64)
    return Network(
        spec=spec,
        family=family,
        num_terminals=n,
        node_level=np.concatenate([np.zeros(n, dtype=np.int64), levels]),
        node_names=[f"t{t}" for t in range(n)] + list(graph.router_names),
        channel_src=np.concatenate([t_src, l_src]),
        channel_src_port=np.concatenate([t_src_port, l_src_port]),
        channel_dst=np.concatenate([t_dst, l_dst]),
        channel_dst_port=np.concatenate([t_dst_port, l_dst_port]),
        channel_bandwidth=np.concatenate([t_bandwidth, np.ones(len(l_src))]),
        channel_class=np.concatenate([np.zeros(2 * n, dtype=np.int64), np.asarray(l_class, dtype=np.int64) + 1]),
        class_names=(TERMINAL_CLASS, *graph.class_names),
        nodes_are_routers=graph.terminal_bandwidth == "degree" and bool((graph.terminals_per_router == 1).all()),
    )
