"""What a node adds to the cost model (issue 40 item 5: synth.pricing.alphabeta.NodeCosts): the
seeds' figures that alpha-beta alone cannot reproduce, priced and simulated with a per-byte copy cost
(the memcpy Pham26 names), and the node-internal link on ranks that share nodes. Prints every ratio
next to the seed's, for tests/bench/RESULTS.md and docs/simulation.md.

    python tests/bench/bench_node_links.py [--model SMPI] [--discipline async] [--only 2dfc|kautz|nodes]

- Fig. 4.13 (Pham26 ch.4): alltoall on the 8 x 8 2dfc, 16 MB per destination, 1 us start-up; MD's time
  over DO's at 100, 200 and 400 Gb/s links: 0.70x, 0.89x, 0.95x; and the 16 x 16 allgather at 4 MB a rank
  (MD 44.5 ms, 6.83x faster than Bruck), which tests/bench/bench_simulate_seeds.py cannot reproduce.
- Pham26 ch.3 (Fig. 3.4): K(16,2) at 12.5 GB/s (100 Gb/s) per link, 32 MB per rank (allgather) or per
  destination (alltoall): Kautz-C about 1.5x slower than Kautz-M (allgather) and 1.1x (alltoall), which
  the thesis puts down to "a memcpy at the end of the communication to re-organize the order of data
  segments in the combined messages ... proportional to the message size".
- The node-internal link: an alltoall of 64 ranks, 4 on each of the 16 nodes of a 4 x 4 2dfc, as the
  internal link goes from unlimited to 400 and 100 Gb/s.

Copy costs: 1e-11 s/B (100 GB/s: a byte a flop of the seeds' 100 Gflops hosts, Table 3.3), the cost that
fits Fig. 4.13 best (least squares over its three ratios), and the cost that makes Kautz-C's allgather
1.5x Kautz-M's. The seeds ran MPI programs (non-blocking isend/irecv per step) on SimGrid 3.28, whose MPI
runs use the SMPI network model: the defaults here.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from synth.app.schedule import make_schedule, plan_schedule
from synth.app.simulate import SimulationOptions, simulate_schedule
from synth.pricing.alphabeta import NodeCosts
from synth.pricing.schedule_cost import map_schedule
from synth.topology import parse_topology

MB = 1 << 20
HOST_COPY = 1e-11  # s/B: 100 GB/s, one byte a flop of the seeds' 100 Gflops hosts (Pham26 Table 3.3)
FIG_413 = {100: 0.70, 200: 0.89, 400: 0.95}


def made(collective, algorithm, spec, message_bytes, ranks_per_node=1, radix=None):
    topology = parse_topology(spec)
    plan = plan_schedule(collective, algorithm, topology, message_bytes=message_bytes, ranks_per_node=ranks_per_node,
                         radix=radix)
    schedule = make_schedule(plan)
    return schedule, topology, map_schedule(schedule, topology)


def model(entry, gbps, node=NodeCosts()):
    return entry[2].time(1e-6, gbps * 1e9, node=node)


def simulated(entry, gbps, options, node=NodeCosts()):
    schedule, topology, _ = entry
    run = SimulationOptions(model=options.model, discipline=options.discipline, bandwidth_bits=gbps * 1e9, node=node)
    return simulate_schedule(schedule, topology, run).simulated_total


def say(text):
    print(text)
    sys.stdout.flush()


def fitted_copy(md, do):
    """The copy cost (s/B) whose MD / DO ratios are nearest Fig. 4.13's three (least squares)."""
    costs = np.logspace(-13, -9, 801)
    errors = [sum((model(md, b, NodeCosts(copy_cost=g)) / model(do, b, NodeCosts(copy_cost=g)) - seed) ** 2
                  for b, seed in FIG_413.items()) for g in costs]
    return float(costs[int(np.argmin(errors))])


def fig_413(options):
    md, do = (made("alltoall", name, "2dfc:8,8", 16 * MB * 64) for name in ("md", "do"))
    copied = [float(e[2].node_terms.copy_bytes.sum()) / (16 * MB) for e in (md, do)]
    say(f"Fig. 4.13: alltoall on the 8 x 8 2dfc, 16 MB per destination; MD / DO (a rank copies {copied[0]:g} and "
        f"{copied[1]:g} blocks of the combined messages it receives)")
    best = fitted_copy(md, do)
    columns = [("alpha-beta", lambda b: model(md, b) / model(do, b)),
               (f"+ copy {HOST_COPY:g} s/B", lambda b: model(md, b, NodeCosts(copy_cost=HOST_COPY))
                / model(do, b, NodeCosts(copy_cost=HOST_COPY))),
               (f"+ copy {best:.3g} s/B (fit)", lambda b: model(md, b, NodeCosts(copy_cost=best))
                / model(do, b, NodeCosts(copy_cost=best))),
               (f"SimGrid {options.model}", lambda b: simulated(md, b, options) / simulated(do, b, options)),
               (f"SimGrid + copy {HOST_COPY:g}", lambda b: simulated(md, b, options, NodeCosts(copy_cost=HOST_COPY))
                / simulated(do, b, options, NodeCosts(copy_cost=HOST_COPY)))]
    say(f"{'link':>9} {'seed':>6} " + " ".join(f"{label:>24}" for label, _ in columns))
    for gbps, seed in FIG_413.items():
        say(f"{gbps:>5} Gb/s {seed:>6.2f} " + " ".join(f"{f(gbps):>23.3f}x" for _, f in columns))


