"""A schedule as MSCCL's XML algorithm (the format msccl-executor-nccl and RCCL load from the files of
MSCCL_ALGO_DIR), for any collective schedule of synth, generated or synthesized.

Mapping (docs/formats.md, "MSCCL XML"):
- rank r is GPU r; a block is a chunk (`nchunksperloop` chunks: a message of n bytes is cut into
  chunks by MSCCL; the block layout of each buffer is below);
- every block lives in the scratch buffer `s`, from the first step that holds it, at its block id b
  or at b + blocks (a second region, on the GPUs that need it): the GPU copies its starting blocks
  from the input buffer `i` (`cpy`) to s[b] and its promised blocks from where they are to the
  output buffer `o` at the end (`cpy`), so relays (Bruck, trees, synthesized schedules) need no
  other buffer. A receive writes the block where it is, unless the GPU's sends of the same schedule
  step read that slot (an exchange of b both ways, as recursive doubling's): then it writes the other
  slot (`rrc` reads the block where it is and writes the other one), and the block is there from then
  on. So no receive waits for a send of its own step: with MSCCL's bounded FIFOs a send may not end
  before its receive has begun, and such a wait closed a cycle through the two GPUs;
- a transfer u -> v of step t is, on u, `s` steps (send) in u's thread block to v and, on v, `r`
  (copy) or `rrc` (receive, reduce into the block, copy) steps in v's thread block from u; a
  transfer's blocks go as runs of consecutive ids in one region on both GPUs (one step per run, at most
  MAX_COUNT chunks);
- thread blocks: per GPU, the sends to one peer, the receives from one peer and the local copies are
  each a lane of steps in schedule order; a lane longer than a thread block's `max_steps` is cut into
  thread blocks in order, a peer pair's k-th send and k-th receive in the same segment on both GPUs
  (segments of one pair on distinct channels: MSCCL connects a channel to a peer once per direction);
  segments take the least channel where both GPUs have a send (receive) thread block free of the 32 a
  channel holds;
- dependencies: a step that reads a block waits for the step that last wrote it on that GPU; a
  step that writes one waits for that write and for every read since (a send reads the value the
  block had at the start of its schedule step, as synth's replay does). A step with several waits
  is preceded by `nop` steps carrying the others (MSCCL allows one per step); `hasdep` marks the
  steps waited for. A send waits only for earlier schedule steps, a receive for earlier schedule
  steps and the same step's receives of earlier transfers, and a pair's sends and receives of a
  segment are in schedule order on both sides: (schedule step, transfer, run) orders every wait, a
  send's wait for its receive to begin included, so there is no cycle even where every send is a
  rendezvous;
- `minBytes`/`maxBytes`: the message sizes MSCCL selects the file for (both inclusive; maxBytes 0:
  no upper limit), in bytes of MSCCL's count x type size x ngpus for allgather, reducescatter and
  alltoall (a rank's whole output, input, send buffer), of the buffer for the others: synth's message
  size in each case.

Layouts (C = blocks / P, or / P^2 for alltoall: a block b stands for b mod P, b mod P^2):
allgather: i[c] is block c P + r, o[(b mod P) C + b div P]; reduce-scatter: i[(b mod P) C + b div P],
o[c] is block c P + r; allreduce, broadcast, reduce: i[b], o[b] (broadcast: i at the root, reduce: o
at the root); alltoall: i[d C + c] is block c P^2 + r P + d, o[s C + c] is block c P^2 + s P + r.

Limits (msccl-executor-nccl at c6f6b36, docs/formats.md lists where each is read): the constants below.
"""

from __future__ import annotations

import numpy as np

from synth.core.errors import SynthError
from synth.io import ExportFormat
from synth.collectives.schedule import REDUCE, Schedule

