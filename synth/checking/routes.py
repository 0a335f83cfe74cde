"""Re-verify a routes file from scratch, trusting nothing the router computed or recorded.

The file's shape and types were checked by synth.io.routes_file.read_routes. Here every
recorded value is recomputed and compared:

- header: the ranks are the network's terminals; the pattern is regenerated (except `csv:`
  matrices) and its phase count and message size match; the phase list is exactly the one the
  selection defines (unique, in order, none missing or extra); the router is a known one and
  the synthesis options are valid and present exactly for the synthesizing routers;
- per phase: the flows are the pattern's; every path (channel ids; node ids in synth-routes/1)
  starts at its flow's source, ends at its destination, is a contiguous chain of existing
  channels (checked on the network's channel arrays, not derived from any routing arithmetic),
  passes no terminal on the way, and is minimal: 2 x the NCA layer channels in an XGFT (where a
  contiguous minimal path is up*/down*, so minimality is the test for that too), the shortest
  router path plus the two terminal links in a direct network (breadth-first distances);
- the maximum contention, per-class maxima, lower bound, cut bounds and gap equal the
  recomputed ones; the status is the one the numbers imply (optimal exactly at the bound or with
  a solver's proof recorded consistently, timeout when a solver call ran out of time, feasible
  otherwise); the summary equals the one recomputed from the phases.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from dataclasses import dataclass, field

import numpy as np

from synth.core.errors import SynthError
from synth.measure.contention_bounds import cut_bounds_batch
from synth.measure.evaluate import LP_SOURCE, PROOF_SUFFIX, PhaseEvaluation, stage_maxima, status_of
from synth.measure.loads import MAX_EXACT_BYTES, bytes_over_bandwidth, weighted_counts
from synth.render.console import summary as summary_of
from synth.io.routes_file import FLOWS_DIGEST, NODE_PATHS_FORMAT, add_flows_to_digest, routes_topology
from synth.routing.minimal import router_view
from synth.solve import SOLVERS
from synth.traffic.patterns import parse_pattern
from synth.routing.registry import DIRECT, MINIMAL, ROUTERS, VIA_GROUP, VIA_ONE, PathPolicy, RouterSpec
from synth.routing.lanes import lane_cycle
from synth.routing.dependencies import DependencyGraph
from synth.io.routes_file import columnar
from synth.topology.paths import Paths

MAX_LISTED_PROBLEMS = 20
LP_PROOF = "lp"  # the path-selection router's proof: its contention equals the LP bound over its candidates


@dataclass
class CheckReport:
    phases: int = 0
    paths: int = 0
    max_contention: int = 0
    policy: str = "minimal"  # what the paths were verified to be
    dependencies: str | None = None  # whether the channel dependency graph is acyclic (synth-routes/2 files)
    cycle: str | None = None  # a cycle of that graph, where it has one (the routes can deadlock without lanes)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    phase_notes: dict[str, list[int]] = field(default_factory=dict)  # what was not re-verified: the phases it concerns

    @property
    def ok(self) -> bool:
        return not self.problems

    def problem(self, text: str) -> None:
        self.problems.append(text)

    def note(self, text: str, phase: int) -> None:
        """A fact taken from the file, not re-verified, gathered over the phases into one line."""
        self.phase_notes.setdefault(text, []).append(phase)

    def note_lines(self) -> list[str]:
        """The notes, one line each: file-wide ones, then per kind the phases it concerns."""
        lines = list(self.notes)
        for text, phases in self.phase_notes.items():
            shown = ", ".join(map(str, phases[:8])) + (", ..." if len(phases) > 8 else "")
            lines.append(f"{text}: {len(phases)} phase{'s' if len(phases) != 1 else ''} ({shown})")
        return lines


def _same_rows(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal as multisets of rows (order of flows within a phase does not matter)."""
    if a.shape != b.shape:
        return False
    return np.array_equal(a[np.lexsort(a.T[::-1])], b[np.lexsort(b.T[::-1])])


