"""Plain-text renderings for the terminal: topology summaries, per-phase tables, summaries."""

from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np

from synth.core.text import counted

from synth.measure.evaluate import PhaseEvaluation
from synth.pricing.fattree import bmin_table, top_halving_savings
from synth.topology.family import FAT_TREE_FORMS
from synth.topology.network import Network
from synth.topology.xgft import Xgft

# Up to this many phases a per-phase table is printed by default; beyond it, a distribution.
TABLE_PHASES = 64


def table(headers: Sequence[str], rows: Sequence[Sequence], align: str | None = None) -> str:
    """Right-aligned columns (left-aligned where `align` has an 'l')."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    align = align or "r" * len(headers)
    lines = []
    for r in cells:
        parts = [c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(r, widths, align)]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def percent(x: float) -> str:
    return f"{100 * x:.1f}%"


def topology_summary(topology, network: Network) -> str:
    """Counts per channel class and the family's facts; fat trees (Prisacari20 ch.2's closed forms) get
    their layer table and the savings of halving the top layer."""
    if FAT_TREE_FORMS in topology.closed_forms():
        origin = topology.origin_facts()
        return _xgft_summary(topology, network) + ("\n\n" + table(["fact", "value"], origin, "ll") if origin else "")
    classes = np.bincount(network.channel_class, minlength=len(network.class_names))
    rows = [[name, int(count), _bandwidths(network.channel_bandwidth[network.channel_class == k])]
            for k, (name, count) in enumerate(zip(network.class_names, classes.tolist()))]
    lines = [f"{topology.label()}  spec {topology.spec}",
             f"terminals {network.num_terminals}, routers {network.num_switches}, {network.num_channels} directed channels",
             "", table(["channel class", "directed channels", "bandwidth"], rows, "lrr"), "",
             table(["fact", "value"], topology.facts() + _cost_facts(network), "ll")]
    return "\n".join(lines)


def _cost_facts(network: Network) -> list[tuple[str, str]]:
    ports, links = network.cost_per_endpoint()
    return [("router ports per terminal (Prisacari20 sec. 7.2)", f"{ports:.3g}"), ("links per terminal", f"{links:.3g}")]


def _bandwidths(values: np.ndarray) -> str:
    distinct = np.unique(values)
    return "-" if not len(distinct) else "/".join(f"{v:g}" for v in distinct.tolist())


def _xgft_summary(xgft: Xgft, network: Network) -> str:
    h = xgft.height
    lines = [
        f"{xgft.label()}  spec {xgft.spec}",
        f"terminals {network.num_terminals}, switches {network.num_switches}, "
        f"links {network.num_channels // 2} ({network.num_channels} directed channels)",
        "",
    ]
    rows = []
    for layer in range(h + 1):
        down = xgft.m[layer - 1] if layer >= 1 else 0
        up = xgft.w[layer] if layer < h else 0
        links = xgft.link_count(layer) if layer >= 1 else "-"
        paths = xgft.wt_span[layer]
        rows.append([layer, xgft.switch_count(layer), links, down, up, paths])
    lines.append(table(["layer", "S(l) nodes", "E(l) links below", "down ports", "up ports", "paths via layer"], rows))
    lines.append("")
    lines.append("layer 0 are the terminals; E(l) counts the links between layers l-1 and l (stage l);")
    lines.append("'paths via layer' is W_1*...*W_l, the minimal paths of a flow whose NCA is at that layer.")
    switch_saving, link_saving = top_halving_savings(xgft.m)
    lines.append(
        f"halving W_{h} of the full-bisection XGFT with these M saves {percent(float(switch_saving))} of switches "
        f"and {percent(float(link_saving))} of links (Prisacari20, sec. 2.4.2)"
    )
    return "\n".join(lines)


def bmin_lines(xgft: Xgft) -> str:
    rows = [
        [r["layer"], r["bmin"], r["full_bisection"], r["up_links"], r["contention_bound"]]
        for r in bmin_table(xgft)
    ]
    return table(["layer l", "B_min(l)", "full bisection", "XGFT up links", "contention >="], rows)


def binding_bound(e: PhaseEvaluation, bound_names: Sequence[str]) -> str:
    """The name of the bound that gives the phase's lower bound: the LP bound or a solver's proof
    where the run raised it above the cut bounds, else the first cut bound that reaches it ("-" for
    a phase without traffic)."""
    if e.bound_source:
        return e.bound_source
    if e.lower_bound <= 0 or not e.stage_bounds:
        return "-"
    return bound_names[int(np.argmax(e.stage_bounds))]


def phase_rows(evaluations: Sequence[PhaseEvaluation], network: Network | None, bound_names: Sequence[str]) -> str:
    rows = []
    for e in evaluations:
        hottest = network.channel_label(e.hottest_channel) if network is not None and e.hottest_channel >= 0 else "-"
        rows.append([e.phase, e.max_contention, e.lower_bound, binding_bound(e, bound_names), e.gap, e.status, hottest])
    return table(["phase", "max contention", "lower bound", "binding", "gap", "status", "a hottest channel"], rows,
                 "rrrlrll")


def binding_line(evaluations: Sequence[PhaseEvaluation], bound_names: Sequence[str]) -> str:
    """How often each bound is the binding one: 'binding bound: stage 2 in 60 phases, stage 1 in 4'."""
    counts = Counter(binding_bound(e, bound_names) for e in evaluations)
    counts.pop("-", None)
    if not counts:
        return "binding bound: none (no traffic)"
    rank = {name: k for k, name in enumerate(bound_names)}
    order = sorted(counts.items(), key=lambda item: (-item[1], rank.get(item[0], len(rank)), item[0]))
    parts = [f"{name} in {n} phase{'s' if n != 1 else ''}" for name, n in order]
    return "binding bound: " + ", ".join(parts)


def distribution_lines(evaluations: Sequence[PhaseEvaluation]) -> str:
    counts = Counter((e.max_contention, e.lower_bound) for e in evaluations)
    rows = []
    for (achieved, bound), n in sorted(counts.items()):
        example = [e.phase for e in evaluations if (e.max_contention, e.lower_bound) == (achieved, bound)][:6]
        more = ", ..." if n > len(example) else ""
        rows.append([achieved, bound, n, ", ".join(map(str, example)) + more])
    return table(["max contention", "lower bound", "phases", "e.g. phases"], rows, "rrrl")


def summary(evaluations: Sequence[PhaseEvaluation]) -> dict:
    worst = max(evaluations, key=lambda e: (e.max_contention, -e.phase))
    above = [e for e in evaluations if e.max_contention > e.lower_bound]
    total = sum(e.max_contention for e in evaluations)
    total_bound = sum(e.lower_bound for e in evaluations)
    return {
        "phases": len(evaluations),
        "max_contention": worst.max_contention,
        "worst_phase": worst.phase,
        "max_lower_bound": max(e.lower_bound for e in evaluations),
        "phases_at_bound": len(evaluations) - len(above),
        "phases_above_bound": len(above),
        "max_gap": max((e.gap for e in evaluations), default=0),
        "sum_max_contention": total,
        "sum_lower_bound": total_bound,
        "statuses": dict(Counter(e.status for e in evaluations)),
    }


def summary_line(s: dict) -> str:
    excess = (s["sum_max_contention"] / s["sum_lower_bound"] - 1) if s["sum_lower_bound"] else 0.0
    statuses = ", ".join(f"{n} {k}" for k, n in sorted(s["statuses"].items()))
    return (
        f"summary: {counted(s['phases'], 'phase')} ({statuses}); max contention {s['max_contention']} (phase "
        f"{s['worst_phase']}), lower bound up to {s['max_lower_bound']}; {counted(s['phases_above_bound'], 'phase')} above "
        f"the bound (max gap {s['max_gap']}); "
        f"sum over phases {s['sum_max_contention']} vs bound {s['sum_lower_bound']} (+{percent(excess)})"
    )


def stage_lines(evaluations: Sequence[PhaseEvaluation], network: Network, bound_names: Sequence[str]) -> str:
    """Per stage: the worst achieved contention and the largest lower bound over the phases (an
    XGFT has one cut bound per stage); other families: per channel class, then the cut bounds."""
    if not network.staged:
        rows = [[name, max(e.stage_max[k] for e in evaluations)] for k, name in enumerate(network.class_names)]
        bounds = ", ".join(f"{name} {max(e.stage_bounds[k] for e in evaluations)}" for k, name in enumerate(bound_names))
        return (table(["channels", "max contention"], rows, "lr") + f"\ncut bounds, max over the phases: {bounds}"
                + "\n" + binding_line(evaluations, bound_names))
    stages = len(evaluations[0].stage_bounds)
    rows = []
    for k in range(stages):
        achieved = max(e.stage_max[k] for e in evaluations)
        bound = max(e.stage_bounds[k] for e in evaluations)
        below = "terminals" if k == 0 else f"layer {k}"
        rows.append([k + 1, f"{below} - layer {k + 1}", achieved, bound])
    return (table(["stage", "links", "max contention", "lower bound"], rows, "rlrr")
            + "\n" + binding_line(evaluations, bound_names))


def unreachable_line(topology, workload, phases, dropped: dict, left_out_of: str = "the routes") -> str:
    """What a degraded network cut: flows dropped (per the phases), terminals cut off, one pair."""
    total = sum(dropped.values())
    network = topology.network()
    failed = network.failed_nodes if network.failed_nodes is not None else np.zeros(0, dtype=np.int64)
    down = failed[failed < network.num_terminals]  # cut off, or missing from a recognized fabric
    cut = f"{len(down)} terminal{'s' * (len(down) != 1)} cut off from their router" + (
        ": " + ", ".join(network.node_names[t] for t in down[:8].tolist()) + (", ..." if len(down) > 8 else "")
        if len(down) else "")
    if not total:
        return f"none: every flow of the {counted(len(dropped), 'phase')} still reaches its destination ({cut})"
    text = f"{counted(total, 'flow')} in {sum(1 for v in dropped.values() if v)} of {counted(len(dropped), 'phase')} cannot be delivered ({cut}"
    from dataclasses import replace

    first = next(p for p, v in dropped.items() if v)
    flows = replace(workload, component=None).flows(first)
    lost = ~workload.reachable(flows.src, flows.dst)
    k = int(np.argmax(lost & (flows.src != flows.dst))) if (lost & (flows.src != flows.dst)).any() else int(np.argmax(lost))
    text += f"; e.g. phase {first}: t{int(flows.src[k])} -> t{int(flows.dst[k])}"
    return text + f"); they are left out of {left_out_of}"
