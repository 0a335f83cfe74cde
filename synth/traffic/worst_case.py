"""The ch.7 worst-case permutations under minimal routing (Prisacari20 sec. 7.4.2), `worst-case`.

Each is a permutation in which whole routers send to whole routers (terminal j of the source
router to terminal j of the destination router), so no terminal sends or receives more than its
link carries and the bottleneck is inside the network:

- Slim Fly: routers in pairs at distance two whose minimal routes overlap (Figure 7.5). synth's
  greedy assignment packs chains A-B-C-D of routers in which B is the only common neighbour of A
  and C and C the only common neighbour of B and D (most constrained routers first, see
  synth.topology.slimfly.slimfly_router_pairs); then A <-> C and B <-> D exchange. Both A->C and B->D cross B->C (and
  C->A, D->B cross C->B), so those links carry 2p messages: throughput 1/(2p). Routers left over
  (no such chain among the unused ones) pair up at distance two where they can and otherwise keep
  their traffic (their terminals send to themselves); `unmatched_routers` counts them.
- MLFM: the shift by h terminals, i.e. every local router to the next one, which is never in its
  column, over the single minimal path: h messages per link, throughput 1/h.
- OFT: the shift by k terminals, every L0/L2 router to the next one, which is not its symmetric
  router, over the single minimal path: k messages per link, throughput 1/k.
Each family gives its own (Topology.worst_case_destinations, in its module); other families have
no worst case in the seed, and the pattern refuses them by name.
"""

from __future__ import annotations

import numpy as np

from synth.core.errors import SynthError

SEED_SECTION = "Prisacari20 sec. 7.4.2"


def worst_case_destinations(topology, num_ranks: int) -> np.ndarray:
    """The destination terminal of every terminal: the family's own (Topology.worst_case_destinations)."""
    table = topology.worst_case_destinations(num_ranks) if topology is not None else None
    if table is not None:
        return table
    family = getattr(topology, "family", None)
    raise SynthError(f"traffic pattern 'worst-case' is defined for slimfly, mlfm and oft ({SEED_SECTION}), "
                     f"not for {family or 'this network'}")
