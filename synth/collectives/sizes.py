"""Block sizes of an alltoallv (`--sizes`): `random:S:SEED`, every block s -> d uniform in [0, S]
bytes (Fan24's evaluation; S a size as synth.core.sizes reads it: 4096, 64KiB), or `csv:PATH`, a
P x P matrix (row s, column d: the bytes s sends to d; comma-separated integers, `#` comment lines)."""

from __future__ import annotations

import numpy as np

from synth.core.errors import SynthError
from synth.core.interrupt import native
from synth.core.sizes import parse_size
from synth.core.validate import parse_int, read_text, show

MAX_BLOCK_BYTES = 1 << 40


def parse_sizes(text: str, ranks: int) -> np.ndarray:
    """The P^2 block sizes, block s P + d from s to d (in the least integer type that holds them)."""
    kind, _, rest = text.partition(":")
    if kind == "random":
        parts = rest.split(":")
        if len(parts) != 2:
            raise SynthError(f"--sizes {show(text)}: expected random:S:SEED")
        # S is the largest block (blocks uniform in [0, S]): 0 is a size here, an exchange of empty blocks
        top = parse_size(parts[0], "--sizes random: S", minimum=0)
        seed = parse_int(parts[1], "--sizes random: SEED", 0)
        kind = np.uint16 if top < 1 << 16 else np.uint32 if top < 1 << 32 else np.int64  # P^2 of them: the least type
        generator = np.random.default_rng(seed)
        # numpy fills the array without the GIL: under native, a signal stops a P^2 = 2^28 fill at once
        return native(lambda: generator.integers(0, top + 1, ranks * ranks, dtype=kind))
    if kind == "csv":
        return _matrix(rest, ranks)
    raise SynthError(f"--sizes {show(text)}: expected random:S:SEED or csv:PATH")


def _matrix(path: str, ranks: int) -> np.ndarray:
    rows = [line for line in read_text(path, "sizes matrix", 1 << 30).splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if len(rows) != ranks:
        raise SynthError(f"sizes matrix '{path}' has {len(rows)} rows, the alltoallv has {ranks} ranks")
    out = np.empty((ranks, ranks), dtype=np.int64)
    for s, line in enumerate(rows):
        cells = line.split(",")
        if len(cells) != ranks:
            raise SynthError(f"sizes matrix '{path}', row {s + 1}: {len(cells)} columns, expected {ranks}")
        out[s] = [parse_int(c.strip(), f"sizes matrix '{path}', row {s + 1}", 0, MAX_BLOCK_BYTES) for c in cells]
    return out.ravel()


def exchange_matrix(sizes, ranks: int) -> np.ndarray:
    """An alltoallv's P^2 block sizes, flat (block s P + d from s to d), from a `--sizes` spec or an
    array, checked: P^2 whole, non-negative numbers with at least one block between two ranks that
    is not empty (synthesis and compare take the same matrices)."""
    matrix = parse_sizes(sizes, ranks) if isinstance(sizes, str) else np.asarray(sizes)
    if matrix.size != ranks * ranks:
        raise SynthError(f"an alltoallv of {ranks} ranks has {ranks * ranks} block sizes, not {matrix.size}")
    if matrix.dtype.kind not in "iu" or (matrix < 0).any():
        raise SynthError("an alltoallv's block sizes are whole numbers of bytes, none negative")
    matrix = matrix.reshape(-1)
    if not (matrix.reshape(ranks, ranks) * ~np.eye(ranks, dtype=bool)).any():
        raise SynthError("every block between two ranks of this alltoallv is empty: nothing to exchange")
    return matrix
