"""TuNA ([Fan24]): tunable-radix non-uniform all-to-all(v), and its hierarchical
variants. Digest: ../shared/spec/tuna-alltoallv.md.

tuna (radix r, any P): the block from s to d has offset i = d - s mod P, written in base r with
w = ceil(log_r P) digits. Round (x, z), 0 <= x < w, 1 <= z < r, exists iff z r^x < P; rounds run x
outer, z inner (K of them). In round (x, z) every rank q forwards, as one message to q + z r^x, every
block it holds whose offset has digit x equal to z (after the rounds of the lower digits such a
block sits at s + (i mod r^x)). One step per round; a round whose messages carry more than one
block is preceded by an exchange of the blocks' sizes (priced, not a separate step: `size_exchange`).
A round of one block per rank sends it without one: that block is its sender's own (its offset z r^x
has one nonzero digit), it goes straight to its destination, whose receive count names its size, as
the authors' implementation of Fan24 does (it exchanges metadata only when a round's count n(x, z)
exceeds 1). r = 2 is the two-phase non-uniform Bruck, r >= P - 1 spread-out (P - 1 single-block
rounds, no size exchange). The paper's backward direction (send to p - d) is this one mirrored; the
forward one is its text's and Fig. 2's.

tuna-coalesced and tuna-staggered (TuNA_l^g): Q ranks per node (rank n Q + g on node n), N nodes.
Intra-node: the N nodes run Q-rank TuNAs at once, every message carrying for each of its local
blocks the N blocks to that local rank on every node; afterwards rank (n, g) holds, for every node
j, the Q blocks (n, a) -> (j, g). Inter-node, coalesced: N - 1 rounds, in round k rank (n, g) sends
those Q blocks for node j = n + k to (j, g), `--batch` rounds per step; staggered: the Q (N - 1)
blocks as single-block messages, message m carrying the block of local source a = (g + m div (N-1))
mod Q for node n + 1 + (m mod (N - 1)), `--batch` messages per step. Sizes: an intra-node message
carries N n_Q(x, z) >= N >= 2 blocks, so every intra-node round has its size exchange (as the
authors' code: metadata in every intra-node round); the inter-node messages carry blocks that end at
their receiver, whose receive counts give their sizes: none.
"""

from __future__ import annotations

import numpy as np

from numba import njit

from synth.core.interrupt import stoppable

from synth.collectives.algorithms import Algorithm, Request
from synth.collectives.schedule import BlockRuns


def rounds(p: int, r: int) -> list[tuple[int, int]]:
    """(x, z) of every round, x outer."""
    out, x = [], 0
    while r ** x < p:
        out.extend((x, z) for z in range(1, r) if z * r ** x < p)
        x += 1
    return out


