"""What a family's candidates are read from: the counts and degrees of an imported network's routers.

Each family lists the spec strings of the networks an imported one could be (Family.candidates), from this
shape, allowing for "a few" missing parts: at most MISSING of the family's routers and of its router channels.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from synth.topology.recognize.match import Routers

MISSING = 0.05  # the share of a family's switches, of its router channels and of its terminals a fabric may lack


@dataclass(frozen=True)
class Shape:
    graph: Routers

    @cached_property
    def routers(self) -> int:
        return self.graph.size

    @cached_property
    def p(self) -> int:
        """The most terminals on one router."""
        return int(self.graph.terminals.max(initial=0))

    @cached_property
    def out_degree(self) -> np.ndarray:
        """(R,) router channels leaving each router (parallel channels counted)."""
        return np.array([sum(out.values()) for out in self.graph.channels], dtype=np.int64)

    @cached_property
    def directed(self) -> bool:
        """Some channel has no channel back."""
        return any(self.graph.channels[v].get(u, 0) != count
                   for u, out in enumerate(self.graph.channels) for v, count in out.items())

    def degree(self, with_terminals: bool) -> int:
        """The most router channels leaving one router with (or without) terminals; 0 if there is none."""
        chosen = (self.graph.terminals > 0) == with_terminals
        return int(self.out_degree[chosen].max(initial=0))

    def family_routers(self) -> range:
        """The router counts a family network may have to be this one with a few switches missing: at most MISSING
        of them, or one."""
        return range(self.routers, max(self.routers + 1, int(self.routers / (1 - MISSING))) + 1)

    def admits(self, routers: int, channels: int) -> bool:
        """A family network of this many routers and router channels could be this one with a few parts missing:
        the switches of family_routers(), their channels, and at most MISSING of the others."""
        lost_routers, lost_channels = routers - self.routers, channels - self.graph.num_channels
        return routers in self.family_routers() and \
            0 <= lost_channels <= MISSING * channels + 2 * lost_routers * channels / max(routers, 1)

    @cached_property
    def levels(self) -> np.ndarray:
        """(R,) 1 + router hops to the nearest router with terminals (a tree's level; 0 if unreachable)."""
        level = np.where(self.graph.terminals > 0, 1, 0)
        frontier = list(np.flatnonzero(level == 1))
        while frontier:
            following = []
            for u in frontier:
                for v in self.graph.neighbours[u]:
                    if level[v] == 0:
                        level[v] = level[u] + 1
                        following.append(v)
            frontier = following
        return level

    def between_levels(self, lower: int) -> tuple[int, int]:
        """(most channels from one level-`lower` router up, most channels into one level-`lower + 1` router from
        below)."""
        levels = self.levels
        up = [sum(count for v, count in self.graph.channels[u].items() if levels[v] == lower + 1)
              for u in np.flatnonzero(levels == lower)]
        down = [sum(count for v, count in self.graph.channels[u].items() if levels[v] == lower)
                for u in np.flatnonzero(levels == lower + 1)]
        return max(up, default=0), max(down, default=0)


def factorizations(n: int, parts: int | None = None, smallest: int = 2):
    """Non-decreasing tuples of integers >= smallest whose product is n (exactly `parts` of them if given)."""
    if n == 1:
        if parts in (None, 0):
            yield ()
        return
    if parts == 0:
        return
    factor = smallest
    while factor * factor <= n:
        if n % factor == 0:
            for rest in factorizations(n // factor, None if parts is None else parts - 1, factor):
                yield (factor, *rest)
        factor += 1
    if n >= smallest and parts in (None, 1):
        yield (n,)
