"""Real `ibnetdiscover` output read back by `fabric:FILE` (issue 26).

Each network is written by `synth topology --format ibnetdiscover`, loaded into ibsim, given LIDs by
OpenSM (synth's guid2lid, so the LIDs are known), and discovered by the real ibnetdiscover. Its
output, read as `fabric:FILE`, must be the same cabling (node names and port numbers of every
channel), with the GUIDs synth wrote and the LIDs OpenSM gave. ibsim names nodes by their GUIDs
("S-0053...") and keeps synth's names as descriptions, which fabric:FILE takes as names.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers import cabling, run
from synth.io.switch_tables import render_guid2lid, switch_guids, terminal_node_guids, terminal_port_guids
from synth.opensm.sim import Simulator, find_tools, run_opensm
from synth.tables.forwarding import LidPlan
from synth.topology import parse_topology


@pytest.mark.parametrize("spec", ["xgft:2:4,4:1,2", "dragonfly:2,4,2", "hyperx:3,3:p=2:trunk=2", "torus:3,3"])
def test_what_ibnetdiscover_finds_is_read_back_as_the_same_network(tmp_path, spec):
    fabric = tmp_path / "fabric.net"
    code, _, err = run("topology", spec, "--format", "ibnetdiscover", "--out", fabric)
    assert code == 0, err
    network = parse_topology(spec).network()
    plan = LidPlan(network.num_terminals, network.num_switches, 0)
    with Simulator(find_tools(), fabric) as sim:
        run_opensm(sim, "minhop", 0, guid2lid=render_guid2lid(network, plan))
        discovered = sim.run(["ibnetdiscover"])
    assert discovered.returncode == 0, discovered.stderr
    (tmp_path / "discovered.txt").write_text(discovered.stdout)
    back = parse_topology(f"fabric:{tmp_path / 'discovered.txt'}").network()

    assert cabling(back) == cabling(network)
    order = [back.node_names.index(name) for name in network.node_names]  # synth's node i is back's node order[i]
    t = network.num_terminals
    assert back.node_guids[order].tolist() == terminal_node_guids(network).tolist() + switch_guids(network).tolist()
    assert back.port_guids[order[:t]].tolist() == terminal_port_guids(network).tolist()
    lids = np.concatenate([plan.terminal_base(np.arange(t)), plan.switch_lid(np.arange(network.num_switches))])
    assert back.node_lids[order].tolist() == lids.tolist()
    # SDR links everywhere on ibsim: one rate, bandwidth 1
    assert (back.channel_bandwidth == 1.0).all()


def test_a_fabric_written_again_is_the_same_file(tmp_path):
    """Read, written, read: the second file equals the first byte for byte (names, GUIDs, LIDs kept)."""
    first = tmp_path / "a.net"
    assert run("topology", "dragonfly:2,4,2", "--format", "ibnetdiscover", "--out", first)[0] == 0
    second, third = tmp_path / "b.net", tmp_path / "c.net"
    assert run("topology", f"fabric:{first}", "--format", "ibnetdiscover", "--out", second)[0] == 0
    assert run("topology", f"fabric:{second}", "--format", "ibnetdiscover", "--out", third)[0] == 0
    body = lambda p: [l for l in Path(p).read_text().splitlines() if not l.startswith("#")]  # noqa: E731
    assert body(first) == body(second) == body(third)
    assert cabling(parse_topology(f"fabric:{first}").network()) == cabling(parse_topology(f"fabric:{third}").network())


def test_one_way_networks_have_no_fabric_file_and_out_needs_a_file_format(tmp_path):
    code, out, err = run("topology", "kautz:3", "--format", "ibnetdiscover", "--out", tmp_path / "k.net")
    assert code == 2 and "one-way links" in err and not (tmp_path / "k.net").exists()
    code, _, err = run("topology", "torus:3,3", "--out", tmp_path / "t.net")
    assert code == 2 and "add --format json or --format ibnetdiscover" in err


def discover(tmp_path: Path, spec: str, terminal_lids: np.ndarray, switch_lids: np.ndarray) -> Path:
    """`spec` as a fabric on ibsim whose subnet manager gave these LIDs, as ibnetdiscover finds it."""
    network = parse_topology(spec).network()
    fabric = tmp_path / "cabled.net"
    assert run("topology", spec, "--format", "ibnetdiscover", "--out", fabric)[0] == 0
    lines = [f"0x{g:016x} 0x{lid:04x} 0x{lid:04x}\n\n" for g, lid in zip(terminal_port_guids(network).tolist(), terminal_lids)]
    lines += [f"0x{g:016x} 0x{lid:04x} 0x{lid:04x}\n\n" for g, lid in zip(switch_guids(network).tolist(), switch_lids)]
    with Simulator(find_tools(), fabric) as sim:
        run_opensm(sim, "minhop", 0, guid2lid="".join(lines))
        found = sim.run(["ibnetdiscover"])
    path = tmp_path / "discovered.txt"
    path.write_text(found.stdout)
    return path


def guid2lid_of(directory: Path) -> dict[int, int]:
    return {int(g, 16): int(lo, 16) for g, lo, _ in (line.split() for line in (directory / "guid2lid").read_text().splitlines()
                                                     if line.strip())}


def test_tables_for_a_discovered_fabric_keep_its_guids_and_lids_and_load_into_opensm(tmp_path):
    """The fabric's subnet manager gave LIDs of its own (terminals from the top, even, switches after): synth's
    tables keep them and its GUIDs, and OpenSM's file engine on ibsim follows every synthesized path."""
    spec = "xgft:2:4,4:1,2"
    terminal_lids = np.arange(64, 32, -2)  # 16 terminals: 64, 62, ..., 34
    switch_lids = np.arange(100, 106)
    path = discover(tmp_path, spec, terminal_lids, switch_lids)
    topology = parse_topology(f"fabric:{path}")
    assert topology.family == "xgft" and topology.base.spec == spec  # recognized: the XGFT's own routers route it
    network = topology.network()
    assert sorted(network.node_lids.tolist()) == sorted(terminal_lids.tolist() + switch_lids.tolist())
    routes, tables = tmp_path / "r.json", tmp_path / "tables"
    assert run("route", f"fabric:{path}", "--traffic", "a2a-lin", "--router", "dmodk", "--out", routes)[0] == 0
    code, out, err = run("tables", routes, "--out", tables)
    assert code == 0, err
    assert "LIDs: the fabric's own LIDs" in out
    expected = {int(g): int(lid) for g, lid in zip(network.port_guids.tolist(), network.node_lids[:16].tolist())}
    expected |= {int(g): int(lid) for g, lid in zip(network.node_guids[16:].tolist(), network.node_lids[16:].tolist())}
    assert guid2lid_of(tables) == expected
    code, out, err = run("opensm-check", tables, "--engines", "minhop")
    assert code == 0, err
    assert "LIDs kept" in out and "flows follow their synthesized paths" in out


