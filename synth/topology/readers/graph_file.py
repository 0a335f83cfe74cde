"""Reading a candidate topology as a graph: an edge list, GML, or networkx's node-link JSON (issue 26).

What a file gives (docs/formats.md, "Graph files"):
- nodes and links; a link listed twice is two parallel links; a directed graph (GML `directed 1`,
  node-link `"directed": true`) has one-way links;
- a link's bandwidth: its `bandwidth` (or `capacity`) attribute, or an edge list's third column;
- terminals: nodes marked `terminal: true` or with `kind`/`type` terminal, host or ca (each must hang
  from one router by one link), or a router's `terminals: K` (K terminals attached to it). An edge
  list has no attributes: the spec's `p=P` attaches P terminals to every router;
- ranks that forward: nodes marked `forwards: true` or with `kind`/`type` gpu (a GPU joined to others by
  NVLinks with no switch: its own router, its ports its links); the others are switches (the spec's
  `ranks=routers` makes every node one).

Every error is one line naming the file and the line (edge list) or the node / link and field.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

from synth.core.errors import SynthError

MAX_FILE_BYTES = 64 << 20
# A link's bandwidth relative to 1: the loads divide by it, so it stays where the arithmetic does (1e-300 made
# contentions overflow into nonsense, found by a tester)
MIN_BANDWIDTH, MAX_BANDWIDTH = 1e-6, 1e6
MAX_ATTACHED = 1 << 20  # terminals on one router (family.MAX_TERMINALS)
TERMINAL_KINDS = {"terminal", "host", "ca", "hca", "endpoint"}
FORWARDING_KINDS = {"gpu", "npu", "accelerator"}  # a rank that is its own router


class GraphFileError(SynthError):
    pass


@dataclass
class GraphFile:
    names: list[str]  # every node, in file order
    links: list[tuple[int, int, float]]  # (node, node, bandwidth), in file order; parallel links repeat
    directed: bool
    marked: list[bool]  # per node: a terminal the file marks
    attached: list[int]  # per node: terminals the file attaches to it (`terminals: K`)
    forwards: list[bool] | None = None  # per node: a rank that forwards (`forwards: true`, kind gpu); None: none
    sha256: str = ""  # of the bytes read (files made on the network record it: a file replaced since is noticed)


def read_graph_file(path: str) -> GraphFile:
    import dataclasses
    import hashlib

    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise GraphFileError(f"{path}: {size:,} bytes, more than the {MAX_FILE_BYTES:,} a graph file may have")
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise GraphFileError(f"cannot read the graph file {path}: {exc.strerror or exc}") from None
    # as text mode reads it: -sig, a byte-order mark is no name; universal newlines
    text = data.decode("utf-8-sig", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    lower = path.lower()
    if lower.endswith(".gml"):
        graph = _from_networkx(_read_gml(text, path), path)
    elif lower.endswith(".json"):
        graph = _from_networkx(_read_node_link(text, path), path)
    else:
        graph = _read_edge_list(text, path)
    return dataclasses.replace(graph, sha256=hashlib.sha256(data).hexdigest())


def _read_edge_list(text: str, path: str) -> GraphFile:
    """`A B [BANDWIDTH]` per line; `#` starts a comment."""
    index: dict[str, int] = {}
    links = []
    for number, raw in enumerate(text.splitlines(), start=1):
        fields = raw.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) not in (2, 3):
            raise GraphFileError(f"{path}: line {number}: expected 'A B [BANDWIDTH]', got {len(fields)} fields")
        a, b = fields[0], fields[1]
        if a == b:
            raise GraphFileError(f"{path}: line {number}: a link from {a!r} to itself")
        bandwidth = _bandwidth(fields[2] if len(fields) == 3 else 1.0, f"{path}: line {number}: bandwidth")
        ends = [index.setdefault(name, len(index)) for name in (a, b)]
        links.append((ends[0], ends[1], bandwidth))
    names = list(index)
    if not links:
        raise GraphFileError(f"{path}: no links")
    return GraphFile(names, links, False, [False] * len(names), [0] * len(names))


def _bandwidth(value, where: str) -> float:
    try:
        number = float(value) if not isinstance(value, bool) else float("nan")
    except (TypeError, ValueError, OverflowError):
        raise GraphFileError(f"{where}: not a number: {str(value)[:40]!r}") from None
    if not MIN_BANDWIDTH <= number <= MAX_BANDWIDTH:
        raise GraphFileError(f"{where}: {number:g} is not a bandwidth of {MIN_BANDWIDTH:g} to {MAX_BANDWIDTH:g}")
    return number


def _read_gml(text: str, path: str):
    import networkx as nx

    if "multigraph" not in text:  # a link listed twice is two parallel links (networkx refuses it otherwise)
        text = re.sub(r"\bgraph\s*\[", "graph [ multigraph 1", text, count=1)
    try:
        try:
            return nx.parse_gml(text, label="label")  # nodes named by their labels where every node has one
        except nx.NetworkXError as exc:
            if "has no 'label' attribute" not in str(exc):
                raise
            return nx.parse_gml(text, label="id")
    except (nx.NetworkXError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise GraphFileError(f"{path}: not GML that networkx reads: {(str(exc).splitlines() or [''])[0][:160]}") from None


def _read_node_link(text: str, path: str):
    import networkx as nx

    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GraphFileError(f"{path}: line {exc.lineno}: not JSON: {exc.msg}") from None
    except RecursionError:
        raise GraphFileError(f"{path}: not JSON synth reads: nested too deep") from None
    if not isinstance(data, dict) or "nodes" not in data or not any(k in data for k in ("links", "edges")):
        raise GraphFileError(f"{path}: not networkx's node-link JSON (an object with 'nodes' and 'links')")
    edges = "links" if "links" in data else "edges"
    data = {**data, "multigraph": True}  # a link listed twice is two parallel links, whatever the file says
    nodes = data["nodes"]
    if not isinstance(nodes, list) or not all(isinstance(node, dict) and "id" in node for node in nodes):
        raise GraphFileError(f"{path}: nodes: not a list of objects with an 'id'")
    try:
        graph = nx.node_link_graph(data, edges=edges) if _takes_edges() else nx.node_link_graph(data)
    except Exception as exc:  # noqa: BLE001 - whatever networkx raises on a malformed document is the file's fault
        raise GraphFileError(f"{path}: node-link JSON that networkx does not read: {str(exc)[:160]}") from None
    if graph.number_of_nodes() != len(nodes):
        declared = {json.dumps(node["id"]) for node in nodes}
        stray = next((node for node in graph.nodes if json.dumps(node) not in declared), None)
        raise GraphFileError(f"{path}: a link names node {str(stray)[:60]!r}, which 'nodes' does not list")
    return graph


def _takes_edges() -> bool:
    import inspect

    import networkx as nx

    return "edges" in inspect.signature(nx.node_link_graph).parameters


def _from_networkx(graph, path: str) -> GraphFile:
    nodes = list(graph.nodes)
    index = {node: i for i, node in enumerate(nodes)}
    names = [str(node) for node in nodes]
    if len(set(names)) != len(names):
        raise GraphFileError(f"{path}: two nodes have the same name once written as text")
    marked, attached, forwards = [], [], []
    for node in nodes:
        data = graph.nodes[node]
        kind = str(data.get("kind", data.get("type", ""))).lower()
        for field in ("terminal", "forwards"):
            flag = data.get(field, False)
            if flag not in (True, False, 0, 1) or isinstance(flag, float):
                raise GraphFileError(f"{path}: node {str(node)[:60]!r}: {field}: {str(flag)[:40]!r} is not true or "
                                     "false")
        marked.append(bool(data.get("terminal", False)) or kind in TERMINAL_KINDS)
        forwards.append(bool(data.get("forwards", False)) or kind in FORWARDING_KINDS)
        count = data.get("terminals", 0)
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_ATTACHED:
            raise GraphFileError(f"{path}: node {str(node)[:60]!r}: terminals: {str(count)[:40]!r} is not a count of "
                                 f"0 to {MAX_ATTACHED:,} terminals")
        attached.append(count)
    links = []
    for a, b, data in graph.edges(data=True):
        if a == b:
            raise GraphFileError(f"{path}: link {str(a)!r}-{str(b)!r}: a link from a node to itself")
        value = data.get("bandwidth", data.get("capacity", 1.0))
        links.append((index[a], index[b], _bandwidth(value, f"{path}: link {str(a)!r}-{str(b)!r}: bandwidth")))
    if not links:
        raise GraphFileError(f"{path}: no links")
    return GraphFile(names, links, graph.is_directed(), marked, attached, forwards if any(forwards) else None)
