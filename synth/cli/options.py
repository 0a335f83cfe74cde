"""What the subcommands share: the parser class, option types, option groups, and loading a
network and a workload from the options (the spec, --fail, --traffic, --phase, --placement)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from synth.core.declared import constant, declared, decorated
from synth.core.errors import SynthError
from synth.core.sizes import size_option, size_text
from synth.core.validate import parse_int, parse_non_negative_number, parse_positive_number
from synth.execute import EXECUTOR_SYNTAX
from synth.io.instance import Instance, resolve

if TYPE_CHECKING:
    import numpy as np

    from synth.measure.evaluate import PhaseEvaluation
    from synth.routing.registry import RouterOptions

# What the options' help names is read from the modules' source (synth.core.declared): declaring the
# options imports no numpy, so `synth COMMAND --help` and a parse error are quick (issue 41).

# Option values are checked by synth.core.validate: ASCII digits, no '8_0', no truncated floats,
# within 64-bit integers and the documented range; the message names the option.
MAX_THREADS = 256
SIZES_HELP = ("alltoallv block sizes: random:S:SEED (uniform in [0, S] bytes), moe:S:H:F:SEED (uniform, the blocks "
              "into H hot destinations F times as large), zipf:S:A:SEED (the k-th largest of the P^2 blocks S / k^A "
              "bytes, in an order drawn by SEED) or csv:PATH (a P x P matrix, row s column d the bytes s sends to d)")
MAX_TIME_LIMIT = 1e6  # seconds: about 11 days per solver call


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit code 2
        raise SynthError(f"{self.prog}: {message}")


def integer(option: str, minimum: int = 0, maximum: int | None = None):
    return lambda text: parse_int(text, option, minimum, maximum)


def positive(option: str, maximum: float | None = None):
    return lambda text: parse_positive_number(text, option, maximum)


def add_spec(p) -> None:
    p.add_argument("spec", metavar="SPEC", help="network spec such as xgft:3:8,4,2:1,8,2, or an instance .toml file")
    p.add_argument("--fail", metavar="ITEMS", help="a degraded network: failed links A-B, switches A, or random:K:SEED "
                   "(K random router links), joined by + (the spec then reads SPEC@fail=ITEMS; docs/formats.md)")


def non_negative(option: str, maximum: float | None = None):
    return lambda text: parse_non_negative_number(text, option, maximum)


def add_cost_model(p) -> None:
    """--alpha and --bandwidth: the cost model's two constants (synth.pricing.alphabeta); and what a
    node adds (NodeCosts): --intra-bandwidth, --intra-latency and --copy-cost."""
    DEFAULT_ALPHA, DEFAULT_BANDWIDTH = (constant("synth.pricing.alphabeta", name) for name in ("DEFAULT_ALPHA",
                                                                                               "DEFAULT_BANDWIDTH"))

    p.add_argument("--alpha", type=positive("--alpha", 1.0), default=DEFAULT_ALPHA, metavar="S",
                   help="seconds a port takes to start one message (default 1e-6)")
    p.add_argument("--bandwidth", type=positive("--bandwidth", 1e6), default=DEFAULT_BANDWIDTH / 1e9, metavar="GBPS",
                   help="bandwidth of a link of bandwidth 1 in Gb/s (default 100)")
    p.add_argument("--intra-bandwidth", type=positive("--intra-bandwidth", 1e6), metavar="GBPS",
                   help="bandwidth of a node's internal link (NVLink, shared memory) in Gb/s, which every byte moved "
                        "between two ranks of one node crosses (--ranks-per-node Q > 1; default: unlimited, such bytes "
                        "are free)")
    p.add_argument("--intra-latency", type=non_negative("--intra-latency", 1.0), metavar="S",
                   help="seconds a rank takes to start one message to a rank of its own node (default: --alpha)")
    p.add_argument("--copy-cost", type=non_negative("--copy-cost", 1e-3), default=0.0, metavar="S",
                   help="seconds per byte a rank copies: every block it receives in a combined message (two or more "
                        "blocks) is copied once out of its receive buffer (Pham26's memcpy; e.g. 1e-10: 10 GB/s; "
                        "default 0)")


def node_costs(args, ranks_per_node: int | None = None):
    """The NodeCosts of --intra-bandwidth, --intra-latency and --copy-cost; with `ranks_per_node` 1
    the intra-node options price nothing, which is one line."""
    from synth.pricing.alphabeta import NodeCosts

    given = [option for option, value in (("--intra-bandwidth", args.intra_bandwidth),
                                          ("--intra-latency", args.intra_latency)) if value is not None]
    if given and ranks_per_node == 1:
        raise SynthError(f"{given[0]} prices transfers between ranks of one node: there are none with one rank a "
                         "node (--ranks-per-node Q > 1)")
    return NodeCosts(intra_latency=args.intra_latency,
                     intra_bandwidth_bits=args.intra_bandwidth * 1e9 if args.intra_bandwidth is not None else None,
                     copy_cost=args.copy_cost)


def pattern_syntaxes() -> str:
    """synth.traffic.patterns.pattern_syntaxes(), read from the module's source."""
    return ", ".join(kind.syntax for kind in decorated("synth.traffic.patterns", "_pattern", ("name", "syntax")))


