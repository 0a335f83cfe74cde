"""Forwarding tables from routes: LIDs, LMC offsets, and walking the tables back to paths."""

import networkx as nx
import numpy as np
import pytest

from helpers import TABLE_3_1, xgft_and_network
from synth.core.errors import SynthError
from synth.routing.xgft_layers import LayeredOptions, route_phase
from synth.routing import oblivious

from synth.tables.forwarding import (MAX_UNICAST_LID, NO_PORT, Hops, LidPlan, build_tables, colour_flows, route_hops,
                                     walk_channels, walk_paths)
from synth.traffic.patterns import parse_pattern

OBLIVIOUS_ROUTERS = {spec.name: spec.build(None) for spec in oblivious.ROUTER}  # the XGFT's fixed routers


def exchange(spec, router, phases=None):
    xgft, network = xgft_and_network(spec)
    workload = parse_pattern("a2a-opt", xgft.num_leaves, xgft.hierarchy())
    phases = np.arange(workload.num_phases) if phases is None else np.asarray(phases)
    if router == "layered":
        parts = [workload.flows(int(p)) for p in phases]
        src = np.concatenate([f.src for f in parts])
        dst = np.concatenate([f.dst for f in parts])
        choice = np.concatenate([route_phase(xgft, f.src, f.dst, LayeredOptions())[0] for f in parts])
    else:
        idx, src, dst, _ = workload.batch(phases)
        choice = OBLIVIOUS_ROUTERS[router](xgft, src, dst, phase=phases[idx], occurrence=np.zeros_like(src))
    return xgft, network, src, dst, xgft.path_nodes(src, dst, choice)


