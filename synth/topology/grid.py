"""Families whose routers sit on a grid (HyperX and 2dfc, tori): router r has coordinates
(c_0, ..., c_{L-1}) with r = c_0 + S_0 (c_1 + S_1 (...)), dimension 0 least significant, and is
named `r<c_0>.<c_1>...`; P terminals per router, router by router."""

from __future__ import annotations

from math import prod

import numpy as np

MAX_DIMENSIONS = 32  # every size is at least 2, so more would exceed the size guards anyway


def grid_strides(sizes: tuple[int, ...]) -> tuple[int, ...]:
    """Stride of each dimension in the router index, dimension 0 least significant."""
    return tuple(prod(sizes[:k]) for k in range(len(sizes)))


def grid_coordinates(sizes: tuple[int, ...]) -> np.ndarray:
    """(routers, dimensions) coordinates of routers 0..prod(sizes)-1, dimension 0 least significant."""
    index = np.arange(prod(sizes), dtype=np.int64)
    return (index[:, None] // np.asarray(grid_strides(sizes), dtype=np.int64)) % np.asarray(sizes, dtype=np.int64)


def dimension_classes(dimensions: int) -> tuple[str, ...]:
    return tuple(f"dim {k}" for k in range(dimensions))


class RouterGrid:
    """What a grid family's dataclass (fields `sizes` and `p`) shares: counts, coordinates, names and
    the hierarchy (the dimensions as layers, below them the terminals of a router when P > 1)."""

    @property
    def dimensions(self) -> int:
        return len(self.sizes)

    @property
    def num_routers(self) -> int:
        return prod(self.sizes)

    @property
    def num_terminals(self) -> int:
        return self.p * self.num_routers

    @property
    def strides(self) -> tuple[int, ...]:
        return grid_strides(self.sizes)

    def router_coordinates(self) -> np.ndarray:
        return grid_coordinates(self.sizes)

    def hierarchy(self) -> tuple[int, ...]:
        return self.sizes if self.p == 1 else (self.p, *self.sizes)

    def router_names(self) -> list[str]:
        return [f"r{'.'.join(map(str, c))}" for c in self.router_coordinates().tolist()]

    def translations(self) -> list[np.ndarray]:
        """The unit shift of each dimension (c_k -> c_k + 1 mod S_k; a terminal keeps its place on
        its router): an automorphism of a torus and of a HyperX (each dimension a ring, or a
        complete graph), and together they generate the translations, which fix no terminal."""
        n = self.num_terminals
        coordinates = self.router_coordinates()
        strides = np.asarray(self.strides, dtype=np.int64)
        terminals = np.arange(n, dtype=np.int64)
        out = []
        for k, size in enumerate(self.sizes):
            shifted = coordinates.copy()
            shifted[:, k] = (shifted[:, k] + 1) % size
            router = shifted @ strides
            out.append(np.concatenate([router[terminals // self.p] * self.p + terminals % self.p, n + router]))
        return out

