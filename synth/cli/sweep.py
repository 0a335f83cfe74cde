"""`synth sweep FILE.toml [--out RESULTS.csv] [--executor WHERE] [--checkpoint DIR]`: compare (and
its synthesis) over every network and collective a sweep file names, a cell per task on the local
pool or a Dask cluster, resumable from a checkpoint (synth.app.sweep)."""

from __future__ import annotations

from synth.cli.options import workers_text
from synth.core.output import OutputSet
from synth.execute import EXECUTOR_SYNTAX

HELP = "compare (and synthesize) over many networks and collectives, on the local pool or Dask, resumable"


def add_parser(sub) -> None:
    p = sub.add_parser("sweep", help=HELP, description="Run synth compare for every (network, collective) cell of a "
                       "sweep file (synth-sweep/1, TOML: networks, collectives, bytes, router, the cost model, "
                       "synthesize and time_limit; docs/formats.md), each cell a task on an executor. A cell's "
                       "synthesis ends at its solver work, not the clock (as synthesize --reproducible), so the "
                       "results are byte-identical on any executor and after any resume.")
    p.add_argument("file", metavar="FILE.toml", help="the sweep file")
    p.add_argument("--out", metavar="RESULTS.csv", help="the results: a row per cell, size and candidate (network, "
                   "collective, ranks, router, bytes, candidate, seconds, bound_seconds, fastest), written whole or not "
                   "at all")
    p.add_argument("--executor", metavar="WHERE", help=f"where the cells run: {EXECUTOR_SYNTAX}")
    p.add_argument("--checkpoint", metavar="DIR", help="keep finished cells in DIR as they arrive; the same command "
                   "with the same DIR reads them back and runs the rest (after a kill, a lost worker or a reboot)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_sweep)


def cmd_sweep(args) -> int:
    from synth.app.route import refuse_checkpoint_overlap
    from synth.app.sweep import csv_text, read_sweep, summary_line, sweep
    from synth.execute import parse_executor
    from synth.io.checkpoint import Checkpoint
    from synth.render.progress import progress_printer

    spec = read_sweep(args.file)
    executor = parse_executor(args.executor)
    refuse_checkpoint_overlap(args.checkpoint, args.out)
    say = progress_printer(not args.quiet)
    with OutputSet() as outputs, executor:
        outputs.protect(args.file)
        target = outputs.reserve(args.out) if args.out is not None else None
        checkpoint = Checkpoint(args.checkpoint, spec.inputs()) if args.checkpoint is not None else None
        workers = executor.start()
        if checkpoint is not None:
            checkpoint.create()
        cells = len(spec.cells)
        say(f"sweep: {cells} cell{'s' * (cells != 1)} ({len(spec.networks)} networks x {len(spec.collectives)} "
            f"collectives) on {executor.label()}, {workers_text(workers)}")
        if checkpoint is not None:
            done = len(checkpoint.job("cells").parts(cells))
            say(f"  checkpoint {checkpoint.directory}: {done} of {cells} cells done before, {cells - done} to go")
        results = sweep(spec, executor, checkpoint, say)
        for result in results:
            print(summary_line(result))
            if result.skipped:  # names only: `synth compare` says why each does not apply
                print(f"  left out  {', '.join(line.split(':', 1)[0] for line in result.skipped)}")
        if target is not None:
            target.write(csv_text(results))
    if args.out is not None:
        print(f"wrote {args.out}: {sum(len(r.sizes) * len(r.labels) for r in results)} rows")
    return 0
