"""Orbit synthesis (issue 43 item 1): above limits.MAX_SYMMETRIC_RANKS ranks, where the network's
symmetries (synth.topology.translations) act freely on its terminals (a torus's or HyperX's
translations: one orbit; a relative or circulant dragonfly's group rotation with the rotation of
every router's terminals: one orbit per router of a group), the schedule is made, verified, priced
and stored as the blocks of one rank per orbit alone (synth.collectives.orbit): the whole schedule,
chunks x P (P - 1) deliveries (4.3 x 10^9 a chunk at 65,536 ranks), is never made.

The representatives' chunks spread along balanced breadth-first trees (synth.synthesis.exact.balanced_trees)
whose loads are counted per channel orbit, a crossing of orbit O counting |G| / |O| times: the
loads of the whole schedule's step (orbit-stabilizer), as the symmetric method counts them. A
reduce-scatter is the trees reversed in time (each delivery a reduction), an allreduce the
reduce-scatter's steps and then the allgather's. The same trees, translated to every rank, are the
symmetric method's trees point on a network small enough for both (tested).
"""

from __future__ import annotations

import numpy as np

from synth.collectives.orbit import ORBIT_COLLECTIVES, OrbitSchedule, orbit_group, verify_orbit
from synth.collectives.schedule import COPY, REDUCE
from synth.core.errors import SynthError
from synth.measure.cuts import integer_bandwidth
from synth.synthesis import limits
from synth.synthesis.exact import LoadClasses, SpreadProblem, balanced_trees, decode, delivery, delivery_rounds
from synth.synthesis.symmetry import equivariant
from synth.topology.translations import channel_map


TREES_HOW = "balanced breadth-first trees, loads counted per channel orbit"


def orbit_refusal(name: str, topology, ranks_per_node: int, chunks: int, routes) -> str | None:
    """Why an orbit synthesis does not apply (None: it does); a SynthError where the group does not
    act freely on the terminals (synth.collectives.orbit.orbit_group); the transfers' invariance is
    checked by `plan_group`."""
    if name not in ORBIT_COLLECTIVES:
        return f"a {name} has one root: no translation maps it to itself (orbit synthesis makes " \
               f"{', '.join(ORBIT_COLLECTIVES)})"
    if ranks_per_node != 1:
        return "orbit synthesis takes one rank per terminal (--ranks-per-node 1)"
    if routes is not None:
        return "orbit synthesis takes the family's paths, not a routes file"
    ranks = topology.network().num_terminals
    representatives = len(orbit_group(topology, ranks).bases(np.arange(ranks, dtype=np.int64)))
    deliveries = chunks * representatives * (ranks - 1) * (2 if name == "allreduce" else 1)
    if deliveries > limits.MAX_TREE_DELIVERIES:
        whose = "rank 0's blocks make" if representatives == 1 else \
            f"the blocks of {representatives} representatives (one per rank orbit) make"
        return f"{whose} {deliveries:,} deliveries, more than the {limits.MAX_TREE_DELIVERIES:,} its trees are " \
               "made of"
    return None


def plan_group(topology, graph):
    """The translations as arithmetic (synth.topology.translations), checked to move rank 0 onto
    every rank once and every transfer's path onto the moved transfer's (so the representative's
    loads tell every channel's); a one-line SynthError where not."""
    group = orbit_group(topology, graph.ranks)
    network = topology.network()
    n = network.num_terminals
    for g in group.generators:
        if not equivariant(graph, g[:n], channel_map(network, g)):
            raise SynthError(f"the {graph.reach} transfers of {topology.spec} routed by {graph.router} are not "
                             "translation-invariant: no orbit schedule")
    return group


