"""The report's figures as PNG bytes (matplotlib, Agg backend: no display needed).

Each figure function returns the matplotlib Figure so that tests can read the plotted data back;
`png` renders it deterministically (no timestamp or software metadata in the file).
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend is chosen first)
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from synth.report.data import CostModel, PatternResult  # noqa: E402
from synth.report.styles import BOUND_COLOUR, BOUND_FILL, styles_for  # noqa: E402

BAR_PHASES = 4  # patterns of at most this many phases are drawn as bars: a step line over one phase is invisible


def contention_figure(result: PatternResult) -> Figure:
    """Max contention per phase against the lower bound: bars for a pattern of a few phases, else a
    panel per routing (curves on one axes would hide each other) on one shared y scale, the bound
    shaded grey and drawn as a black line in every panel."""
    if len(result.phases) <= BAR_PHASES:
        return _contention_bars(result)
    rows = max(1, len(result.series))
    figure, panels = plt.subplots(rows, 1, figsize=(9, 0.9 + 1.25 * rows), dpi=100, sharex=True, sharey=True,
                                  squeeze=False)
    phases = result.phases
    top = max([int(result.lower_bound.max(initial=0))] + [int(s.max_contention.max(initial=0)) for s in result.series])
    styles = styles_for([s.routing for s in result.series])
    for axes, series, style in zip(panels[:, 0], result.series, styles):
        axes.fill_between(phases, result.lower_bound, step="mid", color=BOUND_FILL, linewidth=0)
        axes.step(phases, result.lower_bound, where="mid", color=BOUND_COLOUR, linewidth=0.8, label="lower bound")
        axes.step(phases, series.max_contention, where="mid", linewidth=1.3, label=series.routing,
                  **style.line_kwargs(markers=False))
        above = result.above_bound(series)
        axes.set_title(f"{series.routing}: max {int(series.max_contention.max(initial=0))}, "
                       f"{above} of {len(phases)} phases above the bound", fontsize="small", loc="left")
        axes.grid(axis="y", color="0.9", linewidth=0.6)
        axes.set_axisbelow(True)
    panels[0, 0].set_ylim(0, top * 1.08 + 0.5)  # one scale for every panel (sharey): heights compare across routings
    panels[0, 0].yaxis.get_major_locator().set_params(integer=True)
    panels[-1, 0].set_xlabel(f"{result.label} phase")
    figure.supylabel("max contention", fontsize="small")
    figure.suptitle(f"{result.label}: max contention per phase, each routing against the lower bound "
                    f"(grey, black line)", fontsize="medium")
    figure.tight_layout()
    return figure


def _contention_bars(result: PatternResult) -> Figure:
    """A bar per routing and phase, the phase's lower bound a black line across its group; one
    phase: the routings side by side, named under their bars, each bar's value above it."""
    names = [s.routing for s in result.series]
    styles = styles_for(names)
    count = len(result.phases)
    single = count == 1
    figure, axes = plt.subplots(figsize=(9, 4.2 if single else 3.8), dpi=100)
    width, half = _bar_width(len(names))
    x = np.arange(count)
    for j, (series, style) in enumerate(zip(result.series, styles)):
        bars = axes.bar(x - half + (j + 0.5) * width, series.max_contention, width * 0.92, label=series.routing,
                        **style.bar_kwargs())
        axes.bar_label(bars, fontsize="x-small", padding=1)
    axes.hlines(result.lower_bound, x - half - 0.03, x + half + 0.03, colors=BOUND_COLOUR, linewidth=1.8,
                label="lower bound")
    top = max([int(result.lower_bound.max(initial=0))] + [int(s.max_contention.max(initial=0)) for s in result.series])
    axes.set_ylim(0, top * 1.15 + 0.5)
    axes.yaxis.get_major_locator().set_params(integer=True)
    axes.set_ylabel("max contention")
    axes.grid(axis="y", color="0.9", linewidth=0.6)
    axes.set_axisbelow(True)
    if single:
        axes.set_xlim(-0.5, 0.5)
        axes.set_xticks(x - half + (np.arange(len(names)) + 0.5) * width, names, rotation=30, ha="right",
                        fontsize="small")
        handles, labels = axes.get_legend_handles_labels()  # the routings are named under their bars
        axes.legend([handles[labels.index("lower bound")]], ["lower bound"], loc="upper left",
                    bbox_to_anchor=(1.01, 1.0), fontsize="small")
    else:
        axes.set_xticks(x, [f"phase {int(p)}" for p in result.phases])
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    phases = "1 phase" if single else f"{count} phases"
    axes.set_title(f"{result.label} ({phases}): max contention per routing against the lower bound", fontsize="medium")
    figure.tight_layout()
    return figure


