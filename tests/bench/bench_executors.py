"""Benchmark: the Dask executor against the local process pool, and what a whole 8192-leaf exchange would take.

    python tests/bench/bench_executors.py [--workers 2] [--overhead-specs 64,128] [--noop-tasks 200]
                                          [--scaling-spec 1024] [--scaling-phases 16]
                                          [--phase-seconds-8192 17.2] [--slowest-seconds-8192 18.1]
                                          [--measure-8192] [--project-workers 32,256] [--dask-address ADDR]
                                          [--skip overhead,scaling,client]

Everything runs in this process through synth's Python API, as `synth route SPEC --router layered --out FILE
--executor WHERE` runs it: synth.workflow.route_phases (routes kept) on synth.execute.LocalExecutor(W) or
synth.execute.dask_cluster.DaskExecutor, every phase turned into its routes file record (synth.app.route.phase_record)
and written by synth.io.routes_file.RoutesWriter to /dev/null. Four parts, side by side with the local pool
measured in the same run:

1. overhead: every OPT phase of small Table 3.1 XGFTs (one phase per task, phases of 0.01-0.1 s, where the cost
   of a task shows), inline (LocalExecutor(1): no workers), the local pool of W forked workers and a local Dask
   cluster of W workers (started once; its start-up and a warm-up session are reported apart and not counted).
   Dask overhead per phase = (T_dask - T_local) * W / phases: the worker-seconds a phase costs more on Dask
   (what stretches every round of W phases); (T_dask - T_local) / phases is the same excess if it were all
   serial. A run of empty tasks through the same sessions (synth.execute.ordered) gives each executor's
   round-trip cost per task with nothing to compute.
2. scaling: N phases spread over the exchange of --scaling-spec (default the 1024-leaf one): local 1 worker
   (inline), local 2, Dask 1 worker (a LocalCluster of one worker, joined by address), Dask 2; speedups over
   local 1. The results of all four are checked to be the same.
3. client: the serial part on the client per phase, measured on the routed phases of part 2: unpickling a
   result of the size a worker sends (what the client thread does as it receives it), building the record,
   writing it (JSON, one path per line) to /dev/null.
4. projection: the whole 8192-phase exchange of the 8192-leaf tree on --project-workers workers, from the
   per-phase solve time (17.2 s median, 18.1 s max in tests/bench/RESULTS.md, or one phase measured with
   --measure-8192), the Dask overhead of part 1 and the client cost of part 3 scaled by flows per phase
   (8192 against the scaling spec's). Wall >= the largest of: rounds = ceil(8192 / W) * (phase + overhead);
   client = 8192 * (client cost + serial Dask cost per task, from the empty tasks); the slowest single phase.

`--executor dask` needs the cluster extra (pip install 'synth[cluster]'). Quick run:
    python tests/bench/bench_executors.py --overhead-specs 16,32 --scaling-spec 128 --scaling-phases 4
"""

from __future__ import annotations

import argparse
import io
import logging
import math
import os
import pickle
import signal
import statistics
import time
import warnings
from contextlib import closing, contextmanager

import numpy as np

from synth.app.route import phase_record
from synth.execute import LocalExecutor
from synth.execute.ordered import Part, ordered_results
from synth.io.instance import resolve
from synth.render import console
from synth.io.routes_file import RoutesWriter, routes_header
from synth.routing.xgft_layers import LayeredOptions
from synth.topology import parse_topology
from synth.traffic.patterns import parse_pattern
from synth.routing.registry import make_router
from synth.workflow import route_phases

