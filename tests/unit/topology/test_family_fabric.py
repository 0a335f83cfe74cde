"""`fabric:FILE` (issue 26): a fabric's topology file read as a network that keeps its names, ports,
GUIDs, LIDs, parallel cables and link rates; every error one line naming the line and the field.

Round trips: every family's network written as a fabric file (synth's tables' fabric.net, which
ibsim loads) reads back as the same cabling, compared as the multiset of (node name, port, node
name, port) of its channels: nothing of synth's own layout is trusted.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from helpers import cabling, run
from synth.core.errors import SynthError
from synth.io.switch_tables import ibsim_rates, render_fabric
from synth.topology import parse_topology
from synth.topology.readers.ibnetdiscover import parse_fabric

DISCOVERED = '''#
# Topology file: generated on Sun Nov 29 05:01:08 2026
#
vendid=0x2c9
devid=0xcf08
sysimgguid=0x248a0703005c5d40
switchguid=0x248a0703005c5d40(248a0703005c5d40)
Switch\t36 "S-248a0703005c5d40"\t\t# "leaf1" enhanced port 0 lid 12 lmc 0
[1]\t"H-0c42a1030070a0b4"[1](c42a1030070a0b5) \t\t# "node10 HCA-1" lid 20 4xEDR
[2]\t"H-0c42a1030070a0c4"[1](c42a1030070a0c5) \t\t# "node2 HCA-1" lid 21 4xEDR
[35]\t"S-248a0703005c5e00"[1]\t\t# "spine" lid 13 4xHDR
[36]\t"S-248a0703005c5e00"[2]\t\t# "spine" lid 13 4xHDR

switchguid=0x248a0703005c5e00(248a0703005c5e00)
Switch\t40 "S-248a0703005c5e00"\t\t# "spine" enhanced port 0 lid 13 lmc 0
[1]\t"S-248a0703005c5d40"[35]\t\t# "leaf1" lid 12 4xHDR
[2]\t"S-248a0703005c5d40"[36]\t\t# "leaf1" lid 12 4xHDR

caguid=0x0c42a1030070a0b4
Ca\t2 "H-0c42a1030070a0b4"\t\t# "node10 HCA-1"
[1](c42a1030070a0b5) \t"S-248a0703005c5d40"[1]\t\t# lid 20 lmc 0 "leaf1" lid 12 4xEDR

caguid=0x0c42a1030070a0c4
Ca\t2 "H-0c42a1030070a0c4"\t\t# "node2 HCA-1"
[1](c42a1030070a0c5) \t"S-248a0703005c5d40"[2]\t\t# lid 21 lmc 2 "leaf1" lid 12 4xEDR
'''


def fabric_of(tmp_path, text: str, name: str = "fabric.txt"):
    path = tmp_path / name
    path.write_text(text)
    return parse_topology(f"fabric:{path}:recognize=no")  # the file as read (recognition: test_recognition.py)


def test_a_discovered_fabric_keeps_its_names_ports_guids_lids_cables_and_rates(tmp_path):
    topology = fabric_of(tmp_path, DISCOVERED)
    network = topology.network()
    # CAs in natural order of their descriptions (node2 before node10), then the switches
    assert network.node_names == ["node2 HCA-1", "node10 HCA-1", "leaf1", "spine"]
    assert network.num_terminals == 2 and network.num_switches == 2
    assert network.channel_src[:4].tolist() == [0, 2, 1, 2] and network.channel_dst[:4].tolist() == [2, 0, 2, 1]
    assert cabling(network) == Counter({
        ("node2 HCA-1", 1, "leaf1", 2): 1, ("leaf1", 2, "node2 HCA-1", 1): 1,
        ("node10 HCA-1", 1, "leaf1", 1): 1, ("leaf1", 1, "node10 HCA-1", 1): 1,
        ("leaf1", 35, "spine", 1): 1, ("spine", 1, "leaf1", 35): 1,
        ("leaf1", 36, "spine", 2): 1, ("spine", 2, "leaf1", 36): 1})  # two parallel cables, two channel pairs
    # 4xHDR against the common 4xEDR: 53.125 / 25.78125
    assert network.channel_bandwidth[4:].tolist() == pytest.approx([53.125 / 25.78125] * 4)
    assert network.channel_bandwidth[:4].tolist() == [1.0] * 4
    assert [hex(g) for g in network.node_guids.tolist()] == ["0xc42a1030070a0c4", "0xc42a1030070a0b4",
                                                           "0x248a0703005c5d40", "0x248a0703005c5e00"]
    assert [hex(g) for g in network.port_guids.tolist()] == ["0xc42a1030070a0c5", "0xc42a1030070a0b5"]
    assert network.node_lids.tolist() == [21, 20, 12, 13] and network.lmc == 2


def test_lid_0_is_a_port_without_a_lid_yet(tmp_path):
    """ibnetdiscover before a subnet manager ran (issue 41): every LID 0, read as unassigned, said in one fact."""
    text = DISCOVERED.replace("lid 20", "lid 0").replace("lid 21", "lid 0").replace("lid 12", "lid 0").replace(
        "lid 13", "lid 0")
    topology = fabric_of(tmp_path, text)
    assert topology.network().node_lids.tolist() == [0, 0, 0, 0]
    assert ("LIDs", "none assigned yet (lid 0 or none in the file): synth tables plans its own") in topology.facts()
    from synth.tables.forwarding import LidPlan

    plan = LidPlan.for_network(topology.network(), 0)
    assert plan.terminal_lids is None and plan.note == (
        "synth's LIDs: no port of the fabric has a LID yet (lid 0 or none in the fabric file: not assigned by a subnet "
        "manager)")


def test_rates_ibsim_cannot_run_are_written_as_the_nearest_it_can(tmp_path):
    """4xHDR switch cables next to 4xEDR hosts (2.06 times): fabric.net runs them at 4xDDR against 4xSDR (2 times)."""
    network = fabric_of(tmp_path, DISCOVERED).network()
    rates = ibsim_rates(network)
    assert not rates.exact and [name for _, name in rates.options] == ["4xSDR"] * 4 + ["4xDDR"] * 4
    text = render_fabric(network)
    assert text.count("w=2 s=2\t\t# 4xDDR") == 4  # each switch cable from both of its ends
    back = fabric_of(tmp_path, text).network()
    assert sorted(set(back.channel_bandwidth.tolist())) == [1.0, 2.0]


def test_ibsims_example_files_are_read(tmp_path):
    """ibsim's own net files: free ids, `Hca`, no GUIDs, a two-cable bundle between the switches."""
    network = parse_topology("fabric:/usr/share/doc/ibsim-utils/net-examples/net.2sw2path4hca:recognize=no").network() \
        if __import__("os").path.exists("/usr/share/doc/ibsim-utils/net-examples/net.2sw2path4hca") else None
    if network is None:
        pytest.skip("ibsim-utils' examples are not installed")
    assert network.node_names == ["Hca1", "Hca2", "Hca3", "Hca4", "Switch1", "Switch2"]
    assert cabling(network)[("Switch1", 3, "Switch2", 3)] == 1 and cabling(network)[("Switch1", 5, "Switch2", 5)] == 1


