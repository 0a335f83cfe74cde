"""Lanes in the real OpenSM on ibsim (issue 22): synth's QoS policy is accepted for every lane count
from 1 up; routes that use more lanes than the simulated switches run get a verdict that names the
VL limit and counts the flows that lose their lane; a directory without the QoS files of routes
with lanes is refused.

The routes are up*/down* (d-mod-k on an XGFT), whose whole channel dependency graph is acyclic, so
any lane per path keeps every lane acyclic: lanes are dealt out by flow index to reach a count.
ibsim's switch ports advertise VLCap VL0-7 and OpenSM sets OperVLs to it; OpenSM (osm_qos.c,
sl2vl_update_table) masks every SL-to-VL entry with the operational VLs, so SL 8 arrives on VL0
and SL 9 on VL1. The expected lane of a flow is computed here from that rule, not read from synth.
"""

import json

import pytest
from hypothesis import given, settings, strategies as st

SPEC = "xgft:2:4,4:1,2"
SWITCH_VLS = 8  # data VLs ibsim's switch ports run (PortInfo VLCap and OperVLs VL0-7)


def _laned_tables(run, tmp_path, lanes: int):
    routes = tmp_path / "routes.json"
    code, out, err = run("route", SPEC, "--router", "dmodk", "--traffic", "a2a-lin", "--phase", "1-3", "--vls", 1,
                         "--out", routes, "--quiet")
    assert code == 0, out + err
    doc = json.loads(routes.read_text())
    k = 0
    for entry in doc["phases"]:
        entry["vls"] = [(k + i) % lanes for i in range(len(entry["paths"]))]
        k += len(entry["paths"])
    routes.write_text(json.dumps(doc))
    code, out, err = run("tables", routes, "--out", tmp_path / "tables")
    assert code == 0, out + err
    note = [line for line in out.splitlines() if line.startswith("note:")]
    if lanes > SWITCH_VLS:  # said when the tables are written, before any OpenSM runs
        assert note == [f"note: the routes use {lanes} virtual lanes; switches commonly run 8 data VLs (ibsim's VL0-7), "
                        "and OpenSM maps an SL past them onto a VL the port runs, so those flows would share lanes: "
                        "check with synth opensm-check, or route within --vls 8"]
    else:
        assert note == []
    return doc, tmp_path / "tables"


@pytest.mark.parametrize("lanes", [1, 2, 8, 9, 15])
def test_the_policy_loads_for_every_lane_count_and_the_vl_limit_is_named(run, tmp_path, lanes):
    doc, directory = _laned_tables(run, tmp_path, lanes)
    code, out, err = run("opensm-check", directory, "--engines", "none")
    verdict = [line for line in out.splitlines() if line.startswith("lanes:")]
    assert len(verdict) == 1, out + err
    assert "QoS policy loaded" in verdict[0]
    recorded = [(s, d, v) for e in doc["phases"] for (s, d, _), v in zip(e["flows"], e["vls"]) if s != d]
    arriving = sum(1 for _, _, v in recorded if v == (v & (SWITCH_VLS - 1)))  # OpenSM's mask of the VL
    assert f"{arriving} of {len(recorded)} flows get their recorded lane" in verdict[0]
    if lanes <= SWITCH_VLS:
        assert code == 0, out + err
        assert f"{lanes} lane{'s' * (lanes != 1)} used within the 8 data VLs the switches run" in verdict[0]
    else:
        assert code == 1 and arriving < len(recorded)
        assert f"the routes use {lanes} lanes but the switches run 8 data VLs (OperVLs VL0-7" in verdict[0]
        assert "SL 8 -> VL0" in verdict[0] and "route within 8 lanes" in verdict[0]
        assert "WRONG at" not in verdict[0]  # one cause, not two verdicts


def test_missing_qos_files_of_routes_with_lanes_are_refused(run, tmp_path):
    _, directory = _laned_tables(run, tmp_path, 2)
    for name in ("qos-policy.conf", "opensm-qos.conf"):
        text = (directory / name).read_text()
        (directory / name).unlink()
        code, out, err = run("opensm-check", directory, "--engines", "none")
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
        assert f"missing {name}" in err and "virtual lanes" in err
        (directory / name).write_text(text)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(st.dictionaries(st.tuples(st.integers(0, 15), st.integers(0, 15)).filter(lambda p: p[0] != p[1]),
                       st.integers(0, 14), min_size=1, max_size=40))
def test_the_policy_never_has_an_empty_section_and_gives_each_pair_its_lane(pair_lanes):
    from synth.io.qos_policy import parse_policy, render_policy
    from synth.io.switch_tables import terminal_port_guids
    from synth.topology import parse_topology

    network = parse_topology(SPEC).network()
    text = render_policy(network, pair_lanes)
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    for section in ("port-groups", "qos-levels", "qos-match-rules"):
        if section in lines:  # OpenSM refuses a section without entries
            assert lines[lines.index(section) + 1] != f"end-{section}"
    groups, rules = parse_policy(text)
    guids = terminal_port_guids(network)
    for (s, d), lane in pair_lanes.items():
        hits = [level for source, target, level in rules if guids[s] in groups[source] and guids[d] in groups[target]]
        assert (hits[0] if hits else 0) == lane
