"""`synth export --format msccl-xml`, checked by a validator written here from MSCCL's parser
(msccl-executor-nccl src/misc/msccl/msccl_parser.cc) and its execution model: the file parses
with every attribute the parser reads and within its limits, and an execution of it (every
thread block in order, each step once its dependency is done, sends and receives of a thread
block pair through one FIFO, counts matched) ends with what the collective promises, in the
buffer layouts docs/formats.md states, with no contribution counted twice and no deadlock."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import deque

import pytest

from helpers import assert_user_error

STEP_ATTRIBUTES = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps", "hasdep")
ALGO_ATTRIBUTES = ("name", "nchunksperloop", "nchannels", "ngpus", "proto", "coll", "minBytes", "maxBytes", "inplace",
                   "outofplace")


def validate(text: str) -> dict:
    """Parse and execute; returns {rank: {"i": [...], "o": [...]}} at the end (the input as made here)."""
    algo = ET.fromstring(text)
    assert algo.tag == "algo" and all(k in algo.attrib for k in ALGO_ATTRIBUTES), algo.attrib
    p, coll = int(algo.get("ngpus")), algo.get("coll")
    assert algo.get("proto") in ("Simple", "LL", "LL128")
    gpus = {}
    for gpu in algo.findall("gpu"):
        rank = int(gpu.get("id"))
        sizes = {b: int(gpu.get(f"{b}_chunks")) for b in "ios"}
        tbs = []
        for tb in gpu.findall("tb"):
            steps = [{k: step.get(k) for k in STEP_ATTRIBUTES} for step in tb.findall("step")]
            assert all(v is not None for st in steps for v in st.values()), "a step misses an attribute"
            assert [int(st["s"]) for st in steps] == list(range(len(steps))) and len(steps) <= 256
            send, recv = int(tb.get("send")), int(tb.get("recv"))
            assert -1 <= send < p and -1 <= recv < p and send != rank and recv != rank
            tbs.append({"id": int(tb.get("id")), "send": send, "recv": recv, "chan": int(tb.get("chan")), "steps": steps})
        assert [tb["id"] for tb in tbs] == list(range(len(tbs))) and len(tbs) <= 216, "thread block ids with a gap"
        for key in ("send", "recv"):
            assert sum(tb[key] >= 0 for tb in tbs) <= 32, "more than 32 peers on a channel"
        for tb in tbs:
            for st in tb["steps"]:
                if st["type"] != "nop":
                    assert 0 <= int(st["cnt"]) < 72
                    for side in ("src", "dst"):
                        buf, off = st[f"{side}buf"], int(st[f"{side}off"])
                        assert buf in sizes and 0 <= off and off + int(st["cnt"]) <= sizes[buf], st
        gpus[rank] = {"sizes": sizes, "tbs": tbs}
    assert sorted(gpus) == list(range(p))
    return execute(coll, p, gpus)


def _initial(coll: str, p: int, rank: int, sizes: dict) -> list:
    """The input buffer: per chunk a set of (rank, element) contributions (copy collectives: one)."""
    if coll in ("allreduce", "reduce"):
        return [frozenset({(rank, k)}) for k in range(sizes["i"])]
    if coll == "reducescatter":
        return [frozenset({(rank, k)}) for k in range(sizes["i"])]
    if coll == "broadcast":
        return [frozenset({("root", k)}) for k in range(sizes["i"])]
    return [frozenset({(rank, k)}) for k in range(sizes["i"])]  # allgather, alltoall: rank r's chunk k


def execute(coll: str, p: int, gpus: dict) -> dict:
    state = {}
    for r, g in gpus.items():
        state[r] = {"i": _initial(coll, p, r, g["sizes"]), "o": [None] * g["sizes"]["o"], "s": [None] * g["sizes"]["s"]}
    done = {(r, tb["id"]): 0 for r, g in gpus.items() for tb in g["tbs"]}
    fifo: dict = {}
    progress = True
    while progress:
        progress = False
        for r, g in gpus.items():
            for tb in g["tbs"]:
                key = (r, tb["id"])
                while done[key] < len(tb["steps"]):
                    st = tb["steps"][done[key]]
                    depid, deps = int(st["depid"]), int(st["deps"])
                    if depid >= 0 and done[(r, depid)] <= deps:
                        break
                    kind, cnt = st["type"], int(st["cnt"])
                    src = (st["srcbuf"], int(st["srcoff"]))
                    dst = (st["dstbuf"], int(st["dstoff"]))
                    if kind == "s":
                        values = state[r][src[0]][src[1]:src[1] + cnt]
                        assert all(v is not None for v in values), f"GPU {r} sends a chunk it does not hold"
                        fifo.setdefault((r, tb["send"], tb["chan"]), deque()).append(list(values))
                    elif kind in ("r", "rrc"):
                        queue = fifo.get((tb["recv"], r, tb["chan"]))
                        if not queue:
                            break
                        values = queue.popleft()
                        assert len(values) == cnt, "a receive of another count than its send"
                        for k, v in enumerate(values):
                            here = state[r][dst[0]][dst[1] + k]
                            if kind == "rrc":
                                assert here is not None and not (here & v), "a contribution reduced twice"
                                state[r][dst[0]][dst[1] + k] = here | v
                            else:
                                state[r][dst[0]][dst[1] + k] = v
                    elif kind == "cpy":
                        values = state[r][src[0]][src[1]:src[1] + cnt]
                        assert all(v is not None for v in values), f"GPU {r} copies a chunk it does not hold"
                        state[r][dst[0]][dst[1]:dst[1] + cnt] = list(values)
                    else:
                        assert kind == "nop", f"step type {kind} is not one synth writes"
                    done[key] += 1
                    progress = True
    stuck = [key for key, n in done.items() if n < len(gpus[key[0]]["tbs"][key[1]]["steps"])]
    assert not stuck, f"deadlock: thread blocks {stuck[:5]} cannot go on"
    assert all(not q for q in fifo.values()), "a send nobody received"
    return state


def expected_output(coll: str, p: int, rank: int, chunks: int, root: int = 0) -> list | None:
    everyone = range(p)
    if coll == "allgather":  # o[q C + c] = rank q's chunk c
        return [frozenset({(q, c)}) for q in everyone for c in range(chunks)]
    if coll == "reducescatter":  # o[c] = the sum over ranks of their i[rank C + c]
        return [frozenset((q, rank * chunks + c) for q in everyone) for c in range(chunks)]
    if coll == "allreduce" or (coll == "reduce" and rank == root):
        return [frozenset((q, k) for q in everyone) for k in range(chunks)]
    if coll == "broadcast":
        return [frozenset({("root", k)}) for k in range(chunks)]
    if coll == "alltoall":  # o[s C + c] = rank s's i[rank C + c]
        return [frozenset({(s, rank * chunks + c)}) for s in everyone for c in range(chunks)]
    return None


def _export(run, tmp_path, *schedule_args) -> str:
    schedule = tmp_path / "s.json"
    code, _, err = run(*schedule_args, "--out", schedule)
    assert code == 0, err
    code, out, err = run("export", schedule, "--format", "msccl-xml")
    assert code == 0, err
    return out


def _check(text: str, root: int = 0) -> None:
    algo = ET.fromstring(text)
    p, coll = int(algo.get("ngpus")), algo.get("coll")
    sizes = algo.find("gpu").attrib
    chunks = int(sizes["i_chunks"]) if coll in ("allgather", "reducescatter", "allreduce", "broadcast", "reduce") else \
        int(sizes["i_chunks"]) // p
    if coll == "reducescatter":
        chunks = int(sizes["o_chunks"])
    state = validate(text)
    for r in range(p):
        want = expected_output(coll, p, r, chunks, root)
        if want is not None:
            assert state[r]["o"] == want, f"rank {r}'s output"


@pytest.mark.parametrize("argv", [
    ("schedule", "allreduce", "--algorithm", "swing-b", "--network", "torus:4,4", "--bytes", "4096"),
    ("schedule", "allreduce", "--algorithm", "ring", "--network", "torus:8", "--bytes", "4096"),
    ("schedule", "allgather", "--algorithm", "kautz-c", "--network", "kautz:2,2", "--bytes", "4096"),
    ("schedule", "reduce-scatter", "--algorithm", "ring", "--network", "torus:6", "--bytes", "4096"),
    ("schedule", "alltoall", "--algorithm", "bruck", "--network", "torus:5", "--bytes", "4096"),
    ("schedule", "broadcast", "--algorithm", "binomial", "--network", "torus:6", "--root", "2", "--blocks", "3"),
    ("schedule", "reduce", "--algorithm", "binomial", "--network", "torus:6", "--root", "4", "--blocks", "2"),
    ("synthesize", "allgather", "--network", "torus:4", "--chunks", "2", "--bytes", "64KiB", "--quiet"),
    ("synthesize", "allreduce", "--network", "kautz:2,2", "--bytes", "64KiB", "--quiet"),
])
def test_exported_schedules_parse_run_and_deliver(run, tmp_path, argv):
    root = int(argv[argv.index("--root") + 1]) if "--root" in argv else 0
    _check(_export(run, tmp_path, *argv), root)


def test_the_validator_finds_a_missing_step_and_a_wrong_dependency(run, tmp_path):
    text = _export(run, tmp_path, "schedule", "allgather", "--algorithm", "ring", "--network", "torus:4")
    algo = ET.fromstring(text)
    tb = next(tb for tb in algo.find("gpu").findall("tb") if tb.get("send") != "-1")
    dropped = tb.findall("step")[-1]
    tb.remove(dropped)
    with pytest.raises(AssertionError):
        validate(ET.tostring(algo, encoding="unicode"))
    algo = ET.fromstring(text)
    local = algo.find("gpu").find("tb")  # the copies: the last one waits for a receive; make it not wait
    last = local.findall("step")[-1]
    last.set("depid", "-1")
    last.set("deps", "-1")
    for step in local.findall("step"):
        if step.get("type") == "nop":
            step.set("depid", "-1")
            step.set("deps", "-1")
    with pytest.raises(AssertionError):
        _check(ET.tostring(algo, encoding="unicode"))


def test_export_writes_all_or_nothing_and_refuses_in_one_line(run, tmp_path):
    schedule = tmp_path / "s.json"
    assert run("schedule", "alltoallv", "--algorithm", "spread-out", "--network", "torus:4", "--sizes", "random:64:1",
               "--out", schedule)[0] == 0
    assert_user_error(run("export", schedule, "--out", tmp_path / "a.xml"), "not alltoallv")  # chunks are of one size
    assert not (tmp_path / "a.xml").exists()
    assert_user_error(run("export", tmp_path / "missing.json"), "missing.json")
    assert_user_error(run("export", schedule, "--format", "nccl"), "--format")
    code, out, _ = run("schedule", "allgather", "--algorithm", "ring", "--network", "torus:4", "--out", schedule)
    code, out, _ = run("export", schedule, "--out", tmp_path / "ok.xml")
    assert code == 0 and (tmp_path / "ok.xml").read_text().startswith("<algo ")
    assert run("export", schedule)[1] == (tmp_path / "ok.xml").read_text()  # stdout and file: the same bytes