def collective_figure(result, label: str) -> Figure:
    """A collective's algorithms over message sizes (synth.pricing.compare.Comparison): time per size,
    log-log, with the bound no schedule beats under the same model, the sizes on a B/KiB/MiB axis,
    and every crossover (where the best algorithm changes) marked and named."""
    from matplotlib.ticker import FixedLocator, NullLocator

    from synth.core.sizes import size_text

    figure, axes = plt.subplots(figsize=(9.5, 4.5), dpi=100)
    styles = styles_for([c.label for c in result.candidates])  # one look per algorithm in every figure
    for j, c in enumerate(result.candidates):
        axes.plot(result.sizes, result.times[:, j] * 1e6, markersize=4, linewidth=1.2, label=c.label,
                  **styles[j].line_kwargs())
    axes.plot(result.sizes, result.bounds * 1e6, color=BOUND_COLOUR, linewidth=2.0, linestyle=":",
              label="lower bound (any schedule)")
    simulated = getattr(result, "simulated", None)
    if simulated is not None:  # --simulate: SimGrid's times, thin and crossed, in each algorithm's colour
        for j in simulated.columns:
            axes.plot(result.sizes, simulated.times[:, j] * 1e6, color=styles[j].colour, linestyle=(0, (1, 2)),
                      linewidth=0.9, marker="x", markersize=4)
        axes.plot([], [], color="0.3", linestyle=(0, (1, 2)), linewidth=0.9, marker="x", markersize=4,
                  label=f"x: simulated (SimGrid {simulated.model})")
    best = result.best
    for i in range(1, len(result.sizes)):
        if best[i] != best[i - 1]:
            axes.axvline(result.sizes[i], color="0.55", linewidth=0.8, linestyle="--")
            axes.annotate(f"best from {size_text(result.sizes[i])}:\n{best[i]}",
                          (result.sizes[i], 1.0), xycoords=("data", "axes fraction"), xytext=(3, -3),
                          textcoords="offset points", va="top", fontsize="x-small", color="0.2",
                          bbox={"boxstyle": "square,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.85})
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    ticks = _size_ticks(result.sizes)
    axes.xaxis.set_major_locator(FixedLocator(ticks))
    axes.xaxis.set_minor_locator(NullLocator())
    axes.set_xticks(ticks, [size_text(int(t)) for t in ticks], fontsize="small")
    axes.set_xlabel("message size")
    axes.set_ylabel("time under synth's cost model (us)" if simulated is None else "time (us)")
    axes.set_title(f"{result.collective} on {label} ({result.router} routes)", fontsize="medium")
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the lines, never over them
    figure.tight_layout()
    return figure


def _size_ticks(sizes: list[int]) -> list[int]:
    """At most 10 of the sizes, evenly spread over the axis, the first and the last among them."""
    if len(sizes) <= 10:
        return list(sizes)
    step = -(-(len(sizes) - 1) // 9)
    return sorted(set(sizes[::step]) | {sizes[-1]})


def time_figure(results: list[PatternResult], cost: CostModel) -> Figure:
    """Alpha-beta estimate of each exchange over the estimate at the lower bound, a bar per routing
    and pattern: patterns of one phase and of hundreds share one axis (on an axis of microseconds
    the short ones vanish); each pattern's bound estimate is under its name."""
    figure, axes = plt.subplots(figsize=(9, 4.2), dpi=100)
    routings = [s.routing for s in results[0].series] if results else []
    styles = styles_for(routings)
    width, half = _bar_width(len(routings))
    x = np.arange(len(results))
    bounds = np.array([r.bound_time(cost) for r in results])
    top = 1.0
    for j, (routing, style) in enumerate(zip(routings, styles)):
        times = np.array([r.series[j].time(cost) for r in results])
        ratios = np.divide(times, bounds, out=np.full(len(results), np.nan), where=bounds > 0)  # (no phase: no bar)
        top = max(top, float(np.nanmax(ratios, initial=1.0)))
        axes.bar(x - half + (j + 0.5) * width, ratios, width * 0.92, label=routing, **style.bar_kwargs())
    axes.axhline(1.0, color=BOUND_COLOUR, linewidth=1.5, label="lower bound (1)")
    axes.set_xticks(x, [f"{r.label}\n{len(r.phases)} phase{'s' if len(r.phases) != 1 else ''}\nbound {_us(b)}"
                        for r, b in zip(results, bounds)], fontsize="small")
    axes.set_ylim(0, top * 1.08)
    axes.set_ylabel("estimate / estimate at the bound")
    axes.grid(axis="y", color="0.9", linewidth=0.6)
    axes.set_axisbelow(True)
    axes.set_title(f"Estimate (cost model) over the estimate at the lower bound ({cost.message_bytes} B messages)",
                   fontsize="medium")
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    figure.tight_layout()
    return figure


def _bar_width(bars: int) -> tuple[float, float]:
    """A bar's width and half its group's: a group spans at most 0.8 of the space between groups,
    a bar at most 0.2 (two bars are not two slabs)."""
    width = min(0.8 / max(1, bars), 0.2)
    return width, width * bars / 2


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.3g} us"


def png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(figure)
    return buffer.getvalue()