def add_max_flows(p) -> None:
    MAX_FLOWS_ANALYSIS, MAX_FLOWS_KEPT = (constant("synth.workflow", name) for name in ("MAX_FLOWS_ANALYSIS",
                                                                                        "MAX_FLOWS_KEPT"))
    p.add_argument("--max-flows", type=integer("--max-flows", 1), metavar="N",
                   help=f"refuse runs with more flows (default {MAX_FLOWS_KEPT:,} when routes are synthesized or "
                        f"written, {MAX_FLOWS_ANALYSIS:,} for load analysis)")


def add_executor(p) -> None:
    p.add_argument("--executor", metavar="WHERE", help=f"where the phases run: {EXECUTOR_SYNTAX}")


def add_workload(p) -> None:
    """The options that select a workload (also for `synth model demand`, via load_workload)."""
    p.add_argument("--traffic", metavar="PATTERN", help=pattern_syntaxes())
    p.add_argument("--phase", metavar="SEL", help="all (default), P, P1,P2,... or A-B")
    p.add_argument("--placement", metavar="HOW", help="which terminal runs each task: contiguous (default, task i on "
                   "terminal i), random:SEED, or cartesian:G1xG2x... (a stencil's blocks of tasks per group)")
    add_max_flows(p)
    p.set_defaults(bytes=None, load_workload=load_workload)


def add_traffic(p) -> None:
    add_workload(p)
    p.add_argument("--bytes", type=size_option("--bytes"), metavar="SIZE",
                   help="message size: bytes, or with a unit (4096, 64KiB, 1MiB; default "
                        f"{size_text(constant('synth.traffic.patterns', 'DEFAULT_MESSAGE_BYTES'))})")
    p.add_argument("--table", action="store_true",
                   help=f"a row per phase even beyond {constant('synth.render.console', 'TABLE_PHASES')} phases")


def add_load_unit(p, what: str) -> None:
    p.add_argument("--load-unit", choices=constant("synth.routing.registry", "LOAD_UNITS"), default=None,
                   help="what a channel's load counts: messages, or bytes over the link's bandwidth (time units: flows "
                        "of different sizes, e.g. a csv: matrix, or links of different rates); default: bytes where "
                        f"the network's links differ in rate, else messages; {what}")


def resolve_load_unit(args, network, minimizes_messages: bool = False) -> str:
    """--load-unit as given; else bytes over bandwidth where the links differ in rate (counting messages would
    call a half-rate link's load equal to a full one's), unless the router only minimizes messages (said);
    else messages. Sets args.load_unit and returns the line that says why, or ""."""
    if args.load_unit is not None:
        return ""
    from synth.routing.registry import default_load_unit

    args.load_unit, rates = default_load_unit(network, minimizes_messages)
    if not rates:
        return ""
    shown = ", ".join(f"{r:g}" for r in rates[:6]) + (", ..." if len(rates) > 6 else "")
    if minimizes_messages:
        return (f"note: the links differ in rate ({shown}); this router minimizes messages per channel, so loads count "
                "messages (--router paths with --load-unit bytes weighs the rates)")
    return f"by default, as the links differ in rate ({shown}); --load-unit messages counts messages"


