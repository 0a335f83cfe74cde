"""A schedule as MSCCL's XML algorithm (the format msccl-executor-nccl and RCCL load with
MSCCL_ALGO_DIR / MSCCL_XML_FILES), for any collective schedule of synth, generated or synthesized.

Mapping (docs/formats.md, "MSCCL XML"):
- rank r is GPU r; a block is a chunk (`nchunksperloop` chunks: a message of n bytes is cut into
  chunks by MSCCL; the block layout of each buffer is below);
- every block lives in the scratch buffer `s` at its block id, from the first step that holds it:
  the GPU copies its starting blocks from the input buffer `i` (`cpy`) and its promised blocks to
  the output buffer `o` at the end (`cpy`), so relays (Bruck, trees, synthesized schedules) need no
  other buffer;
- a transfer u -> v of step t is, on u, `s` steps (send) in u's thread block to v and, on v, `r`
  (copy) or `rrc` (receive, reduce into the block, copy) steps in v's thread block from u; a
  transfer's blocks go as runs of consecutive ids (one step per run, at most MAX_COUNT chunks);
- thread blocks: per GPU one per send peer, one per receive peer, and one for the local copies;
  every peer pair on channel 0 (at most 32 send and 32 receive peers per GPU: MSCCL's limit per
  channel);
- dependencies: a step that reads a block waits for the step that last wrote it on that GPU; a
  step that writes one waits for that write and for every read since (a send reads the value the
  block had at the start of its schedule step, as synth's replay does). A step with several waits
  is preceded by `nop` steps carrying the others (MSCCL allows one per step); `hasdep` marks the
  steps waited for. Every wait points to an earlier schedule step (or the same step's sends), and
  sends and receives of a thread-block pair are in schedule order on both sides: no cycle.

Layouts (C = blocks / P, or / P^2 for alltoall: a block b stands for b mod P, b mod P^2):
allgather: i[c] is block c P + r, o[(b mod P) C + b div P]; reduce-scatter: i[(b mod P) C + b div P],
o[c] is block c P + r; allreduce, broadcast, reduce: i[b], o[b] (broadcast: i at the root, reduce: o
at the root); alltoall: i[d C + c] is block c P^2 + r P + d, o[s C + c] is block c P^2 + s P + r.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

from synth.core.errors import SynthError
from synth.io import ExportFormat
from synth.collectives.schedule import REDUCE, Schedule

# MSCCL's chunks are of one size: an alltoallv's blocks are not (scatter and gather: not yet mapped)
EXPORTED = ("allgather", "reduce-scatter", "allreduce", "broadcast", "reduce", "alltoall")
RUNTIME_NAMES = {"reduce-scatter": "reducescatter"}  # MSCCL's names where they differ
MAX_COUNT = 71  # chunks per step (msccl.h: count < MSCCL_MAX_COUNT = 72)
MAX_STEPS = 256  # steps per thread block (MSCCL_MAX_NUM_STEPS)
MAX_THREAD_BLOCKS = 216  # per GPU (MSCCL_MAX_NUM_THREAD_BLOCKS)
MAX_PEERS_PER_CHANNEL = 32  # send and receive thread blocks per channel (MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL)
PROTOCOLS = ("Simple", "LL128", "LL")


class _Block:
    """One thread block's steps: (type, srcbuf, srcoff, dstbuf, dstoff, cnt, depid, deps)."""

    def __init__(self, tb: int, send: int, recv: int):
        self.id, self.send, self.recv = tb, send, recv
        self.steps: list[list] = []
        self.waited: set[int] = set()  # steps another step waits for (hasdep)
        self.seen: dict[int, int] = {}  # per other thread block, the latest of its steps this one waited for


class _Gpu:
    def __init__(self, rank: int, blocks: int):
        self.rank = rank
        self.local = _Block(0, -1, -1)
        self.thread_blocks = [self.local]
        self.sends: dict[int, _Block] = {}
        self.recvs: dict[int, _Block] = {}
        self.last_write: dict[int, tuple[_Block, int]] = {}
        self.reads: dict[int, list[tuple[_Block, int]]] = {}

    def block_to(self, peer: int, sending: bool) -> _Block:
        table = self.sends if sending else self.recvs
        if peer not in table:
            tb = _Block(len(self.thread_blocks), peer if sending else -1, -1 if sending else peer)
            self.thread_blocks.append(tb)
            table[peer] = tb
        return table[peer]

    def add(self, tb: _Block, kind: str, src: tuple[str, int], dst: tuple[str, int], count: int,
            reads: range | None, writes: range | None) -> None:
        waits: list[tuple[_Block, int]] = []
        for b in reads or ():
            if b in self.last_write:
                waits.append(self.last_write[b])
        for b in writes or ():
            if b in self.last_write:
                waits.append(self.last_write[b])
            waits.extend(self.reads.get(b, ()))
        # A thread block runs its steps in order: waits on itself, and on a step of another thread block
        # no later than one it already waited for, are kept out (as MSCCLang's compiler does).
        latest: dict[int, tuple[_Block, int]] = {}
        for w, s in waits:
            if w is not tb and s > tb.seen.get(w.id, -1) and s > latest.get(w.id, (w, -1))[1]:
                latest[w.id] = (w, s)
        ordered = [latest[k] for k in sorted(latest)]
        for w, s in ordered:
            tb.seen[w.id] = s
        for w, s in ordered[:-1]:
            tb.steps.append(["nop", "s", 0, "s", 0, 0, w.id, s])
            w.waited.add(s)
        last = ordered[-1] if ordered else None
        if last is not None:
            last[0].waited.add(last[1])
        tb.steps.append([kind, src[0], src[1], dst[0], dst[1], count, last[0].id if last else -1,
                         last[1] if last else -1])
        here = (tb, len(tb.steps) - 1)
        for b in reads or ():
            self.reads.setdefault(b, []).append(here)
        for b in writes or ():
            self.last_write[b], self.reads[b] = here, []


