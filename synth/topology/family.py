"""What a network family provides, and the registry of families.

A family is one module under synth/topology/ that registers a `Family`: the syntax of its spec
string, a parser from the text after `NAME:` to a Topology, and a one-line description for help
texts. A Topology knows its canonical spec, builds its Network (synth.topology.network), and says
what else the rest of synth may use: a hierarchy for the hierarchical exchanges (003 ch.4; None
where the family has none) and facts for summaries and reports.

Spec strings share one grammar: `NAME:A,B,C[:key=value]...`, positional integers first, then
named options (synth.topology.family.parse_spec checks it strictly, one line per error).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, ClassVar

import numpy as np

from synth.core.errors import SynthError
from synth.core.registry import Registry
from synth.core.validate import parse_int, show

XGFT, DIRECT = "xgft", "direct"  # Topology.routing_kind

# Size guards, checked from a family's parameters before anything is allocated. The network's
# arrays take about 100 bytes per channel and node names are made per node: 2^22 nodes and 2^25
# channels (3.4 GB of arrays) are what a 24 GiB machine routes with room for the per-flow work.
MAX_TERMINALS = 1 << 20
MAX_NODES = 1 << 22
MAX_CHANNELS = 1 << 25


class Topology(ABC):
    """One network of a family, from its parameters. Subclasses are immutable."""

    family: ClassVar[str]
    # The router that schedules, comparisons and reports use unless told otherwise: a fixed, fast
    # routing every command knows (minimal on direct networks; the XGFT family declares d-mod-k).
    default_router: ClassVar[str] = "minimal"
    # which routers apply (synth.routing.registry) and how routes are held: DIRECT (channel paths
    # between routers), or XGFT (minimal up*/down* paths, one integer per flow: synth.topology.paths.as_paths)
    routing_kind: ClassVar[str] = DIRECT

    @property
    @abstractmethod
    def spec(self) -> str:
        """The canonical spec string: parsing it gives this topology again."""

    @abstractmethod
    def label(self) -> str:
        """The seed's name for it, e.g. XGFT(3; 8,4,2; 1,8,2) or dragonfly(4,8,4)."""

    @property
    @abstractmethod
    def num_terminals(self) -> int: ...

    @abstractmethod
    def build_network(self):
        """The Network (called once; use `network()`)."""

    def network(self):
        return self._network

    @cached_property
    def _network(self):
        return self.build_network()

    def hierarchy(self) -> tuple[int, ...] | None:
        """Subnetwork sizes H_1..H_L for the hierarchical exchanges GHE/BGH (003 ch.4), or None."""
        return None

    def router_groups(self):
        """The group of every router (0..groups-1, routers numbered as in the Network after the
        terminals) for families built of groups (dragonfly): Valiant's intermediate group. None
        for the others."""
        return None

    def router_coordinates(self):
        """(routers, dimensions) coordinates for families with dimensions (torus, HyperX, 2dfc),
        dimension 0 first, whose links of dimension k have the channel class "dim k": what
        dimension-order routing needs. None for the others."""
        return None

    def report_patterns(self) -> list[str]:
        """The workloads a report shows unless told (`synth report --patterns all` on a direct network):
        the linear all-to-all, a random permutation and the family's adversarial pattern; here every
        terminal to its peer on the next router (families with a worse one override this)."""
        network = self.network()
        per_router = int(np.bincount(network.channel_dst[: 2 * network.num_terminals : 2]).max())
        return ["a2a-lin", "randperm:1", f"shift:{per_router}"]

    @abstractmethod
    def facts(self) -> list[tuple[str, str]]:
        """(name, value) pairs a person wants to know: sizes, degrees, diameter, the seed's formulas."""

    def check_size(self, nodes: int, channels: int, terminals: str = "terminals") -> None:
        """Refuse a network that would not fit, from its counts, before building it."""
        for what, size, limit in ((terminals, self.num_terminals, MAX_TERMINALS), ("nodes", nodes, MAX_NODES),
                                  ("channels", channels, MAX_CHANNELS)):
            if size > limit:
                raise SynthError(f"{self.spec} has {size:,} {what}, more than the {limit:,} synth builds on one machine "
                                 f"(its arrays would not fit in memory next to the per-flow work)")


@dataclass(frozen=True)
class Family:
    name: str
    syntax: str  # e.g. "dragonfly:P,A,H[:groups=G][:arrangement=absolute|relative|circulant]"
    description: str
    parse: Callable[[str], Topology]  # the text after "NAME:"


FAMILIES: Registry[Family] = Registry("network family")


def register_family(family: Family) -> Family:
    return FAMILIES.register(family.name, family)


@dataclass(frozen=True)
class SpecParts:
    numbers: tuple[int, ...]
    options: dict[str, str]


def parse_spec(family: str, text: str, syntax: str, counts: tuple[int, int], options: tuple[str, ...] = (),
               maximum: int = 1 << 20) -> SpecParts:
    """`A,B,C[:key=value]...` (the text after `family:`): between counts[0] and counts[1] positive
    integers, then named options from `options`, each at most once. Values stay text for the
    family to check; positional integers are checked here (ASCII, 1..maximum)."""
    spec = f"{family}:{text}"
    head, *rest = text.split(":")
    values = head.split(",") if head.strip() else []
    if not counts[0] <= len(values) <= counts[1]:
        wanted = str(counts[0]) if counts[0] == counts[1] else f"{counts[0]} to {counts[1]}"
        raise SynthError(f"{show(spec)}: expected {wanted} comma-separated integers ({syntax}), got {len(values)}")
    numbers = tuple(parse_int(v, f"parameter {i} of {show(spec)}", 1, maximum) for i, v in enumerate(values, 1))
    named: dict[str, str] = {}
    for part in rest:
        key, equals, value = part.partition("=")
        if not equals or not key or not value:
            raise SynthError(f"{show(spec)}: expected key=value after ':', got {show(part)} ({syntax})")
        if key not in options:
            known = ", ".join(options) if options else "none"
            raise SynthError(f"{show(spec)}: unknown option {show(key)} (options of {family}: {known})")
        if key in named:
            raise SynthError(f"{show(spec)}: option {show(key)} given twice")
        named[key] = value
    return SpecParts(numbers, named)


def option_int(parts: SpecParts, key: str, spec: str, default: int, minimum: int = 1, maximum: int = 1 << 20) -> int:
    if key not in parts.options:
        return default
    return parse_int(parts.options[key], f"option {key} of {show(spec)}", minimum, maximum)


def option_choice(parts: SpecParts, key: str, spec: str, choices: tuple[str, ...]) -> str:
    value = parts.options.get(key, choices[0])
    if value not in choices:
        raise SynthError(f"option {key} of {show(spec)} must be one of {', '.join(choices)}, got {show(value)}")
    return value
