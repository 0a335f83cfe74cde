"""`synth schedule COLLECTIVE --algorithm NAME --network SPEC [--bytes N] [--out FILE]` generates a
step schedule (synth.collectives.algorithms) and verifies it before writing it; `synth schedule --list`
shows which algorithm generates which collective; `synth verify SCHEDULE.json` replays a schedule
file symbolically (synth.collectives.verify): exit 0 when it delivers what the collective promises,
1 with the first violation otherwise.

Ranks are the network's terminals, rank i on terminal i. The message is --bytes per rank: split
into the collective's blocks (one per rank, or per rank pair for all-to-all; --blocks for the
collectives that split a message freely: broadcast, reduce, allreduce), rounded up to whole bytes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from synth.core.errors import SynthError
from synth.core.text import counted
from synth.pricing.alphabeta import FREE, NodeCosts, beta_of
from synth.pricing.closed_forms import closed_form
from synth.pricing.path_hops import all_pairs_hops, mapped_hops
from synth.pricing.schedule_cost import costs, map_schedule, recorded_paths
from synth.io.routes_file import read_routes
from synth.collectives.algorithms import (ALGORITHMS, Algorithm, Request, grid_shape, refuse_options,
                                       sends_every_pair, too_large)
from synth.collectives.schedule import COLLECTIVES, Collective, Schedule, collective
from synth.collectives.sizes import parse_sizes
from synth.collectives.verify import expected_blocks, verify

DEFAULT_BYTES = 1 << 20
MAX_BYTES = 1 << 40


@dataclass(frozen=True)
class SchedulePlan:
    """What `plan_schedule` settled: the collective, its generator, the network, the generator's
    request (ranks, blocks, block size, root, ...), the routes file read and checked (or None), and
    the note on a size rounded up to whole bytes per block ('' when none)."""

    info: Collective
    algorithm: Algorithm
    topology: object
    request: Request
    routes: dict | None
    rounding: str


def plan_schedule(collective_name: str, algorithm_name: str, topology, *, message_bytes: int = DEFAULT_BYTES,
                  blocks: int | None = None, root: int = 0, peer: int | None = None, radix: int | None = None,
                  batch: int | None = None, ranks_per_node: int = 1, sizes: str | None = None, router: str | None = None,
                  routes_path: str | None = None) -> SchedulePlan:
    """Check a schedule's inputs against each other and the network and make the generator's
    request: every refusal (one line, SynthError) comes before anything large is made, the size
    guards included (synth.collectives.algorithms.too_large); the alltoallv's P^2 sizes come last."""
    info = collective(collective_name)
    algorithm = ALGORITHMS.get(algorithm_name)
    if info.name not in algorithm.collectives:
        raise SynthError(f"{algorithm.name} generates {', '.join(algorithm.collectives)}, not {info.name}")
    ranks = topology.network().num_terminals * ranks_per_node
    routes = checked_routes(routes_path) if routes_path is not None else None
    if info.rooted and root >= ranks:
        raise SynthError(f"--root {root} is not a rank of {topology.spec} (0..{ranks - 1})")
    if not info.rooted and root != 0:
        raise SynthError(f"{info.name} has no root")
    if (peer is not None) != (info.name == "p2p"):
        raise SynthError("p2p needs --peer Q (the destination; --root is the source)" if info.name == "p2p"
                         else f"--peer applies to p2p, not to {info.name}")
    if peer is not None and peer >= ranks:
        raise SynthError(f"--peer {peer} is not a rank of {topology.spec} (0..{ranks - 1})")
    natural_blocks = expected_blocks(info.name, ranks)
    dims = grid_shape(topology, ranks_per_node)
    if natural_blocks is None:
        natural = Request(info.name, ranks, ranks, 0, topology.spec, root, dims, peer=peer)
        natural_blocks = blocks if blocks is not None else \
            algorithm.default_blocks(natural) if algorithm.default_blocks is not None else ranks
    elif blocks is not None:
        raise SynthError(f"{info.name} has one block per {'rank' if natural_blocks == ranks else 'rank pair'}: --blocks "
                         "applies to broadcast, reduce and allreduce")
    blocks = natural_blocks
    divisor = ranks if info.blocks == "P^2" else blocks
    per_block = -(-message_bytes // divisor)  # a rank's message over its blocks, rounded up to whole bytes
    rounding = (f"; --bytes {message_bytes:,} rounded up to {per_block * divisor:,} B ({divisor:,} blocks of whole "
                "bytes), the size priced" if per_block * divisor != message_bytes and sizes is None else "")
    if sizes is not None and info.name != "alltoallv":
        raise SynthError(f"--sizes gives the block sizes of an alltoallv, not of {info.name}")
    refuse_options(algorithm, {"batch": batch, "radix": radix})
    request = Request(info.name, ranks, blocks, per_block, topology.spec, root, dims, radix, batch, ranks_per_node, None,
                      peer)
    refusal = algorithm.refusal(request) or too_large(algorithm, request)  # before the sizes (P^2 of them) are made
    if refusal is None and routes is None and sends_every_pair(algorithm):  # its routes' hops are known already
        refusal = too_large(algorithm, request, hops=all_pairs_hops(topology, router, ranks_per_node))
    if refusal is not None:
        raise SynthError(refusal)
    if sizes is not None:
        request = dataclasses.replace(request, sizes=parse_sizes(sizes, ranks))
    return SchedulePlan(info, algorithm, topology, request, routes, rounding)


def make_schedule(plan: SchedulePlan, router: str | None = None, say=lambda text: None) -> Schedule:
    """The planned schedule, generated and verified by the symbolic replay (a wrong one is a
    generator's bug, never returned); refused when, with its transfers' routes (`router`, or the
    plan's routes file), it would not fit to be priced."""
    algorithm, request = plan.algorithm, plan.request
    say(f"generating {plan.info.name} by {algorithm.name} on {request.ranks:,} ranks")
    schedule = algorithm.generate(request)
    oversized = too_large(algorithm, request, schedule.num_block_sends, schedule.num_transfers,
                          mapped_hops(schedule, plan.topology, router, plan.routes))
    if oversized is not None:  # with its transfers' routes and pricing: refuse before the replay
        raise SynthError(oversized)
    say(f"verifying {schedule.num_block_sends:,} block sends")
    report = verify(schedule)
    if not report.ok:  # a generator's bug: never write a wrong schedule
        raise AssertionError(f"{algorithm.name} generated a wrong {plan.info.name} schedule: {report.violation}")
    schedule.network_sha256 = plan.topology.source_digest()  # of the file read, where it is one (fabric:, graph:)
    return schedule


def checked_routes(path: str) -> dict:
    """A routes file to price a schedule on, re-verified as `synth check` does: paths that leave
    the network or walk a channel twice are refused, not priced."""
    from synth.checking.routes import check_routes

    doc = read_routes(path)
    verified = check_routes(doc)
    if not verified.ok:
        raise SynthError(f"routes file '{path}' does not pass synth check: {verified.problems[0]}")
    return doc


PROGRESS_BLOCK_SENDS = 1 << 22  # schedules from which the stages are announced on stderr (seconds of work)


def cost_lines(schedule, topology, router: str | None, seed: int, alpha: float, bandwidth_bits: float, routes=None,
               node: NodeCosts = FREE) -> str:
    """The schedule mapped onto `router`'s routes (a routes file's, or by default the paths the
    schedule records, else the family's router's), priced by synth's cost model
    (synth.pricing.alphabeta, with what a node adds: `node`) next to the bound of any schedule under
    the same model; an allreduce on a torus also by DeSensi24's deficiency model, and the seed's closed form where
    one exists."""
    mapped = map_schedule(schedule, topology, router, seed, routes)
    router = ("the routes file's" if routes is not None else router if router is not None else
              "the schedule's recorded" if recorded_paths(schedule, topology) else topology.default_router)
    c = costs(mapped, schedule.ranks, alpha, bandwidth_bits)
    busiest = mapped.channel_bytes.sum() + mapped.size_bytes.sum()
    steps = mapped.steps + mapped.size_exchanges
    lines = [f"cost      {router} routes: alpha-beta {c.time * 1e6:.4g} us = {mapped.messages} x alpha {alpha * 1e6:g} us "
             f"(the most messages one port starts, summed over {counted(steps, 'step')}) + {busiest:,.0f} B over the steps' busiest "
             f"channels at {bandwidth_bits / 1e9:g} Gb/s"]
    if not node.free:
        lines.append(node_line(mapped, alpha, bandwidth_bits, node))
    lines.append(f"bound     {mapped.bound.text(mapped.vector_bytes, alpha, bandwidth_bits, node)}")
    stronger = _stronger_bound(schedule, topology, mapped, alpha, bandwidth_bits, node)
    if stronger:
        lines.append(stronger)
    if schedule.collective == "allreduce" and topology.torus_ports() is not None:  # the model of a torus's nodes
        lines.append(f"model     DeSensi24 eq. 1, T = log2(p) alpha Lambda + (n/D) beta Psi Xi, n {mapped.vector_bytes:,} B, "
                     f"2D = {mapped.ports} ports: Lambda {c.latency_deficiency:.4f}, Psi {c.bandwidth_deficiency:.4f}, "
                     f"Xi {c.congestion_deficiency:.4f}")
    lines.append(f"contention most transfers on one link per step: {_runs(mapped.flows.tolist())}")
    return "\n".join(lines) + _closed_form_line(schedule, topology, alpha, bandwidth_bits, c.time)


def node_line(mapped, alpha: float, bandwidth_bits: float, node: NodeCosts) -> str:
    """The schedule's time with the node's costs, and what they price."""
    terms, sizes = mapped.node_terms, mapped.size_node_terms
    inside = float(terms.intra_bytes.sum() + sizes.intra_bytes.sum())
    copied = float(terms.copy_bytes.sum())
    return (f"node      {node.text()}: {mapped.time(alpha, bandwidth_bits, node=node) * 1e6:.4g} us "
            f"({inside:,.0f} B over the steps' busiest node-internal links, {copied:,.0f} B copied by the steps' "
            f"busiest copiers, {int(terms.memory_messages.sum() + sizes.memory_messages.sum())} starts at memory "
            "ports)")


def _stronger_bound(schedule, topology, mapped, alpha: float, bandwidth_bits: float, node: NodeCosts = FREE) -> str:
    """The strongest bound synth has for any schedule of the collective (synth.pricing.bounds: the
    cut bound, an all-to-all's flow bound), where it is above the injection count's."""
    from synth.pricing.bounds import schedule_bound

    n = mapped.vector_bytes
    bound = schedule_bound(schedule, topology, mapped.bound)
    seconds = bound.seconds(n, alpha, bandwidth_bits, node)
    if seconds <= mapped.bound.seconds(n, alpha, bandwidth_bits, node) * (1 + 1e-9):
        return ""
    return (f"bound     stronger: {seconds * 1e6:.4g} us (any schedule: {bound.messages} x alpha, "
            f"{bound.bandwidth.busiest_bytes(n):,.0f} B over bandwidth: {bound.bandwidth.why})")


def _closed_form_line(schedule, topology, alpha: float, bandwidth_bits: float, measured: float) -> str:
    form = closed_form(schedule, topology, alpha, beta_of(bandwidth_bits))
    if form is None:
        return ""
    bound = f"; MULTITREE takes at least {form.steps_lower_bound} steps ((4.4))" if form.steps_lower_bound else ""
    return (f"\nseed      {form.source}: {form.formula} = {form.seconds * 1e6:.4g} us (measured {measured * 1e6:.4g} us)"
            f"{bound}")


def _runs(values: list[int]) -> str:
    return " ".join(map(str, values)) if len(values) <= 24 else " ".join(map(str, values[:24])) + " ..."


def promise(name: str) -> str:
    """What a verified schedule of collective `name` delivers, in words."""
    if COLLECTIVES[name].reduction:
        return "every promised block reduced over all ranks, each contribution once"
    return "every rank ends with the blocks the collective promises"
