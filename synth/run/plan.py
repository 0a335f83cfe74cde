"""One rank's part of a schedule, as array work for `synth run` (no MPI here: testable alone).

A rank keeps one flat buffer of the blocks it touches (the blocks it starts with, sends, receives
or is promised), in ascending block id, each block `elements[b]` elements long. A transfer's blocks
travel as one message in the schedule's order of them; in the buffer they are runs of consecutive
slots, so packing and applying a message is one numpy slice per run (a contiguous message is sent
from the buffer itself, without a copy). Within a step every send reads the buffer as it was at the
step's start (messages are packed, or sent from the buffer, before any receipt is applied); then
copies are applied, then reductions (the order synth.collectives.verify replays). Messages
between two ranks in one step are posted by both in the schedule's order, so MPI matches them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.collectives.schedule import COPY, REDUCE, Schedule, collective

COPY_COLLECTIVES_START = {"allgather": "own", "gather": "own", "broadcast": "root", "scatter": "root", "p2p": "root",
                          "alltoall": "source", "alltoallv": "source"}
PROMISED = {"allgather": "every", "broadcast": "every", "allreduce": "every", "scatter": "own", "alltoall": "own",
            "alltoallv": "own", "reduce-scatter": "own", "gather": "root", "reduce": "root", "p2p": "peer"}


def block_elements(schedule: Schedule, itemsize: int, message_bytes: int | None) -> np.ndarray:
    """Elements of every block: its bytes rounded up to whole elements, at `message_bytes` (a size
    as synth compare takes it: the vector, or the P blocks a rank sends in an all-to-all) its bytes
    scaled by message_bytes / the schedule's own first (None: the schedule's own sizes)."""
    from synth.pricing.bounds import vector_bytes

    sizes = np.asarray(schedule.block_bytes, dtype=np.float64)
    if message_bytes is not None:
        sizes = sizes * (message_bytes / max(1, vector_bytes(schedule)))
    return np.ceil(sizes / itemsize).astype(np.int64)


def starting_blocks(schedule: Schedule, rank: int) -> np.ndarray:
    """The blocks `rank` holds (copy collectives) or contributes to (reductions) at the start."""
    p, b = schedule.ranks, np.arange(schedule.blocks, dtype=np.int64)
    if collective(schedule.collective).reduction:
        return b
    start = COPY_COLLECTIVES_START[schedule.collective]
    if start == "own":
        return b[b % p == rank]
    if start == "source":
        return b[(b % (p * p)) // p == rank]
    return b if rank == schedule.root else b[:0]


def promised_blocks(schedule: Schedule, rank: int) -> np.ndarray:
    """The blocks the collective promises `rank` at the end (reductions: reduced over every rank)."""
    p, b = schedule.ranks, np.arange(schedule.blocks, dtype=np.int64)
    where = PROMISED[schedule.collective]
    if where == "every":
        return b
    if where == "own":
        return b[b % p == rank]
    holder = schedule.root if where == "root" else schedule.peer
    return b if rank == holder else b[:0]


@dataclass(frozen=True)
class Message:
    """One transfer as this rank sees it: the peer, and the runs of its blocks in this rank's buffer
    (element offsets and lengths, in message order)."""

    peer: int
    starts: np.ndarray  # int64, element offsets into the buffer
    lengths: np.ndarray  # int64
    op: int  # COPY or REDUCE (receipts)

    @property
    def elements(self) -> int:
        return int(self.lengths.sum())

    @property
    def contiguous(self) -> bool:
        return len(self.starts) == 1


@dataclass(frozen=True)
class RankPlan:
    rank: int
    slots: np.ndarray  # the blocks this rank touches, ascending
    offsets: np.ndarray  # (len(slots) + 1,) element offsets of each slot in the buffer
    steps: tuple[tuple[tuple[Message, ...], tuple[Message, ...]], ...]  # per step (sends, receipts)

    @property
    def elements(self) -> int:
        return int(self.offsets[-1])

    def block_range(self, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Element starts and lengths of `blocks` (which this rank touches) in the buffer."""
        at = np.searchsorted(self.slots, blocks)
        return self.offsets[at], self.offsets[at + 1] - self.offsets[at]

    def gather(self, buffer: np.ndarray, blocks: np.ndarray) -> np.ndarray:
        """The values of `blocks`, one after another."""
        starts, lengths = self.block_range(blocks)
        return np.concatenate([buffer[s:s + n] for s, n in zip(*_runs(starts, lengths))]) if len(blocks) else buffer[:0]

    @property
    def most_sent(self) -> int:
        """The most elements this rank packs in one step (messages that are not one run)."""
        return max((sum(m.elements for m in sends if not m.contiguous) for sends, _ in self.steps), default=0)

    @property
    def most_received(self) -> int:
        return max((sum(m.elements for m in receipts) for _, receipts in self.steps), default=0)


def _runs(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Consecutive pieces (each starting where the one before ends) joined into runs."""
    if len(starts) <= 1:
        return starts, lengths
    first = np.concatenate([[0], np.flatnonzero(starts[1:] != starts[:-1] + lengths[:-1]) + 1])
    return starts[first], np.add.reduceat(lengths, first)


def plan_rank(schedule: Schedule, rank: int, elements: np.ndarray) -> RankPlan:
    """`rank`'s buffer layout and its messages per step (`schedule` with its blocks listed)."""
    s = schedule.explicit()
    mine = np.flatnonzero((s.src == rank) | (s.dst == rank))
    touched = [starting_blocks(s, rank), promised_blocks(s, rank)]
    touched += [s.block_ids[s.block_ptr[t]:s.block_ptr[t + 1]].astype(np.int64) for t in mine.tolist()]
    slots = np.unique(np.concatenate(touched)) if touched else np.zeros(0, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(elements[slots])]).astype(np.int64)
    step_of = s.transfer_step()
    steps: list[tuple[list, list]] = [([], []) for _ in range(s.num_steps)]
    for t in mine.tolist():
        ids = s.block_ids[s.block_ptr[t]:s.block_ptr[t + 1]].astype(np.int64)
        at = np.searchsorted(slots, ids)
        starts, lengths = _runs(offsets[at], offsets[at + 1] - offsets[at])
        sending = int(s.src[t]) == rank
        message = Message(int(s.dst[t] if sending else s.src[t]), starts, lengths, int(s.op[t]))
        steps[int(step_of[t])][0 if sending else 1].append(message)
    # receipts stay in the schedule's order: both sides post a pair's messages in it (MPI matches them in order)
    return RankPlan(rank, slots, offsets, tuple((tuple(a), tuple(b)) for a, b in steps))


__all__ = ["COPY", "REDUCE", "Message", "RankPlan", "block_elements", "plan_rank", "promised_blocks", "starting_blocks"]
