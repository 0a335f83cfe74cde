"""A real InfiniBand fabric read from its topology file: `fabric:FILE` (issue 26).

FILE is what `ibnetdiscover` writes on the fabric (or an ibsim net file, or `synth topology SPEC
--format ibnetdiscover`), read by synth.topology.readers.ibnetdiscover. The network keeps the file's own parts:
- node names: a node's description where the file gives one and it is unique, else its quoted id;
- node GUIDs (switchguid= / caguid=), the CA ports' GUIDs and LIDs, the switches' port 0 LIDs;
- port numbers, as cabled;
- parallel cables between two switches, as separate channels;
- link rates (`4xEDR` in ibnetdiscover's comments), as channel bandwidths relative to the terminals' most common
  rate.

Layout (the direct networks' own, synth.topology.direct): terminals are the CAs with a cabled port,
in natural order of their names (node2 before node10), then the switches in the same order.
Terminal t's injection channel is 2t and its ejection channel 2t + 1; then every switch-to-switch
cable gives two channels, in order of (switch, port) of its first end. A CA has one cabled port
(synth's terminals have one link); a fabric whose CAs use two is refused in one line.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from synth.core.errors import SynthError
from synth.core.validate import show
from synth.topology.readers.ibnetdiscover import FabricFileError, Node, parse_fabric
from synth.topology.direct import TERMINAL_CLASS
from synth.topology.distances import connected_parts
from synth.topology.family import Family, Topology, check_counts, file_digest, file_spec_options, recognize_option
from synth.topology.recognize.recognized import recognized
from synth.topology.network import Network

SYNTAX = "fabric:FILE[:recognize=no]"
# A 10,000-node fabric's file is a few MB; parsing more than 64 MB of text would take long before the counts (checked
# against family.MAX_NODES and MAX_CHANNELS, from the parsed file, before the arrays are made) could refuse it.
MAX_FILE_BYTES = 64 << 20
SWITCH_CLASS = "switch"


def natural_key(name: str) -> list:
    """node2 before node10: digit runs compare as numbers."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def build_fabric(nodes: list[Node], spec: str, source: str) -> Network:
    """The Network of a parsed topology file (FabricFileError, one line, on what synth cannot model)."""
    def fail(line: int, message: str):
        raise FabricFileError(f"{source}: line {line}: {message}")

    by_id = {node.id: node for node in nodes}
    for node in nodes:
        if node.kind == "router":
            fail(node.line, f"node type: {node.id!r} is an IB router; synth models one subnet of switches and CAs")
    # Every cable once, from whichever end lists it (ibnetdiscover lists both, ibsim files may list one).
    cables: dict[tuple[str, int], tuple[str, int, float | None, int]] = {}
    for node in nodes:
        for port in node.links:
            ends = sorted([(node.id, port.local), (port.remote_id, port.remote)])
            key = ends[0]
            if key not in cables:
                cables[key] = (*ends[1], port.rate, port.line)
            elif cables[key][2] is None and port.rate is not None:  # the first end listed gave no rate
                cables[key] = (*cables[key][:2], port.rate, cables[key][3])
            elif None not in (port.rate, cables[key][2]) and port.rate != cables[key][2]:
                fail(port.line, f"link rate: {port.rate:g} Gb/s here, {cables[key][2]:g} Gb/s at the cable's other end "
                                f"(line {cables[key][3]})")
    cabled: dict[str, list[tuple[int, str, int, float | None, int]]] = {node.id: [] for node in nodes}
    for (a, pa), (b, pb, rate, line) in cables.items():
        cabled[a].append((pa, b, pb, rate, line))
        cabled[b].append((pb, a, pa, rate, line))

    cas = [n for n in nodes if n.kind == "ca" and cabled[n.id]]
    switches = [n for n in nodes if n.kind == "switch"]
    for switch in switches:
        if not cabled[switch.id]:
            fail(switch.line, f"ports: switch {switch.id!r} has no cables")
    for ca in cas:
        if len(cabled[ca.id]) > 1:
            fail(ca.line, f"ports: CA {ca.id!r} has {len(cabled[ca.id])} cabled ports; synth models one per terminal")
        (_, far, _, _, line), = cabled[ca.id]
        if by_id[far].kind != "switch":
            fail(line, f"remote id: CA {ca.id!r} is cabled to CA {far!r}, not to a switch")
    if not cas:
        raise FabricFileError(f"{source}: no CA is cabled to a switch: there is nothing to route")

    _check_connected(cas + switches, cabled, source)
    names = _names(cas + switches)
    order = sorted(cas, key=lambda n: natural_key(names[n.id])) + sorted(switches, key=lambda n: natural_key(names[n.id]))
    index = {node.id: i for i, node in enumerate(order)}
    n = len(cas)

    src, src_port, dst, dst_port, rates = [], [], [], [], []
    for node in order[:n]:  # injection 2t, ejection 2t + 1
        (port, far, far_port, rate, _), = cabled[node.id]
        src += [index[node.id], index[far]]
        dst += [index[far], index[node.id]]
        src_port += [port, far_port]
        dst_port += [far_port, port]
        rates += [rate, rate]
    for node in order[n:]:
        for port, far, far_port, rate, _ in sorted(cabled[node.id]):
            if by_id[far].kind != "switch" or (index[far], far_port) < (index[node.id], port):
                continue  # a CA's cable is its terminal's; a switch cable is taken from its lower end
            src += [index[node.id], index[far]]
            dst += [index[far], index[node.id]]
            src_port += [port, far_port]
            dst_port += [far_port, port]
            rates += [rate, rate]

    # bandwidth 1 is the terminals' most common rate (so a terminal's link has bandwidth 1, as in every family)
    known = [r for r in rates[:2 * n] if r is not None] or [r for r in rates if r is not None]
    common = max(set(known), key=lambda r: (known.count(r), r)) if known else 1.0
    bandwidth = np.array([1.0 if r is None else r / common for r in rates])
    channels = len(src)
    port_of = {node.id: cabled[node.id][0][0] for node in order[:n]}
    terminal_ports = [next((p for p in node.links if p.local == port_of[node.id]), None) for node in order[:n]]
    lids = [p.lid or 0 if p is not None else 0 for p in terminal_ports] + [node.lid or 0 for node in order[n:]]
    lmc = [p.lmc for p in terminal_ports if p is not None] + [node.lmc for node in order[n:]]
    return Network(
        spec=spec, family="fabric", num_terminals=n,
        node_level=np.concatenate([np.zeros(n, dtype=np.int64), np.ones(len(switches), dtype=np.int64)]),
        node_names=[names[node.id] for node in order],
        channel_src=np.array(src, dtype=np.int64), channel_src_port=np.array(src_port, dtype=np.int64),
        channel_dst=np.array(dst, dtype=np.int64), channel_dst_port=np.array(dst_port, dtype=np.int64),
        channel_bandwidth=bandwidth,
        channel_class=np.concatenate([np.zeros(2 * n, dtype=np.int64), np.ones(channels - 2 * n, dtype=np.int64)]),
        class_names=(TERMINAL_CLASS, SWITCH_CLASS),
        node_guids=np.array([node.guid or 0 for node in order], dtype=np.uint64),
        port_guids=np.array([p.port_guid or 0 if p is not None else 0 for p in terminal_ports], dtype=np.uint64),
        node_lids=np.array(lids, dtype=np.int64), lmc=max(lmc, default=0))


