"""The compiled kernels of the symbolic replay (synth.collectives.verify), block by block.

Blocks never interact: what happens to block b depends only on the transfers that carry b. So
the replay first groups the block sends by block (a counting sort that keeps the transfers'
order, which is step order), then replays one block at a time with state over the P ranks only,
reset lazily by stamps. Time is linear in the block sends, memory one int32 per block send plus
O(P + B): a 10^8-send schedule replays in 2-4 s where one sort of its (rank, block)
events took half a minute and several GiB.

numba compiles them (cached next to this file, so only the first run of a fresh checkout pays
the compilation). Inputs must be in range: verify checks the structure before calling them.

A replay of 10^8 block sends is seconds in one compiled call, which no signal reaches: the three
replays release the GIL (nogil) and run under `native` (synth.core.interrupt), so that Ctrl-C or
SIGTERM stops a verify at once (issue 22).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

import synth.core.fork_safe_threads  # noqa: F401 - a fork-safe threading layer before the first launch

from synth.core.interrupt import native, stoppable

# What a copy collective starts from (block b first held by ...) and ends with (held by ...).
FROM_OWN_RANK, FROM_ROOT, FROM_SOURCE = 0, 1, 2  # b mod P; the root; (b mod P^2) div P
AT_EVERY_RANK, AT_OWN_RANK, AT_ROOT, AT_PEER = 0, 1, 2, 3  # every rank; b mod P; the root; the peer

# How a reduction block's replay found it wrong (its first detection).
CLASH, OVERCOUNT, WRONG_AT_END = 1, 2, 3

NONE = np.iinfo(np.int64).max


@stoppable
@njit(cache=True, nogil=True)
def check_block_lists(block_ptr, block_ids, num_blocks):
    """(first entry out of 0..B-1, first entry repeating a block of its transfer), -1 for none.
    Lists in increasing order (as synth's generators write most) repeat nothing: only a transfer
    whose list is not is checked against stamps."""
    seen = np.empty(0, dtype=np.int32)
    for t in range(len(block_ptr) - 1):
        rising = True
        for i in range(block_ptr[t], block_ptr[t + 1]):
            b = block_ids[i]
            if b < 0 or b >= num_blocks:
                return i, -1
            if i > block_ptr[t] and b <= block_ids[i - 1]:
                rising = False
        if rising:
            continue
        if len(seen) == 0:
            seen = np.full(num_blocks, -1, dtype=np.int32)  # transfers are fewer than 2^31
        for i in range(block_ptr[t], block_ptr[t + 1]):
            b = block_ids[i]
            if seen[b] == t:
                return -1, i
            seen[b] = t
    return -1, -1


@stoppable
@njit(cache=True, nogil=True)
def group_by_block(block_ptr, block_ids, num_blocks):
    """(offsets, transfers): the transfers carrying block b are transfers[offsets[b]:offsets[b+1]],
    in the schedule's order (a stable counting sort)."""
    offsets = np.zeros(num_blocks + 2, dtype=np.int64)  # counts at b + 2, then starts at b + 1
    for i in range(len(block_ids)):
        offsets[block_ids[i] + 2] += 1
    for b in range(num_blocks):
        offsets[b + 2] += offsets[b + 1]
    transfers = np.empty(len(block_ids), dtype=np.int32)
    for t in range(len(block_ptr) - 1):  # offsets[b + 1]: block b's next free place, its end at last
        for i in range(block_ptr[t], block_ptr[t + 1]):
            b = block_ids[i]
            transfers[offsets[b + 1]] = t
            offsets[b + 1] += 1
    return offsets[:num_blocks + 1], transfers


@njit(cache=True, nogil=True)
def _replay_copies(offsets, transfers, meta, bits, ranks, num_steps, start, root, end, peer, first_block, num_blocks):
    """Which ranks hold block b, and from which step; every transfer's step, source and destination
    packed in one number (meta: step << 2 bits | src << bits | dst, one memory access). Returns (send_step, send_key, missing,
    missing_key): the earliest send of a block not held at the start of its step (then the
    lowest rank * B + block; NONE when there is none), and the number of promised (rank, block)
    pairs not held at the end with the lowest of their keys. The group is blocks first_block,
    first_block + 1, ... of num_blocks in all (offsets[i] for block first_block + i)."""
    holder = np.full(ranks, -1, dtype=np.int64)  # holder[r] == b: r holds the block being replayed
    since = np.zeros(ranks, dtype=np.int64)  # ... from this step on
    send_step, send_key, missing, missing_key = NONE, NONE, 0, NONE
    for i in range(len(offsets) - 1):
        b = first_block + i
        first = b % ranks if start == FROM_OWN_RANK else root if start == FROM_ROOT else (b % (ranks * ranks)) // ranks
        holder[first] = b
        since[first] = 0
        holders = 1
        bad_step = NONE
        for j in range(offsets[i], offsets[i + 1]):
            m = meta[transfers[j]]
            s = m >> (2 * bits)
            if s > bad_step:
                break  # only this block's earliest step with a violation matters
            r = (m >> bits) & ((1 << bits) - 1)
            if holder[r] != b or since[r] > s:
                bad_step = s
                key = r * num_blocks + b
                if s < send_step or s == send_step and key < send_key:
                    send_step, send_key = s, key
                continue
            q = m & ((1 << bits) - 1)
            if holder[q] != b:
                holder[q] = b
                since[q] = s + 1
                holders += 1
        if end == AT_EVERY_RANK:
            if holders < ranks:
                missing += ranks - holders
                for r in range(ranks):
                    if holder[r] != b:
                        missing_key = min(missing_key, r * num_blocks + b)
                        break
            continue
        last = b % ranks if end == AT_OWN_RANK else root if end == AT_ROOT else peer
        if holder[last] != b:
            missing += 1
            missing_key = min(missing_key, last * num_blocks + b)
    return send_step, send_key, missing, missing_key


@njit(cache=True, nogil=True)
def _replay_reductions(offsets, transfers, src, dst, step, op, ranks, num_steps, keys, end, root, first_block):
    """Which contributions every rank's partial of block b holds: their number and fingerprint
    (the sum of the contributors' 64-bit keys, modulo 2^64). Within a step every sender's partial
    is read before any receiver's changes; `copy` (op 0) replaces the receiver's partial, `reduce`
    (op 1) adds to it, and a partial receiving a copy may receive nothing else in that step.

    Counts and fingerprints judge what reaches a promised partial. What never does is caught by
    its discard: a partial written by a transfer and overwritten by a copy before anyone read it,
    or left unread at a rank the collective promises nothing, may have held a contribution counted
    twice that nothing downstream shows (every partial a double count flows into holds it too, so
    one that is never discarded this way reaches a promised partial). Such a block is a suspect:
    verify replays it exactly.

    Returns per block of the group (blocks first_block, first_block + 1, ...; offsets[i] for block
    first_block + i) (detected step, how, rank, suspect step): the step of its first detected
    violation (-1: none; num_steps: wrong at the end), CLASH / OVERCOUNT / WRONG_AT_END, the rank,
    and the step of its first discard of an unread written partial (-1: none; num_steps: at the
    end)."""
    num_blocks = len(offsets) - 1
    found_step = np.full(num_blocks, -1, dtype=np.int64)
    found_how = np.zeros(num_blocks, dtype=np.int8)
    found_rank = np.zeros(num_blocks, dtype=np.int64)
    suspect_step = np.full(num_blocks, -1, dtype=np.int64)
    total = np.uint64(0)
    for r in range(ranks):
        total += keys[r]
    touched = np.full(ranks, -1, dtype=np.int64)  # touched[r] == b: fingerprint[r], count[r] are block b's
    fingerprint = np.zeros(ranks, dtype=np.uint64)
    count = np.zeros(ranks, dtype=np.int64)
    unread = np.zeros(ranks, dtype=np.bool_)  # r's partial was written (block touched[r]) and not read since
    order = np.empty(ranks, dtype=np.int64)  # the ranks block b touched, in order (the first `n_touched`)
    written = np.full(ranks, -1, dtype=np.int64)  # the (block, step) that last wrote r's partial, and how
    written_by = np.zeros(ranks, dtype=np.int8)
    longest = 0
    for i in range(num_blocks):
        longest = max(longest, offsets[i + 1] - offsets[i])
    read_fp = np.zeros(longest, dtype=np.uint64)
    read_count = np.zeros(longest, dtype=np.int64)
    for i in range(num_blocks):
        b = first_block + i  # stamps and the promised rank use the block's own number
        lo, hi = offsets[i], offsets[i + 1]
        j = lo
        n_touched = 0
        while j < hi and found_step[i] < 0:
            s = step[transfers[j]]
            k = j
            while k < hi and step[transfers[k]] == s:  # the block's transfers of step s: reads first
                r = src[transfers[k]]
                if touched[r] == b:
                    read_fp[k - lo], read_count[k - lo] = fingerprint[r], count[r]
                    unread[r] = False
                else:
                    read_fp[k - lo], read_count[k - lo] = keys[r], 1
                k += 1
            stamp = b * (num_steps + 1) + s
            over = -1  # a rank counting more than P contributions (reported if the step has no clash)
            for e in range(j, k):
                t = transfers[e]
                q = dst[t]
                if touched[q] != b:
                    touched[q] = b
                    fingerprint[q], count[q] = keys[q], 1
                    unread[q] = False
                    order[n_touched] = q
                    n_touched += 1
                if written[q] == stamp and (op[t] == 0 or written_by[q] == 0):
                    found_step[i], found_how[i], found_rank[i] = s, CLASH, q
                    break
                written[q], written_by[q] = stamp, op[t]
                if op[t] == 0:
                    if unread[q] and suspect_step[i] < 0:
                        suspect_step[i] = s  # an unread partial overwritten
                    fingerprint[q], count[q] = read_fp[e - lo], read_count[e - lo]
                else:
                    fingerprint[q] += read_fp[e - lo]
                    count[q] += read_count[e - lo]
                    if count[q] > ranks and over < 0:
                        over = q
                unread[q] = True
            if found_step[i] < 0 and over >= 0:
                found_step[i], found_how[i], found_rank[i] = s, OVERCOUNT, over
            j = k
        if found_step[i] >= 0:
            continue
        if suspect_step[i] < 0 and end != AT_EVERY_RANK:
            promised = b % ranks if end == AT_OWN_RANK else root
            for m in range(n_touched):
                if unread[order[m]] and order[m] != promised:
                    suspect_step[i] = num_steps  # an unread partial left where nothing is promised
                    break
        for k in range(ranks if end == AT_EVERY_RANK else 1):
            r = k if end == AT_EVERY_RANK else b % ranks if end == AT_OWN_RANK else root
            fp, c = (fingerprint[r], count[r]) if touched[r] == b else (keys[r], 1)
            if c != ranks or fp != total:
                found_step[i], found_how[i], found_rank[i] = num_steps, WRONG_AT_END, r
                break
    return found_step, found_how, found_rank, suspect_step


@stoppable
@njit(cache=True, nogil=True)
def check_runs(ptr, first, stride, count, num_blocks):
    """check_block_lists for blocks as runs: (first run with a block out of 0..B-1 or with no
    block, -1, -1), or (-1, first transfer repeating a block, that block), or (-1, -1, -1). A
    transfer whose runs rise (positive strides, each run after the last block of the one before)
    repeats nothing; another one's blocks are sorted to see."""
    for t in range(len(ptr) - 1):
        rising = True
        for k in range(ptr[t], ptr[t + 1]):
            if count[k] < 1 or first[k] < 0 or first[k] >= num_blocks:
                return k, -1, -1
            # the last block in range, without computing it (first + stride (count - 1) may overflow)
            if stride[k] > 0 and count[k] - 1 > (num_blocks - 1 - first[k]) // stride[k] or \
                    stride[k] < 0 and count[k] - 1 > first[k] // -stride[k]:
                return k, -1, -1
            if count[k] > 1 and stride[k] == 0:  # its one block, count times (2^40 of them listed would not fit)
                return -1, t, first[k]
            if count[k] > 1 and stride[k] <= 0 or k > ptr[t] and first[k] <= first[k - 1] + stride[k - 1] * (count[k - 1] - 1):
                rising = False
        if rising:
            continue
        size = 0
        for k in range(ptr[t], ptr[t + 1]):
            size += count[k]
        # more blocks than B repeat one (every block is in range): the first B + 1 of them show which
        size = min(size, num_blocks + 1)
        blocks = np.empty(size, dtype=np.int64)
        n = 0
        for k in range(ptr[t], ptr[t + 1]):
            for j in range(count[k]):
                if n == size:
                    break
                blocks[n] = first[k] + stride[k] * j
                n += 1
        blocks.sort()
        for j in range(1, size):
            if blocks[j] == blocks[j - 1]:
                return -1, t, blocks[j]
    return -1, -1, -1


@njit(cache=True, nogil=True)
def _in_run(first, stride, count, lo, hi):
    """The indices j (a range [j0, j1)) of a run's blocks first + stride j within [lo, hi)."""
    if stride == 0 or count == 1:
        return (0, 1) if lo <= first < hi else (0, 0)
    if stride > 0:
        j0 = max(0, -((first - lo) // stride)) if first < lo else 0
        j1 = min(count, (hi - 1 - first) // stride + 1) if hi - 1 >= first else 0
    else:
        j0 = max(0, (first - (hi - 1) + (-stride) - 1) // (-stride)) if first >= hi else 0
        j1 = min(count, (first - lo) // (-stride) + 1) if first >= lo else 0
    return j0, max(j0, j1)


@njit(cache=True, nogil=True)
def _touched_group(first, stride, count, width, i):
    """The i-th group a run touches, or -1 past the last: a run whose stride is below the width
    touches every group from its lowest block's to its highest's, a longer stride those of its
    blocks (each in its own group)."""
    last = first + stride * (count - 1)
    if abs(stride) < width or count == 1:
        g = min(first, last) // width + i
        return g if g <= max(first, last) // width else -1
    return (first + stride * i) // width if i < count else -1


@stoppable
@njit(cache=True, nogil=True)
def bucket_runs(first, stride, count, width, groups):
    """(ptr, runs): the runs that hold blocks of group g (blocks g width .. (g + 1) width - 1) are
    runs[ptr[g]:ptr[g+1]], in increasing order."""
    ptr = np.zeros(groups + 1, dtype=np.int64)
    for k in range(len(first)):
        i = 0
        g = _touched_group(first[k], stride[k], count[k], width, 0)
        while g >= 0:
            ptr[g + 1] += 1
            i += 1
            g = _touched_group(first[k], stride[k], count[k], width, i)
    for g in range(groups):
        ptr[g + 1] += ptr[g]
    runs = np.empty(ptr[groups], dtype=np.int32)
    fill = ptr[:groups].copy()
    for k in range(len(first)):
        i = 0
        g = _touched_group(first[k], stride[k], count[k], width, 0)
        while g >= 0:
            runs[fill[g]] = k
            fill[g] += 1
            i += 1
            g = _touched_group(first[k], stride[k], count[k], width, i)
    return ptr, runs


@njit(cache=True, nogil=True)
def _group_runs(runs, run_transfer, first, stride, count, lo, hi):
    """group_by_block for blocks lo..hi-1 of a schedule whose blocks are runs, from the runs that
    may hold them (in increasing order: every block's transfers come in the schedule's order):
    (offsets of the group's blocks, transfers)."""
    offsets = np.zeros(hi - lo + 2, dtype=np.int64)
    for k in runs:
        j0, j1 = _in_run(first[k], stride[k], count[k], lo, hi)
        for j in range(j0, j1):
            offsets[first[k] + stride[k] * j - lo + 2] += 1
    for b in range(hi - lo):
        offsets[b + 2] += offsets[b + 1]
    transfers = np.empty(offsets[hi - lo + 1], dtype=np.int32)
    for k in runs:
        j0, j1 = _in_run(first[k], stride[k], count[k], lo, hi)
        t = run_transfer[k]
        for j in range(j0, j1):
            b = first[k] + stride[k] * j - lo
            transfers[offsets[b + 1]] = t
            offsets[b + 1] += 1
    return offsets[:hi - lo + 1], transfers


@njit(cache=True, parallel=True, nogil=True)
def _replay_copies_of_runs(bucket_ptr, bucket, run_transfer, first, stride, count, width, meta, bits, ranks, num_steps,
                          start, root, end, peer, num_blocks):
    """replay_copies over every group of `width` blocks of a schedule whose blocks are runs (the
    runs of group g are bucket[bucket_ptr[g]:bucket_ptr[g+1]]), the groups on all cores at once.
    Returns replay_copies' four numbers, combined over the groups."""
    groups = len(bucket_ptr) - 1
    found = np.empty((groups, 4), dtype=np.int64)
    for g in prange(groups):
        lo, hi = g * width, min(num_blocks, (g + 1) * width)
        offsets, transfers = _group_runs(bucket[bucket_ptr[g]:bucket_ptr[g + 1]], run_transfer, first, stride, count,
                                        lo, hi)
        found[g, 0], found[g, 1], found[g, 2], found[g, 3] = _replay_copies(
            offsets, transfers, meta, bits, ranks, num_steps, start, root, end, peer, lo, num_blocks)
    send_step, send_key, missing, missing_key = NONE, NONE, 0, NONE
    for g in range(groups):
        if found[g, 0] < send_step or found[g, 0] == send_step and found[g, 1] < send_key:
            send_step, send_key = found[g, 0], found[g, 1]
        missing += found[g, 2]
        missing_key = min(missing_key, found[g, 3])
    return send_step, send_key, missing, missing_key


def replay_copies(*args):
    return native(lambda: _replay_copies(*args))


def replay_reductions(*args):
    return native(lambda: _replay_reductions(*args))


def replay_copies_of_runs(*args):
    return native(lambda: _replay_copies_of_runs(*args))


group_runs = stoppable(_group_runs)
replay_copies.__doc__ = _replay_copies.__doc__
replay_reductions.__doc__ = _replay_reductions.__doc__
replay_copies_of_runs.__doc__ = _replay_copies_of_runs.__doc__
