"""Progress of a run on stderr: a bar on a terminal, a plain line per interval in a log.

The numbers are those of the summary (synth.render.console.summary): phases done and their
statuses (optimal: at the bound or proven), plus the rate and the time left. Synthesizing routers
also get a line per phase (its contention, bound, status and how the solver got there), which on
a terminal scrolls above the bar. Phases read back from a checkpoint count as done but not in
the rate.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import TextIO

from synth.core.text import counted
from synth.measure.evaluate import OPTIMAL, PhaseEvaluation

LOG_INTERVAL = 10.0  # seconds between plain progress lines (a log of a day-long run stays readable)


def duration(seconds: float) -> str:
    """3 s, 4 min 05 s, 2 h 26 min: what a person reads at a glance."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class Progress:
    def __init__(self, total: int, enabled: bool = True, every: float = LOG_INTERVAL, stream: TextIO | None = None):
        self.total, self.enabled, self.every = total, enabled, every
        self.stream = stream if stream is not None else sys.stderr
        self.start = self.last = time.monotonic()
        self.done = self.resumed = 0
        self.statuses: Counter = Counter()
        self.bar = None
        if enabled and total > 1 and _is_terminal(self.stream):
            from tqdm import tqdm

            self.bar = tqdm(total=total, file=self.stream, leave=False, dynamic_ncols=True, smoothing=0.05,
                            bar_format="  {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} phases{postfix}")
            self.bar.set_postfix_str(self.figures(), refresh=False)

    # ----- what happened ----------------------------------------------------------------------

    def resume(self, evaluations: list[PhaseEvaluation]) -> None:
        """Phases read back from a checkpoint: done, but not part of this run's rate."""
        self.resumed += len(evaluations)
        self._count(evaluations)
        if self.bar is not None:
            self.bar.update(len(evaluations))

    def update(self, evaluations: list[PhaseEvaluation], reports: dict | None = None) -> None:
        self._count(evaluations)
        if not self.enabled:
            return
        now = time.monotonic()
        if reports and len(evaluations) > 1 and len({id(r) for r in reports.values()}) == 1:
            # Phases routed together (destination-consistent): one line for all of them.
            report = next(iter(reports.values()))
            worst = max(evaluations, key=lambda e: e.max_contention)
            self.say(f"  {counted(len(evaluations), 'phase')} routed together: max contention {worst.max_contention} (phase "
                     f"{worst.phase}), {sum(e.max_contention > e.lower_bound for e in evaluations)} above the bound; "
                     f"{report.progress_text()} [{now - self.start:.1f} s]")
        elif reports:  # synthesis: a line per phase
            for e in evaluations:
                report = reports.get(e.phase)
                detail = f"; {report.progress_text()}" if report is not None else ""
                self.say(f"  phase {e.phase}: contention {e.max_contention}, bound {e.lower_bound}, {e.status}{detail} "
                         f"[{self.done}/{self.total}, {now - self.start:.1f} s]")
        if self.bar is not None:
            self.bar.set_postfix_str(self.figures(), refresh=False)
            self.bar.update(len(evaluations))
        elif now - self.last >= self.every and self.done < self.total:
            self.last = now
            self.say(f"  progress: {self.line()}")

    def _count(self, evaluations: list[PhaseEvaluation]) -> None:
        self.done += len(evaluations)
        self.statuses.update(e.status for e in evaluations)

    # ----- how it reads -----------------------------------------------------------------------

    def status_text(self) -> str:
        """`118 optimal, 2 feasible`: the summary's statuses, optimal first."""
        order = sorted(self.statuses, key=lambda s: (s != OPTIMAL, s))
        return ", ".join(f"{self.statuses[s]} {s}" for s in order) if order else f"0 {OPTIMAL}"

    def rate(self) -> float:
        """Phases per second routed by this run (resumed ones excluded)."""
        elapsed = time.monotonic() - self.start
        return (self.done - self.resumed) / elapsed if elapsed > 0 else 0.0

    def figures(self) -> str:
        """`118 optimal; 0.92 phases/s, about 2 h 26 min left [2 min 10 s]` (the bar's text)."""
        rate = self.rate()
        left = f", about {duration((self.total - self.done) / rate)} left" if rate > 0 else ""
        return f"{self.status_text()}; {rate:.3g} phases/s{left} [{duration(time.monotonic() - self.start)}]"

    def line(self) -> str:
        resumed = f" ({self.resumed} from the checkpoint)" if self.resumed else ""
        return f"{self.done}/{counted(self.total, 'phase')}{resumed}, {self.figures()}"

    def say(self, text: str) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.write(text, file=self.stream)
        else:
            print(text, file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def progress_printer(enabled: bool):
    """A function printing a timed line on stderr (or nothing: small runs, --quiet)."""
    start = time.monotonic()

    def say(text: str) -> None:
        if enabled:
            print(f"  {text} [{time.monotonic() - start:.1f} s]", file=sys.stderr, flush=True)
    return say
