"""`synth synthesize --routes FILE`: the transfers take a routes file's paths (the fabric's own)
instead of a router's. Checked: the same paths as a file give the same schedule and times as the
router that wrote them; a file of other paths is what the record's times are priced along
(recomputed here from the written schedule and the file); a file without a needed pair, both
options, or another network's file is one line and exit 2, nothing written."""

from __future__ import annotations

import json

import pytest

from synth.io.routes_file import read_routes
from synth.io.schedule_file import read_schedule
from synth.pricing.schedule_cost import map_schedule
from synth.topology import parse_topology
from tests.helpers import assert_user_error


@pytest.fixture
def all_pairs(run, tmp_path):
    def routed(router: str, spec: str = "torus:4,4", traffic: str = "a2a-lin"):
        out = tmp_path / f"{spec}-{router}-{traffic}.json".replace(":", "_").replace(",", "_")
        code, _, err = run("route", spec, "--traffic", traffic, "--router", router, "--out", out, "--quiet")
        assert code == 0, err
        return out
    return routed


@pytest.mark.parametrize("collective", ["allgather", "alltoall"])
def test_a_file_of_the_routers_paths_gives_what_the_router_gives(run, tmp_path, all_pairs, collective):
    files = {}
    for name, option in (("router", ["--router", "minimal"]), ("file", ["--routes", all_pairs("minimal")])):
        files[name] = tmp_path / f"{name}.json"
        code, _, err = run("synthesize", collective, "--network", "torus:4,4", "--bytes", "1MiB", *option,
                           "--out", files[name], "--quiet")
        assert code == 0, err
    by_router, by_file = (json.loads(files[k].read_text()) for k in ("router", "file"))
    assert by_file["synthesis"]["router"] == "a routes file of minimal"
    if collective == "allgather":  # the all-to-all's own routing (translated) is not the router's: the file's is
        assert by_file["steps"] == by_router["steps"]
        assert by_file["synthesis"]["sizes"] == by_router["synthesis"]["sizes"]
    assert run("verify", files["file"])[0] == 0


def test_the_times_recorded_are_the_files_paths_priced(run, tmp_path, all_pairs):
    """Routes of the Valiant router (a random intermediate per flow): the schedule's time at 64 MiB,
    recomputed from the written file along the routes file's paths, is the recorded one."""
    routes = all_pairs("valiant")
    out = tmp_path / "s.json"
    code, _, err = run("synthesize", "allgather", "--network", "torus:4,4", "--bytes", "64MiB", "--routes", routes,
                       "--method", "exact", "--time-limit", "10", "--out", out, "--quiet")
    assert code == 0, err
    schedule = read_schedule(out)
    recorded = schedule.synthesis["sizes"][0]
    priced = map_schedule(schedule, parse_topology("torus:4,4"), routes=read_routes(routes))
    assert priced.time(1e-6, 100e9) == pytest.approx(recorded["seconds"], rel=1e-9)
    assert recorded["seconds"] >= recorded["bound_seconds"]


def test_a_file_without_the_pairs_another_networks_file_and_both_options_are_refused(run, tmp_path, all_pairs):
    shift = all_pairs("minimal", traffic="shift:1")
    other = all_pairs("minimal", spec="torus:4,8")
    out = tmp_path / "s.json"
    for extra, says in ((["--routes", shift], "has no path from terminal"),
                        (["--routes", other], "the routes file is for torus:4,8"),
                        (["--routes", all_pairs("minimal"), "--router", "minimal"], "one or the other")):
        assert_user_error(run("synthesize", "allgather", "--network", "torus:4,4", *extra, "--out", out), says)
        assert not out.exists()
