"""The alpha-beta estimate with the seed's parameters ([Pham26]: alpha = 1 us,
beta = 8e-11 s/byte for 100 Gb/s)."""

import pytest

from synth.pricing.alphabeta import beta_of, exchange_time, phase_times


def test_seed_parameters():
    assert beta_of(100e9) == pytest.approx(8e-11)


def test_exchange_sums_its_phases():
    # two phases of 4 KiB messages, contention 1 and 3: 2 alpha + beta * 4096 * (1 + 3)
    assert exchange_time([1, 3], 4096) == pytest.approx(2e-6 + 8e-11 * 4096 * 4)
    assert phase_times([2], 1e6, alpha=0, bandwidth_bits=8e9)[0] == pytest.approx(2e-3)
