"""Forwarding tables as files: the OpenSM set (fabric.net, guid2lid, lfts.dump) and JSON / CSV.

Formats (docs/formats.md, docs/opensm-notes.md):
- fabric.net: ibnetdiscover records as ibsim reads them. Each record's quoted id is the node's
  name in the topology JSON; GUIDs come from the switchguid= / caguid= lines. A terminal is a
  one-port CA whose port GUID is its node GUID + 1.
- guid2lid: OpenSM's LID database (`$OSM_CACHE_DIR/guid2lid`): `<port guid> <min lid> <max lid>`,
  entries separated by an empty line (without it OpenSM reads only the first entry).
- lfts.dump: what `opensm -R file -U FILE` loads: per switch a `Unicast lids ... guid 0x...:` line
  and `0xLID PORT` entries. Every switch is written (a missing switch gets an empty table), no
  entry names port 255, and no entry carries `portguid` (which would make OpenSM remap LIDs and
  hide mistakes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from jinja2 import Environment, PackageLoader, StrictUndefined

from synth.core.errors import SynthError
from synth.tables.forwarding import ForwardingTables, LidPlan
from synth.topology.network import Network, differing_rates

SWITCH_GUID_BASE = 0x0053_0000_0000_0000
TERMINAL_GUID_BASE = 0x0043_0000_0000_0000
TERMINAL_GUID_STEP = 0x10  # room for the port GUIDs (node GUID + port) between CAs


@lru_cache(maxsize=1)
def _templates() -> Environment:
    return Environment(loader=PackageLoader("synth", "io/templates"), undefined=StrictUndefined,
                       keep_trailing_newline=True, autoescape=False)


def _own_or(own: np.ndarray | None, synthetic: np.ndarray) -> np.ndarray:
    """A real fabric's GUIDs (synth.topology.fabric), synthetic ones where it has none."""
    return synthetic if own is None else np.where(own != 0, own.astype(np.uint64), synthetic)


def switch_guids(network: Network) -> np.ndarray:
    synthetic = (SWITCH_GUID_BASE + 1 + np.arange(network.num_switches, dtype=np.int64)).astype(np.uint64)
    own = None if network.node_guids is None else network.node_guids[network.num_terminals:]
    return _own_or(own, synthetic)


def _synthetic_terminal_guids(network: Network) -> np.ndarray:
    return (TERMINAL_GUID_BASE + TERMINAL_GUID_STEP * (1 + np.arange(network.num_terminals, dtype=np.int64))).astype(np.uint64)


def terminal_node_guids(network: Network) -> np.ndarray:
    own = None if network.node_guids is None else network.node_guids[:network.num_terminals]
    return _own_or(own, _synthetic_terminal_guids(network))


def terminal_port_guids(network: Network) -> np.ndarray:
    """The GUID of every terminal's cabled port: a real fabric's own, else its CA's node GUID + 1 (port 1)."""
    return _own_or(network.port_guids, terminal_node_guids(network) + np.uint64(1))


def node_guid(value: int) -> str:
    return f"0x{int(value):016x}"


def check_cabled_both_ways(network: Network) -> None:
    """An InfiniBand cable carries both directions between the same two ports: a network with one-way links (Kautz)
    has no such file (SynthError)."""
    size = int(max(network.channel_src_port.max(initial=0), network.channel_dst_port.max(initial=0))) + 1
    ends = network.channel_src.astype(np.int64) * size + network.channel_src_port
    far = network.channel_dst.astype(np.int64) * size + network.channel_dst_port
    pairs = np.unique(ends * (network.num_nodes * size) + far)
    reverse = np.unique(far * (network.num_nodes * size) + ends)
    if not np.array_equal(pairs, reverse):
        raise SynthError(f"{network.spec} has one-way links; an InfiniBand cable carries both directions, so it has no "
                         "fabric file")


# The link rates ibsim runs (ibsim/sim_net.c): a port option `w=` enables a width, `s=` a speed, each a bit of
# PortInfo's enabled mask, and a link runs the widest and fastest both ends enable. Lanes per width bit, Gb/s per
# lane of each speed bit; the name ibnetdiscover gives the link (`4xSDR`), which synth's reader reads back.
IBSIM_WIDTHS = {1: 1, 2: 4, 4: 8, 8: 12}
IBSIM_SPEEDS = {1: ("SDR", 2.5), 2: ("DDR", 5.0), 4: ("QDR", 10.0)}
_IBSIM_RATES = sorted(((lanes * gbps, w, s, f"{lanes}x{name}") for w, lanes in IBSIM_WIDTHS.items()
                       for s, (name, gbps) in IBSIM_SPEEDS.items()), key=lambda r: (r[0], r[1] != 2, r[1]))
