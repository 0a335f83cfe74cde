"""What synthesized schedules claim (synth.synthesis.claims), swept over every registered method and
the families they apply to: `optimal` only where the time meets the bound of any schedule, a
proof relative to something only as `proven` with what it is, `feasible` where the model is coarser
than the network; no time below a printed bound; every band verified."""

from __future__ import annotations

import numpy as np
import pytest

from synth.collectives.verify import verify
from synth.pricing.compare import REFERENCE_BYTES
from synth.synthesis.methods import method_names
from synth.synthesis.plan import plan_synthesis
from synth.synthesis.portfolio import bands, choose, synthesize_parts
from synth.topology import parse_topology
from tests.helpers import delivers

VOCABULARY = {"optimal", "proven", "feasible", "timeout", "infeasible"}
ALPHA, BANDWIDTH = 1e-6, 100e9
SIZES = [32, 1 << 16, 1 << 26]

# (collective, network, plan options): together they make every registered method run
CASES = [
    ("allgather", "torus:8", {}),  # the program (symmetric) and dissemination
    ("reduce-scatter", "hyperx:3", {}),
    ("allgather", "dragonfly:1,2,1", {"method": "trees"}),  # straight and relay trees, no program
    ("allgather", "xgft:2:2,2:1,2", {}),  # per layer
    ("broadcast", "torus:3,3", {}),  # scatter then allgather, chains, packed and torus trees
    ("reduce", "dragonfly:1,2,1", {}),  # striped trees through the groups
    ("allreduce", "hyperx:4", {}),  # recursive combining
    ("alltoall", "torus:3", {}),  # phases
]


def _sweep():
    for collective, spec, options in CASES:
        topology = parse_topology(spec)
        plan = plan_synthesis(collective, topology, time_limit=10, **options)
        parts = synthesize_parts(plan, 10)
        yield collective, spec, plan, parts, bands(plan, parts, SIZES, ALPHA, BANDWIDTH)


@pytest.mark.timeout(900)
def test_every_method_and_family_claims_only_what_holds(monkeypatch):
    import dataclasses

    import synth.synthesis.portfolio as portfolio

    seen = set()  # the methods that made a point (kept on a front or not)

    def watched(method):
        def points(*args):
            found = method.points(*args)
            if (found.front if hasattr(found, "front") else found):
                seen.add(method.name)
            return found
        return dataclasses.replace(method, points=points)

    applicable = portfolio.applicable
    monkeypatch.setattr(portfolio, "applicable", lambda *a: [watched(m) for m in applicable(*a)])
    for collective, spec, plan, parts, found in _sweep():
        for band in found:
            schedule, record = band.schedule, band.schedule.synthesis
            assert verify(schedule).ok and delivers(schedule), (collective, spec)
            assert record["status"] in VOCABULARY
            for entry in record["sizes"]:
                # no time below the bound of any schedule; optimal exactly where the time meets it
                assert entry["seconds"] >= entry["bound_seconds"] * (1 - 1e-9), (collective, spec, entry)
                assert (entry["status"] == "optimal") == (entry["seconds"] <= entry["bound_seconds"] * (1 + 1e-9))
            if record["status"] == "optimal":
                assert all(entry["status"] == "optimal" for entry in record["sizes"])
            for part in record["parts"]:
                for point in [part, *part["front"]]:
                    assert point["status"] in VOCABULARY, point
                    assert point["by"] in method_names(), point
                    if point["status"] == "proven":  # relative to what, said
                        assert point["proof"].startswith(("least rounds for", "rounds at the cut bound",
                                                          "busiest load the least among")), point
        _optimal_points_meet_the_bound_at_every_size(plan, parts)
    assert seen == set(method_names()), f"methods never run: {sorted(set(method_names()) - seen)}"


def _optimal_points_meet_the_bound_at_every_size(plan, parts):
    """A point claimed optimal on its own costs the bound at any size: checked at sizes that are whole
    multiples of its blocks, from its priced schedule's per-step terms recomputed here."""
    from synth.synthesis.claims import point_claim

    for part in parts:
        for k, point in enumerate(part.front):
            if point_claim(plan, part, k)[0] != "optimal" or part.priced[k] is None:
                continue
            mapped = part.priced[k]
            for multiple in (1, 64, 4096):
                size = part.blocks_of(k) * multiple
                time = ALPHA * float(mapped.port_messages.sum()) + 8.0 / BANDWIDTH * float(
                    mapped.channel_bytes.sum()) * multiple / REFERENCE_BYTES
                assert time <= plan.time_bound.seconds(size, ALPHA, BANDWIDTH) * (1 + 1e-9), (plan.topology.spec, point)


