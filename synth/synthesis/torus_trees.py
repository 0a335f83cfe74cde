"""Four arc-disjoint spanning trees of a 2D torus from any root (the broadcast's cut bound on a
2D torus, or a reduce's run backwards, at any size: no packing is made above PACKING_WORK, and
the chains along the Hamiltonian cycles are P - 1 hops deep).

A 2D torus's rank has four links out and four in, so a broadcast is bound by the message over
four links (synth.pricing.bounds); four spanning trees that share no arc meet it once
pipelined, every link carrying a quarter of the message. Relative to the root, (i, j) with
0 <= i < c along x and 0 <= j < r along y, c, r >= 3:

- tree +x: the root's row along +x, then every other column along +y from the row, and
  column 0's ranks from column 1 (a -x arc);
- tree -x: the row along -x, the columns along -y, column 0 from column c - 1 (a +x arc);
- tree +y: the root's column along +y, the rows along +x from it, row 0 from row 1 (a -y arc);
- tree -y: the column along -y, the rows along -x, row 0 from row r - 1 (a +y arc).

A +x arc is tree +x's on row 0, tree +y's on the other rows but their last arc (from c - 1 to
0), which tree -x takes; and so for each direction: every arc in one tree at most. Each tree is
c + r - 2 hops deep (a rank's link starts one message a step), so R rounds pipelined take
R + c + r - 3 steps (the layout of synth.synthesis.tree_packing.pipelined_trees).
"""

from __future__ import annotations

import numpy as np

from synth.core.errors import SynthError


def torus_trees(dims: tuple[int, ...], root: int) -> np.ndarray:
    """(4, P) per tree and rank its parent rank (-1 at the root) on the torus of `dims` (c, r)
    whose rank x + c y sits at (x, y)."""
    if len(dims) != 2 or min(dims) < 3:
        raise SynthError(f"four arc-disjoint trees need a 2D torus with both sides at least 3, not {dims}")
    c, r = dims
    rank = np.arange(c * r)
    i, j = (rank % c - root % c) % c, (rank // c - root // c) % r  # relative to the root

    def at(di, dj) -> np.ndarray:  # the rank at (i + di, j + dj) from each rank
        return ((i + di + root % c) % c) + c * ((j + dj + root // c) % r)

    row, column, rest = (j == 0) & (i > 0), (i == 0) & (j > 0), (i > 0) & (j > 0)
    parent = np.full((4, c * r), -1, dtype=np.int64)
    parent[0] = np.select([row, rest, column], [at(-1, 0), at(0, -1), at(1, 0)], -1)
    parent[1] = np.select([row, rest, column], [at(1, 0), at(0, 1), at(-1, 0)], -1)
    parent[2] = np.select([column, rest, row], [at(0, -1), at(-1, 0), at(0, 1)], -1)
    parent[3] = np.select([column, rest, row], [at(0, 1), at(1, 0), at(0, -1)], -1)
    return parent