def _check_connected(nodes: list[Node], cabled: dict, source: str) -> None:
    """Every node reaches every other: a fabric in pieces has pairs no route joins (and OpenSM would bring up the
    piece of its own port only)."""
    index = {node.id: i for i, node in enumerate(nodes)}
    pairs = [(index[a], index[far]) for a in index for _, far, _, _, _ in cabled[a] if far in index]
    rows, cols = zip(*pairs) if pairs else ((), ())
    parts, labels = connected_parts(len(nodes), rows, cols)
    if parts > 1:
        other = nodes[int(np.flatnonzero(labels != labels[0])[0])]
        raise FabricFileError(f"{source}: line {other.line}: the fabric falls into {parts} parts: no cable path joins "
                              f"{nodes[0].id!r} and {other.id!r}")


def writable_name(name: str) -> bool:
    """A name a fabric file carries between quotes and ibsim reads back: no quote, no '#' or '@' (ibsim's
    comment and option marks), no control or line-separator character."""
    return bool(name) and not any(c in '"#@' or ord(c) < 32 or ord(c) == 127 or c in "\u2028\u2029\x85"
                                  for c in name)


def _names(nodes: list[Node]) -> dict[str, str]:
    """A node's description where it has one that no other node has (nor is another node's id) and that a fabric
    file can carry, else its id."""
    counts: dict[str, int] = {}
    for node in nodes:
        if node.description:
            counts[node.description] = counts.get(node.description, 0) + 1
    ids = {node.id for node in nodes}
    return {node.id: node.description if node.description and counts[node.description] == 1 and
            writable_name(node.description) and failable_name(node.description) and
            (node.description == node.id or node.description not in ids) else node.id for node in nodes}


