"""Ranks that forward (issue 40, item 5): a GPU joined to other GPUs by NVLinks with no switch is its
own router, its ports its links. Graph files mark such nodes (`forwards: true`, kind gpu) or the spec
makes every node one (`ranks=routers`); the other nodes are switches."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from synth.core.errors import SynthError
from synth.pricing.alphabeta import node_ports
from synth.topology import parse_topology
from tests.helpers import REPO


def _two_quads(tmp_path, attributes: bool):
    """Two fully connected quads joined by a matching (the DGX-1 P100 hybrid cube-mesh), built here."""
    graph = nx.Graph()
    for a in range(8):
        graph.add_node(a, **({"forwards": 1} if attributes else {}))
    for quad in (range(4), range(4, 8)):
        graph.add_edges_from((a, b) for a in quad for b in quad if a < b)
    graph.add_edges_from((i, i + 4) for i in range(4))
    path = tmp_path / "mesh.gml"
    nx.write_gml(graph, path)
    return path


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["file", "spec"])
def test_every_gpu_is_a_rank_whose_ports_are_its_links(tmp_path, how):
    path = _two_quads(tmp_path, attributes=how == "file")
    topology = parse_topology(f"graph:{path}" + (":ranks=routers" if how == "spec" else ""))
    network = topology.network()
    assert network.num_terminals == 8 and network.nodes_are_routers
    assert node_ports(network) == 4  # 3 NVLinks in its quad, 1 across
    terminal_links = network.channel_src < network.num_terminals
    assert (network.channel_bandwidth[terminal_links] == 4).all()  # the node's total
    assert topology.family == "graph"  # a dragonfly's terminals would not forward: kept generic


@pytest.mark.timeout(300)
def test_the_cube_mesh_allreduce_takes_two_steps_at_the_message_bound():
    """A reduction in each quad (3 NVLinks, one message each), then across the matching: 2 steps,
    2 message starts, the bound of any schedule (log_5 8); a reduce-scatter then an allgather takes 4."""
    import synth
    from synth.pricing.schedule_cost import map_schedule

    spec = f"graph:{REPO / 'instances' / 'gpu' / 'dgx1-cube-mesh.gml'}"
    (band,) = synth.synthesize("allreduce", spec, sizes="32B", time_limit=10)
    schedule, record = band.schedule, band.schedule.synthesis
    assert synth.verify(schedule).ok and schedule.num_steps == 2
    assert map_schedule(schedule, parse_topology(spec)).messages == record["bounds"]["messages"] == 2


@pytest.mark.timeout(300)
def test_gpus_behind_a_nic_are_ranks_and_the_nic_a_switch():
    spec = f"graph:{REPO / 'instances' / 'gpu' / 'two-nodes-4-gpus.gml'}"
    network = parse_topology(spec).network()
    assert network.num_terminals == 8 and network.num_switches == 10 and network.nodes_are_routers
    into_ranks = network.channel_bandwidth[network.channel_src < 8]
    assert np.allclose(into_ranks, 3 * 3 + 1)  # three NVLinks of 3 and the PCIe link to the NIC
    import synth

    (band,) = synth.synthesize("allgather", spec, sizes="1MiB", time_limit=10)
    assert synth.verify(band.schedule).ok


@pytest.mark.timeout(60)
def test_forwarding_ranks_and_other_terminals_do_not_mix(tmp_path):
    path = _two_quads(tmp_path, attributes=False)
    with pytest.raises(SynthError, match="ranks=routers makes every node a rank: leave out :p=2"):
        parse_topology(f"graph:{path}:p=2:ranks=routers").network()
    with pytest.raises(SynthError, match="option ranks of .* must be routers"):
        parse_topology(f"graph:{path}:ranks=all")


@pytest.mark.timeout(60)
def test_a_malformed_forwards_is_one_line(run, tmp_path):
    path = tmp_path / "bad.gml"
    path.write_text('graph [\n node [ id 0 forwards 2 ]\n node [ id 1 ]\n edge [ source 0 target 1 ]\n]\n')
    code, out, err = run("topology", f"graph:{path}")
    assert code == 2 and out == "" and err.strip().endswith("node '0': forwards: '2' is not true or false")
    assert len(err.strip().splitlines()) == 1
