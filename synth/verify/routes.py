"""Re-verify a routes file from scratch, trusting nothing the router computed.

For every phase: the flows are the ones the traffic pattern defines (when it can be
regenerated), every path starts at its flow's source and ends at its destination, every hop
is an existing channel (looked up in the network's channel arrays, not derived from any
routing arithmetic), the path climbs then descends (up*/down*), its length is minimal
(2 x the NCA layer), and the recorded maximum contention and lower bound equal the ones
recomputed from the paths and the flows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from synth.cost.bounds import lower_bound
from synth.core.errors import SynthError
from synth.topology import parse_topology
from synth.traffic.patterns import parse_pattern

MAX_LISTED_PROBLEMS = 20
STATUSES = ("optimal", "feasible", "timeout", "infeasible")


@dataclass
class CheckReport:
    phases: int = 0
    paths: int = 0
    max_contention: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def problem(self, text: str) -> None:
        self.problems.append(text)


def _same_rows(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal as multisets of rows (order of flows within a phase does not matter)."""
    if a.shape != b.shape:
        return False
    return np.array_equal(a[np.lexsort(a.T[::-1])], b[np.lexsort(b.T[::-1])])


def _path_problems(network, levels, src, dst, paths, expected_hops) -> tuple[list[str], list[np.ndarray]]:
    """Check equal-length paths at once. Returns problems and the channel ids of valid paths."""
    problems, channels = [], []
    by_length: dict[int, list[int]] = {}
    for i, path in enumerate(paths):
        by_length.setdefault(len(path), []).append(i)
    for length, rows in by_length.items():
        rows = np.asarray(rows)
        if length == 0:
            problems += [f"flow {r}: empty path" for r in rows]
            continue
        nodes = np.asarray([paths[r] for r in rows], dtype=np.int64)
        bad = (nodes[:, 0] != src[rows]) | (nodes[:, -1] != dst[rows])
        problems += [f"flow {r}: path runs {nodes[j, 0]}->{nodes[j, -1]}, flow is {src[r]}->{dst[r]}" for j, r in enumerate(rows) if bad[j]]
        out_of_range = ((nodes < 0) | (nodes >= network.num_nodes)).any(axis=1)
        problems += [f"flow {r}: path names a node that does not exist" for j, r in enumerate(rows) if out_of_range[j]]
        if length == 1:
            continue
        safe = np.where(out_of_range[:, None], 0, nodes)
        hop = network.find_channels(safe[:, :-1], safe[:, 1:])
        missing = (hop < 0).any(axis=1) & ~out_of_range
        problems += [f"flow {r}: hop {nodes[j, np.argmax(hop[j] < 0)]}->{nodes[j, np.argmax(hop[j] < 0) + 1]} is not a channel" for j, r in enumerate(rows) if missing[j]]
        step = np.diff(levels[safe], axis=1)
        turns_up_again = ((step[:, :-1] < 0) & (step[:, 1:] > 0)).any(axis=1) if length > 2 else np.zeros(len(rows), bool)
        not_updown = (step == 0).any(axis=1) | turns_up_again
        problems += [f"flow {r}: path is not up*/down*" for j, r in enumerate(rows) if not_updown[j] and not missing[j]]
        not_minimal = (length - 1) != expected_hops[rows]
        problems += [f"flow {r}: path has {length - 1} hops, a minimal one has {expected_hops[r]}" for j, r in enumerate(rows) if not_minimal[j]]
        good = ~(bad | out_of_range | missing | not_updown | not_minimal)
        channels.append(hop[good].ravel())
    return problems, channels


def check_routes(doc: dict) -> CheckReport:
    report = CheckReport()
    spec = doc["topology"]["spec"]
    xgft = parse_topology(spec)
    network = xgft.network()
    levels = network.node_level
    traffic = doc.get("traffic") or {}
    workload = None
    pattern = traffic.get("pattern")
    if isinstance(pattern, str) and not pattern.startswith("csv:"):
        try:
            workload = parse_pattern(pattern, network.num_terminals, xgft.hierarchy(), int(traffic.get("message_bytes", 0)))
        except SynthError as exc:
            report.problem(f"traffic pattern '{pattern}' cannot be regenerated: {exc}")
    elif pattern:
        report.notes.append(f"flows not compared with '{pattern}' (a file the check does not reread)")

    for entry in doc["phases"]:
        phase = entry["phase"]
        report.phases += 1
        try:
            flows = np.asarray(entry["flows"], dtype=np.int64).reshape(-1, 3)
        except (ValueError, TypeError):
            report.problem(f"phase {phase}: flows are not [src, dst, bytes] integer triples")
            continue
        src, dst = flows[:, 0], flows[:, 1]
        paths = entry["paths"]
        if len(paths) != len(flows):
            report.problem(f"phase {phase}: {len(flows)} flows but {len(paths)} paths")
            continue
        if ((src < 0) | (src >= network.num_terminals) | (dst < 0) | (dst >= network.num_terminals)).any():
            report.problem(f"phase {phase}: a flow names a rank outside 0..{network.num_terminals - 1}")
            continue
        if workload is not None:
            if not 0 <= phase < workload.num_phases:
                report.problem(f"phase {phase}: '{pattern}' has phases 0..{workload.num_phases - 1}")
            else:
                expected = workload.flows(phase)
                exp_rows = np.stack([expected.src, expected.dst, expected.bytes], axis=1)
                if not _same_rows(exp_rows, flows):
                    report.problem(f"phase {phase}: flows differ from those of '{pattern}'")
        expected_hops = 2 * xgft.nca_layer(src, dst)
        problems, channels = _path_problems(network, levels, src, dst, paths, expected_hops)
        report.paths += len(paths)
        report.problems += [f"phase {phase}, {p}" for p in problems]
        used = np.concatenate(channels) if channels else np.zeros(0, dtype=np.int64)
        achieved = int(np.bincount(used, minlength=network.num_channels).max(initial=0))
        report.max_contention = max(report.max_contention, achieved)
        if problems:
            continue
        if entry["max_contention"] != achieved:
            report.problem(f"phase {phase}: recorded max contention {entry['max_contention']}, recomputed {achieved}")
        bound = lower_bound(xgft, src, dst)
        if "lower_bound" in entry and entry["lower_bound"] != bound:
            report.problem(f"phase {phase}: recorded lower bound {entry['lower_bound']}, recomputed {bound}")
        status = entry.get("status")
        if status not in STATUSES:
            report.problem(f"phase {phase}: unknown status {status!r}")
        elif status == "optimal" and achieved > bound and not entry.get("proven_by"):
            report.problem(f"phase {phase}: status optimal but contention {achieved} exceeds the bound {bound} with no proof recorded")
    return report
