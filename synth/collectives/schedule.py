"""Step schedules of collectives: who sends which blocks to whom, step by step.

A schedule moves B blocks among P ranks in bulk-synchronous steps. In step s every transfer
(src, dst, blocks, op) runs at once (multi-port): a rank sends only what it holds at the start
of step s, and the blocks of one transfer travel as one combined message. `op` is `copy` (the
receiver now holds the blocks; for reductions its partial block is replaced by the sender's) or
`reduce` (the receiver combines the sender's partial blocks into its own).

Arrays, not objects (a 4096-rank schedule has millions of block sends): transfers of all steps
in order, `step_ptr` their offsets per step, and per transfer its blocks as a CSR slice
(`block_ptr` into `block_ids`).

What each collective starts from and must end with (block semantics of docs/formats.md) is in
COLLECTIVES: the copy collectives (allgather, broadcast, scatter, gather, alltoall, alltoallv)
track which ranks hold which blocks; the reductions (reduce-scatter, allreduce, reduce) track
which contributions each partial block holds (synth.collectives.verify).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from synth.core.arrays import concatenate
from synth.core.errors import SynthError

if TYPE_CHECKING:
    from synth.topology.paths import Paths

COPY, REDUCE = 0, 1
OPS = ("copy", "reduce")


@dataclass(frozen=True)
class Collective:
    name: str
    rooted: bool
    reduction: bool
    blocks: str  # how many blocks: "P" (one per rank), "P^2" (one per rank pair), "any" (a split message); the
    # first two may come in parts (B a multiple: block b plays the role of b mod P, or b mod P^2)
    meaning: str  # the block semantics, for --list and the docs


COLLECTIVES = {c.name: c for c in (
    Collective("allgather", False, False, "P", "block i starts at rank i and ends at every rank"),
    Collective("broadcast", True, False, "any", "every block starts at the root and ends at every rank"),
    Collective("scatter", True, False, "P", "every block starts at the root; block i ends at rank i"),
    Collective("gather", True, False, "P", "block i starts at rank i and ends at the root"),
    Collective("alltoall", False, False, "P^2", "block s*P + d starts at rank s and ends at rank d"),
    Collective("alltoallv", False, False, "P^2", "as alltoall, block sizes from a matrix"),
    Collective("reduce-scatter", False, True, "P", "every rank holds a contribution to every block; rank i ends with "
                                                     "block i reduced over all ranks"),
    Collective("allreduce", False, True, "any", "every rank ends with every block reduced over all ranks"),
    Collective("reduce", True, True, "any", "the root ends with every block reduced over all ranks"),
    Collective("p2p", True, False, "any", "every block starts at the root (the source) and ends at the peer"),
)}


def collective(name: str) -> Collective:
    try:
        return COLLECTIVES[name]
    except KeyError:
        raise SynthError(f"unknown collective '{name}' (known: {', '.join(COLLECTIVES)})") from None


def id_type(blocks: int):
    """The type of block ids: int32 below 2^31 blocks (half the memory of the largest array)."""
    return np.int32 if blocks < 2**31 else np.int64


@dataclass(frozen=True)
class BlockRuns:
    """Every transfer's blocks as arithmetic runs, for schedules too large to list (TuNA at P = 16384
    sends 5 x 10^8 blocks in 4 x 10^6 transfers of one or two runs each): transfer t's blocks are, for
    its runs k in ptr[t]:ptr[t+1], first[k] + stride[k] * j for j < count[k], in that order."""

    ptr: np.ndarray  # (transfers + 1,) offsets into the runs
    first: np.ndarray  # (runs,) int64
    stride: np.ndarray
    count: np.ndarray  # >= 1

    def counts(self) -> np.ndarray:
        """The number of blocks of every transfer (0 for one without runs)."""
        return np.diff(np.concatenate([[0], np.cumsum(self.count)])[self.ptr])

    def blocks_of(self, t: int) -> np.ndarray:
        """Transfer t's blocks, in order."""
        k = slice(self.ptr[t], self.ptr[t + 1])
        return np.concatenate([f + s * np.arange(c) for f, s, c in zip(self.first[k], self.stride[k], self.count[k])]
                              or [np.zeros(0, dtype=np.int64)])

    def expand(self) -> tuple[np.ndarray, np.ndarray]:
        """(block_ptr, block_ids) of the same lists."""
        block_ptr = np.concatenate([[0], np.cumsum(self.counts())]).astype(np.int64)
        offset = np.arange(int(self.count.sum()), dtype=np.int64) - np.repeat(np.cumsum(self.count) - self.count, self.count)
        return block_ptr, np.repeat(self.first, self.count) + np.repeat(self.stride, self.count) * offset


