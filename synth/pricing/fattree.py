"""Closed forms of [Prisacari20] chapter 2 for fat trees FT(L; M_1..M_L) and XGFTs."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import ceil, prod
from typing import Sequence

from synth.topology.xgft import Xgft


def bmin(m: Sequence[int], layer: int) -> int:
    """Eq. 2.1: B_min(l) = Pi_l - floor(Pi_l / (M_{l+1}*...*M_L)), messages per phase that every
    up (and down) link of a layer-l fat tree node must carry for contention-free all-to-all."""
    below, above = prod(m[:layer]), prod(m[layer:])
    return below - below // above


def bmin_table(xgft: Xgft) -> list[dict]:
    """B_min per layer and what it means on the XGFT: a layer-l subtree has W_1*...*W_{l+1} up
    links, so an all-to-all phase needs at least ceil(B_min(l) / links) messages on one of them."""
    rows = []
    for layer in range(xgft.height):
        links = xgft.wt_span[layer + 1]
        need = bmin(xgft.m, layer)
        rows.append({
            "layer": layer,
            "stage": layer + 1,
            "bmin": need,
            "full_bisection": xgft.mt_span[layer],
            "up_links": links,
            "contention_bound": ceil(need / links),
        })
    return rows


@dataclass(frozen=True)
class LinkTimings:
    """Sec. 2.5 simulation parameters: 10 Gb/s links, 100 ns links, 50 ns switches, 500 ns adapters, 64 B flits."""

    link_bandwidth_bps: float = 10e9
    t_link: float = 100e-9
    t_switch: float = 50e-9
    t_adapter: float = 500e-9
    flit_bytes: int = 64


def ideal_exchange_time(m: Sequence[int], message_bytes: int, timings: LinkTimings = LinkTimings()) -> float:
    """Sec. 2.5.1: T = sum_l M_1*...*M_{l-1}*(M_l - 1) * T(l) with
    T(l) = 2 t_path(l) + (F + 1) S/B and t_path(l) = 2 t_adapter + (2l - 1) t_switch + 2l t_link,
    F = message flits (at least one), S = flit size, B = link bandwidth; one task per leaf."""
    flits = max(1, ceil(message_bytes / timings.flit_bytes))
    flit_time = timings.flit_bytes * 8 / timings.link_bandwidth_bps
    total = 0.0
    for layer in range(1, len(m) + 1):
        t_path = 2 * timings.t_adapter + (2 * layer - 1) * timings.t_switch + 2 * layer * timings.t_link
        messages = prod(m[: layer - 1]) * (m[layer - 1] - 1)
        total += messages * (2 * t_path + (flits + 1) * flit_time)
    return total


def top_halving_savings(m: Sequence[int]) -> tuple[Fraction, Fraction]:
    """Sec. 2.4.2: (switch saving, link saving) of halving W_h of the full-bisection
    XGFT(h; m; 1, m_1, ..., m_{h-1}) (possible with the OPT exchange when m_h = 2):
    switches 1 - (1/(2 m_h) + sum_{l<h} 1/m_l) / (1/m_h + sum_{l<h} 1/m_l), links 1/(2h)."""
    h = len(m)
    lower = sum(Fraction(1, v) for v in m[:-1])
    switch = 1 - (Fraction(1, 2 * m[-1]) + lower) / (Fraction(1, m[-1]) + lower)
    return switch, Fraction(1, 2 * h)


def full_bisection_w(m: Sequence[int]) -> tuple[int, ...]:
    """W of the full-bisection XGFT with these M: w_1 = 1, w_{l+1} = m_l."""
    return (1,) + tuple(m[:-1])