INSTANCES = "instances/table3.1/xgft{}.toml"
# A scheduler started with dashboard_address=None still serves its HTTP routes on port 8787 (Dask's
# default); a second cluster in this process moves to another port and says so: not this benchmark's news.
warnings.filterwarnings("ignore", message=r"Port \d+ is already in use", category=UserWarning)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Case:
    """One instance: network, OPT workload, the layered router, a routes file header."""

    def __init__(self, size: str):
        path = size if size.endswith(".toml") or size.startswith("xgft:") else os.path.join(ROOT, INSTANCES.format(size))
        instance = resolve(path)
        self.name = instance.name
        self.topology = parse_topology(instance.spec)
        self.network = self.topology.network()
        traffic = instance.traffic or {}
        self.workload = parse_pattern(traffic.get("pattern", "a2a-opt"), self.network.num_terminals,
                                      self.topology.hierarchy(), traffic.get("bytes", 4096), topology=self.topology)
        self.options = LayeredOptions()
        self.router = make_router("layered", self.topology)
        self.header = routes_header(self.topology, self.workload, "bench", "layered", 0, synthesis=self.options.describe())

    def sample(self, count: int | None) -> np.ndarray:
        """All phases (count None), or `count` spread over the exchange (phase 0, a rank to itself, left out)."""
        total = self.workload.num_phases
        if count is None or count >= total:
            return np.arange(total)
        return np.unique(np.linspace(1, total - 1, count).astype(np.int64))


class Run:
    def __init__(self, label: str, workers: int, phases: int, wall: float, client: float, contention: list[int],
                 routed: list | None = None):
        self.label, self.workers, self.phases, self.wall, self.client = label, workers, phases, wall, client
        self.contention, self.routed = contention, routed

    @property
    def per_phase(self) -> float:
        return self.wall / self.phases


def route_run(case: Case, phases: np.ndarray, executor, label: str, workers: int, keep: bool = False) -> Run:
    """Route `phases` on `executor` as `synth route --out` does; the client loop's own time apart."""
    contention, evaluations, kept, client = [], [], [], 0.0
    with open(os.devnull, "w") as handle:
        start = time.perf_counter()
        writer = RoutesWriter(handle, case.header)
        routed = route_phases(case.topology, case.network, case.workload, phases, case.router, seed=0,
                              keep_routes=True, executor=executor)
        with closing(routed):
            for phase in routed:
                t0 = time.perf_counter()
                writer.add_phase(phase_record(case.topology, phase))
                client += time.perf_counter() - t0
                evaluations.append(phase.evaluation)
                contention.append(int(phase.evaluation.max_contention))
                if keep:
                    kept.append(phase)
        writer.close(console.summary(evaluations))
        wall = time.perf_counter() - start
    return Run(label, workers, len(phases), wall, client, contention, kept if keep else None)


def _nothing(item):
    return item


def noop_run(executor, tasks: int) -> float:
    """Seconds per empty task through the executor's session, in order, with synth's window."""
    parts = [Part(i, i + 1, np.array([i])) for i in range(tasks)]
    start = time.perf_counter()
    for _ in ordered_results(executor, _nothing, parts):
        pass
    return (time.perf_counter() - start) / tasks


@contextmanager
def dask_executor(workers: int, address: str | None):
    """A DaskExecutor: on --dask-address, else `--executor dask` itself when W is this machine's core
    count, else one it joins on a LocalCluster of W workers started here. Yields (executor, start-up s)."""
    from synth.core.parallel import default_workers
    from synth.execute.dask_cluster import DaskExecutor

    cluster = None
    start = time.perf_counter()
    try:
        if address is not None:
            executor = DaskExecutor(address)
        elif workers == default_workers():
            executor = DaskExecutor(None)
        else:
            import distributed

            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as DaskExecutor starts its own
            try:
                cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                   host="127.0.0.1", dashboard_address=None, silence_logs=logging.ERROR)
            finally:
                signal.signal(signal.SIGINT, previous)
            executor = DaskExecutor(cluster.scheduler_address)
        with executor:
            executor.start()
            yield executor, time.perf_counter() - start
    finally:
        if cluster is not None:
            cluster.close()


_WARM: list[Case] = []


def warm_up(executor, workers: int) -> float:
    """A first session (synth and OR-Tools imported on fresh Dask workers): its seconds, not counted.
    It routes a few phases of the 16-leaf tree, one or two per worker."""
    if not _WARM:
        _WARM.append(Case("16"))
    case = _WARM[0]
    start = time.perf_counter()
    route_run(case, case.sample(2 * workers), executor, "warm-up", workers)
    return time.perf_counter() - start


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"


# ----- 1. overhead ----------------------------------------------------------------------------------