# MSCCL's chunks are of one size: an alltoallv's blocks are not (scatter and gather: not yet mapped)
EXPORTED = ("allgather", "reduce-scatter", "allreduce", "broadcast", "reduce", "alltoall")
RUNTIME_NAMES = {"reduce-scatter": "reducescatter"}  # MSCCL's names where they differ
MAX_COUNT = 71  # chunks per step: msccl_parser.cc refuses count >= MSCCL_MAX_COUNT (72, msccl_struct.h)
MAX_STEPS = 64  # steps per thread block: MSCCL_MAX_NUM_STEPS, a build flag (makefiles/common.mk: ?= 64)
MAX_STEPS_LIMIT = 32768  # what --max-steps may say: a dependency's step is an int16_t (msccl_struct.h)
MAX_CHANNELS = 32  # MAXCHANNELS (device.h): the channels a communicator has at most
MAX_PEERS_PER_CHANNEL = 32  # send (receive) thread blocks per channel (MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL)
MAX_THREAD_BLOCKS = 1024  # per GPU: MSCCL_MAX_NUM_THREAD_BLOCKS = 32 x MAXCHANNELS
MAX_WAITED = 128  # thread blocks a step may wait for: ids 0..127 (the kernel reads dependentBid as int8_t)
MAX_CHUNKS = 32768  # chunks of a buffer: offsets are int16_t (mscclTransmission.srcOffset, dstOffset)
MAX_GPUS = 1024  # <gpu> elements: the parser's MAX_SUBS children of <algo> (msccl_parser.h, not checked)
MAX_NODES = 4095  # per rank: 1 + ngpus + its <tb> and <step> elements (MAX_NODES 4096, checked before every read)
MAX_VALUE_BYTES = 255  # an attribute's value: MAX_STR_LEN (msccl_parser.h), not checked by the parser
PROTOCOLS = ("Simple", "LL128", "LL")


class _Tb:
    """One thread block: its steps (type, srcbuf, srcoff, dstbuf, dstoff, cnt, waits-on tb, step)."""

    __slots__ = ("id", "send", "recv", "pair", "steps", "waited", "seen")

    def __init__(self, tb: int, send: int, recv: int, pair):
        self.id, self.send, self.recv, self.pair = tb, send, recv, pair  # pair: (u, v, segment), None: local
        self.steps: list[tuple] = []
        self.waited: set[int] = set()  # its steps another step waits for (hasdep)
        self.seen: dict[int, int] = {}  # per other thread block, the latest of its steps this one waited for


class _Gpu:
    def __init__(self, rank: int):
        self.rank = rank
        self.thread_blocks: list[_Tb] = []
        self.lanes: dict[tuple[int, int], _Tb] = {}  # (+1 send | -1 receive, peer) -> its current segment
        self.local: _Tb | None = None
        self.last_write: dict[int, tuple[_Tb, int]] = {}
        self.reads: dict[int, list[tuple[_Tb, int]]] = {}

    def new_tb(self, send: int, recv: int, pair) -> _Tb:
        tb = _Tb(len(self.thread_blocks), send, recv, pair)
        self.thread_blocks.append(tb)
        return tb

    def waits(self, tb: _Tb, reads, writes) -> list[tuple[_Tb, int]]:
        found: list[tuple[_Tb, int]] = []
        for b in reads:
            if b in self.last_write:
                found.append(self.last_write[b])
        for b in writes:
            if b in self.last_write:
                found.append(self.last_write[b])
            found.extend(self.reads.get(b, ()))
        # A thread block runs its steps in order: waits on itself, and on a step of another thread block
        # no later than one it already waited for, are kept out (as MSCCLang's compiler does).
        latest: dict[int, tuple[_Tb, int]] = {}
        for w, s in found:
            if w is not tb and s > tb.seen.get(w.id, -1) and s > latest.get(w.id, (w, -1))[1]:
                latest[w.id] = (w, s)
        return [latest[k] for k in sorted(latest)]

    def add(self, tb: _Tb, kind: str, src: tuple[str, int], dst: tuple[str, int], count: int, reads, writes,
            ordered: list[tuple[_Tb, int]] | None = None) -> None:
        if ordered is None:
            ordered = self.waits(tb, reads, writes)
        for w, s in ordered:
            tb.seen[w.id] = s
            w.waited.add(s)
        for w, s in ordered[:-1]:
            tb.steps.append(("nop", "s", 0, "s", 0, 0, w, s))
        last = ordered[-1] if ordered else (None, -1)
        tb.steps.append((kind, src[0], src[1], dst[0], dst[1], count, last[0], last[1]))
        here = (tb, len(tb.steps) - 1)
        for b in reads:
            self.reads.setdefault(b, []).append(here)
        for b in writes:
            self.last_write[b], self.reads[b] = here, []

    def local_add(self, kind: str, src, dst, count: int, reads, writes, max_steps: int) -> None:
        """A local copy, in the current copies' thread block, or a new one when it is full."""
        if self.local is not None:
            ordered = self.waits(self.local, reads, writes)
            if len(self.local.steps) + max(1, len(ordered)) <= max_steps:
                self.add(self.local, kind, src, dst, count, reads, writes, ordered)
                return
        fresh = self.new_tb(-1, -1, None)
        ordered = self.waits(fresh, reads, writes)
        if len(ordered) > max_steps and count > 1:  # waits for more thread blocks than it has steps: in halves
            self.thread_blocks.pop()
            half = count // 2
            for k, n in ((0, half), (half, count - half)):
                self.local_add(kind, (src[0], src[1] + k), (dst[0], dst[1] + k), n,
                               reads[k:k + n] if reads else (), writes[k:k + n] if writes else (), max_steps)
            return
        self.local = fresh
        if len(ordered) > max_steps:
            raise SynthError(f"GPU {self.rank}: a copy waits for {len(ordered)} thread blocks, more steps than a "
                             f"thread block of {max_steps} holds")
        self.add(self.local, kind, src, dst, count, reads, writes, ordered)

    def pair_tb(self, direction: int, peer: int, pair: tuple[int, int, int]) -> _Tb:
        tb = self.lanes.get((direction, peer))
        if tb is None or tb.pair != pair:
            tb = self.new_tb(peer if direction > 0 else -1, peer if direction < 0 else -1, pair)
            self.lanes[(direction, peer)] = tb
        return tb


