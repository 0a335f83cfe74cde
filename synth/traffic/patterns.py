"""Communication workloads: phased all-to-alls, permutations, random traffic and CSV matrices.

A workload is a sequence of phases; each phase is a flow set. Destination functions are
vectorized over (source, phase) arrays so that whole exchanges (67 M flows at 8192 ranks)
are generated in bulk.

Pattern names:
  a2a-lin[:SHIFT]  d = (s + p + SHIFT) mod N                         (003, sec. 2.2)
  a2a-xor          d = s xor p, N a power of two                     (003, sec. 2.2)
  a2a-opt          permuted variable base, sigma = (L..1)            (003, eq. 2.4)
  a2a-ghe          generalized hierarchical exchange                 (003, eq. 4.2-4.4)
  a2a-bgh          load-balanced hierarchical exchange               (003, eq. 4.7-4.9)
  shift:K, bitcomp, bitrev, randperm:SEED   one permutation
  uniform:SEED     every source sends to one uniformly random other rank
  csv:PATH         rows src,dst,bytes[,phase]
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from synth.core.errors import SynthError
from synth.core.intmath import div, is_power_of_two, mod, mul
from synth.traffic.flows import Flows

DEFAULT_MESSAGE_BYTES = 4096


def _digits(values: np.ndarray, bases: Sequence[int]) -> list[np.ndarray]:
    """Mixed-radix digits of `values`, least significant first (eq. 2.2)."""
    digits, rest = [], values
    for base in bases:
        digits.append(mod(rest, base))
        rest = div(rest, base)
    return digits


def _from_digits(digits: Sequence[np.ndarray], bases: Sequence[int]) -> np.ndarray:
    value, weight = np.zeros_like(digits[0]), 1
    for digit, base in zip(digits, bases):
        value = value + mul(digit, weight)
        weight *= base
    return value


# ----- destination functions d = f(s, p) ------------------------------------------------------

def lin_destinations(src, phase, num_ranks: int, shift: int = 0):
    return (src + phase + shift) % num_ranks


def xor_destinations(src, phase, num_ranks: int):
    return np.bitwise_xor(src, phase)


def opt_destinations(src, phase, hierarchy: Sequence[int]):
    """Eq. 2.4 with sigma-bar = (L, ..., 1): s and p in base Theta = (M_L, ..., M_1),
    d in base (M_1, ..., M_L), alpha^d_{L+1-k} = (theta^s_k + theta^p_k) mod Theta_k."""
    theta_bases = tuple(reversed(hierarchy))
    theta_s, theta_p = _digits(src, theta_bases), _digits(phase, theta_bases)
    levels = len(hierarchy)
    alpha = [mod(theta_s[levels - j] + theta_p[levels - j], hierarchy[j - 1]) for j in range(1, levels + 1)]
    return _from_digits(alpha, hierarchy)


def ghe_destinations(src, phase, hierarchy: Sequence[int]):
    """Eq. 4.2-4.4: h^d_l = (h^s_l + h^p_l) mod H_l, digits in base (H_0, ..., H_L)."""
    hs, hp = _digits(src, hierarchy), _digits(phase, hierarchy)
    return _from_digits([mod(a + b, base) for a, b, base in zip(hs, hp, hierarchy)], hierarchy)


def bgh_destinations(src, phase, hierarchy: Sequence[int]):
    """Eq. 4.7-4.9. omega^s_l = sum_{k<l} h^s_k N_{k-1} is the source's rank inside its
    layer-l subnetwork, so omega^s_l = s mod (H_0*...*H_{l-1}); alpha = 0 when H_l = 1."""
    hs, hp = _digits(src, hierarchy), _digits(phase, hierarchy)
    out, below = [], 1
    for level, base in enumerate(hierarchy):
        omega = src % below
        if base == 1:
            alpha = np.zeros_like(hp[level])
        else:
            alpha = np.where(hp[level] == 0, 0, (hp[level] - 1 + omega) % (base - 1) + 1)
        out.append((hs[level] + alpha) % base)
        below *= base
    return _from_digits(out, hierarchy)


def bit_reverse(values: np.ndarray, bits: int) -> np.ndarray:
    out = np.zeros_like(values)
    for b in range(bits):
        out |= ((values >> b) & 1) << (bits - 1 - b)
    return out


# ----- workloads ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Workload:
    """A named sequence of phases over `num_ranks` ranks.

    Phased patterns keep only their destination function; explicit ones (CSV) keep arrays.
    """

    pattern: str
    num_ranks: int
    num_phases: int
    message_bytes: int
    destination: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
    explicit: tuple[Flows, ...] | None = None
    is_all_to_all: bool = False

    def flows(self, phase: int) -> Flows:
        self.check_phase(phase)
        if self.explicit is not None:
            return self.explicit[phase]
        src = np.arange(self.num_ranks, dtype=np.int64)
        return Flows.uniform(src, self.destination(src, np.full_like(src, phase)), self.message_bytes)

    def check_phase(self, phase: int) -> None:
        if not 0 <= phase < self.num_phases:
            raise SynthError(f"phase {phase} out of range: '{self.pattern}' has phases 0..{self.num_phases - 1}")

    def batch(self, phases: np.ndarray, ranks: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(phase index into `phases`, src, dst, bytes) for all flows of several phases at once.

        Phased patterns list each phase's flows by source in the order of `ranks` (default
        0..N-1); load computations pass a scattered order, which spreads consecutive counter
        updates over many channels.
        """
        phases = np.asarray(phases, dtype=np.int64)
        if self.explicit is not None:
            parts = [self.explicit[int(p)] for p in phases]
            idx = np.repeat(np.arange(len(parts), dtype=np.int64), [len(f) for f in parts])
            return (idx, *(np.concatenate([getattr(f, name) for f in parts]) for name in ("src", "dst", "bytes")))
        n, num = self.num_ranks, phases.shape[0]
        ranks = np.arange(n, dtype=np.int64) if ranks is None else np.asarray(ranks, dtype=np.int64)
        # Destination functions broadcast: digits of the ranks and of the phases are taken once.
        dst = np.broadcast_to(self.destination(ranks[None, :], phases[:, None]), (num, n)).ravel()
        idx = np.repeat(np.arange(num, dtype=np.int64), n)
        return idx, np.tile(ranks, num), dst, np.full(n * num, self.message_bytes, dtype=np.int64)

    def describe(self) -> dict:
        return {
            "pattern": self.pattern,
            "ranks": self.num_ranks,
            "phases": self.num_phases,
            "message_bytes": self.message_bytes,
        }


