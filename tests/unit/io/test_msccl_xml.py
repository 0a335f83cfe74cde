"""`synth export --format msccl-xml`, checked by a validator written here from MSCCL's parser and kernel
(msccl-executor-nccl, github.com/Azure/msccl-executor-nccl at c6f6b36) and its execution model: the file
parses with every attribute the parser reads and within its limits (each limit below with the file and
line it was read from), and an execution of it (every thread block in order, each step once the flag of
the thread block it waits for has reached its step, sends and receives of a thread-block pair through
one FIFO per channel, counts matched) ends with what the collective promises, in the buffer layouts
docs/formats.md states, with no contribution counted twice and no deadlock."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import deque
from pathlib import Path

import pytest

from helpers import assert_user_error

# MSCCL's limits, each as read in msccl-executor-nccl (c6f6b36):
MSCCL_MAX_NUM_STEPS = 64  # makefiles/common.mk:19 "MSCCL_MAX_NUM_STEPS ?= 64" (a build flag since #48; before,
#                          src/include/msccl/msccl_struct.h "#define MSCCL_MAX_NUM_STEPS 64"); the parser refuses
#                          a step s >= it (src/misc/msccl/msccl_parser.cc:485)
MSCCL_MAX_COUNT = 72  # src/include/msccl/msccl_struct.h:19; the parser refuses cnt >= it (msccl_parser.cc:577)
PER_CHANNEL = 32  # MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL, msccl_struct.h:17: send, and receive, thread blocks of a
#                   GPU on one channel (msccl_parser.cc:589 "too many sends per channel", :602 recvs)
MAXCHANNELS = 32  # src/include/device.h:65; a tb's chan is checked at msccl_parser.cc:449 and indexes
#                   mscclChannels[MAXCHANNELS] (msccl_struct.h); nchannels <= the communicator's (msccl_setup.cc:93)
MSCCL_MAX_NUM_THREAD_BLOCKS = PER_CHANNEL * MAXCHANNELS  # msccl_struct.h:18; bid checked at msccl_parser.cc:421
DEPENDENT_BID_MAX = 127  # msccl_struct.h:58 "int8_t dependentBid", read as int8_t by the kernel (msccl_kernel.cu:229)
OFFSET_MAX = 32767  # msccl_struct.h:44-45: mscclTransmission's srcOffset, dstOffset are int16_t
MAX_STR_LEN = 255  # src/include/msccl/msccl_parser.h:20: an attribute value's buffer (filled unchecked, parser.cc:44-49)
MAX_ATTR_COUNT = 16  # msccl_parser.h:21 (more are dropped, msccl_parser.cc:141)
MAX_SUBS = 1024  # msccl_parser.h:22: children an element keeps, stored unchecked (msccl_parser.cc:195)
MAX_NODES = 4096  # msccl_parser.h:23: checked before every element read (msccl_parser.cc:169); a rank's parse keeps
#                   <algo>, every <gpu> and its own <tb> and <step> elements (msccl_parser.cc:224-233)

STEP_ATTRIBUTES = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps", "hasdep")
ALGO_ATTRIBUTES = ("name", "nchunksperloop", "nchannels", "ngpus", "proto", "coll", "minBytes", "maxBytes", "inplace",
                   "outofplace")  # msccl_parser.cc:315-388 (mscclXmlGetAttr* fails on a missing one)
SENDS, RECEIVES = {"s", "rcs", "rrs", "rrcs"}, {"r", "rcs", "rrs", "rrc", "rrcs"}  # msccl_parser.cc:499-537


def _check_text(text: str) -> None:
    """What the parser's reader needs of the raw text: values within MAX_STR_LEN, attributes within MAX_ATTR_COUNT
    (a self-closing tag's '/' is read as one more), no XML declaration (it is no element the parser knows)."""
    assert text.startswith("<algo "), text[:40]
    for value in re.findall(r'="([^"]*)"', text):
        assert len(value.encode("utf-8")) <= MAX_STR_LEN, value[:40]
    for tag in re.findall(r"<[a-z]+ [^>]*>", text):
        assert tag.count('="') + tag.endswith("/>") <= MAX_ATTR_COUNT, tag[:60]


def validate(text: str, max_steps: int = MSCCL_MAX_NUM_STEPS, fifo_chunks: int | None = 0) -> dict:
    """Parse against MSCCL's limits and rules, then execute (FIFOs of `fifo_chunks`, see execute); returns
    {rank: {"i": [...], "o": [...]}} at the end."""
    _check_text(text)
    algo = ET.fromstring(text)
    assert algo.tag == "algo" and all(k in algo.attrib for k in ALGO_ATTRIBUTES), algo.attrib
    p, coll, nchannels = int(algo.get("ngpus")), algo.get("coll"), int(algo.get("nchannels"))
    assert algo.get("proto") in ("Simple", "LL", "LL128")
    assert 1 <= nchannels <= MAXCHANNELS
    low, high = int(algo.get("minBytes")), int(algo.get("maxBytes"))
    assert low >= 0 and high >= 0 and (high == 0 or high >= low)
    assert len(algo) <= MAX_SUBS, "more <gpu> elements than the parser keeps"
    gpus = {}
    for gpu in algo.findall("gpu"):
        rank = int(gpu.get("id"))
        sizes = {b: int(gpu.get(f"{b}_chunks")) for b in "ios"}
        assert all(0 <= n <= OFFSET_MAX + 1 for n in sizes.values())
        assert len(gpu) <= MAX_SUBS
        tbs = []
        for tb in gpu.findall("tb"):
            steps = [{k: step.get(k) for k in STEP_ATTRIBUTES} for step in tb.findall("step")]
            assert all(v is not None for st in steps for v in st.values()), "a step misses an attribute"
            assert [int(st["s"]) for st in steps] == list(range(len(steps))) and len(steps) <= max_steps
            send, recv = int(tb.get("send")), int(tb.get("recv"))
            assert -1 <= send < p and -1 <= recv < p and send != rank and recv != rank
            chan = int(tb.get("chan"))
            assert 0 <= chan < nchannels, "a thread block on a channel the algorithm does not connect"
            tbs.append({"id": int(tb.get("id")), "send": send, "recv": recv, "chan": chan, "steps": steps})
        assert [tb["id"] for tb in tbs] == list(range(len(tbs))), "thread block ids with a gap (msccl_parser.cc:684)"
        assert len(tbs) <= MSCCL_MAX_NUM_THREAD_BLOCKS
        assert 1 + len(algo) + len(tbs) + sum(len(tb["steps"]) for tb in tbs) < MAX_NODES, "over the parser's nodes"
        for key in ("send", "recv"):
            for c in range(nchannels):
                peers = [tb[key] for tb in tbs if tb["chan"] == c and tb[key] >= 0]
                assert len(peers) <= PER_CHANNEL, f"more than {PER_CHANNEL} {key} thread blocks on channel {c}"
                assert len(peers) == len(set(peers)), "two thread blocks of one peer on one channel (one connection)"
        for tb in tbs:
            chained = False
            for st in tb["steps"]:
                kind, depid, deps, cnt = st["type"], int(st["depid"]), int(st["deps"]), int(st["cnt"])
                assert st["hasdep"] in ("0", "1")
                if depid >= 0:
                    assert depid <= DEPENDENT_BID_MAX and depid != tb["id"], st
                    target = tbs[depid]["steps"]
                    assert 0 <= deps < len(target), "a dependency on a step that does not exist"
                    assert target[deps]["hasdep"] == "1", "a wait on a step that sets no flag (msccl_kernel.cu:313)"
                if kind == "nop":
                    assert depid >= 0, "a nop waits for nothing"
                    chained = True
                    continue
                assert not chained or depid >= 0, "nops not followed by a waiting step (msccl_parser.cc:616)"
                chained = False
                assert 1 <= cnt < MSCCL_MAX_COUNT
                assert kind not in SENDS or tb["send"] >= 0
                assert kind not in RECEIVES or tb["recv"] >= 0
                for side in ("src", "dst"):
                    buf, off = st[f"{side}buf"], int(st[f"{side}off"])
                    assert buf in sizes and 0 <= off <= OFFSET_MAX and off + cnt <= sizes[buf], st
            assert not chained, "a thread block ends with nops"
        gpus[rank] = {"sizes": sizes, "tbs": tbs}
    assert sorted(gpus) == list(range(p))
    _check_pairing(gpus)
    return execute(coll, p, gpus, fifo_chunks)


def _check_pairing(gpus: dict) -> None:
    """Per channel, GPU u's sends to v and v's receives from u: one thread block each side or none, the same
    counts in the same order."""
    sends, recvs = {}, {}
    for r, g in gpus.items():
        for tb in g["tbs"]:
            counts = [int(st["cnt"]) for st in tb["steps"] if st["type"] != "nop"]
            if tb["send"] >= 0:
                sends[(r, tb["send"], tb["chan"])] = [c for c, st in zip(counts, [x for x in tb["steps"]
                                                      if x["type"] != "nop"]) if st["type"] in SENDS]
            if tb["recv"] >= 0:
                recvs[(tb["recv"], r, tb["chan"])] = [c for c, st in zip(counts, [x for x in tb["steps"]
                                                      if x["type"] != "nop"]) if st["type"] in RECEIVES]
    assert sends.keys() == recvs.keys(), "a channel's send thread block without its receiving one"
    for key in sends:
        assert sends[key] == recvs[key], f"sends and receives of {key} differ in count or order"


def _initial(coll: str, p: int, rank: int, sizes: dict) -> list:
    """The input buffer: per chunk a set of (rank, element) contributions (copy collectives: one)."""
    if coll == "broadcast":
        return [frozenset({("root", k)}) for k in range(sizes["i"])]
    return [frozenset({(rank, k)}) for k in range(sizes["i"])]  # a rank's chunk k (reduced ones: its contribution)


def execute(coll: str, p: int, gpus: dict, fifo_chunks: int | None = 0) -> dict:
    """Run the thread blocks as MSCCL's kernel does: in order, a step waiting until the flag of the thread block it
    names has reached its step (a flag is the last completed step with hasdep, msccl_kernel.cu:231-237, 313-317);
    a thread block that cannot go on waits for that flag or for its FIFO, and is woken when either moves.

    FIFOs are bounded: MSCCL's connection holds NCCL_STEPS (8) slots, and a send step larger than that cannot end
    until the peer's receive step has begun taking its data. Here a send of more than `fifo_chunks` chunks ends only
    once its receive step has started (fifo_chunks 0, the default: every send is a rendezvous, the strictest
    reading, safe for every message size; None: unbounded FIFOs)."""
    state = {}
    for r, g in gpus.items():
        state[r] = {"i": _initial(coll, p, r, g["sizes"]), "o": [None] * g["sizes"]["o"], "s": [None] * g["sizes"]["s"]}
    done = {(r, tb["id"]): 0 for r, g in gpus.items() for tb in g["tbs"]}
    flag = {key: -1 for key in done}
    fifo: dict = {}
    pending: dict = {}  # a thread block -> its send step's FIFO entry, sent and waiting for its receive to start
    waiting: dict = {}  # a flag's, a FIFO's or a taken entry's key -> thread blocks waiting for it
    ready = deque(done)
    queued = set(done)

    def wake(keys) -> None:
        for other in keys:
            if other not in queued:
                queued.add(other)
                ready.append(other)

    while ready:
        key = ready.popleft()
        queued.discard(key)
        r, tb = key[0], gpus[key[0]]["tbs"][key[1]]
        while done[key] < len(tb["steps"]):
            st = tb["steps"][done[key]]
            depid, deps = int(st["depid"]), int(st["deps"])
            if key not in pending and depid >= 0 and flag[(r, depid)] < deps:
                waiting.setdefault(("flag", r, depid), []).append(key)
                break
            kind, cnt = st["type"], int(st["cnt"])
            src = (st["srcbuf"], int(st["srcoff"]))
            dst = (st["dstbuf"], int(st["dstoff"]))
            if kind == "s":
                channel = (r, tb["send"], tb["chan"])
                if key not in pending:
                    values = state[r][src[0]][src[1]:src[1] + cnt]
                    assert all(v is not None for v in values), f"GPU {r} sends a chunk it does not hold"
                    entry = {"values": list(values), "taken": False}
                    fifo.setdefault(channel, deque()).append(entry)
                    wake(waiting.pop(("fifo",) + channel, []))
                    if fifo_chunks is None or cnt <= fifo_chunks:
                        entry["taken"] = True  # the FIFO holds it all: the send ends without its receive
                    pending[key] = entry
                if not pending[key]["taken"]:
                    waiting.setdefault(("taken",) + channel, []).append(key)
                    break
                del pending[key]
            elif kind in ("r", "rrc"):
                channel = (tb["recv"], r, tb["chan"])
                queue = fifo.get(channel)
                if not queue:
                    waiting.setdefault(("fifo",) + channel, []).append(key)
                    break
                entry = queue.popleft()
                values = entry["values"]
                entry["taken"] = True
                wake(waiting.pop(("taken",) + channel, []))
                assert len(values) == cnt, "a receive of another count than its send"
                if kind == "rrc":  # receive, reduce with src, write dst (recvReduceCopy(srcOffset, dstOffset))
                    mine = state[r][src[0]][src[1]:src[1] + cnt]
                    assert all(m is not None for m in mine), f"GPU {r} reduces into a chunk it does not hold"
                    assert not any(m & v for m, v in zip(mine, values)), "a contribution reduced twice"
                    state[r][dst[0]][dst[1]:dst[1] + cnt] = [m | v for m, v in zip(mine, values)]
                else:
                    state[r][dst[0]][dst[1]:dst[1] + cnt] = list(values)
            elif kind == "cpy":
                values = state[r][src[0]][src[1]:src[1] + cnt]
                assert all(v is not None for v in values), f"GPU {r} copies a chunk it does not hold"
                state[r][dst[0]][dst[1]:dst[1] + cnt] = list(values)
            else:
                assert kind == "nop", f"step type {kind} is not one synth writes"
            if st["hasdep"] == "1":
                flag[key] = done[key]
                wake(waiting.pop(("flag", r, key[1]), []))
            done[key] += 1
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
    """Valid, delivered under rendezvous FIFOs (validate's default)."""
    _check_state(text, validate(text), root)


def _check_state(text: str, state: dict, root: int = 0) -> None:
    """Every rank's output buffer is what the collective promises."""
    algo = ET.fromstring(text)
    p, coll = int(algo.get("ngpus")), algo.get("coll")
    sizes = algo.find("gpu").attrib
    chunks = int(sizes["o_chunks"]) if coll in ("reducescatter", "reduce") else int(sizes["i_chunks"])
    chunks = chunks // p if coll == "alltoall" else chunks
    for r in range(p):
        want = expected_output(coll, p, r, chunks, root)
        if want is not None:
            assert state[r]["o"] == want, f"rank {r}'s output"


@pytest.mark.parametrize("argv", [
    ("schedule", "allreduce", "--algorithm", "swing-b", "--network", "torus:4,4", "--bytes", "4096"),
    ("schedule", "allreduce", "--algorithm", "ring", "--network", "torus:8", "--bytes", "4096"),
    # exchanges of one block both ways in a step (each waited on itself in one scratch slot: deadlock, bounded FIFOs)
    ("schedule", "allreduce", "--algorithm", "rd-l", "--network", "torus:2,2", "--bytes", "4096"),
    ("schedule", "allreduce", "--algorithm", "rd-l", "--network", "torus:6", "--bytes", "4096"),
    ("schedule", "allreduce", "--algorithm", "rd-l", "--network", "kautz:2,2", "--bytes", "64KiB"),
    ("schedule", "allreduce", "--algorithm", "swing-l", "--network", "torus:4,4", "--bytes", "4096"),
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


def _xml(run, tmp_path, *schedule_args, export_args=()) -> str:
    schedule = tmp_path / "s.json"
    code, _, err = run(*schedule_args, "--out", schedule)
    assert code == 0, err
    code, out, err = run("export", schedule, "--format", "msccl-xml", *export_args)
    assert code == 0, err
    return out


def test_the_writer_keeps_the_limits_the_validator_reads():
    from synth.app.export import DEFAULT_MAX_STEPS
    from synth.io import msccl_xml

    assert msccl_xml.MAX_STEPS == DEFAULT_MAX_STEPS == MSCCL_MAX_NUM_STEPS
    assert msccl_xml.MAX_COUNT == MSCCL_MAX_COUNT - 1 and msccl_xml.MAX_CHANNELS == MAXCHANNELS
    assert msccl_xml.MAX_PEERS_PER_CHANNEL == PER_CHANNEL
    assert msccl_xml.MAX_THREAD_BLOCKS == MSCCL_MAX_NUM_THREAD_BLOCKS
    assert msccl_xml.MAX_WAITED == DEPENDENT_BID_MAX + 1 and msccl_xml.MAX_CHUNKS == OFFSET_MAX + 1
    assert msccl_xml.MAX_GPUS == MAX_SUBS and msccl_xml.MAX_NODES == MAX_NODES - 1
    assert msccl_xml.MAX_VALUE_BYTES == MAX_STR_LEN


def test_a_64_rank_pairwise_alltoall_exports_over_two_channels(run, tmp_path):
    """63 peers a GPU each way: more than the 32 send thread blocks of one channel, so two channels."""
    text = _xml(run, tmp_path, "schedule", "alltoall", "--algorithm", "pairwise", "--network", "torus:8,8",
                "--bytes", "64KiB")
    algo = ET.fromstring(text)
    assert algo.get("nchannels") == "2"
    _check(text)


def test_a_ring_of_130_ranks_splits_each_pair_over_three_channels(run, tmp_path):
    """129 sends from a GPU to its successor: thread blocks of at most 64 steps, on channels 0, 1, 2 in order."""
    text = _xml(run, tmp_path, "schedule", "allgather", "--algorithm", "ring", "--network", "torus:130")
    algo = ET.fromstring(text)
    assert algo.get("nchannels") == "3"
    gpu = algo.find("gpu")
    sending = [tb for tb in gpu.findall("tb") if tb.get("send") != "-1"]
    assert [len(tb.findall("step")) for tb in sending] == [64, 64, 1]
    assert sorted(tb.get("chan") for tb in sending) == ["0", "1", "2"]
    _check(text)


@pytest.mark.parametrize("max_steps, argv", [
    (4, ("schedule", "allgather", "--algorithm", "ring", "--network", "torus:16")),
    (5, ("schedule", "allreduce", "--algorithm", "swing-b", "--network", "torus:4,4", "--bytes", "4096")),
    (3, ("schedule", "allreduce", "--algorithm", "swing-l", "--network", "torus:4,4", "--bytes", "4096")),
    (4, ("schedule", "allreduce", "--algorithm", "ring", "--network", "torus:8", "--bytes", "4096")),
    (3, ("schedule", "alltoall", "--algorithm", "bruck", "--network", "torus:5", "--bytes", "4096")),
    (2, ("schedule", "reduce-scatter", "--algorithm", "ring", "--network", "torus:6", "--bytes", "4096")),
    (4, ("synthesize", "allreduce", "--network", "kautz:2,2", "--bytes", "64KiB", "--quiet")),
])
def test_thread_blocks_of_few_steps_split_in_order_and_still_deliver(run, tmp_path, max_steps, argv):
    """--max-steps (an MSCCL built with another MSCCL_MAX_NUM_STEPS), small here: every lane is cut into several
    thread blocks, pairs' segments on several channels, nops and waits across the cuts."""
    text = _xml(run, tmp_path, *argv, export_args=("--max-steps", str(max_steps)))
    algo = ET.fromstring(text)
    longest = max(len(tb.findall("step")) for gpu in algo.findall("gpu") for tb in gpu.findall("tb"))
    assert longest <= max_steps
    lanes = [(gpu.get("id"), tb.get("send"), tb.get("recv")) for gpu in algo.findall("gpu") for tb in gpu.findall("tb")]
    assert len(lanes) > len(set(lanes)), "no lane was cut into thread blocks"
    root = int(argv[argv.index("--root") + 1]) if "--root" in argv else 0
    _check_state(text, validate(text, max_steps), root)
    with pytest.raises(AssertionError):  # the same file is refused by an MSCCL of fewer steps
        validate(text, max_steps - 1)


def test_the_validator_finds_a_wait_on_a_step_without_its_flag_and_a_crossed_channel(run, tmp_path):
    text = _xml(run, tmp_path, "schedule", "allgather", "--algorithm", "ring", "--network", "torus:6",
                export_args=("--max-steps", "3"))
    algo = ET.fromstring(text)
    waited = next(st for gpu in algo.findall("gpu") for tb in gpu.findall("tb") for st in tb.findall("step")
                  if st.get("hasdep") == "1")
    waited.set("hasdep", "0")
    with pytest.raises(AssertionError, match="sets no flag"):
        validate(ET.tostring(algo, encoding="unicode"))
    algo = ET.fromstring(text)
    tb = next(tb for tb in algo.find("gpu").findall("tb") if tb.get("send") != "-1" and tb.get("chan") == "1")
    tb.set("chan", "0")  # two thread blocks to one peer on one channel: one connection
    with pytest.raises(AssertionError):
        validate(ET.tostring(algo, encoding="unicode"))


def _selected(files: dict, n: int) -> list[str]:
    """The files MSCCL's scheduler would take for n bytes (msccl_lifecycle.cc:332-335: n >= minBytes and, unless
    maxBytes is 0, n <= maxBytes; count x type size x nRanks for allgather, synth's message size)."""
    out = []
    for name, text in files.items():
        algo = ET.fromstring(text)
        low, high = int(algo.get("minBytes")), int(algo.get("maxBytes"))
        if n >= low and (high == 0 or n <= high):
            out.append(name)
    return out


def test_a_synthesis_band_directory_exports_one_file_per_band_that_msccl_selects_by_size(run, tmp_path):
    bands = tmp_path / "bands"
    code, _, err = run("synthesize", "allgather", "--network", "kautz:2,2", "--bytes", "1KiB..256KiB", "--out", bands,
                       "--quiet")
    assert code == 0, err
    code, out, err = run("export", bands, "--out", tmp_path / "xml")
    assert code == 0, err
    made = sorted(p.name for p in (tmp_path / "xml").iterdir())
    assert made == sorted(p.name.replace(".json", ".xml") for p in bands.iterdir()) and len(made) > 1
    files = {name: (tmp_path / "xml" / name).read_text() for name in made}
    for n in [1024 << k for k in range(9)] + [1025, 3000, 100_000, 262_143]:
        assert len(_selected(files, n)) == 1, n  # every size of the range, and those between, one file
    assert _selected(files, 1023) == [] and _selected(files, 262_145) == []  # outside what was synthesized
    for name, text in files.items():
        assert _selected(files, int(name.split("-")[1][:-len("B.xml")])) == [name]
        _check(text)
    again = tmp_path / "again"
    assert run("export", bands, "--out", again)[0] == 0
    assert all((again / name).read_bytes() == (tmp_path / "xml" / name).read_bytes() for name in made)


def test_a_size_range_is_written_as_msccl_reads_it(run, tmp_path):
    text = _xml(run, tmp_path, "schedule", "allgather", "--algorithm", "ring", "--network", "torus:4",
                export_args=("--min-bytes", "1KiB", "--max-bytes", "64KiB"))
    algo = ET.fromstring(text)
    assert (algo.get("minBytes"), algo.get("maxBytes")) == ("1024", "65536")
    assert _selected({"a": text}, 1024) == ["a"] and _selected({"a": text}, 65536) == ["a"]
    assert _selected({"a": text}, 1023) == [] and _selected({"a": text}, 65537) == []
    _check(text)


def test_export_options_refused_in_one_line(run, tmp_path):
    schedule = tmp_path / "s.json"
    assert run("schedule", "allgather", "--algorithm", "ring", "--network", "torus:4", "--out", schedule)[0] == 0
    out = tmp_path / "x.xml"
    assert_user_error(run("export", schedule, "--min-bytes", "2KiB", "--max-bytes", "1KiB", "--out", out),
                      all_of=("--max-bytes", "below"))
    assert_user_error(run("export", schedule, "--min-bytes", "1.5KiB", "--out", out), "--min-bytes")
    assert_user_error(run("export", schedule, "--max-steps", "1", "--out", out), "--max-steps")
    assert_user_error(run("export", tmp_path, "--min-bytes", "1", "--out", tmp_path / "d"), "--min-bytes")
    assert_user_error(run("export", tmp_path), "--out")
    (tmp_path / "bands").mkdir()
    (tmp_path / "bands" / "notes.txt").write_text("x")
    assert_user_error(run("export", tmp_path / "bands", "--out", tmp_path / "d"), "notes.txt")
    assert not out.exists() and not (tmp_path / "d").exists()


def test_alltoallv_is_refused_with_its_reason(run, tmp_path):
    schedule = tmp_path / "v.json"
    assert run("schedule", "alltoallv", "--algorithm", "spread-out", "--network", "torus:4", "--sizes", "random:64:1",
               "--out", schedule)[0] == 0
    line = assert_user_error(run("export", schedule, "--out", tmp_path / "a.xml"), all_of=("alltoallv", "one size"))
    assert "chunks" in line and not (tmp_path / "a.xml").exists()


def test_more_gpus_than_the_parser_keeps_are_refused_before_the_replay():
    """1,025 GPUs: MSCCL's parser keeps 1,024 <gpu> elements (MAX_SUBS) and 4,096 elements a rank (MAX_NODES)."""
    import time

    from synth.api import schedule
    from synth.app.export import export_text
    from synth.core.errors import SynthError

    made = schedule("allgather", "torus:1025", "ring", message_bytes=1025)
    start = time.perf_counter()
    with pytest.raises(SynthError, match="1025 GPUs are more than MSCCL's XML parser reads"):
        export_text(made)
    assert time.perf_counter() - start < 1.0  # refused before the million transfers are verified or rendered


def _swap(in_place: bool) -> str:
    """Two GPUs summing one chunk by swapping it: each sends s[0] and receives the peer's into s[0] (in place: the
    receive overwrites what its own send reads, so it waits for that send) or into s[1] (no such wait)."""
    gpus = []
    for rank in (0, 1):
        peer, slot = 1 - rank, 0 if in_place else 1
        wait = 'depid="1" deps="0"' if in_place else 'depid="0" deps="0"'
        gpus.append(
            f'  <gpu id="{rank}" i_chunks="1" o_chunks="1" s_chunks="2">\n'
            '    <tb id="0" send="-1" recv="-1" chan="0">\n'
            '      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" '
            'hasdep="1" />\n'
            f'      <step s="1" type="cpy" srcbuf="s" srcoff="{slot}" dstbuf="o" dstoff="0" cnt="1" depid="2" deps="0" '
            'hasdep="0" />\n'
            '    </tb>\n'
            f'    <tb id="1" send="{peer}" recv="-1" chan="0">\n'
            '      <step s="0" type="s" srcbuf="s" srcoff="0" dstbuf="s" dstoff="0" cnt="1" depid="0" deps="0" '
            'hasdep="1" />\n'
            '    </tb>\n'
            f'    <tb id="2" send="-1" recv="{peer}" chan="0">\n'
            f'      <step s="0" type="rrc" srcbuf="s" srcoff="0" dstbuf="s" dstoff="{slot}" cnt="1" {wait} '
            'hasdep="1" />\n'
            '    </tb>\n'
            '  </gpu>\n')
    return ('<algo name="swap" proto="Simple" nchannels="1" nchunksperloop="1" ngpus="2" coll="allreduce" inplace="0" '
            'outofplace="1" minBytes="0" maxBytes="0">\n' + "".join(gpus) + "</algo>\n")


def test_the_replay_with_bounded_fifos_finds_a_swap_waiting_on_itself():
    """A send larger than the connection's FIFO ends only when its receive has begun: u's receive waits for u's send,
    which waits for v's receive, which waits for v's send, which waits for u's receive."""
    for fifo in (None, 1):  # the chunk fits the FIFO (or FIFOs are unbounded): both sends end, the swap goes through
        state = validate(_swap(in_place=True), fifo_chunks=fifo)
        assert state[0]["o"] == state[1]["o"] == [frozenset({(0, 0), (1, 0)})]
    with pytest.raises(AssertionError, match="deadlock"):
        validate(_swap(in_place=True), fifo_chunks=0)
    state = validate(_swap(in_place=False), fifo_chunks=0)  # received into another slot: no wait on its own send
    assert state[0]["o"] == state[1]["o"] == [frozenset({(0, 0), (1, 0)})]


OLD_RD_L = Path(__file__).parent / "data" / "msccl_rd_l_torus_2_2_in_place.xml"  # synth export at 47b7360


def test_a_recursive_doubling_swap_no_longer_waits_on_its_own_send(run, tmp_path):
    """`synth schedule allreduce --algorithm rd-l --network torus:2,2 --bytes 4096`, exported before (every block in
    s at its id: each swap's receive waited for its own GPU's send of the block) and now."""
    old = OLD_RD_L.read_text()
    _check_state(old, validate(old, fifo_chunks=None))  # delivered with unbounded FIFOs
    _check_state(old, validate(old, fifo_chunks=4))  # and where the FIFO holds the 4 chunks of a send
    for fifo in (3, 0):
        with pytest.raises(AssertionError, match="deadlock"):
            validate(old, fifo_chunks=fifo)
    new = _export(run, tmp_path, "schedule", "allreduce", "--algorithm", "rd-l", "--network", "torus:2,2",
                  "--bytes", "4096")
    _check(new)  # fifo_chunks 0: every send a rendezvous
    steps = {}
    for name, text in (("old", old), ("new", new)):
        algo = ET.fromstring(text)
        kinds = [st.get("type") for gpu in algo.findall("gpu") for tb in gpu.findall("tb") for st in tb.findall("step")]
        steps[name] = (len(kinds), sum(k != "nop" for k in kinds))
        if name == "new":  # every GPU receives into the second region of 4 chunks
            assert {gpu.get("s_chunks") for gpu in algo.findall("gpu")} == {"8"}
    assert steps["new"][1] == steps["old"][1] and steps["new"][0] <= steps["old"][0]  # no step more


def test_a_run_of_blocks_in_both_scratch_regions_is_cut_where_they_change():
    """A hand-made allreduce on 3 ranks whose swaps leave blocks 0, 1 and 2, 3 of a GPU in different regions: the
    run 0..3 that GPU 0 sends in the last step is two steps, as are GPU 2's receives of it (0, 1 into the other region:
    GPU 2 sends them in that step too)."""
    from synth.app.export import export_text
    from synth.collectives.schedule import COPY, REDUCE, ScheduleBuilder

    b = ScheduleBuilder("allreduce", "hand", "torus:3", 3, 4, 1024)
    b.add_step([0, 1], [1, 0], [[0, 1, 2, 3]] * 2, REDUCE)
    b.add_step([2, 0, 2, 1], [0, 2, 1, 2], [[0, 1], [0, 1], [2, 3], [2, 3]], REDUCE)
    b.add_step([0, 1], [1, 0], [[0, 1], [2, 3]], COPY)
    b.add_step([0, 2], [2, 1], [[0, 1, 2, 3], [0, 1]], COPY)
    text = export_text(b.build(), "msccl-xml")
    _check(text)
    algo = ET.fromstring(text)
    gpu0, gpu2 = algo.findall("gpu")[0], algo.findall("gpu")[2]
    to_2 = next(tb for tb in gpu0.findall("tb") if tb.get("send") == "2")
    assert [(st.get("srcoff"), st.get("cnt")) for st in to_2.findall("step")][-2:] == [("0", "2"), ("6", "2")]
    from_0 = next(tb for tb in gpu2.findall("tb") if tb.get("recv") == "0")
    assert [(st.get("dstoff"), st.get("cnt")) for st in from_0.findall("step") if st.get("type") == "r"] == \
        [("0", "2"), ("6", "2")]


def test_a_swap_of_more_blocks_than_two_scratch_regions_address_is_refused():
    from synth.api import schedule
    from synth.app.export import export_text
    from synth.core.errors import SynthError

    made = schedule("allreduce", "torus:2,2", "rd-l", message_bytes=16385 * 8, blocks=16385)
    with pytest.raises(SynthError, match="second scratch region.*use at most 16,384 blocks"):
        export_text(made, "msccl-xml")
