"""Any network given as a graph: `graph:FILE[:p=P]` (issue 26), for candidate topologies that no family
builds. FILE is an edge list, GML or networkx node-link JSON (synth.topology.readers.graph_file says what each
gives). The network is a generic direct network: the routers are the file's nodes that are not
terminals, in file order; terminals hang from them, numbered router by router (synth.topology.direct's
layout), those the file marks keeping their names; `p=P` attaches P terminals to every router of a
file that marks none; `ranks=routers` makes every node a rank that forwards (a GPU of a mesh joined by
NVLinks with no switch: its own router, its ports its links, as Pham26's Kautz and 2dfc nodes), one
terminal a node whose link carries the node's total bandwidth (synth.pricing.alphabeta: a message
starts at the first link of its path). Links keep the file's bandwidths; a link listed twice is two
parallel links.
The generic routers apply (minimal, minimal-random, valiant, ugal, paths), with the terminal cut
and the LP bound.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from synth.core.errors import SynthError
from synth.core.validate import parse_int, show
from synth.topology.readers.graph_file import GraphFile, GraphFileError, read_graph_file
from synth.topology.direct import RouterGraph, build_direct_network
from synth.topology.distances import connected_parts
from synth.topology.family import (Family, Topology, check_counts, file_spec_options, recognize_option)
from synth.topology.recognize.recognized import recognized
from synth.topology.network import Network

SYNTAX = "graph:FILE[:p=P][:ranks=routers][:recognize=no]"
LINK_CLASS = "link"


@dataclass(frozen=True, eq=False)
class GraphNetwork(Topology):
    path: str
    p: int | None = None  # terminals per router, for a file that marks none
    recognize: bool = True  # matched against the families (synth.topology.recognize); no: always generic
    forwarding: bool = False  # ranks=routers: every node a rank that forwards (a GPU mesh)
    note: str = ""  # what recognition found, when it left the network generic

    family = "graph"

    @property
    def spec(self) -> str:
        return f"graph:{self.path}" + (f":p={self.p}" if self.p is not None else "") + \
            (":ranks=routers" if self.forwarding else "") + ("" if self.recognize else ":recognize=no")

    def label(self) -> str:
        return f"graph {os.path.basename(self.path)}" + (f", {self.p} terminals per router" if self.p else "") + \
            (", every node a rank that forwards" if self.forwarding else "")

    @cached_property
    def graph_file(self) -> GraphFile:
        return read_graph_file(self.path)

    @cached_property
    def graph_network(self) -> Network:
        """The file read and built (once: num_terminals needs it before build_network)."""
        return build_graph_network(self.graph_file, self.path, self.p, self.spec, self.forwarding)

    @property
    def num_terminals(self) -> int:
        return self.graph_network.num_terminals

    def build_network(self):
        return self.graph_network

    @cached_property
    def digest(self) -> str:
        return self.graph_file.sha256  # of the bytes the network was built from

    def source_digest(self) -> str:
        return self.digest

    def facts(self) -> list[tuple[str, str]]:
        network = self.graph_network
        n = network.num_terminals
        links = network.num_channels - 2 * n
        directed = self.graph_file.directed
        facts = [("file", self.path), ("routers", str(network.num_switches)), ("terminals", str(n)),
                 ("router links", f"{links if directed else links // 2}" + (" (one-way)" if directed else ""))]
        rates = sorted(set(network.channel_bandwidth.tolist()))
        if len(rates) > 1:
            facts.append(("link bandwidths", ", ".join(f"{r:g}" for r in rates)))
        return facts + [("family", self.note or "not looked for (recognize=no)")] * (self.note != "" or not self.recognize)


def build_graph_network(graph: GraphFile, path: str, p: int | None, spec: str, forwarding: bool = False) -> Network:
    count = len(graph.names)
    neighbours: list[list[int]] = [[] for _ in range(count)]
    for k, (a, b, _) in enumerate(graph.links):
        neighbours[a].append(k)
        neighbours[b].append(k)
    marked = np.array(graph.marked, dtype=bool)
    if p is not None and (marked.any() or any(graph.attached)):
        raise GraphFileError(f"{path}: the file marks its terminals; leave out :p={p}")
    forwards = np.ones(count, dtype=bool) if forwarding else np.array(graph.forwards or [False] * count, dtype=bool)
    if forwards.any() and (p is not None or marked.any() or any(graph.attached)):
        raise GraphFileError(f"{path}: " + ("ranks=routers makes every node a rank" if forwarding else
                                            "its ranks are the nodes that forward")
                             + ": leave out " + (f":p={p}" if p is not None else "the file's terminals"))
    if marked.any() and graph.directed:
        raise GraphFileError(f"{path}: a directed graph's terminals are attached with a router's 'terminals: K', "
                             "not marked")
    router_of_terminal: dict[int, int] = {}
    for node in np.flatnonzero(marked).tolist():
        if len(neighbours[node]) != 1:
            raise GraphFileError(f"{path}: terminal {graph.names[node]!r} has {len(neighbours[node])} links; a "
                                 "terminal hangs from one router by one link")
        a, b, _ = graph.links[neighbours[node][0]]
        router = b if a == node else a
        if marked[router]:
            raise GraphFileError(f"{path}: terminal {graph.names[node]!r} is linked to terminal "
                                 f"{graph.names[router]!r}, not to a router")
        router_of_terminal[node] = router
    routers = np.flatnonzero(~marked)
    router_index = np.full(count, -1, dtype=np.int64)
    router_index[routers] = np.arange(len(routers))
    hanging: list[list[int]] = [[] for _ in range(len(routers))]
    for node, router in router_of_terminal.items():
        hanging[router_index[router]].append(node)
    attached = np.array([graph.attached[r] for r in routers.tolist()], dtype=np.int64)
    per_router = np.array([len(h) for h in hanging], dtype=np.int64) + (attached if p is None else p)
    if forwards.any():  # one rank a forwarding node (its own router), none at a switch
        per_router = forwards[routers].astype(np.int64)
    if not per_router.any():
        raise GraphFileError(f"{path}: no terminals: give {spec}:p=P (P terminals per router), or mark them in "
                             "the file (a node's terminal: true, or a router's terminals: K)")
    router_links = [k for k, (a, b, _) in enumerate(graph.links) if not marked[a] and not marked[b]]
    n = int(per_router.sum())
    channels = 2 * n + len(router_links) * (1 if graph.directed else 2)
    check_counts(spec, n, n + len(routers), channels)
    _check_connected(path, len(routers), router_index, graph, router_links)

    link_src = router_index[[graph.links[k][0] for k in router_links]]
    link_dst = router_index[[graph.links[k][1] for k in router_links]]
    network = build_direct_network(spec, "graph", RouterGraph(
        router_names=[graph.names[r] for r in routers.tolist()], terminals_per_router=per_router,
        link_src=np.asarray(link_src, dtype=np.int64), link_dst=np.asarray(link_dst, dtype=np.int64),
        link_class=np.zeros(len(router_links), dtype=np.int64), class_names=(LINK_CLASS,), directed=graph.directed))

    # the file's own terminal names and bandwidths (build_direct_network names terminals t0.. at bandwidth 1)
    names = list(network.node_names)
    bandwidth = network.channel_bandwidth.copy()
    first = np.concatenate([[0], np.cumsum(per_router)[:-1]])
    for r, nodes in enumerate(hanging):
        for k, node in enumerate(nodes):
            t = int(first[r]) + k
            names[t] = graph.names[node]
            bandwidth[2 * t: 2 * t + 2] = graph.links[neighbours[node][0]][2]
    # an unnamed terminal is t<index>, or <router>/t<index> where a node of the file has that name
    taken = set(names[n:]) | {graph.names[node] for node in router_of_terminal}
    router_of = np.repeat(np.arange(len(routers)), per_router)
    named = {int(first[r]) + k for r, nodes in enumerate(hanging) for k in range(len(nodes))}
    for t in range(n):
        if t not in named and names[t] in taken:
            names[t] = f"{names[n + int(router_of[t])]}/t{t}"
    if len(set(names)) != len(names):
        raise GraphFileError(f"{path}: node names repeat once terminals are named")
    width = 1 if graph.directed else 2
    for i, k in enumerate(router_links):
        bandwidth[2 * n + width * i: 2 * n + width * (i + 1)] = graph.links[k][2]
    if forwards.any():  # a rank's terminal link carries its node's total: its links' bandwidths summed
        out = np.bincount(network.channel_src[2 * n:] - n, weights=bandwidth[2 * n:], minlength=len(routers))
        bandwidth[:2 * n] = np.repeat(out[np.flatnonzero(per_router)], 2)
        network.nodes_are_routers = True  # a message starts at the first link of its path (synth.pricing.alphabeta)
    network.node_names = names
    network.channel_bandwidth = bandwidth
    return network


def _check_connected(path: str, count: int, router_index: np.ndarray, graph, router_links: list[int]) -> None:
    """Every router reaches every other (both ways, for one-way links): else some pairs have no route."""
    a = router_index[[graph.links[k][0] for k in router_links]]
    b = router_index[[graph.links[k][1] for k in router_links]]
    parts, labels = connected_parts(count, a, b, graph.directed)
    if parts > 1:
        alone = int(np.flatnonzero(labels != labels[0])[0])
        names = [graph.names[r] for r in np.flatnonzero(router_index >= 0).tolist()]
        raise GraphFileError(f"{path}: the routers fall into {parts} parts that no path joins (e.g. {names[0]!r} and "
                             f"{names[alone]!r})" + (" along its one-way links" if graph.directed else ""))


def parse_graph_spec(text: str) -> Topology:
    path, options = file_spec_options(text, ("p", "ranks", "recognize"))
    if not path:
        raise SynthError(f"spec 'graph:{text}': give the graph file, {SYNTAX}")
    spec = show("graph:" + text)
    p = parse_int(options["p"], f"option p of {spec}", 1, 1 << 16) if "p" in options else None
    if options.get("ranks", "routers") != "routers":
        raise SynthError(f"option ranks of {spec} must be routers, got {show(options['ranks'])}")
    # absolute: routes files keep it
    graph = GraphNetwork(os.path.abspath(path), p, recognize_option(options, spec), forwarding="ranks" in options)
    if not graph.recognize:
        return graph
    found = recognized(graph)
    forwarding = graph.forwarding or graph.graph_file.forwards is not None
    if forwarding and found is not graph and not found.network().nodes_are_routers:
        # a family whose terminals hang from routers (a dragonfly's) would price a GPU's messages at one port
        return dataclasses.replace(graph, note=f"a {found.family} as a graph, but its ranks do not forward there: "
                                               "kept generic (its ranks forward)")
    return found


FAMILY = Family("graph", SYNTAX, "any network as a graph file (an edge list, GML or networkx node-link JSON), "
                "terminals marked in it or P per router: a generic direct network", parse_graph_spec)
