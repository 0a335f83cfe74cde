"""Nearest-neighbour exchanges on dragonflies: the demand model of [Prisacari20] ch.5.

A d-dimensional domain of alpha_1 x ... x alpha_d elements is split over a beta grid of tasks;
every task exchanges with its two neighbours along each axis (periodic; eq. 5.7 read
symmetrically, as the digest's erratum says). Under Cartesian placement each dragonfly group
holds a gamma-shaped block of tasks, lambda_k = ceil(beta_k / gamma_k) blocks along axis k.

- m_k (5.10): the share of a task's traffic sent to one neighbour along axis k;
- max relative demand on a global (R) link: direct routing (5.16), Valiant indirect routing
  (5.17), random placement with direct routing (5.20, balls into bins);
- bounds on the effective injection bandwidth B_P,eff <= B_R / max demand (5.21, 5.23, 5.25),
  and B_P itself (5.5/5.6); the local (L) link terms have no closed form in the seed and are left
  out, so these are bounds from the global links alone;
- the exhaustive search over task grids beta and group blocks gamma minimizing the criteria
  (5.22, 5.24, 5.26).

Erratum and choices: (5.20) states no log base; natural logarithms are used, and the expression
is undefined where log log |lambda| <= 0 (|lambda| <= e), where None is returned. The search
takes blocks with gamma_k dividing beta_k (every group holds a whole block, as the model's
boundary counts assume), that fit a group (|gamma| <= p a), in blocks that fit the groups
(|lambda| <= groups).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Sequence

DIRECT, INDIRECT, RANDOM = "cartesian-direct", "cartesian-indirect", "random-direct"
STRATEGIES = (DIRECT, INDIRECT, RANDOM)


def neighbour_shares(alpha: Sequence[int], beta: Sequence[int]) -> tuple[float, ...]:
    """m_k of eq. 5.10: (beta_k 1[beta_k > 1] / alpha_k) / (2 sum_i beta_i 1[beta_i > 1] / alpha_i)."""
    weights = [b / a if b > 1 else 0.0 for a, b in zip(alpha, beta)]
    total = 2 * sum(weights)
    return tuple(w / total if total else 0.0 for w in weights)


def blocks(beta: Sequence[int], gamma: Sequence[int]) -> tuple[int, ...]:
    """lambda_k = ceil(beta_k / gamma_k): group blocks along each axis."""
    return tuple(-(-b // g) for b, g in zip(beta, gamma))


def direct_demand(alpha, beta, gamma) -> float:
    """Eq. 5.16: max over axes of (1[lambda_k > 1] + 1[lambda_k = 2]) |gamma| / gamma_k m_k."""
    m, lam, size = neighbour_shares(alpha, beta), blocks(beta, gamma), math.prod(gamma)
    return max(((l > 1) + (l == 2)) * size / g * mk for g, l, mk in zip(gamma, lam, m))


def indirect_demand(alpha, beta, gamma, groups: int) -> float:
    """Eq. 5.17: 4 sum_k |gamma| / gamma_k m_k 1[lambda_k > 1] / (a h - 1). The divisor is the
    number of intermediate groups Valiant chooses from (eq. 5.9), a h - 1 = groups - 2 in the
    seed's maximum-size dragonflies; groups - 2 is used, so dragonflies with fewer groups fit too."""
    m, lam, size = neighbour_shares(alpha, beta), blocks(beta, gamma), math.prod(gamma)
    return 4 * sum(size / g * mk for g, l, mk in zip(gamma, lam, m) if l > 1) / (groups - 2)


def random_demand(beta, gamma) -> float | None:
    """Eq. 5.20: |gamma| / |lambda| * ln|lambda| / ln ln|lambda|; None where ln ln|lambda| <= 0."""
    groups = math.prod(blocks(beta, gamma))
    if groups <= math.e:
        return None
    return math.prod(gamma) / groups * math.log(groups) / math.log(math.log(groups))


@dataclass(frozen=True)
class Placement:
    strategy: str
    beta: tuple[int, ...]
    gamma: tuple[int, ...]
    demand: float  # max relative demand on a global link
    bandwidth_bound: float  # B_P,eff bound, in units of the injection bandwidth B_P


def evaluate(strategy: str, alpha, beta, gamma, groups: int, b_r: float = 1.0, b_p: float = 1.0) -> Placement | None:
    """The demand and the bound (5.21, 5.23, 5.25 with B_P) of one (strategy, beta, gamma)."""
    if strategy == DIRECT:
        demand = direct_demand(alpha, beta, gamma)
    elif strategy == INDIRECT:
        demand = indirect_demand(alpha, beta, gamma, groups)
    else:
        demand = random_demand(beta, gamma)
        if demand is None:
            return None
    bound = min(b_p, b_r / demand) if demand > 0 else b_p
    return Placement(strategy, tuple(beta), tuple(gamma), demand, bound / b_p)


def task_grids(total: int, dims: int, limits: Sequence[int] | None = None):
    """Every d-tuple of positive integers with product `total` (each dividing limits[k] if given)."""
    divisors = [d for d in range(1, total + 1) if total % d == 0]
    for head in itertools.product(divisors, repeat=dims - 1):
        rest, remainder = divmod(total, math.prod(head))
        if remainder == 0:
            grid = head + (rest,)
            if limits is None or all(l % g == 0 for g, l in zip(grid, limits)):
                yield grid


def best_placements(alpha: Sequence[int], tasks: int, p: int, a: int, groups: int,
                    beta: Sequence[int] | None = None) -> dict[str, Placement | None]:
    """The exhaustive search of sec. 5.3.4: for each strategy the (beta, gamma) with the least max
    demand (criteria 5.22, 5.24, 5.26), beta over the task grids dividing alpha (or the one given),
    gamma over the whole blocks that fit a group and whose blocks fit the groups. Ties keep the first in
    lexicographic order of (beta, gamma)."""
    betas = [tuple(beta)] if beta is not None else list(task_grids(tasks, len(alpha), alpha))
    best: dict[str, Placement | None] = {s: None for s in STRATEGIES}
    for grid in betas:
        for gamma in itertools.product(*([g for g in range(1, b + 1) if b % g == 0] for b in grid)):
            if math.prod(gamma) > p * a or math.prod(blocks(grid, gamma)) > groups:
                continue
            for strategy in STRATEGIES:
                result = evaluate(strategy, alpha, grid, gamma, groups)
                if result is not None and (best[strategy] is None or result.demand < best[strategy].demand - 1e-12):
                    best[strategy] = result
    return best
