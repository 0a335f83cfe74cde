"""`synth simulate SCHEDULE.json|ROUTES.json`: a schedule's steps, or a routes file's phases, replayed
on SimGrid (synth.simulation) along synth's own paths, next to what synth's cost model makes of them.

- A schedule: every transfer takes the path that prices it (`--router`, a routes file's, or by default
  the paths the file records (a synthesized schedule's: those its recorded cost was computed on),
  else the family's router's: synth.pricing.schedule_cost.transfer_paths). Each
  step is a row; a step preceded by a size exchange (TuNA) has that exchange as a row of its own
  (8 bytes per block, on the same paths). The model's row is synth's alpha-beta step
  (synth.pricing.alphabeta).
- A routes file: every phase is a row, its flows concurrent transfers of their bytes along the
  file's paths; the model's row is the alpha-beta time of the phase (alpha x the most messages one
  port starts + beta x the busiest channel's bytes over its bandwidth: the contention model with
  the flows' own bytes).

Disciplines: bulk-synchronous (`bsp`: a row starts when the previous one has ended everywhere, as
the model assumes: a row's simulated time is its own) and asynchronous (`async`: a rank sends its
step-s messages once it has received every message of its earlier steps; rows overlap, so what is
compared is when each row's last transfer ends).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from synth.core.errors import SynthError
from synth.pricing.bounds import schedule_bound
from synth.pricing.alphabeta import (DEFAULT_ALPHA, DEFAULT_BANDWIDTH, FREE, NodeCosts, message_ports, most_per_port,
                                     step_times)
from synth.pricing.schedule_cost import SIZE_BYTES, busiest_channels, map_schedule, recorded_paths, transfer_paths
from synth.simulation.merge import mergeable, plan_merge
from synth.simulation.platform import build_platform
from synth.simulation.runner import DISCIPLINES, MODELS, Settings, run
from synth.topology.paths import Paths

FORMAT = "synth-simulation/1"
MIN_BANDWIDTH = 1e6  # bits per second: SimGrid 3.32 aborts ("The Impossible Did Happen") at 1 b/s, runs at 10 b/s


@dataclass(frozen=True)
class SimulationOptions:
    model: str = "LV08"
    discipline: str = "bsp"
    alpha: float = DEFAULT_ALPHA  # the cost model's message start (seconds)
    bandwidth_bits: float = DEFAULT_BANDWIDTH  # a link of bandwidth 1, bits per second (model and platform)
    latency: float | None = None  # SimGrid's latency of a route's first link (seconds); None: alpha
    hop_latency: float = 0.0  # added per link between routers
    overhead: float = 0.0  # seconds a rank spends on each message it sends
    engine: str = ""  # synth.simulation.runner.Settings.engine
    node: NodeCosts = FREE  # a node's internal link and copy cost, in the model and on the platform
    merge: bool = True  # a step's identical transfers as one flow, where that is exact (synth.simulation.merge)

    def __post_init__(self) -> None:
        for option, bits in (("--bandwidth", self.bandwidth_bits), ("--intra-bandwidth", self.node.intra_bandwidth_bits)):
            if bits is not None and bits < MIN_BANDWIDTH:
                raise SynthError(f"a simulation takes links of at least {MIN_BANDWIDTH / 1e9:g} Gb/s ({option}), not "
                                 f"{bits / 1e9:.3g}: SimGrid's solver fails on slower links")
        if self.model not in MODELS:
            raise SynthError(f"unknown network model '{self.model}' (known: {', '.join(MODELS)})")
        if self.discipline not in DISCIPLINES:
            raise SynthError(f"unknown discipline '{self.discipline}' (known: {', '.join(DISCIPLINES)})")

    @property
    def route_latency(self) -> float:
        return self.alpha if self.latency is None else self.latency

    def settings(self) -> Settings:
        return Settings(model=self.model, discipline=self.discipline, overhead=self.overhead, engine=self.engine)

    def describe(self) -> dict:
        return {"model": self.model, "discipline": self.discipline, "latency_s": self.route_latency,
                "hop_latency_s": self.hop_latency, "bandwidth_gbps": self.bandwidth_bits / 1e9,
                "overhead_s": self.overhead, "alpha_s": self.alpha,
                **({"intra_latency_s": self.node.intra_latency} if self.node.intra_latency is not None else {}),
                **({"intra_bandwidth_gbps": self.node.intra_bandwidth_bits / 1e9}
                   if self.node.intra_bandwidth_bits is not None else {}),
                **({"copy_cost_s_per_byte": self.node.copy_cost} if self.node.copy_cost else {})}


@dataclass
class Simulation:
    """A simulated run: per row (a step, a size exchange or a phase) its transfers, bytes, the model's
    time and the simulation's, and when its last transfer ended."""

    kind: str  # "schedule" or "routes"
    source: dict  # what was simulated: collective, algorithm, network, ranks, router ...
    options: SimulationOptions
    labels: list[str]  # per row: "step 3", "sizes 3", "phase 7"
    transfers: np.ndarray  # per row
    bytes: np.ndarray  # per row, bytes over the network
    model: np.ndarray  # per row, seconds (the alpha-beta step or phase)
    simulated: np.ndarray  # per row, seconds: bsp, the row's own time; async, its end minus the latest end before it
    ends: np.ndarray  # per row, when its last transfer ended (seconds from the start)
    platform: dict = field(default_factory=dict)
    peak_bytes: int = 0  # SimGrid's worker process at most (measured, so never written: it varies between runs)
    # a schedule's: seconds no schedule of its blocks takes under the cost model (synth.pricing.bounds.schedule_bound)
    bound: float | None = None

    @property
    def model_total(self) -> float:
        return float(self.model.sum())

    @property
    def simulated_total(self) -> float:
        return float(self.ends.max(initial=0.0))


