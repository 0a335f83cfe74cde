"""Collective schedules (synth.collectives): generators, the symbolic verifier, the file format, the commands.

Independent check: a naive replay written here (Python sets: which ranks hold which blocks, which
contributions each partial holds; bulk-synchronous steps) decides whether a schedule is correct.
Every generator's schedules pass both, for many sizes (powers of two and not, odd P, every root);
random corruptions of them (a block swapped, a transfer dropped, an op flipped, a receiver
changed) get the same verdict from both, and the verifier names a violation exactly when the naive
replay finds one.
"""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import assert_user_error
from synth.core.errors import SynthError
from synth.collectives.algorithms import ALGORITHMS, Request, too_large
from synth.collectives.schedule import COLLECTIVES, COPY, REDUCE, Schedule, ScheduleBuilder
from synth.collectives.verify import expected_blocks, verify

SIZES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 31, 32]


def naive_correct(s: Schedule) -> bool:
    """The collective's promise, replayed with sets (no arrays, no fingerprints)."""
    s = s.explicit()
    p, b, name = s.ranks, s.blocks, s.collective
    info = COLLECTIVES[name]
    transfers = []
    for step in range(s.num_steps):
        for t in range(s.step_ptr[step], s.step_ptr[step + 1]):
            blocks = s.block_ids[s.block_ptr[t]:s.block_ptr[t + 1]].tolist()
            transfers.append((step, int(s.src[t]), int(s.dst[t]), blocks, int(s.op[t])))
    if any(not (0 <= src < p and 0 <= dst < p) or src == dst or len(set(bl)) != len(bl) or
           any(not 0 <= x < b for x in bl) for _, src, dst, bl, _ in transfers):
        return False
    if info.reduction:
        state = {(r, x): frozenset([r]) for r in range(p) for x in range(b)}
        for step in range(s.num_steps):
            snapshot = dict(state)
            written = {}
            for st, src, dst, blocks, op in transfers:
                if st != step:
                    continue
                for x in blocks:
                    kinds = written.setdefault((dst, x), [])
                    kinds.append(op)
                    if op == COPY:
                        state[(dst, x)] = snapshot[(src, x)]
            for (dst, x), kinds in written.items():
                if COPY in kinds and len(kinds) > 1:
                    return False
            for st, src, dst, blocks, op in transfers:
                if st != step or op != REDUCE:
                    continue
                for x in blocks:
                    if state[(dst, x)] & snapshot[(src, x)]:
                        return False
                    state[(dst, x)] = state[(dst, x)] | snapshot[(src, x)]
        full = frozenset(range(p))
        if name == "allreduce":
            wanted = [(r, x) for r in range(p) for x in range(b)]
        elif name == "reduce-scatter":
            wanted = [(x % p, x) for x in range(b)]
        else:
            wanted = [(s.root, x) for x in range(b)]
        return all(state[w] == full for w in wanted)
    if any(op == REDUCE for *_, op in transfers):
        return False
    # blocks in parts: block x plays the role of x mod P (x mod P^2 for all-to-all)
    if name in ("allgather", "gather"):
        held = {(x % p, x) for x in range(b)}
    elif name in ("broadcast", "scatter", "p2p"):
        held = {(s.root, x) for x in range(b)}
    else:
        held = {((x % (p * p)) // p, x) for x in range(b)}
    for step in range(s.num_steps):
        now = set(held)
        for st, src, dst, blocks, _ in transfers:
            if st == step:
                if any((src, x) not in now for x in blocks):
                    return False
                held |= {(dst, x) for x in blocks}
    if name in ("allgather", "broadcast"):
        wanted = {(r, x) for r in range(p) for x in range(b)}
    elif name == "scatter":
        wanted = {(x % p, x) for x in range(b)}
    elif name == "gather":
        wanted = {(s.root, x) for x in range(b)}
    elif name == "p2p":
        wanted = {(s.peer, x) for x in range(b)}
    else:
        wanted = {(x % p, x) for x in range(b)}
    return wanted <= held


GRIDS = [(2, 2), (4, 2), (4, 4), (6, 4), (8, 4)]  # tori for the algorithms that use the grid


def _spec(shape) -> str:
    return "torus:" + ",".join(map(str, shape)) if min(shape) >= 2 else "no network"


def requests():
    shapes = [((p,), (), _spec((p,))) for p in SIZES] + [(g, g, _spec(g)) for g in GRIDS] + [
        ((6,), (), "dragonfly:1,2,1"), ((6,), (), "kautz:2"), ((12,), (), "kautz:3"), ((2,), (), "kautz:1"),
        ((20,), (), "kautz:4"), ((30,), (), "kautz:5"), ((42,), (), "kautz:6"), ((6, 6), (6, 6), "2dfc:6,6"),
        ((4, 3), (4, 3), "2dfc:3,4"), ((2, 2), (2, 2), "2dfc:2,2"), ((3, 5), (3, 5), "2dfc:5,3")]
    for name, algorithm in ALGORITHMS.items():
        for collective in algorithm.collectives:
            for shape, dims, spec in shapes:
                p = int(np.prod(shape))
                roots = [0, p // 2, p - 1] if COLLECTIVES[collective].rooted else [0]
                for root in sorted(set(roots)):
                    peer = (root + 1) % p if collective == "p2p" else None
                    blocks = expected_blocks(collective, p)
                    if blocks is None:
                        natural = Request(collective, p, p, 8, spec, root, dims, peer=peer)
                        try:
                            blocks = algorithm.default_blocks(natural) if algorithm.default_blocks else 3
                        except SynthError:  # (the network is not one the algorithm takes)
                            continue
                    per_node = 2 if name.startswith("tuna-") and p % 2 == 0 and p >= 4 else 1
                    request = Request(collective, p, blocks, 8, spec, root, dims, radix=3, batch=2, ranks_per_node=per_node,
                                      peer=peer)
                    if algorithm.refusal(request) is None:
                        yield name, request


ALL = list(requests())


def _id(name, request):
    shape = "x".join(map(str, request.dims)) if request.dims else str(request.ranks)
    shape += "" if request.spec.startswith(("torus", "no network")) else "-" + request.spec
    return f"{name}-{request.collective}-{shape}-{request.root}"


@pytest.mark.parametrize("name,request_", ALL, ids=[_id(n, r) for n, r in ALL])
def test_every_generated_schedule_is_correct(name, request_):
    schedule = ALGORITHMS[name].generate(request_)
    report = verify(schedule)
    assert report.ok, report.violation
    assert naive_correct(schedule)


def test_every_algorithm_and_collective_is_covered():
    covered = {(n, r.collective) for n, r in ALL}
    assert covered == {(n, c) for n, a in ALGORITHMS.items() for c in a.collectives}


@pytest.mark.parametrize("name,request_", ALL, ids=[_id(n, r) for n, r in ALL])
def test_the_counts_an_algorithm_declares_for_the_size_guard_are_its_schedules(name, request_):
    """The size guard plans with the block sends and transfers an algorithm declares before it
    generates anything (synth.collectives.algorithms.too_large): each declared count is the generated
    schedule's (a transfer count of 0 means "not declared for these sizes")."""
    algorithm = ALGORITHMS[name]
    schedule = algorithm.generate(request_)
    if algorithm.block_sends is not None:
        assert algorithm.block_sends(request_) == schedule.num_block_sends
    if algorithm.transfers is not None and algorithm.transfers(request_):
        assert algorithm.transfers(request_) == schedule.num_transfers


def test_the_large_algorithms_declare_their_transfers():
    """Those that reach millions of transfers on the networks synth routes (one rank per terminal,
    power-of-two sizes): the guard must know before generating them."""
    request = Request("allreduce", 1024, 1024, 8, "torus:32,32", 0, (32, 32))
    for name in ("swing-b", "swing-l", "bucket", "ring", "rd-l", "rd-b", "rabenseifner", "multitree"):
        algorithm = ALGORITHMS[name]
        assert algorithm.transfers is not None and algorithm.transfers(request) > 0, name
    for name in ("bruck", "pairwise", "spread-out", "a2a-lin", "tuna"):
        assert ALGORITHMS[name].transfers(dataclasses.replace(request, collective="alltoall", blocks=1024**2, radix=2)) > 0, name


def step_counts(name, collective, p, blocks=None):
    request = Request(collective, p, blocks or expected_blocks(collective, p) or p, 8, "test")
    return ALGORITHMS[name].generate(request).num_steps


def test_step_counts():
    """The textbook step counts: ring 2(P-1) for allreduce, Bruck and binomial ceil(log2 P),
    recursive doubling log2 P (+2 with folding), pairwise P - 1."""
    assert step_counts("ring", "allreduce", 7) == 12 and step_counts("ring", "allgather", 7) == 6
    assert step_counts("bruck", "alltoall", 13) == 4 and step_counts("bruck", "allgather", 16) == 4
    assert step_counts("rd-l", "allreduce", 16, 4) == 4 and step_counts("rd-l", "allreduce", 12, 4) == 3 + 2
    assert step_counts("pairwise", "alltoall", 9) == 8 and step_counts("spread-out", "alltoall", 9) == 1
    assert step_counts("binomial", "broadcast", 9, 2) == 4


def corruptions(schedule: Schedule, rng):
    """Copies of the schedule with one random change each."""
    schedule = schedule.explicit()
    kinds = ["block", "drop", "op", "receiver", "sender"]
    for _ in range(12):
        s = Schedule(**{k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in schedule.__dict__.items()})
        kind = kinds[int(rng.integers(len(kinds)))]
        if kind == "block" and len(s.block_ids):
            s.block_ids[rng.integers(len(s.block_ids))] = rng.integers(s.blocks)
        elif kind == "op" and len(s.op):
            t = rng.integers(len(s.op))
            s.op[t] = 1 - s.op[t]
        elif kind in ("receiver", "sender") and len(s.src):
            t = rng.integers(len(s.src))
            getattr(s, "dst" if kind == "receiver" else "src")[t] = rng.integers(s.ranks)
        elif kind == "drop" and len(s.src):
            s = _without_transfer(s, int(rng.integers(len(s.src))))
        yield kind, s


def _without_transfer(s: Schedule, t: int) -> Schedule:
    builder = ScheduleBuilder(s.collective, s.algorithm, s.spec, s.ranks, s.blocks, s.block_bytes, s.root)
    for step in range(s.num_steps):
        ts = [x for x in range(s.step_ptr[step], s.step_ptr[step + 1]) if x != t]
        builder.add_step(s.src[ts], s.dst[ts], [s.block_ids[s.block_ptr[x]:s.block_ptr[x + 1]] for x in ts], s.op[ts])
    return builder.build()


SMALL = [(n, r) for n, r in ALL if 3 <= r.ranks <= 9]


@pytest.mark.parametrize("name,request_", SMALL, ids=[_id(n, r) for n, r in SMALL])
def test_corrupted_schedules_get_the_naive_verdict(name, request_):
    rng = np.random.default_rng(request_.ranks * 31 + request_.root)
    for kind, broken in corruptions(ALGORITHMS[name].generate(request_), rng):
        report = verify(broken)
        assert report.ok == naive_correct(broken), (kind, report.violation)


def _schedule(collective, p, steps, blocks=None, root=None):
    builder = ScheduleBuilder(collective, "hand", "test", p, blocks or expected_blocks(collective, p), 8, root)
    for step in steps:
        src, dst, ids, op = zip(*step)
        builder.add_step(src, dst, [list(i) for i in ids], np.array(op, dtype=np.int8))
    return builder.build()


def test_the_verifier_names_the_violations():
    # allgather on 3 ranks: rank 0 forwards block 1 in step 0, before it has it
    early = _schedule("allgather", 3, [[(0, 1, [1], COPY), (1, 2, [1], COPY), (2, 0, [2], COPY)]])
    assert verify(early).violation == "step 0: rank 0 sends block 1, which it does not hold at the start of the step"
    # allreduce on 3 ranks, one block: 1 -> 0, then 0 -> 2 and 1 -> 2 again: rank 1's contribution twice
    twice = _schedule("allreduce", 3, [[(1, 0, [0], REDUCE)], [(0, 2, [0], REDUCE), (1, 2, [0], REDUCE)]], blocks=1)
    assert verify(twice).violation == "step 1: rank 2 reduces block 0 from rank 1: the contributions of rank 1 counted twice"
    # reduce to rank 0 missing rank 2
    missing = _schedule("reduce", 3, [[(1, 0, [0], REDUCE)]], blocks=1, root=0)
    assert verify(missing).violation == "rank 0 ends with block 0 reduced over 2 of 3 ranks: missing rank 2"
    # gather without one block
    lacking = _schedule("gather", 3, [[(1, 0, [1], COPY)]], root=0)
    assert verify(lacking).violation.startswith("rank 0 ends without block 2")
    # a copy and a reduce into one partial in one step
    clash = _schedule("allreduce", 3, [[(1, 0, [0], REDUCE), (2, 0, [0], COPY)]], blocks=1)
    assert "by a copy and another transfer" in verify(clash).violation
    # a reduce that counts rank 0 twice and a copy into the same partial in one step: the clash is the violation
    # (found by the review of the compiled replay, which stopped at the double count)
    both = _schedule("reduce", 4, [[(1, 2, [0], REDUCE), (1, 3, [0], REDUCE)],
                                   [(2, 0, [0], REDUCE), (3, 0, [0], REDUCE), (1, 0, [0], COPY)]], blocks=1, root=0)
    assert verify(both).violation == ("step 1: rank 0 receives block 0 by a copy and another transfer in one step "
                                      "(which one wins is undefined)")


@pytest.mark.parametrize("listed,violation", [
    ([2, 0, 1], None),  # any order is fine
    ([0, 1, 2], None),
    ([2, 0, 2], "step 0: rank 0 sends block 2 twice in one transfer"),
    ([0, 0], "step 0: rank 0 sends block 0 twice in one transfer"),
    ([0, 3, 1, 2], "step 0: rank 0 sends block 3, not a block (0..2)"),
    ([0, -1, 1, 2], "step 0: rank 0 sends block -1, not a block (0..2)"),
])
def test_block_lists_in_any_order_without_repeats(listed, violation):
    """A broadcast of three blocks from rank 0 to rank 1 in one transfer, blocks as listed."""
    schedule = _schedule("broadcast", 2, [[(0, 1, listed, COPY)]], blocks=3, root=0)
    assert verify(schedule).violation == violation


# ----- the commands ------------------------------------------------------------------------------

def test_schedule_file_round_trip_and_verify(run, tmp_path):
    out = tmp_path / "s.json"
    code, stdout, err = run("schedule", "allreduce", "--algorithm", "rd-l", "--network", "torus:3,4", "--bytes", "1000",
                            "--blocks", "4", "--out", out)
    assert code == 0, err
    assert "verified" in stdout
    doc = json.loads(out.read_text())
    assert doc["format"] == "synth-schedule/1" and doc["ranks"] == 12 and doc["blocks"] == 4 and doc["block_bytes"] == 250
    assert len(doc["steps"]) == 5 and "root" not in doc
    code, stdout, _ = run("verify", out)
    assert code == 0 and stdout.startswith("OK: allreduce by rd-l on 12 ranks")
    again = tmp_path / "again.json"
    run("schedule", "allreduce", "--algorithm", "rd-l", "--network", "torus:3,4", "--bytes", "1000", "--blocks", "4",
        "--out", again)
    assert again.read_bytes() == out.read_bytes()
    # a wrong schedule: exit 1 and the first violation
    doc["steps"][1][0]["op"] = "copy"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    code, stdout, _ = run("verify", bad)
    assert code == 1 and stdout.startswith("FAIL: ")


def test_list_shows_every_algorithm(run):
    code, stdout, _ = run("schedule", "--list")
    assert code == 0
    for name in ALGORITHMS:
        assert any(line.startswith(name + " ") for line in stdout.splitlines())


@pytest.mark.parametrize("argv,names", [
    (("schedule", "allreduce", "--algorithm", "bruck", "--network", "torus:4,4"), ("bruck", "allreduce")),
    (("schedule", "allgather", "--algorithm", "rd-l", "--network", "torus:3,4"), ("power-of-two",)),
    (("schedule", "allgather", "--algorithm", "nosuch", "--network", "torus:4,4"), ("nosuch",)),
    (("schedule", "allsum", "--algorithm", "ring", "--network", "torus:4,4"), ("allsum",)),
    (("schedule", "allreduce", "--algorithm", "ring", "--network", "torus:4,4", "--blocks", "3"), ("ring",)),
    (("schedule", "broadcast", "--algorithm", "binomial", "--network", "torus:4,4", "--root", "16"), ("--root",)),
    (("schedule", "allgather", "--algorithm", "ring", "--network", "torus:4,4", "--blocks", "3"), ("--blocks",)),
    (("schedule", "allgather", "--algorithm", "ring"), ("--network",)),
])
def test_bad_requests_are_one_line(run, argv, names):
    assert_user_error(run(*argv), all_of=names)


@pytest.mark.parametrize("change,names", [
    (lambda d: d.update(format="synth-schedule/9"), ("format",)),
    (lambda d: d.pop("steps"), ("steps",)),
    (lambda d: d.update(ranks=0), ("ranks",)),
    (lambda d: d["steps"][0][0].update(op="sum"), ("op",)),
    (lambda d: d["steps"][0][0].update(blocks=[]), ("blocks",)),
    (lambda d: d["steps"][0][0].update(dst=99), ("dst",)),
    (lambda d: d.update(block_bytes=[1, 2]), ("block_bytes",)),
    (lambda d: d.update(extra=1), ("extra",)),
    (lambda d: d.update(root=0), ("root",)),
])
def test_malformed_schedule_files_are_one_line(run, tmp_path, change, names):
    out = tmp_path / "s.json"
    assert run("schedule", "allgather", "--algorithm", "ring", "--network", "torus:3,3", "--out", out)[0] == 0
    doc = json.loads(out.read_text())
    change(doc)
    out.write_text(json.dumps(doc))
    assert_user_error(run("verify", out), all_of=names)


# ----- synth compare ----------------------------------------------------------------------------

def test_compare_prices_every_applicable_algorithm(run, tmp_path):
    figure = tmp_path / "f.png"
    code, out, err = run("compare", "allreduce", "--network", "torus:4,4", "--bytes", "32B..16MiB", "--out", figure)
    assert code == 0, err
    header = out.splitlines()[1].split()
    for name in ("swing-b", "swing-l", "ring", "rd-b", "bucket", "rabenseifner"):
        assert name in header
    rows = [line.split() for line in out.splitlines()[2:] if line.split() and line.split()[0][0].isdigit()]
    assert [r[0] for r in rows][:2] == ["32B", "64B"] and rows[-1][0] == "16MiB"
    assert header[-2:] == ["bound", "best"]
    for row in rows:  # the best column names the fastest, and no algorithm is below the bound
        times = [float(v.replace(",", "")) for v in row[1:-2]]  # one number style: thousands grouped, no exponent
        assert header[1 + times.index(min(times))] == row[-1]
        assert min(times) >= float(row[-2].replace(",", ""))
    assert "crossovers:" in out and figure.read_bytes().startswith(b"\x89PNG")
    again = tmp_path / "g.png"
    run("compare", "allreduce", "--network", "torus:4,4", "--bytes", "32B..16MiB", "--out", again)
    assert again.read_bytes() == figure.read_bytes()


@pytest.mark.parametrize("argv,names", [
    (("compare", "allreduce", "--network", "torus:4,4", "--bytes", "1KiB..1B"), ("backwards",)),
    (("compare", "allreduce", "--network", "torus:4,4", "--bytes", "12 parsecs"), ("12 parsecs",)),
    (("compare", "alltoallv", "--network", "torus:4,4"), ("alltoallv", "--sizes")),  # broadcast and reduce are compared
    (("compare", "allreduce", "--network", "torus:4,4", "--bytes", ",".join(["1KiB"] * 65)), ("65 sizes",)),
])
def test_compare_refusals(run, argv, names):
    assert_user_error(run(*argv), all_of=names)


@pytest.mark.parametrize("argv", [
    ("alltoall", "--algorithm", "kautz-c", "--network", "kautz:4"),
    ("allgather", "--algorithm", "kautz-m", "--network", "kautz:3"),
    ("alltoall", "--algorithm", "do", "--network", "2dfc:4,6"),
    ("allreduce", "--algorithm", "swing-b", "--network", "torus:8,8"),
])
def test_the_seeds_closed_form_is_printed_next_to_the_measured_time(run, argv):
    code, out, _ = run("schedule", *argv)
    assert code == 0
    line = next(line for line in out.splitlines() if line.startswith("seed "))
    formula, measured = re.search(r"= ([\d.]+) us \(measured ([\d.]+) us\)", line).groups()
    assert formula == measured
    assert ("DeSensi24 eq. 1" in out) == (argv[0] == "allreduce")  # DeSensi24's deficiency model is an allreduce model


def test_a_routes_file_gives_the_paths(run, tmp_path):
    routes = tmp_path / "r.json"
    assert run("route", "torus:4,4", "--traffic", "a2a-lin", "--router", "minimal", "--out", routes, "--quiet")[0] == 0
    argv = ("schedule", "allreduce", "--algorithm", "swing-b", "--network", "torus:4,4")
    code, from_file, _ = run(*argv, "--routes", routes)
    assert code == 0 and "the routes file's routes" in from_file
    _, routed, _ = run(*argv)
    cost = lambda out: re.search(r"alpha-beta ([\d.]+) us", out).group(1)  # noqa: E731
    assert cost(from_file) == cost(routed)  # the file holds the minimal router's paths
    partial = tmp_path / "p.json"
    run("route", "torus:4,4", "--traffic", "shift:1", "--router", "minimal", "--out", partial, "--quiet")
    assert_user_error(run(*argv, "--routes", partial), "no path from terminal")
    assert_user_error(run("schedule", "allreduce", "--algorithm", "ring", "--network", "torus:2,8", "--routes", routes),
                      "torus:4,4")


def test_report_has_a_collectives_section_with_compare_s_numbers(run, tmp_path):
    out = tmp_path / "r.md"
    code, _, err = run("report", "torus:4,4", "--patterns", "a2a-lin", "--routers", "minimal", "--collectives", "allreduce",
                       "--collective-bytes", "1KiB,1MiB", "--out", out, "--quiet")
    assert code == 0, err
    text = out.read_text()
    section = text[text.index("## Collective: allreduce"):]
    assert (tmp_path / "r-collective-allreduce.png").read_bytes().startswith(b"\x89PNG")
    rows = [line.strip("|").split("|") for line in section.splitlines() if line.startswith("| 1")]
    _, printed, _ = run("compare", "allreduce", "--network", "torus:4,4", "--bytes", "1KiB,1MiB")
    compared = [line.split() for line in printed.splitlines() if line.split() and line.split()[0] in ("1KiB", "1MiB")]
    assert [[c.strip() for c in row] for row in rows] == compared  # the same numbers and the same best
    assert_user_error(run("report", "torus:4,4", "--collectives", "allsum", "--out", tmp_path / "x.md"), "allsum")


@pytest.mark.parametrize("algorithm", ["swing-b", "ring", "bucket"])
def test_compare_scaling_equals_pricing_the_schedule_at_that_size(run, algorithm):
    """compare prices one routed schedule and scales it to every size; at 1 MiB that must be what
    synth schedule prints for the schedule generated at 1 MiB (itself checked against a per-step
    recomputation in test_swing.py)."""
    _, compared, _ = run("compare", "allreduce", "--network", "torus:4,4", "--bytes", "1MiB")
    header = compared.splitlines()[1].split()
    row = next(line.split() for line in compared.splitlines() if line.startswith(" " * 6 + "1MiB"))
    _, priced, _ = run("schedule", "allreduce", "--algorithm", algorithm, "--network", "torus:4,4", "--bytes", str(1 << 20))
    assert row[header.index(algorithm)] == re.search(r"alpha-beta ([\d.]+) us", priced).group(1)


def test_a_schedule_larger_than_memory_is_refused_before_it_is_made(run, monkeypatch):
    """The guard plans with what the process may use (synth.core.memory): 4 billion block sends
    in as many transfers are far beyond any machine."""
    assert_user_error(run("schedule", "alltoall", "--algorithm", "spread-out", "--network", "torus:256,256"),
                      all_of=["spread-out alltoall on 65,536 ranks would send 4,294,901,760 blocks", "GiB"])
    import synth.collectives.algorithms as algorithms
    from synth.core import memory

    budget = lambda n: (lambda: memory.Budget(n, "a test's budget"))  # noqa: E731

    request = Request("alltoall", 4096, 4096 * 4096, 8, "torus:64,64", 0, (64, 64))
    bruck = ALGORITHMS["bruck"]
    need = algorithms.memory_needed(100_663_296, 4096 * 4096, 4096 * 12)  # the bench's Bruck: 101 M block sends, 12 steps
    monkeypatch.setattr(memory, "budget", budget(need))
    assert algorithms.too_large(bruck, request) is None
    monkeypatch.setattr(memory, "budget", budget(need - 1))
    assert "would send 100,663,296 blocks in 49,152 transfers" in algorithms.too_large(bruck, request)
    # TuNA lists its blocks as runs: its transfers and blocks count, not its 33 M block sends
    tuna, runs = ALGORITHMS["tuna"], dataclasses.replace(request, radix=64)
    need = algorithms.memory_needed(0, 4096 * 4096, 4096 * 126, runs=True)
    monkeypatch.setattr(memory, "budget", budget(need))
    assert algorithms.too_large(tuna, runs) is None
    monkeypatch.setattr(memory, "budget", budget(need - 1))
    assert "would send 33,030,144 blocks in 516,096 transfers" in algorithms.too_large(tuna, runs)


@pytest.mark.parametrize("ranks", [6, 8, 13])
def test_rd_l_says_its_block_sends(ranks):
    """rd-l's allreduce sends the whole vector in every message: the guard must count those block
    sends before the schedule is made (at 16,512 ranks 3.8 x 10^9 of them, once killed for memory)."""
    request = Request("allreduce", ranks, ranks, 8, f"torus:{ranks},1", 0, (ranks, 1))
    made = ALGORITHMS["rd-l"].generate(request)
    assert ALGORITHMS["rd-l"].block_sends(request) == made.num_block_sends
    gather = Request("allgather", 8, 8, 8, "torus:8,1", 0, (8, 1))
    assert ALGORITHMS["rd-l"].block_sends(gather) == ALGORITHMS["rd-l"].generate(gather).num_block_sends
    big = Request("allreduce", 16512, 16512, 8, "dragonfly:8,16,8:arrangement=relative", 0, None)
    assert "would send 3,791,683,584 blocks" in too_large(ALGORITHMS["rd-l"], big)


def test_the_guard_counts_transfers(run):
    """Pairwise alltoall on 16384 ranks: 268 M one-block transfers, whose routes and pricing (not the
    block sends alone) put it far beyond any machine's memory."""
    assert_user_error(run("schedule", "alltoall", "--algorithm", "pairwise", "--network", "torus:128,128"),
                      all_of=["in 268,419,072 transfers", "GiB"])


@pytest.fixture(scope="module")
def torus_routes(tmp_path_factory):
    from synth.cli import main

    routes = tmp_path_factory.mktemp("routes") / "r.json"
    assert main(["route", "torus:4,4", "--traffic", "a2a-lin", "--router", "minimal", "--out", str(routes), "--quiet"]) == 0
    return json.loads(routes.read_text())


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(phase=st.integers(1, 15), flow=st.integers(0, 15), kind=st.sampled_from(["missing", "twice", "detour"]),
       channel=st.integers(0, 10 ** 6))
def test_a_tampered_routes_file_is_refused_not_priced(run, tmp_path, torus_routes, phase, flow, kind, channel):
    """A routes file given to `schedule --routes` is checked as `synth check` checks it: a path naming a
    channel the network lacks, walking a channel twice or leaving its flow's way is one line, exit 2."""
    doc = json.loads(json.dumps(torus_routes))
    path = doc["phases"][phase]["paths"][flow]
    if kind == "missing":
        path[len(path) // 2] = 10 ** 7 + channel  # no such channel
    elif kind == "twice":
        path.insert(1, path[1])
    else:
        path[-1] = (path[-1] + 2 + channel % 60) % 96  # another channel: the path no longer ends at its destination
    target = tmp_path / f"t-{phase}-{flow}-{kind}-{channel}.json"
    target.write_text(json.dumps(doc))
    code, out, err = run("schedule", "allreduce", "--algorithm", "swing-b", "--network", "torus:4,4", "--routes", target)
    assert code == 2 and out == "" and err.count("\n") == 1 and "does not pass synth check" in err, err


@settings(max_examples=20, deadline=None)
@given(peer=st.integers(12, 2 ** 63 - 1), algorithm=st.sampled_from(["kautz-mp", "single-path"]))
def test_a_peer_outside_the_ranks_is_a_user_error(peer, algorithm):
    """An out-of-range --peer was an IndexError (exit 70) inside kautz-mp's block count."""
    from helpers import run as call

    assert_user_error(call("schedule", "p2p", "--algorithm", algorithm, "--network", "kautz:3", "--peer", str(peer)),
                      all_of=("--peer",))


@pytest.mark.parametrize("p", [2, 3, 5, 8, 13, 32, 100])
def test_bruck_allgather_as_runs_is_the_textbook_schedule(p):
    """Bruck's allgather is built as runs (two where a transfer's blocks wrap past P - 1); listed, it
    is the definition: step k, rank r sends blocks r .. r + min(2^k, P - 2^k) - 1 mod P to r - 2^k."""
    s = ALGORITHMS["bruck"].generate(Request("allgather", p, p, 8, f"ring:{max(p, 3)}")).explicit()
    k, t = 1, 0
    for step in range(s.num_steps):
        for r in range(p):
            assert (s.src[t], s.dst[t]) == (r, (r - k) % p)
            assert s.block_ids[s.block_ptr[t]:s.block_ptr[t + 1]].tolist() == [(r + i) % p for i in range(min(k, p - k))]
            t += 1
        k *= 2
    assert k >= p and t == s.num_transfers


@pytest.mark.parametrize("collective", ["allgather", "reduce-scatter", "allreduce"])
@pytest.mark.parametrize("p", [2, 8, 64])
def test_rd_b_as_runs_is_the_textbook_schedule(collective, p):
    """rd-b is built as runs; listed, halving sends the partner's aligned half (distance P/2 .. 1),
    doubling what the rank has gathered (distance 1 .. P/2)."""
    s = ALGORITHMS["rd-b"].generate(Request(collective, p, p, 8, f"ring:{max(p, 3)}")).explicit()
    expected = []
    if collective != "allgather":
        expected += [(d, REDUCE) for d in (p >> k for k in range(1, p.bit_length())) if d]
    if collective != "reduce-scatter":
        expected += [(1 << k, COPY) for k in range(p.bit_length() - 1)]
    assert s.num_steps == len(expected)
    for step, (d, op) in enumerate(expected):
        for r in range(p):
            t = s.step_ptr[step] + r
            base = ((r ^ d) if op == REDUCE else r) & ~(d - 1)
            assert (s.src[t], s.dst[t], s.op[t]) == (r, r ^ d, op)
            assert s.block_ids[s.block_ptr[t]:s.block_ptr[t + 1]].tolist() == list(range(base, base + d))
