"""Orbit schedules (issue 43 item 1): the blocks of one rank per orbit and the group stand for the
whole schedule. The compressed and the expanded forms must give the same verdict (the expanded one
by synth's explicit replay), the same per-step loads and the same cost, on tori, HyperX (one
representative, with and without the rotation of a router's terminals) and dragonflies (a group's
routers' terminals: several representatives) small enough to expand; a broken orbit (a delivery dropped, a sender that does not hold its block, a path
the group does not map onto its message orbit's) is rejected by both."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from synth.collectives.orbit import OrbitSchedule, check_orbit, expand, orbit_group, verify_orbit
from synth.collectives.verify import verify
from synth.pricing.orbit_cost import map_orbit
from synth.pricing.schedule_cost import map_schedule
from synth.synthesis.orbit_trees import load_classes, spreading_half
from synth.synthesis.symmetry import _closure
from synth.synthesis.transfers import digit_pairs, pairs_graph, transfer_graph
from synth.topology import parse_topology
from synth.topology.translations import translation_group

NETWORKS = ["torus:4,4", "torus:5,3", "hyperx:3,4", "hyperx:3,3:p=2", "dragonfly:2,4,2:arrangement=relative",
            "dragonfly:2,4,2:groups=5:arrangement=circulant", "xgft:3:4,3,2:1,4,3"]
TERMS = ("channel_bytes", "port_messages", "transfer_bytes", "flows", "hops")


def orbit_of(spec: str, name: str, chunks: int = 2):
    """Balanced breadth-first trees of the representatives' chunks (reversed for a reduce-scatter),
    as an orbit schedule."""
    topology = parse_topology(spec)
    p = topology.network().num_terminals
    group = orbit_group(topology, p)
    graph = transfer_graph(topology, 1, "neighbours")
    if not graph.joins_every_rank():  # an XGFT: the leaves differing in one digit
        graph = pairs_graph(topology, 1, "digits", digit_pairs(topology))
    reverse = name == "reduce-scatter"
    bases = group.bases(np.arange(p))
    step, pair, chunk, origin, steps = spreading_half(graph, load_classes(group, topology.network()), chunks, reverse,
                                                      bases)
    orbit = OrbitSchedule(name, "trees", spec, p, chunks, np.array([1000, 999][:chunks], dtype=np.int64), steps, step,
                          graph.src[pair].astype(np.int64), graph.dst[pair].astype(np.int64), chunk,
                          np.full(len(step), int(reverse), dtype=np.int64), graph.paths.select(pair), origin=origin,
                          representatives=bases)
    return topology, orbit


def _without(orbit: OrbitSchedule, k: int) -> OrbitSchedule:
    keep = np.delete(np.arange(orbit.num_deliveries), k)
    return dataclasses.replace(orbit, step=orbit.step[keep], src=orbit.src[keep], dst=orbit.dst[keep],
                               chunk=orbit.chunk[keep], op=orbit.op[keep], paths=orbit.paths.select(keep),
                               origin=orbit.origin[keep])


@pytest.mark.parametrize("spec", NETWORKS)
def test_the_group_arithmetic_is_the_group_the_generators_make(spec):
    topology = parse_topology(spec)
    network = topology.network()
    group, why = translation_group(topology)
    assert group is not None, why
    elements = _closure([np.asarray(g, dtype=np.int32) for g in topology.symmetries()], network.num_nodes)
    assert group.order == len(elements)
    every = np.arange(network.num_nodes)
    for element in elements:
        e = group.difference(0, int(element[0]))
        assert np.array_equal(group.move_nodes(np.broadcast_to(e, (len(every), len(e))), every), element)


@pytest.mark.parametrize("spec", NETWORKS)
@pytest.mark.parametrize("name", ["allgather", "reduce-scatter"])
def test_compressed_and_expanded_forms_agree(spec, name):
    topology, orbit = orbit_of(spec, name)
    compressed = verify_orbit(orbit, topology)
    full = expand(orbit, topology)
    explicit = verify(full)
    assert compressed.ok and explicit.ok, (compressed.violation, explicit.violation)
    assert compressed.transfers == full.num_transfers
    assert compressed.block_sends == full.num_block_sends
    on_orbit, expanded = map_orbit(orbit, topology), map_schedule(full, topology, paths=full.paths)
    for term in TERMS:
        assert np.allclose(getattr(on_orbit, term), getattr(expanded, term)), term
    for size in (1.0, 1e3, 1e6):
        assert on_orbit.time(1e-6, 1e11, size) == pytest.approx(expanded.time(1e-6, 1e11, size), rel=1e-12)


@pytest.mark.parametrize("spec", NETWORKS)
@pytest.mark.parametrize("name", ["allgather", "reduce-scatter"])
def test_a_broken_orbit_fails_in_both_forms(spec, name):
    topology, orbit = orbit_of(spec, name)
    for k in (0, orbit.num_deliveries // 2, orbit.num_deliveries - 1):
        broken = _without(orbit, k)
        assert not verify_orbit(broken, topology).ok
        assert not verify(expand(broken, topology)).ok
    # the last delivery's sender made rank 0: rank 0 holds chunk 0 (allgather) but the receiver then reduces
    # its partial twice or gets it from a rank without it; either way both forms judge alike
    moved = orbit.src.copy()
    late = int(np.argmax(orbit.step)) if name == "allgather" else 0
    moved[late] = orbit.dst[late - 1] if orbit.dst[late - 1] != orbit.dst[late] else orbit.dst[late - 2]
    wrong = dataclasses.replace(orbit, src=moved)
    assert check_orbit(wrong, topology) is not None  # its path no longer starts at its sender


def test_an_orbit_needs_a_simply_transitive_group():
    from synth.core.errors import SynthError

    with pytest.raises(SynthError, match="translations"):
        orbit_group(parse_topology("dragonfly:2,4,2"), 72)