def simulate_schedule(schedule, topology, options: SimulationOptions, router: str | None = None, seed: int = 0,
                      routes: dict | None = None, progress=None) -> Simulation:
    """Simulate a schedule on its network (rank r on terminal r // Q)."""
    network = topology.network()
    _check_planned(network, schedule.num_transfers, schedule.ranks, options)  # before the paths and the platform
    paths = transfer_paths(schedule, topology, router, seed, routes)
    mapped = map_schedule(schedule, topology, router, seed, routes, paths=paths)
    size = schedule.transfer_bytes()
    step = schedule.transfer_step()
    q = schedule.ranks_per_node
    across = (schedule.src // q) != (schedule.dst // q)
    exchanged = set() if schedule.size_exchange is None else {int(s) for s in schedule.size_exchange}
    # rows: a size exchange before its step where there is one
    row_of_step, labels, model = [], [], []
    steps_model = mapped.step_seconds(options.alpha, options.bandwidth_bits, node=options.node)
    sizes_model = mapped.size_seconds(options.alpha, options.bandwidth_bits, options.node)
    for s in range(schedule.num_steps):
        if s in exchanged:
            labels.append(f"sizes {s}")
            model.append(sizes_model[s])
        row_of_step.append(len(labels))
        labels.append(f"step {s}")
        model.append(steps_model[s])
    row_of_step = np.asarray(row_of_step, dtype=np.int64)
    row = row_of_step[step]
    src, dst, row_bytes = schedule.src, schedule.dst, size
    copy = copy_seconds(schedule, size, options.node)
    if exchanged:  # the size messages: the same transfers, 8 bytes per block, one row earlier
        announced = np.isin(step, list(exchanged))
        pick = np.flatnonzero(announced)
        order = np.argsort(np.concatenate([row, row[pick] - 1]), kind="stable")
        src = np.concatenate([src, src[pick]])[order]
        dst = np.concatenate([dst, dst[pick]])[order]
        row_bytes = np.concatenate([size, schedule.block_counts()[pick] * SIZE_BYTES])[order]
        copy = None if copy is None else np.concatenate([copy, np.zeros(len(pick))])[order]
        across_all = np.concatenate([across, across[pick]])[order]
        index = np.concatenate([np.cumsum(across) - 1, (np.cumsum(across) - 1)[pick]])[order]
        paths = paths.select(index[across_all])
        row = np.concatenate([row, row[pick] - 1])[order]
    source = {"collective": schedule.collective, "algorithm": schedule.algorithm, "network": topology.spec,
              "ranks": schedule.ranks, "ranks_per_node": q,
              "routes": "a routes file" if routes is not None else router if router is not None else
              "the schedule's recorded paths" if recorded_paths(schedule, topology) else topology.default_router}
    simulation = _simulate("schedule", source, network, src, dst, q, schedule.ranks, paths, row, row_bytes, labels,
                           np.asarray(model), options, progress, copy)
    bound = schedule_bound(schedule, topology, mapped.bound).seconds(mapped.vector_bytes, options.alpha,
                                                                    options.bandwidth_bits, options.node)
    return dataclasses.replace(simulation, bound=bound)


def copy_seconds(schedule, size: np.ndarray, node: NodeCosts) -> np.ndarray | None:
    """Per transfer, the seconds its receiver copies it (a combined copy message's bytes times the
    copy cost: synth.pricing.schedule_cost.node_terms); None without a copy cost."""
    from synth.collectives.schedule import COPY

    if not node.copy_cost:
        return None
    combined = (schedule.block_counts() >= 2) & (schedule.op == COPY)
    return np.where(combined, size, 0).astype(np.float64) * node.copy_cost


def simulate_routes(doc: dict, topology, options: SimulationOptions, progress=None) -> Simulation:
    """Simulate every phase of a columnar routes file (synth.io.routes_file.read_routes_columnar):
    its flows between terminals along their paths; a flow to itself has no path and is left out."""
    if doc["format"] != "synth-routes/2":
        raise SynthError(f"synth simulate takes channel paths (synth-routes/2), not {doc['format']}")
    if not options.node.free:
        raise SynthError("--intra-bandwidth, --intra-latency and --copy-cost price schedules: a routes file's flows are "
                         "single messages between terminals")
    network = topology.network()
    n = network.num_terminals
    _check_planned(network, sum(len(phase["flows"]) for phase in doc["phases"]), n, options)
    srcs, dsts, sizes, rows, labels, parts = [], [], [], [], [], []
    for k, phase in enumerate(doc["phases"]):
        flows, paths = phase["flows"], phase["paths"]
        keep = np.flatnonzero(np.diff(paths.offsets) > 0)
        kept = paths.select(keep)
        srcs.append(network.channel_src[kept.channels[kept.offsets[:-1]]])
        dsts.append(network.channel_dst[kept.channels[kept.offsets[1:] - 1]])
        sizes.append(flows[keep, 2])
        rows.append(np.full(len(keep), k, dtype=np.int64))
        labels.append(f"phase {phase['phase']}")
        parts.append(kept)
    src, dst = np.concatenate(srcs).astype(np.int64), np.concatenate(dsts).astype(np.int64)
    size, row = np.concatenate(sizes).astype(np.int64), np.concatenate(rows)
    paths = Paths.concatenate(parts)
    steps = len(labels)
    busiest, _ = busiest_channels(network, paths, row, size, steps)
    ports = most_per_port(row, message_ports(network, paths), steps)
    model = step_times(ports, busiest, options.alpha, options.bandwidth_bits)
    traffic = doc["traffic"]
    source = {"pattern": traffic.get("pattern"), "network": topology.spec, "ranks": n, "router": doc.get("router"),
              "phases": steps}
    return _simulate("routes", source, network, src, dst, 1, n, paths, row, size, labels, model, options, progress)


def _check_planned(network, transfers: int, ranks: int, options: SimulationOptions) -> None:
    """The simulation's size guard (synth.simulation.platform.check_planned) before anything is made."""
    from synth.simulation.platform import check_planned
    from synth.simulation.runner import engine_of

    check_planned(network.num_terminals, transfers, ranks if engine_of(options.settings()) == "actors" else 1)


def _simulate(kind, source, network, src, dst, q, ranks, paths, row, size, labels, model, options, progress,
              copy=None) -> Simulation:
    merge = None
    if options.merge and mergeable(options.model, options.discipline, options.overhead, copy):
        merge = plan_merge(options.model, row, src // q, dst // q, size, paths)
    flows = (src, dst, paths, row, size)
    if merge is not None:  # each group's first transfer, carrying the group's bytes
        keep = merge.keep
        across = src // q != dst // q
        flows = (src[keep], dst[keep], paths.select((np.cumsum(across) - 1)[keep[across[keep]]]), row[keep], size[keep])
    platform, transfers = build_platform(network, flows[0], flows[1], q, flows[2], flows[3], flows[4],
                                         options.route_latency, options.hop_latency, options.bandwidth_bits,
                                         options.node.intra_latency, options.node.intra_bandwidth_bits,
                                         None if merge is None else merge.multiplicity)
    if copy is not None:
        transfers = dataclasses.replace(transfers, copy=copy)
    times = run(platform, transfers, np.arange(ranks) // q, options.settings(), progress)
    rows = len(labels)
    ends = np.zeros(rows)
    np.maximum.at(ends, flows[3], times.finish if times.done is None else times.done)
    ends = np.maximum.accumulate(ends) if options.discipline == "bsp" else ends
    previous = np.concatenate([[0.0], np.maximum.accumulate(ends)[:-1]])
    simulated = np.maximum(ends - previous, 0.0)
    if options.discipline == "bsp":  # a row without transfers takes no time
        counts = np.bincount(row, minlength=rows)
        simulated[counts == 0] = 0.0
    across = src // q != dst // q  # transfers within a node cross no channel of the network
    network_bytes = np.bincount(row, weights=size * across, minlength=rows)
    described = {"simgrid": times.version, "hosts": platform.hosts, "links": len(platform.link_bandwidth),
                 "routes": len(platform.route_src), **({"flows": merge.flows} if merge is not None else {})}
    return Simulation(kind=kind, source=source, options=options, labels=labels,
                      transfers=np.bincount(row, minlength=rows), bytes=network_bytes, model=np.asarray(model, dtype=np.float64),
                      simulated=simulated, ends=ends, platform=described, peak_bytes=times.peak_bytes)


def file_kind(path: str) -> str:
    """"schedule" or "routes", from a file's format field (JSON: its opening bytes, where synth
    writes it; HDF5: its format attribute); a user error for anything else."""
    import re

    from synth.io.schedule_hdf5 import ORBIT_FORMAT, is_hdf5, orbit_refused

    where = f"'{path}'"
    try:
        if is_hdf5(path):
            import h5py

            try:
                with h5py.File(path, "r") as f:
                    found = f.attrs.get("format")
            except OSError as exc:
                raise SynthError(f"{where} is not a readable HDF5 file: {exc}") from None
            found = found.decode("utf-8", "replace") if isinstance(found, bytes) else found
            found = found if isinstance(found, str) else None
        else:
            with open(path, "rb") as handle:
                head = handle.read(4096).decode("utf-8", "replace")
            match = re.search(r'"format"\s*:\s*"([^"]*)"', head)
            found = match.group(1) if match else _json_format(path, where)
    except OSError as exc:
        raise SynthError(f"cannot read {where}: {exc.strerror or exc}") from None
    if found in ("synth-schedule/1", "synth-schedule/2"):
        return "schedule"
    if found in ("synth-routes/2", "synth-routes/1"):
        return "routes"
    if found == ORBIT_FORMAT:
        raise orbit_refused(where)
    raise SynthError(f"{where} is neither a schedule (synth-schedule/1 or /2) nor a routes file (synth-routes/2)"
                     + (f": its format is '{found}'" if found else ""))


def simulate_sizes(schedules: list, scales: list[list[float]], topology, options: SimulationOptions,
                   router: str | None = None, seed: int = 0, routes: dict | None = None, progress=None,
                   copying: list[bool] | None = None) -> np.ndarray:
    """Bulk-synchronous simulated time (seconds) of every schedule at each of its scales (every
    transfer's bytes times the scale, rounded to whole bytes: the schedule with its blocks scaled, as
    MappedSchedule.time scales them), all in one worker: (schedules, scales). What `synth compare
    --simulate` prices its candidates with."""
    if options.discipline != "bsp":
        raise SynthError("sizes are simulated bulk-synchronously (--discipline bsp)")
    network = topology.network()
    srcs, dsts, counts, steps, all_paths, run_steps = [], [], [], [], [], [0]
    q = None
    for schedule in schedules:
        if q is not None and schedule.ranks_per_node != q:
            raise ValueError("one ranks_per_node for all schedules")
        q = schedule.ranks_per_node
        srcs.append(schedule.src)
        dsts.append(schedule.dst)
        counts.append(schedule.transfer_bytes())
        steps.append(schedule.transfer_step() + run_steps[-1])
        all_paths.append(transfer_paths(schedule, topology, router, seed, routes))
        run_steps.append(run_steps[-1] + schedule.num_steps)
    platform, transfers = build_platform(network, np.concatenate(srcs), np.concatenate(dsts), q, Paths.concatenate(all_paths),
                                         np.concatenate(steps), np.concatenate(counts), options.route_latency,
                                         options.hop_latency, options.bandwidth_bits, options.node.intra_latency,
                                         options.node.intra_bandwidth_bits)
    if options.node.copy_cost:  # `copying`: per schedule, whether its receivers copy (not a size exchange's)
        copies = [copy_seconds(schedule, count, options.node) if copying is None or copying[k] else np.zeros(len(count))
                  for k, (schedule, count) in enumerate(zip(schedules, counts))]
        transfers = dataclasses.replace(transfers, copy=np.concatenate(copies))
    ranks = schedules[0].ranks
    times = run(platform, transfers, np.arange(ranks) // q, options.settings(), progress,
                runs=(np.asarray(run_steps), np.asarray(scales, dtype=np.float64)))
    return times.run_times


def _json_format(path: str, where: str) -> str | None:
    """The format field of a JSON file that does not open with it (a file synth did not write)."""
    from synth.core.validate import read_json
    from synth.io.routes_file import MAX_FILE_BYTES

    try:
        doc = read_json(path, where, "schedule or routes file", MAX_FILE_BYTES)
    except SynthError:
        return None
    found = doc.get("format") if isinstance(doc, dict) else None
    return found if isinstance(found, str) else None
