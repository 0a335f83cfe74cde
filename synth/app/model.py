"""`synth model`: the seeds' analytical models, printed as tables.

    synth model diameter2 --radix R          003 ch.7: Figure 7.3 for one router radix
    synth model uniform SPEC [--bl B] [--br B] [--bp B]
                                             003 ch.6: uniform-traffic bound T and balance of a dragonfly
    synth model stencil SPEC --alpha AxBxC (--tasks T | --beta AxBxC) [--gamma AxBxC]
                                             003 ch.5: nearest-neighbour demand on a dragonfly
    synth model demand SPEC --traffic PATTERN [--phase SEL] [--placement HOW] [--br B] [--bp B]
                                             003 ch.5: any workload's global-link demand on a dragonfly
"""

from __future__ import annotations

from math import prod

import numpy as np

from synth.core.text import counted
from synth.core.errors import SynthError
from synth.core.validate import parse_int, parse_positive_number
from synth.cost.diameter2_model import figure_7_3
from synth.cost.dragonfly_demand import ROUTINGS, GroupTraffic
from synth.cost.stencil_model import STRATEGIES, best_placements, evaluate, neighbour_shares, task_grids
from synth.io.instance import resolve
from synth.render.console import table
from synth.topology import parse_topology
from synth.topology.dragonfly import uniform_throughput_bound

MAX_RADIX = 256  # router radix of the Figure 7.3 table
MAX_DIMENSIONS = 6
MAX_TASKS = 1 << 16  # the stencil search enumerates task grids and blocks: tens of thousands at most
MAX_BANDWIDTH = 1e6  # relative link bandwidths of the uniform and demand models
MIN_BANDWIDTH = 1e-6


def _bandwidth(text: str, option: str) -> float:
    value = parse_positive_number(text, option, MAX_BANDWIDTH)
    if value < MIN_BANDWIDTH:
        raise SynthError(f"{option} must be at least {MIN_BANDWIDTH:g}, got {text}")
    return value


def add_parser(sub, add_spec, add_workload) -> None:
    """`add_workload(p)` gives a subcommand the workload options (--traffic, --phase, --placement) and
    the loader the CLI uses for them (args.load_workload(args) -> topology, workload, phases)."""
    p = sub.add_parser("model", help="the seeds' analytical models: diameter-two topologies (003 ch.7), "
                       "nearest-neighbour exchanges on dragonflies (003 ch.5)")
    models = p.add_subparsers(dest="model", required=True, parser_class=type(p))
    d2 = models.add_parser("diameter2", help="Figure 7.3: scale, cost and worst case of each family for a router radix")
    d2.add_argument("--radix", required=True, type=lambda t: parse_int(t, "--radix", 4, MAX_RADIX), metavar="R")
    d2.set_defaults(func=cmd_diameter2)
    un = models.add_parser("uniform", help="003 ch.6: the uniform-traffic throughput bound T of minimal routing on a "
                           "maximum-size dragonfly (eq. 6.1-6.8) and its balance conditions (6.3, 6.6)")
    add_spec(un)
    for option, what in (("--bl", "local links B_L"), ("--br", "global links B_R"), ("--bp", "terminal links B_p")):
        un.add_argument(option, type=lambda t, o=option: _bandwidth(t, o), default=1.0, metavar="B",
                        help=f"bandwidth of the {what} (default 1)")
    un.set_defaults(func=cmd_uniform)
    st = models.add_parser("stencil", help="003 ch.5: global-link demand and bandwidth bounds of a Cartesian "
                           "nearest-neighbour exchange on a dragonfly, best task grid and group blocks")
    add_spec(st)
    st.add_argument("--alpha", required=True, metavar="AxBxC", help="elements of the domain per dimension")
    group = st.add_mutually_exclusive_group(required=True)
    group.add_argument("--tasks", type=lambda t: parse_int(t, "--tasks", 1, MAX_TASKS), metavar="T",
                       help="search every task grid of T tasks")
    group.add_argument("--beta", metavar="AxBxC", help="the task grid")
    st.add_argument("--gamma", metavar="AxBxC", help="the block of tasks per group (with --beta): evaluate it only")
    st.set_defaults(func=cmd_stencil)
    de = models.add_parser("demand", help="003 ch.5 (eq. 5.1-5.6): the relative demand of any workload on a "
                           "dragonfly's global links under direct and indirect routing, and the effective bandwidth bound")
    add_spec(de)
    add_workload(de)
    for option, what in (("--br", "global links B_R"), ("--bp", "terminal links B_P")):
        de.add_argument(option, type=lambda t, o=option: _bandwidth(t, o), default=1.0, metavar="B",
                        help=f"bandwidth of the {what} (default 1)")
    de.set_defaults(func=cmd_demand)


