"""`synth opensm-check DIR`: load synth's tables into OpenSM on a simulated fabric, read them back
from the switches, and walk every flow through them; then route the same fabric with OpenSM's
own engines and evaluate the workload on their tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from synth.core.errors import SynthError
from synth.core.validate import parse_int, read_text
from synth.opensm.engines import check_fabric, engine_tables, out_port_matrix
from synth.opensm.table_files import require_table_files
from synth.opensm.sim import (Simulator, find_tools, parse_guid2lid, parse_lft_text, read_back_tables, read_port_vls,
                              read_sl2vl, run_opensm)
from synth.io import qos_policy as qos
from synth.io.routes_file import read_routes, routes_topology
from synth.io.switch_tables import DLID_HEADER, terminal_port_guids
from synth.tables.forwarding import LidPlan, walk_channel_paths, walk_paths
from synth.io.routes_tables import RoutedFlows, routed_flows
from synth.topology.network import Network


@dataclass
class TableDir:
    path: Path
    doc: dict
    network: Network
    flows: RoutedFlows
    dlid: np.ndarray
    lmc: int
    topology: object = None  # the routes file's Topology


def load_table_dir(path: str | Path) -> TableDir:
    """The files of `synth tables --format opensm`, checked against each other."""
    path = Path(path)
    require_table_files(path)
    doc = read_routes(str(path / "routes.json"))
    # Routes with lanes deadlock without them: their QoS files are as required as the tables.
    laned = bool(doc["phases"]) and "vls" in doc["phases"][0]
    missing = [name for name in (qos.POLICY_FILE, qos.OPTIONS_FILE) if laned and not (path / name).is_file()]
    if missing:
        raise SynthError(f"{path}: missing {', '.join(missing)}, which routes.json's virtual lanes need (write the "
                         f"directory with `synth tables ROUTES --out {path}`)")
    topology = routes_topology(doc)
    network = topology.network()
    check_fabric(path / "fabric.net", network)
    flows = routed_flows(doc, network)
    rows = read_text(path / "dlid.csv", "DLID file").splitlines()
    where = f"DLID file '{path / 'dlid.csv'}'"
    if not rows or rows[0].strip() != DLID_HEADER:
        raise SynthError(f"{where} does not start with the header {DLID_HEADER}")
    table = np.array([[parse_int(v.strip(), f"{where}, line {n}") for v in _dlid_cells(row, where, n)]
                      for n, row in enumerate(rows[1:], start=2) if row.strip()], dtype=np.int64).reshape(-1, 4)
    if not parse_lft_text(read_text(path / "lfts.dump", "forwarding table dump")):
        raise SynthError(f"{path / 'lfts.dump'} holds no forwarding table (no 'Unicast lids ... guid' header)")
    if len(table) != len(flows.src) or any((table[:, k] != column).any() for k, column in
                                           enumerate((flows.src, flows.dst, None, flows.phase)) if column is not None):
        raise SynthError(f"{path / 'dlid.csv'} does not list the flows of {path / 'routes.json'} in order")
    lids = parse_guid2lid(read_text(path / "guid2lid", "LID file"), str(path / "guid2lid"))
    missing = [g for g in terminal_port_guids(network).tolist() if g not in lids]
    if missing:
        raise SynthError(f"{path / 'guid2lid'} has no LID for terminal port GUID 0x{missing[0]:016x} "
                         f"({len(missing)} of {network.num_terminals} terminals missing)")
    widths = {top - base + 1 for base, top in lids.values()}
    lmc = int(np.log2(max(widths, default=1)))
    return TableDir(path, doc, network, flows, table[:, 2], lmc, topology)


def _dlid_cells(row: str, where: str, line: int) -> list[str]:
    cells = row.split(",")
    if len(cells) != 4:
        raise SynthError(f"{where}, line {line}: expected src_rank,dst_rank,dlid,phase, got {len(cells)} columns")
    return cells


@dataclass
class FileCheck:
    engine: str
    lids_kept: bool
    flows: int
    mismatches: list[int] = field(default_factory=list)
    seconds: float = 0.0
    lanes: LaneCheck | None = None  # with a QoS policy (routes with lanes)

    @property
    def ok(self) -> bool:
        return self.engine == "file" and self.lids_kept and not self.mismatches and (self.lanes is None or self.lanes.ok)


@dataclass
class LaneCheck:
    """What OpenSM made of the lanes: its verdict on the policy, the SL-to-VL tables read back
    from the switches, the data VLs the switches run, and per flow whether the lane its SL (by
    the policy's rules) maps to at every switch it crosses is the recorded one."""

    policy_errors: list[str]
    switches_read: int
    sl2vl_wrong: list[str]  # switches whose read-back table differs from SL l -> VL l
    flows: int
    mismatches: list[int]  # flows that get another lane than the recorded one at a switch
    lanes_used: int = 0  # by the routes file
    vl_capability: int = 0  # data VLs the switch ports can run (PortInfo VLCap), the least over the switches
    operational_vls: int = 0  # data VLs they run (PortInfo OperVLs), the least over the switches
    remapped: dict[int, int] = field(default_factory=dict)  # SL -> VL the switches hold where it is not SL l -> VL l

    @property
    def ok(self) -> bool:
        return not self.policy_errors and not self.sl2vl_wrong and not self.mismatches

    @property
    def over_vl_limit(self) -> bool:
        return 0 < self.operational_vls < self.lanes_used


def _entries(guid2lid: str) -> set[tuple[str, ...]]:
    return {tuple(line.lower().split()) for line in guid2lid.splitlines() if line.strip()}


def check_file_tables(tables: TableDir) -> FileCheck:
    tools = find_tools()
    network = tables.network
    guid2lid = read_text(tables.path / "guid2lid", "LID file")
    plan = LidPlan.for_network(network, tables.lmc)
    qos_files = (tables.path / qos.OPTIONS_FILE, tables.path / qos.POLICY_FILE)
    laned = all(f.is_file() for f in qos_files)
    policy = qos.parse_policy(read_text(qos_files[1], "QoS policy"), f"QoS policy '{qos_files[1]}'") if laned else None
    with Simulator(tools, tables.path / "fabric.net") as sim:
        run = run_opensm(sim, "file", tables.lmc, guid2lid, tables.path / "lfts.dump", qos_files if laned else None)
        read = read_back_tables(sim)
        failed = set() if network.failed_nodes is None else set((network.failed_nodes - network.num_terminals).tolist())
        working = [k for k in range(network.num_switches) if k not in failed]  # failed switches are not in the fabric
        sl2vl = {k: read_sl2vl(sim, int(plan.switch_lid(k)), 1) for k in working} if laned else {}
        vls = [read_port_vls(sim, int(plan.switch_lid(k)), 1) for k in working] if laned else []
    ports = out_port_matrix(network, read, plan.max_lid)
    flows = tables.flows
    if flows.channels is not None:  # channel by channel: parallel links told apart
        walked, expected = walk_channel_paths(network, ports, flows.src, flows.dst, tables.dlid), flows.channels
    else:
        walked, expected = walk_paths(network, ports, flows.src, tables.dlid), flows.paths
    moving = (flows.src != flows.dst).tolist()
    bad = [k for k, (w, p, m) in enumerate(zip(walked, expected, moving)) if m and w != p]
    lanes = _check_lanes(tables, run.log, sl2vl, policy, vls) if laned else None
    return FileCheck(run.engine, _entries(run.guid2lid) == _entries(guid2lid), len(moving), bad, run.seconds, lanes)


def _check_lanes(tables: TableDir, log: str, sl2vl: dict[int, list[list[int]]], policy,
                 vls: list[tuple[int, int]]) -> LaneCheck:
    recorded = np.array([v for p in tables.doc["phases"] for v in p.get("vls", [])], dtype=np.int64)
    used = int(recorded.max(initial=0)) + 1
    expected = qos.sl2vl(used)
    errors = [line.split("->", 1)[-1].strip() for line in log.splitlines() if "ERR AC" in line]
    network = tables.network
    names = network.node_names[network.num_terminals:]
    wrong = [names[k] for k, rows in sl2vl.items() if not rows or any(row != expected for row in rows)]
    groups, rules = policy
    guids = terminal_port_guids(network)
    flows = tables.flows
    service_level = np.zeros(len(flows.src), dtype=np.int64)  # no rule: the default SL 0
    for source, target, level in reversed(rules):  # OpenSM applies the first matching rule
        members = [np.array(sorted(groups[name]), dtype=np.uint64) for name in (source, target)]  # uint64 both sides:
        hit = np.isin(guids[flows.src], members[0]) & np.isin(guids[flows.dst], members[1])  # no float64 compare
        service_level[hit] = level
    # Each switch a flow enters maps its SL to a VL by the read-back table of its input port (the
    # tables are read at output port 1: OpenSM programs one mapping on all of a switch's ports).
    ports = 1 + int(network.channel_dst_port.max(initial=0))
    table = np.full((network.num_switches, ports, qos.SERVICE_LEVELS), -1, dtype=np.int64)
    for k, rows in sl2vl.items():
        for in_port, row in enumerate(rows[:ports]):
            table[k, in_port, : len(row)] = row[: qos.SERVICE_LEVELS]
    channels = flows.channels if flows.channels is not None else _node_path_channels(network, flows.paths)
    lengths = np.fromiter(map(len, channels), dtype=np.int64, count=len(channels))
    hops = np.fromiter((c for path in channels for c in path), dtype=np.int64, count=int(lengths.sum()))
    flow_of = np.repeat(np.arange(len(channels)), lengths)
    enters = network.channel_dst[hops] >= network.num_terminals
    switch = network.channel_dst[hops][enters] - network.num_terminals
    lane = table[switch, network.channel_dst_port[hops][enters], service_level[flow_of[enters]]]
    moving = flows.src != flows.dst
    if len(recorded) != len(flows.src):
        mismatches = np.flatnonzero(moving).tolist()
    else:
        differs = np.zeros(len(flows.src), dtype=bool)
        differs[flow_of[enters][lane != recorded[flow_of[enters]]]] = True
        mismatches = np.flatnonzero(moving & differs).tolist()
    held = [row for rows in sl2vl.values() for row in rows]
    remapped = {sl: vl for sl in range(used) for vl in sorted({row[sl] for row in held if len(row) > sl}) if vl != sl}
    return LaneCheck(errors, len(sl2vl), wrong, int(moving.sum()), mismatches, used,
                     min((c for c, _ in vls), default=0), min((o for _, o in vls), default=0), remapped)


def _node_path_channels(network: Network, paths: list[list[int]]) -> list[list[int]]:
    """Channel ids along node paths (synth-routes/1 files; the lowest-numbered of parallel links)."""
    out = []
    for path in paths:
        hops = network.find_channels(np.asarray(path[:-1], dtype=np.int64), np.asarray(path[1:], dtype=np.int64)) \
            if len(path) > 1 else np.zeros(0, dtype=np.int64)
        out.append(hops.tolist())
    return out


def lanes_verdict(lanes: LaneCheck) -> str:
    """One line: OpenSM's verdict on the lanes, and its cause when they do not arrive."""
    policy = "QoS policy loaded" if not lanes.policy_errors else "QoS policy REFUSED: " + lanes.policy_errors[0]
    flows = (f"{lanes.flows - len(lanes.mismatches)} of {lanes.flows} flows get their recorded lane at every switch "
             "they cross (their SL by the policy's rules, through the read-back SL-to-VL table of their input port)")
    tables = f"SL-to-VL tables read back from {lanes.switches_read} switches"
    if lanes.over_vl_limit:
        shown = ", ".join(f"SL {sl} -> VL{vl}" for sl, vl in sorted(lanes.remapped.items())[:4])
        return (f"lanes: WRONG, the routes use {lanes.lanes_used} lanes but the switches run {lanes.operational_vls} data "
                f"VLs (OperVLs VL0-{lanes.operational_vls - 1}; their ports advertise VLCap VL0-"
                f"{lanes.vl_capability - 1}), and OpenSM masks every SL-to-VL entry to the VLs a port runs"
                f"{' (' + shown + ')' if shown else ''}: {flows}; {policy}; route within {lanes.operational_vls} lanes "
                f"(route --router paths --vls {lanes.operational_vls}, or synth vls --max-vls {lanes.operational_vls})")
    mapping = ("all SL l -> VL l" if not lanes.sl2vl_wrong else "WRONG at " + ", ".join(lanes.sl2vl_wrong[:3])
               + (f" and {len(lanes.sl2vl_wrong) - 3} more" if len(lanes.sl2vl_wrong) > 3 else ""))
    limit = f" within the {lanes.operational_vls} data VLs the switches run" if lanes.operational_vls else ""
    used = f"{lanes.lanes_used} lane{'s' * (lanes.lanes_used != 1)} used"
    return f"lanes: {policy}; {tables}, {mapping}, {used}{limit}; {flows}"


@dataclass
class EngineResult:
    engine: str
    configured_by: str  # the engine OpenSM reports; another one means it fell back
    max_contention: dict[int, int]  # per phase
    unrouted: int  # flows whose walk did not reach the destination
    seconds: float
    lanes: str = ""


def evaluate_engine(tables: TableDir, engine: str) -> EngineResult:
    """OpenSM's `engine` on the fabric (LMC 0, synth's LIDs), the workload walked through its tables."""
    routed = engine_tables(tables.network, engine, tables.path / "fabric.net", tables.topology)
    flows = tables.flows
    phases, phase_index = np.unique(flows.phase, return_inverse=True)
    weights = flows.bytes if tables.doc.get("load_unit") == "bytes" else None  # (in the routes file's unit)
    contention, unrouted = routed.phase_contention(tables.network, flows.src, flows.dst, phase_index, len(phases), weights)
    return EngineResult(engine, routed.configured_by, dict(zip(phases.tolist(), contention.tolist())), unrouted,
                        routed.seconds, routed.lanes)


def synth_lanes(tables: TableDir) -> str:
    """The lanes of the routes: as recorded (synth vls, route --vls), else what the lane heuristic
    gives them (synth.routing.lanes), so that they stand next to what OpenSM's engines need."""
    phases = tables.doc["phases"]
    if phases and "vls" in phases[0]:
        return f"{max((max(p['vls'], default=-1) for p in phases), default=-1) + 1} (recorded)"
    if tables.flows.channels is None:
        return "not computed (a synth-routes/1 file)"
    from synth.routing.lane_budget import lanes_for
    from synth.io.routes_file import MAX_VLS

    try:
        lanes, _ = lanes_for(tables.flows.channels, tables.network.num_channels, MAX_VLS)
    except SynthError as exc:
        return f"more than {MAX_VLS} ({str(exc).splitlines()[0]})"
    return f"{int(lanes.max(initial=-1)) + 1} needed (heuristic)"
