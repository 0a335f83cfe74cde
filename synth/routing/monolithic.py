"""The monolithic baseline: one ILP over the whole network for a phase.

Every message chooses its whole minimal path (one of W_1*...*W_delta, Property 1); every
directed channel bounds the messages whose chosen path uses it by z; z is minimized. This is
the model the per-layer decomposition replaces: it shows what decomposition buys, and on small
instances its proven optimum certifies results where the subtree cut bound is not reached.
"""

from __future__ import annotations

import numpy as np

from synth.core.errors import SynthError
from synth.routing.layered_xgft import FILE_SCHEMA, LayeredOptions, PerPhaseRouter, PhaseReport
from synth.routing.oblivious import dmodk
from synth.routing.registry import SOLVER_OPTIONS, XGFT, RouterSpec
from synth.solve import ProblemBuilder, solve
from synth.solve.problem import OPTIMAL, TIMEOUT
from synth.topology.xgft import Xgft

# (message, path) variables beyond which the model is refused without a time limit (at this
# size a solver may need hours), and refused outright (memory, model building time).
MAX_VARIABLES_UNCAPPED = 20_000
MAX_VARIABLES = 250_000


def path_pairs(xgft: Xgft, src: np.ndarray, dst: np.ndarray, capped_time: bool, what: str = "this phase") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(paths per message, message of every (message, path) pair, path of every pair), refused
    when the model would be too large to solve (see MAX_VARIABLES*)."""
    paths = xgft.path_count(xgft.nca_layer(src, dst))
    total = int(paths.sum())
    if total > MAX_VARIABLES or (total > MAX_VARIABLES_UNCAPPED and not capped_time):
        hint = "" if total > MAX_VARIABLES else " or give --time-limit to run it capped"
        raise SynthError(
            f"the monolithic model of {what} would have {total:,} path variables, too many to solve without "
            f"a cap; use --router layered for networks of this size{hint}"
        )
    item = np.repeat(np.arange(len(src)), paths)
    candidate = np.arange(total) - np.repeat(np.cumsum(paths) - paths, paths)
    return paths, item, candidate


def monolithic_problem(xgft: Xgft, src: np.ndarray, dst: np.ndarray, z_upper: int, capped_time: bool = False):
    paths, item, candidate = path_pairs(xgft, src, dst, capped_time)
    total = len(item)
    up, down = xgft.stage_channels(src[item], dst[item], candidate)
    channel = np.concatenate([up, down]).ravel()
    pair = np.tile(np.arange(total), 2 * xgft.height)
    used = channel >= 0
    channel, pair = channel[used], pair[used]
    order = np.argsort(channel, kind="stable")
    channel, pair = channel[order], pair[order]
    builder = ProblemBuilder(paths)
    starts = np.flatnonzero(np.concatenate([[True], channel[1:] != channel[:-1]])) if len(channel) else np.zeros(0, int)
    for a, b in zip(starts, np.append(starts[1:], len(channel))):
        builder.add(item[pair[a:b]], candidate[pair[a:b]], capped=True)
    return builder.build(z_upper=z_upper)


def route_phase_monolithic(xgft: Xgft, src, dst, options: LayeredOptions) -> tuple[np.ndarray, PhaseReport]:
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    report = PhaseReport(subproblems=1)
    start = dmodk(xgft, src, dst, None, None)  # a feasible routing bounds z from above
    problem = monolithic_problem(xgft, src, dst, z_upper=0, capped_time=options.time_limit is not None)
    problem.z_upper = problem.objective(start)
    result = solve(problem, options.solver, options.time_limit, options.threads, hint=start, glpk_options=options.glpk_options)
    report.solver_seconds = result.seconds
    report.direct_solved = 1
    if not result.solved:
        report.timeouts = int(result.status == TIMEOUT)
        return start, report
    if result.status == OPTIMAL:
        report.proven_by = options.solver
    return result.choice, report


def MonolithicRouter(options: LayeredOptions) -> PerPhaseRouter:
    return PerPhaseRouter(route_phase_monolithic, options)


def _build(options):
    from synth.routing.monolithic_consistent import ConsistentMonolithicRouter

    o = options.layered()
    return ConsistentMonolithicRouter(o) if o.consistency == "destination" else MonolithicRouter(o)


def _label(options, seed: int) -> str:
    limit = f", time limit {options.time_limit:g} s" if options.time_limit else ""
    return f"monolithic (one model per phase, solver {options.solver}{limit})"


ROUTERS = (
    RouterSpec("monolithic", XGFT, "one path-selection model per phase over every minimal path (a certificate on small "
               "instances)", _build, takes=("consistency",) + SOLVER_OPTIONS, minimizes_messages=True,
               synthesis=lambda options: options.layered(), label=_label, file_schema=FILE_SCHEMA, proves=True,
               proof_raises_bound=True,
               report={"monolithic-consistent": ("synth exact, dest.-consistent", "destination")}),
)
