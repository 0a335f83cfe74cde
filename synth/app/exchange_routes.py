"""An all-to-all's synthesized routing as a routes file (synth-routes/2): one phase of every
ordered node pair (traffic `a2a-all`), each along the path its blocks take, so that `synth
check`, `synth tables` (the fabric's LFTs), `synth vls` and `synth synthesize --routes` take the
routes of the schedule (issue 24).

The file names the router whose rules the paths keep, as `synth check` verifies them: the
path-selection program's are `paths` with the options it ran with (its objective: the bytes of
every node pair, load_unit bytes); the translated routing of tori and HyperX chooses among minimal
paths, `minimal`; a family router's or a routes file's paths are that router's. The phase is
evaluated as `synth route` evaluates one (the busiest channel against the cut bounds of the
phase, and the program's LP bound where it ran); a flow carries its node pair's Q^2 blocks as
Q^2 bytes, the weights the program balanced.
"""

from __future__ import annotations

import numpy as np

from synth.app.route import phase_record
from synth.core.errors import SynthError
from synth.io.routes_file import open_routes_writer, routes_header
from synth.io.routes_hdf5 import wants_hdf5
from synth.measure.evaluate import PhaseEvaluation, evaluate_batch, strengthen
from synth.render import console
from synth.routing.registry import ROUTERS, RouterOptions
from synth.synthesis.exchange import ROUTER, TRANSLATED
from synth.traffic.patterns import parse_pattern
from synth.workflow import RoutedPhase

PATTERN = "a2a-all"


def exchange_router(plan) -> tuple[str, dict | None, str]:
    """(router, its synthesis options or None, load unit) that the file records for the plan's paths."""
    exchange = plan.exchange
    name = exchange.graph.router
    if plan.routes is not None:
        return (plan.routes.get("router", "unknown"), plan.routes.get("synthesis"),
                plan.routes.get("load_unit", "messages"))
    if name == ROUTER:
        return "paths", exchange.options.describe(), exchange.options.objective
    if name == TRANSLATED:  # terminal 0's minimal paths, translated: minimal ones
        return "minimal", None, "messages"
    return name, ROUTERS.get(name, plan.topology).recorded_synthesis(RouterOptions()), "messages"


def write_exchange_routes(target, plan) -> PhaseEvaluation:
    """The routes file of an all-to-all plan's routing into the reserved output `target`; its
    phase's evaluation."""
    if plan.exchange is None:
        raise SynthError("--routes-out: only an all-to-all's synthesis routes its pairs (alltoall)")
    if plan.sizes is not None:
        raise SynthError("--routes-out: an alltoallv's routes weigh its matrix's bytes, which a routes file's traffic "
                         "(a pattern) cannot name; synthesize alltoall for the fabric's tables")
    topology = plan.topology
    network = topology.network()
    graph = plan.exchange.graph
    q = graph.ranks_per_node
    # a flow's bytes are its node pair's blocks (Q^2, a byte each): the program's weights, so that its
    # solver report (LP bound, contention) is in the file's units
    workload = parse_pattern(PATTERN, network.num_terminals, topology.hierarchy(), q * q)
    flows = workload.flows(0)
    # a node pair's path: the one of its first ranks' pair (every rank pair of two nodes takes it)
    keys = graph.dst.astype(np.int64) * graph.ranks + graph.src
    wanted = flows.dst * q * graph.ranks + flows.src * q
    found = np.searchsorted(keys, wanted)
    if len(keys) == 0 or (found >= len(keys)).any() or (keys[np.minimum(found, len(keys) - 1)] != wanted).any():
        raise AssertionError("the exchange's transfer graph lacks a node pair")  # every pair is routed
    paths = graph.paths.select(found)
    router, synthesis, load_unit = exchange_router(plan)
    (evaluation,) = evaluate_batch(topology, network, np.zeros(1, dtype=np.int64), np.zeros(len(flows), dtype=np.int64),
                                   flows.src, flows.dst, paths, weights=flows.bytes if load_unit == "bytes" else None)
    report = plan.exchange.report if router == "paths" and plan.routes is None else None
    if report is not None:
        strengthen(evaluation, report, bool(report.timeouts))
    header = routes_header(topology, workload, "all", router, 0, load_unit, synthesis)
    with open_routes_writer(target, header) as writer:
        writer.add_phase(phase_record(topology, RoutedPhase(flows, paths, evaluation, report), None,
                                      arrays=wants_hdf5(target.target)))
        writer.close(console.summary([evaluation]))
    return evaluation