def _grid(text: str, option: str, dimensions: int | None = None) -> tuple[int, ...]:
    parts = text.split("x")
    if not 1 <= len(parts) <= MAX_DIMENSIONS:
        raise SynthError(f"{option} must be 1 to {MAX_DIMENSIONS} sizes joined by 'x', got {text!r}")
    values = tuple(parse_int(v, f"{option} size {k}", 1, 1 << 30) for k, v in enumerate(parts, 1))
    if dimensions is not None and len(values) != dimensions:
        raise SynthError(f"{option} has {len(values)} sizes, --alpha has {dimensions}")
    return values


def cmd_diameter2(args) -> int:
    rows = []
    for c in figure_7_3(args.radix):
        worst = f"1/{c.worst_case.denominator}" if c.worst_case is not None else "-"
        rows.append([c.family, c.spec, c.radix, c.terminals, c.routers, f"{c.ports_per_terminal:.3g}",
                     f"{c.links_per_terminal:.3g}", c.diameter, c.scale, worst])
    print(f"router radix {args.radix} (003, Figure 7.3 and sec. 7.2; the largest configuration of each family)")
    print(table(["family", "spec", "radix", "terminals", "routers", "ports/terminal", "links/terminal", "diameter",
                 "scale", "worst case"], rows, "llrrrrrrll"))
    print("worst case: throughput of minimal routing under the seed's adversarial pattern (sec. 7.4)")
    return 0


def cmd_stencil(args) -> int:
    if getattr(args, "fail", None):
        raise SynthError("--fail does not apply to the stencil model: its closed forms (003) are for the intact network")
    topology = parse_topology(resolve(args.spec).spec)
    hierarchy = topology.hierarchy()
    if topology.family != "dragonfly" or hierarchy is None:
        raise SynthError(f"the stencil model is for dragonflies (003 ch.5), not {topology.family}")
    p, a, groups = hierarchy
    alpha = _grid(args.alpha, "--alpha")
    beta = gamma = None
    if args.beta is not None:
        beta = _grid(args.beta, "--beta", len(alpha))
        if any(x % b for x, b in zip(alpha, beta)):
            raise SynthError(f"--beta {args.beta} does not divide --alpha {args.alpha}")
    if args.gamma is not None:
        if beta is None:
            raise SynthError("--gamma needs --beta")
        gamma = _grid(args.gamma, "--gamma", len(alpha))
        if any(b % g for b, g in zip(beta, gamma)):
            raise SynthError(f"--gamma {args.gamma} does not divide --beta {args.beta}")
        if prod(gamma) > p * a:
            raise SynthError(f"--gamma {args.gamma} puts {prod(gamma)} tasks in a group of {p * a} terminals")
        if prod(beta) // prod(gamma) > groups:
            raise SynthError(f"--gamma {args.gamma} needs {prod(beta) // prod(gamma)} groups, the network has {groups}")
        results = {s: evaluate(s, alpha, beta, gamma, groups) for s in STRATEGIES}
    else:
        if args.tasks is not None:
            _check_tasks(args.tasks, alpha, args.alpha, p * a * groups)
        results = best_placements(alpha, args.tasks or 0, p, a, groups, beta=beta)  # (--tasks xor --beta)
    print(f"{topology.label()}: {groups} groups of {a} routers with {p} terminals; domain {args.alpha} elements")
    if beta is not None:
        print("shares m_k (eq. 5.10): " + ", ".join(f"{m:.4g}" for m in neighbour_shares(alpha, beta)))
    rows = []
    for strategy, result in results.items():
        if result is None:
            rows.append([strategy, "-", "-", "-", _why_none(strategy, beta is None and gamma is None)])
            continue
        rows.append([strategy, "x".join(map(str, result.beta)), "x".join(map(str, result.gamma)), f"{result.demand:.4g}",
                     f"{result.bandwidth_bound:.4g} x B_P"])
    print(table(["strategy", "beta", "gamma", "max global-link demand", "effective bandwidth <="], rows, "lllrl"))
    print("demand: eq. 5.16 (Cartesian, direct), 5.17 (Cartesian, Valiant), 5.20 (random placement, natural log); "
          "bounds 5.21, 5.23, 5.25 with B_R = B_P; local links are not in the model")
    return 0


def _check_tasks(tasks: int, alpha: tuple[int, ...], text: str, terminals: int) -> None:
    """Refuse a task count no task grid fits, saying the nearest counts that fit (sec. 5.3.4: the
    grid beta's sides divide the domain's, one task per terminal)."""
    if tasks > terminals:
        raise SynthError(f"--tasks {tasks:,} is more than the network's {terminals:,} terminals (one task per terminal)")
    if next(iter(task_grids(tasks, len(alpha), alpha)), None) is not None:
        return
    fits = [t for t in range(1, terminals + 1) if next(iter(task_grids(t, len(alpha), alpha)), None) is not None] \
        if terminals <= MAX_TASK_SEARCH else []
    below = max((t for t in fits if t < tasks), default=None)
    above = min((t for t in fits if t > tasks), default=None)
    near = " or ".join(f"{t:,}" for t in (below, above) if t is not None)
    raise SynthError(f"--tasks {tasks:,}: no grid of {tasks:,} tasks divides the domain {text} (every side of the task "
                     f"grid must divide the domain's side)" + (f"; {near} tasks fit" if near else ""))


