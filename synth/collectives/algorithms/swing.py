"""Swing allreduce ([DeSensi24]), on the ranks as a D-dimensional torus d_0 x ... (the
network's grid: a torus or HyperX with one terminal per router; any other network is one ring of
P ranks). Digest: ../shared/spec/swing-allreduce.md.

Peers, eq. (2): rho(s) = sum_{i<=s} (-2)^i = 1, -1, 3, -5, 11, ...; at step s rank r moves along
one dimension omega(s) by rho(sigma(s)), with the sign flipped when its coordinate there is odd
(the paper's text says delta; the signed rho is what pairs the nodes: the digest's erratum).
Dimensions are used round robin from the collective's first one, skipping those that finished
their ceil(log2 d_k) steps.

Multi-port (2D ports per node): the vector is split into 2D parts, one per collective: D plain
collectives (collective c starts at dimension c) and D mirrored ones (the same, offsets negated).
Blocks: part c holds blocks c P .. c P + P - 1, block c P + i ending reduced at rank i after the
reduce-scatter.

swing-b (bandwidth-optimal): reduce-scatter then allgather, L = sum_k ceil(log2 d_k) steps each.
At reduce-scatter step s rank r sends to q = pi(r, s) the blocks of {q} and of every rank q reaches
with steps s+1..L-1 (Reach); the allgather mirrors it (step t uses s = L-1-t and sends back what
arrived at step s). Not a power of two (even): every send set drops r itself and keeps a block only
at its latest step (the digest's rule; the paper's Listing 1 is buggy), so every rank sends P - 1
blocks per collective. Odd P (1-D only): Swing runs on the first P - 1 ranks and rank P - 1 exchanges
its blocks directly: in reduce-scatter step s with the next ceil(m/2) of the m ranks it has not met
yet (all of them in the last step; P = 7: {0, 1, 2}, {3, 4}, {5}, as in the paper's Fig. 3),
in the allgather in the mirrored order.

swing-l (latency-optimal): the same peers, every step the whole part, log2 P steps; it needs every
d_k a power of two (otherwise some rank is reached twice).
"""

from __future__ import annotations

from math import prod

import numpy as np
from numba import njit

from synth.core.interrupt import stoppable

from synth.collectives.algorithms import Algorithm, Request
from synth.collectives.schedule import COPY, REDUCE


def rho(s: int) -> int:
    return (1 - (-2) ** (s + 1)) // 3


def steps_per_dimension(dims: tuple[int, ...]) -> list[int]:
    return [(d - 1).bit_length() for d in dims]


def dimension_order(dims: tuple[int, ...], first: int) -> list[tuple[int, int]]:
    """(dimension, step within it) of every step of a collective starting at dimension `first`."""
    remaining = steps_per_dimension(dims)
    done = [0] * len(dims)
    order, k = [], first
    while sum(remaining):
        if remaining[k]:
            order.append((k, done[k]))
            done[k] += 1
            remaining[k] -= 1
        k = (k + 1) % len(dims)
    return order


