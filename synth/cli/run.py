"""`synth run SCHEDULE [--bytes SIZES] [--dtype T] [--out RESULT.json]`: execute a schedule over MPI
with real buffers, check it against the MPI library's own collective and time both (synth.app.run)."""

from __future__ import annotations

import sys

from synth.cli.options import integer, positive
from synth.core.declared import constant
from synth.core.errors import SynthError
from synth.core.output import OutputSet
from synth.core.sizes import size_option
from synth.core.text import counted, figure
from synth.core.validate import require_readable


class WrongResult(Exception):
    """The schedule's result differs from the library's: one line, exit 1, nothing written."""


def add_parser(sub) -> None:
    DTYPES, DATA = constant("synth.run.data", "DTYPE_NAMES"), constant("synth.run.data", "DATA")
    ITERATIONS, WARMUP = constant("synth.app.run", "DEFAULT_ITERATIONS"), constant("synth.app.run", "DEFAULT_WARMUP")
    DEADLINE, MAX_LOCAL = constant("synth.app.run", "DEFAULT_DEADLINE"), constant("synth.app.run", "MAX_LOCAL_RANKS")
    p = sub.add_parser("run", help="execute a schedule over MPI with real buffers, checked against the MPI library's "
                       "collective and timed next to it")
    p.add_argument("schedule", metavar="SCHEDULE", help="a schedule file (synth-schedule/1, JSON or HDF5: synth "
                   "schedule, synth synthesize); verified before it runs")
    p.add_argument("--bytes", type=size_option("--bytes", many=True), metavar="SIZES",
                   help="message sizes as synth compare takes them (the vector; the P blocks a rank gathers or "
                        "scatters; the P blocks a rank sends in an all-to-all): one size, A..B (powers of two) or "
                        "A,B,...; the blocks scaled to each in proportion, rounded up to whole elements (default: "
                        "the schedule's own)")
    p.add_argument("--dtype", choices=list(DTYPES), default="float32", help="the buffers' element type (default "
                   "float32)")
    p.add_argument("--data", choices=list(DATA), default="dyadic", help="dyadic: integers in [-8, 7], whose sums are "
                   "exact in any order, so the result must equal the library's bit for bit (default); uniform: floats "
                   "in [-1, 1), reductions within 2 gamma_(P-1) sum |x| of the library's (docs/run.md)")
    p.add_argument("--iterations", type=integer("--iterations", 1, 100000), default=ITERATIONS, metavar="N",
                   help=f"timed runs per size (default {ITERATIONS})")
    p.add_argument("--warmup", type=integer("--warmup", 0, 100000), default=WARMUP, metavar="N",
                   help=f"untimed runs before them (default {WARMUP})")
    p.add_argument("--seed", type=integer("--seed", 0, 1 << 31), default=0, help="the data's seed (default 0)")
    p.add_argument("--deadline", type=positive("--deadline", 86400.0), default=DEADLINE, metavar="S",
                   help=f"seconds the whole run may take before its ranks are killed (default {DEADLINE:g})")
    p.add_argument("--mpirun", metavar="PROGRAM", default="mpirun", help="the launcher synth starts the ranks with "
                   f"(default mpirun: Open MPI's, with --oversubscribe; at most {MAX_LOCAL} ranks); under your own "
                   "launcher (mpirun -n P synth run ...) synth starts none")
    p.add_argument("--mca", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help="an Open MPI parameter for the run (repeatable), e.g. --mca coll_tuned_use_dynamic_rules 1 "
                        "--mca coll_tuned_allreduce_algorithm 4 to time the library's ring")
    p.add_argument("--unverified", action="store_true", help="run a schedule synth verify rejects, to see what it "
                   "does (its wrong result is reported)")
    p.add_argument("--out", metavar="RESULT.json", help="the figures as a file (synth-run/1, docs/formats.md)")
    p.set_defaults(func=cmd_run)


