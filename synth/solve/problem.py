"""The one problem form every ILP of synth is written in, and the result every backend returns.

Items each choose exactly one candidate (item i chooses among 0..num_candidates[i]-1). Groups
are sets of (item, candidate) pairs with bounds on how many of their pairs are chosen:
lb <= count <= ub, or count <= ub + z for `capped` groups, where z >= 0 is one integer variable
to be minimized (ub = 0 gives "minimize the maximum count"). A problem may have several such
variables: a capped group then names its own (`z_index`) and scales it (`z_coef`, count <= ub +
coef x z_k), and the sum of the z_k is minimized (the sum over the steps of a schedule of each
step's busiest channel, with a channel's bandwidth as its coefficient). Items may carry integer weights
(`weight`, default 1 each): a group then counts the weight of its chosen pairs (the bytes of the
flows on a channel, for the bytes objective of path selection). The per-layer XGFT model (a set of messages and one up link: eq. 3.6-3.12), the
path-selection model (the paths through one channel) and step assignment all fit it; every
backend solves it, and one MathProg model (synth/models/assignment.mod) reads it from a data file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

OPTIMAL, FEASIBLE, INFEASIBLE, TIMEOUT = "optimal", "feasible", "infeasible", "timeout"


@dataclass
class ChoiceProblem:
    num_candidates: np.ndarray  # (items,) candidates per item
    group_ptr: np.ndarray  # (groups + 1,) CSR offsets into group_items / group_candidates
    group_items: np.ndarray
    group_candidates: np.ndarray
    lower: np.ndarray  # (groups,) minimum count
    upper: np.ndarray  # (groups,) maximum count (plus z for capped groups)
    capped: np.ndarray  # (groups,) bool: count <= upper + z, z minimized
    z_upper: int = 0  # a known feasible value of every z (solvers may use it as a bound)
    weight: np.ndarray | None = None  # (items,) positive integer weight per item; None: 1 each
    z_index: np.ndarray | None = None  # (groups,) which z a capped group's bound adds; None: z_0 for all
    z_coef: np.ndarray | None = None  # (groups,) positive integer coefficient of that z; None: 1 each

    @property
    def num_items(self) -> int:
        return int(self.num_candidates.shape[0])

    @property
    def num_groups(self) -> int:
        return int(self.lower.shape[0])

    @property
    def has_objective(self) -> bool:
        return bool(self.capped.any())

    @property
    def num_z(self) -> int:
        """How many z variables the objective sums (0 without a capped group)."""
        if not self.has_objective:
            return 0
        return 1 if self.z_index is None else int(self.z_index[self.capped].max()) + 1

    def group_z(self) -> tuple[np.ndarray, np.ndarray]:
        """(z_index, z_coef) of every group, defaults filled in."""
        index = self.z_index if self.z_index is not None else np.zeros(self.num_groups, dtype=np.int64)
        coef = self.z_coef if self.z_coef is not None else np.ones(self.num_groups, dtype=np.int64)
        return index, coef

    @property
    def weighted(self) -> bool:
        return self.weight is not None

    def item_weights(self) -> np.ndarray:
        return self.weight if self.weight is not None else np.ones(self.num_items, dtype=np.int64)

    def group_sizes(self) -> np.ndarray:
        """Per group, the count if every pair were chosen (the weight of its pairs)."""
        owner = np.repeat(np.arange(self.num_groups), np.diff(self.group_ptr))
        return np.bincount(owner, weights=self.item_weights()[self.group_items], minlength=self.num_groups).astype(np.int64)

    def group(self, g: int) -> tuple[np.ndarray, np.ndarray]:
        sl = slice(self.group_ptr[g], self.group_ptr[g + 1])
        return self.group_items[sl], self.group_candidates[sl]

    def counts(self, choice: np.ndarray) -> np.ndarray:
        """How many pairs of every group a choice vector picks (their weight, with weights)."""
        picked = choice[self.group_items] == self.group_candidates
        owner = np.repeat(np.arange(self.num_groups), np.diff(self.group_ptr))
        if self.weight is None:
            return np.bincount(owner[picked], minlength=self.num_groups)
        weights = self.weight[self.group_items[picked]]
        return np.bincount(owner[picked], weights=weights, minlength=self.num_groups).astype(np.int64)

    def violations(self, choice: np.ndarray, z: int | None = None) -> int:
        """Number of violated bounds (0 for a feasible choice); with `z`, the objective a solver
        claims, one more when the choice needs a larger one."""
        if ((choice < 0) | (choice >= self.num_candidates)).any():
            return int(((choice < 0) | (choice >= self.num_candidates)).sum())
        counts = self.counts(choice)
        bad = counts < self.lower
        bad |= ~self.capped & (counts > self.upper)
        return int(bad.sum()) + int(z is not None and self.objective(choice, counts) > z)

    def z_values(self, choice: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
        """The smallest value of every z this choice satisfies."""
        counts = self.counts(choice) if counts is None else counts
        index, coef = self.group_z()
        excess = np.maximum(counts - self.upper, 0)[self.capped]
        needed = -(-excess // coef[self.capped])  # ceil: coef x z_k >= the excess
        values = np.zeros(self.num_z, dtype=np.int64)
        np.maximum.at(values, index[self.capped], needed)
        return values

    def objective(self, choice: np.ndarray, counts: np.ndarray | None = None) -> int:
        """The smallest objective (sum of the z) this choice satisfies."""
        return int(self.z_values(choice, counts).sum())


@dataclass
class ProblemBuilder:
    """Collects groups; `build` freezes them into a ChoiceProblem."""

    num_candidates: np.ndarray
    weight: np.ndarray | None = None  # per item (see ChoiceProblem.weight)
    _items: list = field(default_factory=list)
    _cands: list = field(default_factory=list)
    _lower: list = field(default_factory=list)
    _upper: list = field(default_factory=list)
    _capped: list = field(default_factory=list)
    _z: list = field(default_factory=list)
    _coef: list = field(default_factory=list)

    def add(self, items: np.ndarray, candidates: np.ndarray, lower: int = 0, upper: int | None = None, capped: bool = False,
            z: int = 0, coef: int = 1) -> None:
        """A group of (item, candidate) pairs; pairs naming a candidate the item lacks are dropped.
        A capped group's bound is upper + coef x z_`z` (upper defaults to 0 there; otherwise to all
        its pairs)."""
        items = np.asarray(items, dtype=np.int64)
        candidates = np.broadcast_to(np.asarray(candidates, dtype=np.int64), items.shape)
        allowed = candidates < self.num_candidates[items]
        self._items.append(items[allowed])
        self._cands.append(candidates[allowed])
        self._lower.append(lower)
        everything = int(allowed.sum()) if self.weight is None else int(self.weight[items[allowed]].sum())
        self._upper.append((0 if capped else everything) if upper is None else upper)
        self._capped.append(capped)
        self._z.append(z)
        self._coef.append(coef)

    def build(self, z_upper: int = 0) -> ChoiceProblem:
        sizes = [len(a) for a in self._items]
        return ChoiceProblem(
            num_candidates=np.asarray(self.num_candidates, dtype=np.int64),
            group_ptr=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
            group_items=np.concatenate(self._items) if self._items else np.zeros(0, np.int64),
            group_candidates=np.concatenate(self._cands) if self._cands else np.zeros(0, np.int64),
            lower=np.asarray(self._lower, dtype=np.int64),
            upper=np.asarray(self._upper, dtype=np.int64),
            capped=np.asarray(self._capped, dtype=bool),
            z_upper=z_upper,
            weight=None if self.weight is None else np.asarray(self.weight, dtype=np.int64),
            z_index=np.asarray(self._z, dtype=np.int64) if any(self._z) else None,
            z_coef=np.asarray(self._coef, dtype=np.int64) if any(c != 1 for c in self._coef) else None,
        )


@dataclass
class SolveResult:
    status: str  # optimal | feasible | infeasible | timeout
    choice: np.ndarray | None  # (items,) chosen candidate, None without a solution
    objective: int | None = None  # the solution's objective, z or the sum of the z (problems with capped groups)
    best_bound: int | None = None  # proven lower bound on the objective
    solver: str = ""
    seconds: float = 0.0
    work: float | None = None  # the deterministic time spent (CP-SAT; None where the backend does not count it)

    @property
    def solved(self) -> bool:
        return self.choice is not None


@dataclass(frozen=True)
class Backend:
    """A solver backend, declared by its module as `SOLVER` (synth.solve.SOLVERS finds it): run(problem,
    time_limit, threads, hint, glpk_options, seed, wall_limit) -> SolveResult. A backend that counts
    deterministic work (`deterministic`) takes `time_limit` in it and `wall_limit` as the clock's
    cap; the others take seconds in `time_limit`."""

    name: str
    summary: str
    run: Callable
    deterministic: bool = False
    order: int = 0  # where help texts list it