def peers(dims: tuple[int, ...], first: int, mirrored: bool) -> np.ndarray:
    """(steps, P): the peer of every rank at every step of one collective."""
    p = prod(dims)
    ranks = np.arange(p)
    stride = np.cumprod((1,) + dims[:-1])
    out = []
    for k, sigma in dimension_order(dims, first):
        coordinate = (ranks // stride[k]) % dims[k]
        offset = np.where(coordinate % 2 == 0, rho(sigma), -rho(sigma)) * (-1 if mirrored else 1)
        out.append(ranks + (((coordinate + offset) % dims[k]) - coordinate) * stride[k])
    return np.array(out, dtype=np.int64).reshape(-1, p)


def send_sets(peer: np.ndarray) -> list[np.ndarray]:
    """Per reduce-scatter step, a (P, P) boolean matrix: row r marks the blocks r sends to its peer
    (the digest's rule: {q} and Reach(q, s+1), without r itself, each block only at its latest
    step; for a power of two the last two rules change nothing)."""
    steps, p = peer.shape
    counts, ids, offsets = send_lists(peer, 0)
    out = []
    for s in range(steps):
        sends = np.zeros((p, p), dtype=bool)
        sends[np.repeat(np.arange(p), counts[s]), ids[offsets[s]:offsets[s + 1]]] = True
        out.append(sends)
    return out


_DE_BRUIJN = np.uint64(0x03F79D71B4CB0A89)
_BIT_OF = np.array([0, 1, 48, 2, 57, 49, 28, 3, 61, 58, 50, 42, 38, 29, 17, 4, 62, 55, 59, 36, 53, 51, 43, 22, 45, 39,
                    33, 30, 24, 18, 12, 5, 63, 47, 56, 27, 60, 41, 37, 16, 54, 35, 52, 21, 44, 32, 23, 11, 46, 26, 40,
                    15, 34, 20, 31, 10, 25, 14, 19, 9, 13, 8, 7, 6], dtype=np.int64)  # (lowest bit x De Bruijn) >> 58


@stoppable
@njit(cache=True, nogil=True)
def send_lists(peer, base):
    """The send sets of send_sets as block lists: (counts (steps, P), ids, offsets) where step s's
    blocks are ids[offsets[s]:offsets[s+1]], rank after rank, each rank's in increasing order and
    plus `base`. Sets of ranks are rows of 64-bit words (P^2 / 8 bytes per matrix)."""
    steps, p = peer.shape
    words = (p + 63) // 64
    one = np.uint64(1)
    reach = np.zeros((p, words), dtype=np.uint64)  # Reach(x, L): x alone
    for x in range(p):
        reach[x, x // 64] |= one << np.uint64(x % 64)
    later = np.zeros((p, words), dtype=np.uint64)
    sends = np.zeros((steps, p, words), dtype=np.uint64)
    counts = np.zeros((steps, p), dtype=np.int64)
    for s in range(steps - 1, -1, -1):
        for r in range(p):
            q = peer[s, r]
            for w in range(words):
                sends[s, r, w] = reach[q, w] & ~later[r, w]
            sends[s, r, r // 64] &= ~(one << np.uint64(r % 64))
            for w in range(words):
                v = sends[s, r, w]
                later[r, w] |= v
                while v:  # popcount
                    v &= v - one
                    counts[s, r] += 1
        grown = reach.copy()  # Reach(x, s) = Reach(x, s+1) and what its step-s peer reaches
        for x in range(p):
            for w in range(words):
                grown[x, w] |= reach[peer[s, x], w]
        reach = grown
    offsets = np.zeros(steps + 1, dtype=np.int64)
    for s in range(steps):
        offsets[s + 1] = offsets[s] + counts[s].sum()
    ids = np.empty(offsets[steps], dtype=np.int32)
    k = 0
    for s in range(steps):
        for r in range(p):
            for w in range(words):
                v = sends[s, r, w]
                while v:
                    low = v & (~v + one)
                    ids[k] = base + w * 64 + _BIT_OF[(low * _DE_BRUIJN) >> np.uint64(58)]
                    k += 1
                    v ^= low
    return counts, ids, offsets


def grid(request: Request) -> tuple[int, ...]:
    return request.dims if request.dims else (request.ranks,)


def _collectives(dims):
    return [(c, m) for m in (False, True) for c in range(len(dims))]


def _bandwidth_optimal(request: Request, builder) -> None:
    dims, p = grid(request), request.ranks
    odd = len(dims) == 1 and p % 2 == 1 and p > 1
    ring = (p - 1,) if odd else dims
    parts = _collectives(ring)
    rs_steps = []  # per part, per step: (src, dst, counts, block ids)
    for part, (c, mirrored) in enumerate(parts):
        peer = peers(ring, c, mirrored)
        counts, ids, offsets = send_lists(peer, part * p)
        steps = [(np.arange(len(peer[s])), peer[s], counts[s], ids[offsets[s]:offsets[s + 1]]) for s in range(len(peer))]
        rs_steps.append(steps)
    extra = _extra_groups(p - 1, len(rs_steps[0])) if odd else None
    for s in range(len(rs_steps[0])):
        builder.add_step(*_merge([step[s] for step in rs_steps], extra, s, p, len(parts), reduce=True), REDUCE)
    for s in range(len(rs_steps[0]) - 1, -1, -1):  # the allgather: every transfer reversed, latest step first
        reversed_steps = [(step[s][1], step[s][0], step[s][2], step[s][3]) for step in rs_steps]
        builder.add_step(*_merge(reversed_steps, extra, s, p, len(parts), reduce=False), COPY)


def _extra_groups(m: int, steps: int) -> list[np.ndarray]:
    """The ranks the odd rank P - 1 meets per reduce-scatter step: ceil(left/2), all in the last."""
    groups, start = [], 0
    for s in range(steps):
        size = m - start if s == steps - 1 else -(-(m - start) // 2)
        groups.append(np.arange(start, start + size))
        start += size
    return groups


def _merge(per_part, extra, s, p, parts, reduce: bool):
    """(src, dst, (counts, ids)) of all parts' transfers in one step, plus odd P's direct exchanges
    with rank P - 1. In the allgather every part's transfer carries the blocks the reduce-scatter
    transfer carried."""
    src, dst = [x for x, *_ in per_part], [y for _, y, *_ in per_part]
    counts, ids = [c for *_, c, _ in per_part], [i for *_, i in per_part]
    if extra is not None:
        group, last = extra[s], p - 1
        for part in range(parts):
            # reduce-scatter: P - 1 gives its contribution to block j to rank j and collects theirs to its own
            # block; allgather: it hands out its reduced block and collects the group's reduced blocks
            src += [np.full(len(group), last), group]
            dst += [group, np.full(len(group), last)]
            counts += [np.ones(2 * len(group), dtype=np.int64)]
            to_group, to_last = part * p + group, np.full(len(group), part * p + last)
            ids += [to_group, to_last] if reduce else [to_last, to_group]
    return np.concatenate(src), np.concatenate(dst), (np.concatenate(counts), np.concatenate(ids))


def _latency_optimal(request: Request, builder) -> None:
    dims, p = grid(request), request.ranks
    parts = _collectives(dims)
    share = np.array_split(np.arange(request.blocks), len(parts))
    tables = [peers(dims, c, m) for c, m in parts]
    for s in range(tables[0].shape[0]):
        src = np.concatenate([np.arange(p)] * len(parts))
        dst = np.concatenate([t[s] for t in tables])
        blocks = [share[i] for i in range(len(parts)) for _ in range(p)]
        builder.add_step(src, dst, blocks, REDUCE)


def parts_blocks(request: Request) -> int:
    """2D parts (plain and mirrored collectives, or instances) of one block per rank."""
    dims = grid(request)
    return 2 * len(dims) * request.ranks


def generate_b(request: Request):
    builder = request.builder("swing-b")
    _bandwidth_optimal(request, builder)
    return builder.build()


def generate_l(request: Request):
    builder = request.builder("swing-l")
    _latency_optimal(request, builder)
    return builder.build()


def refusal_b(request: Request) -> str | None:
    dims, p = grid(request), request.ranks
    if request.blocks != parts_blocks(request):
        return (f"swing-b splits the vector into 2D parts of one block per rank: {parts_blocks(request)} blocks on "
                f"{'x'.join(map(str, dims))}, not {request.blocks}")
    if p % 2 == 1 and len(dims) > 1:
        return f"swing-b on an odd number of ranks runs on a ring (1-D), not on {'x'.join(map(str, dims))}"
    if len(dims) > 1 and any(d % 2 for d in dims):
        return f"swing-b on a multi-dimensional torus needs even sizes, not {'x'.join(map(str, dims))}"
    return None


def refusal_l(request: Request) -> str | None:
    dims = grid(request)
    if any(d & (d - 1) for d in dims):
        return f"swing-l reaches every rank once only on power-of-two sizes, not {'x'.join(map(str, dims))}"
    if request.blocks < 2 * len(dims):
        return f"swing-l splits the vector into 2D = {2 * len(dims)} parts: at least that many blocks, not {request.blocks}"
    return None


def transfers(request: Request, steps_per_level: int) -> int:
    """For the size guard: every rank sends once per step in each of the 2D collectives, log2 P
    steps per level (0, unknown, when P is not a power of two: the folding steps vary)."""
    p = request.ranks
    return p * steps_per_level * (p.bit_length() - 1) * 2 * len(grid(request)) if p & (p - 1) == 0 else 0


ALGORITHM = (
    Algorithm("swing-b", ("allreduce",), "Swing, bandwidth-optimal: reduce-scatter and allgather over the "
              "Swing peers, 2D plain and mirrored collectives", generate_b, refusal_b, parts_blocks,
              transfers=lambda request: transfers(request, 2)),
    Algorithm("swing-l", ("allreduce",), "Swing, latency-optimal: log2 P steps of whole parts, 2D collectives",
              generate_l, refusal_l, lambda request: 2 * len(grid(request)), transfers=lambda request: transfers(request, 1)),
)
