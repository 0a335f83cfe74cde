"""The relative demand of any workload on a dragonfly's global links (003_fd372c8942ac4293.txt
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
from synth.route.minimal import router_view

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


class GroupTraffic:
    """The shares t_hat of a workload (5.1) summed per ordered pair of groups, and the global links
    of every pair."""

    def __init__(self, topology, workload, phases: np.ndarray):
        groups = topology.router_groups()
        if groups is None:
            raise SynthError(f"the global-link demand model is for dragonflies (003 ch.5), not {topology.family}")
        view = router_view(topology)
        group_of_terminal = groups[view.terminal_router]
        self.num_groups = int(groups.max()) + 1
        n = len(group_of_terminal)
        src, dst, size = [], [], []
        for phase in phases.tolist():
            flows = workload.flows(int(phase))
            moving = flows.src != flows.dst
            src.append(flows.src[moving])
            dst.append(flows.dst[moving])
            size.append(flows.bytes[moving].astype(float))
        src, dst, size = (np.concatenate(x) if x else np.zeros(0) for x in (src, dst, size))
        src, dst = src.astype(np.int64), dst.astype(np.int64)
        sent = np.bincount(src, weights=size, minlength=n)
        share = np.divide(size, sent[src], out=np.zeros_like(size), where=sent[src] > 0)  # (5.1)
        g = self.num_groups
        self.shares = np.bincount(group_of_terminal[src] * g + group_of_terminal[dst], weights=share,
                                  minlength=g * g).reshape(g, g).astype(float)  # (float also with no flows)
        self.senders = int((sent > 0).sum())
        network = topology.network()
        between = (network.channel_src >= n) & (network.channel_dst >= n)
        a, b = network.channel_src[between] - n, network.channel_dst[between] - n
        crossing = groups[a] != groups[b]
        self.links = np.bincount(groups[a[crossing]] * g + groups[b[crossing]], minlength=g * g).reshape(g, g)

    def demand(self, routing: str) -> GlobalDemand:
        g, shares = self.num_groups, self.shares.copy()
        np.fill_diagonal(shares, 0.0)  # within a group: no global link (direct, and indirect as in 5.3)
        if routing == "direct":  # (5.2)
            per_pair = shares
        elif routing == "indirect":  # (5.3): j as the intermediate of i's traffic, i as the intermediate into j
            if g < 3:
                raise SynthError("indirect routing needs at least 3 groups (an intermediate group)")
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
