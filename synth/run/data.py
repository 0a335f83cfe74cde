"""The input of a run and the MPI library's own collective on it (`synth run`).

Values: element k of the whole collective's blocks (blocks one after another, in block id order)
holds, for the contribution of rank r (reductions) or the block's one value (copy collectives), a
counter-based hash of (k, r, seed), so every rank computes any rank's values without a message.
`dyadic` data are integers in [-8, 7]: every sum of them, in any order, is exact in float32 (up to
2^20 ranks) and float64 and int32, so the schedule's result must equal the library's bit for bit.
`uniform` data (floats) are uniform in [-1, 1): two orders of summing differ, and each result is
within gamma_(P-1) x the sum of |x_r| of the exact sum (Higham, Accuracy and Stability of Numerical
Algorithms, 2nd ed., eq. 4.4, for any order of P - 1 additions; gamma_m = m u / (1 - m u), u the
unit roundoff), so the two may differ by twice that, per element: the bound the check uses.

The library's collective on the same input is the MPI call a user would make for the collective
(the plain call where every rank's part has the same length, the v-variant where they differ):
its send buffer is the rank's blocks in the order MPI lays them out (by destination rank, then
block id), and its result, put back in block id order, is what the schedule must leave at the rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from synth.collectives.schedule import Schedule, collective

DTYPE_NAMES = ("float32", "float64", "int32")  # (a literal: synth run --help reads it from source)
DTYPES = {name: getattr(np, name) for name in DTYPE_NAMES}
DATA = ("dyadic", "uniform")
UNIT_ROUNDOFF = {"float32": 2.0 ** -24, "float64": 2.0 ** -53}


def _hash(k: np.ndarray, stream: int) -> np.ndarray:
    """splitmix64 of k + stream x golden ratio (uint64)."""
    with np.errstate(over="ignore"):
        z = k.astype(np.uint64) + np.uint64((stream * 0x9E3779B97F4A7C15) % (1 << 64))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


@dataclass(frozen=True)
class Input:
    schedule: Schedule
    elements: np.ndarray  # per block
    dtype: str
    data: str  # dyadic | uniform
    seed: int

    @property
    def first(self) -> np.ndarray:
        """Element offset of every block in the whole collective's blocks."""
        return np.concatenate([[0], np.cumsum(self.elements)]).astype(np.int64)

    def values(self, blocks: np.ndarray, rank: int | None) -> np.ndarray:
        """The values of `blocks` one after another: rank `rank`'s contribution (reductions), or
        the blocks' own values (None: copy collectives)."""
        first, lengths = self.first[blocks], self.elements[blocks]
        total = int(lengths.sum())
        k = np.repeat(first - np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64), lengths) \
            + np.arange(total, dtype=np.int64)
        stream = (self.seed << 21) + (0 if rank is None else rank + 1)
        h = _hash(k, stream)
        if self.data == "dyadic":
            return ((h >> np.uint64(60)).astype(np.int64) - 8).astype(DTYPES[self.dtype])
        return ((h >> np.uint64(11)).astype(np.float64) * 2.0 ** -52 - 1.0).astype(DTYPES[self.dtype])

    def tolerance(self, blocks: np.ndarray) -> np.ndarray | None:
        """Per element of `blocks` the most a schedule's reduction may differ from the library's
        (None: exactly equal; module docstring)."""
        if self.data == "dyadic" or not collective(self.schedule.collective).reduction:
            return None
        p = self.schedule.ranks
        total = sum(np.abs(self.values(blocks, r).astype(np.float64)) for r in range(p))
        u = UNIT_ROUNDOFF[self.dtype]
        gamma = (p - 1) * u / (1 - (p - 1) * u)
        return 2 * gamma * total


@dataclass
class LibraryCall:
    """The library's collective at one rank: `call()` runs it once; `result()` is then what the
    rank must hold of its promised blocks, in block id order."""

    call: Callable[[], None]
    result: Callable[[], np.ndarray]
    name: str  # the MPI function called


def _by_rank(blocks: np.ndarray, key: np.ndarray, p: int) -> list[np.ndarray]:
    return [blocks[key == d] for d in range(p)]


def _order(parts: list[np.ndarray]) -> np.ndarray:
    """The blocks of `parts` one after another (the order MPI lays them out in)."""
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _reordered(values: np.ndarray, order: np.ndarray, elements: np.ndarray) -> np.ndarray:
    """Values laid out block by block in `order`, put in ascending block id order."""
    lengths = elements[order]
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    ascending = np.argsort(order, kind="stable")
    if not len(order):
        return values[:0]
    return np.concatenate([values[starts[i]:starts[i] + lengths[i]] for i in ascending.tolist()])


