"""Routes of direct networks (dragonfly, Slim Fly, HyperX with parallel links) in the real OpenSM on
ibsim: synth's tables loaded, read back from the switches and walked channel by channel (parallel
links told apart); OpenSM's own engines on the same fabric and workload, with their lanes; degraded
fabrics; OpenSM's updn against synth's up*/down* router."""

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest

from helpers import assert_user_error
from synth.core.errors import SynthError
from synth.routing.updown import updown
from synth.topology import parse_topology
from updown_reference import Reference, all_pairs

SPECS = ["dragonfly:2,4,2", "slimfly:5", "hyperx:3,3:p=2:trunk=2"]


def _tables(run, tmp_path, spec, router="paths", traffic="randperm:5", extra=()):
    routes = tmp_path / "routes.json"
    code, out, err = run("route", spec, "--router", router, "--traffic", traffic, "--out", routes, "--quiet", *extra)
    assert code == 0, out + err
    # (the round trip through OpenSM is the subject here: routes that can deadlock without lanes are allowed)
    code, out, err = run("tables", routes, "--out", tmp_path / "tables", "--allow-deadlock")
    assert code == 0, out + err
    return routes, tmp_path / "tables", out


def _rows(out: str) -> dict[str, list[str]]:
    return {" ".join(line.split()[:2]): line.split() for line in out.splitlines()
            if line.startswith(("opensm ", "synth "))}


@pytest.mark.parametrize("spec", SPECS)
def test_synthesized_paths_load_into_opensm_and_read_back_exactly(run, tmp_path, spec):
    routes, directory, summary = _tables(run, tmp_path, spec)
    assert "LMC 0" in summary  # one phase: every destination's flows agree at every switch
    code, out, err = run("opensm-check", directory, "--engines", "minhop,dfsssp,lash")
    assert code == 0, out + err
    assert "tables loaded, LIDs kept" in out
    followed, total = out.split("; ")[1].split(" flows")[0].split(" of ")
    assert followed == total and int(total) > 0
    rows = _rows(out)
    assert set(rows) == {"synth paths", "opensm minhop", "opensm dfsssp", "opensm lash"}
    doc = json.loads(routes.read_text())
    proven = all("proven_by" in p for p in doc["phases"])
    synth = int(rows["synth paths"][2])
    assert synth == max(p["max_contention"] for p in doc["phases"])
    if proven:  # optimal over candidates that hold every minimal path: no minimal routing beats it
        assert all(synth <= int(row[2]) for row in rows.values())
    assert "needed" in " ".join(rows["opensm dfsssp"]) and "needed" in " ".join(rows["opensm lash"])


def test_several_phases_need_lmc_and_still_read_back(run, tmp_path):
    """Paths of different phases between the same terminals differ: LIDs per destination (LMC)."""
    routes = tmp_path / "routes.json"
    code, out, err = run("route", "dragonfly:2,4,2", "--router", "valiant", "--traffic", "a2a-lin", "--phase", "1-12",
                         "--out", routes, "--quiet")
    assert code == 0, out + err
    code, out, err = run("tables", routes, "--out", tmp_path / "tables", "--allow-deadlock")
    assert code == 0 and "LMC 0" not in out, out + err
    code, out, err = run("opensm-check", tmp_path / "tables", "--engines", "none")
    assert code == 0, out + err
    followed, total = out.split("; ")[1].split(" flows")[0].split(" of ")
    assert followed == total


def test_recorded_lanes_are_shown_next_to_the_engines(run, tmp_path):
    _, directory, _ = _tables(run, tmp_path, "torus:6", router="minimal", traffic="a2a-lin", extra=("--vls", "2"))
    code, out, err = run("opensm-check", directory, "--engines", "dfsssp")
    assert code == 0, out + err
    assert "2 (recorded)" in " ".join(_rows(out)["synth minimal"])


def test_lanes_reach_opensm_through_a_qos_policy(run, tmp_path):
    """Lanes become a QoS policy (SL per port pair) and SL l -> VL l tables that OpenSM programs into
    the simulated switches; every flow's SL, by the policy's rules, maps to its recorded lane."""
    _, directory, _ = _tables(run, tmp_path, "torus:6", router="minimal", traffic="a2a-lin", extra=("--vls", "2"))
    policy = (directory / "qos-policy.conf").read_text()
    assert "qos-match-rules" in policy and "sl: 1" in policy
    assert "qos_sl2vl 0,1,0" in (directory / "opensm-qos.conf").read_text()
    code, out, err = run("opensm-check", directory, "--engines", "none")
    assert code == 0, out + err
    assert "QoS policy loaded" in out and "all SL l -> VL l" in out
    assert "30 of 30 flows get their recorded lane" in out
    assert "lanes not observed:" in out
    # a policy that sends lane-1 flows to SL 0: the flows' lanes no longer match
    (directory / "qos-policy.conf").write_text(policy.replace("qos-level-name: VL1", "qos-level-name: default"))
    code, out, _ = run("opensm-check", directory, "--engines", "none")
    assert code == 1 and "gets another lane than recorded" in out
    # a policy OpenSM cannot parse is reported
    (directory / "qos-policy.conf").write_text(policy.replace("name: default", "name: other"))
    code, out, _ = run("opensm-check", directory, "--engines", "none")
    assert code == 1 and "QoS policy REFUSED" in out
    # a policy synth cannot read: one line, exit 2, before OpenSM runs
    for broken, message in ((policy.replace("qos-level-name: VL1", "qos-level-name: VL9"), "the qos-level 'VL9'"),
                            (policy.replace("port-guid: 0x", "port-guid: 0xzz"), "invalid literal"),
                            (policy.replace("        sl: 1\n", ""), "a block ends without its 'sl' field")):
        (directory / "qos-policy.conf").write_text(broken)
        code, out, err = run("opensm-check", directory, "--engines", "none")
        assert code == 2 and out == "" and message in err and len(err.splitlines()) == 1, err