IBSIM_DEFAULT_RATE = 10.0  # 4xSDR, what ibsim runs a port at without options


@dataclass(frozen=True)
class FabricRates:
    """Per channel the ibsim port options and rate name of its link (None where every link runs at one rate:
    nothing written, ibsim's default); `exact`: whether ibsim's rates keep every ratio of the network's."""

    options: list[tuple[str, str]] | None  # per channel (ibsim's port options, ibnetdiscover's rate name)
    exact: bool = True
    rates: tuple[float, ...] = ()  # the network's distinct relative rates


def ibsim_rates(network: Network) -> FabricRates:
    """The ibsim rate of every link where the links differ in rate (synth.topology.network.differing_rates): a base
    rate for bandwidth 1 chosen so that every bandwidth is one ibsim runs (4xSDR first, ibsim's default), else
    4xSDR and the nearest rate ibsim has (`exact` False: said by the caller)."""
    bandwidth = network.channel_bandwidth
    rates = differing_rates(network)
    if not rates:  # one rate (or a family's modeled terminal links): ibsim's default everywhere, as before
        return FabricRates(None, True, ())
    have: dict[float, tuple] = {}
    for r in _IBSIM_RATES:  # of two widths at one rate, the one of 4 lanes (4xSDR before 1xQDR)
        have.setdefault(round(r[0], 9), r)
    bases = [IBSIM_DEFAULT_RATE] + sorted({r[0] for r in _IBSIM_RATES} - {IBSIM_DEFAULT_RATE})
    base = next((b for b in bases if all(round(b * r, 9) in have for r in rates)), None)
    exact = base is not None
    base = base if exact else IBSIM_DEFAULT_RATE

    def nearest(value: float):
        exact_one = have.get(round(value, 9))
        return exact_one or min(_IBSIM_RATES, key=lambda r: (abs(np.log(r[0] / value)), -r[0]))

    chosen = {r: nearest(base * r) for r in rates}
    options = []
    for b in bandwidth.tolist():
        _, w, s, name = chosen.get(b) or nearest(base * b)
        options.append((f"w={w} s={s}", name))
    return FabricRates(options, exact, tuple(rates))


def render_fabric(network: Network) -> str:
    """The ibnetdiscover-style fabric file. A degraded network's failed nodes (failed switches,
    cut-off terminals) are left out, with their cables: nothing is plugged into them."""
    from synth.topology.fabric import writable_name

    names = network.node_names
    unwritable = next((name for name in names if not writable_name(name)), None)
    if unwritable is not None:
        raise SynthError(f"node name {unwritable[:60]!r} cannot be written in a fabric file: ibsim reads no quote, '#', "
                         "'@' or control character in a name")
    highest = int(max(network.channel_src_port.max(initial=0), network.channel_dst_port.max(initial=0)))
    if highest > 255:
        raise SynthError(f"{network.spec} has a node with {highest} ports; an InfiniBand node has at most 255")
    failed = np.zeros(network.num_nodes, dtype=bool)
    if network.failed_nodes is not None:
        failed[network.failed_nodes] = True
    order = np.lexsort((network.channel_src_port, network.channel_src))
    order = order[network.cabled()[order]]
    src = network.channel_src[order].tolist()
    src_port, dst, dst_port = (a[order].tolist() for a in (network.channel_src_port, network.channel_dst, network.channel_dst_port))
    rates = ibsim_rates(network).options  # links of different rates: each link's, as ibsim runs it
    rated = [rates[c] for c in order.tolist()] if rates is not None else [("", "")] * len(src)
    links: list[list[dict]] = [[] for _ in range(network.num_nodes)]
    for s, sp, d, dp, (options, rate) in zip(src, src_port, dst, dst_port, rated):
        links[s].append({"local": sp, "remote": names[d], "remote_port": dp, "options": options, "rate": rate})
    ports = [max((p["local"] for p in node_links), default=1) for node_links in links]
    t = network.num_terminals
    sw_guids, ca_guids = switch_guids(network).tolist(), terminal_node_guids(network).tolist()
    # a real fabric's port GUIDs and LIDs where it has them (synth.topology.fabric reads them back)
    port_guids = network.port_guids.tolist() if network.port_guids is not None else [0] * t
    lids = network.node_lids.tolist() if network.node_lids is not None else [0] * network.num_nodes
    switches = [{"guid": node_guid(sw_guids[i - t]), "ports": ports[i], "name": names[i], "links": links[i],
                 "lid": lids[i], "lmc": 0} for i in range(t, network.num_nodes) if not failed[i]]  # port 0: LMC 0
    terminals = [{"guid": node_guid(ca_guids[i]), "ports": ports[i], "name": names[i], "links": links[i],
                  "port_guid": f"{port_guids[i]:x}" if port_guids[i] else "", "lid": lids[i], "lmc": network.lmc}
                 for i in range(t) if not failed[i]]
    return _templates().get_template("fabric.net.j2").render(
        title=f"{len(switches)} switches, {len(terminals)} terminals", spec=network.spec, switches=switches, terminals=terminals)


