"""OpenSM's own routing engines on a simulated copy of a network: their forwarding tables, read
back from the switches, as synth's out-port matrix (used by `synth opensm-check` and reports)."""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from synth.core.errors import SynthError
from synth.core.registry import Registry
from synth.pricing.alphabeta import most_per_port
from synth.measure.loads import bytes_over_bandwidth, weighted_counts
from synth.core.validate import read_text
from synth.opensm.sim import Simulator, find_tools, parse_guid2lid, parse_lft_text, read_back_tables, run_opensm
from synth.io.switch_tables import render_fabric, render_guid2lid, switch_guids, terminal_port_guids
from synth.tables.forwarding import NO_PORT, LidPlan, walk_channels
from synth.topology.network import Network

# OpenSM's routing engines synth runs on ibsim for comparison, by OpenSM's name for them (`opensm -R NAME`).
# torus-2QoS applies to tori of up to three dimensions only: synth seeds it with the torus's own coordinates.
ENGINES: Registry[str] = Registry("OpenSM engine")
for _name, _what in (
    ("minhop", "min-hop, balanced over ports"), ("updn", "up*/down* from its detected roots (min-hop without them)"),
    ("dnup", "down*/up*"), ("ftree", "fat-tree routing (fat trees only; falls back otherwise)"),
    ("dfsssp", "deadlock-free SSSP: shortest paths balanced by weights, virtual lanes for deadlock freedom"),
    ("sssp", "SSSP: shortest paths balanced by weights"), ("nue", "Nue: deadlock-free within the lanes given"),
    ("lash", "LASH: shortest paths, lanes by layered acyclic subgraphs"), ("dor", "dimension-order (meshes, tori)"),
    ("torus-2QoS", "dimension order on a torus with datelines and two QoS levels (tori of up to 3 dimensions)"),
):
    ENGINES.register(_name, _what)
TORUS_ENGINE = "torus-2QoS"
TORUS_MAX_DIMENSIONS = 3  # torus-2QoS builds x, y and z rings


def torus_of(topology) -> tuple[int, ...] | None:
    """The sizes torus-2QoS can take for this network: a torus of up to three dimensions, else None."""
    sizes = None if topology is None else topology.torus_sizes()
    return sizes if sizes is not None and len(sizes) <= TORUS_MAX_DIMENSIONS else None


def parse_engines(text: str, topology=None) -> list[str]:
    """all, none, or a comma-separated list of ENGINES; `all` means those that apply to `topology` (torus-2QoS only
    on a torus)."""
    if text == "all":
        return [e for e in ENGINES if e != TORUS_ENGINE or torus_of(topology) is not None]
    engines = [] if text == "none" else [e for e in text.split(",") if e]
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        raise SynthError(f"unknown OpenSM engine '{unknown[0]}' (known: {', '.join(ENGINES)})")
    if TORUS_ENGINE in engines and topology is not None and torus_of(topology) is None:
        raise SynthError(f"OpenSM's {TORUS_ENGINE} routes tori of up to {TORUS_MAX_DIMENSIONS} dimensions; "
                         f"{topology.label()} is not one")
    return engines


