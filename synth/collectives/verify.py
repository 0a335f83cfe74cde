"""Symbolic replay of a schedule (`synth verify`): does it move the data the collective promises?

Structure first: ranks and blocks in range, no transfer to oneself, no block twice in a transfer,
no `reduce` in a collective that reduces nothing, the block count the collective fixes.

Then the replay, block by block (blocks never interact; synth.collectives.replay has the compiled
kernels): the block sends are grouped by block in step order, and each block is replayed with
state over the ranks only. Linear in the block sends.

Copy collectives (which ranks hold the block): a rank holds it from step 0 if the collective
starts it there, else from the step after its first receipt. Every send of step s needs the
block held by step s; at the end every rank the collective promises must hold it.

Reductions (which contributions a rank's partial of the block holds): every rank starts with its
own contribution. The rule: a `reduce` that combines two partials sharing a contribution counts
it twice, and that is a violation at its step, whatever happens to the partial later. The replay
keeps the number of contributions and their fingerprint, the sum of one random 64-bit key per
rank (modulo 2^64). Within a step every sender's partial is read before any receiver's changes
(bulk-synchronous); `copy` replaces the receiver's partial, `reduce` adds to it. A count above P
is a contribution counted twice; at the end every promised partial must count P contributions
with the fingerprint of all P. A double count flows into every partial that later reads it, so
one that reaches a promised partial is caught there (exactly by the counts, or by the
fingerprint, which misses it with probability 2^-64). One that reaches none is lost with a
partial discarded unread: overwritten by a copy before anyone read it, or left at a rank the
collective promises nothing. Blocks with such a discard are suspects and are replayed exactly
with sets of ranks (none of synth's generators discards a written partial unread, so this costs
nothing on their schedules). The violation named is the earliest one found: the blocks detected
wrong earliest and the suspects are replayed exactly, which names their first violation (a later
violation of another block may be named first; the verdict is the same).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.collectives.replay import (AT_EVERY_RANK, AT_OWN_RANK, AT_PEER, AT_ROOT, CLASH, FROM_OWN_RANK, FROM_ROOT,
                                   FROM_SOURCE, NONE, bucket_runs, check_block_lists, check_runs, group_by_block,
                                   group_runs, replay_copies, replay_copies_of_runs, replay_reductions)
from synth.collectives.schedule import COPY, REDUCE, Schedule, collective


@dataclass
class VerifyReport:
    violation: str | None  # the first one, None when the schedule is correct
    steps: int
    transfers: int
    block_sends: int

    @property
    def ok(self) -> bool:
        return self.violation is None


class _Violation(Exception):
    pass


def verify(schedule: Schedule, only: np.ndarray | None = None) -> VerifyReport:
    """The first violation of `schedule` (None: it delivers). `only`: replay these blocks alone
    (sorted; listed blocks only), the others vouched for otherwise: an orbit schedule's
    representative blocks, whose translates the group moves onto every other (synth.collectives.orbit)."""
    report = VerifyReport(None, schedule.num_steps, schedule.num_transfers, schedule.num_block_sends)
    try:
        _check_structure(schedule)
        if collective(schedule.collective).reduction:
            _replay_reduction(schedule, only)
        else:
            _replay_copies(schedule, only)
    except _Violation as exc:
        report.violation = str(exc)
    return report


# Memory of a schedule read from a file and replayed (synth verify), besides the parsed file: per
# block send its id (int32), its transfer in the replay's grouping (int32) and the reader's list
# of it while a step is built; per block its size, the grouping's offsets and a reduction's
# per-block findings; per transfer its ranks, op, offsets, step and the copy replay's packed key;
# per rank the replay's state.
VERIFY_BASE_BYTES = 256 << 20
VERIFY_BYTES_PER_BLOCK_SEND = 20
VERIFY_BYTES_PER_BLOCK = 40
VERIFY_BYTES_PER_TRANSFER = 96
VERIFY_BYTES_PER_STEP = 16
VERIFY_BYTES_PER_RANK = 64


def verify_memory(ranks: int, blocks: int, steps: int, transfers: int, block_sends: int) -> int:
    """The bytes a schedule of these sizes takes to build and replay (the size guard of synth verify)."""
    return (VERIFY_BASE_BYTES + VERIFY_BYTES_PER_BLOCK_SEND * block_sends + VERIFY_BYTES_PER_BLOCK * blocks
            + VERIFY_BYTES_PER_TRANSFER * transfers + VERIFY_BYTES_PER_STEP * steps + VERIFY_BYTES_PER_RANK * ranks)


def _transfer_of(s: Schedule, entry: int) -> int:
    """The transfer a block entry belongs to."""
    return int(np.searchsorted(s.block_ptr, entry, side="right") - 1)


def expected_blocks(name: str, ranks: int) -> int | None:
    rule = collective(name).blocks
    return ranks if rule == "P" else ranks * ranks if rule == "P^2" else None


def _check_structure(s: Schedule) -> None:
    info = collective(s.collective)
    p, b = s.ranks, s.blocks
    wanted = expected_blocks(s.collective, p)
    if wanted is not None and b % wanted:
        raise _Violation(f"{s.collective} on {p} ranks has {wanted} blocks per part (a multiple of {wanted}), the "
                         f"schedule declares {b}")
    if b < 1:
        raise _Violation("the schedule declares no blocks")
    if info.rooted and (s.root is None or not 0 <= s.root < p):
        raise _Violation(f"{s.collective} needs a root among ranks 0..{p - 1}")
    if (s.collective == "p2p") != (s.peer is not None) or s.peer is not None and not (0 <= s.peer < p and s.peer != s.root):
        raise _Violation("p2p needs a peer other than the root, and only p2p has one")
    step = s.transfer_step()
    for name, values in (("source", s.src), ("destination", s.dst)):
        bad = (values < 0) | (values >= p)
        if bad.any():
            t = int(np.argmax(bad))
            raise _Violation(f"step {step[t]}: a transfer's {name} {values[t]} is not a rank (0..{p - 1})")
    loop = s.src == s.dst
    if loop.any():
        t = int(np.argmax(loop))
        raise _Violation(f"step {step[t]}: rank {s.src[t]} sends to itself")
    if s.runs is None:
        out_of_range, repeated = check_block_lists(s.block_ptr, s.block_ids, b)
        for j, what in ((out_of_range, f", not a block (0..{b - 1})"), (repeated, " twice in one transfer")):
            if j >= 0:
                t = _transfer_of(s, j)
                raise _Violation(f"step {step[t]}: rank {s.src[t]} sends block {s.block_ids[j]}{what}")
    else:
        r = s.runs
        bad_run, t, block = check_runs(r.ptr, r.first, r.stride, r.count, b)
        if bad_run >= 0:
            t = int(np.searchsorted(r.ptr, bad_run, side="right") - 1)
            raise _Violation(f"step {step[t]}: rank {s.src[t]} sends the run of {r.count[bad_run]} blocks from "
                             f"{r.first[bad_run]} by {r.stride[bad_run]}, not all blocks (0..{b - 1})")
        if t >= 0:
            raise _Violation(f"step {step[t]}: rank {s.src[t]} sends block {block} twice in one transfer")
    if not info.reduction and (s.op == REDUCE).any():
        t = int(np.argmax(s.op == REDUCE))
        raise _Violation(f"step {step[t]}: a reduce transfer in {s.collective}, which reduces nothing")


# ----- the replays ----------------------------------------------------------------------------

START = {"allgather": FROM_OWN_RANK, "gather": FROM_OWN_RANK, "broadcast": FROM_ROOT, "scatter": FROM_ROOT,
         "p2p": FROM_ROOT, "alltoall": FROM_SOURCE, "alltoallv": FROM_SOURCE}
END = {"allgather": AT_EVERY_RANK, "broadcast": AT_EVERY_RANK, "allreduce": AT_EVERY_RANK, "scatter": AT_OWN_RANK,
       "alltoall": AT_OWN_RANK, "alltoallv": AT_OWN_RANK, "reduce-scatter": AT_OWN_RANK, "gather": AT_ROOT,
       "reduce": AT_ROOT, "p2p": AT_PEER}


GROUP_BLOCKS = 1 << 18  # blocks replayed together when they are runs: the group's counts stay in cache


def _groups(s: Schedule):
    """(first block, offsets, transfers) of the blocks grouped by block (synth.collectives.replay):
    all at once when they are listed; when they are runs (whose block sends may not fit memory at
    once), GROUP_BLOCKS consecutive blocks at a time, each group from the runs that touch it."""
    if s.runs is None:
        yield (0, *group_by_block(s.block_ptr, s.block_ids, s.blocks))
        return
    r = s.runs
    ptr, runs, run_transfer = _buckets(s)
    for g in range(len(ptr) - 1):
        lo, hi = g * GROUP_BLOCKS, min(s.blocks, (g + 1) * GROUP_BLOCKS)
        yield (lo, *group_runs(runs[ptr[g]:ptr[g + 1]], run_transfer, r.first, r.stride, r.count, lo, hi))


def _buckets(s: Schedule):
    """(ptr, runs, run_transfer): the runs touching each group of GROUP_BLOCKS blocks, and the
    transfer of every run."""
    r = s.runs
    ptr, runs = bucket_runs(r.first, r.stride, r.count, GROUP_BLOCKS, -(-s.blocks // GROUP_BLOCKS))
    return ptr, runs, _run_transfers(s)


def _run_transfers(s: Schedule) -> np.ndarray:
    """The transfer of every run."""
    return np.repeat(np.arange(s.num_transfers, dtype=np.int32), np.diff(s.runs.ptr))


def _carrying(s: Schedule, block: int) -> np.ndarray:
    """The transfers that carry one block, in order."""
    if s.runs is not None:
        r = s.runs
        every = np.arange(len(r.first), dtype=np.int32)
        return group_runs(every, _run_transfers(s), r.first, r.stride, r.count, block, block + 1)[1].astype(np.int64)
    return np.repeat(np.arange(s.num_transfers), np.diff(s.block_ptr))[s.block_ids == block]


def _replay_copies(s: Schedule, only: np.ndarray | None = None) -> None:
    """Which ranks hold which blocks (synth.collectives.replay.replay_copies): the earliest send of a
    block not held is the violation, else the first promised (rank, block) pair not held."""
    b = s.blocks
    bits = max(1, (s.ranks - 1).bit_length())
    if 2 * bits + max(1, s.num_steps.bit_length()) > 63:
        raise SynthError(f"{s.ranks:,} ranks and {s.num_steps:,} steps are more than the replay packs in 63 bits")
    meta = (s.transfer_step() << (2 * bits)) | (s.src << bits) | s.dst
    where = (START[s.collective], -1 if s.root is None else s.root, END[s.collective], -1 if s.peer is None else s.peer)
    if only is not None:  # the listed blocks alone, each a group of one (blocks never interact)
        offsets, transfers = group_by_block(s.block_ptr, s.block_ids, b)
        found = [replay_copies(offsets[k:k + 2], transfers, meta, bits, s.ranks, s.num_steps, *where, int(k), b)
                 for k in np.asarray(only).tolist()]
        sends = [f for f in found if f[0] != NONE]
        send_step, send_key = min(((f[0], f[1]) for f in sends), default=(NONE, NONE))
        missing = sum(f[2] for f in found)
        missing_key = min((f[3] for f in found if f[2]), default=NONE)
    elif s.runs is None:
        offsets, transfers = group_by_block(s.block_ptr, s.block_ids, b)
        send_step, send_key, missing, missing_key = replay_copies(offsets, transfers, meta, bits, s.ranks, s.num_steps,
                                                                  *where, 0, b)
    else:
        r = s.runs
        bucket_ptr, bucket, run_transfer = _buckets(s)
        send_step, send_key, missing, missing_key = replay_copies_of_runs(
            bucket_ptr, bucket, run_transfer, r.first, r.stride, r.count, GROUP_BLOCKS, meta, bits, s.ranks,
            s.num_steps, *where, b)
    if send_step != NONE:
        raise _Violation(f"step {send_step}: rank {send_key // b} sends block {send_key % b}, which it does not hold "
                         f"at the start of the step")
    if missing:
        raise _Violation(f"rank {missing_key // b} ends without block {missing_key % b} ({s.collective}: "
                         f"{missing} promised (rank, block) pairs missing)")


def _rank_keys(p: int) -> np.ndarray:
    """One fixed pseudo-random 64-bit key per rank (splitmix64 of the rank)."""
    with np.errstate(over="ignore"):
        z = np.arange(1, p + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _promised_ranks(s: Schedule, block: int) -> list[int]:
    """The ranks whose partial of `block` the collective promises reduced over all ranks."""
    if s.collective == "allreduce":
        return list(range(s.ranks))
    if s.collective == "reduce-scatter":
        return [block % s.ranks]
    return [s.root]  # reduce


def _replay_reduction(s: Schedule, only: np.ndarray | None = None) -> None:
    """Counts and fingerprints of the contributions (synth.collectives.replay.replay_reductions).
    The blocks whose first detection comes earliest decide: a copy clashing with another write
    is named as found; a count above P or a wrong partial at the end is named by an exact replay
    with sets of ranks (which finds the earliest violation of those blocks)."""
    step = s.transfer_step()
    keys, end, root = _rank_keys(s.ranks), END[s.collective], -1 if s.root is None else s.root
    groups = list(_groups(s)) if s.runs is None else _groups(s)  # listed: one group, kept for the exact replays
    if only is not None:  # the listed blocks alone, each a group of one; the others found right (as if unsent)
        _, offsets, transfers = groups[0]
        found = [replay_reductions(offsets[k:k + 2], transfers, s.src, s.dst, step, s.op, s.ranks, s.num_steps, keys,
                                   end, root, int(k)) for k in np.asarray(only).tolist()]
        picked = np.asarray(only, dtype=np.int64)
        found_step, how, rank, suspect_step = np.full(s.blocks, -1), np.zeros(s.blocks, np.int8), \
            np.zeros(s.blocks, np.int64), np.full(s.blocks, -1)
        for k, array in enumerate((found_step, how, rank, suspect_step)):
            array[picked] = np.concatenate([f[k] for f in found])
    else:
        found = [replay_reductions(offsets, transfers, s.src, s.dst, step, s.op, s.ranks, s.num_steps, keys, end,
                                   root, first_block) for first_block, offsets, transfers in groups]
        found_step, how, rank, suspect_step = (np.concatenate([f[k] for f in found]) for k in range(4))
    if s.runs is None:
        _, offsets, transfers = groups[0]
        carrying = lambda block: transfers[offsets[block]:offsets[block + 1]].astype(np.int64)  # noqa: E731
    else:
        carrying = lambda block: _carrying(s, block)  # noqa: E731
    wrong = found_step >= 0
    # Suspects (a written partial discarded unread) are replayed exactly: a double count that only
    # such a partial held is a violation at the reduce that made it, whatever came later.
    suspects = np.flatnonzero((suspect_step >= 0) & ~wrong)
    suspects = suspects[np.argsort(suspect_step[suspects], kind="stable")].tolist()
    named = []
    for block in suspects:
        violation = _first_violation(s, block, step, carrying, strict=False)
        if violation is not None:
            named.append(violation)
            if len(named) >= NAMED_BLOCKS:
                break
    if not wrong.any():
        if named:
            raise _Violation(min(named)[1])
        return
    earliest = found_step[wrong].min()
    blocks = np.flatnonzero(found_step == earliest)
    clashes = blocks[how[blocks] == CLASH]
    if len(clashes):
        block = int(clashes[0])
        named.append((earliest, f"step {earliest}: rank {rank[block]} receives block {block} by a copy and another "
                                "transfer in one step (which one wins is undefined)"))
    else:
        named += [_first_violation(s, int(block), step, carrying) for block in blocks[:NAMED_BLOCKS].tolist()]
    raise _Violation(min(named)[1])


NAMED_BLOCKS = 16  # wrong blocks replayed exactly to find the earliest violation


def _first_violation(s: Schedule, block: int, step_of: np.ndarray, carrying, strict: bool = True) -> tuple[float, str] | None:
    """Replay one block exactly (sets of ranks): (step, message) of its first violation (the
    number of steps for what is missing at the end); None when it has none (`strict`: it must)."""
    p = s.ranks
    holds: dict[int, frozenset] = {}  # a rank's partial, where it is not its own contribution alone
    own = lambda r: holds.get(r) or frozenset([r])  # noqa: E731
    transfers_of_block = carrying(block)
    steps = step_of[transfers_of_block]
    for step in np.unique(steps).tolist():
        transfers = transfers_of_block[steps == step]
        senders = {int(r): own(int(r)) for r in s.src[transfers].tolist()}  # read before any write
        for t in transfers[np.argsort(s.op[transfers] == REDUCE, kind="stable")].tolist():  # copies first
            src, dst = int(s.src[t]), int(s.dst[t])
            if s.op[t] == COPY:
                holds[dst] = senders[src]
                continue
            twice = own(dst) & senders[src]
            if twice:
                shown = ", ".join(map(str, sorted(twice)[:5])) + (", ..." if len(twice) > 5 else "")
                return step, (f"step {step}: rank {dst} reduces block {block} from rank {src}: the contributions of "
                              f"rank{'s' if len(twice) > 1 else ''} {shown} counted twice")
            holds[dst] = own(dst) | senders[src]
    for rank in _promised_ranks(s, block):
        if len(own(rank)) == p:
            continue
        missing = sorted(set(range(p)) - own(rank))
        shown = ", ".join(map(str, missing[:5])) + (", ..." if len(missing) > 5 else "")
        return s.num_steps, (f"rank {rank} ends with block {block} reduced over {p - len(missing)} of {p} ranks: "
                             f"missing rank{'s' if len(missing) > 1 else ''} {shown}")
    if not strict:
        return None
    raise AssertionError(f"block {block}: the fingerprints disagree with the exact replay")
