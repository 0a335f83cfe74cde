"""Degraded networks: a direct network with failed links and switches (`--fail`, issue 11).

Spec: `SPEC@fail=ITEM+ITEM+...`, ITEM one of
  A-B            every link between the nodes named A and B (router names as `synth topology`
                 prints them, e.g. g0r1-g2r3; a terminal and its router, t5-g0r2, cuts the terminal off);
  A              the switch named A: every link of it fails, and its terminals are cut off;
  random:K:SEED  K router-to-router links drawn uniformly without replacement, seeded (numpy's
                 default_rng(SEED)), among the links of the intact network.
The items are kept in the canonical spec as given, sorted and without duplicates, so a routes file
names the degraded network it was routed on and `synth check` rebuilds exactly that one.

The degraded Network keeps every node and every port number; the channels of failed links are
removed and the others renumbered in their order (a routes file of the intact network does not
fit a degraded one). Terminals of a failed switch keep their (dead) channels so that terminal t's
channels stay 2t and 2t + 1; they are listed as failed nodes, which no flow reaches and the fabric
file for OpenSM leaves out. Flows between terminals that no longer reach each other (different
connected components, or a cut-off end) are unreachable: workloads drop them
(synth.traffic.patterns.Workload.on_network) and commands report them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from synth.core.errors import SynthError
from synth.core.validate import parse_int, show
from synth.topology.derived import DerivedTopology
from synth.topology.family import Topology

SEPARATOR = "@fail="
_RANDOM = re.compile(r"random:([^:]*):([^:]*)")  # K and SEED checked by parse_int: ASCII digits, in range
MAX_ITEMS = 1 << 16
MAX_RANDOM_LINKS = 999_999_999  # K of random:K:SEED (the network's own links bound it further)


def split_spec(spec: str) -> tuple[str, str | None]:
    """(base spec, failure list or None)."""
    base, sep, items = spec.partition("@")
    if not sep:
        return spec, None
    if not ("@" + items).startswith(SEPARATOR):
        raise SynthError(f"spec {show(spec)}: after '@' expected fail=ITEM+ITEM+... (a link A-B, a switch A, or "
                         f"random:K:SEED)")
    return base, items[len(SEPARATOR) - 1 :]


def with_failures(spec: str, failures: str | None) -> str:
    """The spec of `spec` with `--fail failures` added (items joined to those it has)."""
    if failures is None:
        return spec
    base, existing = split_spec(spec)
    return f"{base}{SEPARATOR}{failures if existing is None else existing + '+' + failures}"


@dataclass(frozen=True, eq=False)
class DegradedTopology(DerivedTopology):
    base: Topology
    items: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.items:
            raise SynthError(f"spec {show(self.spec)}: fail= lists no link or switch")
        if len(self.items) > MAX_ITEMS:
            raise SynthError(f"--fail lists {len(self.items):,} items, more than {MAX_ITEMS:,}")
        self.failed  # resolve every name now: one line per unknown name, before any routing

    @property
    def spec(self) -> str:
        return f"{self.base.spec}{SEPARATOR}{'+'.join(self.items)}"

    def label(self) -> str:
        failed = self.failed
        parts = [f"{len(failed.links)} failed link{'s' * (len(failed.links) != 1)}"]
        if len(failed.switches):
            parts.append(f"{len(failed.switches)} failed switch{'es' * (len(failed.switches) != 1)}")
        return f"{self.base.label()} with {', '.join(parts)}"

    def facts(self) -> list[tuple[str, str]]:
        failed = self.failed
        names = self.base.network().node_names
        shown = ", ".join(f"{names[u]}-{names[v]}" for u, v in failed.links[:8].tolist())
        facts = [(f"{name} (intact network)", value) for name, value in self.base.facts()]
        facts.append(("failed links", f"{len(failed.links)} (a cut-off terminal's link included)" + (f": {shown}" if shown else "")
                      + (", ..." if len(failed.links) > 8 else "")))
        if len(failed.switches):
            facts.append(("failed switches", ", ".join(names[s] for s in failed.switches.tolist())))
        cut = int(failed.down_terminals.sum())
        facts.append(("terminals cut off", str(cut)))
        return facts

    @cached_property
    def failed(self) -> "Failures":
        return resolve_failures(self.base.network(), self.items)

    def build_network(self):
        base = self.base.network()
        keep = ~self.failed.channel_failed
        network = replace(base, spec=self.spec, channel_src=base.channel_src[keep],
                          channel_src_port=base.channel_src_port[keep], channel_dst=base.channel_dst[keep],
                          channel_dst_port=base.channel_dst_port[keep], channel_bandwidth=base.channel_bandwidth[keep],
                          channel_class=base.channel_class[keep], _channel_keys=None, _channel_order=None,
                          failed_nodes=self.failed.failed_nodes if base.failed_nodes is None else
                          np.union1d(base.failed_nodes, self.failed.failed_nodes))
        return network


@dataclass(frozen=True)
class Failures:
    links: np.ndarray  # (k, 2) node pairs (lower id first) of the failed links, sorted
    switches: np.ndarray  # failed switch nodes
    channel_failed: np.ndarray  # (channels of the intact network,) bool
    down_terminals: np.ndarray  # (terminals,) bool: cut off from their router
    failed_nodes: np.ndarray  # node ids the fabric file leaves out: failed switches and cut-off terminals


def resolve_failures(network, items: tuple[str, ...]) -> Failures:
    n = network.num_terminals
    index = {name: i for i, name in enumerate(network.node_names)}
    lo = np.minimum(network.channel_src, network.channel_dst)
    hi = np.maximum(network.channel_src, network.channel_dst)
    link_key = lo * network.num_nodes + hi
    pairs, switches = set(), set()
    router_links = np.unique(link_key[(lo >= n) & (hi >= n)])
    for item in items:
        match = _RANDOM.fullmatch(item)
        if match:
            # ASCII digits only (a regex's \d also matches '٣' and '３'), and a seed numpy and the
            # routes file keep as a 64-bit integer
            count = parse_int(match.group(1), f"--fail {show(item)}: K", 0, MAX_RANDOM_LINKS)
            seed = parse_int(match.group(2), f"--fail {show(item)}: SEED", 0)
            if count > len(router_links):
                raise SynthError(f"--fail {item}: the network has only {len(router_links):,} router-to-router links")
            chosen = np.random.default_rng(seed).choice(router_links, size=count, replace=False)
            pairs.update((int(k) // network.num_nodes, int(k) % network.num_nodes) for k in chosen.tolist())
            continue
        names = item_names(item, index)
        if len(names) > 2 and item in index:  # a switch whose own name holds '-'
            names = [item]
        unknown = [name for name in names if name not in index]
        if len(names) > 2 or not all(names) or unknown:
            what = f"unknown node {show(unknown[0])}" if unknown and all(names) and len(names) <= 2 else "not A-B, A or random:K:SEED"
            u, v = divmod(int(router_links[0]), network.num_nodes) if len(router_links) else (n, n)
            raise SynthError(f"--fail item {show(item)}: {what} (links are named by their nodes as `synth topology "
                             f"--format json` names them, e.g. {network.node_names[u]}-{network.node_names[v]})")
        if len(names) == 1:
            node = index[names[0]]
            if node < n:
                raise SynthError(f"--fail item {show(item)} is a terminal; fail its link instead "
                                 f"({item}-<its router>)")
            switches.add(node)
            continue
        u, v = sorted(index[name] for name in names)
        if not (link_key == u * network.num_nodes + v).any():
            raise SynthError(f"--fail item {show(item)}: no link joins {names[0]} and {names[1]}")
        pairs.add((u, v))
    switch_array = np.array(sorted(switches), dtype=np.int64)
    failed = np.isin(link_key, [u * network.num_nodes + v for u, v in pairs])
    failed |= np.isin(network.channel_src, switch_array) & (network.channel_src >= n) & (network.channel_dst >= n)
    failed |= np.isin(network.channel_dst, switch_array) & (network.channel_src >= n) & (network.channel_dst >= n)
    # terminal links fail with their terminal: named, or its switch failed
    terminal_end = np.where(lo < n, lo, -1)
    down = np.zeros(n, dtype=bool)
    cut = failed & (terminal_end >= 0)
    down[terminal_end[cut]] = True
    on_failed_switch = np.isin(hi, switch_array) & (lo < n)
    down[lo[on_failed_switch]] = True
    failed &= ~((terminal_end >= 0) & down[np.maximum(terminal_end, 0)])  # (dead terminal channels stay: 2t, 2t+1)
    links = np.unique(np.stack([lo[failed], hi[failed]], axis=1), axis=0) if failed.any() \
        else np.zeros((0, 2), dtype=np.int64)
    terminal_links = np.stack([np.flatnonzero(down), network.channel_dst[2 * np.flatnonzero(down)]], axis=1)
    links = np.unique(np.concatenate([links, terminal_links]), axis=0) if len(terminal_links) else links
    return Failures(links, switch_array, failed, down,
                    np.union1d(switch_array, np.flatnonzero(down)).astype(np.int64))


def terminal_components(network) -> np.ndarray:
    """Per terminal a connected-component label over the working channels; a failed node's own
    label is unique (-1 - node), so no flow to or from it is reachable."""
    graph = coo_matrix((np.ones(network.num_channels), (network.channel_src, network.channel_dst)),
                       shape=(network.num_nodes, network.num_nodes))
    _, labels = connected_components(graph, directed=False)
    labels = labels[: network.num_terminals].astype(np.int64)
    failed = network.failed_nodes
    if failed is not None:
        down = failed[failed < network.num_terminals]
        labels[down] = -1 - down
    return labels


def parse_degraded(spec: str, parse) -> Topology:
    base, items = split_spec(spec)
    if items is None:
        return parse(spec)
    topology = parse(base)
    if not topology.degradable:
        raise SynthError("--fail works on direct networks; the xgft routers (d-mod-k, layered, monolithic) rely on "
                         "the intact tree")
    index = {name: i for i, name in enumerate(topology.network().node_names)}
    return DegradedTopology(topology, tuple(sorted({_canonical(item.strip(), index) for item in items.split("+")})))


def item_names(item: str, index: dict[str, int]) -> list[str]:
    """The node names of an item: A, or A and B of A-B. Names may hold '-' themselves (ibnetdiscover's ids
    `S-<guid>`): the item is split at the one '-' that leaves two known names, else at every '-' (which the caller
    then reports)."""
    if item in index:
        return [item]
    splits = [(item[:k], item[k + 1:]) for k, c in enumerate(item) if c == "-"
              and item[:k] in index and item[k + 1:] in index]
    if len(splits) == 1:
        return list(splits[0])
    if len(splits) > 1:
        raise SynthError(f"--fail item {show(item)} names a link in {len(splits)} ways ("
                         f"{', '.join(f'{a} and {b}' for a, b in splits[:3])}): rename the nodes")
    return item.split("-")


def _canonical(item: str, index: dict[str, int]) -> str:
    """A link's item with its lower-numbered node first (g0r1-g0r0 and g0r0-g0r1 are one link)."""
    try:
        names = item_names(item, index) if item in index or "-" in item else [item]
    except SynthError:
        return item  # resolve_failures says why, in the user's own words
    if len(names) == 2 and names[0] in index and names[1] in index and index[names[0]] > index[names[1]]:
        swapped = f"{names[1]}-{names[0]}"
        try:
            if item_names(swapped, index) == [names[1], names[0]]:
                return swapped
        except SynthError:
            pass
        return item  # the swapped form would read another way: kept as given
    return item