def torus_config(network: Network, topology) -> str:
    """torus-2QoS.conf (torus-2QoS.conf(5)) for a torus: its sizes (1 for a missing z or y), and a seed at a router
    with its +1 and -1 neighbour in every dimension (both: radix-4 rings need them)."""
    sizes = torus_of(topology)
    if sizes is None:
        raise SynthError(f"OpenSM's {TORUS_ENGINE} routes tori of up to {TORUS_MAX_DIMENSIONS} dimensions; "
                         f"{network.spec} is not one")
    coordinates = np.asarray(topology.router_coordinates())
    guids = switch_guids(network)
    n = network.num_terminals

    def router_at(offsets) -> int:
        return int(np.flatnonzero((coordinates == np.asarray(offsets) % np.asarray(sizes)).all(axis=1))[0])

    def seed_links(origin) -> list[tuple[str, int, int]] | None:
        """(keyword, router, router) of the seed at `origin`, or None where a failed part breaks it."""
        links = []
        for k, axis in enumerate("xyz"[:len(sizes)]):
            for sign, step in (("p", 1), ("m", -1)):
                far = list(origin)
                far[k] += step
                a, b = router_at(origin), router_at(far)
                if network.find_channels(np.array([a + n]), np.array([b + n]))[0] < 0:
                    return None
                links.append((f"{axis}{sign}_link", a, b))
        return links

    # the first router (in coordinate order) whose links to its +1 and -1 neighbours all work: a degraded torus's
    # seed must survive (torus-2QoS routes around the failed parts elsewhere)
    seed = next((links for origin in coordinates.tolist() if (links := seed_links(origin)) is not None), None)
    if seed is None:
        raise SynthError(f"OpenSM's {TORUS_ENGINE} needs a router whose links to its neighbours all work; "
                         f"{network.spec} has none")
    lines = ["torus " + " ".join(str(s) for s in (list(sizes) + [1] * TORUS_MAX_DIMENSIONS)[:TORUS_MAX_DIMENSIONS])]
    lines += [f"{keyword} 0x{guids[a]:016x} 0x{guids[b]:016x}" for keyword, a, b in seed]
    return "\n".join(lines) + "\n"


def out_port_matrix(network: Network, read: dict[int, dict[int, int]], max_lid: int, source: str = "the read-back") -> np.ndarray:
    """Tables as (switch index, LID) -> port; a switch missing from them is an error."""
    table = np.full((network.num_switches, max_lid + 1), NO_PORT, dtype=np.uint8)
    failed = set() if network.failed_nodes is None else set((network.failed_nodes - network.num_terminals).tolist())
    for index, guid in enumerate(switch_guids(network).tolist()):
        entries = read.get(guid)
        if entries is None and index in failed:  # a failed switch is not in the fabric: it forwards nothing
            continue
        if entries is None:
            raise SynthError(f"switch {network.node_names[network.num_terminals + index]} (GUID 0x{guid:016x}) is missing from {source}")
        lids = np.array([lid for lid in entries if lid <= max_lid], dtype=np.int64)
        table[index, lids] = [entries[lid] for lid in lids.tolist()]
    return table


@dataclass
class EngineTables:
    engine: str
    configured_by: str  # the engine OpenSM reports; another one means it fell back
    out_port: np.ndarray  # (switch index, LID) -> port, as read back
    terminal_lid: np.ndarray  # per terminal, the LID flows to it are sent to (its base LID)
    seconds: float  # OpenSM's own run
    lanes: str = ""  # the virtual lanes the engine used or needed, from its log (engine_lanes)

    def phase_contention(self, network: Network, src: np.ndarray, dst: np.ndarray, phase_index: np.ndarray,
                         num_phases: int, weights: np.ndarray | None = None) -> tuple[np.ndarray, int]:
        """(max contention per phase, flows not delivered) of flows src -> dst walked through these
        tables; `phase_index` is 0..num_phases-1 per flow. Undelivered flows count on no channel.
        With `weights` (bytes per flow) contention is bytes over bandwidth."""
        channels, reached = walk_channels(network, self.out_port, src, dst, self.terminal_lid[np.asarray(dst)])
        unrouted = int(((np.asarray(src) != np.asarray(dst)) & ~reached).sum())
        return phase_contention(network, channels, phase_index, num_phases, weights), unrouted

    def phase_port_messages(self, network: Network, src: np.ndarray, dst: np.ndarray, phase_index: np.ndarray,
                            num_phases: int) -> np.ndarray:
        """Per phase, the most messages one port starts (synth.pricing.alphabeta) on these tables' paths."""
        channels, _ = walk_channels(network, self.out_port, src, dst, self.terminal_lid[np.asarray(dst)])
        hop = 1 if network.nodes_are_routers else 0
        first = channels[:, hop] if channels.shape[1] > hop else np.full(len(channels), -1)
        ports = np.where(first >= 0, first, network.num_channels + np.asarray(src))
        return most_per_port(np.asarray(phase_index), ports, num_phases)