def cmd_run(args) -> int:
    require_readable(args.schedule, "schedule file")
    from synth.app.run import RunRequest, check_request, run, run_here
    from synth.run.launch import RunFailed, under_launcher

    mca = [w for name, value in args.mca for w in ("--mca", name, value)]
    request = RunRequest(args.schedule, args.bytes, args.dtype, args.data, args.iterations, args.warmup, args.seed,
                         args.deadline, args.mpirun, mca, args.unverified)
    check_request(request)
    try:
        if under_launcher():
            if mca or args.mpirun != "mpirun":
                raise SynthError("--mca and --mpirun apply when synth starts the ranks; under your own launcher give "
                                 "them to it")
            from mpi4py import MPI

            comm = MPI.COMM_WORLD
            result = run_here(request, comm)  # rank 0's, None at the others
            wrong = comm.bcast(_wrong_line(result) if result is not None else None, root=0)
            if wrong is not None:
                raise WrongResult(wrong)
            if result is not None:
                _print(result, args)
            return 0
        with OutputSet() as outputs:
            target = outputs.reserve(args.out) if args.out is not None else None
            from synth.render.progress import progress_printer

            result = run(request, progress_printer(_long(request)))
            if (wrong := _wrong_line(result)) is not None:
                raise WrongResult(wrong)
            _print(result, args, target)
        return 0
    except (WrongResult, RunFailed) as exc:  # the run's failure: exit 1, as a check that found a difference
        print(f"synth: {exc}", file=sys.stderr, flush=True)
        return 1


LONG_RUN_BYTES = 1 << 30  # bytes moved by a rank over all sizes and runs from which the progress is shown


def _long(request) -> bool:
    largest = max(request.sizes or [0])
    return largest * len(request.sizes or [1]) * (request.warmup + request.iterations) >= LONG_RUN_BYTES


def _wrong_line(result) -> str | None:
    wrong = result.wrong
    if wrong is None:
        return None
    return (f"the schedule's result differs from {wrong.library_call}'s at {wrong.ranks_wrong} of "
            f"{result.schedule.ranks} ranks ({wrong.bytes:,} B): {wrong.wrong}; nothing written")


def _print(result, args, target=None) -> None:
    import json

    print(table_text(result))
    if target is not None:
        target.write(json.dumps(result.record(), indent=1) + "\n")
        print(f"wrote {args.out}")


def table_text(result) -> str:
    from synth.core.sizes import size_text

    s, r = result.schedule, result.request
    lines = [f"schedule  {s.collective} by {s.algorithm} on {s.spec}: {s.ranks} ranks, {counted(s.num_steps, 'step')}"
             + ("" if result.verdict is None else f" (synth verify: {result.verdict})"),
             f"library   {result.library}; {r.iterations} timed runs after {r.warmup} untimed ones per size, each "
             "timed as the slowest rank" + (f"; {' '.join(r.mpi_args)}" if r.mpi_args else ""),
             f"checked   every rank's result equals {result.sizes[0].library_call}'s on the same input ("
             + ("dyadic data: bit for bit" if r.data == "dyadic" else "uniform data: within 2 gamma_(P-1) sum |x|")
             + f", {r.dtype})"]
    head = (f"{'bytes':>10}  {'min us':>9} {'median us':>9} {'max us':>9} {'algbw':>7} {'busbw':>7}   "
            f"{'library min':>11} {'median':>9} {'max':>9} {'algbw':>7} {'busbw':>7}  {'ratio':>6}")
    lines.append(head)
    for z in result.sizes:
        ours, theirs = z.summary(z.schedule_seconds), z.summary(z.library_seconds)
        a, b = z.bandwidths(ours[1], s.collective, s.ranks)
        c, d = z.bandwidths(theirs[1], s.collective, s.ranks)
        lines.append(f"{size_text(z.bytes):>10}  " + " ".join(f"{figure(t * 1e6):>9}" for t in ours)
                     + f" {figure(a):>7} {figure(b):>7}   {figure(theirs[0] * 1e6):>11} "
                     + " ".join(f"{figure(t * 1e6):>9}" for t in theirs[1:]) + f" {figure(c):>7} {figure(d):>7}  "
                     + f"{figure(ours[1] / theirs[1] if theirs[1] > 0 else float('nan')):>6}")
    lines.append("algbw, busbw: GB/s at the median (nccl-tests' definitions); ratio: the schedule's median over the "
                 "library's")
    return "\n".join(lines)
