"""Nearest-neighbour (stencil) exchanges, [Prisacari20] ch.5.

`stencil:A1xA2x...:B1xB2x...`: a domain of alpha = A1 x A2 x ... elements split over a beta =
B1 x B2 x ... grid of tasks (B_k divides A_k); task x (dimension 1 least significant: x_1 + B1
(x_2 + B2 ...)) sends one message to each neighbour x +- e_k (mod B_k) along every axis with
B_k > 1 (eq. 5.7, read symmetrically: the seed's relation names one direction only, its errata
say the exchange is periodic both ways). The message along axis k carries mu_k = mu * prod_{i != k}
alpha_i / beta_i bytes (eq. 5.8), mu the message size option (bytes per element of the face).
With B_k = 2 both neighbours are the same task: it gets both messages, the (1 + 1[beta_k = 2])
of eq. 5.11. One phase: every message of the exchange is concurrent.
"""

from __future__ import annotations

from math import prod

import numpy as np

from synth.core.errors import SynthError
from synth.core.validate import parse_int, show
from synth.traffic.flows import Flows

MAX_DIMENSIONS = 6


def parse_grid(text: str, what: str) -> tuple[int, ...]:
    parts = text.split("x")
    if not 1 <= len(parts) <= MAX_DIMENSIONS:
        raise SynthError(f"{what} must be 1 to {MAX_DIMENSIONS} sizes joined by 'x', got {show(text)}")
    return tuple(parse_int(v, f"{what}, size {k}", 1, 1 << 40) for k, v in enumerate(parts, 1))


def stencil_grids(pattern: str, argument: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    parts = argument.split(":")
    if len(parts) != 2:
        raise SynthError(f"traffic pattern {show(pattern)}: expected stencil:A1xA2x...:B1xB2x... (domain, task grid)")
    alpha = parse_grid(parts[0], f"{show(pattern)}: the domain")
    beta = parse_grid(parts[1], f"{show(pattern)}: the task grid")
    if len(alpha) != len(beta):
        raise SynthError(f"{show(pattern)}: the domain has {len(alpha)} dimensions, the task grid {len(beta)}")
    if any(a % b for a, b in zip(alpha, beta)):
        raise SynthError(f"{show(pattern)}: every task grid size must divide the domain size (Prisacari20 sec. 5.3.2)")
    return alpha, beta


def stencil_flows(alpha: tuple[int, ...], beta: tuple[int, ...], element_bytes: int) -> Flows:
    tasks = np.arange(prod(beta), dtype=np.int64)
    coordinates = [(tasks // prod(beta[:k])) % beta[k] for k in range(len(beta))]
    src, dst, size = [], [], []
    for k, b in enumerate(beta):
        if b == 1:
            continue
        face = element_bytes * prod(a // t for i, (a, t) in enumerate(zip(alpha, beta)) if i != k)  # eq. 5.8
        for step in (1, -1):
            moved = (coordinates[k] + step) % b
            src.append(tasks)
            dst.append(tasks + (moved - coordinates[k]) * prod(beta[:k]))
            size.append(np.full(len(tasks), face, dtype=np.int64))
    if not src:
        empty = np.zeros(0, dtype=np.int64)
        return Flows(empty, empty, empty)
    return Flows(np.concatenate(src), np.concatenate(dst), np.concatenate(size))