def test_one_pair_on_two_lanes_cannot_become_a_policy():
    import numpy as np

    from synth.core.errors import SynthError
    from synth.io.qos_policy import lanes_by_pair

    assert lanes_by_pair(np.array([0, 0, 2]), np.array([1, 1, 2]), np.array([1, 1, 0])) == {(0, 1): 1}
    with pytest.raises(SynthError, match="a QoS policy gives one service level per pair of ports"):
        lanes_by_pair(np.array([0, 0]), np.array([1, 1]), np.array([0, 1]))


def test_comparable_to_opensm_updn_given_the_same_root():
    """OpenSM's own updn on ibsim, its roots from a GUID file (-a) holding this router's root (its own
    detection finds none on a dragonfly and falls back to minhop): on dragonfly(2,4,2) every OpenSM
    path has the shortest legal length of the reference, and a2a-lin's contention is within one of
    synth's (measured: 8 and 8, sums over the phases 414 and 414)."""
    from synth.io.switch_tables import render_fabric, render_guid2lid, switch_guids
    from synth.opensm.engines import out_port_matrix
    from synth.opensm.sim import Simulator, find_tools, read_back_tables
    from synth.tables.forwarding import LidPlan, walk_channels

    try:
        tools = find_tools()
    except SynthError as exc:
        pytest.skip(str(exc))
    topology = parse_topology("dragonfly:2,4,2")
    network, ref = topology.network(), Reference(topology)
    n = network.num_terminals
    plan = LidPlan(n, network.num_switches, 0)
    with tempfile.TemporaryDirectory(prefix="synth-updn-") as scratch:
        fabric, roots = Path(scratch) / "fabric.net", Path(scratch) / "roots"
        fabric.write_text(render_fabric(network))
        roots.write_text("".join(f"0x{g:016x}\n" for g in switch_guids(network)[ref.roots].tolist()))
        with Simulator(tools, fabric) as sim:
            cache = sim.dir / "cache-updn-roots"
            cache.mkdir()
            (cache / "guid2lid").write_text(render_guid2lid(network, plan))
            log = cache / "opensm.log"
            sim.run([tools.opensm, "-F", "/dev/null", "-o", "-s", "0", "-e", "-f", str(log), "-D", "0x03",
                     "--dump_files_dir", str(cache), "-R", "updn", "-l", "0", "-a", str(roots)],
                    {"OSM_CACHE_DIR": str(cache), "OSM_TMP_DIR": str(cache)})
            assert "updn tables configured on all switches" in log.read_text(errors="replace")
            out_port = out_port_matrix(network, read_back_tables(sim), plan.max_lid)
    s, d = all_pairs(n)
    s, d = s[s != d], d[s != d]
    channels, reached = walk_channels(network, out_port, s, d, plan.terminal_base(d))
    assert reached.all()
    theirs = [row[row >= 0].tolist() for row in channels]
    assert all(len(p) - 2 == ref.legal_length[ref.router_of[a], ref.router_of[b]] for p, a, b in
               zip(theirs, s.tolist(), d.tolist()))
    phase = (d - s) % n - 1
    size = (n - 1) * network.num_channels
    opensm = np.bincount(phase[np.repeat(np.arange(len(s)), [len(p) for p in theirs])] * network.num_channels
                         + np.concatenate(theirs), minlength=size).reshape(n - 1, -1).max(axis=1)
    synth_paths = updown(topology, s, d)
    ours = np.bincount(synth_paths.keys(phase * network.num_channels), minlength=size).reshape(n - 1, -1).max(axis=1)
    assert abs(int(ours.max()) - int(opensm.max())) <= 1
    assert abs(int(ours.sum()) - int(opensm.sum())) <= 0.05 * opensm.sum()


# ----- degraded fabrics ---------------------------------------------------------------------------

