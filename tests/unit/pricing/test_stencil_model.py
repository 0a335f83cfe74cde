"""Prisacari20 ch.5's nearest-neighbour demand model (synth.pricing.stencil_model) with the digest's worked
numbers for DF(4,8,4) and alpha = (512, 512, 512) (../shared/spec/hierarchical-dragonfly-diameter2.md,
marked [derived] there: the seed prints only figures), each recomputed by hand below."""

from __future__ import annotations

import math

import pytest

from synth.pricing.stencil_model import (DIRECT, INDIRECT, RANDOM, best_placements, blocks, direct_demand,
                                      indirect_demand, neighbour_shares, random_demand)

ALPHA = (512, 512, 512)
P, A, GROUPS = 4, 8, 33  # DF(4,8,4): 1056 nodes, a h + 1 = 33 groups (a h - 1 = 31 intermediate groups)


def test_shares_of_eq_5_10():
    assert neighbour_shares(ALPHA, (8, 8, 4)) == pytest.approx((0.2, 0.2, 0.1))
    assert neighbour_shares(ALPHA, (16, 8, 8)) == pytest.approx((0.25, 0.125, 0.125))
    # An axis with one task exchanges nothing along it; the shares of a task sum to 1/2 per direction.
    assert neighbour_shares(ALPHA, (64, 1, 1)) == pytest.approx((0.5, 0.0, 0.0))


@pytest.mark.parametrize("beta, gamma, direct, indirect", [
    ((8, 8, 4), (4, 4, 2), 3.2, 4 * 4.8 / 31),  # lambda = (2,2,2): every axis doubled; 4 x (1.6 x 3) / 31
    ((8, 8, 4), (1, 8, 4), 6.4, None),  # lambda = (8,1,1): 2 x 32/1 x 0.2 ... only axis 0 leaves the group
    ((8, 8, 4), (2, 2, 2), 0.8, 0.2581),
    ((16, 8, 8), (4, 2, 4), 2.0, 0.6452),
])
def test_digest_values_of_eq_5_16_and_5_17(beta, gamma, direct, indirect):
    assert direct_demand(ALPHA, beta, gamma) == pytest.approx(direct)
    if indirect is not None:
        assert indirect_demand(ALPHA, beta, gamma, GROUPS) == pytest.approx(indirect, abs=5e-5)


def test_gamma_1_8_4_by_hand():
    # lambda = (8, 1, 1): only axis 0 crosses groups, with lambda_0 > 2: (1 + 0) x 32 / 1 x 0.2 = 6.4.
    assert blocks((8, 8, 4), (1, 8, 4)) == (8, 1, 1)
    assert direct_demand(ALPHA, (8, 8, 4), (1, 8, 4)) == pytest.approx(1 * 32 / 1 * 0.2)


def test_random_placement_eq_5_20_and_its_domain():
    # |gamma| = 32, |lambda| = 8: 32 / 8 x ln 8 / ln ln 8.
    assert random_demand((8, 8, 4), (4, 4, 2)) == pytest.approx(4 * math.log(8) / math.log(math.log(8)))
    assert random_demand((2, 1, 1), (1, 1, 1)) is None  # |lambda| = 2: ln ln 2 < 0, the formula does not apply


def test_search_finds_the_digest_optimum_for_beta_16_8_8():
    best = best_placements(ALPHA, 1024, P, A, GROUPS, beta=(16, 8, 8))
    assert best[DIRECT].demand == pytest.approx(2.0)
    assert best[INDIRECT].demand == pytest.approx(20 / 31)
    assert math.prod(best[DIRECT].gamma) <= P * A and math.prod(blocks((16, 8, 8), best[DIRECT].gamma)) <= GROUPS
    assert best[DIRECT].bandwidth_bound == pytest.approx(0.5) and best[INDIRECT].bandwidth_bound == 1.0


def test_search_is_exhaustive_over_task_grids():
    best = best_placements(ALPHA, 256, P, A, GROUPS)
    for strategy in (DIRECT, INDIRECT, RANDOM):
        chosen = best[strategy]
        assert chosen is not None and math.prod(chosen.beta) == 256
    # No (beta, gamma) with whole blocks beats the direct optimum (brute force over the same space).
    import itertools
    lowest = min(direct_demand(ALPHA, b, g)
                 for b in itertools.product([1, 2, 4, 8, 16, 32, 64, 128, 256], repeat=3) if math.prod(b) == 256
                 for g in itertools.product(*([d for d in range(1, x + 1) if x % d == 0] for x in b))
                 if math.prod(g) <= 32 and math.prod(blocks(b, g)) <= 33)
    assert best[DIRECT].demand == pytest.approx(lowest)
