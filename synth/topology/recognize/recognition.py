"""Which family network an imported network is, if any (issue 26).

Every family lists candidates from the network's shape (Family.candidates: its counts and degrees). Then, in
this order, each test being conclusive or bounded:
1. a candidate of the same router and channel counts is tested for isomorphism (match.isomorphism); a
   fabric that is a family network, relabelled however, is found here;
2. a candidate with more routers or channels (at most shape.MISSING more) is searched for an embedding of the
   fabric (match.embed), fewest missing parts first, under one budget of candidate checks for all of them;
3. the same candidates with the missing links (or one missing switch) put back as the family's degrees say,
   each way of putting them back tested for isomorphism (match.completions).
The first map found wins; every search is deterministic (fixed orders, step budgets, no clocks), so a spec
parsed twice is recognized the same way. No map found means "none": a generic network, for the generic routers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.topology.family import FAMILIES, Topology
from synth.topology.recognize.match import Routers, adjacency, completions, embed, isomorphism, local_invariants
from synth.topology.recognize.shape import MISSING, Shape

MAX_CANDIDATES = 64  # family networks considered per family and recognition (their counts admit a few at most)
QUICK_EMBED_STEPS = 100_000  # candidate checks of the first, quick embedding search per family network
EMBED_STEPS = 400_000  # candidate checks over every embedding search of one recognition: a few seconds
COMPLETION_WORK = 4_000_000  # router-rounds of refinement per completed fabric (a wrong one fails in a few rounds)
COMPLETIONS = 2048  # completed fabrics looked at over all the family networks of one recognition


@dataclass(frozen=True, eq=False)
class Match:
    topology: Topology  # the family network
    routers: np.ndarray  # (fabric routers,) the family node id of every fabric router, in Routers.of(fabric) order
    how: str  # "isomorphic", "embedded" or "completed"


def family_candidates(shape: Shape) -> list[Topology]:
    """The family networks the shape admits, family by family in name order."""
    found = []
    for name in sorted(FAMILIES, key=lambda name: (FAMILIES.get(name).recognition_order, name)):
        family = FAMILIES.get(name)
        for spec in (family.candidates(shape) if family.candidates else [])[:MAX_CANDIDATES]:
            try:
                found.append(family.parse(spec.partition(":")[2]))
            except SynthError:  # what the family's own rules refuse (an odd remainder of global ports, ...)
                continue
    return found


def distance_profile(graph: Routers) -> np.ndarray:
    """How many routers are 0, 1, 2, ... hops from the router of most channels (the lowest-numbered of them)."""
    from scipy.sparse.csgraph import shortest_path
    matrix = adjacency(graph)
    hops = shortest_path(matrix, method="D", unweighted=True, indices=int(np.argmax(np.diff(matrix.indptr))))
    return np.bincount(hops[np.isfinite(hops)].astype(np.int64))


def _padded(values: np.ndarray, length: int) -> np.ndarray:
    return np.pad(values, (0, max(0, length - len(values))))


def recognize(network) -> Match | None:
    fabric = Routers.of(network)
    if fabric.size == 0:
        return None
    shape = Shape(fabric)
    exact, near = [], []
    for topology in family_candidates(shape):
        family = Routers.of(topology.network())
        terminals = int(family.terminals.sum())
        if not shape.admits(family.size, family.num_channels) or \
                not (1 - MISSING) * terminals <= fabric.terminals.sum() <= terminals:
            continue
        same = (family.size, family.num_channels) == (fabric.size, fabric.num_channels)
        (exact if same else near).append((topology, family))
    # the likeliest first: a router's distance profile is the same in isomorphic graphs (exactly so for transitive
    # families), so candidates are tried in order of how far a profile of theirs is from the fabric's
    profile = distance_profile(fabric)

    distance_to: dict[int, int] = {}

    def unlike(candidate) -> int:
        if id(candidate[1]) not in distance_to:
            theirs = distance_profile(candidate[1])
            distance_to[id(candidate[1])] = int(np.abs(_padded(theirs, len(profile)) - _padded(profile, len(theirs))).sum())
        return distance_to[id(candidate[1])]

    exact.sort(key=unlike)
    for topology, family in exact:
        mapping = isomorphism(fabric, family, topology.router_transitive)
        if mapping is not None and (fabric.terminals <= family.terminals[mapping]).all():
            return Match(topology, family.nodes[mapping], "isomorphic")
    # the likeliest first, then fewest missing parts (exact counts again: a router that lost every terminal)
    ranked = sorted(near + exact, key=lambda c: (unlike(c), c[1].size - fabric.size,
                                                 c[1].num_channels - fabric.num_channels))
    # an embedding is quick to find where the family's structure is local (tori, HyperX, trees); completions where
    # a few links are missing from a graph of little local structure (dragonflies, OFT); then longer embeddings
    budget = EMBED_STEPS
    for topology, family in ranked:
        mapping, spent = embed(fabric, family, max_steps=min(QUICK_EMBED_STEPS, budget))
        budget -= spent
        if mapping is not None:
            return Match(topology, family.nodes[mapping], "embedded")
    looked = 0
    for topology, family in ranked:
        invariants = None
        for completed in completions(fabric, family):
            looked += 1
            if looked > COMPLETIONS:
                break
            invariants = local_invariants(family) if invariants is None else invariants
            if not np.array_equal(local_invariants(completed), invariants):
                continue
            mapping = isomorphism(completed, family, topology.router_transitive, COMPLETION_WORK)
            if mapping is not None and (fabric.terminals <= family.terminals[mapping[:fabric.size]]).all():
                return Match(topology, family.nodes[mapping[:fabric.size]], "completed")
    for topology, family in ranked:
        if budget <= 0:
            break
        mapping, spent = embed(fabric, family, max_steps=budget)
        budget -= spent
        if mapping is not None:
            return Match(topology, family.nodes[mapping], "embedded")
    return None
