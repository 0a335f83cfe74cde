"""What a synthesis makes: the collective, its transfers, the bounds of any schedule and the
program's form (exact, symmetric, or trees alone), with the size guards checked before anything
large is made. The methods (synth.synthesis.methods) and the portfolio (synth.synthesis.portfolio)
read the plan; nothing here runs a method.

- exact: the time-expanded program over every rank's blocks (up to limits.MAX_EXACT_RANKS);
- symmetric: the program of one rank per orbit of the network's translations, translated to all
  (tori, HyperX, Kautz K(D,2)); its default chunks make the cut bound whole rounds;
- orbit: above limits.MAX_SYMMETRIC_RANKS, where the family's symmetries (Topology.symmetries: the
  translations, a dragonfly's group rotation, an XGFT's level shifts, a Slim Fly's shifts, the
  rotation of a router's terminals) act freely on the ranks, the orbit methods of one rank per
  orbit's blocks alone, made, verified, priced and stored on the orbit (synth.synthesis.orbit_methods);
- trees: no program (networks without translations above limits.MAX_EXACT_RANKS, or when asked):
  balanced trees, and above limits.MAX_TREE_DELIVERIES the relay trees alone;
- an all-to-all(v): its pairs routed with every block in one phase (synth.synthesis.exchange), and
  the flow bound of any schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.collectives.schedule import collective
from synth.core.errors import SynthError
from synth.pricing.alphabeta import node_ports
from synth.synthesis import limits
from synth.pricing.bounds import EXCHANGES, StepBound, TimeBound, bandwidth_bound, exchange_time_bound, step_bound, time_bound
from synth.measure.cuts import integer_bandwidth
from synth.synthesis.exchange import ExchangeRouting, route_exchange
from synth.synthesis.relay import rank_groups
from synth.synthesis.symmetry import Symmetry, network_symmetry
from synth.synthesis.transfers import (DIGITS, LANES, MAX_PAIRS, REACHES, count_node_pairs, digit_pairs,
                                       forced_neighbour_paths, lane_pairs, pairs_graph, rank_pairs, transfer_graph)

SYNTHESIZED = ("allgather", "reduce-scatter", "allreduce", "broadcast", "reduce", *EXCHANGES)
MODES = ("auto", "exact", "symmetric", "trees")  # the program's form (--method)


@dataclass(frozen=True)
class SynthesisPlan:
    collective: str
    topology: object
    graph: object  # synth.synthesis.transfers.TransferGraph
    root: int
    chunks: int  # blocks per rank (allgather, reduce-scatter, allreduce) or in all (broadcast, reduce)
    step_bound: StepBound
    time_bound: TimeBound
    symmetry: Symmetry | None = None  # translations: the representatives' schedule is designed, then translated
    exchange: ExchangeRouting | None = None  # alltoall(v): the pairs' paths with every block in one phase
    sizes: np.ndarray | None = None  # alltoallv: the P^2 block sizes
    trees_only: bool = False  # no program: the balanced trees (networks without translations above limits.MAX_EXACT_RANKS)
    relay_only: bool = False  # above limits.MAX_TREE_DELIVERIES: the relay trees in their place (synth.synthesis.relay)
    routes: dict | None = None  # a routes file (synth-routes/2) whose paths every transfer takes, in place of a router
    orbit: object | None = None  # above limits.MAX_SYMMETRIC_RANKS: the symmetries (synth.topology.translations) of
    # an orbit synthesis, one rank per orbit's blocks alone made and stored (synth.synthesis.orbit_trees)

    @property
    def method(self) -> str:
        if self.exchange is not None:
            return ("phases: every block in one phase along paths chosen for all pairs at once, or forwarding (TuNA's "
                    "radix-r rounds, the generated algorithms) along them or the family's, per size the least time "
                    "(synth.synthesis.exchange)")
        if self.relay_only:
            return ("trees: relay trees through every group of ranks, direct (two steps) and gathered (three), over "
                    "the pairs they take, and every block straight where every pair fits (synth.synthesis.relay; "
                    f"above {limits.MAX_TREE_DELIVERIES:,} deliveries no balanced trees are made)")
        if self.orbit is not None:
            several = len(self.orbit.bases(np.arange(self.graph.ranks)))
            whose = "rank 0's blocks," if several == 1 else f"the blocks of {several} ranks, one per orbit,"
            return (f"orbit: per size the least of the balanced breadth-first trees and, on a maximum-size dragonfly, "
                    f"the level-by-level schedule, of {whose} loads counted per channel orbit, moved to every rank by "
                    f"{self.orbit.order:,} symmetries; made, verified, priced and stored on the orbit "
                    "(synth.synthesis.orbit_trees, orbit_levels)")
        if self.symmetry is None and self.trees_only:
            return ("trees: breadth-first spreading trees of every rank's blocks with their loads balanced, over the "
                    "transfers and over every pair, and relay trees through every group (synth.synthesis.exact."
                    "balanced_trees, synth.synthesis.relay)")
        if self.symmetry is None:
            return "exact: time-expanded integer program (synth.synthesis.exact)"
        return (f"symmetric: time-expanded integer program of {len(self.symmetry.representatives)} representative "
                f"rank(s), translated by {self.symmetry.order} automorphisms (synth.synthesis.symmetry)")


def plan_synthesis(collective_name: str, topology, *, ranks_per_node: int = 1, root: int = 0, chunks: int | None = None,
                   reach: str | None = None, router: str | None = None, method: str = "auto", sizes=None,
                   time_limit: float = 60.0, solver: str = "cpsat", say=lambda text: None,
                   check_only: bool = False, routes: dict | None = None) -> SynthesisPlan | None:
    """What to synthesize, with the transfers and the bounds (an all-to-all(v)'s pairs are routed
    here, by the path-selection program within `time_limit`, unless `router` is given; with
    `check_only` its options are checked and None returned, before that long part)."""
    info = collective(collective_name)
    if info.name not in SYNTHESIZED:
        raise SynthError(f"synth synthesize makes {', '.join(SYNTHESIZED)}, not {info.name} (yet)")
    if method not in MODES:
        raise SynthError(f"--method {method}: expected one of {', '.join(MODES)}")
    if (sizes is None) != (info.name != "alltoallv"):
        raise SynthError("alltoallv needs its block sizes (--sizes)" if sizes is None else
                         f"--sizes gives an alltoallv's block sizes, not {info.name}'s")
    if routes is not None and router is not None:
        raise SynthError("--routes and --router: the transfers take one or the other")
    if routes is not None and routes["topology"]["spec"] != topology.spec:
        raise SynthError(f"the routes file is for {routes['topology']['spec']}, not {topology.spec}")
    if info.name in EXCHANGES:
        return _plan_exchange(info.name, topology, ranks_per_node, root, chunks, reach, router, method, sizes,
                              time_limit, solver, say, check_only, routes)
    network = topology.network()
    ranks = network.num_terminals * ranks_per_node
    grouped = method in ("auto", "symmetric") and info.name not in ("broadcast", "reduce")
    symmetric = grouped and topology.translations() is not None
    # above, one rank per orbit's blocks and the group (checked below): the translations, or the wider
    # symmetries orbit synthesis takes (a dragonfly's group rotation, the rotation of a router's terminals)
    orbit = grouped and ranks > limits.MAX_SYMMETRIC_RANKS and bool(topology.symmetries())
    if method == "symmetric" and not (symmetric or orbit):
        raise SynthError(f"--method symmetric: {topology.spec} has no translations synth knows"
                         if info.name not in ("broadcast", "reduce") else
                         f"--method symmetric: a {info.name} has one root, no translation maps it to itself")
    if ranks > (ranks if orbit else limits.MAX_SYMMETRIC_RANKS if symmetric else
                limits.MAX_EXACT_RANKS if method == "exact" else ranks):
        raise SynthError(f"{topology.spec} has {ranks} ranks: the {'symmetric' if symmetric else 'exact'} method "
                         f"takes up to {limits.MAX_SYMMETRIC_RANKS if symmetric else limits.MAX_EXACT_RANKS}")
    if info.rooted and not 0 <= root < ranks:
        raise SynthError(f"--root {root} is not a rank of {topology.spec} (0..{ranks - 1})")
    if not info.rooted and root != 0:
        raise SynthError(f"{info.name} has no root")
    if not (symmetric or orbit) and (method == "trees" or ranks > limits.MAX_EXACT_RANKS):  # before any pair is routed
        check_tree_size(info.name, topology, ranks_per_node, chunks)
    if orbit:  # what an orbit synthesis needs, said before any pair is routed
        from synth.synthesis.orbit_trees import orbit_refusal

        why = orbit_refusal(info.name, topology, ranks_per_node, chunks or 1, routes)
        if why is not None:
            raise SynthError(f"{topology.spec} has {ranks:,} ranks, above the {limits.MAX_SYMMETRIC_RANKS:,} the "
                             f"symmetric method translates: an orbit synthesis takes them, but {why}")
    # an orbit synthesis takes more pairs: its trees are the representatives' alone (limits.MAX_ORBIT_PAIRS)
    limit = limits.MAX_ORBIT_PAIRS if orbit else MAX_PAIRS
    if reach is None and routes is None and router is None and ranks_per_node == 1 and \
            (neighbours := count_node_pairs(network, "neighbours")) > limit:
        # too many neighbour pairs (a 16,512-rank dragonfly's 3.2 M, a 30,618-rank Slim Fly's 27 M): one
        # router's terminals and every router lane (lane_pairs), along their forced one-hop paths
        lanes = lane_pairs(network)
        if lanes is not None and len(lanes[0]) > limit:
            raise SynthError(f"{topology.spec}: {neighbours:,} rank pairs with neighbours transfers and "
                             f"{len(lanes[0]):,} with their lanes (a router's terminals, the k-th terminals of linked "
                             f"routers), more than the {limit:,} a synthesis takes: take a smaller network")
        paths = None if lanes is None else forced_neighbour_paths(network, *lanes)
        joined = None if paths is None else pairs_graph(topology, 1, LANES, lanes, topology.default_router,
                                                        node_paths=paths)
        if joined is not None and joined.joins_every_rank():
            reach, graph = LANES, joined
    if reach is None:  # neighbours where they join every rank, else every pair
        graph = transfer_graph(topology, ranks_per_node, "neighbours", router, routes=routes, limit=limit)
        if not graph.joins_every_rank():
            # an orbit synthesis: the pairs of one differing digit (an XGFT's leaves, the pairs of every
            # pair are a billion), else every pair
            digits = digit_pairs(topology) if orbit and routes is None else None
            if digits is not None:
                graph = pairs_graph(topology, 1, DIGITS, digits, router)
            else:
                every = rank_pairs(network, "all", ranks_per_node)
                if every > limit:  # neither reach: said here (transfer_graph would suggest the neighbours)
                    raise SynthError(f"{topology.spec}: its neighbour transfers do not join every rank, and its "
                                     f"{every:,} rank pairs with all transfers are more than the {limit:,} a "
                                     "synthesis takes: take a smaller network")
                graph = transfer_graph(topology, ranks_per_node, "all", router, routes=routes, limit=limit)
    elif reach != LANES:
        if reach not in REACHES:
            raise SynthError(f"--transfers {reach}: expected one of {', '.join(REACHES)}")
        graph = transfer_graph(topology, ranks_per_node, reach, router, routes=routes, limit=limit)
    if orbit:
        return _plan_orbit(info.name, topology, graph, root, chunks, routes)
    symmetry = network_symmetry(topology, graph) if symmetric else None
    if method == "symmetric" and symmetry is None:
        raise SynthError(f"--method symmetric: the {graph.reach} transfers of {topology.spec} routed by {graph.router} "
                         "are not translation-invariant")
    # without translations: the program up to limits.MAX_EXACT_RANKS, the balanced trees alone above (or when asked)
    trees_only = symmetry is None and (method == "trees" or ranks > limits.MAX_EXACT_RANKS)
    relay_only = trees_only and not check_tree_size(info.name, topology, ranks_per_node, chunks)
    # The cut bound's sinks: one terminal per orbit suffices (the translations move every cut onto one of them)
    terminals = None if symmetry is None else symmetry.representatives // ranks_per_node
    bound = time_bound(info.name, network, ranks_per_node, root, terminals)
    if chunks is None:
        chunks = 1 if symmetry is None else least_whole_chunks(
            bound.bandwidth if info.name != "allreduce" else
            bandwidth_bound("allgather", network, ranks_per_node, root, terminals), network, ranks)
    if symmetry is not None:
        check_translated_size(info.name, topology, ranks, chunks)
    return SynthesisPlan(info.name, topology, graph, root, chunks, step_bound(info.name, graph, root), bound, symmetry,
                         trees_only=trees_only, relay_only=relay_only, routes=routes)


def _plan_orbit(name: str, topology, graph, root: int, chunks: int | None, routes) -> SynthesisPlan:
    """An orbit synthesis' plan: the group checked on the transfers, and the bounds from rank 0 (the
    translations move every cut onto one holding it, and every rank is as far from the rest)."""
    from synth.synthesis.orbit_trees import orbit_refusal, plan_group

    group = plan_group(topology, graph)
    network = topology.network()
    ranks = graph.ranks
    representatives = group.bases(np.arange(ranks, dtype=np.int64))
    bound = time_bound(name, network, 1, root, representatives)
    if chunks is None:
        chunks = least_whole_chunks(bound.bandwidth if name != "allreduce" else
                                    bandwidth_bound("allgather", network, 1, root, representatives), network, ranks)
        why = orbit_refusal(name, topology, 1, chunks, routes)
        if why is not None:
            raise SynthError(f"{topology.spec}: an orbit synthesis of {chunks} chunks: {why}")
    return SynthesisPlan(name, topology, graph, root, chunks, step_bound(name, graph, root, representatives=representatives), bound,
                         orbit=group, routes=routes)


def check_translated_size(name: str, topology, ranks: int, chunks: int) -> None:
    """The symmetric method's size guard: the representatives' schedule translated to every rank
    is chunks x P (P - 1) deliveries (an allreduce's halves one after the other: the same at a
    time), limits.BYTES_PER_DELIVERY each; refused in one line, before any program is built, where
    that would not fit the memory this process may use (synth.core.memory)."""
    from synth.core import memory

    per_chunk = ranks * (ranks - 1)
    need, budget = chunks * per_chunk * limits.BYTES_PER_DELIVERY, memory.budget()
    if need <= budget.bytes:
        return
    fits = budget.bytes // (per_chunk * limits.BYTES_PER_DELIVERY)
    helps = f"--chunks {fits} or fewer fits" if fits >= 1 else "not even one chunk fits: take a smaller network"
    raise SynthError(f"{topology.spec}: the {name} of {ranks:,} ranks with {chunks} chunks translates to "
                     f"{chunks * per_chunk:,} deliveries, which needs about {memory.gib(need)}; synth plans with "
                     f"{budget} here; {helps}")


def check_tree_size(name: str, topology, ranks_per_node: int, chunks: int | None) -> bool:
    """The trees method's size guard: whether its balanced trees (made delivery by delivery)
    fit; above, the relay trees (arrays) take their place up to limits.MAX_RELAY_DELIVERIES, where the
    ranks come in groups (one line and exit 2 beyond, or without groups)."""
    ranks = topology.network().num_terminals * ranks_per_node
    blocks = (chunks or 1) * (ranks if name in ("allgather", "reduce-scatter", "allreduce") else 1)
    deliveries = blocks * (ranks - 1)
    if deliveries <= limits.MAX_TREE_DELIVERIES:
        return True
    head = f"{topology.spec} has {ranks} ranks: {deliveries:,} deliveries (blocks x (ranks - 1))"
    if rank_groups(topology, ranks_per_node) is None:
        raise SynthError(f"{head}: above {limits.MAX_TREE_DELIVERIES:,} the trees method takes relay trees, which need "
                         "ranks in groups (a dragonfly's groups, or several ranks a router)")
    if deliveries > limits.MAX_RELAY_DELIVERIES:
        raise SynthError(f"{head}; the trees method takes up to {limits.MAX_RELAY_DELIVERIES:,}")
    return False


def _plan_exchange(name: str, topology, ranks_per_node: int, root: int, chunks, reach, router, method: str, sizes,
                   time_limit: float, solver: str, say, check_only: bool = False,
                   routes: dict | None = None) -> SynthesisPlan | None:
    """An all-to-all(v): its pairs routed with every block at once, and the bounds of any schedule
    (synth.synthesis.exchange)."""
    from synth.collectives.sizes import exchange_matrix

    if method != "auto":  # exact, symmetric and trees alike: none of them applies to an exchange
        raise SynthError(f"--method {method}: an {name} is synthesized by phases (--method auto)")
    if chunks is not None:
        raise SynthError(f"--chunks: an {name} moves every block whole (it has P^2 of them)")
    if reach == "neighbours":
        raise SynthError(f"--transfers neighbours: an {name} sends every block to its destination (--transfers all)")
    if root != 0:
        raise SynthError(f"{name} has no root")
    network = topology.network()
    ranks = network.num_terminals * ranks_per_node
    if ranks < 2:
        raise SynthError(f"{topology.spec} has one rank: nothing to exchange")
    matrix = None if sizes is None else exchange_matrix(sizes, ranks)
    if check_only:
        return None
    routing = route_exchange(topology, ranks_per_node, matrix, time_limit, solver, router, say=say, routes=routes)
    bound = exchange_time_bound(name, topology, ranks_per_node, matrix, routing.lp, routing.lp_why)
    steps = StepBound(1, "every pair is joined by one transfer: a direct exchange takes one step")
    return SynthesisPlan(name, topology, routing.graph, 0, 1, steps, bound, exchange=routing, sizes=matrix,
                         routes=routes)


def least_whole_chunks(bandwidth, network, ranks: int) -> int:
    """Symmetric synthesis' default chunks: the fewest (up to a rank's ports) that make the cut bound
    a whole number of rounds, what the trees need to meet it (a torus: (P - 1) / 2L blocks, so 2L
    chunks; a HyperX often 1 or 2; more blocks than needed only round each up to whole bytes);
    the exact method keeps one (its program grows with the blocks)."""
    ratio = float(network.channel_bandwidth[0]) / float(integer_bandwidth(network)[0])
    rounds = bandwidth.per_byte * ratio * ranks  # the bound in rounds of one chunk per rank
    ports = node_ports(network)
    for chunks in range(1, ports + 1):
        if abs(rounds * chunks - round(rounds * chunks)) <= 1e-9 * max(1.0, rounds * chunks):
            return chunks
    return ports
