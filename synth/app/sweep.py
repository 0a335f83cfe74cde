"""`synth sweep FILE.toml`: `compare` (optionally with `--synthesize`) over many networks and
collectives, every (network, collective) cell an independent task on an executor (the local pool or
Dask, synth.execute), kept in a checkpoint as it finishes so a stopped sweep goes on where it was.

The file (synth-sweep/1, docs/formats.md) names the networks, the collectives and what compare
takes (sizes, router, cost model, synthesis and its time limit). A cell is what
`synth compare COLLECTIVE --network SPEC ...` prices; its synthesis runs under
synth.solve.budget.reproducible(), so a cell's figures are the same on any worker of any speed and
the results file is byte-identical whatever the executor, the number of workers or the resumes
(issue 43 item 4). The results are one CSV (long form: a row per cell, size and candidate).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from synth.core.errors import SynthError
from synth.core.validate import check_keys, read_toml, require_list, require_str, show

FORMAT = "synth-sweep/1"
MAX_SWEEP_FILE_BYTES = 1 << 20
MAX_CELLS = 10_000  # networks x collectives: a sweep file's cells, refused above before anything is parsed further
KEYS = ("format", "networks", "collectives", "bytes", "router", "ranks_per_node", "alpha", "bandwidth",
        "synthesize", "time_limit")
CSV_HEADER = "network,collective,ranks,router,bytes,candidate,seconds,bound_seconds,fastest"


@dataclass(frozen=True)
class SweepSpec:
    """What a sweep file says, checked (sizes None: compare's default)."""

    networks: tuple[str, ...]
    collectives: tuple[str, ...]
    sizes: tuple[int, ...] | None = None
    router: str | None = None
    ranks_per_node: int = 1
    alpha: float = 1e-6
    bandwidth_bits: float = 100e9
    synthesize: bool = False
    time_limit: float = 60.0

    @property
    def cells(self) -> list[tuple[str, str]]:
        """(network, collective) in the file's order: networks outer, collectives inner."""
        return [(n, c) for n in self.networks for c in self.collectives]

    def inputs(self) -> dict:
        """What the checkpoint's manifest records: a resumed sweep must be the same one."""
        return {"command": "sweep", "networks": list(self.networks), "collectives": list(self.collectives),
                "sizes": None if self.sizes is None else list(self.sizes), "router": self.router,
                "ranks_per_node": self.ranks_per_node, "alpha": self.alpha, "bandwidth_bits": self.bandwidth_bits,
                "synthesize": self.synthesize, "time_limit": self.time_limit if self.synthesize else None}


@dataclass
class CellResult:
    """One cell's comparison, reduced to what the results file and the summary print."""

    index: int
    network: str
    collective: str
    ranks: int
    router: str
    sizes: list[int]
    labels: list[str]
    times: np.ndarray  # (sizes, candidates) seconds
    bounds: np.ndarray  # (sizes,) seconds
    best: list[int]  # per size the fastest candidate (Comparison.best_index)
    skipped: list[str] = field(default_factory=list)


def _number(data: dict, key: str, where: str, default: float, zero: bool = False) -> float:
    """data[key] (default when absent): a finite number above 0 (or 0 too, with `zero`)."""
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) \
            or value < 0 or (value == 0 and not zero):
        raise SynthError(f"{where}: {key} must be a {'non-negative' if zero else 'positive'} number, got {show(value)}")
    return float(value)


def read_sweep(path: str) -> SweepSpec:
    """The sweep file at `path`, every entry checked (a network spec parsed, a collective named)
    before any cell runs: one line naming the file and the entry when something is wrong."""
    data = read_toml(path, "sweep file", MAX_SWEEP_FILE_BYTES)
    where = f"sweep file '{path}'"
    return read_spec(data, where)