def router_options(args) -> RouterOptions:
    from synth.routing.registry import RouterOptions

    return RouterOptions(
        constraints=args.constraints, balance=args.balance, solver=args.solver, time_limit=args.time_limit,
        threads=args.threads, construction=args.construction, consistency=args.consistency,
        glpk_options=tuple(args.glpk_options.split()) if args.glpk_options else None,
        candidates=getattr(args, "candidates", None), load_unit=getattr(args, "load_unit", "messages"))


def refuse_unknown_family(spec: str) -> None:
    """The one line synth.topology.parse_topology says for a spec of no known family, said before
    the families are imported (a typo answers at once); a degraded spec (`@fail=`) is left to it."""
    from synth.core.validate import show

    if "@" in spec:
        return
    name = spec.strip().partition(":")[0].lower()
    known = [family.name for family in declared("synth.topology", "FAMILY", "Family", ("name",))]
    if name not in known:
        raise SynthError(f"unknown network family {show(name)} in spec '{spec.strip()}' (known: {', '.join(known)})")


def load(args) -> tuple[Instance, object, object]:
    """The instance (or a bare spec), its topology (degraded by --fail) and network."""
    instance = resolve(args.spec)
    if getattr(args, "fail", None) is None:
        refuse_unknown_family(instance.spec)
    from synth.topology import parse_topology
    from synth.topology.degraded import with_failures

    topology = parse_topology(with_failures(instance.spec, getattr(args, "fail", None)))
    return instance, topology, topology.network()


def workload_of(args, instance: Instance, topology, network, kept: bool):
    """The workload, the selection text as given and the selected phase numbers."""
    from synth.traffic.patterns import DEFAULT_MESSAGE_BYTES, parse_pattern
    from synth.workflow import MAX_FLOWS_ANALYSIS, MAX_FLOWS_KEPT

    pattern = args.traffic if args.traffic is not None else instance.traffic.get("pattern")
    if not pattern:
        raise SynthError("no traffic given: use --traffic PATTERN (or a [traffic] pattern in the instance file)")
    size = args.bytes if args.bytes is not None else instance.traffic.get("bytes", DEFAULT_MESSAGE_BYTES)
    csv_rows = args.max_flows if args.max_flows is not None else (MAX_FLOWS_KEPT if kept else MAX_FLOWS_ANALYSIS)
    workload = parse_pattern(pattern, network.num_terminals, topology.hierarchy(), size, max_flows=min(csv_rows, MAX_FLOWS_KEPT),
                             topology=topology)
    if args.placement is not None:
        workload = workload.place(args.placement, network.num_terminals, topology.hierarchy())
    if network.failed_nodes is not None:  # a degraded network: flows whose ends no longer meet are dropped
        workload = workload.on_network(network)
    selection = (args.phase if args.phase is not None else instance.traffic.get("phases", "all")).strip()
    return workload, selection, workload.select(selection)


def load_workload(args) -> tuple[object, object, np.ndarray]:
    """The network and the selected phases of the workload, within the analysis flow limit."""
    instance, topology, network = load(args)
    from synth.workflow import check_flow_limit

    workload, _, phases = workload_of(args, instance, topology, network, kept=False)
    check_flow_limit(workload, phases, None, False, args.max_flows)
    return topology, workload, phases


def print_phases(evaluations: list[PhaseEvaluation], network, full_table: bool, names: tuple[str, ...]) -> dict:
    from synth.render import console

    if full_table or len(evaluations) <= console.TABLE_PHASES:
        print(console.phase_rows(evaluations, network, names))
    else:
        print(console.distribution_lines(evaluations))
    totals = console.summary(evaluations)
    print(console.summary_line(totals))
    return totals


def workers_text(count: int) -> str:
    return f"{count} worker{'s' * (count != 1)}"