MAX_TASK_SEARCH = 1 << 16  # terminals up to which the nearest fitting task counts are searched


def _why_none(strategy: str, searched: bool) -> str:
    if strategy == "random-direct":
        return "eq. 5.20 needs more than e blocks (ln ln |lambda| > 0)" + (" in every placement tried" if searched else "")
    return "no placement: no block gamma fits a group with the blocks fitting the groups"


def cmd_demand(args) -> int:
    topology, workload, phases = args.load_workload(args)
    traffic = GroupTraffic(topology, workload, phases)
    results = [traffic.demand(routing) for routing in ROUTINGS]  # (before printing: errors leave no output)
    links = sorted({int(x) for x in traffic.links[~np.eye(traffic.num_groups, dtype=bool)]})
    count = str(links[0]) if links[0] == links[-1] else f"{links[0]} to {links[-1]}"
    print(f"{topology.label()}: {traffic.num_groups} groups, {count} global link{'s' if links[-1] > 1 else ''} "
          f"per ordered group pair")
    print(f"traffic {workload.pattern}: {len(phases)} of {counted(workload.num_phases, 'phase')}, placement "
          f"{workload.placement_text}; {traffic.senders} terminal{' sends' if traffic.senders == 1 else 's send'}")
    rows = []
    for routing, result in zip(ROUTINGS, results):
        if result is None:
            rows.append([routing, "5.3", "-", "-", "no intermediate group (2 groups)"])
            continue
        i, j = result.link
        bound = result.bandwidth_bound(args.br, args.bp)
        rows.append([result.routing, "5.2" if result.routing == "direct" else "5.3", f"{result.worst:.4g}",
                     f"g{i} -> g{j}" if result.worst > 0 else "-", f"{bound:.4g}"])
    print(table(["routing", "eq.", "max global-link demand (delta)", "on the link", "B_P,eff <="], rows, "llrll"))
    print(f"delta: shares of what each terminal sends (5.1, 5.4); B_P,eff <= min(B_P, B_R / max delta) (5.5, 5.6) with "
          f"B_R {args.br:g}, B_P {args.bp:g}; local links are not in the model (no closed form in 003)")
    return 0


def cmd_uniform(args) -> int:
    if getattr(args, "fail", None):
        raise SynthError("--fail does not apply to the uniform-traffic model: its closed forms (003) are for the intact network")
    topology = parse_topology(resolve(args.spec).spec)
    if topology.family != "dragonfly":
        raise SynthError(f"the uniform-traffic model is for dragonflies (003 ch.6), not {topology.family}")
    if not topology.is_maximum:
        raise SynthError(f"{topology.spec}: eq. 6.1-6.8 are for the maximum size, a h + 1 = {topology.max_groups} "
                         f"groups, not {topology.groups}")
    p, a, h = topology.p, topology.a, topology.h
    b_l, b_r, b_p = args.bl, args.br, args.bp
    bound = uniform_throughput_bound(p, a, h, b_l, b_r, b_p)
    n = topology.num_terminals
    limit = "1 (the terminal links)" if bound.t == 1.0 else "T_L (local links)" if bound.t == bound.t_local \
        else "T_R (global links)"
    rows = [
        ["N", "p a (a h + 1)", n],
        ["P_L", "p^2 (2 a h + 1) / N  (6.1)", f"{p * p * (2 * a * h + 1) / n:.4f}" if a > 1 else "- (a = 1: no local links)"],
        ["T_L", "B_L / (P_L B_p)  (6.2)", f"{bound.t_local:.4f}" if a > 1 else "-"],
        ["P_R", "(a p)^2 / N  (6.4)", f"{(a * p) ** 2 / n:.4f}"],
        ["T_R", "B_R / (P_R B_p)  (6.5)", f"{bound.t_global:.4f}"],
        ["T", "min(1, T_L, T_R)  (6.8)", f"{bound.t:.4f}"],
    ]
    print(f"{topology.label()}: {n} terminals; bandwidths B_L {b_l:g}, B_R {b_r:g}, B_p {b_p:g}; "
          f"minimal routing, uniform traffic")
    print(table(["quantity", "formula (003 ch.6)", "value"], rows, "llr"))
    print(f"bound set by {limit}")
    local = f"({a * b_l:g} vs {2 * p * b_p:g})" if a > 1 else "(no local links: a = 1)"
    print(f"balance a B_L >= 2 p B_p (6.3): {'holds' if bound.local_balanced else 'does not hold'} {local}")
    print(f"balance h B_R >= (p - 1/a) B_p (6.6): {'holds' if bound.global_balanced else 'does not hold'} "
          f"({h * b_r:g} vs {(p - 1 / a) * b_p:.4g})")
    return 0
