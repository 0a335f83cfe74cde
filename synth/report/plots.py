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

def contention_figure(result: PatternResult) -> Figure:
    """Max contention per phase: a panel per routing (curves on one axes would hide each other),
    the lower bound shaded grey underneath."""
    rows = max(1, len(result.series))
    figure, panels = plt.subplots(rows, 1, figsize=(9, 0.4 + 1.25 * rows), dpi=100, sharex=True, squeeze=False)
    phases = result.phases
    for axes, series in zip(panels[:, 0], result.series):
        # Each panel its own scale: a routing at 56 would flatten one at the bound of 1.
        top = max(int(result.lower_bound.max(initial=0)), int(series.max_contention.max(initial=0)))
        axes.fill_between(phases, result.lower_bound, step="mid", color="0.85", label="lower bound")
        axes.step(phases, series.max_contention, where="mid", color="C3", linewidth=1.0, label=series.routing)
        above = result.above_bound(series)
        axes.set_title(f"{series.routing}: max {int(series.max_contention.max(initial=0))}, "
                       f"{above} of {len(phases)} phases above the bound", fontsize="small", loc="left")
        axes.set_ylim(0, top + 0.5)
        axes.yaxis.get_major_locator().set_params(integer=True)
    panels[-1, 0].set_xlabel(f"{result.label} phase (grey: lower bound)")
    figure.supylabel("max contention", fontsize="small")
    figure.tight_layout()
    return figure


def collective_figure(result, label: str) -> Figure:
    """A collective's algorithms over message sizes (synth.schedule.compare.Comparison): time per size, log-log."""
    figure, axes = plt.subplots(figsize=(8, 4.5), dpi=100)
    for j, c in enumerate(result.candidates):
        axes.plot(result.sizes, result.times[:, j] * 1e6, marker="o", markersize=3, linewidth=1.2, label=c.label)
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xlabel("message size (bytes)")
    axes.set_ylabel("alpha-beta time (us)")
    axes.set_title(f"{result.collective} on {label}", fontsize="medium")
    axes.legend(fontsize="small", loc="upper left")
    figure.tight_layout()
    return figure


def time_figure(results: list[PatternResult], cost: CostModel) -> Figure:
    """Alpha-beta estimate of each exchange, a bar per routing and pattern; the bound's estimate as a tick."""
    figure, axes = plt.subplots(figsize=(9, 3.8), dpi=100)
    routings = [s.routing for s in results[0].series] if results else []
    width = 0.8 / max(1, len(routings))
    x = np.arange(len(results))
    for j, routing in enumerate(routings):
        heights = [r.series[j].time(cost) * 1e6 for r in results]
        axes.bar(x - 0.4 + (j + 0.5) * width, heights, width, label=routing)
    bounds = [r.bound_time(cost) * 1e6 for r in results]
    axes.hlines(bounds, x - 0.42, x + 0.42, colors="black", linewidth=1.5, label="lower bound")
    axes.set_xticks(x, [r.label for r in results])
    axes.set_ylabel("estimated time (us)")
    axes.set_title(f"Alpha-beta estimate of the exchange ({cost.message_bytes} B messages)")
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    figure.tight_layout()
    return figure


def png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(figure)
    return buffer.getvalue()
