"""Virtual lanes for the routing benchmark's routes (issue 26): synth's count next to OpenSM's dfsssp on the same
fabric, and each of synth's methods side by side.

    python tests/bench/bench_lanes.py [--time-limit SECONDS]

The routes are bench_paths.py's: every phase of five random permutations and the adversarial pattern (Slim Fly:
the worst case; dragonfly: the group shift), routed by `paths` and, on dragonflies, `layered`; all phases
together get one lane assignment, as a fabric's tables hold them all. Columns: the layered heuristic (DFSSSP's
rule on synth's paths), first fit, what `synth vls` gives (the fewer of the two), the exact model (CP-SAT,
`--exact`: the least number where it proves one, with its time), and dfsssp's count for its own routes of every
pair of LIDs on ibsim (its `lanes needed` before it balances over the VLs it has).
"""

from __future__ import annotations

import argparse
import time


from bench_paths import workloads
from synth.opensm.engines import engine_tables
from synth.routing.dependencies import flatten
from synth.routing.lanes import MAX_VLS, TooManyLanes, exact_lanes, first_fit_lanes, layered_lanes, assign_lanes
from synth.routing.layered_dragonfly import DragonflyLayeredOptions, route_phase_layered
from synth.routing.path_selection import route_phase_paths
from synth.routing.paths_options import PathsOptions
from synth.topology import parse_topology

CASES = (("dragonfly:3,6,3", "paths"), ("dragonfly:3,6,3", "layered"), ("dragonfly:4,8,4", "paths"),
         ("dragonfly:4,8,4", "layered"), ("slimfly:7", "paths"), ("slimfly:13:p=9", "paths"))


def timed(work):
    began = time.perf_counter()
    result = work()
    return result, time.perf_counter() - began


def count(lanes) -> int:
    return int(lanes.max(initial=-1)) + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0, help="CP-SAT's limit per lane count tried")
    args = parser.parse_args()
    print(f"{'network':<18} {'router':<8} {'paths':>7} {'layered':>8} {'first fit':>10} {'synth vls':>10} "
          f"{'exact':>22} {'dfsssp':>7}")
    dfsssp: dict[str, str] = {}
    for spec, router in CASES:
        topology = parse_topology(spec)
        network = topology.network()
        if spec not in dfsssp:
            try:
                dfsssp[spec] = str(engine_tables(network, "dfsssp").lanes).split()[0]
            except Exception as exc:  # (a missing tool: reported, not fatal)
                dfsssp[spec] = f"- ({str(exc).splitlines()[0]})"
        lists = []
        for _, src, dst in workloads(topology, 5):
            route = route_phase_paths if router == "paths" else route_phase_layered
            paths, _ = route(topology, src, dst, PathsOptions() if router == "paths" else DragonflyLayeredOptions())
            lists += paths.as_lists()
        channels, lengths = flatten(lists)
        n = network.num_channels
        try:
            layered, t_layered = timed(lambda: count(layered_lanes(channels, lengths, n, MAX_VLS)))
        except TooManyLanes:
            layered, t_layered = f">{MAX_VLS}", 0.0
        fitted, t_fitted = timed(lambda: count(first_fit_lanes(channels, lengths, n, MAX_VLS)))
        chosen, t_chosen = timed(lambda: count(assign_lanes(channels, lengths, n, MAX_VLS)))
        (exact, proven), t_exact = timed(lambda: exact_lanes(channels, lengths, n, MAX_VLS, args.time_limit))
        exact_text = f"{count(exact)} {'proven' if proven else 'bound'} {t_exact:.0f}s"
        print(f"{spec:<18} {router:<8} {len(lengths):>7,} {layered:>3} {t_layered:>3.0f}s {fitted:>4} {t_fitted:>4.1f}s "
              f"{chosen:>4} {t_chosen:>4.0f}s {exact_text:>22} {dfsssp[spec]:>7}", flush=True)


if __name__ == "__main__":
    main()
