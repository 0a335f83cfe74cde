"""The LP bound of any network: minimum-congestion multicommodity flow, relaxed (HiGHS via scipy).

No routing, however chosen, puts fewer messages on its busiest router-to-router channel than
the optimum lambda* of the fractional problem

    minimize lambda  subject to  for every destination router k and router v != k:
        sum of f[k, c] over channels c leaving v - sum over channels entering v = demand(v -> k)
        sum over k of f[k, c] <= bandwidth(c) * lambda  for every channel c,  f >= 0,

where demand(v -> k) counts the messages from terminals on router v to terminals on router k.
Commodities are aggregated by destination router: a fractional flow of per-pair commodities
sums to one of this form and every flow of this form splits into per-pair flows (flow
decomposition), so the optimum is the same as with one commodity per pair, with far fewer
variables. Messages are whole, so a channel of bandwidth 1 carries at least ceil(lambda*)
(an integer strictly below lambda* is impossible; a tolerance absorbs the solver's rounding).
Terminal links are left out: their load is fixed by the workload (synth.cost.bounds gives it).
This is the certificate the path-selection synthesizer is measured against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix, hstack

from synth.core.errors import SynthError

# Variables are (destination routers with demand) x (router channels); HiGHS needs about 1 KiB
# per nonzero-carrying variable with its factorization: 2^23 variables fit this machine's memory.
MAX_VARIABLES = 1 << 23
TOLERANCE = 1e-6


@dataclass(frozen=True)
class LpBound:
    value: float  # lambda*, the fractional optimum
    bound: int  # the integer bound on messages per channel it implies
    status: str  # "optimal", or what HiGHS said


def lp_bound(network, src: np.ndarray, dst: np.ndarray) -> LpBound:
    """The LP bound of one flow set (one phase) on a direct network (terminals on one router each)."""
    n = network.num_terminals
    routers = network.num_nodes - n
    to_router = np.full(n, -1, dtype=np.int64)
    injection = np.flatnonzero(network.channel_src < n)
    if len(injection) != n or (network.channel_dst[injection] < n).any():
        raise SynthError(f"{network.spec}: the LP bound needs every terminal attached to one router by one link")
    to_router[network.channel_src[injection]] = network.channel_dst[injection] - n
    links = np.flatnonzero((network.channel_src >= n) & (network.channel_dst >= n))
    tail, head = network.channel_src[links] - n, network.channel_dst[links] - n
    a, b = to_router[np.asarray(src)], to_router[np.asarray(dst)]
    moving = a != b
    if not moving.any():
        return LpBound(0.0, 0, "optimal")
    demand = np.zeros((routers, routers))
    np.add.at(demand, (a[moving], b[moving]), 1.0)
    targets = np.flatnonzero(demand.sum(axis=0) > 0)
    k, c = len(targets), len(links)
    if k * c > MAX_VARIABLES:
        raise SynthError(f"the LP bound would have {k * c:,} variables ({k} destination routers x {c} channels), more "
                         f"than the {MAX_VARIABLES:,} this machine solves")
    # Conservation rows (commodity i, router v) for v != targets[i]; columns (commodity i, channel j).
    i, j = np.repeat(np.arange(k), c), np.tile(np.arange(c), k)
    rows_out = i * routers + tail[j]
    rows_in = i * routers + head[j]
    col = i * c + j
    flow = coo_matrix((np.concatenate([np.ones(k * c), -np.ones(k * c)]),
                       (np.concatenate([rows_out, rows_in]), np.concatenate([col, col]))), shape=(k * routers, k * c)).tocsr()
    keep = np.ones(k * routers, dtype=bool)
    keep[np.arange(k) * routers + targets] = False
    a_eq = hstack([flow[keep], coo_matrix((int(keep.sum()), 1))]).tocsr()
    b_eq = demand[:, targets].T.ravel()[keep]
    bandwidth = network.channel_bandwidth[links]
    capacity = coo_matrix((np.ones(k * c), (j, col)), shape=(c, k * c))
    a_ub = hstack([capacity, coo_matrix(-bandwidth[:, None])]).tocsr()
    cost = np.zeros(k * c + 1)
    cost[-1] = 1.0
    result = linprog(cost, A_ub=a_ub, b_ub=np.zeros(c), A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if result.status != 0:
        raise SynthError(f"the LP bound was not solved: {result.message}")
    value = float(result.x[-1])
    return LpBound(value, int(math.ceil(value - TOLERANCE)), "optimal")
