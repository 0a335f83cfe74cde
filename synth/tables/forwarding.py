"""Destination-indexed forwarding tables from routes: LIDs, LMC offsets, and one out port per
(switch, LID).

An InfiniBand switch forwards by destination LID only. Routes that depend on the source (a
per-message ILP route) are expressed with LMC: every terminal owns 2^LMC consecutive LIDs, and
each flow is given one of them (its offset) so that all flows sharing (destination, offset) agree
at every switch they both visit. Finding the offsets is colouring the flows of each destination
(two conflict when they leave a common switch by different ports); greedy colouring is used and
compared with the lower bound max over (destination, switch) of the distinct ports taken there.

Entries no flow of the routes file uses are still filled, so that every LID is reachable from
every switch: on an XGFT d-mod-k (the up link floor(d / (W_1...W_l)) mod W_{l+1}, or down towards
d) for terminal LIDs, on the other families minimum-hop paths; minimum-hop paths for switch LIDs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from synth.core.errors import SynthError
from synth.core.interrupt import native
from synth.topology.network import Network
from synth.topology.paths import Paths
from synth.topology.xgft import Xgft

MAX_LMC = 7  # OpenSM's limit (lmc 0-7)
MAX_UNICAST_LID = 0xBFFF
NO_PORT = 255  # "no route" in an LFT
ARRIVED = -2  # walk marker: the packet reached the switch that owns the LID


@dataclass
class Hops:
    """Per flow, the switches a path visits and the port it leaves each by; (flows, hops), -1 padded."""

    switch: np.ndarray
    port: np.ndarray


def _padded(paths: Paths | list[list[int]]) -> np.ndarray:
    """The paths (Paths, or lists of ids) as one (paths, longest) matrix padded with -1."""
    paths = paths if isinstance(paths, Paths) else Paths.from_lists(paths)
    lengths = paths.lengths()
    out = np.full((paths.num_flows, int(lengths.max(initial=1))), -1, dtype=np.int64)
    if paths.num_flows:
        rows = np.repeat(np.arange(paths.num_flows), lengths)
        cols = np.arange(int(lengths.sum())) - np.repeat(paths.offsets[:-1], lengths)
        out[rows, cols] = paths.channels
    return out


def route_hops(network: Network, paths: Paths | list[list[int]]) -> Hops:
    """The (switch, out port) of every hop of every node path; a hop the network lacks is an error."""
    paths = paths if isinstance(paths, Paths) else Paths.from_lists(paths)
    nodes = _padded(paths)
    here, there = nodes[:, :-1], nodes[:, 1:]
    used = there >= 0
    channel = network.find_channels(here, there)
    broken = used & (channel < 0)
    if broken.any():
        flow = int(np.argwhere(broken)[0][0])
        raise SynthError(f"path of flow {flow} ({paths.path(flow).tolist()}) uses a link that network {network.spec} lacks")
    at_switch = used & (here >= network.num_terminals)
    switch = np.where(at_switch, here, -1)
    port = np.where(at_switch, network.channel_src_port[np.maximum(channel, 0)], -1)
    return Hops(switch, port)


# CP-SAT's deterministic time (about 2 s per unit on one core here) to save one LMC step over the
# greedy colouring, in all and per destination: a budget in deterministic time gives the same
# tables on every run and machine.
RECOLOUR_BUDGET = 60.0
RECOLOUR_PER_DESTINATION = 2.5


def colour_flows(dst: np.ndarray, hops: Hops) -> tuple[np.ndarray, int]:
    """(offset per flow, lower bound on the offsets any assignment needs: the most distinct ports
    taken at one switch towards one destination, or more where CP-SAT proved a destination needs
    more). Flows of one destination sharing an offset agree at every switch they both visit.

    Every destination is coloured greedily; the LMC is set by the destination needing the most
    colours, so CP-SAT then tries to bring only the destinations above one LMC step less down to
    it, and gives up (keeping the greedy colouring) as soon as one cannot be or the budget is spent."""
    offset = np.zeros(len(dst), dtype=np.int64)
    if len(dst) == 0:
        return offset, 1
    rows = np.concatenate([dst[:, None], hops.switch, hops.port], axis=1)
    routes, inverse = _unique_rows(rows)
    width = hops.switch.shape[1]
    switches, ports = routes[:, 1 : 1 + width], routes[:, 1 + width :]
    route_colour = np.zeros(len(routes), dtype=np.int64)
    starts = np.flatnonzero(np.concatenate([[True], routes[1:, 0] != routes[:-1, 0]]))
    groups = [(a, b) for a, b in zip(starts.tolist(), np.append(starts[1:], len(routes)).tolist()) if b - a > 1]
    bound, used = 1, {}
    for a, b in groups:
        bound = max(bound, _busiest_switch(switches[a:b], ports[a:b]))
        route_colour[a:b], used[a] = _greedy_colours(switches[a:b], ports[a:b])
    most = max(used.values(), default=1)
    target = 1 << (lmc_for(most) - 1) if most > 1 else 1  # one LMC step less
    if most > 1 and target >= bound:
        remaining = RECOLOUR_BUDGET
        for a, b in groups:
            if used[a] <= target:
                continue
            if remaining <= 0:
                break  # out of time: the greedy colouring stands
            fewer, impossible, spent = _colour_with(switches[a:b], ports[a:b], target, min(RECOLOUR_PER_DESTINATION, remaining))
            remaining -= spent
            if impossible:
                bound = max(bound, target + 1)  # proven: this destination needs more, so the LMC is minimal
            if fewer is None:
                break  # the step cannot be saved (or not in time): the greedy colouring stands
            route_colour[a:b] = fewer
    offset[:] = route_colour[inverse]
    return offset, bound


def _unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(rows, axis=0, return_inverse=True), rows in the same (lexicographic) order. That
    call sorts the rows as structured records holding the GIL (4.5 s on the million flows of a
    1024-leaf exchange), so no signal reaches it; a lexsort of the columns releases the GIL and
    runs under `native` (synth.core.interrupt), interrupted at once."""
    order = native(lambda: np.lexsort(rows.T[::-1]))  # the first column is the primary key
    ordered = rows[order]
    first = np.ones(len(rows), dtype=bool)
    first[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    inverse = np.empty(len(rows), dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse


def _greedy_colours(switches: np.ndarray, ports: np.ndarray) -> tuple[np.ndarray, int]:
    """First-fit colouring of one destination's routes, longest first: a route joins the first
    colour whose switches it leaves by the same ports."""
    colour = np.zeros(len(switches), dtype=np.int64)
    tables: list[dict[int, int]] = []
    for r in np.argsort(-(switches >= 0).sum(axis=1), kind="stable").tolist():
        hop_pairs = [(s, p) for s, p in zip(switches[r].tolist(), ports[r].tolist()) if s >= 0]
        for c, table in enumerate(tables):
            if all(table.get(s, p) == p for s, p in hop_pairs):
                break
        else:
            c = len(tables)
            tables.append({})
        tables[c].update(hop_pairs)
        colour[r] = c
    return colour, len(tables)


def _busiest_switch(switches: np.ndarray, ports: np.ndarray) -> int:
    """The most distinct ports one switch sends these routes by: no colouring uses fewer colours."""
    pairs = np.stack([switches.reshape(-1), ports.reshape(-1)], axis=1)
    pairs = np.unique(pairs[pairs[:, 0] >= 0], axis=0)
    return int(np.unique(pairs[:, 0], return_counts=True)[1].max(initial=1))


def _colour_with(switches: np.ndarray, ports: np.ndarray, colours: int,
                 time_limit: float = RECOLOUR_PER_DESTINATION) -> tuple[np.ndarray | None, bool, float]:
    """(a colouring of one destination's routes with `colours` colours, or None; whether CP-SAT
    proved that none exists; the deterministic time spent). Colour c may leave switch s by one port only: y[s, p, c] marks
    port p as used by colour c."""
    from ortools.sat.python import cp_model

    from synth.solve.cpsat import configure, run_solver

    visited = switches >= 0
    hop_keys = sorted({(s, p) for s, p in zip(switches[visited].tolist(), ports[visited].tolist())})
    key_index = {key: i for i, key in enumerate(hop_keys)}
    by_switch: dict[int, list[int]] = {}
    for (s, _), i in key_index.items():
        by_switch.setdefault(s, []).append(i)
    model = cp_model.CpModel()
    y = [[model.new_bool_var("") for _ in range(colours)] for _ in hop_keys]
    x = []
    for r, (sw, pt) in enumerate(zip(switches.tolist(), ports.tolist())):
        row = [model.new_bool_var("") for _ in range(min(r + 1, colours))]  # symmetry: colours in order of use
        model.add_exactly_one(row)
        for c, var in enumerate(row):
            for s, p in zip(sw, pt):
                if s >= 0:
                    model.add_implication(var, y[key_index[(s, p)]][c])
        x.append(row)
    for members in by_switch.values():
        if len(members) > 1:
            for c in range(colours):
                model.add_at_most_one(y[k][c] for k in members)
    solver = cp_model.CpSolver()
    configure(solver.parameters, time_limit, threads=1)
    status = run_solver(solver, model)
    spent = solver.deterministic_time
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, status == cp_model.INFEASIBLE, spent
    return np.array([next(c for c, v in enumerate(row) if solver.value(v)) for row in x], dtype=np.int64), False, spent


def lmc_for(colours: int) -> int:
    return max(0, int(np.ceil(np.log2(max(colours, 1)))))


@dataclass(eq=False)
class LidPlan:
    """LIDs: terminal t owns [base_t, base_t + 2^lmc), base_t = (t + 1) * 2^lmc (aligned, as
    OpenSM requires); switches follow with one LID each (see switch_base). A real fabric's own LIDs
    instead where they hold the routes (LidPlan.for_network): `terminal_lids` and `switch_lids`."""

    num_terminals: int
    num_switches: int
    lmc: int
    terminal_lids: np.ndarray | None = None  # (num_terminals,) base LIDs: a real fabric's
    switch_lids: np.ndarray | None = None  # (num_switches,)
    note: str = ""  # where the LIDs come from, when a fabric's could not be kept

    def __post_init__(self) -> None:
        if not 0 <= self.lmc <= MAX_LMC:
            raise SynthError(f"the routes need LMC {self.lmc}; OpenSM supports at most {MAX_LMC}")
        if self.max_lid > MAX_UNICAST_LID:
            raise SynthError(f"{self.num_terminals} terminals with LMC {self.lmc} and {self.num_switches} switches need "
                             f"LID {self.max_lid}, above the unicast limit {MAX_UNICAST_LID}")

    @classmethod
    def for_network(cls, network, lmc: int) -> "LidPlan":
        """The fabric's own LIDs (synth.topology.fabric) when it has them all, each terminal's base is
        aligned to 2^lmc and no two blocks overlap: tables for a running fabric keep its addresses.
        Else synth's plan, with a note saying why."""
        if network.node_lids is None:
            return cls(network.num_terminals, network.num_switches, lmc)
        lids = network.node_lids.astype(np.int64)
        n, block = network.num_terminals, 1 << lmc
        terminal, switch = lids[:n], lids[n:]
        reason = ""
        if (lids <= 0).any():
            unassigned = int((lids <= 0).sum())
            which = "no port of the fabric has" if unassigned == len(lids) else f"{unassigned} of {len(lids)} ports have"
            reason = f"{which} a LID yet (lid 0 or none in the fabric file: not assigned by a subnet manager)"
        elif (terminal % block).any():
            reason = f"the fabric's LIDs are not aligned to the {block} LIDs per port these routes need (LMC {lmc})"
        else:
            owned = np.concatenate([(terminal[:, None] + np.arange(block)).ravel(), switch])
            if len(np.unique(owned)) != len(owned):
                reason = f"the fabric's LIDs leave no room for {block} LIDs per port (LMC {lmc})"
            elif owned.max() > MAX_UNICAST_LID:
                reason = f"the fabric's LIDs with LMC {lmc} reach above the unicast limit {MAX_UNICAST_LID}"
        if reason:
            return cls(n, network.num_switches, lmc, note=f"synth's LIDs: {reason}")
        return cls(n, network.num_switches, lmc, terminal, switch, note="the fabric's own LIDs")

    @property
    def block(self) -> int:
        return 1 << self.lmc

    def terminal_base(self, terminal):
        if self.terminal_lids is not None:
            return self.terminal_lids[np.asarray(terminal, dtype=np.int64)]
        return (np.asarray(terminal, dtype=np.int64) + 1) * self.block

    @property
    def switch_base(self) -> int:
        """Switches follow the terminals; one LID is skipped if the highest LID would start a
        block of 64: OpenSM 3.3.23 then leaves that LID out of every switch (measured: the
        1024-leaf Table 3.1 tree, highest LID 0x6c0, read back without it)."""
        first = (self.num_terminals + 1) * self.block
        return first + 1 if (first + self.num_switches - 1) % 64 == 0 else first

    def switch_lid(self, switch_index):
        if self.switch_lids is not None:
            return self.switch_lids[np.asarray(switch_index, dtype=np.int64)]
        return self.switch_base + np.asarray(switch_index, dtype=np.int64)

    @property
    def max_lid(self) -> int:
        if self.terminal_lids is not None:
            return int(max(self.terminal_lids.max(initial=0) + self.block - 1, self.switch_lids.max(initial=0)))
        return int(self.switch_lid(self.num_switches - 1))


@dataclass
class ForwardingTables:
    """out_port[switch index, lid] (NO_PORT where unused), with the LID plan and per-flow DLIDs."""

    network: Network
    lids: LidPlan
    out_port: np.ndarray  # (switches, max_lid + 1) uint8
    dlid: np.ndarray  # (flows,) destination LID each flow of the routes is sent to
    colours_used: int  # the most offsets one destination needed
    colours_bound: int  # lower bound on that number

    def entries(self, switch_index: int) -> tuple[np.ndarray, np.ndarray]:
        """(lids, ports) of one switch's routed LIDs, in LID order."""
        row = self.out_port[switch_index]
        lids = np.flatnonzero(row != NO_PORT)
        return lids, row[lids]


def dmodk_ports(xgft: Xgft, switches: np.ndarray) -> np.ndarray:
    """(len(switches), N) out ports of d-mod-k towards every terminal: down towards d when d is
    below the switch, else up link floor(d / (W_1...W_l)) mod W_{l+1}."""
    d = np.arange(xgft.num_leaves, dtype=np.int64)[None, :]
    layer = np.searchsorted(np.asarray(xgft.node_offset), switches, side="right") - 1
    local = switches - np.asarray(xgft.node_offset)[layer]
    span_w = np.asarray(xgft.wt_span, dtype=np.int64)
    span_m = np.asarray(xgft.mt_span, dtype=np.int64)
    m = np.asarray(xgft.m + (1,), dtype=np.int64)
    w = np.asarray(xgft.w + (1,), dtype=np.int64)
    mt = (local // span_w[layer])[:, None]
    below = (d // span_m[layer][:, None]) == mt
    child_digit = (d // span_m[layer - 1][:, None]) % m[layer - 1][:, None]
    up_link = (d // span_w[layer][:, None]) % w[layer][:, None]
    return np.where(below, child_digit + 1, m[layer - 1][:, None] + 1 + up_link)


def min_hop_ports(network: Network, targets: np.ndarray, chunk: int = 256) -> np.ndarray:
    """(switches, len(targets)) out ports of minimum-hop paths from every switch to every
    target node; among equal next hops the (target mod count)-th by port; 0 at the target."""
    s0, n = network.num_terminals, network.num_nodes
    graph = csr_matrix((np.ones(network.num_channels), (network.channel_src, network.channel_dst)), shape=(n, n))
    order = np.lexsort((network.channel_src_port, network.channel_src))
    ch_src, ch_dst = network.channel_src[order], network.channel_dst[order]
    ch_port = network.channel_src_port[order]
    from_switch = ch_src >= s0
    ch_src, ch_dst, ch_port = ch_src[from_switch], ch_dst[from_switch], ch_port[from_switch]
    starts = np.searchsorted(ch_src, np.arange(s0, n))
    segment = np.diff(np.append(starts, len(ch_src)))  # channels per switch
    ports = np.zeros((n - s0, len(targets)), dtype=np.int64)
    for a in range(0, len(targets), chunk):
        block = targets[a : a + chunk]
        dist = shortest_path(graph.T, unweighted=True, indices=block)  # distance of every node to each target
        candidate = dist[:, ch_dst] == dist[:, ch_src] - 1
        count = np.add.reduceat(candidate, starts, axis=1)  # per switch
        pick = block[:, None] % np.maximum(count, 1)
        cumulative = np.cumsum(candidate, axis=1)
        before = np.concatenate([np.zeros((len(block), 1), dtype=np.int64), cumulative[:, starts[1:] - 1]], axis=1)
        within = cumulative - 1 - np.repeat(before, segment, axis=1)  # rank among the switch's candidates
        chosen = candidate & (within == np.repeat(pick, segment, axis=1))
        flow, channel = np.nonzero(chosen)
        ports[ch_src[channel] - s0, a + flow] = ch_port[channel]
    own = targets >= s0
    ports[targets[own] - s0, np.flatnonzero(own)] = 0
    return ports


def channel_hops(network: Network, paths: Paths | list[list[int]]) -> Hops:
    """route_hops for channel paths (synth-routes/2): the switch each channel leaves and its port,
    exact where parallel links join two switches."""
    channel = _padded(paths)
    tail = np.where(channel >= 0, network.channel_src[np.maximum(channel, 0)], -1)
    at_switch = tail >= network.num_terminals
    return Hops(np.where(at_switch, tail, -1), np.where(at_switch, network.channel_src_port[np.maximum(channel, 0)], -1))


def build_tables(topology, network: Network, dst: np.ndarray, hops: Hops, lmc: int | None = None) -> ForwardingTables:
    """Tables holding every flow's path; `lmc` None picks the smallest that holds them. Entries no
    flow uses follow the family's default router: d-mod-k (XGFT), else minimum-hop paths."""
    offset, bound = colour_flows(dst, hops)
    used = int(offset.max(initial=0)) + 1
    needed = lmc_for(used)
    if lmc is None:
        lmc = needed
    elif lmc < needed:
        raise SynthError(f"LMC {lmc} cannot hold these routes: a destination needs {used} LIDs "
                         f"(LMC {needed}; at least {bound} LIDs by the busiest switch)")
    lids = LidPlan.for_network(network, lmc)
    switches = np.arange(network.num_terminals, network.num_nodes)
    out_port = np.full((len(switches), lids.max_lid + 1), NO_PORT, dtype=np.uint8)
    if topology.default_router == "dmodk":
        terminal_default = dmodk_ports(topology, switches)
    else:
        terminal_default = min_hop_ports(network, np.arange(network.num_terminals))
    for k in range(lids.block):
        out_port[:, lids.terminal_base(np.arange(network.num_terminals)) + k] = terminal_default
    out_port[:, lids.switch_lid(np.arange(len(switches)))] = min_hop_ports(network, switches)
    dlid = lids.terminal_base(dst) + offset
    visited = hops.switch >= 0
    rows = hops.switch[visited] - network.num_terminals
    cols = np.broadcast_to(dlid[:, None], hops.switch.shape)[visited]
    out_port[rows, cols] = hops.port[visited]
    return ForwardingTables(network, lids, out_port, dlid, used, bound)


def walk_nodes(network: Network, out_port: np.ndarray, src: np.ndarray, dlid: np.ndarray, max_hops: int = 64) -> np.ndarray:
    """Follow destination-LID forwarding from every source terminal (through its port 1): a
    (flows, steps) node matrix whose rows end at the first terminal reached, or ARRIVED at the
    switch owning the LID (out port 0), or -1 where an entry is missing or a port has no link;
    a row that never ends is a loop."""
    return _walk(network, out_port, src, dlid, max_hops)[0]


def _walk(network: Network, out_port: np.ndarray, src: np.ndarray, dlid: np.ndarray, max_hops: int = 64):
    """walk_nodes, and the channel of every step ((flows, steps - 1), -1 where the step has none):
    by port, so parallel links between two switches are told apart."""
    ports_per_node = int(max(network.channel_src_port.max(initial=0), 1)) + 1
    link = np.full(network.num_nodes * ports_per_node, -1, dtype=np.int64)
    link[network.channel_src * ports_per_node + network.channel_src_port] = np.arange(network.num_channels)
    src, dlid = np.asarray(src, dtype=np.int64), np.asarray(dlid, dtype=np.int64)
    first = link[src * ports_per_node + 1]
    here = np.where(first >= 0, network.channel_dst[np.maximum(first, 0)], -1)
    trail, crossed = [src, here], [first]
    active = here >= network.num_terminals
    for _ in range(max_hops):
        if not active.any():
            break
        port = np.full(len(src), NO_PORT, dtype=np.int64)
        in_range = active & (dlid < out_port.shape[1])
        port[in_range] = out_port[here[in_range] - network.num_terminals, dlid[in_range]]
        ok = active & (port != NO_PORT) & (port > 0) & (port < ports_per_node)
        channel = np.where(ok, link[np.where(ok, here * ports_per_node + port, 0)], -1)
        nxt = np.where(channel >= 0, network.channel_dst[np.maximum(channel, 0)], -1)
        nxt = np.where(active & (port == 0), ARRIVED, nxt)  # port 0: the switch's own LID
        nxt = np.where(active, nxt, ARRIVED)
        trail.append(nxt)
        crossed.append(np.where(active, channel, -1))
        here = nxt
        active = here >= network.num_terminals
    return np.stack(trail, axis=1), np.stack(crossed, axis=1)


def walk_channel_paths(network: Network, out_port: np.ndarray, src: np.ndarray, dst: np.ndarray,
                       dlid: np.ndarray) -> list[list[int]]:
    """Every flow's walk as channel ids (a synth-routes/2 path: empty for a flow to itself); a
    walk that does not end at its destination terminal ends in -1, so it never matches a path."""
    channels, reached = walk_channels(network, out_port, src, dst, dlid)
    out = []
    for row, ok, s, d in zip(channels.tolist(), reached.tolist(), np.asarray(src).tolist(), np.asarray(dst).tolist()):
        path = [c for c in row if c >= 0]
        out.append(path if ok or s == d else path + [-1])
    return out


def walk_paths(network: Network, out_port: np.ndarray, src: np.ndarray, dlid: np.ndarray, max_hops: int = 64) -> list[list[int]]:
    """walk_nodes as node lists; a broken walk (missing entry, dead port, loop) ends in -1, so a
    broken table never matches a synthesized path."""
    paths = []
    for row in walk_nodes(network, out_port, src, dlid, max_hops).tolist():
        end = next((i for i in range(1, len(row)) if row[i] < network.num_terminals), None)
        if end is None:
            paths.append(row + [-1])  # a loop
        else:
            paths.append(row[:end] if row[end] == ARRIVED else row[: end + 1])
    return paths


def walk_channels(network: Network, out_port: np.ndarray, src: np.ndarray, dst: np.ndarray, dlid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(channels, reached): the channels each flow's walk crosses as a (flows, hops) matrix
    padded with -1 (none for a flow to itself, which never enters the network, and none for a
    walk that fails), and whether the walk ended at its destination terminal `dst`."""
    nodes, crossed = _walk(network, out_port, src, dlid)
    is_terminal = nodes[:, 1:] < network.num_terminals
    end = np.where(is_terminal.any(axis=1), is_terminal.argmax(axis=1) + 1, -1)
    reached = (end > 0) & (nodes[np.arange(len(nodes)), np.maximum(end, 0)] == np.asarray(dst))
    hop = np.arange(crossed.shape[1])[None, :]
    counted = reached & (np.asarray(src) != np.asarray(dst))
    return np.where(counted[:, None] & (hop < end[:, None]), crossed, -1), reached