def library_call(comm, data: Input, rank: int) -> LibraryCall:
    """The MPI collective for `data`'s schedule at `rank` (module docstring)."""
    from mpi4py import MPI

    s, e, p = data.schedule, data.elements, data.schedule.ranks
    dtype = DTYPES[data.dtype]
    b = np.arange(s.blocks, dtype=np.int64)
    name = s.collective
    own = b[b % p == rank]
    counts_of = lambda parts: np.array([int(e[x].sum()) for x in parts], dtype=np.int64)  # noqa: E731
    displs = lambda counts: np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)  # noqa: E731
    root = s.root if s.root is not None else 0

    if name == "allreduce" or name == "reduce":
        send = data.values(b, rank)
        recv = np.empty_like(send)
        if name == "allreduce":
            return LibraryCall(lambda: comm.Allreduce(send, recv, MPI.SUM), lambda: recv, "MPI_Allreduce")
        return LibraryCall(lambda: comm.Reduce(send, recv if rank == root else None, MPI.SUM, root),
                           lambda: recv if rank == root else recv[:0], "MPI_Reduce")
    if name == "reduce-scatter":
        parts = _by_rank(b, b % p, p)
        order = _order(parts)
        send = data.values(order, rank)
        counts = counts_of(parts)
        recv = np.empty(int(counts[rank]), dtype=dtype)
        if (counts == counts[0]).all():
            return LibraryCall(lambda: comm.Reduce_scatter_block(send, recv, MPI.SUM), lambda: recv,
                               "MPI_Reduce_scatter_block")
        return LibraryCall(lambda: comm.Reduce_scatter(send, recv, counts.tolist(), MPI.SUM), lambda: recv,
                           "MPI_Reduce_scatter")
    if name in ("allgather", "gather"):
        parts = _by_rank(b, b % p, p)
        order = _order(parts)
        send = data.values(own, None)
        counts = counts_of(parts)
        recv = np.empty(int(counts.sum()), dtype=dtype)
        equal = bool((counts == counts[0]).all())
        result = lambda: _reordered(recv, order, e)  # noqa: E731
        if name == "allgather":
            if equal:
                return LibraryCall(lambda: comm.Allgather(send, recv), result, "MPI_Allgather")
            return LibraryCall(lambda: comm.Allgatherv(send, [recv, (counts.tolist(), displs(counts).tolist())]), result, "MPI_Allgatherv")
        at_root = (lambda: _reordered(recv, order, e)) if rank == root else (lambda: recv[:0])
        if equal:
            return LibraryCall(lambda: comm.Gather(send, recv if rank == root else None, root), at_root, "MPI_Gather")
        return LibraryCall(lambda: comm.Gatherv(send, [recv, (counts.tolist(), displs(counts).tolist())] if rank == root else None, root),
                           at_root, "MPI_Gatherv")
    if name == "broadcast":
        buf = data.values(b, None) if rank == root else np.empty(int(e.sum()), dtype=dtype)
        return LibraryCall(lambda: comm.Bcast(buf, root), lambda: buf, "MPI_Bcast")
    if name == "scatter":
        parts = _by_rank(b, b % p, p)
        order = _order(parts)
        counts = counts_of(parts)
        send = data.values(order, None) if rank == root else None
        recv = np.empty(int(counts[rank]), dtype=dtype)
        if (counts == counts[0]).all():
            return LibraryCall(lambda: comm.Scatter(send, recv, root), lambda: recv, "MPI_Scatter")
        return LibraryCall(lambda: comm.Scatterv([send, (counts.tolist(), displs(counts).tolist())] if rank == root else None, recv, root),
                           lambda: recv, "MPI_Scatterv")
    if name in ("alltoall", "alltoallv"):
        source, destination = (b % (p * p)) // p, b % p
        out_parts = [b[(source == rank) & (destination == d)] for d in range(p)]
        in_parts = [b[(source == q) & (destination == rank)] for q in range(p)]
        out_order = _order(out_parts)
        in_order = _order(in_parts)
        send = data.values(out_order, None)
        sent, received = counts_of(out_parts), counts_of(in_parts)
        recv = np.empty(int(received.sum()), dtype=dtype)
        result = lambda: _reordered(recv, in_order, e)  # noqa: E731
        if name == "alltoall" and (sent == sent[0]).all() and (received == sent[0]).all():
            return LibraryCall(lambda: comm.Alltoall(send, recv), result, "MPI_Alltoall")
        return LibraryCall(lambda: comm.Alltoallv([send, (sent.tolist(), displs(sent).tolist())],
                                                         [recv, (received.tolist(), displs(received).tolist())]),
                           result, "MPI_Alltoallv")
    if name == "p2p":
        peer = s.peer
        buf = data.values(b, None) if rank == root else np.empty(int(e.sum()), dtype=dtype)

        def call():
            if rank == root:
                comm.Send(buf, peer, 0)
            elif rank == peer:
                comm.Recv(buf, root, 0)
        return LibraryCall(call, lambda: buf if rank == peer else buf[:0], "MPI_Send/MPI_Recv")
    raise ValueError(f"no library call for {name}")
