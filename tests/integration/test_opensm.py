"""synth's tables in the real OpenSM on a simulated fabric (ibsim), read back from the switches."""

import shutil

import pytest

from helpers import TABLE_3_1
from synth.core.errors import SynthError
from synth.opensm import sim as opensm_sim


def routed_tables(run, tmp_path, n, phases, router="layered"):
    tmp_path.mkdir(exist_ok=True)  # (an output's directory must exist: synth makes none)
    routes = tmp_path / "routes.json"
    code, _, err = run("route", TABLE_3_1[n], "--traffic", "a2a-opt", "--router", router, "--phase", phases, "--out", routes, "--quiet")
    assert code == 0, err
    code, out, err = run("tables", routes, "--out", tmp_path / "tables")
    assert code == 0, err
    return tmp_path / "tables", out


@pytest.mark.parametrize("n, phases", [(16, "all"), (32, "all"), (64, "0-15"), (128, "1,50,100")])
def test_per_flow_routes_load_and_read_back_exactly(run, tmp_path, n, phases):
    """Layered routes of several phases depend on the source: LMC > 0, and every flow's walk
    through the tables OpenSM programmed into the simulated switches equals its path."""
    directory, summary = routed_tables(run, tmp_path, n, phases)
    assert "LMC 0" not in summary
    code, out, err = run("opensm-check", directory, "--engines", "none")
    assert code == 0, out + err
    assert "tables loaded, LIDs kept" in out
    flows = out.split("; ")[1].split(" flows")[0]
    followed, total = flows.split(" of ")
    assert followed == total and int(total) > 0


def test_single_phase_routes_need_no_lmc_and_opensm_engines_are_compared(run, tmp_path):
    directory, summary = routed_tables(run, tmp_path, 64, "7")
    assert "LMC 0" in summary
    code, out, err = run("opensm-check", directory, "--engines", "minhop,ftree")
    assert code == 0, out + err
    rows = {line.split()[1]: line.split() for line in out.splitlines() if line.startswith("opensm ")}
    assert set(rows) == {"minhop", "ftree"}
    layered = next(line.split() for line in out.splitlines() if line.startswith("synth layered"))
    assert layered[2] == "1"  # synth reaches the bound; OpenSM's engines ignore the workload
    assert all(int(r[2]) >= 1 for r in rows.values())


def test_tables_of_another_network_are_refused(run, tmp_path):
    directory, _ = routed_tables(run, tmp_path, 16, "1")
    other, _ = routed_tables(run, tmp_path / "b", 32, "1")
    shutil.copy(other / "fabric.net", directory / "fabric.net")
    code, _, err = run("opensm-check", directory, "--engines", "none")
    assert code == 2 and "does not describe the network" in err


def test_missing_files_and_missing_opensm_are_named(run, tmp_path, monkeypatch):
    code, _, err = run("opensm-check", tmp_path, "--engines", "none")
    assert code == 2 and "missing fabric.net" in err
    monkeypatch.setattr(opensm_sim.shutil, "which", lambda *a, **k: None)
    with pytest.raises(SynthError, match="apt-get install opensm ibsim-utils infiniband-diags"):
        opensm_sim.find_tools()


def test_unknown_engine_is_refused(run, tmp_path):
    directory, _ = routed_tables(run, tmp_path, 16, "1")
    code, _, err = run("opensm-check", directory, "--engines", "torus")
    assert code == 2 and "unknown OpenSM engine 'torus'" in err


@pytest.mark.parametrize("n, phases", [(16, "all"), (32, "all"), (64, "all"), (128, "0-15")])
def test_destination_consistent_routes_load_with_lmc_0(run, tmp_path, n, phases):
    routes = tmp_path / "routes.json"
    code, _, err = run("route", TABLE_3_1[n], "--traffic", "a2a-opt", "--router", "layered", "--consistency", "destination",
                       "--time-limit", "20", "--phase", phases, "--out", routes, "--quiet")
    assert code == 0, err
    code, summary, err = run("tables", routes, "--out", tmp_path / "tables")
    assert code == 0 and "LMC 0 " in summary, summary + err
    code, out, err = run("opensm-check", tmp_path / "tables", "--engines", "none")
    assert code == 0 and "tables loaded, LIDs kept" in out, out + err
    followed, total = out.split("; ")[1].split(" flows")[0].split(" of ")
    assert followed == total