def _single_phase(pattern: str, num_ranks: int, message_bytes: int, dst_of: Callable) -> Workload:
    return Workload(pattern, num_ranks, 1, message_bytes, destination=lambda s, p: dst_of(s))


def _int_argument(pattern: str, argument: str, what: str) -> int:
    try:
        return int(argument)
    except ValueError:
        raise SynthError(f"traffic pattern '{pattern}': {what} must be an integer, got '{argument}'") from None


def parse_pattern(pattern: str, num_ranks: int, hierarchy: Sequence[int], message_bytes: int = DEFAULT_MESSAGE_BYTES) -> Workload:
    """Build the workload a pattern name describes on a network of `num_ranks` terminals.

    `hierarchy` is the network's subnetwork sizes (M_1..M_H for an XGFT), used by OPT, GHE and BGH.
    """
    if message_bytes < 0:
        raise SynthError(f"message size must be non-negative, got {message_bytes}")
    name, _, argument = pattern.partition(":")
    n = num_ranks
    if name == "csv":
        return read_csv_workload(argument, n, message_bytes, pattern)
    phased: dict[str, Callable] = {
        "a2a-xor": lambda s, p: xor_destinations(s, p, n),
        "a2a-opt": lambda s, p: opt_destinations(s, p, hierarchy),
        "a2a-ghe": lambda s, p: ghe_destinations(s, p, (1,) + tuple(hierarchy)),
        "a2a-bgh": lambda s, p: bgh_destinations(s, p, (1,) + tuple(hierarchy)),
    }
    if name == "a2a-lin":
        shift = _int_argument(pattern, argument, "the shift") if argument else 0
        return Workload(pattern, n, n, message_bytes, lambda s, p: lin_destinations(s, p, n, shift), is_all_to_all=True)
    if name in phased:
        if argument:
            raise SynthError(f"traffic pattern '{name}' takes no argument, got '{pattern}'")
        if name == "a2a-xor" and not is_power_of_two(n):
            raise SynthError(f"a2a-xor needs a power-of-two number of ranks, this network has {n}")
        return Workload(pattern, n, n, message_bytes, phased[name], is_all_to_all=True)
    if name == "shift":
        if not argument:
            raise SynthError("traffic pattern 'shift' needs an offset: shift:K")
        k = _int_argument(pattern, argument, "the offset")
        return _single_phase(pattern, n, message_bytes, lambda s: (s + k) % n)
    if name == "bitcomp" and not argument:
        return _single_phase(pattern, n, message_bytes, lambda s: n - 1 - s)
    if name == "bitrev" and not argument:
        if not is_power_of_two(n):
            raise SynthError(f"bitrev needs a power-of-two number of ranks, this network has {n}")
        bits = n.bit_length() - 1
        return _single_phase(pattern, n, message_bytes, lambda s: bit_reverse(s, bits))
    if name == "randperm":
        seed = _int_argument(pattern, argument, "the seed") if argument else 0
        permutation = np.random.default_rng(seed).permutation(n).astype(np.int64)
        return _single_phase(pattern, n, message_bytes, lambda s: permutation[s])
    if name == "uniform":
        seed = _int_argument(pattern, argument, "the seed") if argument else 0
        if n < 2:
            raise SynthError("uniform traffic needs at least two ranks")
        offsets = np.random.default_rng(seed).integers(1, n, size=n).astype(np.int64)
        return _single_phase(pattern, n, message_bytes, lambda s: (s + offsets[s]) % n)
    raise SynthError(
        f"unknown traffic pattern '{pattern}' (known: a2a-lin[:SHIFT], a2a-xor, a2a-opt, a2a-ghe, a2a-bgh, "
        "shift:K, bitcomp, bitrev, randperm:SEED, uniform:SEED, csv:PATH)"
    )


