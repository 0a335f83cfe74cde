"""A network derived from a family network, whose capabilities are that family's: degraded networks
(synth.topology.degraded: failed links and switches) and recognized ones (synth.topology.recognize: an imported
fabric that is a family network). The derived network keeps the family's node numbering, so the family's
groups, coordinates, hierarchy and routers apply to it. The closed-form minimal path lengths and the
translations hold where it lacks nothing of the family network (`complete`); the seeds' closed forms where it
also has the family's bandwidths (`intact`).
"""

from __future__ import annotations

from synth.topology.family import Topology


class DerivedTopology(Topology):
    base: Topology  # the family network (a dataclass field of the subclass)

    @property
    def complete(self) -> bool:
        """The network has every node and channel of the family network, numbered as the family numbers them."""
        return False

    @property
    def intact(self) -> bool:
        """Complete, and every channel at the family's bandwidth: the family network but for names and ports."""
        return False

    @property
    def family(self) -> str:  # type: ignore[override]
        return self.base.family

    @property
    def default_router(self) -> str:  # type: ignore[override]
        return self.base.default_router

    @property
    def routing_kind(self) -> str:  # type: ignore[override]
        return self.base.routing_kind

    @property
    def compact_routes(self) -> bool:  # type: ignore[override]
        return self.base.compact_routes

    @property
    def up_down_routes(self) -> bool:  # type: ignore[override]
        return self.base.up_down_routes

    @property
    def bounds_per_stage(self) -> bool:  # type: ignore[override]
        return self.base.bounds_per_stage

    @property
    def reports_seed_exchanges(self) -> bool:  # type: ignore[override]
        return self.base.reports_seed_exchanges

    @property
    def complete_dimensions(self) -> bool:  # type: ignore[override]
        return self.base.complete_dimensions

    @property
    def degradable(self) -> bool:  # type: ignore[override]
        return self.base.degradable

    @property
    def has_worst_case(self) -> bool:  # type: ignore[override]
        return self.base.has_worst_case

    @property
    def ports_per_terminal(self) -> int:
        return self.base.ports_per_terminal

    @property
    def num_terminals(self) -> int:
        return self.base.num_terminals

    def bound_names(self) -> tuple[str, ...]:
        return self.base.bound_names()

    def worst_case_destinations(self, num_ranks: int):
        return self.base.worst_case_destinations(num_ranks)

    def kautz_degree(self) -> int | None:
        return self.base.kautz_degree()

    def source_digest(self):
        return self.base.source_digest()

    def torus_sizes(self):
        return self.base.torus_sizes()  # (failed parts: torus-2QoS routes around them, seeded where none is)

    def hierarchy(self):
        return self.base.hierarchy()

    def router_groups(self):
        return self.base.router_groups()

    def router_coordinates(self):
        return self.base.router_coordinates()

    def report_patterns(self) -> list[str]:
        family = self.base
        while isinstance(family, DerivedTopology):  # a degraded recognized network: the family's own patterns
            family = family.base
        return type(family).report_patterns(self)  # the family's patterns, on this network

    def closed_forms(self) -> frozenset[str]:
        return self.base.closed_forms() if self.intact else frozenset()

    def minimal_channels(self, src, dst):
        return self.base.minimal_channels(src, dst) if self.complete else None

    def all_pairs_minimal_channels(self):
        return self.base.all_pairs_minimal_channels() if self.complete else None

    def translations(self):
        return self.base.translations() if self.complete else None