def test_routes_needing_more_lids_than_the_fabric_has_get_synths_lids_and_say_so(tmp_path):
    spec = "xgft:2:4,4:1,2"
    path = discover(tmp_path, spec, np.arange(1, 17) * 2 + 1, np.arange(100, 106))  # odd LIDs: no room for LMC 1
    routes, tables = tmp_path / "r.json", tmp_path / "tables"
    assert run("route", f"fabric:{path}:recognize=no", "--traffic", "a2a-lin", "--router", "paths", "--phase", "0-3",
               "--out", routes)[0] == 0
    code, out, err = run("tables", routes, "--out", tables, "--lmc", "1")
    assert code == 0, err
    assert "LIDs: synth's LIDs: the fabric's LIDs are not aligned to the 2 LIDs per port these routes need (LMC 1)" in out
    code, out, err = run("opensm-check", tables, "--engines", "minhop")
    assert code == 0 and "flows follow their synthesized paths" in out, err


def test_a_fabric_discovered_before_any_subnet_manager_ran_gets_synths_lids_and_loads_into_opensm(tmp_path):
    """ibnetdiscover on a fresh fabric (ibsim, no subnet manager) writes `lid 0` on every port: read as not
    assigned yet, synth's own LID plan is used and said in one line, and OpenSM on ibsim loads the tables."""
    spec = "xgft:2:4,4:1,2"
    fabric = tmp_path / "cabled.net"
    assert run("topology", spec, "--format", "ibnetdiscover", "--out", fabric)[0] == 0
    with Simulator(find_tools(), fabric) as sim:
        found = sim.run(["ibnetdiscover"])  # no OpenSM: no LIDs
    assert found.returncode == 0, found.stderr
    assert " lid 0 " in found.stdout and "lid 1 " not in found.stdout
    path = tmp_path / "discovered.txt"
    path.write_text(found.stdout)
    code, out, err = run("topology", f"fabric:{path}:recognize=no")
    assert code == 0, err
    assert "none assigned yet (lid 0 or none in the file): synth tables plans its own" in out
    routes, tables = tmp_path / "r.json", tmp_path / "tables"
    code, _, err = run("route", f"fabric:{path}", "--traffic", "a2a-lin", "--router", "dmodk", "--out", routes, "--quiet")
    assert code == 0, err
    code, out, err = run("tables", routes, "--out", tables)
    assert code == 0, err
    assert [line for line in out.splitlines() if line.startswith("LIDs:")] == [
        "LIDs: synth's LIDs: no port of the fabric has a LID yet (lid 0 or none in the fabric file: not assigned by a "
        "subnet manager)"]
    network = parse_topology(spec).network()
    plan = LidPlan(network.num_terminals, network.num_switches, 0)
    assert sorted(guid2lid_of(tables).values()) == sorted(
        plan.terminal_base(np.arange(network.num_terminals)).tolist() + plan.switch_lid(np.arange(network.num_switches)).tolist())
    code, out, err = run("opensm-check", tables, "--engines", "minhop")
    assert code == 0, err
    assert "flows follow their synthesized paths" in out
