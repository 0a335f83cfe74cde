"""What a network family provides, and the registry of families.

A family is one module under synth/topology/ that registers a `Family`: the syntax of its spec
string, a parser from the text after `NAME:` to a Topology, and a one-line description for help
texts. A Topology knows its canonical spec, builds its Network (synth.topology.network), and says
what else the rest of synth may use: a hierarchy for the hierarchical exchanges (Prisacari20 ch.4; None
where the family has none) and facts for summaries and reports.

What differs between families is a capability of Topology that each family overrides where it
differs (its cut bounds' names, default router and report patterns, worst case, the seeds' closed
forms that hold on it, the form of its routes, ...), never a test of a family's class or name
outside this package: a new family says what it has in its own module.

Spec strings share one grammar: `NAME:A,B,C[:key=value]...`, positional integers first, then
named options (synth.topology.family.parse_spec checks it strictly, one line per error).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, ClassVar, Iterable

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

# The seeds' closed forms a network may satisfy, named by where the seed gives them. A family lists
# those that hold on one of its networks in Topology.closed_forms(); the modules that evaluate them
# (synth.pricing, synth.app.model, the console and the report) ask for them by these names.
FAT_TREE_FORMS = "Prisacari20 ch.2"  # B_min per layer (eq. 2.1), the ideal exchange time (sec. 2.5.1), halving W_H (sec. 2.4.2)
TORUS_ALLREDUCE_FORMS = "DeSensi24 Table 2"  # the allreduces' Lambda, Psi, Xi through eq. 1: a torus of D >= 2 equal sides, P = 1
KAUTZ_FORMS = "Pham26 Table 3.2"  # kautz-c and kautz-m on the Kautz graph K(d,2)
GRID_ALLTOALL_FORMS = "Pham26 (4.5), (4.6)"  # 2dfc all-to-all by DO and MD, and the corrected MULTITREE count (Table 4.2)
DRAGONFLY_STENCIL_FORMS = "Prisacari20 ch.5"  # global-link demand of a stencil's placements, eq. 5.16-5.25
DRAGONFLY_UNIFORM_FORMS = "Prisacari20 ch.6"  # uniform traffic's throughput bound, eq. 6.1-6.8 (maximum size only)


class Topology(ABC):
    """One network of a family, from its parameters. Subclasses are immutable."""

    family: ClassVar[str]
    # The router that schedules, comparisons and reports use unless told otherwise: a fixed, fast
    # routing every command knows (minimal on direct networks; the XGFT family declares d-mod-k).
    # Forwarding-table entries no flow uses follow it too (synth.tables.forwarding).
    default_router: ClassVar[str] = "minimal"
    # Which routers apply (synth.routing.registry matches them by it, and only it): DIRECT or XGFT.
    # Everything else that differs is a capability of its own below, never a test of this kind.
    routing_kind: ClassVar[str] = DIRECT
    # The form of the routes the family's routers give. False: Paths, a channel path per flow.
    # True (XGFT): one integer per flow, the route's choice at its top layer (Prisacari20 Properties 1-3),
    # which hop_matrix(src, dst, routes) expands and loads count unexpanded: a run keeps no paths
    # unless it writes or prices them.
    compact_routes: ClassVar[bool] = False
    # Every route of every router of the family climbs to a nearest common ancestor and comes down
    # (a tree's up*/down* routes): it is minimal, minimal_channels() gives its length, and its
    # channel dependencies are acyclic on one lane (no lanes to count). False where routers may
    # detour (Valiant, UGAL, path selection).
    up_down_routes: ClassVar[bool] = False
    # The cut bounds are one per stage of links (the XGFT's subtree cut, Prisacari20 eq. 3.6-3.12): bound k
    # goes with the channels of stage k + 1, and summaries show them side by side ("per stage").
    # False: bounds per cut (terminal links, group cut) next to maxima per channel class.
    bounds_per_stage: ClassVar[bool] = False
    # A cost report on the family compares the seed's all-to-all exchanges only (Prisacari20 ch.3-4's
    # fat-tree tables: lin, xor, opt, ghe, bgh, by their short names). False: any traffic pattern.
    reports_seed_exchanges: ClassVar[bool] = False
    # The routers of each line of the grid along a dimension are all linked to each other (HyperX,
    # 2dfc): a step can send straight to every router of its row or column. False for rings (torus)
    # and families without dimensions.
    complete_dimensions: ClassVar[bool] = False
    # Failed links and switches (--fail, synth.topology.degraded) leave a network the family's
    # routers still route. False where the routers rely on the intact structure (the XGFT's).
    degradable: ClassVar[bool] = True
    # Automorphisms of every network of the family take any router to any other (with its terminals): recognition
    # (synth.topology.recognize.match.isomorphism) then tries one image for the first router it pins.
    router_transitive: ClassVar[bool] = False
    # The seed gives the family a worst case of minimal routing (worst_case_destinations, the
    # `worst-case` pattern): Slim Fly, MLFM, OFT (Prisacari20 sec. 7.4.2).
    has_worst_case: ClassVar[bool] = False

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

    def to_networkx(self):
        """The network as a networkx MultiDiGraph (networkx imported here only).

        Nodes are the network's node numbers (terminals ``0..N-1`` first, then switches) with a
        ``name``, a ``kind`` (``terminal`` or ``switch``) and a ``level``; every directed channel is an
        edge keyed by its channel id, with ``src_port``, ``dst_port`` and ``bandwidth`` (relative to 1).
        The graph's attributes are ``spec`` and ``family``.

        Examples
        --------
        >>> from synth.topology import parse_topology
        >>> graph = parse_topology("xgft:2:4,4:1,4").to_networkx()
        >>> graph.number_of_nodes(), graph.number_of_edges(), graph.nodes[16]["kind"]
        (24, 64, 'switch')
        """
        import networkx as nx

        network = self.network()
        graph = nx.MultiDiGraph(spec=self.spec, family=self.family)
        n = network.num_terminals
        for node, name in enumerate(network.node_names):
            graph.add_node(node, name=name, kind="terminal" if node < n else "switch",
                           level=int(network.node_level[node]))
        for c, (a, b, pa, pb, w) in enumerate(zip(network.channel_src.tolist(), network.channel_dst.tolist(),
                                                  network.channel_src_port.tolist(), network.channel_dst_port.tolist(),
                                                  network.channel_bandwidth.tolist())):
            graph.add_edge(a, b, key=c, src_port=pa, dst_port=pb, bandwidth=float(w))
        return graph

    @cached_property
    def _network(self):
        return self.build_network()

    def hierarchy(self) -> tuple[int, ...] | None:
        """Subnetwork sizes H_1..H_L for the hierarchical exchanges GHE/BGH (Prisacari20 ch.4), or None."""
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

    def translations(self) -> list[np.ndarray] | None:
        """Node permutations (terminals, then routers, as the Network numbers them) generating a
        group of automorphisms of the network that moves terminals without fixing any (the grid
        families: the unit shift of each dimension), or None where synth knows none. Symmetric
        synthesis (synth.synthesis.symmetry) designs one terminal's schedule and translates it."""
        return None

    def symmetries(self) -> list[np.ndarray]:
        """Commuting node permutations generating the group an orbit schedule moves its
        representatives' blocks by (synth.topology.translations, synth.collectives.orbit): the
        translations, the family's other router symmetries that commute with them
        (`router_symmetries`), and, where every router has several terminals, the rotation of each
        router's terminals; [] where synth knows none that move a router."""
        from synth.topology.translations import terminal_rotation

        moving = (self.translations() or []) + self.router_symmetries()
        if not moving:
            return []
        rotation = terminal_rotation(self.network())
        return moving + ([] if rotation is None else [rotation])

    def one_link_per_group_pair(self) -> bool:
        """Whether the network is a dragonfly whose every two groups share exactly one global link
        (maximum size): the level-by-level allgather (synth.synthesis.orbit_levels) takes it."""
        return False

    def router_symmetries(self) -> list[np.ndarray]:
        """Automorphisms beyond the translations that orbit synthesis uses (node permutations, terminals
        moved with their routers: a router's k-th terminal to its image's k-th): a dragonfly's group
        rotation. The symmetric method does not (it takes `translations` alone)."""
        return []

    def report_patterns(self) -> list[str]:
        """The workloads a report shows unless told (`synth report --patterns all`): the linear
        all-to-all, a random permutation and the family's adversarial pattern: its worst case where
        the seed gives one (worst_case_destinations), else every terminal to its peer on the next
        router (families with a worse one override this; the XGFT: the seed's exchanges)."""
        if self.has_worst_case:
            return ["a2a-lin", "randperm:1", "worst-case"]
        network = self.network()
        per_router = int(np.bincount(network.channel_dst[: 2 * network.num_terminals : 2]).max())
        return ["a2a-lin", "randperm:1", f"shift:{per_router}"]

    @abstractmethod
    def facts(self) -> list[tuple[str, str]]:
        """(name, value) pairs a person wants to know: sizes, degrees, diameter, the seed's formulas."""

    @property
    def ports_per_terminal(self) -> int:
        """Links of one terminal (XGFT: W_1; direct networks: 1). Tables for InfiniBand need 1."""
        return 1

    def bound_names(self) -> tuple[str, ...]:
        """Names of the family's cut bounds, in the order synth.measure.contention_bounds.cut_bounds_batch gives
        them: the terminal links, and the group cut where the family has groups (XGFT: one per stage)."""
        return ("terminal",) + (("group cut",) if self.router_groups() is not None else ())

    def worst_case_destinations(self, num_ranks: int) -> np.ndarray | None:
        """The seed's adversarial permutation under minimal routing (Prisacari20 sec. 7.4.2): the destination
        terminal of each of the first num_ranks terminals; None where the seed gives none."""
        return None

    def closed_forms(self) -> frozenset[str]:
        """The seeds' closed forms that hold on this network (FAT_TREE_FORMS, TORUS_ALLREDUCE_FORMS,
        ... above): what synth prints next to what it measures. Empty by default."""
        return frozenset()

    def torus_ports(self) -> int | None:
        """2D, the ports of a node on a D-dimensional torus whose nodes are their own routers: where
        DeSensi24's deficiency model (eq. 1: Lambda, Psi, Xi over 2D ports) applies; None elsewhere."""
        return None

    def minimal_channels(self, src, dst) -> np.ndarray | None:
        """Channels of a minimal path of every flow where the structure gives them in closed form
        (XGFT: twice the layer of the nearest common ancestor); None where they come from router
        distances (synth.routing.minimal.router_view)."""
        return None

    def all_pairs_minimal_channels(self) -> int | None:
        """minimal_channels summed over every ordered pair of distinct terminals, in closed form;
        None where minimal_channels is None."""
        return None

    def origin_facts(self) -> list[tuple[str, str]]:
        """(name, value) pairs saying where the network came from when it is not built from its spec's parameters
        (a file recognized as a family: which family, what is missing); shown even where a family's own summary
        replaces the facts (the fat trees' layer table)."""
        return []

    def source_digest(self) -> str | None:
        """The SHA-256 of the file the network was read from (`fabric:`, `graph:`), which routes files record so
        that a file changed since routing is noticed; None for networks built from their parameters."""
        return None

    def torus_sizes(self) -> tuple[int, ...] | None:
        """(D_0, D_1, ...) when the routers form a torus, each linked to its +1 and -1 neighbour in every dimension
        (what OpenSM's torus-2QoS routes, seeded by router_coordinates()); None for the others."""
        return None

    def kautz_degree(self) -> int | None:
        """d when the routers form the Kautz graph K(d,2) (Pham26 ch.3: diameter two, one terminal per
        router), what the Kautz collectives need; None for other networks."""
        return None

    def check_size(self, nodes: int, channels: int, terminals: str = "terminals") -> None:
        """Refuse a network that would not fit, from its counts, before building it."""
        check_counts(self.spec, self.num_terminals, nodes, channels, terminals)