def read_spec(data: dict, where: str) -> SweepSpec:
    """A sweep's settings from the file's table (or the API's arguments), checked; `where` names them in errors."""
    from synth.collectives.schedule import collective
    from synth.core.sizes import parse_sizes
    from synth.topology import parse_topology

    check_keys(data, where, KEYS, required=("networks", "collectives"))
    if data.get("format", FORMAT) != FORMAT:
        raise SynthError(f"{where}: format {show(data['format'])} is not {FORMAT}")
    networks = [require_str(n, f"{where}: a network") for n in require_list(data["networks"], f"{where}: networks")]
    names = [require_str(c, f"{where}: a collective") for c in require_list(data["collectives"], f"{where}: collectives")]
    if not networks or not names:
        raise SynthError(f"{where}: networks and collectives must each name at least one")
    if len(networks) * len(names) > MAX_CELLS:
        raise SynthError(f"{where}: {len(networks)} networks x {len(names)} collectives is more than the "
                         f"{MAX_CELLS:,} cells a sweep runs")
    for kind, given in (("network", networks), ("collective", names)):
        twice = next((x for x in given if given.count(x) > 1), None)
        if twice is not None:
            raise SynthError(f"{where}: {kind} {show(twice)} is listed twice")
    for name in names:
        try:
            info = collective(name)  # an unknown name: one line naming the known ones
        except SynthError as exc:
            raise SynthError(f"{where}: {exc}") from None
        if info.name == "alltoallv":
            raise SynthError(f"{where}: alltoallv's blocks come from a matrix, which a sweep does not take: synth "
                             "compare alltoallv --sizes SPEC")
    for spec in networks:  # a bad spec fails now, not after the cells before it ran
        try:
            parse_topology(spec)
        except SynthError as exc:
            raise SynthError(f"{where}: network {show(spec)}: {exc}") from None
    sizes = None
    if "bytes" in data:
        sizes = tuple(parse_sizes(require_str(data["bytes"], f"{where}: bytes"), f"{where}: bytes"))
    router = require_str(data["router"], f"{where}: router") if "router" in data else None
    ranks_per_node = data.get("ranks_per_node", 1)
    if isinstance(ranks_per_node, bool) or not isinstance(ranks_per_node, int) or not 1 <= ranks_per_node <= 64:
        raise SynthError(f"{where}: ranks_per_node must be an integer from 1 to 64, got {show(ranks_per_node)}")
    synthesize = data.get("synthesize", False)
    if not isinstance(synthesize, bool):
        raise SynthError(f"{where}: synthesize must be true or false, got {show(synthesize)}")
    if "time_limit" in data and not synthesize:
        raise SynthError(f"{where}: time_limit applies to synthesize = true (the synthesis' programs)")
    return SweepSpec(tuple(networks), tuple(names), sizes, router, ranks_per_node,
                     _number(data, "alpha", where, 1e-6, zero=True),
                     _number(data, "bandwidth", where, 100.0) * 1e9, synthesize,
                     _number(data, "time_limit", where, 60.0))


def run_cell(spec: SweepSpec, index: int) -> CellResult:
    """Cell `index` of the sweep: compare (with its synthesis, reproducibly) as the command does."""
    from synth.pricing.alphabeta import FREE
    from synth.pricing.bounds import with_strongest_bound
    from synth.pricing.compare import compare
    from synth.solve.budget import reproducible
    from synth.topology import parse_topology

    network, name = spec.cells[index]
    topology = parse_topology(network)
    q = spec.ranks_per_node
    result = compare(name, topology, None if spec.sizes is None else list(spec.sizes), spec.router, spec.alpha,
                     spec.bandwidth_bits, FREE, q)
    result = with_strongest_bound(result, topology, spec.alpha, spec.bandwidth_bits, q)
    if spec.synthesize:
        from synth.synthesis.portfolio import compare_with_synthesis

        with reproducible():  # the same figures on any worker (the module docstring)
            result = compare_with_synthesis(result, topology, spec.alpha, spec.bandwidth_bits, spec.time_limit)
    return CellResult(index, network, name, topology.network().num_terminals * q, result.router, list(result.sizes),
                      [c.label for c in result.candidates], np.asarray(result.times, dtype=float),
                      np.asarray(result.bounds, dtype=float), [int(b) for b in result.best_index], list(result.skipped))


