"""The choice problem with several z variables (a capped group adds coef x z_k; the sum of the z
is minimized), on every backend, against a brute force over every choice."""

from __future__ import annotations

import itertools
import shutil

import numpy as np
import pytest

from synth.solve import solve
from synth.solve.problem import OPTIMAL, ProblemBuilder


def _problem(seed: int):
    """Six items of three candidates; per "step" k (0, 1) and "channel" c (0, 1, 2) a capped group
    of random pairs with coefficient 1 or 2 (a channel of twice the bandwidth)."""
    rng = np.random.default_rng(seed)
    builder = ProblemBuilder(np.full(6, 3))
    for k in range(2):
        for c in range(3):
            pairs = [(i, j) for i in range(6) for j in range(3) if rng.random() < 0.35]
            if pairs:
                items, candidates = map(np.array, zip(*pairs))
                builder.add(items, candidates, capped=True, z=k, coef=int(rng.integers(1, 3)))
    builder.add(np.array([0, 1]), np.array([0, 0]), upper=1)  # an ordinary bound too
    return builder.build(z_upper=6)


def _brute_force(problem) -> int:
    return min(problem.objective(np.array(choice)) for choice in itertools.product(range(3), repeat=6)
               if problem.violations(np.array(choice)) == 0)


@pytest.mark.parametrize("solver", ["cpsat", "cbc", "highs", "glpk"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_sum_of_the_z_is_minimized_exactly(solver, seed):
    if solver == "glpk" and shutil.which("glpsol") is None:
        pytest.skip("glpsol is not installed")
    problem = _problem(seed)
    assert problem.num_z == 2
    result = solve(problem, solver, time_limit=60, threads=1)
    assert result.status == OPTIMAL
    assert problem.violations(result.choice, result.objective) == 0
    assert result.objective == problem.objective(result.choice) == _brute_force(problem)


def test_z_values_round_the_excess_up_by_the_coefficient():
    builder = ProblemBuilder(np.full(3, 1))
    builder.add(np.arange(3), np.zeros(3), capped=True, z=0, coef=2)  # 3 pairs <= 2 z0: z0 = 2
    builder.add(np.arange(2), np.zeros(2), capped=True, z=1)  # 2 pairs <= z1
    problem = builder.build()
    assert problem.z_values(np.zeros(3, dtype=np.int64)).tolist() == [2, 2]
    assert problem.objective(np.zeros(3, dtype=np.int64)) == 4
    assert problem.violations(np.zeros(3, dtype=np.int64), 3) == 1 and problem.violations(np.zeros(3, dtype=np.int64), 4) == 0