def part_overhead(args, dask) -> tuple[list[dict], dict]:
    w = args.workers
    rows, noop = [], {}
    executor, startup, warm = dask
    print(f"\n1. Overhead per phase, layered router, every OPT phase, one phase per task ({w} workers; Dask start-up "
          f"{startup:.2f} s and warm-up session {warm:.2f} s not counted)")
    cases = [Case(s) for s in args.overhead_specs.split(",") if s]
    for case in cases:
        phases = case.sample(None)
        inline = route_run(case, phases, LocalExecutor(1), "inline", 1)
        local = route_run(case, phases, LocalExecutor(w), f"local {w}", w)
        on_dask = route_run(case, phases, executor, f"dask {w}", w)
        same = inline.contention == local.contention == on_dask.contention
        excess = on_dask.wall - local.wall
        rows.append({"case": case.name, "phases": len(phases), "inline": inline.per_phase, "local": local.per_phase,
                     "dask": on_dask.per_phase, "overhead": excess * w / len(phases), "serial": excess / len(phases),
                     "client": on_dask.client / len(phases), "same": same})
    print(f"{'instance':<20} {'phases':>6} {'inline ms':>10} {f'local{w} ms':>9} {f'dask{w} ms':>9} {'local x':>8} "
          f"{'dask x':>7} {'overhead ms':>12} {'excess/phase':>13} {'client ms':>10} {'same':>5}")
    for r in rows:
        print(f"{r['case']:<20} {r['phases']:>6} {ms(r['inline']):>10} {ms(r['local']):>9} {ms(r['dask']):>9} "
              f"{r['inline'] / r['local']:>7.2f}x {r['inline'] / r['dask']:>6.2f}x {ms(r['overhead']):>12} "
              f"{ms(r['serial']):>13} {ms(r['client']):>10} {'yes' if r['same'] else 'NO':>5}")
    print("  (ms per phase of wall time; x = speedup over inline; overhead = (T_dask - T_local) * W / phases, the "
          "worker time a phase costs more on Dask; excess/phase = (T_dask - T_local) / phases; client = record + write "
          "in the client loop)")
    if args.noop_tasks:
        noop = {"inline": noop_run(LocalExecutor(1), args.noop_tasks),
                f"local {w}": noop_run(LocalExecutor(w), args.noop_tasks),
                f"dask {w}": noop_run(executor, args.noop_tasks)}
        shown = ", ".join(f"{k} {ms(v)} ms" for k, v in noop.items())
        print(f"  empty tasks ({args.noop_tasks}, in order, synth's window of {2 * w}): {shown} per task (wall / tasks, "
              "session start included)")
    return rows, noop


# ----- 2. scaling -----------------------------------------------------------------------------------

def part_scaling(args, dask) -> tuple[Case | None, list[Run]]:
    case = Case(args.scaling_spec)
    phases = case.sample(args.scaling_phases)
    shared, _, _ = dask
    print(f"\n2. Scaling, {case.name}: {len(phases)} of {case.workload.num_phases} OPT phases "
          f"({phases[0]}..{phases[-1]}), layered router, routes kept and written")
    runs = [route_run(case, phases, LocalExecutor(1), "local 1 (inline)", 1),
            route_run(case, phases, LocalExecutor(2), "local 2", 2, keep=True)]
    if args.dask_address is not None:  # the joined cluster only, at its own size
        runs.append(route_run(case, phases, shared, f"dask {shared.capacity()}", shared.capacity()))
    for n in (1, 2) if args.dask_address is None else ():
        if shared.capacity() == n:
            runs.append(route_run(case, phases, shared, f"dask {n}", n))
            continue
        with dask_executor(n, None) as (executor, startup):
            warm = warm_up(executor, n)
            runs.append(route_run(case, phases, executor, f"dask {n}", n))
        print(f"  (dask {n}: a LocalCluster of its own, start-up {startup:.2f} s, warm-up session {warm:.2f} s, not counted)")
    base = runs[0]
    print(f"{'executor':<18} {'workers':>7} {'wall s':>8} {'s/phase':>8} {'speedup':>8} {'efficiency':>10} "
          f"{'client ms/phase':>16} {'same':>5}")
    for r in runs:
        speedup = base.wall / r.wall
        print(f"{r.label:<18} {r.workers:>7} {r.wall:>8.2f} {r.per_phase:>8.3f} {speedup:>7.2f}x "
              f"{speedup / r.workers:>9.0%} {ms(r.client / r.phases):>16} "
              f"{'yes' if r.contention == base.contention else 'NO':>5}")
    return case, runs


