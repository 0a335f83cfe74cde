"""`synth model diameter2|uniform|stencil|demand ...`: the seeds' analytical models as tables (synth.app.model)."""

from __future__ import annotations

from synth.cli import options as o
from synth.core.declared import constant
from synth.core.text import counted


def bandwidth(text: str, option: str) -> float:
    """synth.app.model.bandwidth, imported when an option is given."""
    from synth.app.model import bandwidth

    return bandwidth(text, option)


def add_parser(sub) -> None:
    p = sub.add_parser("model", help="the seeds' analytical models: diameter-two topologies (Prisacari20 ch.7), "
                       "nearest-neighbour exchanges on dragonflies (Prisacari20 ch.5)")
    models = p.add_subparsers(dest="model", required=True, parser_class=type(p))
    d2 = models.add_parser("diameter2", help="Figure 7.3: scale, cost and worst case of each family for a router radix")
    d2.add_argument("--radix", required=True, type=o.integer("--radix", 4, constant("synth.app.model", "MAX_RADIX")), metavar="R")
    d2.set_defaults(func=cmd_diameter2)
    un = models.add_parser("uniform", help="Prisacari20 ch.6: the uniform-traffic throughput bound T of minimal routing on a "
                           "maximum-size dragonfly (eq. 6.1-6.8) and its balance conditions (6.3, 6.6)")
    o.add_spec(un)
    for option, what in (("--bl", "local links B_L"), ("--br", "global links B_R"), ("--bp", "terminal links B_p")):
        un.add_argument(option, type=lambda t, name=option: bandwidth(t, name), default=1.0, metavar="B",
                        help=f"bandwidth of the {what} (default 1)")
    un.set_defaults(func=cmd_uniform)
    st = models.add_parser("stencil", help="Prisacari20 ch.5: global-link demand and bandwidth bounds of a Cartesian "
                           "nearest-neighbour exchange on a dragonfly, best task grid and group blocks")
    o.add_spec(st)
    st.add_argument("--alpha", required=True, metavar="AxBxC", help="elements of the domain per dimension")
    group = st.add_mutually_exclusive_group(required=True)
    group.add_argument("--tasks", type=o.integer("--tasks", 1, constant("synth.app.model", "MAX_TASKS")), metavar="T",
                       help="search every task grid of T tasks")
    group.add_argument("--beta", metavar="AxBxC", help="the task grid")
    st.add_argument("--gamma", metavar="AxBxC", help="the block of tasks per group (with --beta): evaluate it only")
    st.set_defaults(func=cmd_stencil)
    de = models.add_parser("demand", help="Prisacari20 ch.5 (eq. 5.1-5.6): the relative demand of any workload on a "
                           "dragonfly's global links under direct and indirect routing, and the effective bandwidth bound")
    o.add_spec(de)
    o.add_workload(de)
    for option, what in (("--br", "global links B_R"), ("--bp", "terminal links B_P")):
        de.add_argument(option, type=lambda t, name=option: bandwidth(t, name), default=1.0, metavar="B",
                        help=f"bandwidth of the {what} (default 1)")
    de.set_defaults(func=cmd_demand)


def cmd_diameter2(args) -> int:
    from synth.pricing.diameter2_model import figure_7_3
    from synth.render.console import table

    rows = []
    for c in figure_7_3(args.radix):
        worst = f"1/{c.worst_case.denominator}" if c.worst_case is not None else "-"
        rows.append([c.family, c.spec, c.radix, c.terminals, c.routers, f"{c.ports_per_terminal:.3g}",
                     f"{c.links_per_terminal:.3g}", c.diameter, c.scale, worst])
    print(f"router radix {args.radix} (Prisacari20, Figure 7.3 and sec. 7.2; the largest configuration of each family)")
    print(table(["family", "spec", "radix", "terminals", "routers", "ports/terminal", "links/terminal", "diameter",
                 "scale", "worst case"], rows, "llrrrrrrll"))
    print("worst case: throughput of minimal routing under the seed's adversarial pattern (sec. 7.4)")
    return 0


def cmd_stencil(args) -> int:
    from synth.app.model import stencil_model
    from synth.render.console import table

    model = stencil_model(args.spec, getattr(args, "fail", None), args.alpha, args.tasks, args.beta, args.gamma)
    p, a, groups = model.topology.hierarchy()
    print(f"{model.topology.label()}: {groups} groups of {a} routers with {p} terminals; domain {args.alpha} elements")
    if model.beta is not None:
        print("shares m_k (eq. 5.10): " + ", ".join(f"{m:.4g}" for m in model.shares()))
    rows = []
    for strategy, result in model.results.items():
        if result is None:
            rows.append([strategy, "-", "-", "-", model.why_none(strategy)])
            continue
        rows.append([strategy, "x".join(map(str, result.beta)), "x".join(map(str, result.gamma)), f"{result.demand:.4g}",
                     f"{result.bandwidth_bound:.4g} x B_P"])
    print(table(["strategy", "beta", "gamma", "max global-link demand", "effective bandwidth <="], rows, "lllrl"))
    print("demand: eq. 5.16 (Cartesian, direct), 5.17 (Cartesian, Valiant), 5.20 (random placement, natural log); "
          "bounds 5.21, 5.23, 5.25 with B_R = B_P; local links are not in the model")
    return 0


def cmd_demand(args) -> int:
    topology, workload, phases = args.load_workload(args)
    import numpy as np

    from synth.app.model import demand_model
    from synth.pricing.dragonfly_demand import ROUTINGS
    from synth.render.console import table

    traffic, results = demand_model(topology, workload, phases)  # (before printing: errors leave no output)
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
        rows.append([result.routing, "5.2" if result.routing == "direct" else "5.3", f"{result.worst:.4g}",
                     f"g{i} -> g{j}" if result.worst > 0 else "-", f"{result.bandwidth_bound(args.br, args.bp):.4g}"])
    print(table(["routing", "eq.", "max global-link demand (delta)", "on the link", "B_P,eff <="], rows, "llrll"))
    print(f"delta: shares of what each terminal sends (5.1, 5.4); B_P,eff <= min(B_P, B_R / max delta) (5.5, 5.6) with "
          f"B_R {args.br:g}, B_P {args.bp:g}; local links are not in the model (no closed form in Prisacari20)")
    return 0


def cmd_uniform(args) -> int:
    from synth.app.model import uniform_model
    from synth.render.console import table

    topology, bound = uniform_model(args.spec, getattr(args, "fail", None), args.bl, args.br, args.bp)
    p, a, h, n = topology.p, topology.a, topology.h, topology.num_terminals
    b_l, b_r, b_p = args.bl, args.br, args.bp
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
    print(table(["quantity", "formula (Prisacari20 ch.6)", "value"], rows, "llr"))
    print(f"bound set by {limit}")
    local = f"({a * b_l:g} vs {2 * p * b_p:g})" if a > 1 else "(no local links: a = 1)"
    print(f"balance a B_L >= 2 p B_p (6.3): {'holds' if bound.local_balanced else 'does not hold'} {local}")
    print(f"balance h B_R >= (p - 1/a) B_p (6.6): {'holds' if bound.global_balanced else 'does not hold'} "
          f"({h * b_r:g} vs {(p - 1 / a) * b_p:.4g})")
    return 0
