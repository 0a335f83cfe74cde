"""OpenSM's own routing engines on a simulated copy of a network: their forwarding tables, read
back from the switches, as synth's out-port matrix (used by `synth opensm-check` and reports)."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from synth.errors import SynthError
from synth.opensm.sim import Simulator, find_tools, read_back_tables, run_opensm
from synth.render.switch_tables import render_fabric, render_guid2lid, switch_guids
from synth.tables.forwarding import NO_PORT, LidPlan, walk_channels
from synth.topology.network import Network

# OpenSM's engines that route a fat tree (torus-2QoS needs a torus and QoS; see docs/opensm-notes.md).
ENGINES = ("minhop", "updn", "dnup", "ftree", "dfsssp", "sssp", "nue", "lash", "dor")


def parse_engines(text: str) -> list[str]:
    """all, none, or a comma-separated list of ENGINES."""
    engines = [] if text == "none" else (list(ENGINES) if text == "all" else [e for e in text.split(",") if e])
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        raise SynthError(f"unknown OpenSM engine '{unknown[0]}' (known: {', '.join(ENGINES)})")
    return engines


def out_port_matrix(network: Network, read: dict[int, dict[int, int]], max_lid: int) -> np.ndarray:
    """Read-back tables as (switch index, LID) -> port; a switch missing from the read-back is an error."""
    table = np.full((network.num_switches, max_lid + 1), NO_PORT, dtype=np.uint8)
    for index, guid in enumerate(switch_guids(network).tolist()):
        entries = read.get(guid)
        if entries is None:
            raise SynthError(f"switch {network.node_names[network.num_terminals + index]} (GUID 0x{guid:016x}) was not read back")
        lids = np.array([lid for lid in entries if lid <= max_lid], dtype=np.int64)
        table[index, lids] = [entries[lid] for lid in lids.tolist()]
    return table


@dataclass
class EngineTables:
    engine: str
    configured_by: str  # the engine OpenSM reports; another one means it fell back
    out_port: np.ndarray  # (switch index, LID) -> port, as read back
    lids: LidPlan  # LMC 0, synth's LIDs
    seconds: float  # OpenSM's own run

    def walk(self, network: Network, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """walk_channels of flows src -> dst through these tables."""
        return walk_channels(network, self.out_port, src, dst, self.lids.terminal_base(dst))


def engine_tables(network: Network, engine: str, fabric: Path | None = None) -> EngineTables:
    """Run OpenSM's `engine` once on ibsim (the network's fabric file, written here unless given)
    with synth's LIDs at LMC 0, and read the switches' tables back."""
    tools = find_tools()
    plan = LidPlan(network.num_terminals, network.num_switches, 0)
    with tempfile.TemporaryDirectory(prefix="synth-fabric-") as scratch:
        if fabric is None:
            fabric = Path(scratch) / "fabric.net"
            fabric.write_text(render_fabric(network))
        with Simulator(tools, fabric) as sim:
            run = run_opensm(sim, engine, 0, render_guid2lid(network, plan))
            read = read_back_tables(sim)
    return EngineTables(engine, run.engine, out_port_matrix(network, read, plan.max_lid), plan, run.seconds)


def phase_contention(network: Network, channels: np.ndarray, phase_index: np.ndarray, num_phases: int) -> np.ndarray:
    """The most flows of one phase on a directed channel, per phase: `channels` is a (flows,
    hops) matrix padded with -1 (walk_channels), `phase_index` 0..num_phases-1 per flow."""
    used = channels >= 0
    keys = np.broadcast_to(np.asarray(phase_index)[:, None], channels.shape)[used] * network.num_channels + channels[used]
    counts = np.bincount(keys, minlength=num_phases * network.num_channels).reshape(num_phases, network.num_channels)
    return counts.max(axis=1, initial=0)
