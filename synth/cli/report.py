"""`synth report SPEC --out NAME.html|NAME.md [--patterns ...] [--routers ...] [--opensm ...]`
(synth.app.report)."""

from __future__ import annotations

import glob
import re
import shlex
import sys
from pathlib import Path

from synth.cli import options as o
from synth.core.declared import constant
from synth.core.errors import SynthError
from synth.core.output import OutputSet
from synth.execute import parse_executor
from synth.core.sizes import parse_sizes, size_option, size_text
from synth.report.pages import check_pages


def add_parser(sub) -> None:
    MODELS, DEFAULT_COLLECTIVE_BYTES = constant("synth.simulation.runner", "MODELS"), constant("synth.app.report", "DEFAULT_COLLECTIVE_BYTES")
    DEFAULT_MESSAGE_BYTES = constant("synth.traffic.patterns", "DEFAULT_MESSAGE_BYTES")
    p = sub.add_parser("report", help="analytical cost report (HTML or Markdown): patterns x routings on any network")
    o.add_spec(p)
    p.add_argument("--out", metavar="FILE", required=True, action="append",
                   help="NAME.html (figures inline) or NAME.md (figures as PNG files beside it); may be repeated")
    p.add_argument("--patterns", default="all", metavar="LIST", help="xgft: all (default: lin,xor,opt,ghe,bgh) or e.g. "
                   "opt,lin; other families: all (default: a2a-lin, a random permutation, the family's adversarial "
                   "pattern; dragonflies also a2a-lat) or any traffic patterns, comma-separated")
    p.add_argument("--routers", metavar="LIST",
                   help="synth's routings to compare (default: xgft dmodk,smodk,random,layered; other families minimal,"
                        "valiant,ugal,paths and layered on dragonflies)")
    p.add_argument("--opensm", default="none", metavar="ENGINES",
                   help="also OpenSM's engines, run on ibsim: none (default), all, or e.g. minhop,updn,ftree,dfsssp")
    p.add_argument("--lfts", action="append", metavar="NAME=DIR",
                   help="also tables computed elsewhere for this network's fabric (DIR with guid2lid and lfts.dump or "
                        "opensm-lfts.dump, e.g. from `synth tables` or OpenSM's --dump_files_dir); may be repeated")
    p.add_argument("--bytes", type=size_option("--bytes"), metavar="SIZE",
                   help=f"message size: bytes, or with a unit (4096, 64KiB, 1MiB; default: the instance's, else "
                        f"{size_text(DEFAULT_MESSAGE_BYTES)})")
    p.add_argument("--alpha", type=o.positive("--alpha"), default=1e-6, metavar="S", help="start-up latency per phase in seconds (default 1e-6)")
    cost = p.add_mutually_exclusive_group()
    cost.add_argument("--bandwidth", type=o.positive("--bandwidth"), default=100.0, metavar="GBPS", help="link bandwidth in Gb/s (default 100)")
    cost.add_argument("--beta", type=o.positive("--beta"), metavar="S", help="seconds per byte (instead of --bandwidth)")
    p.add_argument("--seed", type=o.integer("--seed"), help="seed of the random router (default: the instance's, else 0)")
    p.add_argument("--solver", default="cpsat", metavar="NAME", help="solver of the synthesizing routers (default cpsat)")
    p.add_argument("--time-limit", type=o.positive("--time-limit", o.MAX_TIME_LIMIT), metavar="S",
                   help="per solver call of the xgft layered router, per phase for paths and the dragonfly layered "
                        "router (CP-SAT: deterministic time)")
    p.add_argument("--timings", action="store_true", help="add each routing's run time to the tables (reruns then differ)")
    p.add_argument("--collectives", metavar="LIST", help="also a section per collective (e.g. allreduce,alltoall): every "
                   "algorithm of synth compare, priced over message sizes")
    p.add_argument("--collective-bytes", metavar="SIZES", type=lambda t: parse_sizes(t, "--collective-bytes") and t,
                   help="the message sizes of the collectives section, as synth compare --bytes takes them: one size, "
                        f"A..B (powers of two times A) or A,B,... (default {DEFAULT_COLLECTIVE_BYTES})")
    p.add_argument("--collective-router", metavar="NAME", help="the routes the collectives' transfers take (default: the "
                   "family's, dmodk on fat trees, minimal on direct networks)")
    p.add_argument("--synthesize", nargs="?", const=60.0, type=o.positive("--synthesize", o.MAX_TIME_LIMIT), metavar="S",
                   help="the collectives section also lists a schedule synthesized for each (synth synthesize), with S "
                        "wall-clock seconds for its programs as synth synthesize --time-limit spends them (default "
                        "60) and the cut bound in the bound column")
    p.add_argument("--simulate", action="store_true", help="the collectives section also replays every algorithm on "
                   "SimGrid at every size (as synth compare --simulate): the simulated times, and where SimGrid ranks "
                   "the algorithms otherwise than the cost model, by how much")
    p.add_argument("--sim-model", choices=MODELS, metavar="MODEL", help=f"SimGrid's network model for --simulate: "
                   f"{', '.join(MODELS)} (default LV08; docs/simulation.md)")
    p.add_argument("--copy-cost", type=o.non_negative("--copy-cost", 1e-3), default=0.0, metavar="S",
                   help="the collectives: seconds per byte a rank copies of the combined messages it receives (default 0)")
    o.add_max_flows(p)
    o.add_executor(p)
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_report, constraints="strong", balance=False, threads=1, construction="halving",
                   glpk_options=None, consistency="flow")