def render_guid2lid(network: Network, lids: LidPlan) -> str:
    base = lids.terminal_base(np.arange(network.num_terminals)).tolist()
    switch_lid = lids.switch_lid(np.arange(network.num_switches)).tolist()
    lines = [f"{node_guid(g)} 0x{b:04x} 0x{b + lids.block - 1:04x}\n\n" for g, b in zip(terminal_port_guids(network).tolist(), base)]
    lines += [f"{node_guid(g)} 0x{lid:04x} 0x{lid:04x}\n\n" for g, lid in zip(switch_guids(network).tolist(), switch_lid)]
    return "".join(lines)


def _switch_rows(tables: ForwardingTables):
    network = tables.network
    guids = switch_guids(network).tolist()
    lids = tables.lids.switch_lid(np.arange(network.num_switches)).tolist()
    for k in range(network.num_switches):
        entry_lids, entry_ports = tables.entries(k)
        yield {"name": network.node_names[network.num_terminals + k], "guid": node_guid(guids[k]), "lid": lids[k],
               "lids": entry_lids.tolist(), "ports": entry_ports.tolist()}


def render_lfts(tables: ForwardingTables) -> str:
    switches = []
    for row in _switch_rows(tables):
        row["entries"] = "".join(f"0x{lid:04x} {port:03d}\n" for lid, port in zip(row["lids"], row["ports"]))
        row["count"] = len(row["lids"])
        switches.append(row)
    return _templates().get_template("lfts.dump.j2").render(max_lid=tables.lids.max_lid, switches=switches)


def lid_owners(tables: ForwardingTables) -> list[str]:
    """The node name owning every LID (empty where none)."""
    network, lids = tables.network, tables.lids
    owner = [""] * (lids.max_lid + 1)
    for t, base in enumerate(lids.terminal_base(np.arange(network.num_terminals)).tolist()):
        for k in range(lids.block):
            owner[base + k] = network.node_names[t]
    for k, lid in enumerate(lids.switch_lid(np.arange(network.num_switches)).tolist()):
        owner[lid] = network.node_names[network.num_terminals + k]
    return owner


def render_csv(tables: ForwardingTables) -> str:
    owner = lid_owners(tables)
    switches = []
    for row in _switch_rows(tables):
        prefix = f"{row['name']},{row['guid']},{row['lid']},"
        row["rows"] = "".join(f"{prefix}{owner[lid]},{lid},{port}\n" for lid, port in zip(row["lids"], row["ports"]))
        switches.append(row)
    return _templates().get_template("tables.csv.j2").render(switches=switches)


def render_json(tables: ForwardingTables) -> str:
    network, lids = tables.network, tables.lids
    lid_map = {network.node_names[t]: [b, b + lids.block - 1] for t, b in enumerate(lids.terminal_base(np.arange(network.num_terminals)).tolist())}
    lid_map.update({network.node_names[network.num_terminals + k]: [lid, lid] for k, lid in enumerate(lids.switch_lid(np.arange(network.num_switches)).tolist())})
    switches = []
    for row in _switch_rows(tables):
        row["lid_list"], row["port_list"] = json.dumps(row["lids"]), json.dumps(row["ports"])
        switches.append(row)
    return _templates().get_template("tables.json.j2").render(spec=network.spec, lmc=lids.lmc, lids=lid_map, switches=switches)


DLID_HEADER = "src_rank,dst_rank,dlid,phase"


def render_dlid_csv(src: np.ndarray, dst: np.ndarray, dlid: np.ndarray, phase: np.ndarray) -> str:
    """The LID each flow is sent to: `src_rank,dst_rank,dlid,phase`, one row per flow."""
    rows = zip(src.tolist(), dst.tolist(), dlid.tolist(), phase.tolist())
    return DLID_HEADER + "\n" + "".join(f"{s},{d},{lid},{p}\n" for s, d, lid, p in rows)
