"""A broadcast as a scatter then an allgather, pipelined (van de Geijn's bandwidth-optimal
broadcast, with synth's synthesized allgather; issue 24's broadcast near its cut bound): the root's
message is split into P blocks (block b for rank b mod P, as an allgather starts), each sent to its
rank by a binomial scatter (ceil log2 P rounds: the ranks relative to the root halve what they
hold; one message a round at the root) or straight (one round, P - 1 messages at the root's ports,
all of its links used), then spread by an allgather schedule, the root receiving nothing (it holds every block).
With k pieces, piece j's scatter starts at step j and its allgather as its scatter ends: the
steps of different pieces merge (one message per rank pair and step), so the root's link keeps
sending scatters while the allgathers of the pieces before use the rest of the network; a tree
broadcast of whole blocks carries the message over every link of its depth, this carries it about
twice over a node's links, and pipelined nearly once. A reduce is the same run backwards
(reduce-scatter, then gather), made by synth.synthesis.methods.scatter_allgather. For comparison at large sizes, the
pipelined chain (`chain_deliveries`) reaches a one-link node's cut bound as its pieces grow.

The deliveries are built here as (step, sender, receiver, block); their validity is the verifier's
(every send holds its blocks), as for every synthesized schedule.
"""

from __future__ import annotations

import numpy as np


def binomial_scatter(ranks: int, root: int, blocks_per_rank: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per round, (sender, receiver, block) of a binomial scatter of the root's blocks (block b to
    rank b mod P; b < P x blocks_per_rank): relative rank v = (r - root) mod P sends at round l,
    mask m = 2^(L - 1 - l), where v mod 2m = 0 and v + m < P, the blocks of relative ranks
    [v + m, v + 2m) to v + m."""
    levels = (ranks - 1).bit_length()
    chunk = np.arange(blocks_per_rank, dtype=np.int64) * ranks
    rounds = []
    for level in range(levels):
        mask = 1 << (levels - 1 - level)
        senders, receivers, blocks = [], [], []
        for v in range(0, ranks, 2 * mask):
            if v + mask >= ranks:
                continue
            owners = (np.arange(v + mask, min(v + 2 * mask, ranks), dtype=np.int64) + root) % ranks
            moved = (owners[:, None] + chunk[None, :]).ravel()
            senders.append(np.full(len(moved), (v + root) % ranks, dtype=np.int64))
            receivers.append(np.full(len(moved), (v + mask + root) % ranks, dtype=np.int64))
            blocks.append(moved)
        rounds.append(tuple(np.concatenate(x) for x in (senders, receivers, blocks)))
    return rounds


def straight_scatter(ranks: int, root: int, blocks_per_rank: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """One round: the root sends every other rank its blocks (P - 1 messages at the root's ports,
    every link out of it used: the scatter of a node with several)."""
    owners = np.array([r for r in range(ranks) if r != root], dtype=np.int64)
    moved = (owners[:, None] + np.arange(blocks_per_rank, dtype=np.int64)[None, :] * ranks).ravel()
    return [(np.full(len(moved), root, dtype=np.int64), np.repeat(owners, blocks_per_rank), moved)]


SCATTERS = {"binomial": binomial_scatter, "straight": straight_scatter}


def pipelined_deliveries(ranks: int, root: int, blocks: int, allgather, pieces: int, scatter: str = "binomial"):
    """(step, sender, receiver, block) of a broadcast of pieces x `blocks` blocks: piece j (blocks
    b + j x blocks) scattered from step j, then spread by `allgather` (a Schedule of `blocks`
    blocks, explicit) without the blocks a rank got from the scatter. Returns the deliveries and
    the steps."""
    rounds = SCATTERS[scatter](ranks, root, blocks // ranks)
    gather_steps = allgather.num_steps
    step_of = allgather.transfer_step()
    counts = np.diff(allgather.block_ptr)
    sender = np.repeat(allgather.src, counts)
    receiver = np.repeat(allgather.dst, counts)
    moved = allgather.block_ids.astype(np.int64)
    when = np.repeat(step_of, counts)
    # what a rank got from the scatter it is not sent again (binomial: its subtree's blocks, relative
    # rank v received those of [v, v + lowbit(v)); the root holds all of them)
    v = (receiver - root) % ranks
    owner = (moved % ranks - root) % ranks
    span = (v & -v) if scatter == "binomial" else np.ones_like(v)
    keep = (v != 0) & ~((owner >= v) & (owner < v + span))
    sender, receiver, moved, when = sender[keep], receiver[keep], moved[keep], when[keep]
    parts = []
    for piece in range(pieces):
        offset = piece * blocks
        for level, (s, r, b) in enumerate(rounds):
            parts.append((np.full(len(b), piece + level, dtype=np.int64), s, r, b + offset))
        parts.append((when + piece + len(rounds), sender, receiver, moved + offset))
    steps = pieces - 1 + len(rounds) + gather_steps
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(4)), steps


def chain_deliveries(orders: list[np.ndarray], root: int, pieces: int):
    """(step, sender, receiver, block) of pipelined chains: each order of the ranks (a cycle)
    turned to start at the root, the message in `pieces` blocks dealt round-robin to the chains,
    the rank at hop i of a chain passing its l-th block to the next at step i + l: ceil(pieces /
    C) + P - 2 steps of one message a rank and chain, every block over each hop of its chain once.
    One chain in rank order reaches a one-link node's cut bound (n over its bandwidth) as the
    pieces grow; a 2D torus's four directed edge-disjoint Hamiltonian cycles (DeSensi24's rings)
    reach its four links'. Returns the deliveries and the steps."""
    parts, count = [], len(orders)
    for c, order in enumerate(orders):
        order = np.asarray(order, dtype=np.int64)
        chain = np.roll(order, -int(np.flatnonzero(order == root)[0]))
        mine = np.arange(c, pieces, count, dtype=np.int64)
        hop = np.arange(len(chain) - 1, dtype=np.int64)
        parts.append(((hop[:, None] + np.arange(len(mine))[None, :]).ravel(), np.repeat(chain[:-1], len(mine)),
                      np.repeat(chain[1:], len(mine)), np.tile(mine, len(hop))))
    steps = -(-pieces // count) + len(orders[0]) - 2
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(4)), steps