@dataclass
class Schedule:
    collective: str
    algorithm: str
    spec: str  # the network the ranks sit on (rank i on terminal i)
    ranks: int
    blocks: int
    block_bytes: np.ndarray  # (blocks,) int64
    step_ptr: np.ndarray  # (steps + 1,) offsets into the transfers
    src: np.ndarray  # (transfers,)
    dst: np.ndarray
    op: np.ndarray  # COPY or REDUCE per transfer
    block_ptr: np.ndarray | None  # (transfers + 1,) offsets into block_ids (None: the blocks are `runs`)
    block_ids: np.ndarray | None  # int32 below 2^31 blocks (half the memory of the largest array)
    root: int | None = None
    peer: int | None = None  # p2p: the destination
    ranks_per_node: int = 1  # Q ranks share a node (terminal): rank r on terminal r // Q
    size_exchange: np.ndarray | None = None  # steps preceded by an exchange of the blocks' sizes (TuNA)
    runs: BlockRuns | None = None  # the blocks as runs instead of lists
    synthesis: dict | None = None  # a synthesized schedule's record: method, bounds, cost, gap, status (synth.synthesis)
    # per transfer between nodes (in order), the channels it crosses: the paths its recorded cost was computed on
    # (synth.topology.paths.Paths; a synthesized schedule's, kept by its file); None: priced on a router's paths
    paths: "Paths | None" = None
    # the SHA-256 of the file a `fabric:` or `graph:` network was read from, as its schedule file records it (so a
    # file changed since is noticed); None: taken from the spec's file when the schedule is written
    network_sha256: str | None = None

    def explicit(self) -> "Schedule":
        """The same schedule with its blocks listed (itself when they are)."""
        if self.runs is None:
            return self
        block_ptr, ids = self.runs.expand()
        return dataclasses.replace(self, block_ptr=block_ptr, block_ids=ids.astype(id_type(self.blocks)), runs=None)

    def block_counts(self) -> np.ndarray:
        """The number of blocks of every transfer."""
        return np.diff(self.block_ptr) if self.runs is None else self.runs.counts()

    @property
    def num_block_sends(self) -> int:
        return len(self.block_ids) if self.runs is None else int(self.runs.count.sum())

    @property
    def num_steps(self) -> int:
        return len(self.step_ptr) - 1

    @property
    def num_transfers(self) -> int:
        return len(self.src)

    def transfer_step(self) -> np.ndarray:
        """The step of every transfer."""
        return np.repeat(np.arange(self.num_steps), np.diff(self.step_ptr))

    def transfer_bytes(self) -> np.ndarray:
        """The bytes of every transfer: the sum of its blocks' sizes (one combined message)."""
        if len(self.block_bytes) and (self.block_bytes == self.block_bytes[0]).all():  # equal blocks: no gather
            return self.block_counts() * int(self.block_bytes[0])
        from synth.collectives.block_sums import run_sums, transfer_sums  # compiled (numba): imported when needed

        if self.runs is not None:
            return run_sums(self.runs.ptr, self.runs.first, self.runs.stride, self.runs.count, self.block_bytes,
                            np.argsort(self.src, kind="stable"))
        return transfer_sums(self.block_ptr, self.block_ids, self.block_bytes)