def read_csv_workload(path: str, num_ranks: int, default_bytes: int, pattern: str) -> Workload:
    """A traffic matrix: rows `src,dst[,bytes[,phase]]`, an optional header, '#' comments."""
    if not path:
        raise SynthError("traffic pattern 'csv' needs a file: csv:PATH")
    try:
        with open(path, newline="") as handle:
            rows = [row for row in csv.reader(handle) if row and not row[0].lstrip().startswith("#")]
    except OSError as exc:
        raise SynthError(f"cannot read traffic file '{path}': {exc.strerror}") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise SynthError(f"traffic file '{path}' is not a readable CSV file: {exc}") from None
    if rows and not rows[0][0].strip().lstrip("-").isdigit():
        rows = rows[1:]  # header
    if not rows:
        raise SynthError(f"traffic file '{path}' has no flows")
    values = []
    for line_no, row in enumerate(rows, start=1):
        if not 2 <= len(row) <= 4:
            raise SynthError(f"traffic file '{path}', flow {line_no}: expected src,dst[,bytes[,phase]], got {len(row)} columns")
        try:
            fields = [int(v) for v in row]
        except ValueError:
            raise SynthError(f"traffic file '{path}', flow {line_no}: values must be integers, got {','.join(row)}") from None
        src, dst = fields[0], fields[1]
        size = fields[2] if len(fields) > 2 else default_bytes
        phase = fields[3] if len(fields) > 3 else 0
        if not (0 <= src < num_ranks and 0 <= dst < num_ranks):
            raise SynthError(f"traffic file '{path}', flow {line_no}: rank out of range 0..{num_ranks - 1}")
        if size < 0 or phase < 0:
            raise SynthError(f"traffic file '{path}', flow {line_no}: bytes and phase must be non-negative")
        values.append((src, dst, size, phase))
    table = np.array(values, dtype=np.int64)
    num_phases = int(table[:, 3].max()) + 1
    phases = tuple(
        Flows(table[sel, 0], table[sel, 1], table[sel, 2]) for sel in (table[:, 3] == p for p in range(num_phases))
    )
    return Workload(pattern, num_ranks, num_phases, default_bytes, explicit=phases)
