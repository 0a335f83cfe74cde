"""`synth synthesize COLLECTIVE --network SPEC`: a step schedule made by optimization, verified by the
symbolic replay and priced by synth's cost model next to the bounds of any schedule.

The plan (synth.synthesis.plan) says what is made and checks the size guards; the portfolio
(synth.synthesis.portfolio) runs every registered method that applies (synth.synthesis.methods),
and per message size takes the points of least time; consecutive sizes that take the same points
are one band, with its verified schedule and its record. The command line and the Python API both
call `synthesize`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from synth.collectives.schedule import collective
from synth.core.errors import SynthError

from synth.pricing.alphabeta import FREE, NodeCosts
from synth.pricing.bounds import exchange_message_bytes
from synth.synthesis.plan import MODES, SYNTHESIZED, SynthesisPlan, plan_synthesis
from synth.synthesis.portfolio import Band, bands, synthesize_parts
from synth.synthesis.front import Part

__all__ = ["MODES", "SYNTHESIZED", "SynthesisRequest", "Synthesis", "check", "synthesize", "answer"]


@dataclass(frozen=True)
class SynthesisRequest:
    collective: str
    topology: object
    sizes: list[int]  # message sizes (an alltoallv: ignored, its matrix gives one band)
    ranks_per_node: int = 1
    root: int = 0
    chunks: int | tuple[int, ...] | None = None  # several: a front over every chunk count (--chunks A..B)
    reach: str | None = None
    router: str | None = None
    mode: str = "auto"  # the program's form: auto | exact | symmetric | trees
    block_sizes: object = None  # an alltoallv's matrix (a spec string or an array)
    time_limit: float = 60.0
    solver: str = "cpsat"
    routes: dict | None = None
    alpha: float = 1e-6
    bandwidth_bits: float = 100e9
    methods: tuple[str, ...] | None = None  # the registered methods to run (None: every one that applies)
    node: NodeCosts = FREE  # what a node adds to the cost model (synth.pricing.alphabeta): the points' choice, the record

    @property
    def chunk_counts(self) -> tuple:
        return self.chunks if isinstance(self.chunks, tuple) else (self.chunks,)

    def plan_options(self, chunks=None) -> dict:
        chunks = self.chunk_counts[0] if chunks is None else chunks
        return dict(ranks_per_node=self.ranks_per_node, root=self.root, chunks=chunks, reach=self.reach,
                    router=self.router, method=self.mode, sizes=self.block_sizes, time_limit=self.time_limit,
                    solver=self.solver, routes=self.routes)


@dataclass
class Synthesis:
    plan: SynthesisPlan
    parts: list[Part]
    bands: list[Band] = field(default_factory=list)
    orbit_parts: list[dict] = field(default_factory=list)  # an orbit synthesis' halves (collective, steps, rounds)


def check(request: SynthesisRequest, routes_out: bool = False) -> SynthesisPlan | None:
    """The request's options checked before anything long runs (an all-to-all's routing program
    comes after: None then), so a bad option or an unwritable output is one line at once;
    `routes_out`: the exchange's routes are asked for too (an alltoall's only)."""
    plan = plan_synthesis(request.collective, request.topology, **request.plan_options(), check_only=True)
    name = collective(request.collective).name
    if plan is not None and plan.orbit is not None:
        refused = [option for option, given in (("--chunks A..B", len(request.chunk_counts) > 1),
                                                ("--methods", request.methods is not None)) if given]
        if refused:
            raise SynthError(f"{refused[0]}: {request.topology.spec}'s {plan.graph.ranks:,} ranks take the orbit "
                             "synthesis (the orbit methods over one rank per orbit's blocks), which chooses its own "
                             "methods and takes one chunk count")
    if routes_out and name != "alltoall":
        raise SynthError(f"--routes-out: only an alltoall's synthesis routes its pairs as one phase, not {name}'s"
                         + (" (its routes weigh the matrix's bytes, which a routes file's traffic cannot name)"
                            if name == "alltoallv" else ""))
    if routes_out:
        from synth.synthesis.transfers import MAX_PAIRS

        ranks = request.topology.network().num_terminals * request.ranks_per_node
        if ranks * (ranks - 1) > MAX_PAIRS:
            raise SynthError(f"--routes-out: {ranks:,} ranks' pairs are routed along forests (more than {MAX_PAIRS:,} "
                             f"pairs), which a routes file of one path per pair would list in gigabytes")
    return plan


def synthesize(request: SynthesisRequest, say=lambda text: None, plan: SynthesisPlan | None = None,
               executor=None) -> Synthesis:
    """Plan (unless `plan` is the checked one), run the portfolio and cut the sizes into bands;
    `executor` (synth.execute): where an orbit synthesis' independent pieces run (None: here)."""
    if plan is None:
        plan = plan_synthesis(request.collective, request.topology, **request.plan_options(), say=say)
    if plan.orbit is not None:
        return _synthesize_orbit(request, plan, say, executor)
    if executor is not None:
        raise SynthError(f"an executor splits an orbit synthesis' work (above 4,096 ranks); {request.topology.spec}'s "
                         "synthesis runs in this process")
    sizes = request.sizes
    if plan.sizes is not None:  # one band: the matrix's own sizes, shown as a rank's average
        sizes = [exchange_message_bytes(plan.sizes, plan.graph.ranks)]
    sweep = [plan_synthesis(request.collective, request.topology, **request.plan_options(c), say=say)
             for c in request.chunk_counts[1:]]
    parts = synthesize_parts(plan, request.time_limit, request.solver, say, methods=request.methods, sweep=sweep)
    made = bands(plan, parts, sizes, request.alpha, request.bandwidth_bits, request.node)
    for band in made:  # the digest of the file read, where the network is one (fabric:, graph:)
        band.schedule.network_sha256 = request.topology.source_digest()
    return Synthesis(plan, parts, made)


