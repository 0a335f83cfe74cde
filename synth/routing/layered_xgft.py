"""The layered router of XGFTs ([Prisacari20] ch.3): per layer an integer program for the up links,
combined by dynamic programming over the WT tree (the machinery: synth.routing.xgft_layers), or its
destination-consistent variant (synth.routing.consistent) with --consistency destination.
"""

from __future__ import annotations

from synth.routing.consistent import ConsistentRouter
from synth.routing.registry import SOLVER_OPTIONS, XGFT, FileSchema, RouterSpec
from synth.routing.xgft_layers import LayeredOptions, PerPhaseRouter, route_phase


def LayeredRouter(options: LayeredOptions) -> PerPhaseRouter:
    return PerPhaseRouter(route_phase, options)


def _build(options):
    o = LayeredOptions.of(options)
    return ConsistentRouter(o) if o.consistency == "destination" else LayeredRouter(o)


def _label(options, seed: int) -> str:
    o = LayeredOptions.of(options)
    limit = f", time limit {o.time_limit:g} s per solve" if o.time_limit else ""
    return (f"layered ({o.construction}, {o.constraints} conditions{', balanced' if o.balance else ''}, "
            f"solver {o.solver}{limit})")


SOLVER_COUNTS = ("subproblems", "split_solved", "direct_solved", "timeouts", "backtracks")
# What a routes file of the XGFT's synthesizers (layered, monolithic) records: LayeredOptions, PhaseReport.
FILE_SCHEMA = FileSchema(
    synthesis=("constraints", "construction", "solver", "consistency", "balance", "time_limit", "threads"),
    synthesis_str=("constraints", "construction", "solver", "consistency"), synthesis_flags=("balance",),
    counts=SOLVER_COUNTS, strings=("proven_by", "whole_run"), required=("relaxed_layers",), lists=("relaxed_layers",))

ROUTER = (
    RouterSpec("layered", XGFT, "synthesized by layers ([Prisacari20] ch.3): per layer an integer program for the "
               "up links, prime-factor splitting, combined by a depth-first search over the WT tree", _build,
               key="layered-xgft", takes=("constraints", "balance", "construction", "consistency") + SOLVER_OPTIONS,
               minimizes_messages=True, synthesis=LayeredOptions.of, label=_label,
               file_schema=FILE_SCHEMA, report_default=True, report={"layered": ("synth layered", "flow"),
                                               "layered-consistent": ("synth layered, dest.-consistent", "destination")}, order=20),
)
