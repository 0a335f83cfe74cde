"""Closed forms of [DeSensi24]'s deficiency model (eq. 1), next to which synth prints
the values it measures on a mapped schedule (synth.pricing.schedule_cost).

Table 2 (D >= 2 dimensions, p nodes): latency deficiency Lambda, bandwidth deficiency Psi and
congestion deficiency Xi of every algorithm. Swing(B)'s Xi is the sum over its reduce-scatter
steps s of delta(sigma(s)) / 2^(s+1) (each step moves half the data of the one before, and its
busiest link carries delta flows), which tends to ((2^D - 1)/3) (1/(2^(D-1) - 1) + 1/(2^D + 1)):
6/5, 28/27, 120/119 for D = 2, 3, 4 (Table 2 prints the finite 1.19, 1.03, 1.008). Eq. 3 is the
extra congestion of a rectangular torus. These forms take Psi = 1 for Swing(B): the measured Psi
is (p - 1)/p (the last step's block is 1/p of the vector), so the measured Psi x Xi is the
closed form's Xi.
"""

from __future__ import annotations

import math
from fractions import Fraction

from synth.collectives.algorithms.swing import dimension_order, rho


def delta(s: int) -> int:
    return abs(rho(s))


def _sigma(dims: tuple[int, ...]) -> list[int]:
    """The per-dimension step index of every step, dimensions round robin from dimension 0."""
    return [sigma for _, sigma in dimension_order(dims, 0)]


def swing_b_xi(dims: tuple[int, ...]) -> float:
    """Xi of bandwidth-optimal Swing on a d_0 x ... torus of power-of-two sizes."""
    return float(sum(Fraction(delta(sigma), 2 ** (s + 1)) for s, sigma in enumerate(_sigma(dims))))


def swing_b_xi_limit(dimensions: int) -> Fraction:
    d = dimensions
    return Fraction(2 ** d - 1, 3) * (Fraction(1, 2 ** (d - 1) - 1) + Fraction(1, 2 ** d + 1))


def rectangular_xi(dims: tuple[int, ...]) -> float:
    """DeSensi24 eq. 3: the extra congestion of Swing(B) on a rectangular torus (power-of-two sizes)."""
    d_min, d_max, dimensions = min(dims), max(dims), len(dims)
    lo, hi = int(math.log2(d_min)), int(math.log2(d_max))
    total = sum(Fraction(2 ** (s + 1) - (-1) ** (s + 1), 3 * 2 ** (s + 1 - lo)) for s in range(lo, hi))
    return float(total / (2 * d_min ** dimensions))


def table2(algorithm: str, p: int, dimensions: int) -> tuple[float, float, float]:
    """(Lambda, Psi, Xi) of DeSensi24 Table 2 for p nodes on a D-dimensional torus of equal sizes."""
    d, log_p, side = dimensions, math.log2(p), p ** (1.0 / dimensions)
    forms = {
        "ring": (2 * p / log_p, 1.0, 1.0),
        "rd-l": (1.0, d * log_p, 2 * d * side),
        "rd-b": (2.0, 2.0 * d, (2 ** d - 1) / 2 ** (d - 2)),
        "bucket": (2 * d * side / log_p, 1.0, 1.0),
        "swing-l": (1.0, d * log_p, 4 / 3 * d * side),
        "swing-b": (2.0, 1.0, swing_b_xi((round(side),) * d)),
    }
    return forms[algorithm]
