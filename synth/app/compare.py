"""`synth compare COLLECTIVE --network SPEC [--bytes 32B..512MiB] [--out FIGURE.png]`: every algorithm
that generates the collective on the network, priced over message sizes by the alpha-beta model
on routed schedules, with the best per size and the sizes where the best changes (crossovers).

Every applicable schedule is generated, verified and routed once, with blocks of REFERENCE_BYTES;
at a message size n its blocks are n / blocks bytes (rounded up), so its cost is steps x alpha +
beta x (the busiest channels' bytes scaled by that ratio), plus TuNA's size exchanges (8 bytes per
block, not scaled). Ranges `A..B` step by powers of two; a list `A,B,C` is taken as given.
TuNA is compared at radix 2, ceil(sqrt(P)) and P - 1.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.core.output import OutputSet
from synth.core.validate import parse_positive_number, show
from synth.cost.alphabeta import DEFAULT_ALPHA, DEFAULT_BANDWIDTH, beta_of
from synth.cost.schedule_cost import MappedSchedule, map_schedule
from synth.schedule.algorithms import ALGORITHMS, Request, grid_shape, load_all
from synth.schedule.schedule import collective
from synth.schedule.verify import expected_blocks, verify
from synth.topology import parse_topology

REFERENCE_BYTES = 1 << 20
UNITS = {"B": 1, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}
MAX_SIZES = 64
MAX_SIZE = 1 << 40


def add_parser(sub) -> None:
    p = sub.add_parser("compare", help="price every algorithm of a collective on a network over message sizes")
    p.add_argument("collective", metavar="COLLECTIVE")
    p.add_argument("--network", metavar="SPEC", required=True)
    p.add_argument("--bytes", default="32B..512MiB", metavar="RANGE",
                   help="message sizes: A..B (powers of two) or A,B,... with units B, KiB, MiB, GiB, TiB (default 32B..512MiB)")
    p.add_argument("--router", default="minimal", metavar="NAME", help="routes the transfers take (default minimal)")
    p.add_argument("--alpha", type=lambda t: parse_positive_number(t, "--alpha", 1.0), default=DEFAULT_ALPHA, metavar="S")
    p.add_argument("--bandwidth", type=lambda t: parse_positive_number(t, "--bandwidth", 1e6), default=DEFAULT_BANDWIDTH / 1e9,
                   metavar="GBPS")
    p.add_argument("--out", metavar="FIGURE.png", help="the figure: time over message size, a line per algorithm")
    p.set_defaults(func=cmd_compare)


def parse_size(text: str) -> int:
    match = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).upper() if match else None
    if not match or unit not in UNITS and unit != "":
        raise SynthError(f"message size {show(text)}: expected a number with a unit B, KiB, MiB, GiB or TiB")
    value = int(match.group(1)) * UNITS.get(unit or "B")
    if not 1 <= value <= MAX_SIZE:
        raise SynthError(f"message size {show(text)} must be between 1 B and 1 TiB")
    return value


def parse_sizes(text: str) -> list[int]:
    if ".." in text:
        low, high = (parse_size(t) for t in text.split("..", 1))
        if high < low:
            raise SynthError(f"--bytes {show(text)} runs backwards")
        sizes = [low << k for k in range(0, 64) if low << k <= high]
        if len(sizes) > MAX_SIZES:
            raise SynthError(f"--bytes {show(text)} gives {len(sizes)} sizes, more than {MAX_SIZES}")
    else:
        sizes = [parse_size(t) for t in text.split(",")]
    if len(sizes) > MAX_SIZES:
        raise SynthError(f"--bytes {show(text)} gives {len(sizes)} sizes, more than {MAX_SIZES}")
    return sizes


@dataclass
class Candidate:
    label: str
    blocks: int  # blocks a message is split into
    mapped: MappedSchedule

    def time(self, size: int, alpha: float, beta: float) -> float:
        scale = math.ceil(size / self.blocks) / REFERENCE_BYTES
        m = self.mapped
        return (m.steps + m.size_exchanges) * alpha + beta * (float(m.channel_bytes.sum()) * scale + float(m.size_bytes.sum()))


def candidates(name: str, topology, router: str) -> tuple[list[Candidate], list[str]]:
    """Every applicable algorithm's schedule, routed; and one line per algorithm left out."""
    load_all()
    info = collective(name)
    if info.rooted or name == "alltoallv":
        raise SynthError(f"synth compare prices the unrooted collectives with equal blocks, not {name}")
    ranks = topology.network().num_terminals
    dims = grid_shape(topology)
    out, skipped = [], []
    for algorithm_name, algorithm in ALGORITHMS.items():
        if name not in algorithm.collectives:
            continue
        radices = [2, math.ceil(math.sqrt(ranks)), max(2, ranks - 1)] if algorithm_name == "tuna" else [None]
        for radix in dict.fromkeys(radices):
            blocks = expected_blocks(name, ranks)
            natural = Request(name, ranks, ranks, REFERENCE_BYTES, topology.spec, 0, dims, radix)
            if blocks is None:
                blocks = algorithm.default_blocks(natural) if algorithm.default_blocks is not None else ranks
            request = Request(name, ranks, blocks, REFERENCE_BYTES, topology.spec, 0, dims, radix)
            refusal = algorithm.refusal(request)
            label = algorithm_name if radix is None else f"{algorithm_name} r={radix}"
            if refusal is not None:
                skipped.append(f"{label}: {refusal}")
                continue
            schedule = algorithm.generate(request)
            report = verify(schedule)
            if not report.ok:
                raise AssertionError(f"{label} generated a wrong schedule: {report.violation}")
            split = ranks if info.blocks == "P^2" else blocks
            out.append(Candidate(label, split, map_schedule(schedule, topology, router)))
    return out, skipped