def allgather_16(options):
    """Pham26 ch.4: the 16 x 16 allgather at 4 MB a rank, MD 44.5 ms and 6.83x faster than Bruck, which
    docs/simulation.md found 15 times what MD's bytes take: the memcpy's share."""
    md, bruck = (made("allgather", name, "2dfc:16,16", 4 * MB * 256) for name in ("md", "bruck"))
    say("Pham26 ch.4: allgather on the 16 x 16 2dfc, 4 MB a rank, 100 Gb/s (blocks a rank copies: md "
        f"{float(md[2].node_terms.copy_bytes.sum()) / (4 * MB):g}, bruck {float(bruck[2].node_terms.copy_bytes.sum()) / (4 * MB):g})")
    rows = [("alpha-beta", NodeCosts(), False), (f"+ copy {HOST_COPY:g} s/B", NodeCosts(copy_cost=HOST_COPY), False),
            (f"SimGrid {options.model}", NodeCosts(), True),
            (f"SimGrid + copy {HOST_COPY:g}", NodeCosts(copy_cost=HOST_COPY), True)]
    say(f"{'':>26} {'md ms':>9} {'md over bruck':>14}")
    say(f"{'seed':>26} {44.5:>9.2f} {6.83:>13.2f}x")
    for label, node, simulate in rows:
        time_of = (lambda e: simulated(e, 100, options, node)) if simulate else (lambda e: model(e, 100, node))
        fast, slow = time_of(md), time_of(bruck)
        say(f"{label:>26} {fast * 1e3:>9.2f} {slow / fast:>13.2f}x")


def kautz(options):
    d, ranks = 16, 272
    entries = {(c, a): made(c, a, "kautz:16", 32 * MB * ranks) for c in ("allgather", "alltoall")
               for a in ("kautz-c", "kautz-m")}
    beta = 8 / 100e9
    fit = beta / (2 * (d - 1))  # Kautz-C's allgather copies d^2 - 1 blocks, Kautz-M's none: (d + 1) beta / 2 = that
    say("Pham26 ch.3: K(16,2), 100 Gb/s links, 32 MB per rank / destination; Kautz-C over Kautz-M (blocks a rank "
        "copies: " + ", ".join(f"{c} {a} {float(e[2].node_terms.copy_bytes.sum()) / (32 * MB):g}"
                               for (c, a), e in entries.items()) + ")")
    columns = [("alpha-beta", NodeCosts(), False), (f"+ copy {HOST_COPY:g} s/B", NodeCosts(copy_cost=HOST_COPY), False),
               (f"+ copy {fit:.3g} s/B (fit)", NodeCosts(copy_cost=fit), False),
               (f"SimGrid {options.model}", NodeCosts(), True), (f"SimGrid + copy {fit:.3g}", NodeCosts(copy_cost=fit), True)]
    say(f"{'':>9} {'seed':>6} " + " ".join(f"{label:>24}" for label, _, _ in columns))
    for collective, seed in (("allgather", 1.5), ("alltoall", 1.1)):
        c, m = entries[collective, "kautz-c"], entries[collective, "kautz-m"]
        cells = []
        for _, node, simulate in columns:
            time_of = (lambda e: simulated(e, 100, options, node)) if simulate else (lambda e: model(e, 100, node))
            cells.append(time_of(c) / time_of(m))
        say(f"{collective:>9} {seed:>6.2f} " + " ".join(f"{v:>23.3f}x" for v in cells))


def nodes(options):
    say("node-internal link: alltoall of 64 ranks, 4 a node on the 4 x 4 2dfc, 1 MiB a rank, 100 Gb/s links; us, "
        "alpha-beta / SimGrid CM02 bulk-synchronous")
    cm02 = argparse.Namespace(model="CM02", discipline="bsp")
    algorithms = ("pairwise", "bruck", "spread-out", "tuna-coalesced")  # the last with an intra-node radix of 2
    entries = {a: made("alltoall", a, "2dfc:4,4", MB, ranks_per_node=4, radix=2 if a.startswith("tuna") else None)
               for a in algorithms}
    say(f"{'internal link':>14} " + " ".join(f"{a:>24}" for a in algorithms))
    for gbps in (None, 400, 100, 25):
        node = NodeCosts(intra_bandwidth_bits=None if gbps is None else gbps * 1e9)
        cells = [f"{model(e, 100, node) * 1e6:>10.1f} / {simulated(e, 100, cm02, node) * 1e6:>10.1f}"
                 for e in entries.values()]
        say(f"{'unlimited' if gbps is None else f'{gbps} Gb/s':>14} " + " ".join(f"{c:>24}" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="SMPI")
    parser.add_argument("--discipline", default="async")
    parser.add_argument("--only", choices=["2dfc", "kautz", "nodes"])
    options = parser.parse_args()
    began = time.monotonic()
    say(f"SimGrid {options.model}, {options.discipline}; ratios are the first algorithm's time over the second's")
    for name, part in (("2dfc", fig_413), ("2dfc", allgather_16), ("kautz", kautz), ("nodes", nodes)):
        if options.only in (None, name):
            part(options)
    print(f"({time.monotonic() - began:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
