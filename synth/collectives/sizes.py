"""Block sizes of an alltoallv (`--sizes`):
- `random:S:SEED`: every block s -> d uniform in [0, S] bytes (Fan24's evaluation; S a size as
  synth.core.sizes reads it: 4096, 64KiB);
- `moe:S:H:F:SEED`: a mixture of experts' dispatch: every block uniform in [0, S], but the blocks
  into H hot destinations (drawn by SEED) F times as large, the load a few popular experts draw;
- `zipf:S:A:SEED`: a Zipf-distributed matrix: the P^2 blocks in an order drawn by SEED, the k-th
  of S / k^A bytes (rounded down): a few large blocks, a long tail of small ones;
- `csv:PATH`: a P x P matrix (row s, column d: the bytes s sends to d; comma-separated integers,
  `#` comment lines)."""

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
    if kind == "moe":
        return _experts(text, rest.split(":"), ranks)
    if kind == "zipf":
        return _zipf(text, rest.split(":"), ranks)
    if kind == "csv":
        return _matrix(rest, ranks)
    raise SynthError(f"--sizes {show(text)}: expected random:S:SEED, moe:S:H:F:SEED, zipf:S:A:SEED or csv:PATH")


def _experts(text: str, parts: list[str], ranks: int) -> np.ndarray:
    if len(parts) != 4:
        raise SynthError(f"--sizes {show(text)}: expected moe:S:H:F:SEED")
    top = parse_size(parts[0], "--sizes moe: S", minimum=0)
    hot = parse_int(parts[1], "--sizes moe: H (hot destinations)", 1, ranks)
    factor = parse_int(parts[2], "--sizes moe: F (their blocks' factor)", 1, 1 << 20)
    seed = parse_int(parts[3], "--sizes moe: SEED", 0)
    if top * factor > MAX_BLOCK_BYTES:
        raise SynthError(f"--sizes {show(text)}: hot blocks of up to {top * factor:,} B, more than {MAX_BLOCK_BYTES:,}")
    generator = np.random.default_rng(seed)
    hottest = generator.choice(ranks, size=hot, replace=False)
    matrix = native(lambda: generator.integers(0, top + 1, ranks * ranks, dtype=np.int64)).reshape(ranks, ranks)
    matrix[:, hottest] *= factor
    return matrix.ravel()


def _zipf(text: str, parts: list[str], ranks: int) -> np.ndarray:
    if len(parts) != 3:
        raise SynthError(f"--sizes {show(text)}: expected zipf:S:A:SEED")
    top = parse_size(parts[0], "--sizes zipf: S", minimum=0)
    try:
        exponent = float(parts[1])
    except ValueError:
        exponent = -1.0
    if not 0.0 <= exponent <= 8.0:
        raise SynthError(f"--sizes zipf: A: expected a number from 0 to 8, got {show(parts[1])}")
    seed = parse_int(parts[2], "--sizes zipf: SEED", 0)
    order = np.random.default_rng(seed).permutation(ranks * ranks)
    # the k-th largest block (k from 1) has S / k^A bytes
    sizes = np.floor(top / np.power(np.arange(1, ranks * ranks + 1, dtype=np.float64), exponent)).astype(np.int64)
    matrix = np.empty(ranks * ranks, dtype=np.int64)
    matrix[order] = sizes
    return matrix


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
