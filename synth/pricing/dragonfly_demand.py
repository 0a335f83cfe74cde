"""The relative demand of any workload on a dragonfly's global links ([Prisacari20]
sec. 5.3.1, eq. 5.1-5.6), under direct (minimal) and indirect (Valiant) routing.

- (5.1) t_hat_sd = t_sd / sum_d t_sd: the bytes from s to d over the selected phases, as a share of
  all that s sends. Messages to itself are not traffic (no link carries them) and are left out.
- (5.2) direct: the global link from group i to group j carries every share from G_i to G_j.
- (5.3) indirect: a message from G_i to G_p (p != i) goes through an intermediate group chosen
  uniformly among the g - 2 others (P = 1/(g-2), eq. 5.9's 1/(a h - 1) at maximum size), so the link
  i -> j carries 1/(g-2) of the shares from G_i to every G_p, p != i, j (j as the intermediate) and
  of the shares from every G_p, p != i, j, to G_j (i as the intermediate).
  The seed's prose says indirect routing also sends messages within a group through another
  group, but (5.3) sums over p != i, j only, and its stencil bound (5.17) follows (5.3): we follow
  the formula, so messages within a group stay in it, as synth's `valiant` router does.
- (5.4) delta = Delta / B_P,eff: with uniform effective injection bandwidth, the relative demand is
  the sum of shares. Where groups are joined by b > 1 parallel global links (`:groups=G`), a pair's
  demand is spread over its b links (our generalization: the seed has b = 1).
- (5.5/5.6) B_P,eff <= min(B_P, B_L / max delta^L, B_R / max delta^R). The local (L) link demand
  has no closed form in the seed (it depends on the group's internal wiring); it is left out, so the
  bound printed is min(B_P, B_R / max delta^R).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.routing.minimal import router_view
from synth.traffic.flows import Flows

ROUTINGS = ("direct", "indirect")


@dataclass(frozen=True)
class GlobalDemand:
    routing: str  # "direct" (5.2) or "indirect" (5.3)
    demand: np.ndarray  # (g, g) relative demand per global link from group i to group j (0 where none)
    worst: float  # the largest per-link relative demand
    link: tuple[int, int]  # (i, j) of a most loaded link (the first in row order)

    def bandwidth_bound(self, b_r: float, b_p: float) -> float:
        """(5.5)/(5.6) without the local-link term: min(B_P, B_R / max delta^R)."""
        return b_p if self.worst == 0 else min(b_p, b_r / self.worst)


def _moving(workload, phases: np.ndarray):
    """The flows of each selected phase without messages to themselves (no link carries them)."""
    for phase in phases.tolist():
        flows = workload.flows(int(phase))
        moving = flows.src != flows.dst
        yield Flows(flows.src[moving], flows.dst[moving], flows.bytes[moving])


class GroupTraffic:
    """The shares t_hat of a workload (5.1) summed per ordered pair of groups, and the global links
    of every pair."""

    def __init__(self, topology, workload, phases: np.ndarray):
        groups = topology.router_groups()
        if groups is None:
            raise SynthError(f"the global-link demand model is for dragonflies (Prisacari20 ch.5), not {topology.family}")
        view = router_view(topology)
        group_of_terminal = groups[view.terminal_router]
        self.num_groups = g = int(groups.max()) + 1
        n = len(group_of_terminal)
        # Two passes over the phases, one phase in memory at a time: what each terminal sends, then
        # the shares (5.1) summed per ordered group pair.
        sent = np.zeros(n)
        for flows in _moving(workload, phases):
            sent += np.bincount(flows.src, weights=flows.bytes.astype(float), minlength=n)
        self.shares = np.zeros(g * g)
        for flows in _moving(workload, phases):
            share = np.divide(flows.bytes.astype(float), sent[flows.src], out=np.zeros(len(flows.src)),
                              where=sent[flows.src] > 0)
            self.shares += np.bincount(group_of_terminal[flows.src] * g + group_of_terminal[flows.dst], weights=share,
                                       minlength=g * g)
        self.shares = self.shares.reshape(g, g)
        self.senders = int((sent > 0).sum())
        network = topology.network()
        between = (network.channel_src >= n) & (network.channel_dst >= n)
        a, b = network.channel_src[between] - n, network.channel_dst[between] - n
        crossing = groups[a] != groups[b]
        self.links = np.bincount(groups[a[crossing]] * g + groups[b[crossing]], minlength=g * g).reshape(g, g)

    def demand(self, routing: str) -> GlobalDemand | None:
        """The demand under `routing`; None for indirect routing with no intermediate group (g = 2)."""
        g, shares = self.num_groups, self.shares.copy()
        np.fill_diagonal(shares, 0.0)  # within a group: no global link (direct, and indirect as in 5.3)
        if routing == "direct":  # (5.2)
            per_pair = shares
        elif routing == "indirect":  # (5.3): j as the intermediate of i's traffic, i as the intermediate into j
            if g < 3:
                return None
            out_of, into = shares.sum(axis=1), shares.sum(axis=0)
            per_pair = (out_of[:, None] - shares + into[None, :] - shares) / (g - 2)
            np.fill_diagonal(per_pair, 0.0)
        else:
            raise ValueError(routing)
        per_link = np.divide(per_pair, self.links, out=np.zeros_like(per_pair), where=self.links > 0)
        if (per_pair[self.links == 0] > 0).any():
            raise SynthError("a pair of groups with traffic has no global link between them")
        worst = float(per_link.max(initial=0.0))
        i, j = divmod(int(np.argmax(per_link)), g)
        return GlobalDemand(routing, per_link, worst, (i, j))
