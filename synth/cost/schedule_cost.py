"""A schedule on a network: every transfer routed, per step the bytes on every channel, and what
the cost models make of them.

Mapping: every transfer (src rank -> dst rank, rank i on terminal i) takes the path a router of
synth gives it (default minimal; the transfers of step s are routed as phase s). Per step, a
channel carries the bytes of the transfers crossing it, over its bandwidth.

alpha-beta (Hockney, multi-port, combining; 000's evaluation): a step takes alpha + beta x (the
most bytes over bandwidth on one channel in the step), the schedule the sum of its steps.

Deficiency model (001 eq. 1): T(n) = log2(p) alpha Lambda + (n / D) beta Psi Xi, with n the
vector (a rank's buffer) and 2D the ports of a node (a torus's dimensions; otherwise half the
router-to-router links of a rank's router). Measured from the mapped schedule:
- Lambda = steps / log2 p (latency deficiency);
- Psi = (sum over steps of the largest transfer) / (n / D): the bytes a step would need with every
  transfer alone on its own port (bandwidth deficiency: extra bytes, unused ports);
- Xi = (sum over steps of the busiest channel's bytes) / (sum over steps of the largest transfer):
  the slowdown from transfers of the same collective sharing links (congestion deficiency).
So beta (n / D) Psi Xi is exactly the alpha-beta estimate's bandwidth term; T_opt = alpha log2 p +
beta n / D is the lower bound with 2D ports.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from synth.cost.alphabeta import DEFAULT_ALPHA, DEFAULT_BANDWIDTH, beta_of
from synth.cost.loads import weighted_counts
from synth.route.paths import Paths, as_paths
from synth.schedule.schedule import Schedule


@dataclass
class MappedSchedule:
    steps: int
    channel_bytes: np.ndarray  # per step: the most bytes over bandwidth on one channel
    transfer_bytes: np.ndarray  # per step: the largest transfer
    flows: np.ndarray  # per step: the most transfers sharing one router-to-router channel
    hops: np.ndarray  # per step: the longest path in router-to-router hops
    vector_bytes: int  # n: a rank's buffer
    ports: int  # 2D


def map_schedule(schedule: Schedule, topology, router: str = "minimal", seed: int = 0, paths: Paths | None = None) -> MappedSchedule:
    """Route every transfer (or take `paths`, one per transfer) and measure every step."""
    from synth.workflow import router_function

    network = topology.network()
    step = schedule.transfer_step()
    if paths is None:
        route = router_function(router, topology=topology)
        routed = route(topology, schedule.src, schedule.dst, phase=step, occurrence=np.zeros(len(step), dtype=np.int64),
                       seed=seed)
        paths = as_paths(topology, schedule.src, schedule.dst, routed[0] if isinstance(routed, tuple) else routed)
    size = schedule.transfer_bytes()
    channels = network.num_channels
    keys = paths.keys(step * channels)
    per_hop = np.repeat(size, paths.lengths())
    unique, inverse = np.unique(keys, return_inverse=True)
    loads = weighted_counts(inverse.ravel(), per_hop, len(unique)) / network.channel_bandwidth[unique % channels]
    inner = (network.channel_src >= network.num_terminals) & (network.channel_dst >= network.num_terminals)
    flows = np.bincount(inverse.ravel(), minlength=len(unique)) * inner[unique % channels]
    n = schedule.num_steps
    return MappedSchedule(
        steps=n,
        channel_bytes=_per_step_max(unique // channels, loads, n),
        transfer_bytes=_per_step_max(step, size.astype(np.float64), n),
        flows=_per_step_max(unique // channels, flows.astype(np.float64), n).astype(np.int64),
        hops=_per_step_max(step, np.maximum(paths.lengths() - 2, 0).astype(np.float64), n).astype(np.int64),
        vector_bytes=vector_bytes(schedule),
        ports=node_ports(topology),
    )


def _per_step_max(step: np.ndarray, values: np.ndarray, steps: int) -> np.ndarray:
    out = np.zeros(steps)
    np.maximum.at(out, step, values)
    return out


def vector_bytes(schedule: Schedule) -> int:
    """n: the vector of a reduction or broadcast, the P blocks a rank gathers or scatters, the P
    blocks a rank sends in an all-to-all."""
    total = int(schedule.block_bytes.sum())
    return total // schedule.ranks if schedule.collective in ("alltoall", "alltoallv") else total


def node_ports(topology) -> int:
    """2D: a torus's 2 x dimensions; otherwise the router-to-router links of rank 0's router."""
    from synth.topology.grid import RouterGrid

    if isinstance(topology, RouterGrid):
        return 2 * topology.dimensions
    network = topology.network()
    n = network.num_terminals
    first = network.channel_dst[np.flatnonzero(network.channel_src == 0)[0]]
    return int(((network.channel_src == first) & (network.channel_dst >= n)).sum())


@dataclass(frozen=True)
class Costs:
    alpha: float
    beta: float
    steps: int
    time: float  # alpha-beta, seconds
    lower_bound: float  # T_opt = alpha log2 p + beta n / D
    latency_deficiency: float  # Lambda
    bandwidth_deficiency: float  # Psi
    congestion_deficiency: float  # Xi


def costs(mapped: MappedSchedule, ranks: int, alpha: float = DEFAULT_ALPHA, bandwidth_bits: float = DEFAULT_BANDWIDTH) -> Costs:
    beta = beta_of(bandwidth_bits)
    per_port = mapped.vector_bytes / (mapped.ports / 2) if mapped.ports else math.inf
    log_p = math.log2(ranks) if ranks > 1 else 1.0
    alone, shared = float(mapped.transfer_bytes.sum()), float(mapped.channel_bytes.sum())
    return Costs(
        alpha=alpha, beta=beta, steps=mapped.steps,
        time=mapped.steps * alpha + beta * shared,
        lower_bound=alpha * (math.log2(ranks) if ranks > 1 else 0.0) + beta * per_port,
        latency_deficiency=mapped.steps / log_p,
        bandwidth_deficiency=alone / per_port if per_port else 0.0,
        congestion_deficiency=shared / alone if alone else 1.0,
    )