def round_offsets(p: int, r: int, x: int, z: int) -> np.ndarray:
    """The offsets 1..P-1 whose base-r digit x is z."""
    offsets = np.arange(1, p)
    return offsets[(offsets // r ** x) % r == z]


def round_blocks(p: int, r: int, x: int, z: int) -> int:
    """n(x, z): the blocks every rank sends in round (x, z), the offsets 1..P-1 with digit x = z
    (Fan24's count, without listing them)."""
    big = r ** x
    return (p // (big * r)) * big + min(big, max(0, p % (big * r) - z * big))


def exchanged_rounds(p: int, r: int) -> np.ndarray | None:
    """The rounds preceded by a size exchange: those of more than one block per rank (None: none)."""
    out = [i for i, (x, z) in enumerate(rounds(p, r)) if round_blocks(p, r, x, z) > 1]
    return np.array(out, dtype=np.int64) if out else None


def generate_tuna(request: Request):
    """The schedule with every transfer's blocks as runs (BlockRuns): at P = 16384, r = 128 it sends
    5 x 10^8 blocks, each transfer's one or two arithmetic runs."""
    p, r = request.ranks, request.radix
    builder = request.builder("tuna")
    xs, zs = (np.array(v, dtype=np.int64) for v in zip(*rounds(p, r))) if p > 1 else (np.zeros(0, np.int64),) * 2
    src, dst, run_ptr, first, stride, count = _tuna_runs(p, r, xs, zs)
    steps = len(xs)
    return builder.build_runs(np.arange(steps + 1) * p, src, dst, np.zeros(len(src), dtype=np.int8),
                              BlockRuns(run_ptr, first, stride, count), exchanged_rounds(p, r))


@njit(cache=True, nogil=True)
def _rank_runs(q, p, big, rr, z, first, stride, count, k, fill):
    """Rank q's runs in round (x, z) with R = r^x = `big` and R r = `rr`, written from index k when
    `fill` (else only counted); returns the next index. The offsets o = L + z R + H R r < P: the
    block s -> d held at q has s = q - L, d = q + z R + H R r (mod P), so for a fixed H the blocks
    run over s with stride P, for a fixed L over d with stride R r, each run split where it wraps
    around P. The longer of the two is the run; a transfer's runs are sorted by their first block
    (then they rise, as the replay's structure check prefers, unless columns interleave)."""
    start = k
    heights = (p - 1 - z * big) // rr + 1  # H = 0 .. heights-1 exist for L = 0
    if big >= heights:
        for h in range(heights):
            d = (q + z * big + h * rr) % p
            end = min(big, p - z * big - h * rr)  # L = 0 .. end-1: s = q, q - 1, ..., q - end + 1 (mod P)
            straight = min(end, q + 1)  # those with q - L >= 0
            if straight > 0:
                if fill:
                    first[k], stride[k], count[k] = (q - straight + 1) * p + d, p, straight
                k += 1
            if end > straight:
                if fill:
                    first[k], stride[k], count[k] = (q - end + 1 + p) * p + d, p, end - straight
                k += 1
    else:
        for low in range(big):
            n = (p - 1 - low - z * big) // rr + 1 if low + z * big <= p - 1 else 0
            if n <= 0:
                continue
            s = (q - low) % p
            base = (q + z * big) % p
            before = min(n, (p - base + rr - 1) // rr)  # H with base + H R r < P
            if fill:
                first[k], stride[k], count[k] = s * p + base, rr, before
            k += 1
            if n > before:
                if fill:
                    first[k], stride[k], count[k] = s * p + base + before * rr - p, rr, n - before
                k += 1
    if fill:
        for i in range(start + 1, k):  # insertion sort by first block
            f, g, c = first[i], stride[i], count[i]
            j = i - 1
            while j >= start and first[j] > f:
                first[j + 1], stride[j + 1], count[j + 1] = first[j], stride[j], count[j]
                j -= 1
            first[j + 1], stride[j + 1], count[j + 1] = f, g, c
    return k


@stoppable
@njit(cache=True, nogil=True)
def _tuna_runs(p, r, xs, zs):
    """(src, dst, run_ptr, first, stride, count) of every round (x, z), rank after rank."""
    transfers = len(xs) * p
    src = np.empty(transfers, dtype=np.int64)
    dst = np.empty(transfers, dtype=np.int64)
    run_ptr = np.zeros(transfers + 1, dtype=np.int64)
    none = np.zeros(0, dtype=np.int64)
    for i in range(len(xs)):
        big = r ** xs[i]
        for q in range(p):
            t = i * p + q
            src[t], dst[t] = q, (q + zs[i] * big) % p
            run_ptr[t + 1] = run_ptr[t] + _rank_runs(q, p, big, big * r, zs[i], none, none, none, 0, False)
    first = np.empty(run_ptr[transfers], dtype=np.int64)
    stride = np.empty(run_ptr[transfers], dtype=np.int64)
    count = np.empty(run_ptr[transfers], dtype=np.int64)
    for i in range(len(xs)):
        big = r ** xs[i]
        for q in range(p):
            _rank_runs(q, p, big, big * r, zs[i], first, stride, count, run_ptr[i * p + q], True)
    return src, dst, run_ptr, first, stride, count


def _nodes(request: Request) -> tuple[int, int]:
    q = request.ranks_per_node
    return q, request.ranks // q


def _intra(request: Request, builder) -> None:
    q, nodes = _nodes(request)
    p = request.ranks
    j = np.arange(nodes)
    members = np.arange(p).reshape(nodes, q)
    # one TuNA over local positions, every node at once: member (n, a) -> (n, g) carries blocks (n, a) -> (j, g)
    local = np.arange(q)
    for x, z in rounds(q, request.radix):
        o = round_offsets(q, request.radix, x, z)
        a = (local[:, None] - (o % request.radix ** x)[None, :]) % q  # local source of each block held
        g = (a + o[None, :]) % q  # local destination
        src = members  # (nodes, q)
        dst = members[:, (local + z * request.radix ** x) % q]
        # block ids: sender (n, a) -> receiver (j, g) for every node j
        sender = np.arange(nodes)[:, None, None, None] * q + a[None, :, :, None]
        receiver = j[None, None, None, :] * q + g[None, :, :, None]
        ids = sender * p + receiver  # (nodes, q, len(o), nodes)
        builder.add_step(src.ravel(), dst.ravel(), ids.reshape(nodes * q, -1), size_exchange=nodes * len(o) > 1)


def _hierarchical(request: Request, name: str):
    """The builder with the intra-node TuNA added, and (Q, N, P, node of every rank, its local rank, batch)."""
    q, nodes = _nodes(request)
    builder = request.builder(name)
    if q > 1:
        _intra(request, builder)
    n, g = np.divmod(np.arange(request.ranks), q)
    return builder, q, nodes, request.ranks, n, g, request.batch or 1


def generate_coalesced(request: Request):
    builder, q, nodes, p, n, g, batch = _hierarchical(request, "tuna-coalesced")
    a = np.arange(q)
    for first in range(1, nodes, batch):
        ks = range(first, min(first + batch, nodes))
        src = np.concatenate([np.arange(p) for _ in ks])
        dst = np.concatenate([((n + k) % nodes) * q + g for k in ks])
        ids = np.concatenate([(n[:, None] * q + a[None, :]) * p + (((n + k) % nodes) * q + g)[:, None] for k in ks])
        builder.add_step(src, dst, ids)
    return builder.build()


def generate_staggered(request: Request):
    builder, q, nodes, p, n, g, batch = _hierarchical(request, "tuna-staggered")
    total = q * (nodes - 1)
    for first in range(0, total, batch):
        ms = np.arange(first, min(first + batch, total))
        j = (n[None, :] + 1 + (ms % (nodes - 1))[:, None]) % nodes  # (messages, p)
        a = (g[None, :] + (ms // (nodes - 1))[:, None]) % q
        src = np.tile(np.arange(p), len(ms))
        dst = (j * q + g[None, :]).ravel()
        ids = ((n[None, :] * q + a) * p + (j * q + g[None, :])).ravel()
        builder.add_step(src, dst, ids[:, None])
    return builder.build()


def _refusal(request: Request) -> str | None:
    if request.radix is None or request.radix < 2:
        return "TuNA needs --radix R, at least 2"
    return None


def _hierarchical_refusal(request: Request) -> str | None:
    q = request.ranks_per_node
    if request.ranks % q:
        return f"{request.ranks} ranks do not fill nodes of {q}"
    if q > 1 and (request.radix is None or request.radix < 2):
        return "the intra-node TuNA needs --radix R, at least 2"
    if request.ranks // q < 2:
        return "hierarchical TuNA needs at least two nodes"
    return None


def _tuna_block_sends(request: Request) -> int:
    p = request.ranks
    return p * sum(len(round_offsets(p, request.radix, x, z)) for x, z in rounds(p, request.radix))


ALGORITHM = (
    Algorithm("tuna", ("alltoall", "alltoallv"), "TuNA, radix r (--radix): K rounds of base-r digits, a size "
              "exchange before each round of several blocks", generate_tuna, _refusal, block_sends=_tuna_block_sends,
              transfers=lambda request: request.ranks * len(rounds(request.ranks, request.radix)), runs=True,
              options=("radix",)),
    Algorithm("tuna-coalesced", ("alltoall", "alltoallv"), "hierarchical TuNA: intra-node TuNA, then N - 1 "
              "inter-node rounds of Q blocks (--batch rounds per step)", generate_coalesced, _hierarchical_refusal,
              options=("radix", "batch")),
    Algorithm("tuna-staggered", ("alltoall", "alltoallv"), "hierarchical TuNA: intra-node TuNA, then Q (N - 1) "
              "single-block inter-node messages (--batch per step)", generate_staggered, _hierarchical_refusal,
              options=("radix", "batch")),
)