@pytest.mark.timeout(300)
def test_parallel_channels_make_the_program_feasible_with_why():
    """hyperx:3,3 with every link doubled (trunk=2): the program puts a rank pair's transfer on one of
    the two channels, so its least rounds (2 for 2 steps, above the cut bound) are not proven for
    schedules that split it; nor are the least steps of one round each, which rest on them."""
    topology = parse_topology("hyperx:3,3:trunk=2")
    plan = plan_synthesis("allgather", topology, method="exact", time_limit=10)
    parts = synthesize_parts(plan, 10, methods=("program",))
    (band,) = bands(plan, parts, [1 << 20], ALPHA, BANDWIDTH)
    (part,) = band.schedule.synthesis["parts"]
    for point in [part, *part["front"]]:
        assert point["status"] != "proven" or point["proof"].startswith("rounds at the cut bound"), point
    (point,) = part["front"]
    assert (point["steps"], point["rounds"], point["status"]) == (2, 2, "feasible")
    assert "parallel channels" in point["proof"]
    assert part["one_round_status"] == "feasible" and band.schedule.synthesis["status"] != "optimal"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("spec, steps", [("hyperx:4", 1), ("hyperx:3,3", 2)])
def test_a_small_allreduce_reaches_the_step_and_message_bounds(spec, steps):
    """A complete graph's allreduce in one step of all-pairs reductions, a 3 x 3 HyperX's in two (a
    reduction along each dimension): each step one message a port, at the message bound of any
    schedule (log_{1+k} P), where a reduce-scatter then an allgather takes twice the steps."""
    topology = parse_topology(spec)
    plan = plan_synthesis("allreduce", topology, time_limit=10)
    parts = synthesize_parts(plan, 10)
    (band,) = bands(plan, parts, [32], ALPHA, BANDWIDTH)
    schedule = band.schedule
    assert verify(schedule).ok and schedule.num_steps == steps == plan.step_bound.steps
    assert schedule.synthesis["parts"][0]["by"] == "combining"
    from synth.pricing.schedule_cost import map_schedule

    assert map_schedule(schedule, topology).messages == plan.time_bound.messages


@pytest.mark.timeout(600)
@pytest.mark.parametrize("spec", ["torus:4,4", "dragonfly:1,2,1"])
def test_the_best_allreduce_is_never_above_the_best_generated_one(spec):
    topology = parse_topology(spec)
    plan = plan_synthesis("allreduce", topology, time_limit=10)
    parts = synthesize_parts(plan, 10)
    generated = next(part for part in parts if part.pool == "generated")
    for size in [32, 1024, 1 << 16, 1 << 20, 1 << 26]:
        best = choose(parts, size, ALPHA, BANDWIDTH)[1]
        assert best <= generated.best(size, ALPHA, BANDWIDTH)[1] * (1 + 1e-12)
        assert best >= plan.time_bound.seconds(size, ALPHA, BANDWIDTH) * (1 - 1e-9)


@pytest.mark.timeout(300)
def test_compare_prints_the_bound_synthesize_proves():
    """alltoall on torus:4,4 at 64 MiB: the flow bound synthesize proves (2,686 us), not the terminal
    links' count of the generated algorithms (1,260 us)."""
    from synth.pricing.compare import compare
    from synth.pricing.bounds import with_strongest_bound

    topology = parse_topology("torus:4,4")
    size = 64 << 20
    weak = compare("alltoall", topology, [size], None, ALPHA, BANDWIDTH)
    strong = with_strongest_bound(weak, topology, ALPHA, BANDWIDTH)
    plan = plan_synthesis("alltoall", topology, time_limit=10)
    assert strong.bounds[0] == pytest.approx(plan.time_bound.seconds(size, ALPHA, BANDWIDTH))
    assert strong.bounds[0] * 1e6 == pytest.approx(2686, rel=1e-3) and weak.bounds[0] * 1e6 == pytest.approx(1260,
                                                                                                            rel=1e-3)
    assert (np.asarray(strong.times).min(axis=1) >= strong.bounds * (1 - 1e-9)).all()


@pytest.mark.timeout(300)
def test_a_chunk_sweep_records_one_front_of_steps_rounds_and_chunks(tmp_path):
    """--chunks 1..3 on a ring of four: every chunk count's program points on one front, each with its
    chunks and rounds per chunk (SCCL's R / C), the dominated ones dropped, the best per size taken
    from any of them (2 chunks: the cut bound's 3 rounds in the least steps, optimal at every size)."""
    from synth.app.synthesize import SynthesisRequest, synthesize

    result = synthesize(SynthesisRequest("allgather", parse_topology("torus:4"), [1 << 10, 1 << 20], chunks=(1, 2, 3),
                                         time_limit=10, methods=("program",)))
    (band,) = result.bands
    (part,) = band.schedule.synthesis["parts"]
    front = {(f["steps"], f["chunks"]): (f["rounds"], f["rounds_per_chunk"], f["status"]) for f in part["front"]}
    assert front[2, 2] == (3, 1.5, "optimal") and front[2, 1] == (2, 2.0, "proven")
    assert part["chunks"] == 2 and band.schedule.synthesis["status"] == "optimal"
    assert verify(band.schedule).ok and delivers(band.schedule)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("steps, rounds, answer", [(2, 3, "satisfiable"), (2, 2, "impossible"), (1, 9, "impossible")])
