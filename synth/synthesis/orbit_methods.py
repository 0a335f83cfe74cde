"""The orbit methods (issue 43 item 1), run for a plan above limits.MAX_SYMMETRIC_RANKS: the
balanced trees of the representatives' blocks (synth.synthesis.orbit_trees) always, the
level-by-level schedule of a maximum-size dragonfly and the digit-by-digit Bruck over the pairs of
one differing digit (an XGFT's; synth.synthesis.orbit_levels) where they apply; each verified on
its orbit. The caller (synth.app.synthesize) prices them per size and keeps the least.

The work is in independent pieces (issue 43 item 4), each a function of the plan alone: the
trees of each half (an allreduce's reduce-scatter and allgather), each other method, and then
each candidate's verification. `orbit_candidates` runs them here one after the other; the caller
may run the same pieces on an executor's workers (`orbit_work`, `orbit_piece`, `orbit_made`,
`check_candidate`) and gets the same schedules: nothing in a piece depends on where it ran."""

from __future__ import annotations

import numpy as np

from synth.collectives.orbit import OrbitSchedule, verify_orbit
from synth.synthesis.orbit_levels import digits_orbit, digits_refusal, levels_orbit, levels_refusal
from synth.synthesis.orbit_trees import orbit_halves, trees_half, trees_orbit, verified

TREES = "trees of the "  # a piece's name: "trees of the allgather", "levels", "digits"
METHODS = {"levels": ("the level-by-level schedule (router, group, global, router, group)", levels_orbit),
           "digits": ("the digit-by-digit Bruck", digits_orbit)}


def orbit_work(plan) -> list[str]:
    """The independent pieces of the plan's orbit synthesis, in the order their results are put
    together: the trees of each half, then every other method that applies."""
    pieces = [TREES + half for half in orbit_halves(plan)]
    if levels_refusal(plan.topology, plan.orbit.bases(np.arange(plan.graph.ranks, dtype=np.int64))) is None:
        pieces.append("levels")
    if digits_refusal(plan) is None:
        pieces.append("digits")
    return pieces


def describe(piece: str) -> str:
    return piece if piece.startswith(TREES) else METHODS[piece][0]


def orbit_piece(plan, piece: str):
    """One piece's result: a half's trees (orbit_trees.trees_half), or a method's orbit schedule and
    its halves, not yet verified."""
    if piece.startswith(TREES):
        return trees_half(plan, piece[len(TREES):])
    return METHODS[piece][1](plan)


def orbit_made(plan, pieces: list[str], results: list) -> list[tuple[OrbitSchedule, list[dict]]]:
    """The candidates, unverified, from the pieces' results in orbit_work's order: the trees first."""
    halves = [r for piece, r in zip(pieces, results) if piece.startswith(TREES)]
    return [trees_orbit(plan, halves)] + [r for piece, r in zip(pieces, results) if not piece.startswith(TREES)]


def check_candidate(made: list[tuple[OrbitSchedule, list[dict]]], topology, k: int):
    """Candidate k's verification on its orbit (synth.collectives.orbit.verify_orbit)."""
    return verify_orbit(made[k][0], topology)


def accept(made: list[tuple[OrbitSchedule, list[dict]]], plan, reports: list, say) -> list:
    """The candidates once their reports (check_candidate's, in order) pass; a failed one is a bug
    of its method, raised, never written."""
    return [(verified(orbit, plan, say, report), parts) for (orbit, parts), report in zip(made, reports)]


def orbit_candidates(plan, say=lambda text: None) -> list[tuple[OrbitSchedule, list[dict]]]:
    """Every orbit method that applies to the plan, (its orbit schedule, its halves), made and
    verified here piece by piece."""
    pieces = orbit_work(plan)
    results = []
    for piece in pieces:
        say(f"{plan.collective}: {describe(piece)}")
        results.append(orbit_piece(plan, piece))
    made = orbit_made(plan, pieces, results)
    return accept(made, plan, [check_candidate(made, plan.topology, k) for k in range(len(made))], say)


__all__ = ["orbit_work", "describe", "orbit_piece", "orbit_made", "check_candidate", "accept", "orbit_candidates"]
