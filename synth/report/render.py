"""A Report as an HTML page (figures inline) or Markdown (figures as PNG files beside it).

Both formats come from one context of already-formatted values, so they show the same numbers.
"""

from __future__ import annotations

import base64
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
from jinja2 import Environment, PackageLoader, StrictUndefined

from synth import __version__
from synth.core.text import figure
from synth.report import plots
from synth.report.data import PatternResult, Report

US = 1e6  # seconds to microseconds


@lru_cache(maxsize=2)
def _templates(html: bool) -> Environment:
    return Environment(loader=PackageLoader("synth", "report/templates"), undefined=StrictUndefined,
                       autoescape=html, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)


def _summary_rows(report: Report, result: PatternResult) -> list[dict]:
    cost = report.cost
    bound_time = result.bound_time(cost)
    rows = [{"routing": "lower bound", "max": int(result.lower_bound.max(initial=0)), "above": "-",
             "total": int(result.lower_bound.sum()), "time_us": f"{bound_time * US:.2f}", "ratio": "1.00",
             "seconds": "-", "statuses": "", "lanes": "-",
             "note": "no routing does better" + (" (subtree cut bound)" if report.ideal_time is not None else "")}]
    for series in result.series:
        time = series.time(cost)
        statuses = ", ".join(f"{n} {status}" for status, n in sorted(series.statuses.items()))
        rows.append({
            "routing": series.routing,
            "max": int(series.max_contention.max(initial=0)),
            "above": f"{result.above_bound(series)} of {len(result.phases)}",
            "total": int(series.max_contention.sum()),
            "time_us": f"{time * US:.2f}",
            "ratio": f"{time / bound_time:.2f}" if bound_time > 0 else "-",
            "seconds": f"{series.seconds:.1f}",
            "statuses": statuses,
            "lanes": series.lanes or "-",
            "note": series.note,
        })
    return rows


def _distribution(result: PatternResult) -> dict:
    """Phases per max-contention value, for the bound and every routing."""
    columns = [result.lower_bound] + [s.max_contention for s in result.series]
    top = max(int(c.max(initial=0)) for c in columns)
    counts = [np.bincount(c, minlength=top + 1) for c in columns]
    rows = [[value] + [int(c[value]) for c in counts] for value in range(top + 1) if any(c[value] for c in counts)]
    return {"headers": ["max contention", "lower bound"] + [s.routing for s in result.series], "rows": rows}


def _per_phase(result: PatternResult) -> dict:
    columns = np.stack([result.phases, result.lower_bound] + [s.max_contention for s in result.series], axis=1)
    return {"headers": ["phase", "lower bound"] + [s.routing for s in result.series], "rows": columns.tolist()}


def _title(report: Report) -> str:
    """The network (or instance) and every collective the report prices."""
    names = [c.collective for c in report.collectives]
    return f"synth cost report: {report.name}" + (f"; collective{'s' if len(names) > 1 else ''} {', '.join(names)}"
                                                 if names else "")


def _context(report: Report, images: dict[str, str]) -> dict:
    topology, network, cost = report.topology, report.network, report.cost
    return {
        "title": _title(report),
        "name": report.name,
        "description": report.description,
        "source": report.source,
        "label": topology.label(),
        "spec": topology.spec,
        "terminals": network.num_terminals,
        "switches": network.num_switches,
        "links": network.num_channels // 2,
        "message_bytes": cost.message_bytes,
        "alpha_us": f"{cost.alpha * US:g}",
        "bandwidth_gbps": f"{cost.bandwidth_bits / 1e9:g}",
        "beta": f"{cost.beta:.3g}",
        "copy_cost": f"{cost.copy_cost:g}" if cost.copy_cost else "",
        "ideal_us": f"{report.ideal_time * US:.2f}" if report.ideal_time is not None else "",
        "bmin": report.bmin,
        "xgft": report.ideal_time is not None,
        "facts": [{"name": k, "value": v} for k, v in report.facts],
        "bound_note": report.bound_note,
        "workload": "the all-to-all exchanges below" if report.ideal_time is not None else "the patterns below",
        "command": report.command,
        "version": __version__,
        "engine_notes": report.engine_notes,
        "timings": report.timings,
        "time_image": images["time"],
        "collectives": [_collective(c, images) for c in report.collectives],
        "patterns": [{
            "pattern": r.pattern,
            "label": r.label,
            "phases": len(r.phases),
            "summary": _summary_rows(report, r),
            "distribution": _distribution(r),
            "per_phase": _per_phase(r),
            "image": images[r.label],
        } for r in report.patterns],
    }


def _collective(result, images: dict[str, str]) -> dict:
    from synth.core.sizes import size_text

    best = result.best
    return {
        "name": result.collective,
        "headers": ["bytes"] + [c.label for c in result.candidates] + ["bound", "best"],
        "rows": [[size_text(n)] + [figure(t * US) for t in result.times[i]] + [figure(result.bounds[i] * US),
                                                                                 best[i]]
                 for i, n in enumerate(result.sizes)],
        "router": result.router,
        "crossovers": result.crossover_text(),
        "skipped": result.skipped,
        "image": images[f"collective {result.collective}"],
        "simulated": _simulated(result),
    }


def _simulated(result) -> dict | None:
    """--simulate: SimGrid's times as a second table ('-' where a candidate was not simulated), its
    crossovers, and where it ranks the algorithms otherwise than the cost model."""
    from synth.core.sizes import size_text

    simulated = result.simulated
    if simulated is None:
        return None
    best = result.simulated_best
    ranking = result.ranking_lines()
    return {
        "model": simulated.model,
        "headers": ["bytes"] + [c.label for c in result.candidates] + ["best"],
        "rows": [[size_text(n)] + [figure(t * US) for t in simulated.times[i]]
                 + [result.candidates[best[i]].label] for i, n in enumerate(result.sizes)],
        "crossovers": result.simulated_crossover_text(),
        "summary": ranking[0],
        "differences": ranking[1:],
        "notes": list(simulated.notes),
    }


def figures(report: Report) -> dict[str, bytes]:
    """PNG bytes by key: "time", one per pattern label, one per collective ("collective NAME")."""
    out = {"time": plots.png(plots.time_figure(report.patterns, report.cost))}
    for result in report.patterns:
        out[result.label] = plots.png(plots.contention_figure(result))
    for result in report.collectives:
        out[f"collective {result.collective}"] = plots.png(plots.collective_figure(result, report.topology.label()))
    return out


def render_html(report: Report) -> str:
    images = {key: "data:image/png;base64," + base64.b64encode(data).decode("ascii") for key, data in figures(report).items()}
    return _templates(True).get_template("report.html.j2").render(_context(report, images))


def render_markdown(report: Report, out: Path) -> dict[Path, str | bytes]:
    """The Markdown file and its PNG files (named after it), as {path: content}."""
    files: dict[Path, str | bytes] = {}
    images = {}
    taken: set[str] = set()
    for key, data in figures(report).items():
        safe = re.sub(r"[^a-z0-9]+", "-", key.lower()).strip("-")  # (patterns such as randperm:1 name figures too)
        name, k = safe, 1
        while name in taken:  # two patterns that clean to one name: numbered, never overwritten
            k += 1
            name = f"{safe}-{k}"
        taken.add(name)
        path = out.with_name(f"{out.stem}-{name}.png")
        files[path] = data
        images[key] = path.name
    files[out] = _templates(False).get_template("report.md.j2").render(_context(report, images))
    return files
