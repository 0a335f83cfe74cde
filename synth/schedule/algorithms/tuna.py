"""TuNA (002_2758a99bc5e419ef.txt): tunable-radix non-uniform all-to-all(v), and its hierarchical
variants. Digest: ../shared/spec/tuna-alltoallv.md.

tuna (radix r, any P): the block from s to d has offset i = d - s mod P, written in base r with
w = ceil(log_r P) digits. Round (x, z), 0 <= x < w, 1 <= z < r, exists iff z r^x < P; rounds run x
outer, z inner (K of them). In round (x, z) every rank q forwards, as one message to q + z r^x, every
block it holds whose offset has digit x equal to z (after the rounds of the lower digits such a
block sits at s + (i mod r^x)). One step per round; each round's data message is preceded by an
exchange of the blocks' sizes (priced, not a separate step: `size_exchange`). r = 2 is the two-phase
non-uniform Bruck, r >= P - 1 spread-out (single-block rounds). The paper's backward direction
(send to p - d) is this one mirrored; the forward one is its text's and Fig. 2's.

tuna-coalesced and tuna-staggered (TuNA_l^g): Q ranks per node (rank n Q + g on node n), N nodes.
Intra-node: the N nodes run Q-rank TuNAs at once, every message carrying for each of its local
blocks the N blocks to that local rank on every node; afterwards rank (n, g) holds, for every node
j, the Q blocks (n, a) -> (j, g). Inter-node, coalesced: N - 1 rounds, in round k rank (n, g) sends
those Q blocks for node j = n + k to (j, g), `--batch` rounds per step; staggered: the Q (N - 1)
blocks as single-block messages, message m carrying the block of local source a = (g + m div (N-1))
mod Q for node n + 1 + (m mod (N - 1)), `--batch` messages per step.
"""

from __future__ import annotations

import numpy as np

from synth.schedule.algorithms import Algorithm, Request, register


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


def generate_tuna(request: Request):
    p, r = request.ranks, request.radix
    builder = request.builder("tuna")
    q = np.arange(p)
    for x, z in rounds(p, r):
        o = round_offsets(p, r, x, z)
        s = (q[:, None] - (o % r ** x)[None, :]) % p  # the source of each block rank q holds
        builder.add_step(q, (q + z * r ** x) % p, s * p + (s + o[None, :]) % p, size_exchange=True)
    return builder.build()


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
        builder.add_step(src.ravel(), dst.ravel(), ids.reshape(nodes * q, -1), size_exchange=True)


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


register(Algorithm("tuna", ("alltoall", "alltoallv"), "TuNA, radix r (--radix): K rounds of base-r digits, a size "
                   "exchange before each", generate_tuna, _refusal, block_sends=_tuna_block_sends))
register(Algorithm("tuna-coalesced", ("alltoall", "alltoallv"), "hierarchical TuNA: intra-node TuNA, then N - 1 "
                   "inter-node rounds of Q blocks (--batch rounds per step)", generate_coalesced, _hierarchical_refusal))
register(Algorithm("tuna-staggered", ("alltoall", "alltoallv"), "hierarchical TuNA: intra-node TuNA, then Q (N - 1) "
                   "single-block inter-node messages (--batch per step)", generate_staggered, _hierarchical_refusal))
