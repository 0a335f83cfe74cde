"""--intra-bandwidth, --intra-latency and --copy-cost (synth.pricing.alphabeta.NodeCosts) on the
commands that price or simulate schedules: a bad value is one line (exit 2), the options are
recorded where a file records its pricing (a synthesized schedule's cost_model, a simulation's
options), reruns write the same bytes, and without them every output is what it was."""

from __future__ import annotations

import json

import pytest

from helpers import assert_user_error

BAD = [("--intra-bandwidth", "0"), ("--intra-bandwidth", "-1"), ("--intra-bandwidth", "nan"), ("--intra-bandwidth", "1e9"),
       ("--intra-latency", "-1e-6"), ("--intra-latency", "inf"), ("--intra-latency", "2"),
       ("--copy-cost", "abc"), ("--copy-cost", "-1e-10"), ("--copy-cost", "1")]
COMMANDS = {
    "schedule": ["schedule", "allgather", "--algorithm", "ring", "--network", "hyperx:3", "--ranks-per-node", "2"],
    "compare": ["compare", "allgather", "--network", "hyperx:3", "--ranks-per-node", "2", "--bytes", "1KiB"],
    "synthesize": ["synthesize", "allgather", "--network", "hyperx:3", "--ranks-per-node", "2", "--bytes", "1KiB",
                   "--time-limit", "5", "--quiet"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("option, value", BAD, ids=[f"{o}={v}" for o, v in BAD])
def test_a_bad_value_is_one_line(run, command, option, value):
    assert_user_error(run(*COMMANDS[command], option, value), option)


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("option, value", [("--intra-bandwidth", "100"), ("--intra-latency", "1e-7")])
def test_an_intra_node_option_needs_ranks_sharing_a_node(run, command, option, value):
    argv = list(COMMANDS[command])
    at = argv.index("--ranks-per-node")
    del argv[at:at + 2]
    assert_user_error(run(*argv, option, value), option, all_of=("--ranks-per-node",))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from synth.cli import main

    folder = tmp_path_factory.mktemp("node")
    assert main(["schedule", "allgather", "--algorithm", "bruck", "--network", "hyperx:4", "--ranks-per-node", "2",
                 "--bytes", "80000", "--out", str(folder / "bruck.json")]) == 0
    assert main(["schedule", "allgather", "--algorithm", "bruck", "--network", "hyperx:4", "--bytes", "80000",
                 "--out", str(folder / "bruck1.json")]) == 0
    assert main(["route", "xgft:2:4,4:1,4", "--traffic", "a2a-opt", "--router", "dmodk", "--out",
                 str(folder / "routes.json"), "--quiet"]) == 0
    return folder


NODE = ["--intra-bandwidth", "10", "--intra-latency", "5e-7", "--copy-cost", "1e-10"]


def test_schedule_prices_the_node_and_its_file_does_not_change(run, files, tmp_path):
    argv = ["schedule", "allgather", "--algorithm", "bruck", "--network", "hyperx:4", "--ranks-per-node", "2",
            "--bytes", "80000"]
    code, out, _ = run(*argv, *NODE, "--out", tmp_path / "a.json")
    assert code == 0
    node = next(line for line in out.splitlines() if line.startswith("node "))
    assert "intra-node latency 0.5 us, intra-node 10 Gb/s, copy 100 ps/B: 28.6 us" in node
    assert "10,000 B over the steps' busiest node-internal links, 60,000 B copied" in node
    bound = next(line for line in out.splitlines() if line.startswith("bound "))
    assert "a node's ranks' bytes over its internal link and channels" in bound
    assert (tmp_path / "a.json").read_bytes() == (files / "bruck.json").read_bytes()  # pricing is not the schedule
    code, plain, _ = run(*argv)
    assert code == 0 and not any(line.startswith("node ") for line in plain.splitlines())


@pytest.mark.timeout(120)
def test_synthesize_records_the_node_costs_and_reruns_identically(run, tmp_path):
    argv = [*COMMANDS["synthesize"][:-5], "--bytes", "64KiB", "--time-limit", "5", "--quiet"]
    for name in ("a.json", "b.json"):
        assert run(*argv, *NODE, "--out", tmp_path / name)[0] == 0
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    record = json.loads((tmp_path / "a.json").read_text())["synthesis"]
    assert record["cost_model"] == {"alpha": 1e-6, "bandwidth_bits": 100e9, "intra_latency": 5e-7,
                                    "intra_bandwidth_bits": 10e9, "copy_cost": 1e-10}
    for size in record["sizes"]:
        assert size["seconds"] >= size["bound_seconds"] > 0
    assert run(*argv, "--out", tmp_path / "plain.json")[0] == 0
    plain = json.loads((tmp_path / "plain.json").read_text())["synthesis"]
    assert plain["cost_model"] == {"alpha": 1e-6, "bandwidth_bits": 100e9}


def test_simulate_records_the_node_costs_and_reruns_identically(run, files, tmp_path):
    for name in ("a.json", "b.json"):
        code, out, err = run("simulate", files / "bruck.json", "--model", "CM02", *NODE, "--out", tmp_path / name)
        assert code == 0, err
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    doc = json.loads((tmp_path / "a.json").read_text())
    options = doc["simulation"]
    assert (options["intra_latency_s"], options["intra_bandwidth_gbps"], options["copy_cost_s_per_byte"]) == \
        (5e-7, 10.0, 1e-10)
    assert doc["total"]["model_us"] == pytest.approx(28.6)  # as synth schedule prices it
    assert doc["total"]["model_us"] >= doc["total"]["bound_us"]
    code, out, _ = run("simulate", files / "bruck.json", "--model", "CM02", "--out", tmp_path / "plain.json")
    plain = json.loads((tmp_path / "plain.json").read_text())["simulation"]
    assert not {"intra_latency_s", "intra_bandwidth_gbps", "copy_cost_s_per_byte"} & set(plain)


@pytest.mark.parametrize("option, value", [("--intra-bandwidth", "0"), ("--copy-cost", "-1"), ("--intra-latency", "x")])
def test_simulate_refuses_a_bad_value(run, files, option, value):
    assert_user_error(run("simulate", files / "bruck.json", option, value), option)


def test_simulate_refuses_what_prices_nothing(run, files):
    assert_user_error(run("simulate", files / "bruck1.json", "--intra-bandwidth", "100"), "--intra-bandwidth",
                      all_of=("--ranks-per-node",))
    assert_user_error(run("simulate", files / "routes.json", "--copy-cost", "1e-10"), "--copy-cost")
    assert_user_error(run("simulate", files / "bruck.json", "--intra-bandwidth", "0.0001"), "--intra-bandwidth")


@pytest.mark.timeout(120)
def test_compare_prices_the_node(run):
    argv = COMMANDS["compare"][:-2] + ["--bytes", "64KiB"]
    code, plain, _ = run(*argv)
    code2, priced, _ = run(*argv, "--intra-bandwidth", "1", "--copy-cost", "1e-9")
    assert code == code2 == 0
    assert "intra-node 1 Gb/s, copy 1000 ps/B" in priced.splitlines()[0]

    def row(text):
        line = next(line for line in text.splitlines() if line.strip().startswith("64KiB"))
        return [float(v) for v in line.split()[1:-1]]

    assert all(b >= a for a, b in zip(row(plain), row(priced)))  # costs only grow, the bound too
    assert row(priced) != row(plain)


@pytest.mark.timeout(120)
def test_report_prices_the_collectives_with_a_copy_cost(run, tmp_path):
    argv = ["report", "torus:4,4", "--patterns", "randperm:2", "--collectives", "allreduce", "--collective-bytes",
            "1KiB,1MiB", "--quiet"]
    assert run(*argv, "--out", tmp_path / "plain.md")[0] == 0
    assert run(*argv, "--copy-cost", "1e-10", "--out", tmp_path / "copy.md")[0] == 0
    plain, copied = ((tmp_path / name).read_text() for name in ("plain.md", "copy.md"))
    assert "per byte a rank copies" not in plain
    assert "100 Gb/s; plus 1e-10 s per byte a rank copies of the combined messages it receives)" in copied
    assert_user_error(run(*argv, "--copy-cost", "-1", "--out", tmp_path / "bad.md"), "--copy-cost")
    assert_user_error(run("report", "torus:4,4", "--patterns", "randperm:2", "--copy-cost", "1e-10", "--out",
                          tmp_path / "bad.md"), "--copy-cost", all_of=("--collectives",))
    assert not (tmp_path / "bad.md").exists()
