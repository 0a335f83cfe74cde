"""2dfc (2D HyperX, one node per router; Pham26 ch.4, PhamNK's 2lvfc) collectives in two steps along the
dimensions: node (a2, a1) is rank a2 m1 + a1, linked to every node that differs in one coordinate.
Digest: ../shared/spec/kautz-2dfc-collectives.md (its cleaned schedules; the thesis' loops have
index typos).

`do` (dimension order):
- alltoall: step 1 node (y, x) sends to each (y, c) the m2 blocks for column c; step 2 (y, c)
  forwards to each (r, c) the m1 blocks of its row for (r, c). Per link m2 b, then m1 b: (4.5)
  t_DO = 2 alpha + (m1 + m2) b beta, the minimum bytes per node (4.1 = 4.2);
- allgather: along X, then the row's m1 blocks along Y; reduce-scatter: the mirror image (along Y
  the partial blocks of each row, then along X); allreduce: the two.
`md` (multi-dimensional): every block is split into D1 (a fraction x) routed X then Y and D2
(1 - x) routed Y then X, so both dimensions work in both steps: (4.6) t_MD = 2 alpha + max(m1, m2)
b beta. x = m1 / (m1 + m2) balances the links (the thesis' m2 / (m1 + m2) contradicts its Table
4.1; any x between min and max over m1 + m2 gives the same total, squares take 1/2). Alltoall and
allgather; allreduce is the DO reduce-scatter then the MD allgather (Pham26's evaluation).
Part k of block b is block k B + b (two parts)."""

from __future__ import annotations

import numpy as np

from synth.collectives.algorithms import Algorithm, Request
from synth.collectives.algorithms.swing import grid
from synth.collectives.schedule import COPY, REDUCE


class _Grid:
    def __init__(self, request: Request):
        self.m1, self.m2 = grid(request)
        self.p = self.m1 * self.m2
        rank = np.arange(self.p)
        self.y, self.x = np.divmod(rank, self.m1)

    def row_moves(self):
        """(src, dst) for every ordered pair in one row (along X)."""
        src = np.repeat(np.arange(self.p), self.m1 - 1)
        dst = self.y[src] * self.m1 + (self.x[src] + np.tile(np.arange(1, self.m1), self.p)) % self.m1
        return src, dst

    def column_moves(self):
        src = np.repeat(np.arange(self.p), self.m2 - 1)
        dst = ((self.y[src] + np.tile(np.arange(1, self.m2), self.p)) % self.m2) * self.m1 + self.x[src]
        return src, dst

    def column(self, c) -> np.ndarray:
        """The ranks of column(s) c, shape (..., m2)."""
        return np.arange(self.m2) * self.m1 + np.asarray(c)[..., None]

    def row(self, r) -> np.ndarray:
        return np.asarray(r)[..., None] * self.m1 + np.arange(self.m1)


def _alltoall_first_x(g: _Grid, offset: int):
    """Step 1 and step 2 of blocks routed X then Y: (src, dst, block ids) per step."""
    p = g.p
    s1, d1 = g.row_moves()
    first = s1[:, None] * p + g.column(g.x[d1]) + offset
    s2, d2 = g.column_moves()
    second = g.row(g.y[s2]) * p + d2[:, None] + offset  # every source in the sender's row, for the receiver
    return (s1, d1, first), (s2, d2, second)


def _alltoall_first_y(g: _Grid, offset: int):
    p = g.p
    s1, d1 = g.column_moves()
    first = s1[:, None] * p + g.row(g.y[d1]) + offset
    s2, d2 = g.row_moves()
    second = g.column(g.x[s2]) * p + d2[:, None] + offset
    return (s1, d1, first), (s2, d2, second)


def _allgather_first_x(g: _Grid, offset: int):
    s1, d1 = g.row_moves()
    s2, d2 = g.column_moves()
    return (s1, d1, (s1 + offset)[:, None]), (s2, d2, g.row(g.y[s2]) + offset)


def _allgather_first_y(g: _Grid, offset: int):
    s1, d1 = g.column_moves()
    s2, d2 = g.row_moves()
    return (s1, d1, (s1 + offset)[:, None]), (s2, d2, g.column(g.x[s2]) + offset)


def _add(builder, steps_by_part, op=COPY) -> None:
    """Add step 1 of every part as one step, then step 2 (the parts travel side by side)."""
    for k in range(2):
        parts = [steps[k] for steps in steps_by_part]
        builder.add_step(np.concatenate([s for s, _, _ in parts]), np.concatenate([d for _, d, _ in parts]),
                         [row for _, _, ids in parts for row in ids], op)


def _reduce_scatter(g: _Grid, builder, parts: int) -> None:
    """Along Y the partial blocks of each destination row, then along X the destination's block."""
    s1, d1 = g.column_moves()
    s2, d2 = g.row_moves()
    first = np.concatenate([g.row(g.y[d1]) + k * g.p for k in range(parts)], axis=1)
    second = np.stack([d2 + k * g.p for k in range(parts)], axis=1)
    builder.add_step(s1, d1, first, REDUCE)
    builder.add_step(s2, d2, second, REDUCE)


def _fraction(g: _Grid) -> np.ndarray:
    x = g.m1 / (g.m1 + g.m2)
    return np.array([x, 1 - x])


def generate_do(request: Request):
    g = _Grid(request)
    builder = request.builder("do")
    name = request.collective
    if name in ("alltoall", "alltoallv"):
        _add(builder, [_alltoall_first_x(g, 0)])
    elif name == "allgather":
        _add(builder, [_allgather_first_x(g, 0)])
    else:
        _reduce_scatter(g, builder, 1)
        if name == "allreduce":
            _add(builder, [_allgather_first_x(g, 0)])
    return builder.build()


def generate_md(request: Request):
    g = _Grid(request)
    builder = request.builder("md", parts=_fraction(g))
    blocks = request.blocks
    name = request.collective
    if name in ("alltoall", "alltoallv"):
        _add(builder, [_alltoall_first_x(g, 0), _alltoall_first_y(g, blocks)])
    elif name == "allgather":
        _add(builder, [_allgather_first_x(g, 0), _allgather_first_y(g, blocks)])
    else:  # allreduce: the DO reduce-scatter of both parts, then the MD allgather
        _reduce_scatter(g, builder, 2)
        _add(builder, [_allgather_first_x(g, 0), _allgather_first_y(g, blocks)])
    return builder.build()


def _refusal(request: Request) -> str | None:
    from synth.topology import parse_topology

    # Each step sends straight to every node of a row or column: the grid must be fully connected
    # along each dimension (2dfc, a 2D HyperX), not a torus, whose rows are rings.
    if len(request.dims) != 2 or not parse_topology(request.spec).complete_dimensions:
        return f"{'do and md'} run on a 2D grid of one node per router (2dfc:M2,M1 or hyperx:M1,M2), not on {request.spec}"
    if request.ranks_per_node != 1:
        return "do and md need one rank per node"
    if request.collective == "allreduce" and request.blocks != request.ranks:
        return f"2dfc allreduce splits the vector into one block per rank ({request.ranks}), not {request.blocks}"
    return None


ALGORITHM = (
    Algorithm("do", ("alltoall", "alltoallv", "allgather", "reduce-scatter", "allreduce"), "2dfc dimension order: "
              "along X, then along Y (two steps; four for allreduce)", generate_do, _refusal, lambda request: request.ranks),
    Algorithm("md", ("alltoall", "alltoallv", "allgather", "allreduce"), "2dfc multi-dimensional: blocks split "
              "X-then-Y and Y-then-X, both dimensions busy", generate_md, _refusal, lambda request: request.ranks),
)