class ScheduleBuilder:
    """Collects steps of transfers; `build` freezes them into a Schedule. Generators add whole
    steps as arrays: `add_step(src, dst, blocks, op)` with `blocks` a list of arrays (one per
    transfer), a 2-D array (the same number of blocks per transfer) or a pair (counts, ids): the
    blocks of all transfers one after another (the fast form for large steps)."""

    def __init__(self, collective_name: str, algorithm: str, spec: str, ranks: int, blocks: int, block_bytes,
                 root: int | None = None, ranks_per_node: int = 1, peer: int | None = None):
        self.meta = (collective_name, algorithm, spec, ranks, blocks, root)
        self.peer = peer
        self.ranks_per_node = ranks_per_node
        self._size_exchange: list[int] = []
        sizes = np.asarray(block_bytes)  # an alltoallv's P^2 sizes are shared, not copied, in their integer type
        if sizes.dtype.kind not in "iu":
            sizes = sizes.astype(np.int64)
        self.block_bytes = sizes if sizes.shape == (blocks,) else np.broadcast_to(sizes.astype(np.int64), (blocks,)).copy()
        self.id_type = id_type(blocks)  # block ids are kept in it from the start
        self._src, self._dst, self._op, self._counts, self._ids, self._steps = [], [], [], [], [], [0]

    def add_step(self, src, dst, blocks, op: int = COPY, size_exchange: bool = False) -> None:
        """One step; `size_exchange`: the step's transfers are preceded by their blocks' sizes."""
        if size_exchange:
            self._size_exchange.append(len(self._steps) - 1)
        src, dst = np.asarray(src, dtype=np.int64).ravel(), np.asarray(dst, dtype=np.int64).ravel()
        if isinstance(blocks, tuple):
            counts, ids = np.asarray(blocks[0], dtype=np.int64), np.asarray(blocks[1], dtype=self.id_type)
        elif isinstance(blocks, np.ndarray) and blocks.ndim == 2:
            counts = np.full(len(src), blocks.shape[1], dtype=np.int64)
            ids = blocks.astype(self.id_type, copy=False).ravel()
        else:
            parts = [np.asarray(b, dtype=self.id_type).ravel() for b in blocks]
            counts = np.array([len(b) for b in parts], dtype=np.int64)
            ids = np.concatenate(parts) if parts else np.zeros(0, dtype=self.id_type)
        op = np.broadcast_to(np.asarray(op, dtype=np.int8), src.shape)
        keep = counts > 0  # a transfer of no blocks is no transfer
        if not keep.all():
            src, dst, op, counts = src[keep], dst[keep], op[keep], counts[keep]
        self._src.append(src)
        self._dst.append(dst)
        self._op.append(op)
        self._counts.append(counts)
        self._ids.append(ids)
        self._steps.append(self._steps[-1] + len(src))

    def build_runs(self, step_ptr, src, dst, op, runs: BlockRuns, size_exchange: np.ndarray | None = None) -> Schedule:
        """A schedule made whole by its generator, with its blocks as runs (no add_step)."""
        name, algorithm, spec, ranks, blocks, root = self.meta
        return Schedule(name, algorithm, spec, ranks, blocks, self.block_bytes, np.asarray(step_ptr, dtype=np.int64),
                        np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64), np.asarray(op, dtype=np.int8),
                        None, None, root, self.peer, self.ranks_per_node, size_exchange, runs)

    def build(self) -> Schedule:
        name, algorithm, spec, ranks, blocks, root = self.meta
        join = concatenate  # part by part: a signal is handled between them (synth.core.arrays)
        counts = join(self._counts, np.int64)
        return Schedule(name, algorithm, spec, ranks, blocks, self.block_bytes,
                        np.asarray(self._steps, dtype=np.int64), join(self._src, np.int64), join(self._dst, np.int64),
                        join(self._op, np.int8), np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
                        join(self._ids, self.id_type), root, self.peer, self.ranks_per_node,
                        np.asarray(self._size_exchange, dtype=np.int64) if self._size_exchange else None)
