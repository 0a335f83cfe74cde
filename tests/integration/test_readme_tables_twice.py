"""The README's fabric-administrator sequences run into one `tables/` (issue 41): the dragonfly's routes with lanes,
then the fat tree's without, then the dragonfly's again. Each `synth tables` replaces the directory whole, so
`synth opensm-check tables/` passes every time (before, the second run kept the first run's QoS files and
opensm-check failed with "0 of 5112 flows get their recorded lane")."""

from __future__ import annotations

import pytest

from helpers import run


@pytest.mark.timeout(1200)  # the dragonfly's lane-budgeted routing: about 40 s of CPU, minutes on a busy machine
def test_the_readme_sequences_into_one_tables_directory_pass_opensm_check_every_time(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the README's relative names: r.json, routes.json, tables/
    # Fabric administrators (README, Tours)
    assert run("route", "dragonfly:2,4,2", "--traffic", "a2a-lin", "--router", "paths", "--vls", "2", "--out", "r.json",
               "--quiet")[0] == 0
    assert run("check", "r.json")[0] == 0
    # A tour of fat trees
    assert run("route", "xgft:3:8,4,2:1,8,2", "--traffic", "a2a-lin", "--phase", "0-15", "--router", "random", "--seed",
               "3", "--out", "routes.json", "--quiet")[0] == 0
    assert run("check", "routes.json")[0] == 0
    for routes, engines, laned in (("r.json", ["--engines", "minhop,dfsssp"], True), ("routes.json", [], False),
                                   ("r.json", ["--engines", "minhop,dfsssp"], True)):
        code, _, err = run("tables", routes, "--out", "tables/")
        assert code == 0, err
        names = sorted(p.name for p in (tmp_path / "tables").iterdir())
        assert ("qos-policy.conf" in names) == laned and ("opensm-qos.conf" in names) == laned, names
        code, out, err = run("opensm-check", "tables/", *engines)
        assert code == 0, out + err
        assert "flows follow their synthesized paths" in out
        if laned:
            assert "5112 of 5112 flows get their recorded lane at every switch" in out