def _runs(ids: np.ndarray) -> list[tuple[int, int]]:
    """Sorted ids as (first, count) runs of consecutive ids, each at most MAX_COUNT long."""
    ids = np.sort(ids)
    out: list[tuple[int, int]] = []
    if not len(ids):
        return out
    breaks = np.flatnonzero(np.diff(ids) != 1) + 1
    for part in np.split(ids, breaks):
        for k in range(0, len(part), MAX_COUNT):
            out.append((int(part[k]), int(min(MAX_COUNT, len(part) - k))))
    return out


def _layout(s: Schedule, r: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]], int, int]:
    """For rank r: (input offset, block) pairs it starts from, (block, output offset) pairs it must
    end with, and its input and output sizes in chunks."""
    p, b = s.ranks, s.blocks
    ids = np.arange(b)
    name = s.collective
    if name == "alltoall":
        c = b // (p * p)
        start = [(int((k % p) * c + k // (p * p)), int(k)) for k in ids if (k % (p * p)) // p == r]
        end = [(int(k), int((k % (p * p)) // p * c + k // (p * p))) for k in ids if k % p == r]
        return start, end, p * c, p * c
    if name in ("allgather", "reduce-scatter"):
        c = b // p
        mine = [int(k) for k in ids if k % p == r]
        if name == "allgather":
            return ([(k // p, k) for k in mine], [(int(k), int((k % p) * c + k // p)) for k in ids], c, p * c)
        return ([(int((k % p) * c + k // p), int(k)) for k in ids], [(k, k // p) for k in mine], p * c, c)
    starts = r == s.root if name == "broadcast" else True
    ends = r == s.root if name == "reduce" else True
    return ([(int(k), int(k)) for k in ids] if starts else [], [(int(k), int(k)) for k in ids] if ends else [], b, b)


def _copies(gpu: _Gpu, pairs: list[tuple[int, int]], into_scratch: bool) -> None:
    """Local copies i -> s (pairs (input offset, block)) or s -> o (pairs (block, output offset)),
    as runs consecutive on both sides."""
    pairs = sorted(pairs)
    k = 0
    while k < len(pairs):
        first = pairs[k]
        n = 1
        while (k + n < len(pairs) and n < MAX_COUNT and pairs[k + n][0] == first[0] + n
               and pairs[k + n][1] == first[1] + n):
            n += 1
        if into_scratch:
            gpu.add(gpu.local, "cpy", ("i", first[0]), ("s", first[1]), n, None, range(first[1], first[1] + n))
        else:
            gpu.add(gpu.local, "cpy", ("s", first[0]), ("o", first[1]), n, range(first[0], first[0] + n), None)
        k += n


def render_msccl_xml(s: Schedule, name: str | None = None, protocol: str = "Simple") -> str:
    """The schedule as MSCCL XML text; refused in one line where MSCCL's limits do not hold."""
    if s.collective not in EXPORTED:
        raise SynthError(f"MSCCL export takes {', '.join(EXPORTED)}, not {s.collective}")
    if protocol not in PROTOCOLS:
        raise SynthError(f"--proto {protocol}: expected one of {', '.join(PROTOCOLS)}")
    # before the blocks are listed (a file's runs may claim 2^32 blocks each): a GPU sends from at most
    # MAX_PEERS_PER_CHANNEL thread blocks of MAX_STEPS steps of MAX_COUNT chunks, so more block sends cannot export
    most = s.ranks * MAX_PEERS_PER_CHANNEL * MAX_STEPS * MAX_COUNT
    if s.num_block_sends > most:
        raise SynthError(f"{s.num_block_sends:,} block sends are more than MSCCL can run on {s.ranks} GPUs ({most:,}: "
                         f"{MAX_PEERS_PER_CHANNEL} send thread blocks a GPU, {MAX_STEPS} steps each, {MAX_COUNT} chunks a "
                         "step): use fewer blocks")
    s = s.explicit()
    p = s.ranks
    unit = p * p if s.collective == "alltoall" else p if s.collective in ("allgather", "reduce-scatter") else 1
    if s.blocks % unit:
        raise SynthError(f"{s.blocks} blocks are not whole chunks per rank of a {s.collective} on {p} ranks")
    gpus = [_Gpu(r, s.blocks) for r in range(p)]
    layouts = [_layout(s, r) for r in range(p)]
    for gpu, (start, _, _, _) in zip(gpus, layouts):
        _copies(gpu, start, into_scratch=True)
    for step in range(s.num_steps):
        transfers = range(s.step_ptr[step], s.step_ptr[step + 1])
        runs = {t: _runs(s.block_ids[s.block_ptr[t]:s.block_ptr[t + 1]]) for t in transfers}
        for t in transfers:  # the step's sends first: each reads the value its block had as the step began
            u, v = int(s.src[t]), int(s.dst[t])
            for first, count in runs[t]:
                gpus[u].add(gpus[u].block_to(v, True), "s", ("s", first), ("s", first), count, range(first, first + count),
                            None)
        for t in transfers:
            u, v = int(s.src[t]), int(s.dst[t])
            kind = "rrc" if s.op[t] == REDUCE else "r"
            for first, count in runs[t]:
                blocks = range(first, first + count)
                gpus[v].add(gpus[v].block_to(u, False), kind, ("s", first), ("s", first), count,
                            blocks if kind == "rrc" else None, blocks)
    for gpu, (_, end, _, _) in zip(gpus, layouts):
        _copies(gpu, end, into_scratch=False)
    for gpu in gpus:
        if len(gpu.thread_blocks) > MAX_THREAD_BLOCKS:
            raise SynthError(f"GPU {gpu.rank} needs {len(gpu.thread_blocks)} thread blocks, more than MSCCL's "
                             f"{MAX_THREAD_BLOCKS}")
        if max(len(gpu.sends), len(gpu.recvs)) > MAX_PEERS_PER_CHANNEL:
            raise SynthError(f"GPU {gpu.rank} has {max(len(gpu.sends), len(gpu.recvs))} peers in one direction, more "
                             f"than the {MAX_PEERS_PER_CHANNEL} of one MSCCL channel")
        longest = max(len(tb.steps) for tb in gpu.thread_blocks)
        if longest > MAX_STEPS:
            raise SynthError(f"GPU {gpu.rank} has a thread block of {longest} steps, more than MSCCL's {MAX_STEPS}: "
                             "use fewer blocks")
    for gpu in gpus:  # thread block ids run 0, 1, ... without a gap (the parser refuses gaps)
        gpu.thread_blocks = [tb for tb in gpu.thread_blocks if tb.steps]
        renumber = {tb.id: k for k, tb in enumerate(gpu.thread_blocks)}
        for tb in gpu.thread_blocks:
            tb.id = renumber[tb.id]
            for step in tb.steps:
                step[6] = renumber[step[6]] if step[6] >= 0 else -1
    chunks = max(max(i, o) for _, _, i, o in layouts)
    algo = ET.Element("algo", {
        "name": name or f"synth-{s.algorithm}-{s.collective}-{p}", "proto": protocol, "nchannels": "1",
        "nchunksperloop": str(chunks), "ngpus": str(p), "coll": RUNTIME_NAMES.get(s.collective, s.collective),
        "inplace": "0", "outofplace": "1", "minBytes": "0", "maxBytes": "0"})
    for gpu, (_, _, i_chunks, o_chunks) in zip(gpus, layouts):
        node = ET.SubElement(algo, "gpu", {"id": str(gpu.rank), "i_chunks": str(i_chunks), "o_chunks": str(o_chunks),
                                           "s_chunks": str(s.blocks)})
        for tb in gpu.thread_blocks:
            if not tb.steps:
                continue
            tb_node = ET.SubElement(node, "tb", {"id": str(tb.id), "send": str(tb.send), "recv": str(tb.recv),
                                                 "chan": "0"})
            for index, (kind, sbuf, soff, dbuf, doff, count, depid, deps) in enumerate(tb.steps):
                ET.SubElement(tb_node, "step", {
                    "s": str(index), "type": kind, "srcbuf": sbuf, "srcoff": str(soff), "dstbuf": dbuf,
                    "dstoff": str(doff), "cnt": str(count), "depid": str(depid), "deps": str(deps),
                    "hasdep": "1" if index in tb.waited else "0"})
    ET.indent(algo, space="  ")
    return ET.tostring(algo, encoding="unicode") + "\n"


EXPORT_FORMAT = ExportFormat("msccl-xml", "MSCCL's XML algorithm (msccl-executor-nccl, RCCL)",
                             lambda schedule, name, protocol: render_msccl_xml(schedule, name, protocol), takes=("protocol",))