def _by_length(paths: Paths):
    """The flows grouped by path length, shortest first: (length, their indices ascending, their
    paths as a (flows, length) int64 matrix), from the CSR arrays without a list per flow."""
    lengths = paths.lengths()
    for length in np.unique(lengths).tolist():
        rows = np.flatnonzero(lengths == length)
        ids = paths.channels[paths.offsets[rows][:, None] + np.arange(length)] if length else np.zeros((len(rows), 0))
        yield length, rows, ids.astype(np.int64, copy=False)


def _flagged(rows: np.ndarray, mask: np.ndarray):
    """(position j, flow rows[j]) where mask[j], in order: a loop over the problems, not the flows."""
    return ((j, rows[j]) for j in np.flatnonzero(mask).tolist())


def _path_problems(network, src, dst, paths: Paths, expected_hops) -> tuple[list[str], list[np.ndarray]]:
    """Check node paths (synth-routes/1), equal-length paths at once. Returns problems and the
    channel ids of valid paths."""
    problems, channels = [], []
    for length, rows, nodes in _by_length(paths):
        if length == 0:
            problems += [f"flow {r}: empty path" for r in rows]
            continue
        bad = (nodes[:, 0] != src[rows]) | (nodes[:, -1] != dst[rows])
        problems += [f"flow {r}: path runs {nodes[j, 0]}->{nodes[j, -1]}, flow is {src[r]}->{dst[r]}" for j, r in _flagged(rows, bad)]
        out_of_range = ((nodes < 0) | (nodes >= network.num_nodes)).any(axis=1)
        problems += [f"flow {r}: path names a node that does not exist" for j, r in _flagged(rows, out_of_range)]
        not_minimal = (length - 1) != expected_hops[rows]
        problems += [f"flow {r}: path has {length - 1} hops, a minimal one has {expected_hops[r]}" for j, r in _flagged(rows, not_minimal)]
        if length == 1:
            continue
        safe = np.where(out_of_range[:, None], 0, nodes)
        hop = network.find_channels(safe[:, :-1], safe[:, 1:])
        missing = (hop < 0).any(axis=1) & ~out_of_range
        problems += [f"flow {r}: hop {nodes[j, np.argmax(hop[j] < 0)]}->{nodes[j, np.argmax(hop[j] < 0) + 1]} is not a channel" for j, r in _flagged(rows, missing)]
        good = ~(bad | out_of_range | missing | not_minimal)
        channels.append(hop[good].ravel())
    return problems, channels


