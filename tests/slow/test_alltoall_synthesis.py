"""The all-to-all synthesis on the seeds' networks (issue 24's list) from 32 B to 256 MiB: never slower
than the best generated algorithm priced by `compare` on the family's routes, never below its bound,
every band's schedule verified and replayed (tests/helpers.py), and on the tori at the LP bound's
bandwidth (the translated routing). The smaller networks are in tests/unit/synthesis/test_exchange.py.
"""

from __future__ import annotations

import pytest

from helpers import delivers
from synth.synthesis.plan import plan_synthesis
from synth.synthesis.portfolio import SynthesizedCandidate, bands, synthesize_parts
from synth.collectives.verify import verify
from synth.core.sizes import parse_sizes
from synth.pricing.compare import candidates
from synth.topology import parse_topology

pytestmark = pytest.mark.timeout(1200)
ALPHA, BANDWIDTH = 1e-6, 100e9


@pytest.mark.parametrize("spec", ["kautz:8", "2dfc:8,8", "torus:8,8", "torus:4,4,4", "dragonfly:3,6,3", "slimfly:5",
                                  "xgft:2:8,8:1,8"])
def test_the_seeds_networks_never_slower_than_the_generated_algorithms(spec):
    topology = parse_topology(spec)
    generated, _ = candidates("alltoall", topology, topology.default_router)
    plan = plan_synthesis("alltoall", topology, time_limit=30)
    parts = synthesize_parts(plan, 30)
    synthesized = SynthesizedCandidate(plan, parts)
    sizes = parse_sizes("32B..256MiB")
    for size in sizes:
        best = min(c.time(size, ALPHA, BANDWIDTH) for c in generated)
        mine = synthesized.time(size, ALPHA, BANDWIDTH)
        assert synthesized.bound(size, ALPHA, BANDWIDTH) <= mine <= best * (1 + 1e-9), size
    if spec.startswith("torus"):  # the one phase meets the LP bound: within the alpha of P - 1 messages
        assert synthesized.time(sizes[-1], ALPHA, BANDWIDTH) <= 1.002 * synthesized.bound(sizes[-1], ALPHA, BANDWIDTH)
    if topology.network().num_terminals <= 64:  # the replay is quadratic in the blocks
        for band in bands(plan, parts, [32, 1 << 20, 1 << 28], ALPHA, BANDWIDTH):
            assert verify(band.schedule).ok and delivers(band.schedule)