# ----- 3. client ------------------------------------------------------------------------------------

def client_costs(case: Case, routed: list) -> dict:
    """Per phase: unpickle a result as large as a worker's, build the record, write it to /dev/null."""
    receive, record, write, written = [], [], [], []
    with open(os.devnull, "w") as handle:
        writer = RoutesWriter(handle, case.header)
        for phase in routed:
            f = phase.flows
            evaluation, report = phase.evaluation, phase.report
            payload = pickle.dumps([([evaluation], {evaluation.phase: report},
                                     (np.zeros(len(f.src), np.int64), f.src, f.dst, f.bytes, phase.choice))], protocol=5)
            t0 = time.perf_counter()
            pickle.loads(payload)
            t1 = time.perf_counter()
            rec = phase_record(case.topology, phase)
            t2 = time.perf_counter()
            writer.add_phase(rec)
            t3 = time.perf_counter()
            receive.append(t1 - t0)
            record.append(t2 - t1)
            write.append(t3 - t2)
            written.append(record_bytes(case.header, rec))
    total = [a + b + c for a, b, c in zip(receive, record, write)]
    return {"flows": statistics.mean(len(p.flows.src) for p in routed), "receive": statistics.mean(receive),
            "record": statistics.mean(record), "write": statistics.mean(write), "total": statistics.mean(total),
            "max": max(total), "bytes": statistics.mean(written), "pickle": len(payload)}


def record_bytes(header: dict, record: dict) -> int:
    """The characters one record adds to a routes file."""
    buffer = io.StringIO()
    writer = RoutesWriter(buffer, header)
    before = buffer.tell()
    writer.add_phase(record)
    return buffer.tell() - before


def part_client(case: Case, runs: list[Run]) -> dict:
    routed = next(r.routed for r in runs if r.routed)
    costs = client_costs(case, routed)
    print(f"\n3. Client cost per phase, {case.name} ({len(routed)} routed phases, {costs['flows']:.0f} flows each, "
          f"result pickle {costs['pickle'] / 1024:.0f} KiB, record {costs['bytes'] / 1024:.0f} KiB of JSON)")
    print(f"{'step':<44} {'ms/phase':>9}")
    for key, text in (("receive", "receive (unpickle a result of that size)"), ("record", "record (phase_record)"),
                      ("write", "write (RoutesWriter.add_phase, /dev/null)"), ("total", "total (mean)"),
                      ("max", "total (slowest phase)")):
        print(f"{text:<44} {ms(costs[key]):>9}")
    return costs


# ----- 4. projection --------------------------------------------------------------------------------

