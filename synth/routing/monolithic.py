"""The monolithic baseline: one ILP over the whole network for a phase.

Every message chooses its whole minimal path (one of W_1*...*W_delta, Property 1); every
directed channel bounds the messages whose chosen path uses it by z; z is minimized. This is
the model the per-layer decomposition replaces: it shows what decomposition buys, and on small
instances its proven optimum certifies results where the subtree cut bound is not reached.

With destination consistency (`--consistency destination`): one CP-SAT model for all selected
phases. The model above (every message picks one of its minimal
paths, every (phase, directed channel) carries at most z of them, z minimized), with the phases
sharing one routing that a switch can hold in a table indexed by destination only (LMC 0):
a boolean y[d, c] per destination d and up channel c leaving a switch says "flows to d leave
that switch by c"; a chosen path implies the y of each up channel it takes at a switch, and
each switch has at most one y per destination. Down paths need no variables: below the nearest
common ancestor the path to d is unique, and no switch is passed both upwards and downwards by
flows to the same destination (minimal up*/down* paths).

Only CP-SAT takes this model (the implications are not of synth's shared problem form). It is
the exact baseline for small networks; `--router layered --consistency destination` scales.
"""

from __future__ import annotations

import time

import numpy as np

from synth.core.errors import SynthError
from synth.routing.layered_xgft import FILE_SCHEMA
from synth.routing.oblivious import dmodk
from synth.routing.registry import SOLVER_OPTIONS, XGFT, RouterSpec
from synth.solve import ProblemBuilder, solve
from synth.routing.xgft_layers import LayeredOptions, PerPhaseRouter, PhaseReport, WholeWorkloadRouter
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


def route_consistent_monolithic(xgft: Xgft, src, dst, phase, options: LayeredOptions) -> tuple[np.ndarray, PhaseReport]:
    """Path choices for all flows, consistent per destination at every switch, minimizing the
    maximum contention over all phases. The proof, when there is one, is about that maximum
    (no destination-consistent routing has a lower one), not about any single phase, so each
    report carries it as `whole_run` and each phase's status stays "at the bound or feasible"."""
    from ortools.sat.python import cp_model

    from synth.solve.cpsat import configure, run_solver

    if options.solver != "cpsat":
        raise SynthError(f"the destination-consistent monolithic model is solved by cpsat only, not '{options.solver}'")
    src, dst, phase = (np.asarray(a, dtype=np.int64) for a in (src, dst, phase))
    _, phase_index = np.unique(phase, return_inverse=True)
    paths, item, candidate = path_pairs(xgft, src, dst, options.time_limit is not None, "the selected phases")
    up, down = xgft.stage_channels(src[item], dst[item], candidate)
    start = dmodk(xgft, src, dst, phase, None)
    chosen_in_start = candidate == start[item]

    model = cp_model.CpModel()
    x = [model.new_bool_var("") for _ in range(len(item))]
    bounds = np.cumsum(paths)
    for a, b in zip((bounds - paths).tolist(), bounds.tolist()):
        model.add_exactly_one(x[a:b])

    # Channel loads per phase.
    channels = np.concatenate([up, down])  # (2H, pairs)
    pair = np.broadcast_to(np.arange(len(item)), channels.shape)[channels >= 0]
    key = phase_index[item[pair]] * xgft.num_channels + channels[channels >= 0]
    order = np.argsort(key, kind="stable")
    key, pair = key[order], pair[order]
    starts = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))
    start_loads = np.bincount(key[chosen_in_start[pair]], minlength=int(key.max(initial=0)) + 1)
    z = model.new_int_var(0, int(start_loads.max(initial=0)), "z")
    for a, b in zip(starts.tolist(), np.append(starts[1:], len(key)).tolist()):
        if b - a > 1:
            model.add(sum(x[j] for j in pair[a:b].tolist()) <= z)
        else:
            model.add(x[int(pair[a])] <= z)

    # Destination consistency at every switch with a choice of up links.
    network = xgft.network()
    for row in range(1, xgft.height):
        if xgft.w[row] == 1:
            continue
        used = np.flatnonzero(up[row] >= 0)
        keys = dst[item[used]] * xgft.num_channels + up[row][used]
        unique, inverse = np.unique(keys, return_inverse=True)
        y = [model.new_bool_var("") for _ in range(len(unique))]
        for j, k in zip(used.tolist(), inverse.tolist()):
            model.add_implication(x[j], y[k])
        # At most one up link per (destination, switch the channel leaves).
        owner = (unique // xgft.num_channels) * network.num_nodes + network.channel_src[unique % xgft.num_channels]
        order = np.argsort(owner, kind="stable")
        cuts = np.flatnonzero(np.diff(owner[order])) + 1
        for members in np.split(order, cuts):
            if len(members) > 1:
                model.add_at_most_one([y[m] for m in members.tolist()])
        hinted = set(inverse[chosen_in_start[used]].tolist())
        for k, v in enumerate(y):
            model.add_hint(v, k in hinted)
    for var, hinted in zip(x, chosen_in_start.tolist()):
        model.add_hint(var, hinted)
    model.add_hint(z, int(start_loads.max(initial=0)))
    model.minimize(z)

    solver = cp_model.CpSolver()
    configure(solver.parameters, options.time_limit, options.threads)
    began = time.perf_counter()
    code = run_solver(solver, model)
    seconds = time.perf_counter() - began
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        picked = np.array([solver.boolean_value(v) for v in x], dtype=bool)
        choice = np.zeros(len(src), dtype=np.int64)
        choice[item[picked]] = candidate[picked]
    else:
        choice = start  # no solution within the limit: d-mod-k (destination-consistent) stands
    if code == cp_model.OPTIMAL:
        whole = f"max contention over the phases {int(solver.value(z))}: proven optimal among destination-consistent routings"
    elif code == cp_model.FEASIBLE:
        whole = (f"max contention over the phases {int(solver.value(z))}, at least {int(round(solver.best_objective_bound))} "
                 f"for destination-consistent routings (time limit)")
    else:
        whole = "no solution within the time limit: d-mod-k's routes"
    timeouts = int(code not in (cp_model.OPTIMAL, cp_model.FEASIBLE))
    return choice, PhaseReport(subproblems=1, direct_solved=1, solver_seconds=seconds, timeouts=timeouts, whole_run=whole)


def ConsistentMonolithicRouter(options: LayeredOptions) -> WholeWorkloadRouter:
    return WholeWorkloadRouter(route_consistent_monolithic, options)


def _build(options):
    o = LayeredOptions.of(options)
    return ConsistentMonolithicRouter(o) if o.consistency == "destination" else MonolithicRouter(o)


def _label(options, seed: int) -> str:
    limit = f", time limit {options.time_limit:g} s" if options.time_limit else ""
    return f"monolithic (one model per phase, solver {options.solver}{limit})"


ROUTER = (
    RouterSpec("monolithic", XGFT, "one path-selection model per phase over every minimal path (a certificate on small "
               "instances)", _build, takes=("consistency",) + SOLVER_OPTIONS, minimizes_messages=True,
               synthesis=LayeredOptions.of, label=_label, file_schema=FILE_SCHEMA, proves=True,
               proof_raises_bound=True,
               report={"monolithic-consistent": ("synth exact, dest.-consistent", "destination")}, order=30),
)
