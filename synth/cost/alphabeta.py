"""The alpha-beta (Hockney) estimate of a phased exchange.

000_159c61f3158781c2.txt evaluates collectives with a start-up latency alpha = 1 us per
communication and beta = 8e-11 s per byte (100 Gb/s links). For a phased exchange whose phases
run one after the other, a phase in which the busiest channel carries c messages of b bytes takes
alpha + beta * b * c (the messages sharing that channel are serialized on it), and the exchange
is the sum over its phases.
"""

from __future__ import annotations

import numpy as np

DEFAULT_ALPHA = 1e-6  # seconds per phase (start-up latency)
DEFAULT_BANDWIDTH = 100e9  # bits per second per link


def beta_of(bandwidth_bits: float) -> float:
    """Seconds per byte on a link of the given bandwidth (100 Gb/s: 8e-11 s, as in the seed)."""
    return 8.0 / bandwidth_bits


def phase_times(max_contention, message_bytes: float, alpha: float = DEFAULT_ALPHA, bandwidth_bits: float = DEFAULT_BANDWIDTH) -> np.ndarray:
    """alpha + beta * bytes * max contention, per phase (seconds)."""
    return alpha + beta_of(bandwidth_bits) * message_bytes * np.asarray(max_contention, dtype=np.float64)


def exchange_time(max_contention, message_bytes: float, alpha: float = DEFAULT_ALPHA, bandwidth_bits: float = DEFAULT_BANDWIDTH) -> float:
    """The whole exchange: the sum of its phases' times (seconds)."""
    return float(phase_times(max_contention, message_bytes, alpha, bandwidth_bits).sum())
