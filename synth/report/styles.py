"""One look per series, keyed by the series' name, for every figure synth draws (reports and
`synth compare`): "synth paths" is the same colour and line in every report, and so is "ring" in
every collective figure.

A style is a colour (matplotlib's tab10), a line style and a marker; bars use the colour and a hatch
that stands for the line style. The known series are listed by the figures they can share (FIGURES:
a direct network's routings, a fat tree's, each collective's algorithms): no two series that can
share a figure have the same colour and line style, so even markerless step lines tell them apart;
a report's default series (FIRST) differ in colour, and a series beyond ten takes the colour that
the fewest of its figure-mates have; no two series at all have the same colour, line style and
marker.

A name that is not listed (tables given with --lfts NAME=DIR, an algorithm added later) gets a
style picked from its name by a stable hash (crc32, not Python's salted hash), so it too is the
same in every figure; `styles_for` then moves any series that would share a figure's colour and
line style with another to the next free one.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")  # tab10
LINES = ("-", "--", "-.", ":")
HATCHES = {"-": "", "--": "//", "-.": "..", ":": "xx"}  # bars: a hatch per line style
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h")
BOUND_COLOUR = "black"  # the lower bound: never a series colour
BOUND_FILL = "0.86"

# Series that can share a figure, as the reports label them (the router registry's report columns,
# "OpenSM " + engine) and as synth compare labels algorithms, each list in order of
# how often it is drawn (a report's defaults first). TuNA's radices depend on the ranks: "tuna r=K"
# takes the style of its role in the figure (smallest, middle, largest radix), see styles_for.
ENGINES = ("OpenSM minhop", "OpenSM updn", "OpenSM dfsssp", "OpenSM nue", "OpenSM lash", "OpenSM dor",
           "OpenSM ftree", "OpenSM sssp", "OpenSM dnup", "OpenSM torus-2QoS")
FIGURES = {
    "direct network": ("minimal", "valiant", "ugal", "synth paths", "synth layered", *ENGINES[:5], "minimal-random",
                       "dor", "valiant-any", *ENGINES[5:]),
    "fat tree": ("d-mod-k", "s-mod-k", "random", "synth layered", "synth layered, dest.-consistent",
                 "synth exact, dest.-consistent", *ENGINES),
    # The algorithms every network has first: the family-specific ones (Kautz, multitree, 2dfc's do
    # and md) come after, where the ten solid colours are spent.
    "alltoall": ("bruck", "pairwise", "spread-out", "a2a-lin", "a2a-xor", "a2a-opt", "a2a-ghe", "a2a-bgh", "a2a-lat",
                 "tuna (smallest radix)", "tuna (middle radix)", "tuna (largest radix)", "tuna-coalesced",
                 "tuna-staggered", "kautz-c", "kautz-m", "multitree", "do", "md", "df-c"),
    "allreduce": ("ring", "rd-l", "rd-b", "rabenseifner", "swing-b", "swing-l", "bucket", "kautz-c", "kautz-m",
                  "multitree", "do", "md", "df-c"),
    "allgather": ("ring", "bruck", "rd-l", "rd-b", "kautz-c", "kautz-m", "multitree", "do", "md", "df-c"),
    "reduce-scatter": ("ring", "rd-b", "kautz-c", "kautz-m", "multitree", "do", "df-c"),
    "rooted": ("binomial", "kautz-c", "kautz-m", "multitree", "df-c"),
    "p2p": ("single-path", "kautz-mp"),
}


@dataclass(frozen=True)
class Style:
    colour: str
    line: str
    marker: str

    @property
    def hatch(self) -> str:
        return HATCHES[self.line]

    def line_kwargs(self, markers: bool = True) -> dict:
        return {"color": self.colour, "linestyle": self.line, **({"marker": self.marker} if markers else {})}

    def bar_kwargs(self) -> dict:
        # The hatch in a darker edge so that it shows on every colour.
        return {"color": self.colour, "hatch": self.hatch, "edgecolor": "0.15" if self.hatch else self.colour,
                "linewidth": 0.0 if not self.hatch else 0.6}


# A report's default series, styled first: a direct network's routers and the five engines its
# committed reports run, a fat tree's four routers and OpenSM's four fat-tree engines.
FIRST = ("minimal", "valiant", "ugal", "synth paths", "synth layered", *ENGINES[:5],
         "d-mod-k", "s-mod-k", "random", "OpenSM ftree")


def _with_new_routers() -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """FIGURES with every report column of the router registry that FIGURES does not name (a router
    added since) in its networks' figure, and those names: they are styled last, so that adding a
    router moves no other series' style."""
    from synth.routing.registry import ROUTERS, XGFT

    named = {n for names in FIGURES.values() for n in names}
    figures, late = dict(FIGURES), []
    for spec in ROUTERS.specs():
        figure = "fat tree" if spec.networks == XGFT else "direct network"
        for label, _ in spec.report.values():
            if label not in named:
                figures[figure] += (label,)
                late.append(label)
    return figures, late