def load_classes(group, network) -> LoadClasses:
    """The channel orbits as load classes: a crossing of orbit O counts |G| / |O| times."""
    classes, size = group.channel_classes
    bandwidth = integer_bandwidth(network)
    per_class = np.zeros(len(size), dtype=bandwidth.dtype)
    per_class[classes] = bandwidth
    return LoadClasses(classes, group.order // size, per_class)


def spreading_half(graph, classes: LoadClasses, chunks: int, reverse: bool,
                   representatives=(0,)) -> tuple[np.ndarray, ...]:
    """(step, pair) of the representatives' chunks along balanced trees (reversed in time: a
    reduce-scatter's), sorted by step, with their chunk, their block's rank and the steps."""
    representatives = np.asarray(representatives, dtype=np.int64)
    spread = SpreadProblem.of(np.tile(representatives, chunks), graph.ranks)  # block c x R + k: chunk c of rep k
    route = delivery(graph, reverse)
    trees = balanced_trees(spread, route, graph, classes)
    step, pair, block, _ = decode(spread, route, trees)
    steps = int(step.max(initial=-1)) + 1
    if reverse:
        step = steps - 1 - step
    order = np.argsort(step, kind="stable")
    block = block[order].astype(np.int64)
    return step[order], pair[order], block // len(representatives), representatives[block % len(representatives)], \
        steps


def orbit_halves(plan) -> tuple[str, ...]:
    """The halves an orbit synthesis makes one after the other: an allreduce's reduce-scatter then
    allgather, else the collective itself; each an independent piece of work (trees_half)."""
    return ("reduce-scatter", "allgather") if plan.collective == "allreduce" else (plan.collective,)


def trees_half(plan, half: str, say=lambda text: None) -> tuple:
    """One half's balanced trees of the representatives' chunks: (step, pair, chunk, origin, steps,
    rounds), a function of the plan alone (so any worker makes the same arrays)."""
    group, graph = plan.orbit, plan.graph
    classes = load_classes(group, plan.topology.network())
    representatives = group.bases(np.arange(graph.ranks, dtype=np.int64))
    reverse = half == "reduce-scatter"
    say(f"{half}: balanced trees of {_whose(representatives)} {plan.chunks} chunk(s) over {graph.ranks - 1:,} "
        f"ranks, loads counted on {len(classes.repeat)} channel orbits")
    step, pair, chunk, origin, steps = spreading_half(graph, classes, plan.chunks, reverse, representatives)
    return step, pair, chunk, origin, steps, delivery_rounds(graph, classes, step, pair, steps)


def trees_orbit(plan, halves: list[tuple]) -> tuple[OrbitSchedule, list[dict]]:
    """The orbit schedule of one-byte blocks made of the halves' trees (trees_half, in orbit_halves'
    order), not yet verified, and per half (collective, steps, rounds)."""
    group, graph = plan.orbit, plan.graph
    representatives = group.bases(np.arange(graph.ranks, dtype=np.int64))
    parts, arrays, offset = [], [], 0
    for half, (step, pair, chunk, origin, steps, rounds) in zip(orbit_halves(plan), halves):
        parts.append({"collective": half, "steps": steps, "rounds": rounds, "representatives": len(representatives),
                      "how": TREES_HOW})
        arrays.append((step + offset, pair, chunk, origin,
                       np.full(len(step), REDUCE if half == "reduce-scatter" else COPY, dtype=np.int64)))
        offset += steps
    step, pair, chunk, origin, op = (np.concatenate(a) for a in zip(*arrays))
    orbit = OrbitSchedule(plan.collective, "synthesized", plan.topology.spec, graph.ranks, plan.chunks,
                          np.ones(plan.chunks, dtype=np.int64), offset, step, graph.src[pair].astype(np.int64),
                          graph.dst[pair].astype(np.int64), chunk, op, graph.paths.select(pair), origin=origin,
                          representatives=representatives, _group=group)
    return orbit, parts


def synthesize_orbit(plan, say=lambda text: None) -> tuple[OrbitSchedule, list[dict]]:
    """The plan's collective as an orbit schedule of one-byte blocks (sized per message by the
    caller), verified on its orbit, and per half (collective, steps, rounds): the halves made here
    one after the other (synth.synthesis.orbit_methods runs them on workers)."""
    orbit, parts = trees_orbit(plan, [trees_half(plan, half, say) for half in orbit_halves(plan)])
    return verified(orbit, plan, say), parts


def verified(orbit: OrbitSchedule, plan, say, report=None) -> OrbitSchedule:
    """The orbit schedule once its verification (`report`, made here where None) passes; a failure
    is a bug of the synthesis, raised, never written."""
    report = verify_orbit(orbit, plan.topology) if report is None else report
    if not report.ok:  # a bug of the synthesis, never written
        raise AssertionError(f"the {orbit.algorithm} {plan.collective} orbit schedule is wrong: {report.violation}")
    say(f"verified on the orbit: {report.block_sends:,} block deliveries in {report.transfers:,} transfers")
    return orbit


def _whose(representatives: np.ndarray) -> str:
    return "rank 0's" if len(representatives) == 1 else f"{len(representatives)} representatives'"


def generated_orbit(topology, graph, group, algorithm: str = "bucket", collective: str = "allreduce") -> OrbitSchedule:
    """A generated algorithm that the translations map onto itself, as an orbit schedule along the
    transfers' paths (one-byte blocks): the bucket allreduce (DeSensi24's baseline,
    synth.collectives.algorithms.bucket), the best generated allreduce on tori, priced beside an
    orbit synthesis where its explicit form (P x 2 sum (d_k - 1) x 2D transfers) is too large;
    `collective` reduce-scatter or allgather: its first or second half alone (the multi-dimensional
    ring reduce-scatter and allgather)."""
    from synth.collectives.algorithms.bucket import rank0_deliveries

    if algorithm != "bucket":
        raise SynthError(f"no orbit form of the generated {algorithm}")
    dims = tuple(int(d) for d in topology.router_coordinates().max(axis=0) + 1)
    if len(set(dims)) > 1:  # the instances then share a direction in some steps: the orbit form would combine their
        # transfers between two ranks into one message, which the explicit bucket keeps apart
        raise SynthError(f"the bucket's orbit form takes a grid of equal dimensions, not {'x'.join(map(str, dims))}")
    step, src, dst, chunk, op, steps = rank0_deliveries(dims)
    if collective != "allreduce":
        keep = op == (REDUCE if collective == "reduce-scatter" else COPY)
        step, src, dst, chunk, op = step[keep], src[keep], dst[keep], chunk[keep], op[keep]
        steps //= 2
        step = step - (steps if collective == "allgather" else 0)
    pair = graph.pair_index(src, dst)
    chunks = 2 * len(dims)
    return OrbitSchedule(collective, "bucket", topology.spec, graph.ranks, chunks, np.ones(chunks, dtype=np.int64),
                         steps, step, src, dst, chunk, op, graph.paths.select(pair), _group=group)


def sized(orbit: OrbitSchedule, size: int) -> OrbitSchedule:
    """The orbit schedule with its blocks sized for a message of `size` bytes (a rank's vector: the
    chunks x P blocks rounded up to whole bytes, as every synthesized schedule's)."""
    from dataclasses import replace

    return replace(orbit, chunk_bytes=np.full(orbit.chunks, -(-size // orbit.blocks), dtype=np.int64))


def orbit_record(plan, orbit: OrbitSchedule, parts: list[dict], sizes: list[int], alpha: float, bandwidth_bits: float,
                 node) -> dict:
    """What the file says of its synthesis, with the keys of every synthesis record
    (synth.synthesis.portfolio.record): per size the cost (priced on the orbit,
    synth.pricing.orbit_cost) next to the bound of any schedule, and honest statuses: a size is
    optimal only where it meets that bound; the trees are feasible (no program proves them)."""
    from synth.pricing.orbit_cost import map_orbit
    from synth.synthesis.claims import FEASIBLE, OPTIMAL, bounds_record, size_entry

    mapped = map_orbit(orbit, plan.topology)  # one-byte blocks: the time at a size scales them
    per_size = [size_entry(plan, size, mapped.time(alpha, bandwidth_bits, -(-size // orbit.blocks), node), [FEASIBLE],
                           alpha, bandwidth_bits, node) for size in sizes]
    named = {"levels": ("orbit levels", "orbit-levels"), "digit-bruck": ("orbit digit Bruck", "orbit-digit-bruck")}
    how, by = named.get(orbit.algorithm, ("orbit trees", "orbit-trees"))
    return {
        "method": plan.method,
        "transfers": plan.graph.reach,
        "router": plan.graph.router,
        "chunks": plan.chunks,
        "status": OPTIMAL if all(e["status"] == OPTIMAL for e in per_size) else FEASIBLE,
        "parts": [{**part, "status": FEASIBLE, "method": how, "by": by, "transfers": plan.graph.reach,
                   "router": plan.graph.router} for part in parts],
        **bounds_record(plan, alpha, bandwidth_bits, node),
        "sizes": per_size,
    }


__all__ = ["orbit_refusal", "plan_group", "load_classes", "spreading_half", "orbit_halves", "trees_half", "trees_orbit",
           "synthesize_orbit", "verified", "sized",
           "orbit_record", "generated_orbit"]
