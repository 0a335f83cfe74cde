"""An imported network recognized as a family network: the family's network, numbered as the family numbers
it, with the imported network's own names, ports, bandwidths, GUIDs and LIDs (issue 26).

Terminal t is the family's terminal t, so every pattern, router, bound and hierarchy of the family applies as
written; the imported network's terminals on a router take that router's family terminals in their own order.
What the fabric lacks of the family network is what a degraded network lacks (synth.topology.degraded): its
missing switches and terminals are failed nodes (named `missing:<the family's name>`), kept so that the
numbering stays the family's, and its missing links' channels are left out. Such a network keeps the family's
routers where the family's routers route degraded networks; where they need the intact network (the XGFT's),
the fabric stays a generic network and its facts say which family it resembles.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from synth.topology.derived import DerivedTopology
from synth.topology.family import Topology
from synth.topology.network import Network
from synth.topology.recognize.match import Routers
from synth.topology.recognize.recognition import Match, recognize

MISSING_PREFIX = "missing:"


@dataclass(frozen=True)
class Mapped:
    network: Network
    missing_switches: int
    missing_terminals: int
    missing_links: int  # router-to-router links (a two-way link counted once)
    same_bandwidths: bool  # every channel at the family's bandwidth


def map_onto(source: Network, family: Network, routers: np.ndarray) -> Mapped:
    """The family network carrying the source network's names, ports, bandwidths and identifiers; `routers` gives
    the family node of every source router in Routers.of(source) order."""
    nf = family.num_terminals
    family_of = np.full(source.num_nodes, -1, dtype=np.int64)  # source node -> family node
    family_of[Routers.of(source).nodes] = routers
    # terminals: a router's source terminals, in their order, take its family terminals in theirs
    slots: dict[int, list[int]] = {}
    for t, r in enumerate(_terminal_routers(family).tolist()):
        slots.setdefault(r, []).append(t)
    for t, r in enumerate(family_of[_terminal_routers(source)].tolist()):
        family_of[t] = slots[r].pop(0)
    source_of = np.full(family.num_nodes, -1, dtype=np.int64)
    source_of[family_of] = np.arange(source.num_nodes)

    # channels: the k-th family channel from a to b is the source's k-th (in port order) between their images
    def ranked(keys: np.ndarray, order_by: np.ndarray) -> np.ndarray:
        order = np.lexsort((order_by, keys))
        rank = np.empty(len(keys), dtype=np.int64)
        sorted_keys = keys[order]
        first = np.searchsorted(sorted_keys, sorted_keys, side="left")
        rank[order] = np.arange(len(keys)) - first
        return rank

    width = family.num_nodes
    f_keys = family.channel_src * width + family.channel_dst
    f_rank = ranked(f_keys, np.arange(family.num_channels))
    s_keys = family_of[source.channel_src] * width + family_of[source.channel_dst]
    # (ranked by the port at the end the family numbers lower: both directions of a cable get the same rank, as
    # both channels of a family link do)
    lower_end_port = np.where(family_of[source.channel_src] < family_of[source.channel_dst], source.channel_src_port,
                              source.channel_dst_port)
    s_rank = ranked(s_keys, lower_end_port)
    big = max(int(f_rank.max(initial=0)), int(s_rank.max(initial=0))) + 1
    s_joint = s_keys * big + s_rank
    order = np.argsort(s_joint)
    position = np.searchsorted(s_joint[order], f_keys * big + f_rank)
    position = np.minimum(position, len(order) - 1)
    found = s_joint[order][position] == f_keys * big + f_rank
    channel_of = np.where(found, order[position], -1)  # family channel -> source channel
    assert (np.bincount(channel_of[found], minlength=source.num_channels) == 1).all(), "an unmapped source channel"

    failed = np.flatnonzero(source_of < 0)
    terminal_end = np.where(family.channel_src < nf, family.channel_src, family.channel_dst)
    # a missing terminal's channels: kept, as degraded.py keeps them
    dead = (terminal_end < nf) & (source_of[np.minimum(terminal_end, family.num_nodes - 1)] < 0)
    keep = found | dead
    src_port = np.where(found, source.channel_src_port[channel_of], family.channel_src_port)
    dst_port = np.where(found, source.channel_dst_port[channel_of], family.channel_dst_port)
    # a dead terminal channel's router end takes the lowest port no cable of the source router uses (where the
    # missing CA's cable was, as a rule: within the switch's ports, which its tables may name)
    taken: dict[int, set[int]] = {}
    for node, port in zip(np.concatenate([family.channel_src[found], family.channel_dst[found]]).tolist(),
                          np.concatenate([src_port[found], dst_port[found]]).tolist()):
        taken.setdefault(node, set()).add(port)
    given: dict[tuple[int, int], int] = {}  # (missing terminal, its router) -> the port
    for c in np.flatnonzero(dead).tolist():
        terminal, router = int(terminal_end[c]), int(family.channel_src[c] + family.channel_dst[c] - terminal_end[c])
        if source_of[router] < 0:
            continue  # both ends missing: the family's own ports
        if (terminal, router) not in given:
            used = taken.setdefault(router, set())
            given[terminal, router] = next(port for port in range(1, len(used) + 2) if port not in used)
            used.add(given[terminal, router])
        if family.channel_src[c] == router:
            src_port[c] = given[terminal, router]
        else:
            dst_port[c] = given[terminal, router]
    bandwidth = np.where(found, source.channel_bandwidth[channel_of], family.channel_bandwidth)
    names = [source.node_names[s] if s >= 0 else MISSING_PREFIX + family.node_names[f]
             for f, s in enumerate(source_of.tolist())]

    def carried(values: np.ndarray | None, count: int) -> np.ndarray | None:
        if values is None:
            return None
        out = np.zeros(count, dtype=values.dtype)
        have = source_of[:count] >= 0
        out[have] = values[source_of[:count][have]]
        return out

    same = bool(np.array_equal(bandwidth, family.channel_bandwidth))
    network = replace(
        family, spec=source.spec, node_names=names,
        channel_src=family.channel_src[keep], channel_dst=family.channel_dst[keep],
        channel_src_port=src_port[keep], channel_dst_port=dst_port[keep],
        channel_bandwidth=bandwidth[keep], channel_class=family.channel_class[keep],
        failed_nodes=failed if len(failed) else None,
        nodes_are_routers=family.nodes_are_routers and same,
        node_guids=carried(source.node_guids, family.num_nodes),
        port_guids=None if source.port_guids is None else carried(source.port_guids, nf),
        node_lids=carried(source.node_lids, family.num_nodes), lmc=source.lmc,
        _channel_keys=None, _channel_order=None)
    router_channel = (family.channel_src >= nf) & (family.channel_dst >= nf)
    lost = router_channel & ~found & (source_of[family.channel_src] >= 0) & (source_of[family.channel_dst] >= 0)
    keys = family.channel_src[router_channel] * width + family.channel_dst[router_channel]
    two_way = bool(np.isin(family.channel_dst[router_channel] * width + family.channel_src[router_channel], keys).all())
    return Mapped(network, int((source_of[nf:] < 0).sum()), int((source_of[:nf] < 0).sum()),
                  int(lost.sum()) // (2 if two_way else 1), same)


def _terminal_routers(network: Network) -> np.ndarray:
    """(terminals,) the router each terminal is cabled to (one link per terminal where recognized)."""
    router = np.zeros(network.num_terminals, dtype=np.int64)
    up = (network.channel_src < network.num_terminals) & (network.channel_dst >= network.num_terminals)
    router[network.channel_src[up]] = network.channel_dst[up]
    return router


@dataclass(frozen=True, eq=False)
class Recognized(DerivedTopology):
    source: Topology  # the imported network (fabric:FILE, graph:FILE)
    base: Topology  # the family network it is
    match: Match

    @cached_property
    def mapped(self) -> Mapped:
        return map_onto(self.source.network(), self.base.network(), self.match.routers)

    @property
    def complete(self) -> bool:
        mapped = self.mapped
        return not (mapped.missing_switches or mapped.missing_terminals or mapped.missing_links)

    @property
    def intact(self) -> bool:
        return self.complete and self.mapped.same_bandwidths

    def __getattr__(self, name: str):
        """The family network's own methods (an XGFT's addressing, a dragonfly's wiring) hold on a complete copy."""
        if name.startswith("_") or name in ("source", "base", "match", "mapped"):
            raise AttributeError(name)
        if not self.complete:
            raise AttributeError(f"{name}: not on a recognized network with missing parts")
        return getattr(self.base, name)

    @property
    def spec(self) -> str:
        return self.source.spec

    def source_digest(self) -> str | None:
        return self.source.source_digest()

    def label(self) -> str:
        return f"{self.base.label()} in {self.source.label()}" + (f" ({self.missing()})" if self.missing() else "")

    def missing(self) -> str:
        """What the fabric lacks of the family network, in words ('' if nothing)."""
        mapped = self.mapped
        parts = [f"{count} missing {what}{'s' * (count != 1) if what != 'switch' else 'es' * (count != 1)}"
                 for count, what in ((mapped.missing_switches, "switch"), (mapped.missing_links, "link"),
                                     (mapped.missing_terminals, "terminal")) if count]
        return ", ".join(parts)

    def build_network(self):
        return self.mapped.network

    def origin_facts(self) -> list[tuple[str, str]]:
        return self.facts()[:2]

    def facts(self) -> list[tuple[str, str]]:
        mapped = self.mapped
        how = {"isomorphic": "an isomorphic copy", "embedded": "the family network less the parts missing",
               "completed": "the family network less the links missing"}[self.match.how]
        if self.match.how == "isomorphic" and not self.complete:
            how = "the family's routers and links, less the terminals missing"
        facts = [("recognized as", f"{self.base.spec}: {self.base.label()}, {how}"),
                 ("missing", self.missing() or "nothing")]
        if not mapped.same_bandwidths:
            facts.append(("link bandwidths", "the file's, which differ from the family's: the seeds' closed forms "
                                             "are not applied"))
        facts += [(f"{name} (of {self.source.label()})", value) for name, value in self.source.facts()
                  if name not in ("terminals", "switches", "routers")]
        return facts + [(f"{name} (family network)", value) for name, value in self.base.facts()]


def recognized(source: Topology) -> Topology:
    """The family network an imported one is, mapped (Recognized), or the imported network itself, with a note
    in its facts saying what was found."""
    match = recognize(source.network())
    if match is None:
        return replace(source, note="none: no family network matches (a generic network, for the generic routers)")
    found = Recognized(source, match.topology, match)
    if found.complete or match.topology.degradable:
        return found
    return replace(source, note=f"close to {match.topology.spec} ({match.topology.label()}) with {found.missing()}; "
                                f"its routers need the intact network, so it is routed as a generic network")
