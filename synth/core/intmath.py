"""Integer array arithmetic by constants, with shifts and masks for powers of two.

Per-flow integer arithmetic is the inner loop of every analysis; numpy's int64 division and
remainder are several times slower than shifts and masks, and the seeds' networks mostly
have power-of-two radices.
"""

from __future__ import annotations

import numpy as np


def is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def div(values: np.ndarray, divisor: int, out=None) -> np.ndarray:
    if is_power_of_two(divisor):
        return np.right_shift(values, divisor.bit_length() - 1, out=out)
    return np.floor_divide(values, divisor, out=out)


def mod(values: np.ndarray, divisor: int, out=None) -> np.ndarray:
    if is_power_of_two(divisor):
        return np.bitwise_and(values, divisor - 1, out=out)
    return np.remainder(values, divisor, out=out)


def mul(values: np.ndarray, factor: int, out=None) -> np.ndarray:
    if is_power_of_two(factor):
        return np.left_shift(values, factor.bit_length() - 1, out=out)
    return np.multiply(values, factor, out=out)