def _synthesize_orbit(request: SynthesisRequest, plan: SynthesisPlan, say, executor=None) -> Synthesis:
    """Above the symmetric method's ranks: the orbit methods (synth.synthesis.orbit_methods), each
    priced on its orbit at every size; per size the least time, sizes of one winner in a band
    (its blocks sized for the band's first), each band's record pricing its sizes. With an
    executor, the methods' pieces (a half's trees, a method) and then the candidates'
    verifications run on its workers, each a function of the plan alone: the same schedules."""
    from synth.pricing.orbit_cost import map_orbit
    from synth.synthesis.orbit_methods import orbit_candidates
    from synth.synthesis.orbit_trees import orbit_record, sized

    made = orbit_candidates(plan, say) if executor is None else _orbit_on(executor, plan, say)
    sizes = list(request.sizes)
    priced = [map_orbit(orbit, plan.topology) for orbit, _ in made]
    best = [min(range(len(made)), key=lambda k: (priced[k].time(request.alpha, request.bandwidth_bits,
                                                                -(-size // made[k][0].blocks), request.node), k))
            for size in sizes]
    made_bands = []
    for start in range(len(sizes)):
        if start and best[start] == best[start - 1]:
            continue
        end = start + 1
        while end < len(sizes) and best[end] == best[start]:
            end += 1
        orbit, parts = made[best[start]]
        schedule = sized(orbit, sizes[start])
        schedule.synthesis = orbit_record(plan, orbit, parts, sizes[start:end], request.alpha, request.bandwidth_bits,
                                          request.node)
        schedule.network_sha256 = request.topology.source_digest()
        made_bands.append(Band(sizes[start:end], (), schedule, sizes[start]))
    return Synthesis(plan, [], made_bands, orbit_parts=[part for _, parts in made for part in parts])


def _orbit_on(executor, plan: SynthesisPlan, say) -> list:
    """The orbit candidates made piece by piece on `executor`, then verified there, in the order
    orbit_candidates makes them."""
    from functools import partial

    from synth.execute.ordered import results_in_order
    from synth.synthesis.orbit_methods import accept, check_candidate, describe, orbit_made, orbit_piece, orbit_work

    pieces = orbit_work(plan)
    say(f"{plan.collective}: {len(pieces)} piece(s) on {executor.label()}: "
        + "; ".join(describe(piece) for piece in pieces))
    results = results_in_order(executor, partial(orbit_piece, plan), pieces,
                               lambda k: say(f"{plan.collective}: made {describe(pieces[k])}"))
    made = orbit_made(plan, pieces, results)
    reports = results_in_order(executor, partial(check_candidate, made, plan.topology), list(range(len(made))))
    return accept(made, plan, reports, say)


def answer(request: SynthesisRequest, steps: int, rounds: int, say=lambda text: None):
    """A query of one (steps, rounds, chunks) point (synth.synthesis.query): the answer, and where
    satisfiable its schedule, verified, with a record of the query."""
    from synth.collectives.verify import verify
    from synth.synthesis.query import check_queried, query

    check_queried(collective(request.collective).name)
    if len(request.chunk_counts) > 1:
        raise SynthError("--query asks one chunk count (--chunks C), not a range")
    plan = plan_synthesis(request.collective, request.topology, **request.plan_options(), say=say)
    if plan.orbit is not None:
        raise SynthError(f"--query: {plan.graph.ranks:,} ranks take the orbit synthesis (balanced trees), which has "
                         "no program to ask")
    found = query(plan, steps, rounds, request.time_limit, request.solver, say)
    schedule = None
    if found.make is not None:
        schedule = found.make()
        report = verify(schedule)
        if not report.ok:  # a bug of the program, never written
            raise AssertionError(f"the queried {plan.collective} schedule is wrong: {report.violation}")
        schedule.synthesis = {"method": plan.method, "transfers": plan.graph.reach, "router": plan.graph.router,
                              "chunks": plan.chunks,
                              "query": {"steps": steps, "rounds": rounds, "answer": found.status,
                                        "least_rounds": found.rounds, "solver_status": found.solver_status,
                                        "about": found.scope}}
    return plan, found, schedule


class BandFiles:
    """`--out` of a synthesis, reserved before the solver runs (an unwritable target is one line at
    once): one size, one file (JSON, or HDF5 for .h5); several, a directory of one file per band,
    named by its least size (`band_file`), the bands known only once the synthesis has run."""

    def __init__(self, outputs, out: str, sizes: int):
        from synth.io.schedule_hdf5 import wants_hdf5

        self.single = outputs.reserve(out) if sizes == 1 else None
        self.directory = None
        if self.single is None:
            if wants_hdf5(out) or out.lower().endswith(".json"):
                raise SynthError(f"--out {out}: {sizes} sizes give a schedule file per size band, written into a "
                                 "directory: name a directory (or give one size for one file)")
            self.directory = outputs.reserve_dir(out, [], owned=is_band_file)

    def write(self, collective: str, bands: list[Band]) -> None:
        from synth.io.schedule_file import write_schedule_output

        if self.single is not None:
            write_schedule_output(self.single, bands[0].schedule)
            return
        for band in bands:
            write_schedule_output(self.directory.reserve(band_file(collective, band)), band.schedule)


def band_file(collective: str, band: Band) -> str:
    """The file of a band in a size range's --out directory: named by its least size, however the sizes were listed."""
    return f"{collective}-{min(band.sizes)}B.json"


def is_band_file(name: str) -> bool:
    """A band's file as `band_file` names them (any collective: an earlier run's may have been another), so that a
    directory holding only such files is an earlier run's, replaced whole (synth.core.output)."""
    stem, dash, rest = name.rpartition("-")
    size = rest[:-len("B.json")]
    return bool(dash) and stem.isascii() and rest.endswith("B.json") and size.isascii() and size.isdigit() and \
        stem.replace("-", "").isalpha()
