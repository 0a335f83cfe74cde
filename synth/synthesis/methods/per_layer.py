"""The per-layer program and its dynamic program (synth.synthesis.layers): on a hierarchical network
(fat trees, dragonflies, several ranks a node) the spreading as stages, one per layer, each stage's
choices priced once along its pairs' paths and combined by the Pareto program; then rotations and
pipelined pieces of each point, and the leaders' points where a node has several ranks
([Prisacari20] ch.3's per-layer programs, applied to schedules)."""

from __future__ import annotations

from synth.pricing.compare import REFERENCE_BYTES
from synth.pricing.schedule_cost import map_schedule
from synth.synthesis import limits
from synth.measure.cuts import integer_bandwidth
from synth.synthesis.exact import FrontPoint, LoadClasses, delivery_rounds, rounds_lower_bound, \
    spread_schedule
from synth.synthesis.exchange import pareto
from synth.synthesis.layers import Combination, Leaders, Stage, layer_sizes, pareto_program, pipelined, rotated, \
    stage_deliveries, uniform
from synth.synthesis.methods import HALF, Method
from synth.synthesis.transfers import transfer_paths

LAYERED = ("allgather", "reduce-scatter")  # the halves the per-layer program makes (an allreduce: both)


def _points(half, found):
    plan = half.plan
    p = plan.graph.ranks
    sizes = layer_sizes(plan.topology, plan.graph.ranks_per_node, p)
    if sizes is None or p > limits.MAX_LAYERED_RANKS:
        return []
    every_pair = half.context.every_pair()
    if every_pair is None:
        return []
    layered = _layered_points(plan, sizes, every_pair, half.network, half.reverse, half.per_byte, half.say)
    half.say(f"per layer ({' x '.join(map(str, sizes))}): " + "; ".join(
        f"{f.steps} steps, {f.rounds} rounds" for f in layered))
    return layered


def _layered_points(plan, sizes: tuple[int, ...], graph, network, reverse: bool, per_byte: float,
                    say) -> list[FrontPoint]:
    """The per-layer program's Pareto front (synth.synthesis.layers) as front points over `graph`
    (every pair): each stage priced once along its pairs' paths, forward or (reduce-scatter)
    reversed; then each point's blocks split between rotations of its order and in pipelined
    pieces, each priced whole, and of them all the points no other beats in both alpha terms and
    busiest bytes (a message's, whatever the split)."""
    p = graph.ranks
    classes = LoadClasses.channels(integer_bandwidth(network))
    ratio = float(network.channel_bandwidth[0]) / float(integer_bandwidth(network)[0])

    def choice(step, sender, receiver, block):
        a, b = (receiver, sender) if reverse else (sender, receiver)
        return step, graph.pair_index(a, b), block, receiver

    def priced(deliveries, blocks: int, steps: int):
        schedule = spread_schedule("allgather", graph, plan.topology.spec, blocks, REFERENCE_BYTES, deliveries, steps,
                                   reverse, None)
        return map_schedule(schedule, plan.topology, paths=transfer_paths(graph, schedule))

    def cost(stage: Stage):
        mapped = priced(choice(*stage_deliveries(sizes, stage, (), plan.chunks, 0)), p * plan.chunks, len(stage.steps))
        return float(mapped.port_messages.sum()), float(mapped.channel_bytes.sum())

    sequential = pareto_program(sizes, cost)
    found = [(c, 1, c.alphas, c.betas) for c in sequential]  # (combination, shares, alpha terms, betas a plan block)
    splits = [pipelined(c, k) for c in sequential for k in limits.LAYERED_PIECES]
    for base in sequential + uniform(sizes, memory_layer=plan.graph.ranks_per_node > 1):
        splits += [rotated(base, sizes, leading, both_ways) for leading in range(2, len(sizes) + 1)
                   for both_ways in (False, True)]
    for split in splits:
        if split is None or p * (p - 1) * plan.chunks * split.shares > limits.MAX_TREE_DELIVERIES:
            continue
        mapped = priced(choice(*split.deliveries(sizes, plan.chunks)), p * plan.chunks * split.shares, split.steps)
        found.append((split, split.shares, float(mapped.port_messages.sum()),
                      float(mapped.channel_bytes.sum()) / split.shares))
    if plan.graph.ranks_per_node > 1:  # the node's ranks gathered to a leader: one message a node's port per step
        q = plan.graph.ranks_per_node

        def leader_cost(stage: Stage):  # the stage among the leaders (the gather and broadcast: the same for all)
            alone = Leaders(Combination((stage,), 0.0, 0.0), q)
            mapped = priced(choice(*alone.network_deliveries(sizes, plan.chunks, 0)), p * plan.chunks, len(stage.steps))
            return float(mapped.port_messages.sum()), float(mapped.channel_bytes.sum())

        among = pareto_program(sizes[1:], leader_cost)
        for network in among + [rotated(c, sizes[1:], leading, both_ways) for c in among + uniform(sizes[1:], False)
                                for leading in range(2, len(sizes)) for both_ways in (False, True)]:
            if network is None or p * (p - 1) * plan.chunks * network.shares > limits.MAX_TREE_DELIVERIES:
                continue
            # run backwards (a reduce-scatter), the direct gather is the leader scattering Q - 1 copies at one port
            whole = Leaders(network, q, "binomial" if reverse else "direct")
            blocks = p * plan.chunks * whole.shares
            mapped = priced(choice(*whole.deliveries(sizes, plan.chunks)), blocks, whole.steps)
            found.append((whole, whole.shares, float(mapped.port_messages.sum()),
                          float(mapped.channel_bytes.sum()) / whole.shares))
    kept = pareto([(alphas, betas) for _, _, alphas, betas in found])
    say(f"per layer: {len(sequential)} orders and choices on the front, {len(found) - len(sequential)} splits and "
        f"leader points priced, {sum(not isinstance(found[i][0], Combination) for i in kept)} of them kept")
    points = []
    for i in kept:
        combination, shares, _, _ = found[i]
        blocks = p * plan.chunks * shares
        made = choice(*combination.deliveries(sizes, plan.chunks))
        rounds = delivery_rounds(graph, classes, made[0], made[1], combination.steps)
        optimal = rounds <= rounds_lower_bound(per_byte * ratio, blocks)
        points.append(FrontPoint(combination.steps, rounds if shares == 1 else round(rounds / shares, 6),
                                 "optimal" if optimal else "feasible", 0.0, made, method=combination.label(sizes),
                                 graph=graph, blocks=blocks if shares > 1 else 0))
    return points


METHOD = Method("per-layer", "per-layer stages combined by a dynamic program over the Pareto fronts of each layer "
                "(fat trees, dragonflies, several ranks a node), with rotations, pipelined pieces and leaders",
                HALF, LAYERED, _points, order=50, cites="[Prisacari20] ch.3")