def check_counts(spec: str, terminals: int, nodes: int, channels: int, what_terminals: str = "terminals") -> None:
    """Refuse a network of these counts that would not fit (SynthError), before building it."""
    for what, size, limit in ((what_terminals, terminals, MAX_TERMINALS), ("nodes", nodes, MAX_NODES),
                              ("channels", channels, MAX_CHANNELS)):
        if size > limit:
            raise SynthError(f"{spec} has {size:,} {what}, more than the {limit:,} synth builds on one machine "
                             f"(its arrays would not fit in memory next to the per-flow work)")


@dataclass(frozen=True)
class Family:
    name: str
    syntax: str  # e.g. "dragonfly:P,A,H[:groups=G][:arrangement=absolute|relative|circulant]"
    description: str
    parse: Callable[[str], Topology]  # the text after "NAME:"
    # The specs of the family's networks an imported network could be, from its shape (synth.topology.recognize):
    # as many as its counts and degrees allow, intact or with a few parts missing. None: never recognized.
    candidates: Callable[[object], Iterable[str]] | None = None  # of a synth.topology.recognize.shape.Shape
    # Families are tried in this order, then by name; a network two families build is named by the first.
    recognition_order: int = 0


# Each family is one module of synth.topology that declares `FAMILY = Family(...)` (or a tuple of them).
FAMILIES: Registry[Family] = Registry("network family", "synth.topology", "FAMILY")


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


