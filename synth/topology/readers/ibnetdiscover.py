"""Reading an InfiniBand fabric's topology file: what `ibnetdiscover` writes, and ibsim's net files.

The format (infiniband-diags' ibnetdiscover(8); ibsim's net-examples/net): records separated by
blank lines, each a header and one line per connected port.

    vendid=0x2c9                      optional key=value lines before a header
    switchguid=0x248a0703005c5d40(248a0703005c5d40)
    Switch  36 "S-248a0703005c5d40"   # "sw1" enhanced port 0 lid 12 lmc 0
    [1]     "H-0c42a1030070a0b4"[1](c42a1030070a0b5)   # "node1 HCA-1" lid 20 4xEDR
    caguid=0x0c42a1030070a0b4
    Ca      2 "H-0c42a1030070a0b4"     # "node1 HCA-1"
    [1](c42a1030070a0b5)  "S-248a0703005c5d40"[1]   # lid 20 lmc 0 "sw1" lid 12 4xEDR

- A header is `Switch|Ca|Hca|Rt PORTS "ID"`; its comment gives the node's description (its name
  here when it has one) and, for a switch, port 0's LID and LMC.
- A port line is `[LOCAL](PORTGUID) "REMOTE-ID"[REMOTE](PORTGUID)`, either GUID optional; its
  comment gives, on a CA, the port's own LID and LMC, and on any node the link's width and speed
  (`4xEDR`).
- ibsim's own files name nodes freely ("Switch1", "Hca1") and leave GUIDs and comments out.

Every error is one line naming the file, the line and the field (FabricFileError).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from synth.core.errors import SynthError

# Gb/s per lane of each InfiniBand speed (signalling rate; only ratios matter: they become channel bandwidths)
LANE_RATE = {"SDR": 2.5, "DDR": 5.0, "QDR": 10.0, "FDR10": 10.3125, "FDR": 14.0625, "EDR": 25.78125,
             "HDR": 53.125, "NDR": 106.25, "XDR": 212.5}
KINDS = {"switch": "switch", "ca": "ca", "hca": "ca", "rt": "router"}

# Numbers are bounded in the patterns (no 5,000-digit field reaches int()): ports and LIDs up to 6 digits, GUIDs
# 16 hex digits (64 bits). ibsim's own port options (`w=4`, its link width) may follow a port.
_HEADER = re.compile(r'^(Switch|Ca|Hca|Rt)\s+(\d{1,6})\s+"([^"]*)"\s*(?:#(.*))?$', re.IGNORECASE)
_PORT = re.compile(r'^\[(\d{1,6})\](?:\((?:0x)?([0-9a-fA-F]{1,16})\))?\s*"([^"]*)"\s*\[(\d{1,6})\]'
                   r'(?:\((?:0x)?[0-9a-fA-F]{1,16}\))?((?:\s+[a-z]+=\w+)*)\s*(?:#(.*))?$')
_KEY = re.compile(r"^([a-z]+)=(0x[0-9a-fA-F]{1,16}|[0-9]{1,20})(?:\([0-9a-fA-F]{1,16}\))?\s*$")
_DESCRIPTION = re.compile(r'"([^"]*)"')
_LID = re.compile(r"\blid\s+(\d{1,6})(?:\s+lmc\s+(\d{1,2}))?")
_RATE = re.compile(r"\b(\d{1,2})x(" + "|".join(sorted(LANE_RATE, key=len, reverse=True)) + r")\b")
MAX_LID = 0xBFFF  # the highest unicast LID
MAX_LMC = 7
GUID_KEYS = {"switchguid": "switch", "caguid": "ca", "rtguid": "router"}


class FabricFileError(SynthError):
    pass


@dataclass
class Port:
    local: int
    remote_id: str
    remote: int
    line: int
    port_guid: int | None = None  # this port's (a CA port's own GUID)
    lid: int | None = None  # a CA port's LID (from its comment; None where it is 0, not assigned yet)
    lmc: int = 0
    rate: float | None = None  # Gb/s, width x lane rate (from the comment)


@dataclass
class Node:
    kind: str  # "switch", "ca" or "router"
    id: str  # the quoted id, unique in the file
    ports: int  # the header's port count
    line: int
    description: str = ""  # the comment's quoted description
    guid: int | None = None  # switchguid= / caguid=
    lid: int | None = None  # a switch's port 0 LID (None where it is 0, not assigned yet)
    lmc: int = 0
    links: list[Port] = field(default_factory=list)


def _lid(match, number: int, fail) -> tuple[int | None, int]:
    """(LID, LMC) of a comment; LID 0 is a port no subnet manager has given a LID yet (ibnetdiscover on
    a fresh fabric): None, unassigned, and synth plans the fabric's LIDs (synth.tables.forwarding.LidPlan)."""
    lid, lmc = int(match.group(1)), int(match.group(2) or 0)
    if lid == 0:
        return None, 0 if lmc <= MAX_LMC else fail(number, f"lmc: {lmc} is above {MAX_LMC}")
    if not 1 <= lid <= MAX_LID:
        fail(number, f"lid: {lid} is not a unicast LID (1-{MAX_LID})")
    if lmc > MAX_LMC:
        fail(number, f"lmc: {lmc} is above {MAX_LMC}")
    return lid, lmc


def _int(text: str) -> int:
    return int(text, 16) if text.lower().startswith("0x") else int(text)


def _hex(text: str | None) -> int | None:
    return None if text is None else int(text, 16)  # at most 16 digits (_PORT)