def _cell_problem(result, part) -> str | None:
    """What is wrong with a checkpointed cell (None: it is the cell's)."""
    if not isinstance(result, CellResult) or len(part) != 1 or result.index != int(part[0]):
        return "it is not this cell's result"
    if result.times.shape != (len(result.sizes), len(result.labels)) or result.bounds.shape != (len(result.sizes),):
        return "its tables do not match its sizes and candidates"
    return None


def sweep(spec: SweepSpec, executor, checkpoint=None, say=lambda text: None):
    """Every cell's result in the file's order, run on `executor` (cells in a checkpoint read back)."""
    from synth.execute.ordered import Part, ordered_results
    from synth.execute import TaskFailed
    from synth.core.interrupt import Interrupted

    cells = spec.cells
    parts = [Part(i, i + 1, np.array([i], dtype=np.int64)) for i in range(len(cells))]
    store = checkpoint.job("cells", _cell_problem) if checkpoint is not None else None
    done = set(store.parts(len(cells))) if store is not None else set()

    def task(part: np.ndarray) -> CellResult:
        return run_cell(spec, int(part[0]))

    results = []
    try:
        for result, resumed in ordered_results(executor, task, parts, store, done):
            results.append(result)
            say(f"  cell {len(results)}/{len(cells)}: {result.network} {result.collective}"
                + (" (from the checkpoint)" if resumed else ""))
    except (KeyboardInterrupt, Interrupted, TaskFailed, SynthError) as exc:
        if checkpoint is not None:
            kept = len(checkpoint.job("cells").parts(len(cells)))
            exc.add_note(f"{kept} of {len(cells)} cells are kept in checkpoint '{checkpoint.directory}': the same "
                         "command goes on from there")
        raise
    return results


def csv_text(results: list[CellResult]) -> str:
    """The results file: a row per cell, size and candidate (floats as Python writes them back
    exactly); `bound_seconds` is the cell's bound at that size, `fastest` 1 on the size's fastest."""
    lines = [CSV_HEADER]
    for r in results:
        for i, n in enumerate(r.sizes):
            for j, label in enumerate(r.labels):
                lines.append(f"{_field(r.network)},{r.collective},{r.ranks},{_field(r.router)},{n},{_field(label)},"
                             f"{float(r.times[i, j])!r},{float(r.bounds[i])!r},{int(j == r.best[i])}")
    return "\n".join(lines) + "\n"


def _field(text: str) -> str:
    """A CSV field (RFC 4180): quoted where it holds a comma (network specs do: torus:4,4)."""
    return '"' + text.replace('"', '""') + '"' if any(ch in text for ch in ',"\n') else text


def summary_line(r: CellResult) -> str:
    """The cell in one line: the fastest per band of sizes and how far the last size's fastest is
    from its bound."""
    from synth.core.sizes import size_text

    bands: list[tuple[int, int, str]] = []
    for i, n in enumerate(r.sizes):
        label = r.labels[r.best[i]]
        if bands and bands[-1][2] == label:
            bands[-1] = (bands[-1][0], n, label)
        else:
            bands.append((n, n, label))
    text = ", ".join(f"{label} {size_text(a)}" + (f"..{size_text(b)}" if b != a else "") for a, b, label in bands)
    last = float(r.times[-1, r.best[-1]])
    gap = (last / float(r.bounds[-1]) - 1) * 100 if r.bounds[-1] > 0 else float("nan")
    return (f"{r.network} {r.collective} ({r.ranks} ranks, {r.router} routes): fastest {text}; at "
            f"{size_text(r.sizes[-1])} {gap:.1f}% above the bound")