def engine_tables(network: Network, engine: str, fabric: Path | None = None, topology=None) -> EngineTables:
    """Run OpenSM's `engine` once on ibsim (the network's fabric file, written here unless given)
    with synth's LIDs at LMC 0, and read the switches' tables back. torus-2QoS needs the topology (a torus's
    coordinates seed it) and runs with QoS on, as it requires."""
    require_one_part(network)
    tools = find_tools()
    plan = LidPlan.for_network(network, 0)
    with tempfile.TemporaryDirectory(prefix="synth-fabric-") as scratch:
        if fabric is None:
            fabric = Path(scratch) / "fabric.net"
            fabric.write_text(render_fabric(network))
        qos = None
        if engine == TORUS_ENGINE:
            config, options, policy = (Path(scratch) / name for name in ("torus-2QoS.conf", "opensm.conf", "qos-policy.conf"))
            config.write_text(torus_config(network, topology))
            options.write_text(f"qos TRUE\ntorus_config {config}\n")
            policy.write_text("")  # no policy: torus-2QoS gives every path its SL (datelines) itself
            qos = (options, policy)
        with Simulator(tools, fabric) as sim:
            run = run_opensm(sim, engine, 0, render_guid2lid(network, plan), qos=qos)
            read = read_back_tables(sim)
    terminal_lid = plan.terminal_base(np.arange(network.num_terminals))
    return EngineTables(engine, run.engine, out_port_matrix(network, read, plan.max_lid), terminal_lid, run.seconds,
                        engine_lanes(run.engine, run.log))


def engine_lanes(engine: str, log: str) -> str:
    """What an engine's run says about virtual lanes. dfsssp logs its paths per lane before it
    balances them over every lane it has: the lanes with paths then are the lanes it needs; lash
    logs "Lanes needed: N"; nue fits any number of lanes (it takes detours instead) and spreads
    destinations over all it has; the others assign no lanes (one lane, VL0)."""
    if engine in ("dfsssp", "sssp") and "Paths per VL (before balancing)" in log:
        before = log.split("Paths per VL (before balancing)", 1)[1].split("(after balancing)", 1)[0]
        counts = [int(n) for n in re.findall(r"\d+\. lane: (\d+)", before)]
        return f"{sum(c > 0 for c in counts)} needed (then balanced over {len(counts)})"
    needed = re.findall(r"Lanes needed: (\d+)", log)
    if engine == "lash" and needed:
        return f"{needed[-1]} needed"
    if engine == "nue":
        return "fits any number (spreads over all)"
    if engine == TORUS_ENGINE:
        return "SLs by datelines (its own)"
    return {"updn": "1 (up*/down*)", "dnup": "1 (down*/up*)", "ftree": "1 (fat tree)"}.get(engine, "1 (no lanes assigned)")


LFT_FILES = ("lfts.dump", "opensm-lfts.dump")


def given_tables(network: Network, name: str, directory: str | Path) -> EngineTables:
    """Tables computed elsewhere for the network's fabric file (`synth tables`): DIR/guid2lid (the
    LIDs, as OpenSM keeps them) and DIR/lfts.dump or DIR/opensm-lfts.dump (as `synth tables`,
    OpenSM's --dump_files_dir or `dump_fts -a` write them); DIR/fabric.net, if present, must be
    the network's."""
    directory = Path(directory)
    lft = next((directory / f for f in LFT_FILES if (directory / f).is_file()), None)
    if lft is None or not (directory / "guid2lid").is_file():
        raise SynthError(f"{directory}: tables need guid2lid and one of {', '.join(LFT_FILES)}")
    if (directory / "fabric.net").is_file():
        check_fabric(directory / "fabric.net", network)
    lids = {guid: base for guid, (base, _) in parse_guid2lid(read_text(directory / "guid2lid", "LID file"), str(directory / "guid2lid")).items()}
    ports = terminal_port_guids(network).tolist()
    missing = [g for g in ports if g not in lids]
    if missing:
        raise SynthError(f"{directory / 'guid2lid'} has no LID for terminal port GUID 0x{missing[0]:016x}: "
                         f"the tables are not for this network's fabric (write it with `synth tables`)")
    read = parse_lft_text(read_text(lft, "forwarding table dump"))
    max_lid = max([max(entries, default=0) for entries in read.values()] + list(lids.values()))
    out_port = out_port_matrix(network, read, max_lid, str(lft))
    return EngineTables(name, name, out_port, np.array([lids[g] for g in ports], dtype=np.int64), 0.0)