def cmd_report(args) -> int:
    outs = [Path(out) for out in args.out]
    check_pages(outs)
    instance, topology, network = o.load(args)
    from synth.app.report import make_report, plan_report
    from synth.report.data import CostModel
    from synth.traffic.patterns import DEFAULT_MESSAGE_BYTES

    size = args.bytes if args.bytes is not None else instance.traffic.get("bytes", DEFAULT_MESSAGE_BYTES)
    bandwidth = 8.0 / args.beta if args.beta is not None else args.bandwidth * 1e9
    seed = args.seed if args.seed is not None else instance.route.get("seed", 0)
    if args.sim_model is not None and not args.simulate:
        raise SynthError("--sim-model applies to --simulate: add --simulate")
    plan = plan_report(topology, CostModel(args.alpha, bandwidth, size, args.copy_cost), args.patterns, args.routers, args.opensm,
                       args.lfts or [], o.router_options(args), seed, args.max_flows, args.collectives,
                       args.collective_bytes, args.collective_router, args.synthesize,
                       (args.sim_model or "LV08") if args.simulate else None)
    command = shlex.join(["synth", *args.argv])
    say = (lambda line: None) if args.quiet else (lambda line: print(f"  {line}", file=sys.stderr, flush=True))
    executor = parse_executor(args.executor)
    with OutputSet() as outputs, executor:
        pages = {out: outputs.reserve(out) for out in outs}  # every target checked before hours of routing
        workers = executor.start()
        if args.executor is not None:
            say(f"executor: {executor.label()}, {o.workers_text(workers)}")
        report, files = make_report(plan, instance.name, instance.description, instance.source, command, say,
                                    args.timings, executor, outs)
        for path, content in files.items():  # everything rendered before anything is written
            (pages.get(path) or outputs.reserve(path)).write(content)
        for out in outs:  # a Markdown page's figures of an earlier run that this one has not: never a mix of two runs
            if out.suffix.lower() == ".md" and out.parent.is_dir():
                for old in sorted(out.parent.glob(f"{glob.escape(out.stem)}-*.png")):
                    if old not in files and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", old.stem[len(out.stem) + 1:]) \
                            and old.is_file() and not old.is_symlink():
                        outputs.remove_stale(old, f"a figure of an earlier {out.name} that this report does not have")
    for result in report.patterns:
        print(f"{result.label}: " + ", ".join(
            f"{s.routing} {int(s.max_contention.max(initial=0))} ({result.above_bound(s)} above bound)" for s in result.series)
            + f"; lower bound {int(result.lower_bound.max(initial=0))}")
    print(f"wrote {', '.join(str(p) for p in files)}")
    return 0