def test_opensm_loads_a_degraded_fabric(run, tmp_path):
    """Tables of a degraded dragonfly (a failed switch, a failed local link) on ibsim: every flow
    follows its path, and OpenSM's engines route the same degraded fabric."""
    routes, tables = tmp_path / "r.json", tmp_path / "tables"
    assert run("route", "dragonfly:2,4,2", "--fail", "g1r2+g0r0-g0r1", "--traffic", "randperm:1", "--router", "paths",
               "--out", routes, "--quiet")[0] == 0
    assert run("tables", routes, "--out", tables, "--allow-deadlock")[0] == 0
    fabric = (tables / "fabric.net").read_text()
    assert '"g1r2"' not in fabric and '"t12"' not in fabric  # the failed switch and its terminals: not cabled
    code, text, err = run("opensm-check", tables, "--engines", "minhop,dfsssp")
    assert code == 0, err
    assert "flows follow their synthesized paths" in text and "opensm dfsssp" in text


def test_opensm_refuses_a_fabric_in_two_parts(run, tmp_path):
    group0 = "+".join(f"g0r{x}-g{g}r0" for x, g in zip([0, 0, 1, 1, 2, 2, 3, 3], range(1, 9)))
    routes, tables = tmp_path / "r.json", tmp_path / "t"
    code, text, _ = run("route", "dragonfly:2,4,2", "--fail", group0, "--traffic", "randperm:1", "--router", "minimal",
                        "--out", routes, "--quiet")
    assert code == 0 and "14 flows" in text  # group 0's 8 terminals and their partners
    assert run("tables", routes, "--out", tables, "--allow-deadlock")[0] == 0
    assert_user_error(run("opensm-check", tables), "falls apart into 2 parts")


@pytest.mark.parametrize("spec", ["torus:4,5", "torus:3,4:p=2", "torus:4,4,3"])
def test_torus_2qos_routes_a_torus_seeded_by_its_coordinates(run, tmp_path, spec):
    """OpenSM's torus-2QoS needs the torus's sizes and a seed (torus-2QoS.conf): synth writes them from the
    torus's coordinates, with QoS on; the engine must then route every flow (no fallback to minhop) on minimal
    paths, as dimension-order routing does."""
    _, directory, _ = _tables(run, tmp_path, spec, router="dor", traffic="a2a-lin", extra=("--phase", "0-3"))
    code, out, err = run("opensm-check", directory, "--engines", "all")
    assert code == 0, out + err
    rows = _rows(out)
    assert "opensm torus-2QoS" in rows and "fell back" not in " ".join(rows["opensm torus-2QoS"])
    assert rows["opensm torus-2QoS"][2].isdigit() and "unrouted" not in out
    # dimension order on a torus is minimal: torus-2QoS's contention is dor's (both deterministic, minimal, one
    # path per pair; they may break ties between the two ways round a ring differently, so not always equal)
    assert int(rows["opensm torus-2QoS"][2]) >= 1


def test_torus_2qos_is_refused_off_a_torus_and_left_out_of_all(run, tmp_path):
    _, directory, _ = _tables(run, tmp_path, "dragonfly:2,4,2", traffic="randperm:1")
    code, out, err = run("opensm-check", directory, "--engines", "torus-2QoS")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "tori of up to 3 dimensions" in err
    code, out, err = run("opensm-check", directory, "--engines", "all")
    assert code == 0, out + err
    assert "opensm torus-2QoS" not in _rows(out) and "opensm dfsssp" in _rows(out)


def test_torus_2qos_on_a_recognized_torus_fabric_uses_its_guids(run, tmp_path):
    """A torus's fabric file with GUIDs of its own, recognized as the torus: torus-2QoS is seeded with those GUIDs."""
    fabric = tmp_path / "torus.net"
    assert run("topology", "torus:5,4", "--format", "ibnetdiscover", "--out", fabric)[0] == 0  # (torus:4,4 is hyperx:2,2,2,2)
    text = fabric.read_text().replace("0x0053", "0x0077").replace("(53", "(77")
    fabric.write_text(text)
    _, directory, _ = _tables(run, tmp_path, f"fabric:{fabric}", router="dor", traffic="a2a-lin",
                              extra=("--phase", "0-2"))
    code, out, err = run("opensm-check", directory, "--engines", "torus-2QoS")
    assert code == 0, out + err
    assert "fell back" not in out and "0077" in (directory / "guid2lid").read_text()


@pytest.mark.parametrize("fail", ["r0.0-r1.0", "r0.0"])
def test_torus_2qos_routes_a_degraded_torus_from_a_seed_that_survives(run, tmp_path, fail):
    """A failed link or switch (the default seed's own, r0.0): the seed moves to a router whose links all work, and
    torus-2QoS routes around the failure without falling back."""
    _, directory, _ = _tables(run, tmp_path, f"torus:6,6@fail={fail}", router="minimal", traffic="a2a-lin",
                              extra=("--phase", "0-3"))
    code, out, err = run("opensm-check", directory, "--engines", "torus-2QoS")
    assert code == 0, out + err
    assert "opensm torus-2QoS" in _rows(out) and "fell back" not in out and "unrouted" not in out
