"""The orbit methods (issue 43 item 1), run for a plan above limits.MAX_SYMMETRIC_RANKS: the
balanced trees of the representatives' blocks (synth.synthesis.orbit_trees) always, the
level-by-level schedule of a maximum-size dragonfly and the digit-by-digit Bruck over the pairs of
one differing digit (an XGFT's; synth.synthesis.orbit_levels) where they apply; each verified on
its orbit. The caller (synth.app.synthesize) prices them per size
and keeps the least."""

from __future__ import annotations

import numpy as np

from synth.collectives.orbit import OrbitSchedule
from synth.synthesis.orbit_levels import digits_orbit, digits_refusal, levels_orbit, levels_refusal
from synth.synthesis.orbit_trees import synthesize_orbit, verified


def orbit_candidates(plan, say=lambda text: None) -> list[tuple[OrbitSchedule, list[dict]]]:
    """Every orbit method that applies to the plan: (its orbit schedule, its halves)."""
    made = [synthesize_orbit(plan, say)]
    if levels_refusal(plan.topology, plan.orbit.bases(np.arange(plan.graph.ranks, dtype=np.int64))) is None:
        say(f"{plan.collective}: the level-by-level schedule (router, group, global, router, group)")
        orbit, parts = levels_orbit(plan)
        made.append((verified(orbit, plan, say), parts))
    if digits_refusal(plan) is None:
        say(f"{plan.collective}: the digit-by-digit Bruck")
        orbit, parts = digits_orbit(plan)
        made.append((verified(orbit, plan, say), parts))
    return made


__all__ = ["orbit_candidates"]