def dmodk_expected_port(xgft, switch_node, d):
    """The d-mod-k definition, written from the node's coordinates: down towards d if d is in
    the switch's subtree, else up link floor(d / (W_1...W_l)) mod W_{l+1} (port M_l + 1 + link)."""
    layer, m_digits, _ = xgft.node_coords(switch_node)
    leaves_below = int(np.prod(xgft.m[:layer]))
    subtree = switch_node - xgft.node_offset[layer]
    subtree //= int(np.prod(xgft.w[:layer]))
    if d // leaves_below == subtree:
        return (d // int(np.prod(xgft.m[: layer - 1]))) % xgft.m[layer - 1] + 1
    return xgft.m[layer - 1] + 1 + (d // int(np.prod(xgft.w[:layer]))) % xgft.w[layer]


@pytest.mark.parametrize("n", [16, 64])
def test_dmodk_tables_follow_the_definition(n):
    xgft, network, src, dst, paths = exchange(TABLE_3_1[n], "dmodk")
    tables = build_tables(xgft, network, dst, route_hops(network, paths))
    assert tables.lids.lmc == 0
    for switch in range(network.num_terminals, network.num_nodes):
        for d in range(n):
            lid = int(tables.lids.terminal_base(d))
            assert tables.out_port[switch - network.num_terminals, lid] == dmodk_expected_port(xgft, switch, d)


@pytest.mark.parametrize("n", [32, 64])
def test_per_flow_routes_need_lmc_and_walk_back_exactly(n):
    """Layered routes of a whole exchange depend on the source: offsets per destination make
    every flow's walk through the tables equal its synthesized path."""
    xgft, network, src, dst, paths = exchange(TABLE_3_1[n], "layered")
    hops = route_hops(network, paths)
    tables = build_tables(xgft, network, dst, hops)
    assert tables.lids.lmc > 0
    assert tables.colours_bound <= tables.colours_used <= 1 << tables.lids.lmc
    walked = walk_paths(network, tables.out_port, src, tables.dlid)
    moving = src != dst
    assert [w for w, m in zip(walked, moving) if m] == [p for p, m in zip(paths, moving) if m]
    # Flows sharing a DLID agree at every switch they both visit (the colouring's invariant).
    for lid in np.unique(tables.dlid)[:50]:
        seen = {}
        for f in np.flatnonzero(tables.dlid == lid):
            for s, p in zip(hops.switch[f], hops.port[f]):
                if s >= 0:
                    assert seen.setdefault(int(s), int(p)) == p


def test_every_switch_routes_every_lid():
    xgft, network, src, dst, paths = exchange(TABLE_3_1[32], "layered", phases=[3])
    tables = build_tables(xgft, network, dst, route_hops(network, paths))
    switch_lids = tables.lids.switch_lid(np.arange(network.num_switches))
    terminal_lids = (tables.lids.terminal_base(np.arange(network.num_terminals))[:, None] + np.arange(tables.lids.block)).ravel()
    assert (tables.out_port[:, terminal_lids] != NO_PORT).all()
    assert (tables.out_port[:, switch_lids] != NO_PORT).all()
    assert (tables.out_port[np.arange(network.num_switches), switch_lids] == 0).all()
    # from every terminal, the tables lead to every switch's LID on a shortest path
    sources = np.repeat(np.arange(network.num_terminals), network.num_switches)
    targets = np.tile(np.arange(network.num_switches), network.num_terminals)
    walked = walk_paths(network, tables.out_port, sources, switch_lids[targets])
    assert [path[-1] for path in walked] == (targets + network.num_terminals).tolist()
    graph = nx.DiGraph(zip(network.channel_src.tolist(), network.channel_dst.tolist()))
    hops = dict(nx.all_pairs_shortest_path_length(graph))
    assert all(len(path) - 1 == hops[s][t + network.num_terminals] for path, s, t in zip(walked, sources, targets))


def test_lmc_that_cannot_hold_the_routes_is_refused():
    xgft, network, src, dst, paths = exchange(TABLE_3_1[32], "layered")
    with pytest.raises(SynthError, match="LMC 0 cannot hold these routes"):
        build_tables(xgft, network, dst, route_hops(network, paths), lmc=0)


def test_lid_plan_limits():
    with pytest.raises(SynthError, match="at most 7"):
        LidPlan(16, 8, 8)
    with pytest.raises(SynthError, match="above the unicast limit"):
        LidPlan(8192, 100, 3)
    plan = LidPlan(1024, 704, 2)
    assert plan.terminal_base(0) % 4 == 0 and plan.max_lid <= MAX_UNICAST_LID


def test_a_path_over_a_missing_link_is_refused():
    xgft, network = xgft_and_network(TABLE_3_1[16])
    with pytest.raises(SynthError, match="lacks"):
        route_hops(network, [[0, 1]])


def test_opensm_files_name_every_node_and_route_every_switch():
    from synth.io.switch_tables import render_fabric, render_guid2lid, render_lfts

    xgft, network, src, dst, paths = exchange(TABLE_3_1[32], "layered", phases=[5])
    tables = build_tables(xgft, network, dst, route_hops(network, paths))
    fabric = render_fabric(network)
    records = [line.split('"')[1] for line in fabric.splitlines() if line.startswith(("Switch", "Ca"))]
    assert records == network.node_names[network.num_terminals :] + network.node_names[: network.num_terminals]
    assert all(line.startswith("Ca\t1 ") for line in fabric.splitlines() if line.startswith("Ca"))
    guid2lid = render_guid2lid(network, tables.lids)
    entries = guid2lid.split("\n\n")
    assert len([e for e in entries if e]) == network.num_nodes  # one entry per port, blank-line separated
    lfts = render_lfts(tables)
    assert lfts.count("Unicast lids") == network.num_switches
    assert " 255" not in lfts and "portguid" not in lfts
    assert sum(line.startswith("0x") for line in lfts.splitlines()) == int((tables.out_port != NO_PORT).sum())


def test_highest_lid_never_starts_a_block_of_64():
    """OpenSM 3.3.23 drops the highest LID from every switch when it is a multiple of 64."""
    plan = LidPlan(1024, 704, 0)  # the 1024-leaf Table 3.1 tree: 0x6c0 would be the highest
    assert plan.max_lid % 64 != 0 and plan.switch_lid(0) > plan.terminal_base(1023)


def test_tables_command_writes_the_opensm_set_or_nothing(run, tmp_path):
    routes = tmp_path / "r.json"
    assert run("route", TABLE_3_1[32], "--traffic", "a2a-opt", "--router", "layered", "--phase", "1-4", "--out", routes, "--quiet")[0] == 0
    code, out, err = run("tables", routes, "--out", tmp_path / "t")
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["dlid.csv", "fabric.net", "guid2lid", "lfts.dump", "routes.json"]
    assert "LMC" in out
    rows = (tmp_path / "t" / "dlid.csv").read_text().splitlines()
    assert rows[0] == "src_rank,dst_rank,dlid,phase" and len(rows) == 1 + 4 * 32
    for fmt in ("json", "csv"):
        assert run("tables", routes, "--format", fmt, "--out", tmp_path / fmt)[0] == 0
        assert (tmp_path / fmt / f"tables.{fmt}").exists()
    code, _, err = run("tables", routes, "--lmc", "0", "--out", tmp_path / "none")
    assert code == 2 and "cannot hold" in err and not (tmp_path / "none").exists()
    other = tmp_path / "other.json"
    other.write_text('{"format": "synth-routes/3"}')
    code, _, err = run("tables", other, "--out", tmp_path / "none")
    assert code == 2 and "expected one of synth-routes/1, synth-routes/2" in err


def test_walk_channels_gives_the_channels_of_the_routed_paths():
    """Walking tables to channel matrices (reports, OpenSM engines) agrees with the XGFT's own
    path arithmetic; flows to themselves take no channel; a broken table delivers nothing."""
    xgft, network, src, dst, paths = exchange(TABLE_3_1[32], "layered", phases=[0, 5, 9])
    hops = route_hops(network, paths)
    tables = build_tables(xgft, network, dst, hops)
    channels, reached = walk_channels(network, tables.out_port, src, dst, tables.dlid)
    assert reached.all()
    for row, path, s, d in zip(channels.tolist(), paths, src.tolist(), dst.tolist()):
        expected = [] if s == d else network.find_channels(np.asarray(path[:-1]), np.asarray(path[1:])).tolist()
        assert [c for c in row if c >= 0] == expected
    broken = tables.out_port.copy()
    broken[:, tables.dlid[src != dst][0]] = NO_PORT
    channels, reached = walk_channels(network, broken, src, dst, tables.dlid)
    lost = tables.dlid == tables.dlid[src != dst][0]
    assert not reached[lost & (src != dst)].any() and (channels[lost & (src != dst)] == -1).all()


def test_colouring_proves_when_the_busiest_switch_bound_is_not_enough():
    """Three routes to one destination that pairwise disagree at a different switch each: every
    switch sees 2 ports, yet 3 colours are needed; CP-SAT's proof raises the bound to 3, so the
    reported bound shows that LMC 2 is the least possible."""
    switch = np.array([[10, 11], [10, 12], [11, 12]])
    port = np.array([[1, 1], [2, 1], [2, 2]])
    offsets, bound = colour_flows(np.zeros(3, dtype=np.int64), Hops(switch, port))
    assert bound == 3 and len(set(offsets.tolist())) == 3


def test_a_path_through_a_switch_twice_is_refused_in_one_line(run, tmp_path):
    """Valiant's two segments can cross on a torus; destination-based tables cannot send one packet out of a switch
    by two ports (found by opensm-check: 21 of 108 flows left their paths on torus:6,6)."""
    routes = tmp_path / "r.json"
    assert run("route", "torus:6,6", "--traffic", "a2a-lin", "--phase", "0-3", "--router", "valiant", "--quiet",
               "--out", routes)[0] == 0
    code, out, err = run("tables", routes, "--out", tmp_path / "t")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "twice" in err
    assert not (tmp_path / "t").exists()
