"""The synthesis methods: one module each, found by the registry METHODS (a module
declares `METHOD = Method(...)`; this package names none of them: synth.core.registry), run by
synth.synthesis.portfolio in the order of their `order`.

Two kinds:
- HALF: points of one spreading half (allgather, reduce-scatter, broadcast, reduce; an allreduce's
  two halves are a reduce-scatter then an allgather): `points(half: HalfContext, found)` returns
  FrontPoints (`found`: the points the methods before it made for the half); the portfolio makes
  and prices their schedules;
- WHOLE: schedules of the whole collective: `points(context: Context)` returns synth.pricing.compare.Candidate schedules,
  which join the part named by the method's `pool` (the pool's points are judged together: the
  rooted constructions kept where no other beats them in both message starts and busiest bytes).

`refusal(plan)` says in one line why a method does not apply to a plan (synth.synthesis.plan.Plan;
None: it applies); the portfolio skips the method and prints the line as progress. Adding a method is one new module here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from synth.core.registry import Registry

HALF, WHOLE = "half", "whole"


@dataclass(frozen=True)
class Method:
    name: str  # what --method and the record call it
    summary: str  # one line: `synth synthesize --help` and docs/methods.md
    kind: str  # HALF | WHOLE
    collectives: tuple[str, ...]  # HALF: the halves it makes points of; WHOLE: the collectives it makes
    points: Callable
    order: int  # the order methods run in (a tie between two points goes to the earlier)
    refusal: Callable = lambda plan: None
    pool: str = ""  # WHOLE: the part its candidates join (default: its own)
    prune: bool = True  # WHOLE: its pool keeps only the candidates no other beats in both message starts and bytes
    proves_steps: bool = False  # HALF: its first point over the plan's transfers proves their least steps
    cites: str = ""  # where the construction comes from


METHODS: Registry[Method] = Registry("synthesis method", __name__, "METHOD", order=lambda m: (m.order, m.name))


def methods() -> list[Method]:
    """Every registered method, in run order (imported on first use)."""
    return list(METHODS.values())


def method_names() -> list[str]:
    return [m.name for m in methods()]


def applicable(kind: str, collective: str, chosen: tuple[str, ...] | None = None) -> list[Method]:
    """The methods of `kind` that make `collective` (a half's name for HALF), restricted to `chosen`."""
    return [m for m in methods() if m.kind == kind and collective in m.collectives
            and (chosen is None or m.name in chosen)]


def parse_methods(text: str, what: str = "--methods") -> tuple[str, ...]:
    """A comma-separated list of registered method names (one line naming the unknown one)."""
    from synth.core.errors import SynthError

    names = tuple(dict.fromkeys(t.strip() for t in text.split(",")))
    known = method_names()
    for name in names:
        if name not in known:
            raise SynthError(f"{what}: unknown synthesis method {name!r} (known: {', '.join(known)})")
    return names