def _registry() -> dict[str, Style]:
    """Greedy, the defaults first, then in FIGURES' order: each name the first colour and line
    style that no name sharing a figure with it has, of those the one whose colour the fewest such
    names have; then the first marker (from a start that turns with the count) that makes colour,
    line and marker unlike every other name's."""
    figures, late = _with_new_routers()
    partners: dict[str, set[str]] = {}
    for names in figures.values():
        for name in names:
            partners.setdefault(name, set()).update(names)
    out: dict[str, Style] = {}
    for name in dict.fromkeys([*FIRST, *(n for names in FIGURES.values() for n in names), *late]):
        near = [out[n] for n in partners[name] if n in out]
        taken = {(st.colour, st.line) for st in near}
        free = [(c, line) for line in LINES for c in COLOURS if (c, line) not in taken]
        colour, line = min(free, key=lambda pair: sum(st.colour == pair[0] for st in near))  # (ties: the first)
        used = {st.marker for st in out.values() if (st.colour, st.line) == (colour, line)}
        marker = next(m for k in range(len(MARKERS)) if (m := MARKERS[(len(out) + k) % len(MARKERS)]) not in used)
        out[name] = Style(colour, line, marker)
    return out


REGISTRY: dict[str, Style] = _registry()
COMBINATIONS = [Style(c, line, MARKERS[(i + 3 * j) % len(MARKERS)])
                for j, line in enumerate(LINES) for i, c in enumerate(COLOURS)]  # unknown names' styles


def style(name: str) -> Style:
    """The style of one series, by its name; unknown names by a stable hash of the name."""
    known = REGISTRY.get(name)
    if known is not None:
        return known
    return COMBINATIONS[zlib.crc32(name.encode("utf-8")) % len(COMBINATIONS)]


_TUNA = re.compile(r"tuna r=(\d+)")


def styles_for(names: list[str]) -> list[Style]:
    """The styles of the series of one figure, in order: each its registered style, TuNA's radices by
    their role, and a series that would look like an earlier one (two unknown names hashed alike)
    moved to the next colour and line style that the figure does not use yet."""
    radices = sorted({int(m.group(1)) for m in map(_TUNA.fullmatch, names) if m})
    roles = {r: "smallest" if r == radices[0] else "largest" if r == radices[-1] else "middle" for r in radices}
    out, used = [], set()
    for name in names:
        match = _TUNA.fullmatch(name)
        chosen = style(f"tuna ({roles[int(match.group(1))]} radix)") if match else style(name)
        if (chosen.colour, chosen.line) in used:
            start = next(i for i, c in enumerate(COMBINATIONS) if (c.colour, c.line) == (chosen.colour, chosen.line))
            free = [k for k in range(1, len(COMBINATIONS))
                    if (COMBINATIONS[(start + k) % len(COMBINATIONS)].colour,
                        COMBINATIONS[(start + k) % len(COMBINATIONS)].line) not in used]
            if free:  # (a figure of more than 40 series keeps the repeat)
                chosen = COMBINATIONS[(start + free[0]) % len(COMBINATIONS)]
        used.add((chosen.colour, chosen.line))
        out.append(chosen)
    return out