def cmd_compare(args) -> int:
    topology = parse_topology(args.network)
    sizes = parse_sizes(args.bytes)
    with OutputSet() as outputs:
        target = outputs.reserve(args.out) if args.out is not None else None
        found, skipped = candidates(args.collective, topology, args.router)
        if not found:
            raise SynthError(f"no algorithm generates {args.collective} on {topology.spec}: " + "; ".join(skipped))
        beta = beta_of(args.bandwidth * 1e9)
        times = np.array([[c.time(n, args.alpha, beta) for c in found] for n in sizes])
        best = times.argmin(axis=1)
        print(f"network   {topology.label()}: {topology.network().num_terminals} ranks; {args.router} routes; "
              f"alpha {args.alpha * 1e6:g} us, {args.bandwidth:g} Gb/s")
        width = max(10, *(len(c.label) for c in found))
        print(f"{'bytes':>10}  " + "  ".join(f"{c.label:>{width}}" for c in found) + "  best")
        for i, n in enumerate(sizes):
            print(f"{size_text(n):>10}  " + "  ".join(f"{t * 1e6:>{width}.4g}" for t in times[i]) + f"  {found[best[i]].label}")
        print("times in us (alpha-beta on the routed schedules)")
        changes = [(sizes[i], found[best[i - 1]].label, found[best[i]].label) for i in range(1, len(sizes)) if best[i] != best[i - 1]]
        print("crossovers: " + ("; ".join(f"{a} -> {b} at {size_text(n)}" for n, a, b in changes) if changes else "none: "
                                f"{found[best[0]].label} is best at every size"))
        for line in skipped:
            print(f"left out  {line}")
        if target is not None:
            from synth.report.plots import png

            target.write(png(compare_figure(args.collective, topology.label(), sizes, found, times)))
            print(f"wrote {args.out}")
    return 0


def size_text(n: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor and n % factor == 0:
            return f"{n // factor}{unit}"
    return f"{n}B"


def compare_figure(name: str, label: str, sizes: list[int], found: list[Candidate], times: np.ndarray):
    from synth.report.plots import plt

    figure, axes = plt.subplots(figsize=(8, 4.5), dpi=100)
    for j, c in enumerate(found):
        axes.plot(sizes, times[:, j] * 1e6, marker="o", markersize=3, linewidth=1.2, label=c.label)
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xlabel("message size (bytes)")
    axes.set_ylabel("alpha-beta time (us)")
    axes.set_title(f"{name} on {label}", fontsize="medium")
    axes.legend(fontsize="small", loc="upper left")
    figure.tight_layout()
    return figure