def require_one_part(network: Network) -> None:
    """OpenSM configures the part of the fabric its own port is in: a degraded network split into
    several parts (failed nodes aside) cannot be loaded or compared as one subnet."""
    if network.failed_nodes is None:
        return
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    cabled = network.cabled()
    graph = coo_matrix((np.ones(int(cabled.sum())), (network.channel_src[cabled], network.channel_dst[cabled])),
                       shape=(network.num_nodes, network.num_nodes))
    _, label = connected_components(graph, directed=False)
    alive = np.ones(network.num_nodes, dtype=bool)
    alive[network.failed_nodes] = False
    parts = np.unique(label[alive])
    if len(parts) > 1:
        sizes = np.bincount(label[alive])
        raise SynthError(f"{network.spec} falls apart into {len(parts)} parts (the largest {sizes.max()} of "
                         f"{int(alive.sum())} working nodes); OpenSM manages only the part its own port is in, so "
                         f"OpenSM runs need a connected fabric")


def check_fabric(fabric: Path, network: Network) -> None:
    """The fabric file must describe exactly the routes' network (names, ports and links)."""
    require_one_part(network)
    from synth.topology.fabric import build_fabric
    from synth.topology.readers.ibnetdiscover import parse_fabric

    def cables(net, channels) -> set:
        """Cables as sorted pairs of (name, port) ends: a file lists a one-way link (Kautz) as a cable."""
        names = net.node_names
        return {tuple(sorted([(names[s], sp), (names[d], dp)])) for s, sp, d, dp in zip(
            net.channel_src[channels].tolist(), net.channel_src_port[channels].tolist(),
            net.channel_dst[channels].tolist(), net.channel_dst_port[channels].tolist())}

    # the file as a network, named as fabric:FILE names it (descriptions, where ibnetdiscover's ids are GUIDs)
    found = build_fabric(parse_fabric(read_text(fabric, "fabric file"), str(fabric)), network.spec, str(fabric))
    links, expected = cables(found, slice(None)), cables(network, network.cabled())
    if links != expected:
        (a, pa), (b, pb) = sorted(links ^ expected)[0]
        raise SynthError(f"{fabric} does not describe the network {network.spec}: "
                         f"{len(links ^ expected)} links differ, e.g. {a}[{pa}] - {b}[{pb}]")


def phase_contention(network: Network, channels: np.ndarray, phase_index: np.ndarray, num_phases: int,
                     weights: np.ndarray | None = None) -> np.ndarray:
    """The most flows of one phase on a directed channel, per phase: `channels` is a (flows,
    hops) matrix padded with -1 (walk_channels), `phase_index` 0..num_phases-1 per flow. With
    per-flow `weights` (bytes): the most bytes over bandwidth."""
    used = channels >= 0
    keys = np.broadcast_to(np.asarray(phase_index)[:, None], channels.shape)[used] * network.num_channels + channels[used]
    size = num_phases * network.num_channels
    if weights is None:
        counts = np.bincount(keys, minlength=size).reshape(num_phases, network.num_channels)
    else:
        byte_loads = weighted_counts(keys, np.broadcast_to(np.asarray(weights)[:, None], channels.shape)[used], size)
        counts = bytes_over_bandwidth(byte_loads.reshape(num_phases, network.num_channels), network.channel_bandwidth)
    return counts.max(axis=1, initial=0)