def _channel_path_problems(network, src, dst, paths: Paths, expected_channels, policy=None) -> tuple[list[str], list[np.ndarray]]:
    """Check channel paths (synth-routes/2), equal-length paths at once: every id an existing
    channel, the first leaving the source terminal, each entering the node the next one leaves,
    no terminal before the last, the last entering the destination terminal, and the router's
    policy: `policy(routers) -> (ok, what it requires)` on the routers a path visits, or (None) as
    many channels as a minimal path has. Returns problems and the channel ids of valid paths."""
    problems, channels = [], []
    n, total = network.num_terminals, network.num_channels
    for length, rows, hops in _by_length(paths):
        if policy is None:
            not_minimal = length != expected_channels[rows]
            problems += [f"flow {r}: path has {length} channels, a minimal one has {expected_channels[r]}"
                         for j, r in _flagged(rows, not_minimal)]
        else:
            not_minimal = np.zeros(len(rows), dtype=bool)
        if length == 0:
            bad = src[rows] != dst[rows]
            problems += [f"flow {r}: empty path from {src[r]} to {dst[r]}" for j, r in _flagged(rows, bad & ~not_minimal)]
            continue
        out_of_range = ((hops < 0) | (hops >= total)).any(axis=1)
        problems += [f"flow {r}: path names a channel that does not exist" for j, r in _flagged(rows, out_of_range)]
        safe = np.where(out_of_range[:, None], 0, hops)
        tails, heads = network.channel_src[safe], network.channel_dst[safe]
        ends = (tails[:, 0] != src[rows]) | (heads[:, -1] != dst[rows])
        broken = (heads[:, :-1] != tails[:, 1:]).any(axis=1)
        through_terminal = (heads[:, :-1] < n).any(axis=1)
        for j, r in _flagged(rows, (ends | broken | through_terminal) & ~out_of_range):
            if ends[j]:
                problems.append(f"flow {r}: path runs {tails[j, 0]}->{heads[j, -1]}, flow is {src[r]}->{dst[r]}")
            elif broken[j]:
                k = int(np.argmax(heads[j, :-1] != tails[j, 1:]))
                problems.append(f"flow {r}: channel {hops[j, k + 1]} does not leave node {heads[j, k]}, where channel "
                                f"{hops[j, k]} arrives")
            else:
                problems.append(f"flow {r}: path passes through terminal {heads[j, np.argmax(heads[j, :-1] < n)]}")
        if policy is not None:
            valid = ~(ends | out_of_range | broken | through_terminal)
            kept, requirement = policy(heads[:, :-1] - n)
            to_itself = src[rows] == dst[rows]  # (without a policy the length test above catches these)
            problems += [f"flow {r}: a message to itself has a path of {length} channels, not an empty one"
                         for j, r in _flagged(rows, valid & to_itself)]
            not_minimal = valid & (~kept | to_itself)
            problems += [f"flow {r}: path is not {requirement}" for j, r in _flagged(rows, not_minimal & ~to_itself)]
        good = ~(ends | out_of_range | broken | through_terminal | not_minimal)
        channels.append(hops[good].ravel())
    return problems, channels


def _check_lanes(network, phase_paths: list[Paths], phase_lanes: list[np.ndarray], report) -> str:
    """Every virtual lane's dependency graph acyclic (over all phases), else a problem naming a cycle."""
    both = Paths.concatenate(phase_paths)
    channels, lengths = both.channels.astype(np.int64, copy=False), both.lengths()
    lanes = np.concatenate(phase_lanes).astype(np.int64) if phase_lanes else np.zeros(0, dtype=np.int64)
    used = np.unique(lanes).tolist()
    for lane in used:
        cycle = lane_cycle(channels, lengths, lanes, network.num_channels, lane)
        if cycle is not None:
            report.problem(f"virtual lane {lane}: its paths' channel dependencies have a cycle: {_cycle_text(network, cycle)}")
    return f"with the recorded virtual lanes ({len(used)} used: {', '.join(f'VL{v}' for v in used)}) every lane is acyclic"


def _describe_cycle(network, cycle: list[int] | None) -> str:
    if cycle is None:
        return "acyclic: the routes cannot deadlock, even without virtual lanes"
    return f"a cycle, so the routes can deadlock without virtual lanes: {_cycle_text(network, cycle)}"


def _cycle_text(network, cycle: list[int], shown: int = 6) -> str:
    names = network.node_names
    hops = [f"{names[network.channel_src[c]]}->{names[network.channel_dst[c]]}" for c in cycle[:shown]]
    more = f", ... ({len(cycle)} channels)" if len(cycle) > shown else ""
    return f"channel {cycle[0]} {', '.join(hops)}{more}, back to the first"