def test_a_query_of_one_point_is_satisfiable_or_proven_impossible(steps, rounds, answer):
    """The exact program of a ring of four with two chunks a rank: 2 steps take at least 3 rounds (the cut
    bound), so (2, 3, 2) is satisfiable with a verified schedule and (2, 2, 2) proven impossible; one step
    is below the step bound."""
    from synth.app.synthesize import SynthesisRequest, answer as ask

    request = SynthesisRequest("allgather", parse_topology("torus:4"), [1 << 20], chunks=2, mode="exact",
                               time_limit=10)
    plan, found, schedule = ask(request, steps, rounds)
    assert found.status == answer and "symmetric" not in plan.method
    if answer == "satisfiable":
        assert verify(schedule).ok and schedule.num_steps == steps and found.rounds <= rounds
        assert schedule.synthesis["query"]["answer"] == "satisfiable"
    else:
        assert schedule is None


@pytest.mark.timeout(120)
@pytest.mark.parametrize("argv, message", [
    (["--chunks", "3..1"], "--chunks '3..1': the range runs backwards"),
    (["--chunks", "1..17"], "--chunks"),
    (["--query", "2"], "--query '2': expected 2 numbers separated by commas"),
    (["--query", "0,3"], "--query must be at least 1, got 0"),
    (["--query", "2,3", "--chunks", "1..2"], "--query asks one chunk count"),
    (["--methods", "program,nope"], "--methods: unknown synthesis method 'nope' (known: program,"),
])
def test_bad_fronts_queries_and_methods_are_one_line(run, argv, message):
    code, out, err = run("synthesize", "allgather", "--network", "torus:4", *argv)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and out == ""


@pytest.mark.timeout(120)
def test_a_query_writes_its_schedule_only_where_satisfiable(run, tmp_path):
    out = tmp_path / "q.json"
    code, stdout, err = run("synthesize", "allgather", "--network", "torus:4", "--chunks", "2", "--method", "exact",
                            "--query", "2,2", "--out", str(out))
    assert code == 0 and "impossible" in stdout and not out.exists(), err
    code, stdout, err = run("synthesize", "allgather", "--network", "torus:4", "--chunks", "2", "--method", "exact",
                            "--query", "2,3", "--out", str(out))
    assert code == 0 and "satisfiable" in stdout and out.exists(), err
    code, stdout, _ = run("verify", str(out))
    assert code == 0 and stdout.startswith("OK")


@pytest.mark.timeout(300)
def test_sweeps_queries_and_gpu_meshes_rerun_byte_identical(run, tmp_path):
    from tests.helpers import REPO

    mesh = REPO / "instances" / "gpu" / "dgx1-cube-mesh.gml"
    runs = [["synthesize", "allgather", "--network", "torus:4", "--chunks", "1..3", "--bytes", "1KiB,1MiB"],
            ["synthesize", "allgather", "--network", "torus:4", "--chunks", "2", "--method", "exact", "--query", "2,3"],
            ["synthesize", "allreduce", "--network", f"graph:{mesh}", "--bytes", "32"]]
    for k, argv in enumerate(runs):
        outs = []
        for again in range(2):
            out = tmp_path / f"{k}-{again}"
            code, stdout, err = run(*argv, "--out", out, "--quiet")
            assert code == 0, err
            files = sorted(out.rglob("*")) if out.is_dir() else [out]
            outs.append(([f.read_bytes() for f in files], stdout.replace(str(out), "OUT")))
        assert outs[0] == outs[1]


@pytest.mark.timeout(300)
def test_a_sweep_stopped_by_sigterm_is_one_line_and_leaves_nothing(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from tests.helpers import REPO

    out = tmp_path / "sweep"
    process = subprocess.Popen([sys.executable, "-m", "synth", "synthesize", "allgather", "--network", "torus:4,4",
                                "--chunks", "1..4", "--method", "exact", "--bytes", "1KiB,1MiB", "--out", str(out)],
                               cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for line in process.stderr:  # the programs have started
            if "steps" in line:
                break
        time.sleep(0.5)
        process.send_signal(signal.SIGTERM)
        rest = process.stderr.read()
        assert process.wait(timeout=60) == 143
    finally:
        if process.poll() is None:
            process.kill()
    assert [line for line in rest.splitlines() if not line.startswith("  ")] == [
        "synth: interrupted (SIGTERM); no output written"]
    assert list(tmp_path.iterdir()) == []
