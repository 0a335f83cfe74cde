"""The routers of direct networks (every family but XGFT), each with the path policy it keeps.

`synth check` verifies the policy a file's router declares: `minimal` (every path a shortest
one), `via-one` (two shortest segments joined at one intermediate router: Valiant). Adding a
router is one module and one `register` line here; the CLI's "known: ..." lists come from this
registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from synth.core.registry import Registry
from synth.routing.dor import dor
from synth.routing.minimal import minimal, minimal_random
from synth.routing.ugal import CANDIDATES, ugal
from synth.routing.valiant import valiant, valiant_any

MINIMAL, VIA_ONE, VIA_GROUP = "minimal", "via-one", "via-group"
PATHS = "paths"  # the path-selection synthesizer: its options make it (synth.workflow.router_function)
LAYERED = "layered"  # on dragonflies, synth.routing.layered_dragonfly (on XGFTs synth.routing.layered)


def _paths_with_defaults(topology, src, dst, phase=None, occurrence=None, seed=0):
    """`paths` with its default options (every candidate, CP-SAT): (Paths, {phase: PathsReport})."""
    from synth.routing.path_selection import PathSelectionRouter, PathsOptions  # (loads OR-Tools: on use only)

    return PathSelectionRouter(PathsOptions())(topology, src, dst, phase, occurrence, seed)


def _layered_with_defaults(topology, src, dst, phase=None, occurrence=None, seed=0):
    """`layered` on a dragonfly with its default options (CP-SAT): (Paths, {phase: report})."""
    from synth.routing.layered_dragonfly import DragonflyLayeredOptions, DragonflyLayeredRouter

    return DragonflyLayeredRouter(DragonflyLayeredOptions())(topology, src, dst, phase, occurrence, seed)


@dataclass(frozen=True)
class DirectRouter:
    name: str
    route: Callable  # route(topology, src, dst, phase=, occurrence=, seed=) -> Paths
    policy: str
    description: str
    needs: str | None = None  # "coordinates" (router coordinates) or "groups" (router groups), if any

    def refusal(self, topology) -> str | None:
        """Why this router does not apply to `topology` (one line), or None when it does: `route`
        refuses such a run and `check` a file that claims it."""
        if self.needs == "coordinates" and topology.router_coordinates() is None:
            return f"{self.name} needs a network with router coordinates (torus, hyperx, 2dfc), not {topology.family}"
        if self.needs == "groups" and topology.router_groups() is None:
            return f"{self.name} needs a network with groups (dragonfly), not {topology.family}"
        return None


DIRECT_ROUTERS: Registry[DirectRouter] = Registry("router for direct networks")
for _router in (
    DirectRouter("minimal", minimal, MINIMAL, "a shortest path, the lowest-numbered channel at every router"),
    DirectRouter("minimal-random", minimal_random, MINIMAL, "a shortest path, a seeded choice per pair at every router"),
    DirectRouter("dor", dor, MINIMAL, "dimension order: dimension 0 first, the shorter way in each (torus, HyperX)",
                 needs="coordinates"),
    DirectRouter("valiant", valiant, VIA_ONE, "minimally to a random intermediate group (dragonfly) or router, then "
                 "minimally to the destination (003 ch.5-7)"),
    DirectRouter("valiant-any", valiant_any, VIA_ONE, "as valiant, through any router of the intermediate group "
                 "(003 ch.6, dragonfly)", needs="groups"),
    DirectRouter("ugal", ugal, VIA_ONE, f"per message the minimal path or the cheapest of {CANDIDATES} Valiant "
                 "candidates under the load placed so far (003 ch.7's UGAL-L cost)"),
    DirectRouter(PATHS, _paths_with_defaults, VIA_ONE, "synthesized: per flow one of its candidate paths (--candidates "
                 "minimal|valiant|all) so that the busiest channel carries the fewest messages (an integer program "
                 "per phase; minimal paths only with --candidates minimal)"),
    DirectRouter(LAYERED, _layered_with_defaults, VIA_GROUP, "synthesized by layers (003 ch.3 on ch.4's hierarchy): "
                 "the system layer chooses every message's global links (direct or through one intermediate group), "
                 "the group layer its local hops (the local link or a two-hop detour)", needs="groups"),
):
    DIRECT_ROUTERS.register(_router.name, _router)
