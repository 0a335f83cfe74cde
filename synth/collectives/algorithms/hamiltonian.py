"""Two edge-disjoint Hamiltonian cycles of an r x c torus (rank x + c y at column x, row y), for the
ring allreduce on 2D tori (DeSensi24: RING uses two such cycles, each in both directions, so that the
four ports of every node work at once).

The first cycle takes c - 1 steps along its row and one step to the next row, again and again:
every stretch covers a whole row, the next one starting a column earlier, so it closes after the r
rows exactly when c divides r. The second cycle is what is left of the torus's links (every node
keeps two); it is used when it is one cycle (verified here; true on every square torus), which
DeSensi24's condition (r = c k, gcd(r, c - 1) = 1) is meant to guarantee."""

from __future__ import annotations

import numpy as np


def hamiltonian_cycles(dims: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray] | None:
    """The two cycles as rank orders, or None when this construction does not give them."""
    if len(dims) != 2:
        return None
    c, r = dims
    if c < 3 or r < 3 or r % c:
        return None
    first = []
    x, y = 0, 0
    for _ in range(r):
        for k in range(c):
            first.append(((x + k) % c) + c * y)
        x, y = (x + c - 1) % c, (y + 1) % r
    if len(set(first)) != r * c:
        return None
    used = {frozenset((a, b)) for a, b in zip(first, first[1:] + first[:1])}
    left: dict[int, list[int]] = {}
    for rank in range(r * c):
        x, y = rank % c, rank // c
        for other in (((x + 1) % c) + c * y, x + c * ((y + 1) % r)):
            if frozenset((rank, other)) not in used:
                left.setdefault(rank, []).append(other)
                left.setdefault(other, []).append(rank)
    if any(len(v) != 2 for v in left.values()) or len(left) != r * c:
        return None
    second, previous, current = [0], None, 0
    while True:
        a, b = left[current]
        following = b if a == previous else a
        if following == 0:
            break
        second.append(following)
        previous, current = current, following
        if len(second) > r * c:
            return None
    if len(second) != r * c:
        return None
    return np.array(first), np.array(second)