def parse_fabric(text: str, source: str = "fabric") -> list[Node]:
    """The nodes of a topology file, in file order, each with its connected ports (FabricFileError on
    anything it cannot read or that contradicts itself)."""
    def fail(number: int, message: str):
        raise FabricFileError(f"{source}: line {number}: {message}")

    nodes: list[Node] = []
    by_id: dict[str, Node] = {}
    pending: dict[str, int] = {}  # key=value lines since the last header
    current: Node | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            current = None
            continue
        if line.startswith("#"):
            continue
        if line.startswith(("include ", "do ")):
            fail(number, f"{line.split()[0]!r} (an ibsim extension) is not read: give the whole fabric in one file")
        key = _KEY.match(line)
        if key:
            value = _int(key.group(2))
            if key.group(1) in GUID_KEYS and not 0 < value < 1 << 64:
                fail(number, f"{key.group(1)}: {key.group(2)} is not a 64-bit GUID")
            pending[key.group(1)] = value
            continue
        header = _HEADER.match(line)
        if header:
            kind = KINDS[header.group(1).lower()]
            ports, node_id, comment = int(header.group(2)), header.group(3), header.group(4) or ""
            if not node_id:
                fail(number, "node id: empty")
            if node_id in by_id:
                fail(number, f"node id: {node_id!r} is also the node of line {by_id[node_id].line}")
            if not 1 <= ports <= 255:
                fail(number, f"ports: {ports} is not 1-255")
            if len(node_id) > 200:
                fail(number, f"node id: {len(node_id)} characters, more than 200")
            current = Node(kind, node_id, ports, number)
            described = _DESCRIPTION.search(comment)
            current.description = described.group(1) if described else ""
            lid = _LID.search(comment[described.end():] if described else comment)
            if lid and kind == "switch":
                current.lid, current.lmc = _lid(lid, number, fail)
            guid_key = next((k for k, v in GUID_KEYS.items() if v == kind and k in pending), None)
            current.guid = pending.get(guid_key) if guid_key else None
            pending = {}
            nodes.append(current)
            by_id[node_id] = current
            continue
        port = _PORT.match(line)
        if port:
            if current is None:
                fail(number, "a port line outside a node record (a header line must come first)")
            local, remote = int(port.group(1)), int(port.group(4))
            if not 1 <= local <= current.ports:
                fail(number, f"local port: {local} is not 1-{current.ports} ({current.id!r} has {current.ports} ports)")
            if any(p.local == local for p in current.links):
                fail(number, f"local port: {local} of {current.id!r} is connected twice")
            comment = port.group(6) or ""
            if port.group(3) == current.id:
                fail(number, f"remote id: {current.id!r} is cabled to itself")
            entry = Port(local, port.group(3), remote, number)
            entry.port_guid = _hex(port.group(2)) if port.group(2) else None
            if current.kind != "switch":  # a CA's comment starts with its own port's LID
                own = _LID.match(comment.strip())
                if own:
                    entry.lid, entry.lmc = _lid(own, number, fail)
            rate = _RATE.search(comment)
            if rate:
                if int(rate.group(1)) == 0:
                    fail(number, f"link width: {rate.group(0)} has no lanes")
                entry.rate = int(rate.group(1)) * LANE_RATE[rate.group(2)]
            current.links.append(entry)
            continue
        fail(number, f"not a key=value, node header or port line: {line[:60]!r}")
    _check_links(nodes, by_id, source)
    return nodes


def _check_links(nodes: list[Node], by_id: dict[str, Node], source: str) -> None:
    """Every link's far end exists and, where the far end lists the link too, agrees; no port takes two
    cables; GUIDs are unique."""
    used: dict[tuple[str, int], int] = {}  # (node, port) -> the line of the cable using it
    for node in nodes:
        for port in node.links:
            used[(node.id, port.local)] = port.line
    for node in nodes:
        for port in node.links:
            line = used.setdefault((port.remote_id, port.remote), port.line)
            far_lists = any(p.local == port.remote for p in by_id[port.remote_id].links) \
                if port.remote_id in by_id else True
            if line != port.line and not far_lists:
                raise FabricFileError(f"{source}: line {port.line}: remote port: {port.remote_id!r}[{port.remote}] is "
                                      f"also cabled on line {line}")
    guids: dict[int, int] = {}
    for node in nodes:
        for guid, line, what in [(node.guid, node.line, "node GUID")] + \
                [(p.port_guid, p.line, "port GUID") for p in node.links if node.kind != "switch"]:
            if guid is None or (what == "port GUID" and guid == node.guid):
                continue  # a CA's port 1 may carry its node GUID (ConnectX-4 on)
            if guid in guids:
                raise FabricFileError(f"{source}: line {line}: {what}: 0x{guid:016x} is also the GUID of line "
                                      f"{guids[guid]}")
            guids[guid] = line
    for node in nodes:
        for port in node.links:
            far = by_id.get(port.remote_id)
            if far is None:
                raise FabricFileError(f"{source}: line {port.line}: remote id: no node {port.remote_id!r} in the file")
            if not 1 <= port.remote <= far.ports:
                raise FabricFileError(f"{source}: line {port.line}: remote port: {port.remote} is not 1-{far.ports} "
                                      f"({far.id!r} has {far.ports} ports)")
            back = next((p for p in far.links if p.local == port.remote), None)
            if back is not None and (back.remote_id != node.id or back.remote != port.local):
                raise FabricFileError(f"{source}: line {port.line}: remote port: {node.id!r}[{port.local}] leads to "
                                      f"{far.id!r}[{port.remote}], whose line {back.line} leads to "
                                      f"{back.remote_id!r}[{back.remote}]")