def _minimal_channels(topology, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Channels on a minimal path of every flow, from the network's structure: in closed form
    where the family gives one (an XGFT path climbs to the nearest common ancestor and back, 2 x its
    layer); else the injection link, the router hops of the shortest router path, the ejection link."""
    closed = topology.minimal_channels(src, dst)
    if closed is not None:
        return closed
    view = router_view(topology)
    hops = view.distance[view.terminal_router[src], view.terminal_router[dst]].astype(np.int64)
    return np.where(src == dst, 0, hops + 2)


def _policy(topology, policy: str):
    """The check of a direct network router's policy on the routers a path visits, r_0..r_k:
    `minimal`: k = d(r_0, r_k); `via-one` (Valiant): some r_i with d(r_0, r_i) = i and
    d(r_i, r_k) = k - i (both segments shortest). d is the network's minimal distance; with
    groups (dragonflies) a minimal segment also crosses between groups at most once. A router's
    own policy (PathPolicy, synth.routing.registry) brings its own check."""
    if isinstance(policy, PathPolicy):
        return policy.check(topology)
    view = router_view(topology)
    distance, groups = view.distance, view.groups

    def check(routers: np.ndarray) -> tuple[np.ndarray, str]:
        k = routers.shape[1] - 1
        if k < 0:
            return np.ones(len(routers), dtype=bool), "empty"
        if policy == VIA_GROUP:
            return _via_group(routers, topology.router_groups()), VIA_GROUP_TEXT
        position = np.arange(k + 1)[None, :]
        first = distance[routers[:, :1], routers] == position
        second = distance[routers, routers[:, -1:]] == k - position
        if groups is not None:  # crossings between groups before each router, per segment at most one
            crossed = np.concatenate([np.zeros((len(routers), 1), dtype=np.int64),
                                      np.cumsum(groups[routers[:, 1:]] != groups[routers[:, :-1]], axis=1)], axis=1)
            first &= crossed <= 1
            second &= (crossed[:, -1:] - crossed) <= 1
        if policy == MINIMAL:
            return first[:, -1], "a minimal path" + (" (one hop between groups at most)" if groups is not None else "")
        return (first & second).any(axis=1), "two minimal segments through one intermediate router"

    return check


VIA_GROUP_TEXT = ("at most three groups, none visited twice, and at most two local hops in each "
                  "(the dragonfly layered router's path space)")


def _via_group(routers: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """The layered dragonfly router's policy on visited routers (rows): the group sequence has at
    most three runs, of distinct groups, each run at most three routers (two local hops)."""
    g = groups[routers]
    starts = np.concatenate([np.ones((len(g), 1), dtype=bool), g[:, 1:] != g[:, :-1]], axis=1)
    runs = starts.sum(axis=1)
    run_id = np.cumsum(starts, axis=1) - 1
    ok = runs <= 3
    for r in range(3):  # routers per run, and the run's group
        in_run = run_id == r
        ok &= in_run.sum(axis=1) <= 3
        group_of = np.where(in_run, g, -1).max(axis=1)
        for q in range(r):
            other = np.where(run_id == q, g, -1).max(axis=1)
            ok &= ~((group_of >= 0) & (group_of == other))
    return ok


def _first_difference(expected: list[int], recorded: list[int]) -> str:
    for k, (a, b) in enumerate(zip(expected, recorded)):
        if a != b:
            return f"entry {k} is phase {b}, expected phase {a}"
    if len(recorded) < len(expected):
        return f"phase {expected[len(recorded)]} is missing ({len(recorded)} of {len(expected)} phases)"
    return f"phase {recorded[len(expected)]} is one too many ({len(recorded)} phases, expected {len(expected)})"


def _check_header(doc: dict, network, report: CheckReport, topology, spec: RouterSpec | None):
    """The traffic header and the phase list; returns the regenerated workload (None for CSV)."""
    traffic = doc["traffic"]
    pattern, selection = traffic["pattern"], traffic["selection"]
    recorded = [entry["phase"] for entry in doc["phases"]]
    if traffic["ranks"] > network.num_terminals or ("placement" not in traffic and not pattern.startswith("stencil:")
                                                     and traffic["ranks"] != network.num_terminals):
        report.problem(f"traffic.ranks is {traffic['ranks']}, the network has {network.num_terminals} terminals")
    if spec is None:  # (a router that does not apply is refused below, by name)
        known = [s.name for s in ROUTERS.applicable(topology)]
        report.problem(f"router {doc['router']!r} is not one synth has for {topology.family} (known: {', '.join(known)})")
    _check_synthesis(doc, spec, report)
    if not recorded:
        report.problem("the file has no phases")
    workload = None
    if pattern.startswith("csv:") and not Path(pattern[len("csv:"):]).is_file():
        report.notes.append(f"flows not compared with '{pattern}' (the file is not there): checked against the digest "
                            "the routes file was written with")
        if recorded != sorted(set(recorded)):
            report.problem("phases are not listed once each in increasing order")
        elif len(recorded) > traffic["phases"]:
            report.problem(f"{len(recorded)} phases listed, traffic.phases says the matrix has {traffic['phases']}")
        return None
    try:
        workload = parse_pattern(pattern, network.num_terminals, topology.hierarchy(), traffic["message_bytes"],
                                 topology=topology)
        if "placement" in traffic:
            workload = workload.place(traffic["placement"], network.num_terminals, topology.hierarchy())
        if network.failed_nodes is not None:  # a degraded network: the flows whose ends still meet
            workload = workload.on_network(network)
        expected = workload.select(selection).tolist()
    except SynthError as exc:
        report.problem(f"traffic pattern '{pattern}' with selection '{selection}' cannot be regenerated: {exc}")
        return None
    if traffic["ranks"] != workload.num_ranks:
        report.problem(f"traffic.ranks is {traffic['ranks']}, '{pattern}' has {workload.num_ranks} tasks")
    if traffic["phases"] != workload.num_phases:
        report.problem(f"traffic.phases is {traffic['phases']}, '{pattern}' has {workload.num_phases}")
    if recorded != expected:
        report.problem(f"phase list differs from selection '{selection}' of '{pattern}': {_first_difference(expected, recorded)}")
    return workload


def _check_synthesis(doc: dict, spec: RouterSpec | None, report: CheckReport) -> None:
    """The reader made sure the synthesizing routers record `synthesis`, with its types."""
    if "synthesis" not in doc or spec is None:
        return
    if not spec.synthesizes:
        report.problem(f"synthesis options recorded for router '{doc['router']}', which synthesizes nothing")
        return
    recorded = doc["synthesis"]
    try:
        options = spec.read_synthesis(recorded)
    except (TypeError, SynthError) as exc:
        report.problem(f"synthesis options are not valid: {str(exc).splitlines()[0]}")
        return
    if options.describe() != recorded or any(type(recorded[k]) is not type(v) for k, v in options.describe().items()):
        report.problem(f"synthesis options {recorded} are not in synth's form {options.describe()}")


def _check_bound(entry: dict, spec: RouterSpec, achieved: int, cut: int, report: CheckReport) -> int:
    """The lower bound the phase should record: the recomputed cut bound, or what its `bound_source`
    names, checked against the solver report (the LP bound over all paths a router recorded, or a
    solver's proof over every routing, whose value is the contention it proved optimal)."""
    phase, source, solver = entry["phase"], entry.get("bound_source", ""), entry.get("solver") or {}
    if not source:
        return cut
    if source == LP_SOURCE:
        lp = solver.get("lp_bound")
        if type(lp) is not int or lp <= cut:
            report.problem(f"phase {phase}: bound_source 'LP', but the solver report records no LP bound above the cut "
                           f"bound {cut} (lp_bound {lp!r})")
            return cut
        report.note("lower bound from the LP bound over all paths the solver report records (not re-solved here)", phase)
        return lp
    proof = source.removesuffix(PROOF_SUFFIX)
    if source.endswith(PROOF_SUFFIX) and proof in SOLVERS and spec.proof_raises_bound \
            and entry.get("proven_by") == proof and solver.get("proven_by") == proof and achieved > cut:
        report.note("lower bound from a solver's proof that no routing does better (not re-solved here)", phase)
        return achieved
    report.problem(f"phase {phase}: bound_source {source!r} is not a bound this phase can record (the cut bound is "
                   f"{cut}; 'LP' with the solver's lp_bound, or 'SOLVER proof' with the solver's proven_by above it)")
    return cut


def _check_status(entry: dict, spec: RouterSpec, synthesis: dict, achieved: int, bound: int, report: CheckReport) -> str:
    """The status the numbers imply (optimal only at the bound: a proof over every routing raised
    the bound already), with the recorded proof checked for consistency."""
    phase, solver = entry["phase"], entry.get("solver")
    proven_by = entry.get("proven_by")
    lp_key = spec.lp_proof_key  # the field of the solver report holding the LP bound an `lp` proof stands on
    lp_proof = proven_by == LP_PROOF and lp_key is not None
    if proven_by is not None:
        if proven_by not in SOLVERS and not lp_proof:
            report.problem(f"phase {phase}: proven_by names {proven_by!r}, not a solver synth has ({', '.join(SOLVERS)})")
        elif not spec.proves:
            report.problem(f"phase {phase}: proven_by recorded, but router '{spec.name}' proves nothing per phase")
        elif solver is None or solver.get("proven_by") != proven_by:
            report.problem(f"phase {phase}: proven_by {proven_by!r} does not match the solver report")
        elif lp_proof and achieved > solver[lp_key]:
            report.problem(f"phase {phase}: proven_by 'lp', but contention {achieved} is above the LP bound "
                           f"{solver[lp_key]} the solver report records ({lp_key})")
        elif not lp_proof and synthesis.get("solver") != proven_by:
            report.problem(f"phase {phase}: proven_by {proven_by!r}, but the run used solver {synthesis.get('solver')!r}")
        elif achieved > bound:
            report.note("above the bound over all routings, optimal over the router's own candidates or model by "
                        f"{'their LP bound' if lp_proof else 'its solver'} (the status says feasible; not re-solved here)",
                        phase)
    elif solver is not None and "proven_by" in solver:
        report.problem(f"phase {phase}: the solver report claims a proof the phase does not record")
    timed_out = bool(solver and solver["timeouts"])
    expected = status_of(achieved, bound, False, timed_out)
    if entry["status"] != expected:
        report.problem(f"phase {phase}: recorded status {entry['status']!r}, the numbers give {expected!r} "
                       f"(contention {achieved}, bound {bound}{', a solver timed out' if timed_out else ''})")
    return expected


def _check_consistent(network, doc: dict, report: CheckReport) -> None:
    """Destination-consistent routes: every node forwards all flows to one destination, in every
    phase, by one channel (what one LID per terminal can hold)."""
    from synth.routing.consistent_direct import is_destination_consistent
    from synth.topology.paths import Paths

    flows = np.concatenate([entry["flows"] for entry in doc["phases"]]) if doc["phases"] else np.zeros((0, 3), np.int64)
    paths = Paths.concatenate([entry["paths"] for entry in doc["phases"]])
    ok, why = is_destination_consistent(network, flows[:, 0], flows[:, 1],
                                        Paths(paths.offsets, paths.channels.astype(np.int64, copy=False)))
    if ok:
        report.policy += ", destination-consistent (one channel per node and destination)"
    else:
        report.problem(f"the routes are not destination-consistent: {why}")


def check_routes(doc: dict) -> CheckReport:
    """Re-verify a routes document (read_routes' or read_routes_columnar's, from either form of file);
    per phase its flows and paths are checked as arrays (synth.io.routes_file.columnar)."""
    doc = columnar(doc)
    report = CheckReport()
    topology = routes_topology(doc)
    network = topology.network()
    spec = ROUTERS.find(doc["router"], topology.routing_kind)
    workload = _check_header(doc, network, report, topology, spec)
    if spec is None:
        return report
    node_paths = doc["format"] == NODE_PATHS_FORMAT
    synthesis = doc.get("synthesis") or {}
    # the policy of the router's paths (on an XGFT every path is minimal up*/down*, checked by length)
    declared = spec.policy_for(synthesis) if spec.networks == DIRECT else MINIMAL
    report.policy = declared.text if isinstance(declared, PathPolicy) else {
        VIA_ONE: "two minimal segments through one router (Valiant)", VIA_GROUP: VIA_GROUP_TEXT}.get(declared, "minimal")
    refusal = spec.refusal(topology)
    if refusal is not None:
        report.problem(f"router '{doc['router']}' does not apply: {refusal}")
        return report
    policy = None if spec.networks != DIRECT or (declared == MINIMAL and topology.router_groups() is None) \
        else _policy(topology, declared)
    if node_paths and spec.policy != MINIMAL:
        report.problem(f"a synth-routes/1 file of router '{doc['router']}': version 1 has minimal routers only")
        return report
    weighs_bytes = doc.get("load_unit") == "bytes"
    if weighs_bytes and spec.minimizes_messages:
        report.problem(f"load_unit bytes recorded for router '{doc['router']}', which minimizes messages")
        return report
    if weighs_bytes and node_paths:
        report.problem("load_unit bytes in a synth-routes/1 file: version 1 counts messages only")
        return report
    evaluations = []
    dependencies = None if node_paths else DependencyGraph(network.num_channels)
    with_lanes = [entry for entry in doc["phases"] if "vls" in entry]
    if with_lanes and len(with_lanes) != len(doc["phases"]):
        report.problem(f"{len(with_lanes)} of {len(doc['phases'])} phases record virtual lanes (vls): all or none must")
    budget = synthesis.get("lanes") if spec.lane_budget else None
    if budget is not None and not with_lanes and doc["phases"]:
        report.problem(f"routed within a budget of {budget} virtual lanes (synthesis.lanes), but no phase records its lanes (vls)")
    highest = [(entry["phase"], int(entry["vls"].max(initial=0))) for entry in with_lanes]
    over = [(phase, lane) for phase, lane in highest if budget is not None and lane >= budget]
    if over:
        report.problem(f"phase {over[0][0]}: a path on VL{over[0][1]}, outside the budget of {budget} virtual lanes (VL0.."
                       f"VL{budget - 1}) the file was routed within (synthesis.lanes)")
    lanes: list[np.ndarray] = []
    flat_paths: list[Paths] = []
    for entry in doc["phases"]:
        phase = entry["phase"]
        report.phases += 1
        flows = entry["flows"]  # (n, 3) int64
        src, dst = flows[:, 0], flows[:, 1]
        paths = entry["paths"]  # a Paths: offsets into one array of channel (or node) ids
        if paths.num_flows != len(flows):
            report.problem(f"phase {phase}: {len(flows)} flows but {paths.num_flows} paths")
            continue
        if ((src >= network.num_terminals) | (dst >= network.num_terminals)).any():
            report.problem(f"phase {phase}: a flow names a rank outside 0..{network.num_terminals - 1}")
            continue
        if (network.failed_nodes is not None) != ("unreachable" in entry):
            report.problem(f"phase {phase}: " + ("the network is degraded but the phase does not record its unreachable "
                                                 "flows" if network.failed_nodes is not None else
                                                 "unreachable flows recorded on an intact network"))
        elif workload is not None and workload.has_phase(phase) and "unreachable" in entry \
                and int(workload.unreachable(np.array([phase]))[0]) != entry["unreachable"]:
            report.problem(f"phase {phase}: {entry['unreachable']} unreachable flows recorded, the degraded network cuts "
                           f"{int(workload.unreachable(np.array([phase]))[0])}")
        if workload is not None and workload.has_phase(phase):
            expected = workload.flows(phase)
            if not _same_rows(np.stack([expected.src, expected.dst, expected.bytes], axis=1), flows):
                report.problem(f"phase {phase}: flows differ from those of '{workload.pattern}'")
        if node_paths:
            problems, channels = _path_problems(network, src, dst, paths, _minimal_channels(topology, src, dst))
        else:
            problems, channels = _channel_path_problems(network, src, dst, paths, _minimal_channels(topology, src, dst),
                                                        policy)
        report.paths += paths.num_flows
        report.problems += [f"phase {phase}, {p}" for p in problems]
        if problems:
            continue
        if dependencies is not None:
            dependencies.add_paths(paths.channels.astype(np.int64, copy=False), paths.lengths())
        if "vls" in entry:
            lanes.append(entry["vls"])
            flat_paths.append(paths)
        used = np.concatenate(channels) if channels else np.zeros(0, dtype=np.int64)
        weights = flows[:, 2] if weighs_bytes else None
        if weights is not None and ((weights < 0).any() or float(weights.sum()) >= MAX_EXACT_BYTES):
            report.problem(f"phase {phase}: flow bytes negative, or more than 2^53 in all (load_unit bytes sums them exactly)")
            continue
        if weights is None:
            loads = np.bincount(used, minlength=network.num_channels)
        else:
            # (valid paths: `used` holds every path's channels, grouped by length; here in flow order)
            flat, lengths = paths.channels.astype(np.int64, copy=False), paths.lengths()
            per_hop = np.repeat(weights, lengths)
            loads = bytes_over_bandwidth(weighted_counts(flat, per_hop, network.num_channels), network.channel_bandwidth)
        achieved = int(loads.max(initial=0))
        report.max_contention = max(report.max_contention, achieved)
        stage_max = stage_maxima(network, loads[None, :])[0].tolist()
        stage_bounds = cut_bounds_batch(topology, np.zeros(len(src), dtype=np.int64), src, dst, 1, weights)[0].tolist()
        bound = _check_bound(entry, spec, achieved, max(stage_bounds, default=0), report)
        for name, recorded, value in (("max contention", entry["max_contention"], achieved), ("lower bound", entry["lower_bound"], bound),
                                      ("gap", entry["gap"], achieved - bound), ("stage_max", entry["stage_max"], stage_max),
                                      ("stage_bounds", entry["stage_bounds"], stage_bounds)):
            if recorded != value:
                report.problem(f"phase {phase}: recorded {name} {recorded}, recomputed {value}")
        status = _check_status(entry, spec, synthesis, achieved, bound, report)
        evaluations.append(PhaseEvaluation(phase, achieved, bound, status, -1, stage_bounds, stage_max,
                                           entry.get("bound_source", "")))
    if dependencies is not None and report.ok:
        cycle = dependencies.cycle()
        report.dependencies = _describe_cycle(network, cycle)
        report.cycle = None if cycle is None else _cycle_text(network, cycle)
        if with_lanes and report.ok:
            report.dependencies += "; " + _check_lanes(network, flat_paths, lanes, report)
    if report.ok and spec.networks == DIRECT and synthesis.get("consistency") == "destination":
        _check_consistent(network, doc, report)
    if FLOWS_DIGEST in doc["summary"]:
        digest = hashlib.sha256()
        for entry in doc["phases"]:
            add_flows_to_digest(digest, entry["phase"], entry["flows"])
        if digest.hexdigest() != doc["summary"][FLOWS_DIGEST]:
            report.problem(f"the flows are not those the file was written with (summary.{FLOWS_DIGEST} differs): a flow "
                           "was added, dropped or changed")
    if evaluations and len(evaluations) == len(doc["phases"]) and report.ok:
        expected = summary_of(evaluations)
        for key, value in expected.items():
            if doc["summary"].get(key) != value:
                report.problem(f"summary.{key} is {doc['summary'].get(key)!r}, recomputed {value!r}")
    return report
