"""Paths for one step's messages that leave each node by distinct ports, where the node has the
ports: on a network whose nodes are their own routers (a torus, a HyperX, a Kautz graph, a GPU
mesh: synth.pricing.alphabeta), a message starts at the first router link of its path, so a rank
that sends k messages in a step pays k alphas when its router's paths all leave by one link, and
one alpha when each leaves by its own (a torus rank's partners (4, 0), (0, 4) and (4, 4) reached
by +x, +y and -x first). The router's paths are minimal; these need not be.

Per sending node, its messages to other nodes are assigned to its router's outgoing links, each
link at most ceil(k / links) of them (so at most one each where k <= links), the total hops the
least (the Hungarian method, scipy's linear_sum_assignment, on the costs 1 + the hops from the
link's far end to the destination's router). From the far end a message takes a shortest path,
each hop the least loaded of the links that keep it shortest (the step's messages laid so far);
then each message is taken up and laid again against all the others (`step_paths`).
`polished` improves such a step with the choice program (CP-SAT): per message its first link and
one of a few shortest ways on, the ports' shares as constraints, the busiest channel minimized
(torus 8x8, the step to the partners (2, 0), (0, 2) and (2, 2): 5 messages on the busiest channel
laid greedily, 4 polished; its 2x2 step: 3 and 2).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from synth.core.errors import SynthError
from synth.topology.paths import Paths

MAX_ROUTERS = 4096  # hop distances between every two routers: int16, 32 MiB at this many
FAR = 1 << 20  # the cost of a link from which a destination cannot be reached
REROUTE_PASSES = 1  # of taking each message up and laying it again against the others' loads
CONTINUATIONS = 4  # shortest ways on from each first link a polished step's program offers a message


class PortRouter:
    """The routers of a network whose nodes are their own routers, their links and the hops between
    every two of them: paths of one step's messages, each node's leaving by distinct links."""

    def __init__(self, network):
        from synth.topology.distances import hop_distances

        if not network.nodes_are_routers:
            raise SynthError("paths by distinct ports need nodes that are their own routers")
        n = network.num_terminals
        src, dst = network.channel_src.astype(np.int64), network.channel_dst.astype(np.int64)
        if network.num_nodes - n > MAX_ROUTERS:
            raise SynthError(f"{network.num_nodes - n:,} routers, more than the {MAX_ROUTERS:,} whose hops are kept")
        self.network = network
        self.bandwidth = network.channel_bandwidth.astype(np.float64)
        injection = np.flatnonzero(src < n)
        ejection = np.flatnonzero(dst < n)
        self.injection = np.full(n, -1, dtype=np.int64)
        self.injection[src[injection][::-1]] = injection[::-1]  # a terminal's first channel
        self.ejection = np.full(n, -1, dtype=np.int64)
        self.ejection[dst[ejection][::-1]] = ejection[::-1]
        self.router = dst[self.injection]  # per terminal its router
        links = np.flatnonzero((src >= n) & (dst >= n))
        order = links[np.lexsort((links, src[links]))]
        self.link_ptr = np.searchsorted(src[order], np.arange(network.num_nodes + 1))
        self.links = order  # per node its outgoing router links, by channel id
        self.head = dst
        indptr = self.link_ptr.astype(np.int64)
        self.hops = hop_distances(indptr, dst[order], network.num_nodes)  # between nodes over router links

    def out_links(self, node: int) -> np.ndarray:
        return self.links[self.link_ptr[node]:self.link_ptr[node + 1]]

    def step_paths(self, src: np.ndarray, dst: np.ndarray) -> Paths:
        """The paths of one step's messages between terminals src -> dst (in order; none within a
        terminal), each terminal's leaving by distinct links where it has as many."""
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        load = np.zeros(self.network.num_channels)  # per channel its messages over its bandwidth
        first = np.full(len(src), -1, dtype=np.int64)
        order = np.argsort(src, kind="stable")
        bounds = np.searchsorted(src[order], np.arange(self.network.num_terminals + 1))
        for terminal in range(self.network.num_terminals):
            mine = order[bounds[terminal]:bounds[terminal + 1]]
            mine = mine[self.router[dst[mine]] != self.router[terminal]]  # a router's own terminals: no link
            if len(mine):
                first[mine] = self._assigned(int(self.router[terminal]), self.router[dst[mine]])
        paths = [self._laid(int(src[k]), int(dst[k]), int(first[k]), load) for k in range(len(src))]
        for _ in range(REROUTE_PASSES):  # each message taken up and laid again against all the others
            for k in range(len(src)):
                self._add(paths[k], load, -1)
                paths[k] = self._laid(int(src[k]), int(dst[k]), int(first[k]), load)
        return Paths.from_lists(paths)

    def polished(self, src: np.ndarray, dst: np.ndarray, paths: Paths, work: float, budget=None) -> Paths:
        """`step_paths`' paths improved by the choice program (synth.solve, CP-SAT, `work` units of
        deterministic time, one worker: reruns give the same paths): per message its present path
        or a first link and a shortest way on (up to CONTINUATIONS a link), each sender's links
        within their share, the step's busiest channel over its bandwidth the least. The present
        paths are the hint, so the answer is never worse than them. `budget` (synth.solve.budget.Budget):
        the call takes its next share, at most `work`, and spends it there."""
        from synth.solve import solve
        from synth.solve.problem import ProblemBuilder
        from synth.synthesis.exact import integer_bandwidth

        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        if not len(src):  # the step's messages all within a node
            return paths
        present = paths.as_lists()
        options: list[list[list[int]]] = []
        for k, path in enumerate(present):
            mine = [path]
            if len(path) > 2:  # leaves by a link: the others each link and way on offers
                end = [int(self.ejection[dst[k]])]
                goal = int(self.router[dst[k]])
                for link in self.out_links(int(self.router[src[k]])).tolist():
                    for way in self._shortest_ways(int(self.head[link]), goal):
                        other = [path[0], link] + way + end
                        if other != path:
                            mine.append(other)
            options.append(mine)
        builder = ProblemBuilder(np.array([len(o) for o in options], dtype=np.int64))
        item = np.concatenate([np.full(len(o), k, dtype=np.int64) for k, o in enumerate(options)])
        candidate = np.concatenate([np.arange(len(o), dtype=np.int64) for o in options])
        flat = [path for o in options for path in o]
        first = np.array([path[1] if len(path) > 2 else -1 for path in flat], dtype=np.int64)
        links = np.bincount(self.links_of(), minlength=self.network.num_nodes)
        sent = np.bincount(src, minlength=self.network.num_terminals)
        share = -(-sent // np.maximum(links[self.router], 1))  # per sender the messages a link may start
        keys = src[item] * self.network.num_channels + first
        for key in np.unique(keys[first >= 0]).tolist():
            chosen = np.flatnonzero(keys == key)
            builder.add(item[chosen], candidate[chosen], upper=int(share[key // self.network.num_channels]))
        hop_item = np.repeat(np.arange(len(flat)), [len(path) for path in flat])
        hop_channel = np.fromiter((c for path in flat for c in path), dtype=np.int64, count=len(hop_item))
        coef = integer_bandwidth(self.network)
        order = np.argsort(hop_channel, kind="stable")
        bounds = np.searchsorted(hop_channel[order], np.arange(self.network.num_channels + 1))
        for c in np.flatnonzero(np.diff(bounds)).tolist():
            chosen = hop_item[order[bounds[c]:bounds[c + 1]]]
            builder.add(item[chosen], candidate[chosen], capped=True, coef=int(coef[c]))
        problem = builder.build(z_upper=len(src))
        hint = np.zeros(len(options), dtype=np.int64)
        if budget is None:
            result = solve(problem, "cpsat", time_limit=work, threads=1, hint=hint)
        else:
            from synth.solve.budget import Share

            share = budget.share()
            share = Share(min(work, share.work), share.deadline)
            result = solve(problem, "cpsat", threads=1, hint=hint, share=share)
            budget.spend(share, result.work)
        if not result.solved:
            return paths
        return Paths.from_lists([options[k][c] for k, c in enumerate(result.choice.tolist())])

    def links_of(self) -> np.ndarray:
        """Per router link, the node it leaves."""
        return self.network.channel_src[self.links].astype(np.int64)

    def _shortest_ways(self, at: int, goal: int) -> list[list[int]]:
        """Up to CONTINUATIONS shortest ways (links) from router `at` to router `goal`, the lowest
        channel ids first."""
        out: list[list[int]] = []

        def extend(u: int, way: list[int]) -> None:
            if len(out) >= CONTINUATIONS:
                return
            if u == goal:
                out.append(way)
                return
            links = self.out_links(u)
            for c in links[self.hops[self.head[links], goal] == self.hops[u, goal] - 1].tolist():
                extend(int(self.head[c]), way + [c])

        if self.hops[at, goal] >= 0:
            extend(at, [])
        return out

    def _add(self, path: list[int], load: np.ndarray, sign: int) -> None:
        np.add.at(load, path, sign / self.bandwidth[path])

    def _laid(self, src: int, dst: int, first: int, load: np.ndarray) -> list[int]:
        """The path of one message leaving by link `first` (-1: none, within its router) and on by a
        shortest way of least loaded links (`_way_on`), its load added to `load`."""
        path = [int(self.injection[src])]
        if first >= 0:
            path += [first] + self._way_on(int(self.head[first]), int(self.router[dst]), load)
        path.append(int(self.ejection[dst]))
        self._add(path, load, 1)
        return path

    def _way_on(self, at: int, goal: int, load: np.ndarray) -> list[int]:
        """A shortest way from router `at` to router `goal`, each hop the least loaded link of those
        that keep it shortest (the lowest channel id on a tie)."""
        way = []
        while at != goal:
            links = self.out_links(at)
            closer = links[self.hops[self.head[links], goal] == self.hops[at, goal] - 1]
            link = int(closer[np.argmin(load[closer])])
            way.append(link)
            at = int(self.head[link])
        return way

    def _assigned(self, router: int, goals: np.ndarray) -> np.ndarray:
        """Per message (to routers `goals`) the link it leaves `router` by: each link at most
        ceil(k / links) messages, the hops the least."""
        links = self.out_links(router)
        share = -(-len(goals) // len(links))
        hops = self.hops[self.head[links][None, :], goals[:, None]].astype(np.int64)
        cost = np.where(hops >= 0, 1 + hops, FAR).astype(np.float64)
        # a link's j-th message costs a hair more than its first: the shares spread evenly
        columns = np.tile(cost, (1, share)) + np.repeat(np.arange(share), len(links))[None, :] * 1e-3
        rows, chosen = linear_sum_assignment(columns)
        out = np.empty(len(goals), dtype=np.int64)
        out[rows] = links[chosen % len(links)]
        if (hops[rows, chosen % len(links)] < 0).any():
            raise SynthError(f"router {router} reaches no destination of its step's messages")
        return out