@pytest.mark.parametrize("spec", ["xgft:2:4,4:1,2", "xgft:3:4,4,4:1,4,2", "dragonfly:2,4,2", "hyperx:3,3:p=2:trunk=2",
                                  "torus:3,4", "slimfly:5", "oft:3", "mlfm:3", "2dfc:3,4",
                                  "dragonfly:2,4,2@fail=random:2:7"])
def test_every_family_written_as_a_fabric_file_reads_back_as_the_same_cabling(tmp_path, spec):
    network = parse_topology(spec).network()
    back = fabric_of(tmp_path, render_fabric(network)).network()
    cabled = network.cabled()
    failed = set() if network.failed_nodes is None else set(network.failed_nodes.tolist())
    expected = Counter((network.node_names[s], sp, network.node_names[d], dp) for s, sp, d, dp, c in zip(
        network.channel_src.tolist(), network.channel_src_port.tolist(), network.channel_dst.tolist(),
        network.channel_dst_port.tolist(), cabled.tolist()) if c)
    assert cabling(back) == expected
    assert back.num_terminals == network.num_terminals - sum(1 for f in failed if f < network.num_terminals)
    assert np.all(back.channel_bandwidth == 1.0)


BAD = [
    ("Switch 0 \"a\"\n", "line 1: ports: 0 is not 1-255"),
    ("Switch 4 \"a\"\n\nSwitch 4 \"a\"\n", "line 3: node id: 'a' is also the node of line 1"),
    ("[1] \"a\"[1]\n", "line 1: a port line outside a node record"),
    ("Switch 4 \"a\"\n[5] \"b\"[1]\n\nCa 1 \"b\"\n[1] \"a\"[5]\n", "line 2: local port: 5 is not 1-4"),
    ("Switch 4 \"a\"\n[1] \"b\"[1]\n[1] \"c\"[1]\n", "line 3: local port: 1 of 'a' is connected twice"),
    ("Switch 4 \"a\"\n[1] \"zz\"[1]\n", "line 2: remote id: no node 'zz' in the file"),
    ("Switch 4 \"a\"\n[1] \"b\"[3]\n\nCa 2 \"b\"\n", "line 2: remote port: 3 is not 1-2"),
    ("Switch 4 \"a\"\n[1] \"b\"[1]\n\nCa 2 \"b\"\n[1] \"a\"[2]\n", "line 2: remote port: 'a'[1] leads to 'b'[1], whose line 5"),
    ("include other.net\n", "line 1: 'include' (an ibsim extension) is not read"),
    ("Switch 4 \"a\"\nhello world\n", "line 2: not a key=value, node header or port line: 'hello world'"),
    ("switchguid=0xZZ\n", "line 1: not a key=value"),
    ("Switch 4 \"a\"\n[1] \"b\"[1]\n[2] \"b\"[2]\n\nCa 2 \"b\"\n", "line 5: ports: CA 'b' has 2 cabled ports"),
    ("Ca 1 \"a\"\n[1] \"b\"[1]\n\nCa 1 \"b\"\n", "line 2: remote id: CA 'a' is cabled to CA 'b', not to a switch"),
    ("Rt 4 \"r\"\n", "line 1: node type: 'r' is an IB router"),
    ("Ca 2 \"a\"\n", "no CA is cabled to a switch"),
    # found by a tester: each was exit 0 with a wrong network, or exit 70
    ("Switch 4 \"a\"\n", "line 1: ports: switch 'a' has no cables"),
    ("Switch 4 \"s\"\n\nCa 1 \"a\"\n[1] \"s\"[1]\n\nCa 1 \"b\"\n[1] \"s\"[1]\n",
     "line 7: remote port: 's'[1] is also cabled on line 4"),
    ("Switch 4 \"s\"\n[3] \"s\"[3]\n", "line 2: remote id: 's' is cabled to itself"),
    ("caguid=0x1ffffffffffffffff\nCa 1 \"a\"\n", "line 1: not a key=value"),
    ("caguid=0x0\nCa 1 \"a\"\n", "line 1: caguid: 0x0 is not a 64-bit GUID"),
    ("Switch 4 \"s\"\n[1] \"a\"[1]\n\ncaguid=0x10\nCa 1 \"a\"\n[1] \"s\"[1]\n\nswitchguid=0x10\nSwitch 4 \"t\"\n"
     "[1] \"s\"[2]\n", "line 9: node GUID: 0x0000000000000010 is also the GUID of line 5"),
    ("Switch " + "9" * 5000 + " \"s\"\n", "line 1: not a key=value, node header or port line"),
    ("Switch 4 \"s\"\n[1] \"a\"[1]\t\t# \"a\" lid 5 0xEDR\n\nCa 1 \"a\"\n", "line 2: link width: 0xEDR has no lanes"),
    ("Switch 4 \"s\"\n[1] \"a\"[1]\n\nCa 1 \"a\"\n[1] \"s\"[1]\t\t# lid 49152 lmc 0\n",
     "line 5: lid: 49152 is not a unicast LID"),
    ("Switch 4 \"s\"\n[1] \"a\"[1]\n\nCa 1 \"a\"\n[1] \"s\"[1]\t\t# lid 4 lmc 9\n", "line 5: lmc: 9 is above 7"),
    ("Switch 4 \"s\"\n[1] \"a\"[1]\t# 4xEDR\n\nCa 1 \"a\"\n[1] \"s\"[1]\t# lid 4 1xSDR\n",
     "line 5: link rate: 2.5 Gb/s here, 103.125 Gb/s at the cable's other end (line 2)"),
    ("Switch 4 \"s\"\n[1] \"a\"[1]\n\nCa 1 \"a\"\n\nSwitch 4 \"t\"\n[1] \"b\"[1]\n\nCa 1 \"b\"\n",
     "the fabric falls into 2 parts"),
]