def failable_name(name: str) -> bool:
    """A name `--fail` can name: no '+' (which joins items) and not an item of its own (random:K:SEED)."""
    return "+" not in name and not name.startswith("random:")


@dataclass(frozen=True, eq=False)
class Fabric(Topology):
    path: str
    recognize: bool = True  # matched against the families (synth.topology.recognize); no: always generic
    note: str = ""  # what recognition found, when it left the fabric generic

    family = "fabric"

    @property
    def spec(self) -> str:
        return f"fabric:{self.path}" + ("" if self.recognize else ":recognize=no")

    def label(self) -> str:
        return f"fabric {os.path.basename(self.path)}"

    @cached_property
    def fabric_network(self) -> Network:
        """The file read and built (once: num_terminals needs it before build_network)."""
        try:
            size = os.path.getsize(self.path)
            if size > MAX_FILE_BYTES:
                raise SynthError(f"{self.path}: {size:,} bytes, more than the {MAX_FILE_BYTES:,} a fabric file may have")
            with open(self.path, encoding="utf-8-sig", errors="replace") as handle:  # -sig: a byte-order mark
                text = handle.read()
        except OSError as exc:
            raise SynthError(f"cannot read the fabric file {self.path}: {exc.strerror or exc}") from None
        nodes = parse_fabric(text, self.path)
        check_counts(self.spec, sum(node.kind == "ca" for node in nodes), len(nodes),
                     2 * sum(len(node.links) for node in nodes))
        return build_fabric(nodes, self.spec, self.path)

    @property
    def num_terminals(self) -> int:
        return self.fabric_network.num_terminals

    def build_network(self):
        return self.fabric_network

    @cached_property
    def digest(self) -> str:
        return file_digest(self.path)

    def source_digest(self) -> str:
        return self.digest

    def facts(self) -> list[tuple[str, str]]:
        network = self.fabric_network
        cables = (network.num_channels - 2 * network.num_terminals) // 2
        rates = sorted(set(network.channel_bandwidth.tolist()))
        facts = [("file", self.path),
                 ("terminals", f"{network.num_terminals} (CAs with a cabled port)"),
                 ("switches", str(network.num_switches)),
                 ("switch cables", str(cables))]
        unassigned = int((network.node_lids <= 0).sum()) if network.node_lids is not None else network.num_nodes
        if unassigned:
            which = "none" if unassigned == network.num_nodes else f"{unassigned} of {network.num_nodes}"
            facts.append(("LIDs", f"{which} assigned yet (lid 0 or none in the file): synth tables plans its own"))
        if len(rates) > 1:
            facts.append(("link rates", ", ".join(f"{r:g}" for r in rates) + " (relative to the terminals' most common)"))
        return facts + [("family", self.note or "not looked for (recognize=no)")] * (self.note != "" or not self.recognize)


def parse_fabric_spec(text: str) -> Topology:
    path, options = file_spec_options(text, ("recognize",))
    if not path:
        raise SynthError(f"spec 'fabric:{text}': give the topology file, {SYNTAX}")
    # absolute: a routes file keeps the spec, and `synth tables` may run elsewhere
    fabric = Fabric(os.path.abspath(path), recognize_option(options, show("fabric:" + text)))
    return recognized(fabric) if fabric.recognize else fabric


FAMILY = Family("fabric", SYNTAX, "a real InfiniBand fabric from its topology file (what ibnetdiscover writes, "
                "or an ibsim net file): its names, GUIDs, LIDs and ports", parse_fabric_spec)