def _runs(ptr: np.ndarray, ids: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per segment k of ids[ptr[k]:ptr[k+1]] (each sorted here), its ids as runs of consecutive ids of at most
    `limit`: (segment, first, count) arrays in segment order, then first."""
    n = len(ids)
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    seg = np.repeat(np.arange(len(ptr) - 1, dtype=np.int64), np.diff(ptr))
    order = np.lexsort((ids, seg))
    ids, seg = np.asarray(ids, dtype=np.int64)[order], seg[order]
    new = np.ones(n, dtype=bool)
    new[1:] = (np.diff(ids) != 1) | (seg[1:] != seg[:-1])
    starts = np.flatnonzero(new)
    lengths = np.diff(np.append(starts, n))
    pieces = -(-lengths // limit)
    run = np.repeat(np.arange(len(starts)), pieces)
    within = np.arange(len(run)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    first = ids[starts[run]] + within * limit
    count = np.minimum(limit, lengths[run] - within * limit)
    return seg[starts[run]], first, count


def _pair_runs(a: np.ndarray, b: np.ndarray, limit: int) -> list[tuple[int, int, int]]:
    """Pairs (a, b) sorted by a as runs consecutive on both sides, at most `limit` long: (a0, b0, n)."""
    if not len(a):
        return []
    order = np.argsort(a, kind="stable")
    a, b = np.asarray(a, dtype=np.int64)[order], np.asarray(b, dtype=np.int64)[order]
    new = np.ones(len(a), dtype=bool)
    new[1:] = (np.diff(a) != 1) | (np.diff(b) != 1)
    starts = np.flatnonzero(new)
    lengths = np.diff(np.append(starts, len(a)))
    out = []
    for s, n in zip(starts.tolist(), lengths.tolist()):
        for k in range(0, n, limit):
            out.append((int(a[s + k]), int(b[s + k]), min(limit, n - k)))
    return out


def _layout(s: Schedule, r: int) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray], int, int]:
    """For rank r: (input offsets, blocks) it starts from, (blocks, output offsets) it must end with, and
    its input and output sizes in chunks."""
    p, b = s.ranks, s.blocks
    ids = np.arange(b, dtype=np.int64)
    name = s.collective
    if name == "alltoall":
        c = b // (p * p)
        mine = ids[(ids % (p * p)) // p == r]
        ends = ids[ids % p == r]
        return ((mine % p) * c + mine // (p * p), mine), (ends, (ends % (p * p)) // p * c + ends // (p * p)), p * c, p * c
    if name in ("allgather", "reduce-scatter"):
        c = b // p
        mine = ids[ids % p == r]
        if name == "allgather":
            return (mine // p, mine), (ids, (ids % p) * c + ids // p), c, p * c
        return ((ids % p) * c + ids // p, ids), (mine, mine // p), p * c, c
    none = np.zeros(0, dtype=np.int64)
    starts = r == s.root if name == "broadcast" else True
    ends = r == s.root if name == "reduce" else True
    return (ids, ids) if starts else (none, none), (ids, ids) if ends else (none, none), b, b


def _limits_before(s: Schedule, max_steps: int) -> None:
    """What is refused before any step is made: too many GPUs, chunks or block sends for MSCCL's parser."""
    p = s.ranks
    if p > MAX_GPUS:
        raise SynthError(f"{p} GPUs are more than MSCCL's XML parser reads ({MAX_GPUS}: it keeps at most "
                         f"{MAX_GPUS} <gpu> elements of an <algo>, and {MAX_NODES + 1:,} elements a rank): "
                         "MSCCL cannot load this schedule")
    unit = p * p if s.collective == "alltoall" else p if s.collective in ("allgather", "reduce-scatter") else 1
    if s.blocks % unit:
        raise SynthError(f"{s.blocks} blocks are not whole chunks per rank of a {s.collective} on {p} ranks")
    if s.blocks > MAX_CHUNKS:
        raise SynthError(f"{s.blocks:,} blocks are more chunks than MSCCL addresses in a buffer ({MAX_CHUNKS:,}: "
                         "its offsets are 16-bit): use fewer blocks")
    # each rank reads 1 + P elements before its own: every transfer is at least one step on each of its GPUs
    room = MAX_NODES - 1 - p
    most = p * room * MAX_COUNT
    if s.num_block_sends > most:  # (before the blocks are listed: a file's runs may claim 2^32 blocks each)
        raise SynthError(f"{s.num_block_sends:,} block sends are more than MSCCL can load on {p} GPUs ({most:,}: "
                         f"{room:,} steps a GPU in the parser's {MAX_NODES + 1:,} elements, {MAX_COUNT} chunks a "
                         "step): use fewer blocks")
    ptr = np.asarray(s.step_ptr)
    transfers = int(ptr[-1])
    src, dst = np.asarray(s.src[:transfers]), np.asarray(s.dst[:transfers])
    per_rank = np.bincount(src, minlength=p) + np.bincount(dst, minlength=p)
    worst = int(np.argmax(per_rank)) if p else 0
    if p and int(per_rank[worst]) > room:
        raise SynthError(f"GPU {worst} sends or receives {int(per_rank[worst]):,} messages, more steps than MSCCL's XML "
                         f"parser reads for one rank of {p} GPUs ({room:,}: {MAX_NODES + 1:,} elements, one per GPU, "
                         "thread block and step)")


def _pieces(keys: list[tuple[int, ...]]) -> list[tuple[int, int]]:
    """(start, length) of the maximal stretches of equal keys."""
    out, begin = [], 0
    for k in range(1, len(keys) + 1):
        if k == len(keys) or keys[k] != keys[begin]:
            out.append((begin, k - begin))
            begin = k
    return out


def _build(s: Schedule, runs, layouts, max_steps: int, caps: dict) -> tuple[list[_Gpu], list[int]]:
    """Every GPU's thread blocks, a pair (u, v)'s lane cut every caps[(u, v)] steps (default max_steps), and every
    GPU's scratch chunks.

    Block b of a GPU is in scratch slot b or b + blocks (the second region), where it was last written: a receive
    of b goes to the other slot than b's when the GPU's sends of the same schedule step read b's slot (an exchange of
    b both ways, as recursive doubling's), so no receive waits for a send of its own step (docs/formats.md)."""
    p, nb = s.ranks, s.blocks
    gpus = [_Gpu(r) for r in range(p)]
    second = [bytearray(nb) for _ in range(p)]  # per GPU, per block: 1 where it is in the second region now
    used = [False] * p  # a GPU that ever wrote the second region
    for gpu, (start, _, _, _) in zip(gpus, layouts):
        for i0, b0, n in _pair_runs(start[0], start[1], MAX_COUNT):
            gpu.local_add("cpy", ("i", i0), ("s", b0), n, (), range(b0, b0 + n), max_steps)
    run_t, run_first, run_count = runs
    run_ptr = np.searchsorted(run_t, np.arange(int(s.step_ptr[-1]) + 1))
    sent: dict[tuple[int, int], int] = {}  # per pair, the steps of its lane so far
    src, dst, op = s.src.tolist(), s.dst.tolist(), s.op.tolist()
    first_all, count_all = run_first.tolist(), run_count.tolist()
    for step in range(s.num_steps):
        lo, hi = int(s.step_ptr[step]), int(s.step_ptr[step + 1])
        read: dict[int, set[int]] = {}  # per GPU, the slots its sends of this step read
        runs_now = []
        for t in range(lo, hi):  # the slots the step's sends read: each block's as the step began
            u = src[t]
            for k in range(int(run_ptr[t]), int(run_ptr[t + 1])):
                first, count = first_all[k], count_all[k]
                bits = bytes(second[u][first:first + count])
                runs_now.append((t, first, count, bits))
                slots = read.setdefault(u, set())
                if any(bits):
                    slots.update(first + i + nb * bit for i, bit in enumerate(bits))
                else:
                    slots.update(range(first, first + count))
        placed = []
        for t, first, count, bits in runs_now:  # where each receive reads (rrc) and writes, in transfer order
            v, reduce = dst[t], op[t] == REDUCE
            now = bytes(second[v][first:first + count])
            busy = read.get(v)
            if busy and any(first + i + nb * bit in busy for i, bit in enumerate(now)):
                after = bytes(1 - bit if first + i + nb * bit in busy else bit for i, bit in enumerate(now))
                second[v][first:first + count] = after
                used[v] = used[v] or any(after)
            else:
                after = now
            if bits == now == after and (not any(bits) or all(bits)):
                placed.append((t, first, count, bits[0], now[0], after[0]))
                continue
            keys = [(bits[i], now[i] if reduce else after[i], after[i]) for i in range(count)]
            for begin, n in _pieces(keys):
                placed.append((t, first + begin, n) + keys[begin])
        steps = []
        for t, first, count, at_u, at_v, to_v in placed:  # the step's sends first, then its receives
            u, v = src[t], dst[t]
            cap = caps.get((u, v), max_steps)
            index = sent.get((u, v), 0)
            sent[(u, v)] = index + 1
            pair = (u, v, index // cap)
            steps.append((t, count, pair, first + nb * at_v, first + nb * to_v))
            slot = first + nb * at_u
            gpus[u].add(gpus[u].pair_tb(1, v, pair), "s", ("s", slot), ("s", slot), count,
                        range(slot, slot + count), ())
        for t, count, pair, read_at, write_at in steps:
            u, v = src[t], dst[t]
            kind = "rrc" if op[t] == REDUCE else "r"
            if kind == "r":
                read_at = write_at
            gpus[v].add(gpus[v].pair_tb(-1, u, pair), kind, ("s", read_at), ("s", write_at), count,
                        range(read_at, read_at + count) if kind == "rrc" else (), range(write_at, write_at + count))
    for r, (gpu, (_, end, _, _)) in enumerate(zip(gpus, layouts)):
        slots = end[0] + nb * np.frombuffer(bytes(second[r]), dtype=np.uint8).astype(np.int64)[end[0]]
        for b0, o0, n in _pair_runs(slots, end[1], MAX_COUNT):
            gpu.local_add("cpy", ("s", b0), ("o", o0), n, range(b0, b0 + n), (), max_steps)
    scratch = [2 * nb if used[r] else nb for r in range(p)]
    if 2 * nb > MAX_CHUNKS and any(used):
        worst = used.index(True)
        raise SynthError(f"GPU {worst} receives blocks it still sends in the same step: they go to a second scratch "
                         f"region, and {2 * nb:,} scratch chunks are more than MSCCL addresses ({MAX_CHUNKS:,}: its "
                         f"offsets are 16-bit): use at most {MAX_CHUNKS // 2:,} blocks")
    return gpus, scratch


def _channels(gpus: list[_Gpu]) -> dict[tuple[int, int, int], int]:
    """Per pair segment (u, v, j), the least channel where u has a send and v a receive thread block free and the
    pair no other segment (segments in the order they were made)."""
    sends = [[0] * MAX_CHANNELS for _ in gpus]
    recvs = [[0] * MAX_CHANNELS for _ in gpus]
    used: dict[tuple[int, int], set[int]] = {}
    out: dict[tuple[int, int, int], int] = {}
    for gpu in gpus:
        for tb in gpu.thread_blocks:
            if tb.pair is None or tb.send < 0 or tb.pair in out:
                continue
            u, v, j = tb.pair
            taken = used.setdefault((u, v), set())
            chan = next((c for c in range(MAX_CHANNELS) if c not in taken and sends[u][c] < MAX_PEERS_PER_CHANNEL
                         and recvs[v][c] < MAX_PEERS_PER_CHANNEL), None)
            if chan is None:
                raise SynthError(f"GPU {u}'s sends to GPU {v} need a channel beyond MSCCL's {MAX_CHANNELS} (each "
                                 f"holds {MAX_PEERS_PER_CHANNEL} send and {MAX_PEERS_PER_CHANNEL} receive thread "
                                 "blocks a GPU, and a pair's thread blocks one each): use fewer blocks or peers")
            taken.add(chan)
            sends[u][chan] += 1
            recvs[v][chan] += 1
            out[tb.pair] = chan
    return out


def _escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
            .replace("\t", "&#09;").replace("\n", "&#10;").replace("\r", "&#13;"))


def check_size_range(min_bytes: int, max_bytes: int) -> None:
    """--min-bytes and --max-bytes as MSCCL reads them: 0 <= min, max 0 (no limit) or at least min."""
    if min_bytes < 0 or max_bytes < 0:
        raise SynthError(f"--min-bytes {min_bytes} / --max-bytes {max_bytes}: sizes are not negative")
    if max_bytes and max_bytes < min_bytes:
        raise SynthError(f"--max-bytes {max_bytes:,} is below --min-bytes {min_bytes:,}: MSCCL would select the file "
                         "for no size (--max-bytes 0: no upper limit)")


def check_max_steps(max_steps: int) -> None:
    if not 2 <= max_steps <= MAX_STEPS_LIMIT:
        raise SynthError(f"--max-steps {max_steps}: expected MSCCL_MAX_NUM_STEPS as MSCCL was built with, 2 to "
                         f"{MAX_STEPS_LIMIT:,} (default {MAX_STEPS})")


def check_msccl_xml(s: Schedule, min_bytes: int = 0, max_bytes: int = 0, max_steps: int = MAX_STEPS) -> None:
    """What is refused before the schedule is verified or rendered (its collective, its size against the parser's)."""
    if s.collective not in EXPORTED:
        why = (": MSCCL's chunks are of one size (a message is cut into nchunksperloop equal chunks), an "
               "alltoallv's blocks are not") if s.collective == "alltoallv" else ""
        raise SynthError(f"MSCCL export takes {', '.join(EXPORTED)}, not {s.collective}{why}")
    check_size_range(min_bytes, max_bytes)
    check_max_steps(max_steps)
    _limits_before(s, max_steps)


def render_msccl_xml(s: Schedule, name: str | None = None, protocol: str = "Simple", min_bytes: int = 0,
                     max_bytes: int = 0, max_steps: int = MAX_STEPS) -> str:
    """The schedule as MSCCL XML text; refused in one line where MSCCL's limits do not hold."""
    if protocol not in PROTOCOLS:
        raise SynthError(f"--proto {protocol}: expected one of {', '.join(PROTOCOLS)}")
    check_msccl_xml(s, min_bytes, max_bytes, max_steps)
    s = s.explicit()
    p = s.ranks
    transfers = int(s.step_ptr[-1])
    runs = _runs(np.asarray(s.block_ptr[:transfers + 1]), np.asarray(s.block_ids[:int(s.block_ptr[transfers])]),
                 MAX_COUNT)
    layouts = [_layout(s, r) for r in range(p)]
    caps: dict[tuple[int, int], int] = {}
    for _ in range(16):  # a pair's segments shortened by what their nop steps overflowed, until every one fits
        gpus, scratch = _build(s, runs, layouts, max_steps, caps)
        over: dict[tuple[int, int], int] = {}
        for gpu in gpus:
            for tb in gpu.thread_blocks:
                if tb.pair is not None and len(tb.steps) > max_steps:
                    key = tb.pair[:2]
                    over[key] = max(over.get(key, 0), len(tb.steps) - max_steps)
        if not over:
            break
        for key, extra in over.items():
            cap = caps.get(key, max_steps)
            if cap == 1:
                raise SynthError(f"GPU {key[0]}'s sends to GPU {key[1]} wait for more thread blocks than a thread "
                                 f"block of {max_steps} steps holds")
            caps[key] = max(1, cap - extra)
    else:
        raise SynthError(f"the thread blocks of {len(over)} peer pairs do not fit in {max_steps} steps")
    channel = _channels(gpus)
    for gpu in gpus:
        if len(gpu.thread_blocks) > MAX_THREAD_BLOCKS:
            raise SynthError(f"GPU {gpu.rank} needs {len(gpu.thread_blocks)} thread blocks, more than MSCCL's "
                             f"{MAX_THREAD_BLOCKS}")
        waited = [tb for tb in gpu.thread_blocks if tb.waited]
        if len(waited) > MAX_WAITED:
            raise SynthError(f"GPU {gpu.rank} has {len(waited)} thread blocks that others wait for, more than the "
                             f"{MAX_WAITED} MSCCL's kernel can name (a dependency's thread block is 8-bit)")
        # ids: the thread blocks waited for first (ids below 128), each group in the order made
        gpu.thread_blocks = waited + [tb for tb in gpu.thread_blocks if not tb.waited]
        for k, tb in enumerate(gpu.thread_blocks):
            tb.id = k
        elements = 1 + p + len(gpu.thread_blocks) + sum(len(tb.steps) for tb in gpu.thread_blocks)
        if elements > MAX_NODES:
            raise SynthError(f"GPU {gpu.rank}'s part of the file is {elements:,} XML elements with the <algo> and "
                             f"<gpu> ones, more than MSCCL's parser reads ({MAX_NODES + 1:,} with the closing tags' "
                             "read): use fewer blocks")
    nchannels = max(channel.values(), default=0) + 1
    chunks = max(max(i, o) for _, _, i, o in layouts)
    title = _escape(name or f"synth-{s.algorithm}-{s.collective}-{p}")
    if len(title.encode("utf-8")) > MAX_VALUE_BYTES:
        raise SynthError(f"--name is {len(title.encode('utf-8'))} bytes in the file, more than MSCCL's parser reads "
                         f"in an attribute ({MAX_VALUE_BYTES})")
    out = [f'<algo name="{title}" proto="{protocol}" nchannels="{nchannels}" nchunksperloop="{chunks}" ngpus="{p}" '
           f'coll="{RUNTIME_NAMES.get(s.collective, s.collective)}" inplace="0" outofplace="1" '
           f'minBytes="{min_bytes}" maxBytes="{max_bytes}">\n']
    for gpu, (_, _, i_chunks, o_chunks), s_chunks in zip(gpus, layouts, scratch):
        head = f'  <gpu id="{gpu.rank}" i_chunks="{i_chunks}" o_chunks="{o_chunks}" s_chunks="{s_chunks}"'
        if not gpu.thread_blocks:
            out.append(head + " />\n")
            continue
        out.append(head + ">\n")
        for tb in gpu.thread_blocks:
            chan = channel[tb.pair] if tb.pair is not None else 0
            out.append(f'    <tb id="{tb.id}" send="{tb.send}" recv="{tb.recv}" chan="{chan}">\n')
            waited = tb.waited
            out.extend(
                f'      <step s="{index}" type="{kind}" srcbuf="{sbuf}" srcoff="{soff}" dstbuf="{dbuf}" '
                f'dstoff="{doff}" cnt="{count}" depid="{w.id if w is not None else -1}" deps="{deps}" '
                f'hasdep="{1 if index in waited else 0}" />\n'
                for index, (kind, sbuf, soff, dbuf, doff, count, w, deps) in enumerate(tb.steps))
            out.append("    </tb>\n")
        out.append("  </gpu>\n")
    out.append("</algo>\n")
    return "".join(out)


EXPORT_FORMAT = ExportFormat("msccl-xml", "MSCCL's XML algorithm (msccl-executor-nccl, RCCL)",
                             lambda schedule, name, protocol, **options: render_msccl_xml(schedule, name, protocol,
                                                                                         **options),
                             takes=("protocol", "size range", "max steps"), check=check_msccl_xml)