def part_projection(args, overhead_rows, noop, scaling_case, client) -> None:
    phases = 8192
    flows_8192 = 8192
    phase_s, slowest_s, source = args.phase_seconds_8192, args.slowest_seconds_8192, "tests/bench/RESULTS.md"
    client_8192 = None
    if args.measure_8192:
        case = Case(args.measure_spec)
        one = case.sample(3)[1:2]  # the middle of the exchange
        start = time.perf_counter()
        run = route_run(case, one, LocalExecutor(1), "inline", 1, keep=True)
        phase_s = slowest_s = time.perf_counter() - start - run.client
        # One phase is one sample: the first pass over it pays cold allocations (measured 2-3x the next ones).
        client_8192 = statistics.median(client_costs(case, run.routed)["total"] for _ in range(5))
        source = f"measured on {case.name}, phase {int(one[0])}, which is also taken as the slowest"
    overhead = max([0.0] + [r["overhead"] for r in overhead_rows])
    serial = noop.get(next((k for k in noop if k.startswith("dask")), ""), 0.0)
    scaled = None
    if client is not None:
        scale = flows_8192 / client["flows"]
        scaled = client["total"] * scale, f"{ms(client['total'])} ms x {scale:.0f} (flows per phase)"
    if client_8192 is not None:
        client_s, how = client_8192, "measured on that phase, median of 5 passes"
        if scaled is not None:
            how += f"; scaled from part 3: {ms(scaled[0])} ms"
    elif scaled is not None:
        client_s, how = scaled
    else:
        client_s, how = 0.0, "not measured"
    print("\n4. Projection: the whole 8192-phase exchange of table3.1-xgft8192, layered, routes written, on Dask")
    measured = "largest of part 1" if overhead_rows else "part 1 skipped: 0"
    print(f"  phase {phase_s:.2f} s, slowest {slowest_s:.2f} s ({source}); Dask overhead {ms(overhead)} ms per phase "
          f"({measured}); client {ms(client_s)} ms per phase ({how}); serial Dask cost {ms(serial)} ms per task "
          f"({'empty tasks' if noop else 'not measured: 0'})")
    print(f"{'workers':>7} {'rounds':>7} {'rounds bound s':>15} {'client bound s':>15} {'slowest s':>10} "
          f"{'projected':>20}  {'limited by':<12}")
    for w in [int(v) for v in args.project_workers.split(",") if v]:
        rounds = math.ceil(phases / w)
        bounds = {"rounds": rounds * (phase_s + overhead), "client": phases * (client_s + serial), "slowest phase": slowest_s}
        limit = max(bounds, key=bounds.get)
        projected = bounds[limit]
        print(f"{w:>7} {rounds:>7} {bounds['rounds']:>15.0f} {bounds['client']:>15.1f} {slowest_s:>10.1f} "
              f"{f'{projected:.0f} s ({projected / 3600:.2f} h)':>20}  {limit:<12}")
    print("  (rounds = ceil(8192 / W) * (phase + overhead); client = 8192 * (client + serial Dask cost); cluster "
          "start-up not included; the client bound is where more workers stop helping: "
          f"W > {phases * (phase_s + overhead) / max(1e-9, phases * (client_s + serial)):.0f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="workers of the local pool and Dask in part 1 (default 2)")
    parser.add_argument("--overhead-specs", default="64,128", help="Table 3.1 sizes (or .toml files) routed whole in part 1")
    parser.add_argument("--noop-tasks", type=int, default=200, help="empty tasks per executor in part 1 (0: none)")
    parser.add_argument("--scaling-spec", default="1024", help="Table 3.1 size (or .toml file) of part 2 (default 1024)")
    parser.add_argument("--scaling-phases", type=int, default=16, help="phases of part 2, spread over the exchange")
    parser.add_argument("--phase-seconds-8192", type=float, default=17.2, help="solve seconds per 8192-leaf phase")
    parser.add_argument("--slowest-seconds-8192", type=float, default=18.1, help="the slowest 8192-leaf phase, seconds")
    parser.add_argument("--measure-8192", action="store_true", help="measure one 8192-leaf phase instead (about 17 s)")
    parser.add_argument("--measure-spec", default="8192", help=argparse.SUPPRESS)  # to try --measure-8192 quickly
    parser.add_argument("--project-workers", default="32,256")
    parser.add_argument("--dask-address", help="join this Dask scheduler instead of starting clusters here")
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: overhead, scaling, client")
    args = parser.parse_args()
    skip = set(args.skip.split(","))

    where = f"cluster at {args.dask_address}" if args.dask_address else "LocalCluster on 127.0.0.1, 1 thread per worker"
    print(f"layered router, routes kept and written to /dev/null; {os.cpu_count()} cores; "
          f"local pool = forked processes, dask = {where}")
    overhead_rows, noop, scaling_case, runs, client = [], {}, None, [], None
    workers = args.workers
    inline_warm = warm_up(LocalExecutor(1), 1)  # this process: synth's kernels and OR-Tools loaded before timing
    with dask_executor(workers, args.dask_address) as (executor, startup):
        if args.dask_address is not None:
            workers = args.workers = executor.capacity()
        warm = warm_up(executor, workers)
        print(f"dask cluster of {executor.capacity()} workers: start-up {startup:.2f} s (client connected, workers up), "
              f"first session {warm:.2f} s (warm-up; inline in this process {inline_warm:.2f} s)")
        dask = (executor, startup, warm)
        if "overhead" not in skip:
            overhead_rows, noop = part_overhead(args, dask)
        if "scaling" not in skip:
            scaling_case, runs = part_scaling(args, dask)
    if "client" not in skip and runs:
        client = part_client(scaling_case, runs)
    part_projection(args, overhead_rows, noop, scaling_case, client)


if __name__ == "__main__":
    main()
