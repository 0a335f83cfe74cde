"""All-to-all(v) synthesis by phases (issue 24): Prisacari20's OPT and LAT generalized to any network,
with Fan24's radix for small messages.

Under synth's cost model (synth.pricing.alphabeta) a step costs alpha x (the most messages one port
starts) + beta x (its busiest channel's bytes over bandwidth). A direct exchange (every block sent
once, from its source to its destination) split into phases is never cheaper than the same blocks
in one phase routed as well: the busiest channel of the whole demand carries at most the sum of
the phases' busiest loads, and a port that starts m messages in one step starts at least m over
the phases. So the bandwidth end of the front is one phase, routed at the least contention: the
path-selection program (synth.routing.path_selection, bytes objective) over every node pair with
its bytes, which ends at or near the ceiling of the multicommodity-flow LP bound lambda*
(synth.measure.lp_bound). lambda* bounds every schedule, forwarding ones included: a forwarded
block's hops form a walk from its source to its destination, a routing of its demand, so the
channels' loads summed over the steps are at least a fractional routing's. (Prisacari20's phases
matter where the model does not look: incast and buffers, issue 25's simulation.)

The latency end is forwarding: TuNA (Fan24), radix r from 2 up, whose K = ceil(log_r P) rounds
start fewer messages per port and move every block up to K times; routed along the same pair
paths. The front keeps the points that no other beats in both alpha terms and busiest bytes; per
message size the least time is chosen (a schedule per size band).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.routing.path_selection import PathsOptions, PathsReport, route_phase_paths
from synth.synthesis.transfers import MAX_PAIRS, TransferGraph, pairs_graph

EXCHANGES = ("alltoall", "alltoallv")
ROUTER = "paths (one phase of every node pair, synth.synthesis.exchange)"
MAX_RADICES = 24  # TuNA radices tried: every one up to this many, else spread geometrically
# node pairs up to which the program chooses among all its candidates (minimal, Valiant, UGAL paths); beyond,
# among the minimal ones (the Valiant candidates of 512 routers' 261,632 pairs are 6.4e9 channel entries)
ALL_CANDIDATES_PAIRS = 1 << 14


@dataclass(frozen=True)
class ExchangeRouting:
    """Every rank pair along the program's path, and what the program proved."""

    graph: TransferGraph
    lp: float  # lambda*'s certified lower end: blocks (alltoallv: bytes) over bandwidth on the busiest channel
    granule: int  # every router-to-router channel's load is a multiple of it (0: not, their bandwidths differ)
    report: PathsReport

    def bound(self, floor: float) -> float:
        """The busiest channel's least load with every block in one phase: lambda* (rounded up to
        the granule where the router-to-router channels have bandwidth 1: their loads are then
        multiples of it) or `floor`, the terminal links'."""
        return max(rounded(self.lp, self.granule), floor)

    def as_dict(self) -> dict:
        return {"program": self.report.as_dict(), "lp_lower": self.lp}


def node_demand(network, ranks_per_node: int, sizes: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every ordered pair of distinct nodes with what it carries: blocks (alltoall: Q^2 per pair) or
    bytes (alltoallv: its rank pairs' blocks summed)."""
    n, q = network.num_terminals, ranks_per_node
    a, b = np.nonzero(~np.eye(n, dtype=bool))
    if sizes is None:
        weights = np.full(len(a), q * q, dtype=np.int64)
    else:
        per_node = np.asarray(sizes, dtype=np.int64).reshape(n, q, n, q).sum(axis=(1, 3))
        weights = per_node[a, b]
    return a.astype(np.int64), b.astype(np.int64), weights


def route_exchange(topology, ranks_per_node: int, sizes: np.ndarray | None, time_limit: float, solver: str,
                   candidates: str | None = None, say=lambda text: None) -> ExchangeRouting:
    """The path of every node pair when all of them send at once, chosen by the path-selection
    program (bytes over bandwidth), and the transfer graph of every rank pair along them."""
    network = topology.network()
    n, q = network.num_terminals, ranks_per_node
    pairs = n * (n - 1) * q * q + n * q * (q - 1)
    if pairs > MAX_PAIRS:
        raise SynthError(f"{topology.spec}: an all-to-all of {n * q:,} ranks joins {pairs:,} rank pairs, more than the "
                         f"{MAX_PAIRS:,} a synthesis routes")
    a, b, weights = node_demand(network, q, sizes)
    if candidates is None:
        candidates = "all" if len(a) <= ALL_CANDIDATES_PAIRS else "minimal"
    say(f"routing {len(a):,} node pairs as one phase (path-selection program, {candidates} candidates)")
    options = PathsOptions(candidates=candidates, solver=solver, time_limit=time_limit, objective="bytes")
    paths, report = route_phase_paths(topology, a, b, options, seed=0, weights=weights)
    say(f"routed: {report.progress_text()}")
    granule = max(1, int(np.gcd.reduce(weights[weights > 0]))) if (weights > 0).any() else 1
    granule = granule if unit_router_links(network) else 0
    graph = pairs_graph(topology, q, "all", (a, b), ROUTER, node_paths=paths)
    return ExchangeRouting(graph, report.lp_lower, granule, report)


def unit_router_links(network) -> bool:
    """Whether every router-to-router channel has bandwidth 1 (its loads are then whole messages)."""
    n = network.num_terminals
    between = (network.channel_src >= n) & (network.channel_dst >= n)
    return bool((network.channel_bandwidth[between] == 1).all())


def rounded(value: float, granule: int) -> float:
    """`value` rounded up to a multiple of `granule` (0: as it is)."""
    return granule * math.ceil(value / granule - 1e-9) if granule else value


def radices(ranks: int) -> list[int]:
    """TuNA's radices to try: 2..P-1, or MAX_RADICES of them spread geometrically."""
    if ranks - 2 <= MAX_RADICES:
        return list(range(2, ranks))
    picks = np.unique(np.round(np.geomspace(2, ranks - 1, MAX_RADICES)).astype(np.int64))
    return [int(r) for r in picks]


def pareto(points: list[tuple[float, float]]) -> list[int]:
    """The indices of points (alpha terms, busiest bytes) that no other beats in both (ties: the
    first), ordered by alpha terms."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1], i))
    kept, least = [], math.inf
    for i in order:
        if points[i][1] < least:
            kept.append(i)
            least = points[i][1]
    return kept