@pytest.mark.parametrize("text, message", BAD)
def test_a_bad_fabric_file_is_one_line_naming_the_line_and_field(tmp_path, text, message):
    with pytest.raises(SynthError, match=None) as caught:
        fabric_of(tmp_path, text).network()
    assert message in str(caught.value) and str(tmp_path / "fabric.txt") in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_command_says_one_line_and_exits_2(tmp_path):
    code, out, err = run("topology", f"fabric:{tmp_path / 'missing.net'}")
    assert code == 2 and "cannot read the fabric file" in err and len(err.strip().splitlines()) == 1
    (tmp_path / "bad.net").write_text("Switch 4 \"a\"\n[9] \"b\"[1]\n")
    code, out, err = run("topology", f"fabric:{tmp_path / 'bad.net'}")
    assert code == 2 and "line 2: local port: 9 is not 1-4" in err and out == ""


def test_parsing_keeps_a_switchs_lid_and_a_cas_port_lid(tmp_path):
    nodes = parse_fabric(DISCOVERED, "x")
    leaf = next(n for n in nodes if n.description == "leaf1")
    assert (leaf.kind, leaf.ports, leaf.lid, leaf.guid) == ("switch", 36, 12, 0x248a0703005c5d40)
    ca = next(n for n in nodes if n.description == "node2 HCA-1")
    assert (ca.links[0].lid, ca.links[0].lmc, ca.links[0].port_guid) == (21, 2, 0xc42a1030070a0c5)


def test_ibsims_port_options_and_unsafe_descriptions(tmp_path):
    """ibsim's `w=12` after a port is read (and ignored); a description a fabric file cannot carry ('#', '@',
    quotes) is not taken as the name: the id is."""
    text = ('Switch 4 "S-1"\t# "sw#1"\n[1] "H-1"[1] w=12\n[2] "S-2"[1]\n\nSwitch 4 "S-2"\t# "spine"\n[1] "S-1"[2]\n\n'
            'Ca 1 "H-1"\t# "host@1"\n[1] "S-1"[1]\n')
    network = fabric_of(tmp_path, text).network()
    assert network.node_names == ["H-1", "S-1", "spine"]
    back = fabric_of(tmp_path, render_fabric(network), "again.net").network()
    assert cabling(back) == cabling(network)
