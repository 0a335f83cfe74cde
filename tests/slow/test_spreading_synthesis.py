"""The spreading collectives' synthesis on the seeds' networks (issue 24's list) from 32 B to 256 MiB:
never slower than the best generated algorithm priced by `compare` on the family's routes, never
below the bound of any schedule, and for allgather and reduce-scatter within 1% of the cut bound at
256 MiB; the bands of the networks up to 72 ranks replayed (tests/helpers.py). Kautz K(d,2) for
d <= 7 and the 2dfc 4x4 are in tests/unit/synthesis (and tests/bench/RESULTS.md lists every figure).
"""

from __future__ import annotations

import numpy as np
import pytest

import synth
from helpers import delivers

pytestmark = pytest.mark.timeout(1800)
NETWORKS = ["kautz:8", "2dfc:8,8", "torus:8,8", "torus:4,4,4", "dragonfly:2,4,2", "dragonfly:3,6,3",
            "xgft:2:8,8:1,8", "slimfly:5"]


@pytest.mark.parametrize("collective", ["allgather", "reduce-scatter", "allreduce"])
@pytest.mark.parametrize("spec", NETWORKS)
def test_the_seeds_networks_never_slower_than_the_generated_algorithms(spec, collective):
    result = synth.compare(collective, spec, sizes="32B..256MiB", synthesized=True, time_limit=30)
    assert [c.label for c in result.candidates][-1] == "synthesized", result.skipped
    synthesized, generated = result.times[:, -1], result.times[:, :-1].min(axis=1)
    assert (synthesized <= generated * (1 + 1e-9)).all()
    assert (synthesized >= result.bounds * (1 - 1e-12)).all()
    if collective != "allreduce":
        assert synthesized[-1] <= 1.01 * result.bounds[-1], (synthesized[-1], result.bounds[-1])
    if synth.network(spec).num_terminals <= 72 and collective != "allreduce":
        for band in synth.synthesize(collective, spec, sizes="32B,1MiB,256MiB", time_limit=30):
            assert synth.verify(band.schedule).ok and delivers(band.schedule)
            entry = band.schedule.synthesis["sizes"]
            assert all(np.isfinite(e["seconds"]) and e["seconds"] >= e["bound_seconds"] for e in entry)
