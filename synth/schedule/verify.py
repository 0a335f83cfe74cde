"""Symbolic replay of a schedule (`synth verify`): does it move the data the collective promises?

Structure first: ranks and blocks in range, no transfer to oneself, no block twice in a transfer,
no `reduce` in a collective that reduces nothing, the block count the collective fixes.

Copy collectives (which ranks hold which blocks): a pair (rank, block) is held from step 0 if
the collective starts it there, else from the step after its first receipt. Every send of step s
needs its pair held by step s; at the end every pair the collective promises must be held. Both
are one sort over (rank, block) keys, not a loop over transfers.

Reductions (which contributions a partial block holds): every rank starts with its own
contribution to every block. The replay runs step by step on two arrays over (rank, block): the
number of contributions and their fingerprint, the sum of one random 64-bit key per rank
(modulo 2^64). Within a step every sender's partial is read before any receiver's changes
(bulk-synchronous); `copy` replaces the receiver's partial, `reduce` adds to it. A count above P
is a contribution counted twice; at the end every promised partial must count P contributions
with the fingerprint of all P. Counts are exact, so a double count that is not offset by a
missing contribution is caught exactly; one that is (P contributions, the wrong ones) is caught by
the fingerprint, which misses it with probability 2^-64. The first violation is then named by an
exact replay of that one block with sets of ranks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.schedule.schedule import COPY, REDUCE, Schedule, collective

MAX_REDUCTION_STATE = 1 << 26  # (rank, block) partials replayed at once: 12 bytes each


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


def verify(schedule: Schedule) -> VerifyReport:
    report = VerifyReport(None, schedule.num_steps, schedule.num_transfers, len(schedule.block_ids))
    try:
        _check_structure(schedule)
        if collective(schedule.collective).reduction:
            _replay_reduction(schedule)
        else:
            _replay_copies(schedule)
    except _Violation as exc:
        report.violation = str(exc)
    return report


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
    ids = s.block_ids
    bad = (ids < 0) | (ids >= b)
    if bad.any():
        j = int(np.argmax(bad))
        t = _transfer_of(s, j)
        raise _Violation(f"step {step[t]}: rank {s.src[t]} sends block {ids[j]}, not a block (0..{b - 1})")
    # duplicates can only sit within one transfer; blocks listed in increasing order (as synth's
    # generators list them) show it without a sort
    rising = np.diff(ids) > 0 if len(ids) > 1 else np.zeros(0, dtype=bool)
    rising[s.block_ptr[1:-1][(s.block_ptr[1:-1] > 0) & (s.block_ptr[1:-1] < len(ids))] - 1] = True  # transfer boundaries
    if not rising.all():
        keys = s.block_transfer() * b + ids
        ordered = np.sort(keys)
        if (ordered[1:] == ordered[:-1]).any():  # (only then the slower search for the first one)
            order = np.argsort(keys, kind="stable")
            j = int(order[np.argmax(keys[order][1:] == keys[order][:-1]) + 1])
            t = _transfer_of(s, j)
            raise _Violation(f"step {step[t]}: rank {s.src[t]} sends block {ids[j]} twice in one transfer")
    if not info.reduction and (s.op == REDUCE).any():
        t = int(np.argmax(s.op == REDUCE))
        raise _Violation(f"step {step[t]}: a reduce transfer in {s.collective}, which reduces nothing")


# ----- copy collectives -------------------------------------------------------------------------

def _initial_pairs(s: Schedule) -> np.ndarray:
    """(rank * B + block) keys of what the ranks hold before step 0. A collective of one block per
    rank (or rank pair) may have several parts: block b then plays the role of b mod P (mod P^2)."""
    p, b = s.ranks, s.blocks
    block = np.arange(b, dtype=np.int64)
    if s.collective in ("allgather", "gather"):
        return (block % p) * b + block
    if s.collective in ("broadcast", "scatter", "p2p"):
        return s.root * b + block
    if s.collective in ("alltoall", "alltoallv"):
        return ((block % (p * p)) // p) * b + block
    raise AssertionError(s.collective)


def _final_pairs(s: Schedule) -> np.ndarray:
    """(rank * B + block) keys the collective promises at the end."""
    p, b = s.ranks, s.blocks
    block = np.arange(b, dtype=np.int64)
    if s.collective in ("allgather", "broadcast"):
        return np.arange(p * b, dtype=np.int64)
    if s.collective == "scatter":
        return (block % p) * b + block
    if s.collective == "gather":
        return s.root * b + block
    if s.collective == "p2p":
        return s.peer * b + block
    if s.collective in ("alltoall", "alltoallv"):
        return (block % p) * b + block
    raise AssertionError(s.collective)


HELD, SEND, FINAL = 0, 1, 2  # event kinds of the copy replay, in their order at equal times


def _replay_copies(s: Schedule) -> None:
    """One sort decides it. Events are (rank, block) pairs with a time and a kind: held from step 0
    (what the collective starts with) or from the step after a receipt, sent in a step, promised at
    the end. Sorted by pair, then time, then kind, every pair's first event must be a `held` one:
    a send (or a promise) ahead of every holding is the violation."""
    b, steps = s.blocks, s.num_steps
    time_bits = max(1, (steps + 1).bit_length())
    owner = s.block_transfer()
    step = s.transfer_step()[owner]

    def encode(pairs, time, kind) -> np.ndarray:
        return ((np.asarray(pairs, dtype=np.int64) << time_bits | time) << 2) | kind

    events = np.concatenate([
        encode(_initial_pairs(s), 0, HELD),
        encode(s.dst[owner] * b + s.block_ids, step + 1, HELD),
        encode(s.src[owner] * b + s.block_ids, step, SEND),
        encode(_final_pairs(s), steps, FINAL),
    ])
    del owner, step
    events.sort()
    pair = events >> (time_bits + 2)
    starts = np.flatnonzero(np.concatenate([[True], pair[1:] != pair[:-1]])) if len(events) else np.zeros(0, dtype=np.int64)
    first = events[starts]
    bad = first & 3 != HELD
    if not bad.any():
        return
    first, key = first[bad], pair[starts[bad]]
    kind, when = first & 3, (first >> 2) & ((1 << time_bits) - 1)
    sends = kind == SEND
    if sends.any():
        j = int(np.flatnonzero(sends)[np.argmin(when[sends])])  # the earliest step, then the lowest (rank, block)
        raise _Violation(f"step {when[j]}: rank {key[j] // b} sends block {key[j] % b}, which it does not hold "
                         f"at the start of the step")
    raise _Violation(f"rank {key[0] // b} ends without block {key[0] % b} ({s.collective}: "
                     f"{len(key)} promised (rank, block) pairs missing)")


# ----- reductions ------------------------------------------------------------------------------

def _rank_keys(p: int) -> np.ndarray:
    """One fixed pseudo-random 64-bit key per rank (splitmix64 of the rank)."""
    with np.errstate(over="ignore"):
        z = np.arange(1, p + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _final_partials(s: Schedule) -> np.ndarray:
    p, b = s.ranks, s.blocks
    if s.collective == "allreduce":
        return np.arange(p * b, dtype=np.int64)
    if s.collective == "reduce-scatter":
        block = np.arange(b, dtype=np.int64)
        return (block % p) * b + block
    return s.root * b + np.arange(b, dtype=np.int64)  # reduce


def _replay_reduction(s: Schedule) -> None:
    p, b = s.ranks, s.blocks
    if p * b > MAX_REDUCTION_STATE:
        raise SynthError(f"replaying {p} ranks x {b} blocks of partial reductions needs {p * b:,} states, more than the "
                         f"{MAX_REDUCTION_STATE:,} verified at once")
    keys = _rank_keys(p)
    fingerprint = np.repeat(keys, b)  # flat (rank, block): every rank holds its own contribution
    count = np.ones(p * b, dtype=np.int32)
    last_writer = np.full(p * b, -1, dtype=np.int32)  # scratch: finds a step's repeated targets in O(n)
    entry_ptr = s.block_ptr[s.step_ptr]  # block entries of every step
    with np.errstate(over="ignore"):
        for step in range(s.num_steps):
            lo, hi = entry_ptr[step], entry_ptr[step + 1]
            if lo == hi:
                continue
            first, last = s.step_ptr[step], s.step_ptr[step + 1]
            sizes = np.diff(s.block_ptr[first:last + 1])
            block = s.block_ids[lo:hi]
            source = np.repeat(s.src[first:last] * b, sizes)
            source += block
            target = np.repeat(s.dst[first:last] * b, sizes)
            target += block
            ops = s.op[first:last]
            kind = int(ops[0]) if (ops == ops[0]).all() else None  # a one-kind step needs no per-block masks
            read_fp, read_count = fingerprint[source], count[source]  # all reads before any write
            if kind != REDUCE:
                is_copy = None if kind == COPY else np.repeat(ops, sizes) == COPY
                _copy(fingerprint, count, last_writer, target, read_fp, read_count, is_copy, step, b)
            if kind == COPY:
                continue
            if kind == REDUCE:
                into, add_fp, add_count = target, read_fp, read_count
            else:
                reduce = ~is_copy
                if not reduce.any():
                    continue
                into, add_fp, add_count = target[reduce], read_fp[reduce], read_count[reduce]
            order = np.arange(len(into), dtype=np.int32)
            last_writer[into] = order
            if (last_writer[into] == order).all():  # every partial receives once: plain adds
                fingerprint[into] += add_fp
                count[into] += add_count
            else:
                np.add.at(fingerprint, into, add_fp)
                np.add.at(count, into, add_count)
            over = count[into] > p
            if over.any():
                _raise_first(s, np.unique(into[over] % b))
    total = np.add.reduce(keys, dtype=np.uint64) if p else np.uint64(0)
    final = _final_partials(s)
    wrong = (count[final] != p) | (fingerprint[final] != total)
    if wrong.any():
        _raise_first(s, np.unique(final[wrong] % b))


def _copy(fingerprint, count, last_writer, target, read_fp, read_count, is_copy, step: int, b: int) -> None:
    """The copies of a step (`is_copy` marks them among its block sends; None: all are copies). A
    partial that receives a copy may receive nothing else in the step: a target written again later
    in the step, or overwriting an earlier write, with a copy on either side, is the violation."""
    order = np.arange(len(target), dtype=np.int32)
    last_writer[target] = order
    later = last_writer[target]
    clash = later != order
    if is_copy is not None:
        clash &= is_copy | is_copy[later]
    if clash.any():
        key = int(target[np.argmax(clash)])
        raise _Violation(f"step {step}: rank {key // b} receives block {key % b} by a copy and another "
                         "transfer in one step (which one wins is undefined)")
    if is_copy is None:
        fingerprint[target] = read_fp
        count[target] = read_count
    else:
        fingerprint[target[is_copy]] = read_fp[is_copy]
        count[target[is_copy]] = read_count[is_copy]


NAMED_BLOCKS = 16  # wrong blocks replayed exactly to find the earliest violation


def _raise_first(s: Schedule, blocks: np.ndarray) -> None:
    """The earliest violation among (the first NAMED_BLOCKS of) the wrong blocks."""
    found = [_first_violation(s, int(block)) for block in blocks[:NAMED_BLOCKS].tolist()]
    raise _Violation(min(found)[1])


def _first_violation(s: Schedule, block: int) -> tuple[float, str]:
    """Replay one block exactly (sets of ranks): (step, message) of its first violation (the
    number of steps for what is missing at the end)."""
    p, b = s.ranks, s.blocks
    holds = [frozenset([r]) for r in range(p)]
    owner = s.block_transfer()
    step_of = s.transfer_step()
    entries = np.flatnonzero(s.block_ids == block)
    steps = step_of[owner[entries]]
    for step in np.unique(steps).tolist():
        transfers = owner[entries[steps == step]]
        snapshot = list(holds)
        for t in transfers[np.argsort(s.op[transfers] == REDUCE, kind="stable")].tolist():  # copies first
            src, dst = int(s.src[t]), int(s.dst[t])
            if s.op[t] == COPY:
                holds[dst] = snapshot[src]
                continue
            twice = holds[dst] & snapshot[src]
            if twice:
                shown = ", ".join(map(str, sorted(twice)[:5])) + (", ..." if len(twice) > 5 else "")
                return step, (f"step {step}: rank {dst} reduces block {block} from rank {src}: the contributions of "
                              f"rank{'s' if len(twice) > 1 else ''} {shown} counted twice")
            holds[dst] = holds[dst] | snapshot[src]
    final = _final_partials(s)
    for rank in (final[final % b == block] // b).tolist():
        missing = sorted(set(range(p)) - holds[rank])
        if missing:
            shown = ", ".join(map(str, missing[:5])) + (", ..." if len(missing) > 5 else "")
            return s.num_steps, (f"rank {rank} ends with block {block} reduced over {p - len(missing)} of {p} ranks: "
                                 f"missing rank{'s' if len(missing) > 1 else ''} {shown}")
    raise AssertionError(f"block {block}: the fingerprints disagree with the exact replay")
