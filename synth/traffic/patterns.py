"""Communication workloads: phased all-to-alls, permutations, random traffic and CSV matrices.

A workload is a sequence of phases; each phase is a flow set. Destination functions are
vectorized over (source, phase) arrays so that whole exchanges (67 M flows at 8192 ranks)
are generated in bulk.

Pattern names:
  a2a-lin[:SHIFT]  d = (s + p + SHIFT) mod N                         (Prisacari20, sec. 2.2)
  a2a-xor          d = s xor p, N a power of two                     (Prisacari20, sec. 2.2)
  a2a-opt          permuted variable base, sigma = (L..1)            (Prisacari20, eq. 2.4)
  a2a-ghe          generalized hierarchical exchange                 (Prisacari20, eq. 4.2-4.4)
  a2a-bgh          load-balanced hierarchical exchange               (Prisacari20, eq. 4.7-4.9)
  a2a-lat          latency-aware exchange of dragonflies, blocks by path shape (Prisacari20 ch.4; traffic/lat.py)
  shift:K, bitcomp, bitrev, randperm:SEED   one permutation (bitrev: N not a power of two, the ranks
                   below the largest power of two 2^k reversed in k bits, the others to themselves)
  uniform:SEED     every source sends to one uniformly random other rank
  stencil:A1xA2x...:B1xB2x...   nearest-neighbour exchange of a task grid (Prisacari20 ch.5; traffic/stencil.py)
  worst-case       the ch.7 worst case of Slim Fly, MLFM and OFT under minimal routing (traffic/worst_case.py)
  csv:PATH         rows src,dst,bytes[,phase]

Ranks are tasks; a placement (synth.traffic.placement) puts them on terminals, so flows name
terminals: contiguous (task i on terminal i) unless one is given.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, replace
from math import prod
from typing import Callable, Sequence

import numpy as np

from synth.core.errors import SynthError
from synth.core.registry import Registry
from synth.core.validate import parse_int, show
from synth.core.intmath import div, is_power_of_two, mod, mul
from synth.traffic.flows import Flows
from synth.traffic.lat import lat_destinations
from synth.traffic.placement import placement_map
from synth.traffic.stencil import stencil_flows, stencil_grids
from synth.traffic.worst_case import worst_case_destinations

DEFAULT_MESSAGE_BYTES = 4096
_PHASE_PART = re.compile(r"([0-9]+)(?:-([0-9]+))?")  # one item of a phase selection
MAX_MESSAGE_BYTES = 1 << 40  # 1 TiB


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

    Phased patterns keep only their destination function; explicit ones (CSV) keep arrays, one
    Flows per phase that has flows, with the phase numbers in `explicit_phases` (sorted): phase
    numbers are labels, stored sparsely, so a matrix with phases 0 and 10^15 is two phases.
    """

    pattern: str
    num_ranks: int
    num_phases: int
    message_bytes: int
    destination: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
    explicit: tuple[Flows, ...] | None = None
    explicit_phases: np.ndarray | None = None
    is_all_to_all: bool = False
    task_grid: tuple[int, ...] | None = None  # a stencil's task grid, for the Cartesian placement
    placement: np.ndarray | None = None  # terminal of every task; None: task i on terminal i
    placement_text: str = "contiguous"
    component: np.ndarray | None = None  # degraded networks: per terminal its connected component (on_network)

    def place(self, text: str, terminals: int, hierarchy) -> "Workload":
        """This workload with its tasks on terminals as `text` says (synth.traffic.placement)."""
        mapping = placement_map(text.strip(), self.num_ranks, terminals, hierarchy, self.task_grid)
        return replace(self, placement=mapping, placement_text=text.strip())

    def on_network(self, network) -> "Workload":
        """This workload on a degraded network (synth.topology.degraded): flows between terminals
        that no longer reach each other are dropped from every phase (`unreachable` counts them)."""
        from synth.topology.degraded import terminal_components

        return replace(self, component=terminal_components(network))

    def reachable(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray | None:
        """Per flow whether its ends still meet (None on an intact network: all do)."""
        if self.component is None:
            return None
        return (self.component[src] == self.component[dst]) & (self.component[src] >= 0)  # (cut off: labels < 0)

    def unreachable(self, phases: np.ndarray) -> np.ndarray:
        """Per selected phase, the flows dropped because their ends no longer reach each other."""
        phases = np.asarray(phases, dtype=np.int64)
        if self.component is None:
            return np.zeros(len(phases), dtype=np.int64)
        idx, src, dst, _ = replace(self, component=None).batch(phases)
        return np.bincount(idx[~self.reachable(src, dst)], minlength=len(phases))

    def _terminals(self, ranks: np.ndarray) -> np.ndarray:
        return ranks if self.placement is None else self.placement[ranks]

    @property
    def phase_numbers(self) -> np.ndarray:
        if self.explicit_phases is not None:
            return self.explicit_phases
        return np.arange(self.num_phases, dtype=np.int64)

    def has_phase(self, phase: int) -> bool:
        if self.explicit_phases is not None:
            i = int(np.searchsorted(self.explicit_phases, phase))
            return i < len(self.explicit_phases) and int(self.explicit_phases[i]) == phase
        return 0 <= phase < self.num_phases

    def _explicit_index(self, phase: int) -> int:
        self.check_phase(phase)
        return int(np.searchsorted(self.explicit_phases, phase))

    def flows(self, phase: int) -> Flows:
        if self.explicit is not None:
            flows = self.explicit[self._explicit_index(phase)]
            flows = Flows(self._terminals(flows.src), self._terminals(flows.dst), flows.bytes)
        else:
            self.check_phase(phase)
            src = np.arange(self.num_ranks, dtype=np.int64)
            dst = self.destination(src, np.full_like(src, phase))
            flows = Flows.uniform(self._terminals(src), self._terminals(dst), self.message_bytes)
        keep = self.reachable(flows.src, flows.dst)
        return flows if keep is None else Flows(flows.src[keep], flows.dst[keep], flows.bytes[keep])

    def check_phase(self, phase: int) -> None:
        if not self.has_phase(phase):
            raise SynthError(f"phase {phase} is not a phase of '{self.pattern}' ({self.describe_phases()})")

    def describe_phases(self) -> str:
        numbers = self.phase_numbers
        if self.explicit_phases is None:
            return f"phases 0..{self.num_phases - 1}"
        shown = ", ".join(map(str, numbers[:5].tolist())) + (", ..." if len(numbers) > 5 else "")
        return f"{len(numbers)} phases: {shown}"

    def select(self, text: str) -> np.ndarray:
        """Phase numbers from a selection: `all`, `P`, `P1,P2,...` or ranges `A-B` (inclusive).
        Every number must be a phase of the workload and none may be selected twice; ranges are
        checked against the workload before any list is made (a selection of 10^12 phases fails
        at once instead of filling memory)."""
        what = f"phase selection {show(text)}"
        if not isinstance(text, str) or not text.strip():
            raise SynthError(f"{what} is empty: use all, P, P1,P2,... or A-B")
        text = text.strip()
        if text == "all":
            return self.phase_numbers.copy()
        parts: list[np.ndarray] = []
        for part in text.split(","):
            match = _PHASE_PART.fullmatch(part.strip())
            if not match:
                raise SynthError(f"{what}: expected all, P, P1,P2,... or A-B with phase numbers in ASCII digits, "
                                 f"got {show(part.strip())}")
            start = parse_int(match.group(1), what)
            stop = parse_int(match.group(2), what) if match.group(2) else start
            dash = match.group(2) is not None
            if stop < start:
                raise SynthError(f"{what}: range {part.strip()} runs backwards")
            numbers = self.phase_numbers
            if self.explicit_phases is None:
                if stop >= self.num_phases:
                    raise SynthError(f"phase {stop} out of range: '{self.pattern}' has phases 0..{self.num_phases - 1}")
                parts.append(np.arange(start, stop + 1, dtype=np.int64))
            else:
                chosen = numbers[np.searchsorted(numbers, start) : np.searchsorted(numbers, stop, side="right")]
                if not dash and not len(chosen):
                    self.check_phase(start)
                if not len(chosen):
                    raise SynthError(f"{what}: no phase of '{self.pattern}' in {part.strip()} ({self.describe_phases()})")
                parts.append(chosen)
        selected = np.concatenate(parts)
        if len(np.unique(selected)) != len(selected):
            values, counts = np.unique(selected, return_counts=True)
            raise SynthError(f"{what} selects phase {int(values[np.argmax(counts > 1)])} twice")
        return selected

    def batch(self, phases: np.ndarray, ranks: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(phase index into `phases`, src, dst, bytes) for all flows of several phases at once.

        Phased patterns list each phase's flows by source in the order of `ranks` (default
        0..N-1); load computations pass a scattered order, which spreads consecutive counter
        updates over many channels.
        """
        phases = np.asarray(phases, dtype=np.int64)
        if self.explicit is not None:
            parts = [self.explicit[self._explicit_index(int(p))] for p in phases]
            idx = np.repeat(np.arange(len(parts), dtype=np.int64), [len(f) for f in parts])
            src, dst, size = (np.concatenate([getattr(f, name) for f in parts]) for name in ("src", "dst", "bytes"))
            return self._kept(idx, self._terminals(src), self._terminals(dst), size)
        n, num = self.num_ranks, phases.shape[0]
        ranks = np.arange(n, dtype=np.int64) if ranks is None else np.asarray(ranks, dtype=np.int64)
        # Destination functions broadcast: digits of the ranks and of the phases are taken once.
        dst = np.broadcast_to(self.destination(ranks[None, :], phases[:, None]), (num, n)).ravel()
        idx = np.repeat(np.arange(num, dtype=np.int64), n)
        src = np.tile(ranks, num)
        return self._kept(idx, self._terminals(src), self._terminals(dst), np.full(n * num, self.message_bytes, dtype=np.int64))

    def _kept(self, idx, src, dst, size):
        keep = self.reachable(src, dst)
        return (idx, src, dst, size) if keep is None else (idx[keep], src[keep], dst[keep], size[keep])

    def sizes_differ(self, phases: np.ndarray) -> bool:
        """Whether the flows of some selected phase differ in bytes (only explicit matrices can)."""
        if self.explicit is None:
            return False
        sizes = (self.explicit[self._explicit_index(int(p))].bytes for p in phases)
        return any(len(b) and b.min() != b.max() for b in sizes)

    def flow_count(self, phases: np.ndarray) -> int:
        """Flows of the selected phases, counted without making them (size guards)."""
        if self.explicit is None:
            return self.num_ranks * len(phases)
        return int(sum(len(self.explicit[self._explicit_index(int(p))]) for p in phases))

    def describe(self) -> dict:
        placement = {} if self.placement is None else {"placement": self.placement_text}
        return {
            "pattern": self.pattern,
            "ranks": self.num_ranks,
            "phases": self.num_phases,
            "message_bytes": self.message_bytes,
            **placement,
        }


def _single_phase(pattern: str, num_ranks: int, message_bytes: int, dst_of: Callable) -> Workload:
    return Workload(pattern, num_ranks, 1, message_bytes, destination=lambda s, p: dst_of(s))


def _int_argument(pattern: str, argument: str, what: str, minimum: int | None = None) -> int:
    return parse_int(argument, f"traffic pattern {show(pattern)}: {what}", minimum)


@dataclass(frozen=True)
class PatternRequest:
    """What a pattern builder gets: the pattern text split at its first ':' and the network's facts."""

    pattern: str
    argument: str
    ranks: int
    hierarchy: Sequence[int] | None
    message_bytes: int
    max_flows: int | None
    topology: object

    def integer(self, what: str, minimum: int | None = None, default: int | None = None) -> int:
        if not self.argument:
            if default is None:
                raise SynthError(f"traffic pattern {show(self.pattern)} needs {what}")
            return default
        return parse_int(self.argument, f"traffic pattern {show(self.pattern)}: {what}", minimum)

    def no_argument(self) -> None:
        if self.argument:
            raise SynthError(f"traffic pattern {show(self.pattern.partition(':')[0])} takes no argument, got {show(self.pattern)}")

    def needs_hierarchy(self) -> Sequence[int]:
        if self.hierarchy is None or prod(self.hierarchy) != self.ranks:
            raise SynthError(f"traffic pattern {show(self.pattern)} needs a hierarchical network (Prisacari20 ch.4: xgft, "
                             f"dragonfly, ...); this one has no hierarchy of its {self.ranks} terminals")
        return self.hierarchy


@dataclass(frozen=True)
class PatternKind:
    name: str
    syntax: str
    description: str
    build: Callable[[PatternRequest], "Workload"]


PATTERNS: Registry[PatternKind] = Registry("traffic pattern")


def _pattern(name: str, syntax: str, description: str):
    def register(build: Callable[[PatternRequest], Workload]):
        PATTERNS.register(name, PatternKind(name, syntax, description, build))
        return build
    return register


def pattern_syntaxes() -> str:
    return ", ".join(kind.syntax for _, kind in PATTERNS.items())


def parse_pattern(pattern: str, num_ranks: int, hierarchy: Sequence[int] | None, message_bytes: int = DEFAULT_MESSAGE_BYTES,
                  max_flows: int | None = None, topology=None) -> Workload:
    """Build the workload a pattern name describes on a network of `num_ranks` terminals.

    `hierarchy` is the network's subnetwork sizes (M_1..M_H for an XGFT), used by OPT, GHE and BGH;
    `max_flows` caps the rows read from a CSV file; `topology` (its groups and links) is what
    a2a-lat pairs by.
    """
    if message_bytes < 0 or message_bytes > MAX_MESSAGE_BYTES:
        raise SynthError(f"message size must be between 0 and {MAX_MESSAGE_BYTES} bytes, got {message_bytes}")
    name, colon, argument = pattern.partition(":")
    if name not in PATTERNS:
        raise SynthError(f"unknown traffic pattern {show(pattern)} (known: {pattern_syntaxes()})")
    if colon and not argument:
        raise SynthError(f"traffic pattern {show(pattern)}: nothing after ':' ({PATTERNS[name].syntax})")
    request = PatternRequest(pattern, argument, num_ranks, hierarchy, message_bytes, max_flows, topology)
    return PATTERNS[name].build(request)


def _all_to_all(request: PatternRequest, destination: Callable) -> Workload:
    n = request.ranks
    return Workload(request.pattern, n, n, request.message_bytes, destination, is_all_to_all=True)


@_pattern("a2a-lin", "a2a-lin[:SHIFT]", "linear shift all-to-all, phase p: d = (s + p + SHIFT) mod N (Prisacari20 sec. 2.2)")
def _lin(request: PatternRequest) -> Workload:
    shift, n = request.integer("the shift", default=0), request.ranks
    return _all_to_all(request, lambda s, p: lin_destinations(s, p, n, shift))


@_pattern("a2a-xor", "a2a-xor", "d = s xor p, N a power of two (Prisacari20 sec. 2.2)")
def _xor(request: PatternRequest) -> Workload:
    request.no_argument()
    n = request.ranks
    if not is_power_of_two(n):
        raise SynthError(f"a2a-xor needs a power-of-two number of ranks, this network has {n}")
    return _all_to_all(request, lambda s, p: xor_destinations(s, p, n))


@_pattern("a2a-opt", "a2a-opt", "the bandwidth-optimal exchange of eq. 2.4 (Prisacari20)")
def _opt(request: PatternRequest) -> Workload:
    request.no_argument()
    hierarchy = request.needs_hierarchy()
    return _all_to_all(request, lambda s, p: opt_destinations(s, p, hierarchy))


@_pattern("a2a-ghe", "a2a-ghe", "generalized hierarchical exchange (Prisacari20 eq. 4.2-4.4)")
def _ghe(request: PatternRequest) -> Workload:
    request.no_argument()
    hierarchy = (1,) + tuple(request.needs_hierarchy())
    return _all_to_all(request, lambda s, p: ghe_destinations(s, p, hierarchy))


@_pattern("a2a-bgh", "a2a-bgh", "load-balanced hierarchical exchange (Prisacari20 eq. 4.7-4.9)")
def _bgh(request: PatternRequest) -> Workload:
    request.no_argument()
    hierarchy = (1,) + tuple(request.needs_hierarchy())
    return _all_to_all(request, lambda s, p: bgh_destinations(s, p, hierarchy))


@_pattern("a2a-lat", "a2a-lat", "latency-aware exchange of dragonflies, blocks by path shape (Prisacari20 ch.4)")
def _lat(request: PatternRequest) -> Workload:
    request.no_argument()
    topology = request.topology
    groups = topology.router_groups() if topology is not None else None
    if groups is None:
        raise SynthError("traffic pattern 'a2a-lat' needs a network of groups (Prisacari20 ch.4: dragonflies)")
    terminals = topology.network().num_terminals
    if request.ranks != terminals:  # its phases pair terminals by their routers' links
        raise SynthError(f"traffic pattern 'a2a-lat' pairs the {terminals} terminals by their links: one rank a "
                         f"terminal, not {request.ranks} ranks")
    table = lat_destinations(topology.network(), groups)
    return _all_to_all(request, lambda s, p: table[p, s])


@_pattern("a2a-all", "a2a-all", "every ordered pair of distinct ranks in one phase: a whole exchange at once (the "
          "routing of synth synthesize alltoall)")
def _all_pairs(request: PatternRequest) -> Workload:
    request.no_argument()
    n = request.ranks
    src, dst = np.nonzero(~np.eye(n, dtype=bool))  # by source, then destination
    return Workload(request.pattern, n, 1, request.message_bytes, explicit=(Flows.uniform(src, dst, request.message_bytes),),
                    explicit_phases=np.zeros(1, dtype=np.int64))


@_pattern("shift", "shift:K", "one permutation: d = (s + K) mod N")
def _shift(request: PatternRequest) -> Workload:
    k, n = request.integer("an offset (shift:K)"), request.ranks
    return _single_phase(request.pattern, n, request.message_bytes, lambda s: (s + k) % n)


@_pattern("bitcomp", "bitcomp", "one permutation: d = N - 1 - s (Prisacari20 ch.6)")
def _bitcomp(request: PatternRequest) -> Workload:
    request.no_argument()
    n = request.ranks
    return _single_phase(request.pattern, n, request.message_bytes, lambda s: n - 1 - s)


@_pattern("bitrev", "bitrev", "one permutation: bit reversal (N not a power of two: the ranks below the largest "
          "power of two 2^k reversed in k bits, the others to themselves)")
def _bitrev(request: PatternRequest) -> Workload:
    request.no_argument()
    # With N not a power of two (Prisacari20 ch.6 leaves it open; its 1056-node dragonfly is one), the
    # ranks below 2^k, k = floor(log2 N), send to their k-bit reversal and the other N - 2^k
    # send to themselves (no network traffic): a permutation that is the usual one on 2^k ranks.
    bits = request.ranks.bit_length() - 1
    return _single_phase(request.pattern, request.ranks, request.message_bytes,
                         lambda s: np.where(s < (1 << bits), bit_reverse(np.minimum(s, (1 << bits) - 1), bits), s))


@_pattern("randperm", "randperm:SEED", "one seeded random permutation")
def _randperm(request: PatternRequest) -> Workload:
    seed = request.integer("the seed", 0, default=0)
    permutation = np.random.default_rng(seed).permutation(request.ranks).astype(np.int64)
    return _single_phase(request.pattern, request.ranks, request.message_bytes, lambda s: permutation[s])


@_pattern("uniform", "uniform:SEED", "every rank sends to one uniformly random other rank")
def _uniform(request: PatternRequest) -> Workload:
    seed, n = request.integer("the seed", 0, default=0), request.ranks
    if n < 2:
        raise SynthError("uniform traffic needs at least two ranks")
    offsets = np.random.default_rng(seed).integers(1, n, size=n).astype(np.int64)
    return _single_phase(request.pattern, n, request.message_bytes, lambda s: (s + offsets[s]) % n)


@_pattern("stencil", "stencil:A1xA2x...:B1xB2x...", "nearest-neighbour exchange of a task grid (Prisacari20 ch.5, eq. 5.7-5.8)")
def _stencil(request: PatternRequest) -> Workload:
    alpha, beta = stencil_grids(request.pattern, request.argument)
    if prod(beta) > request.ranks:
        raise SynthError(f"traffic pattern {show(request.pattern)} has {prod(beta)} tasks, the network {request.ranks} terminals")
    flows = stencil_flows(alpha, beta, request.message_bytes)
    return Workload(request.pattern, prod(beta), 1, request.message_bytes, explicit=(flows,),
                    explicit_phases=np.zeros(1, dtype=np.int64), task_grid=beta)


@_pattern("worst-case", "worst-case", "the minimal-routing worst case of slimfly (distance-two router pairs with "
          "overlapping routes), mlfm (shift by h) and oft (shift by k), Prisacari20 sec. 7.4.2")
def _worst_case(request: PatternRequest) -> Workload:
    request.no_argument()
    if request.topology is None:
        raise SynthError("traffic pattern 'worst-case' needs the network it is the worst case of")
    table = worst_case_destinations(request.topology, request.ranks)
    return _single_phase(request.pattern, request.ranks, request.message_bytes, lambda s: table[s])


@_pattern("csv", "csv:PATH", "a traffic matrix, rows src,dst[,bytes[,phase]]")
def _csv(request: PatternRequest) -> Workload:
    return read_csv_workload(request.argument, request.ranks, request.message_bytes, request.pattern, request.max_flows)


CSV_COLUMNS = ("src", "dst", "bytes", "phase")


def read_csv_workload(path: str, num_ranks: int, default_bytes: int, pattern: str, max_flows: int | None = None) -> Workload:
    """A traffic matrix: rows `src,dst[,bytes[,phase]]`, '#' comments, and optionally a first
    row that names the columns (`src,dst[,bytes[,phase]]`; nothing else counts as a header, so a
    mistyped first flow is an error instead of being dropped). Phases are the distinct numbers of
    the phase column, stored sparsely. More than `max_flows` rows are refused while reading."""
    if not path:
        raise SynthError("traffic pattern 'csv' needs a file: csv:PATH")
    where = f"traffic file '{path}'"
    values: list[tuple[int, int, int, int]] = []
    header = False
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            for line_no, row in enumerate(csv.reader(handle), start=1):
                if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
                    continue
                cells = [cell.strip() for cell in row]
                if line_no == 1 and cells[0].startswith("\ufeff"):
                    raise SynthError(f"{where} starts with a byte-order mark: save it as plain UTF-8")
                if not values and not header and _is_header(cells):
                    header = True
                    continue
                values.append(_csv_flow(cells, where, line_no, num_ranks, default_bytes))
                if max_flows is not None and len(values) > max_flows:
                    raise SynthError(f"{where} has more than {max_flows:,} flows, the limit for this run; "
                                     f"lift it with --max-flows N")
    except OSError as exc:
        raise SynthError(f"cannot read {where}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise SynthError(f"{where} is not UTF-8 text (byte {exc.start})") from None
    except csv.Error as exc:
        raise SynthError(f"{where} is not a readable CSV file: {exc}") from None
    if not values:
        raise SynthError(f"{where} has no flows")
    table = np.array(values, dtype=np.int64)
    numbers, which = np.unique(table[:, 3], return_inverse=True)
    order = np.argsort(which, kind="stable")  # flows keep their file order within a phase
    cuts = np.searchsorted(which[order], np.arange(1, len(numbers)))
    phases = tuple(Flows(part[:, 0], part[:, 1], part[:, 2]) for part in np.split(table[order], cuts))
    return Workload(pattern, num_ranks, len(numbers), default_bytes, explicit=phases, explicit_phases=numbers)


def _is_header(cells: list[str]) -> bool:
    return 2 <= len(cells) <= 4 and [c.lower() for c in cells] == list(CSV_COLUMNS[: len(cells)])


def _csv_flow(cells: list[str], where: str, line_no: int, num_ranks: int, default_bytes: int) -> tuple[int, int, int, int]:
    if not 2 <= len(cells) <= 4:
        raise SynthError(f"{where}, line {line_no}: expected src,dst[,bytes[,phase]], got {len(cells)} columns")
    at = f"{where}, line {line_no}"
    src = parse_int(cells[0], f"{at}: src", 0, num_ranks - 1)
    dst = parse_int(cells[1], f"{at}: dst", 0, num_ranks - 1)
    size = parse_int(cells[2], f"{at}: bytes", 0, MAX_MESSAGE_BYTES) if len(cells) > 2 else default_bytes
    phase = parse_int(cells[3], f"{at}: phase", 0) if len(cells) > 3 else 0
    return src, dst, size, phase