def file_digest(path: str) -> str:
    """SHA-256 of a file's bytes, hex (a user error when it cannot be read)."""
    import hashlib
    try:
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError as exc:
        raise SynthError(f"cannot read {path}: {exc.strerror or exc}") from None


def file_spec_options(text: str, keys: tuple[str, ...]) -> tuple[str, dict[str, str]]:
    """(FILE, options) of the text after `fabric:` or `graph:`: FILE[:key=value]..., the options at the end (a
    file's path may hold ':'), each key of `keys` at most once."""
    options: dict[str, str] = {}
    while True:
        head, colon, last = text.rpartition(":")
        key, equals, value = last.partition("=")
        if not colon or not equals or key not in keys or key in options:
            return text, options
        options[key] = value
        text = head


def recognize_option(options: dict[str, str], spec: str) -> bool:
    """`recognize=yes|no` (default yes): whether an imported network is matched against the families."""
    value = options.get("recognize", "yes")
    if value not in ("yes", "no"):
        raise SynthError(f"option recognize of {show(spec)} must be yes or no, got {show(value)}")
    return value == "yes"


def option_int(parts: SpecParts, key: str, spec: str, default: int, minimum: int = 1, maximum: int = 1 << 20) -> int:
    if key not in parts.options:
        return default
    return parse_int(parts.options[key], f"option {key} of {show(spec)}", minimum, maximum)


def option_choice(parts: SpecParts, key: str, spec: str, choices: tuple[str, ...]) -> str:
    value = parts.options.get(key, choices[0])
    if value not in choices:
        raise SynthError(f"option {key} of {show(spec)} must be one of {', '.join(choices)}, got {show(value)}")
    return value
