"""`synth run SCHEDULE`: a schedule file executed over MPI with real buffers, checked against the MPI
library's own collective on the same input and timed next to it (synth.run).

A size is what synth compare takes (the vector of a reduction or broadcast, the P blocks a rank
gathers or scatters, the P blocks a rank sends in an all-to-all); the schedule's blocks are scaled
to it in proportion and rounded up to whole elements (without sizes: the schedule's own). Times are
per iteration the most any rank took; algbw and busbw are nccl-tests' (doc/PERFORMANCE.md there):
algbw = S / t with S that size, busbw = algbw x 2(P-1)/P for allreduce, x (P-1)/P for allgather,
reduce-scatter, all-to-all, scatter and gather, x 1 for broadcast, reduce and p2p; t here is the
median iteration (nccl-tests takes the mean).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

import numpy as np

from synth.core.errors import SynthError

DEFAULT_ITERATIONS, DEFAULT_WARMUP = 20, 5  # nccl-tests' -n 20 and -w 5
DEFAULT_DEADLINE = 600.0
MAX_LOCAL_RANKS = 256  # processes synth run starts on this machine (a larger run: the user's own launcher)
RUN_BASE_BYTES = 64 << 20  # an MPI process with mpi4py and numpy, before its buffers
BUFFERS_PER_ELEMENT = 5  # the buffer, its input copy, the library's send and receive buffers, a scratch buffer
BUS_FACTORS = {"allreduce": lambda p: 2 * (p - 1) / p, "broadcast": lambda p: 1.0, "reduce": lambda p: 1.0,
               "p2p": lambda p: 1.0}  # the others: (P - 1) / P


def bus_factor(collective: str, ranks: int) -> float:
    return BUS_FACTORS.get(collective, lambda p: (p - 1) / p)(ranks)


@dataclass(frozen=True)
class RunRequest:
    path: str
    sizes: list[int] | None = None
    dtype: str = "float32"
    data: str = "dyadic"
    iterations: int = DEFAULT_ITERATIONS
    warmup: int = DEFAULT_WARMUP
    seed: int = 0
    deadline: float = DEFAULT_DEADLINE
    mpirun: str = "mpirun"
    mpi_args: list[str] = field(default_factory=list)
    unverified: bool = False  # run a schedule synth verify rejects (to see what it does)


@dataclass(frozen=True)
class SizeRun:
    bytes: int
    elements: int
    schedule_seconds: list[float]
    library_seconds: list[float]
    library_call: str
    wrong: str | None
    ranks_wrong: int

    @staticmethod
    def summary(times: list[float]) -> tuple[float, float, float]:
        return min(times), statistics.median(times), max(times)

    def bandwidths(self, seconds: float, collective: str, ranks: int) -> tuple[float, float]:
        """(algbw, busbw) in GB/s (10^9 bytes) at `seconds` (module docstring)."""
        algbw = self.bytes / seconds / 1e9 if seconds > 0 else float("inf")
        return algbw, algbw * bus_factor(collective, ranks)


@dataclass(frozen=True)
class RunResult:
    request: RunRequest
    schedule: object  # the Schedule run
    library: str  # the MPI library's version line
    sizes: list[SizeRun]
    verdict: str | None  # the schedule's verify violation (--unverified), None when it verifies

    @property
    def wrong(self) -> SizeRun | None:
        return next((s for s in self.sizes if s.wrong is not None), None)

    def record(self) -> dict:
        """The result file (synth-run/1, docs/formats.md)."""
        s, r = self.schedule, self.request
        return {"format": "synth-run/1", "schedule": {"collective": s.collective, "algorithm": s.algorithm,
                                                       "network": s.spec, "ranks": s.ranks, "steps": s.num_steps},
                "library": self.library, "dtype": r.dtype, "data": r.data, "iterations": r.iterations,
                "warmup": r.warmup, "mpi_args": list(r.mpi_args),
                "sizes": [{"bytes": z.bytes, "elements": z.elements, "schedule_seconds": z.schedule_seconds,
                           "library_seconds": z.library_seconds, "library_call": z.library_call,
                           "correct": z.wrong is None} for z in self.sizes]}


def check_request(request: RunRequest) -> None:
    """The options alone, before any file is read."""
    from synth.run.data import DATA, DTYPES

    if request.dtype not in DTYPES:
        raise SynthError(f"--dtype {request.dtype}: expected one of {', '.join(DTYPES)}")
    if request.data not in DATA:
        raise SynthError(f"--data {request.data}: expected one of {', '.join(DATA)}")
    if request.data == "uniform" and request.dtype == "int32":
        raise SynthError("--data uniform is for float32 and float64 (int32 data are dyadic: integers)")


def plan_run(request: RunRequest):
    """The schedule, verified (unless --unverified), with the memory its run takes checked."""
    from synth.collectives.verify import verify
    from synth.core import memory
    from synth.io.schedule_file import read_schedule

    check_request(request)
    schedule = read_schedule(request.path)
    report = verify(schedule)
    if not report.ok and not request.unverified:
        raise SynthError(f"'{request.path}' does not deliver its {schedule.collective} (synth verify: "
                         f"{report.violation}); not run (--unverified runs it anyway, to see what it does)")
    need = run_memory(schedule, request)
    budget = memory.budget()
    if need > budget.bytes:
        raise SynthError(f"running {schedule.ranks} ranks of '{request.path}' at these sizes takes about "
                         f"{memory.gib(need)} of memory on this machine, more than {budget}: fewer or smaller sizes "
                         "(--bytes), or run it under your own launcher on more machines")
    return schedule, report.violation


def run_memory(schedule, request: RunRequest) -> int:
    """The bytes the ranks take on this machine at the largest size: every rank's touched blocks (its
    starting, promised, sent and received ones) times BUFFERS_PER_ELEMENT, plus RUN_BASE_BYTES each."""
    from synth.run.data import DTYPES
    from synth.run.plan import block_elements

    s = schedule.explicit()
    p = s.ranks
    itemsize = np.dtype(DTYPES[request.dtype]).itemsize
    sizes = request.sizes or [None]
    largest = max(sizes, key=lambda n: -1 if n is None else n)
    elements = block_elements(s, itemsize, largest)
    counts = np.diff(s.block_ptr)
    ranks = np.concatenate([np.repeat(s.src, counts), np.repeat(s.dst, counts)])
    blocks = np.concatenate([s.block_ids, s.block_ids]).astype(np.int64)
    touched = np.unique(ranks.astype(np.int64) * s.blocks + blocks)
    per_rank = np.bincount(touched // s.blocks, elements[touched % s.blocks], minlength=p)
    # every rank's own input and promised blocks too (a rank of a broadcast's root holds them all)
    per_rank = np.maximum(per_rank, float(elements.sum()) / max(1, p if s.collective in ("alltoall", "alltoallv") else 1))
    return int(RUN_BASE_BYTES * p + BUFFERS_PER_ELEMENT * itemsize * per_rank.sum())


def job_of(request: RunRequest) -> dict:
    return {"schedules": [request.path], "sizes": request.sizes, "dtype": request.dtype, "data": request.data,
            "iterations": request.iterations, "warmup": request.warmup, "seed": request.seed}


def run(request: RunRequest, say=lambda text: None) -> RunResult:
    """Launch the ranks (mpirun) and collect the figures (`say`: rank 0's progress, a line per size)."""
    from synth.run.launch import launch

    schedule, violation = plan_run(request)
    if schedule.ranks > MAX_LOCAL_RANKS:
        raise SynthError(f"the schedule has {schedule.ranks} ranks: synth run starts at most {MAX_LOCAL_RANKS} MPI "
                         "processes on this machine; start synth run under your own launcher (mpirun -n P synth run "
                         "...) for more")
    say(f"running {schedule.collective} by {schedule.algorithm} on {schedule.ranks} MPI processes")
    (figures,) = launch(job_of(request), schedule.ranks, request.deadline, request.mpirun, request.mpi_args, say)
    return result_of(request, schedule, figures, violation)


def run_here(request: RunRequest, comm) -> RunResult | None:
    """As one rank of the user's own launch: rank 0 reads and checks the schedule, every rank runs
    the executor; rank 0 gets the figures (the others None). A refusal is every rank's."""
    from synth.run.executor import run_job

    schedule = violation = refusal = None
    if comm.Get_rank() == 0:
        try:
            schedule, violation = plan_run(request)
            if comm.Get_size() != schedule.ranks:
                refusal = f"this MPI run has {comm.Get_size()} processes, the schedule {schedule.ranks} ranks"
        except SynthError as exc:
            refusal = str(exc)
    refusal = comm.bcast(refusal, root=0)
    if refusal is not None:
        raise SynthError(refusal)
    figures = run_job(comm, job_of(request))
    return result_of(request, schedule, figures[0], violation) if figures is not None else None


def result_of(request: RunRequest, schedule, figures: dict, violation: str | None) -> RunResult:
    sizes = [SizeRun(z["bytes"], z["elements"], z["schedule_seconds"], z["library_seconds"], z["library_call"],
                     z["wrong"], z["ranks_wrong"]) for z in figures["sizes"]]
    return RunResult(request, schedule, figures["library"], sizes, violation)
