"""The per-layer machinery of contention-optimal XGFT routes: per-layer ILPs combined by dynamic
programming (the layered router, synth.routing.layered_xgft, and its destination-consistent
variant, synth.routing.consistent).

[Prisacari20], chapter 3. Layers are solved bottom-up; at layer l every message
still going up (delta > l) picks its up link w_{l+1}. The sets of eq. 3.1-3.4 group the
messages that can still meet on a link at layer l + lambda: same WT node at layer l (the
choices so far), same MT ancestor at layer l + lambda (up side: of the source, down side: of
the destination, Property 3), and delta > l + lambda. For every set of c messages and every
link w, the count choosing w is bounded:
    strong      <= ceil(c / W_{l+1})                                            (3.6, 3.8)
    relaxed     <= ceil(c / W_{l+1} / Q) * Q,  Q = W_{l+2}*...*W_{l+lambda+1}    (3.11, 3.12)
    balance     >= floor(c / W_{l+1})                                           (3.9, 3.10)
and each message picks exactly one link (3.15). Restriction elimination drops a lambda > 0 bound
that the lambda = 0 bounds already imply. Sets never mix WT nodes, so each WT node of a layer
is an independent subproblem.

Construction `halving` (default): the W_{l+1} links are split by the prime factors of W_{l+1}
(8 = 2*2*2: halves, quarters, eighths). A set whose count on every link must lie in [L, U] may
put at most R*U and at least R*L members into a part that spans R links, so each split is a
small model with f candidates, and its parts are independent subproblems for the next factor.
After the last split every set meets exactly the chosen conditions. Binary splits pair the
messages at every MT node (Euler partition, as in balanced bipartite edge colouring), so what is
left is one orientation per cycle: a compiled tabu search finds it without a solver
(_oriented_split; CP-SAT where it does not), and small parts are halved that way too before they
take all their links in one model, a half that cannot be halved mending its part with that model
(issue 43: a 512-leaf Table 3.1 phase 0.35 -> 0.099 s median). Where a split has no solution, the
direct model with all W_{l+1} links and the chosen conditions is solved instead.

If the conditions of a layer are infeasible, the smallest uniform excess over their bounds is
found (minimize z with every count <= bound + z) and routing carries on; the phase's status
then comes from comparing its achieved contention with the lower bound.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from synth.core.errors import SynthError
from synth.routing.registry import RouterOptions
from synth.solve import ProblemBuilder, check_solver, solve
from synth.solve.problem import INFEASIBLE, TIMEOUT
from synth.topology.xgft import Xgft

CONSTRAINTS = ("strong", "relaxed", "strong+eliminated", "relaxed+eliminated")
CONSTRUCTIONS = ("halving", "ilp")
CONSISTENCIES = ("flow", "destination")
# A part is assigned to all its links in one model, not split further, when it is small: a split
# chosen without look-ahead often leaves a part that cannot be split, and for small parts one
# model is faster than the retries (measured on the Table 3.1 trees: 512 leaves 1.3 -> 0.7 s,
# 1024 leaves 2.9 -> 1.5 s per phase; larger parts in one model are slower than splitting).
WHOLE_MAX_MESSAGES = 128
WHOLE_MAX_MESSAGES_FEW_LINKS, FEW_LINKS = 512, 4
SPLIT_RETRIES = 4  # new solutions of a split before its part is solved with all its links
BACKTRACKS = 24  # re-solutions of a WT node per phase when a child node's conditions fail


@dataclass(frozen=True)
class LayeredOptions:
    constraints: str = "strong"
    balance: bool = False
    solver: str = "cpsat"
    time_limit: float | None = None  # seconds per solver call
    threads: int = 1
    construction: str = "halving"
    glpk_options: tuple[str, ...] | None = None
    consistency: str = "flow"  # flow: any route per message; destination: one route per (destination, switch)

    def describe(self) -> dict:
        return {"constraints": self.constraints, "balance": self.balance, "construction": self.construction,
                "solver": self.solver, "time_limit": self.time_limit, "threads": self.threads,
                "consistency": self.consistency}

    def __post_init__(self) -> None:
        if self.constraints not in CONSTRAINTS:
            raise SynthError(f"unknown constraints '{self.constraints}' (known: {', '.join(CONSTRAINTS)})")
        if self.construction not in CONSTRUCTIONS:
            raise SynthError(f"unknown construction '{self.construction}' (known: {', '.join(CONSTRUCTIONS)})")
        if self.consistency not in CONSISTENCIES:
            raise SynthError(f"unknown consistency '{self.consistency}' (known: {', '.join(CONSISTENCIES)})")
        check_solver(self.solver)
        if self.solver == "glpk":
            from synth.solve.glpk import check_glpk_options

            check_glpk_options(self.glpk_options)
        if self.time_limit is not None and not self.time_limit > 0:
            raise SynthError(f"--time-limit must be a positive number of seconds, got {self.time_limit}")
        if self.threads < 1:
            raise SynthError(f"--threads must be at least 1, got {self.threads}")

    @staticmethod
    def of(options: RouterOptions) -> "LayeredOptions":
        """What a user set for the router (synth route's options), checked here."""
        return LayeredOptions(constraints=options.constraints, balance=options.balance, solver=options.solver,
                              time_limit=options.time_limit, threads=options.threads,
                              construction=options.construction, glpk_options=options.glpk_options,
                              consistency=options.consistency)


@dataclass
class PhaseReport:
    """How a phase was routed: per layer, the subproblems and what solved them."""

    subproblems: int = 0
    split_solved: int = 0  # subproblems solved by balanced splits
    direct_solved: int = 0  # subproblems solved by the direct per-layer model
    relaxed_layers: list[int] = field(default_factory=list)  # layers whose conditions were infeasible
    timeouts: int = 0  # solver calls that ended without a solution
    solver_seconds: float = 0.0
    proven_by: str | None = None  # a solver that proved the phase's routing optimal
    layer_seconds: dict[int, float] = field(default_factory=dict)
    backtracks: int = 0  # WT nodes solved again because a child WT node had no solution
    oriented: int = 0  # binary splits solved by orienting the pairs' cycles, without a solver (_oriented_split)
    whole_run: str | None = None  # what a solver proved about all phases routed together
    # The per-layer models and the monolithic model hold every route of the XGFT (Prisacari20 ch.3): a
    # proof that no better routing exists covers every routing, so it is the phase's lower bound.
    proof_covers_all_routings = True

    def progress_text(self) -> str:
        layers = " ".join(f"L{layer} {seconds:.2f}s" for layer, seconds in self.layer_seconds.items())
        extra = f", conditions relaxed at layers {self.relaxed_layers}" if self.relaxed_layers else ""
        extra += f", {self.timeouts} solver timeouts" if self.timeouts else ""
        extra += f", {self.backtracks} backtracks" if self.backtracks else ""
        extra += f"; {self.whole_run}" if self.whole_run else ""
        return f"{self.subproblems} subproblems{f' ({layers})' if layers else ''}{extra}"

    def as_dict(self) -> dict:
        """What the routes file records: facts of the run, no timings (reruns are byte-identical)."""
        return {"subproblems": self.subproblems, "split_solved": self.split_solved,
                "direct_solved": self.direct_solved, "relaxed_layers": self.relaxed_layers,
                "timeouts": self.timeouts, "backtracks": self.backtracks,
                **({"proven_by": self.proven_by} if self.proven_by else {}),
                **({"whole_run": self.whole_run} if self.whole_run else {})}


# ----- the sets of eq. 3.1-3.4 -----------------------------------------------------------------

@dataclass
class LayerSets:
    """All sets of one subproblem: members in CSR form, with lambda, side and count."""

    ptr: np.ndarray
    members: np.ndarray  # local message indices
    lam: np.ndarray
    side: np.ndarray  # 0 up (by source), 1 down (by destination)
    ancestor: np.ndarray  # MT node at layer l + lambda
    vertex: np.ndarray  # (2, messages): MT node at layer l of the source (up) and destination (down)
    delta: np.ndarray  # (messages,) NCA layer

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.ptr)

    def members_of(self, s: int) -> np.ndarray:
        return self.members[self.ptr[s] : self.ptr[s + 1]]


def layer_sets(xgft: Xgft, layer: int, src: np.ndarray, dst: np.ndarray, delta: np.ndarray) -> LayerSets:
    """The sets M^u_{lambda, mt, wt} and M^d_{lambda, mt, wt} of one WT node (eq. 3.1, 3.3)."""
    ptr, members, lams, sides, ancestors = [0], [], [], [], []
    for lam in range(xgft.height - layer):
        climbing = np.flatnonzero(delta > layer + lam)
        if climbing.size == 0:
            break
        for side, ranks in ((0, src), (1, dst)):
            keys = ranks[climbing] // xgft.mt_span[layer + lam]
            order = np.argsort(keys, kind="stable")
            sorted_keys = keys[order]
            starts = np.flatnonzero(np.concatenate([[True], sorted_keys[1:] != sorted_keys[:-1]]))
            bounds = np.append(starts, len(order))
            for a, b in zip(bounds[:-1], bounds[1:]):
                members.append(climbing[order[a:b]])
                ptr.append(ptr[-1] + (b - a))
                lams.append(lam)
                sides.append(side)
                ancestors.append(int(sorted_keys[a]))
    return LayerSets(
        np.asarray(ptr, dtype=np.int64),
        np.concatenate(members) if members else np.zeros(0, dtype=np.int64),
        np.asarray(lams, dtype=np.int64),
        np.asarray(sides, dtype=np.int64),
        np.asarray(ancestors, dtype=np.int64),
        np.stack([src // xgft.mt_span[layer], dst // xgft.mt_span[layer]]),
        np.asarray(delta, dtype=np.int64),
    )


def set_bounds(xgft: Xgft, layer: int, sets: LayerSets, constraints: str, balance: bool) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) per set for the direct per-layer model; upper = -1 where eliminated."""
    width = xgft.w[layer]
    c = sets.sizes
    q = np.array([int(np.prod(xgft.w[layer + 1 : layer + 1 + lam])) for lam in sets.lam.tolist()], dtype=np.int64)
    strong = -(-c // width)
    upper = (-(-c // (width * q))) * q if constraints.startswith("relaxed") else strong
    lower = c // width if balance else np.zeros_like(c)
    if constraints.endswith("+eliminated"):
        upper = upper.copy()
        local = sets.lam == 0
        for s in np.flatnonzero(sets.lam > 0):
            ratio = xgft.mt_span[layer + sets.lam[s]] // xgft.mt_span[layer]
            below = local & (sets.side == sets.side[s]) & (sets.ancestor // ratio == sets.ancestor[s])
            implied = int((-(-c[below] // width)).sum())
            if implied <= upper[s]:
                upper[s] = -1  # eq. 3.6/3.11 already follows from the lambda = 0 bounds
    return lower, upper


def conditions_hold(xgft: Xgft, layer: int, src, dst, delta, wt, choice_w, constraints="strong", balance=False, max_lambda=None) -> bool:
    """Whether a layer-l assignment (w_{l+1} per message) meets the conditions, for checks and tests."""
    src, dst, delta, wt, choice_w = (np.asarray(a) for a in (src, dst, delta, wt, choice_w))
    for node in np.unique(wt[delta > layer]):
        idx = np.flatnonzero((delta > layer) & (wt == node))
        sets = layer_sets(xgft, layer, src[idx], dst[idx], delta[idx])
        lower, upper = set_bounds(xgft, layer, sets, constraints, balance)
        for s in range(len(sets.lam)):
            if max_lambda is not None and sets.lam[s] > max_lambda:
                continue
            counts = np.bincount(choice_w[idx][sets.members_of(s)], minlength=xgft.w[layer])
            if (counts < lower[s]).any() or (upper[s] >= 0 and (counts > upper[s]).any()):
                return False
    return True


# ----- solving one WT node ---------------------------------------------------------------------

def prime_factors(n: int) -> list[int]:
    factors, p = [], 2
    while n > 1:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    return factors


def _restricted_sets(sets: LayerSets, items: np.ndarray, lower: np.ndarray, upper: np.ndarray):
    """The sets restricted to `items` (local indices), merged where their members coincide
    (keeping the tightest bounds) and without those no bound constrains."""
    position = np.full(int(sets.members.max(initial=-1)) + 1, -1, dtype=np.int64)
    position[items] = np.arange(len(items))
    merged: dict[bytes, list] = {}
    for s in range(len(sets.lam)):
        if upper[s] < 0 and lower[s] == 0:
            continue
        local = position[sets.members_of(s)]
        local = np.sort(local[local >= 0])
        if local.size < 2:
            continue
        key = local.tobytes()
        up = int(upper[s]) if upper[s] >= 0 else local.size
        if key in merged:
            entry = merged[key]
            entry[1], entry[2] = max(entry[1], int(lower[s])), min(entry[2], up)
        else:
            merged[key] = [local, int(lower[s]), up]
    return list(merged.values())


def _bounded_groups(sets: LayerSets, items: np.ndarray, span: int, lower: np.ndarray, upper: np.ndarray):
    """(local members, lo, up) per restricted set (_restricted_sets) that a part spanning `span`
    links may hold: between span x L and span x U of the set's members, where that binds."""
    groups = []
    for local, low, up in _restricted_sets(sets, items, lower, upper):
        low, up = span * low, min(span * up, local.size)
        if not (up >= local.size and low == 0):
            groups.append((local, low, up))
    return groups


def _solve_whole(messages: int, links: int) -> bool:
    return messages <= WHOLE_MAX_MESSAGES or (links <= FEW_LINKS and messages <= WHOLE_MAX_MESSAGES_FEW_LINKS)


def _euler_pairs(sets: LayerSets, items: np.ndarray) -> np.ndarray:
    """Pairs of items (positions in `items`) to put on different sides of a binary split.

    At every MT node of layer l, on both sides, the messages are paired: first those with the
    same NCA layer, then the leftovers (at most one per NCA layer) in order of NCA layer. Each
    message has at most one partner per side, so the pairs form even cycles and paths, and
    any split that separates every pair meets the lambda = 0 conditions exactly and leaves every
    set of eq. 3.1-3.4 balanced up to the leftovers (a set holds both messages of a pair or, for
    mixed pairs, the one that climbs higher). What remains for the solver is one orientation per
    cycle. This is the Euler-partition idea behind balanced bipartite edge colouring, with the
    pairs chosen so that the look-ahead sets (lambda > 0) are balanced too.
    """
    delta = sets.delta[items]
    found = []
    for side in (0, 1):
        vertex = sets.vertex[side][items]
        order = np.lexsort((delta, vertex))
        pairs, leftover = _pair_runs(order, vertex[order] * (int(delta.max(initial=0)) + 1) + delta[order])
        found.append(pairs)
        found.append(_pair_runs(leftover, vertex[leftover])[0])
    return np.concatenate(found)


def _pair_runs(order: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Consecutive pairs within runs of equal (sorted) keys; the unpaired last of odd runs."""
    if order.size == 0:
        return np.zeros((0, 2), dtype=np.int64), order
    starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
    lengths = np.diff(np.append(starts, keys.size))
    rank = np.arange(keys.size) - np.repeat(starts, lengths)
    run_length = np.repeat(lengths, lengths)
    first = np.flatnonzero((rank % 2 == 0) & (rank + 1 < run_length))
    pairs = np.stack([order[first], order[first + 1]], axis=1)
    return pairs, order[(rank == run_length - 1) & (run_length % 2 == 1)]


ORIENT_STEPS = 64  # turns of the local search (per stage) before CP-SAT gets the split
# A split's (or a part's one) model is a proposal, not a proof: capped at this much solver work (CP-SAT's
# deterministic seconds; seconds for the other backends), so that one hard proposal cannot hold a phase for
# minutes (measured: a 504-message binary split of a 4096-leaf phase ran 545 s uncapped; the phase at the
# bound in seconds with the cap).
SPLIT_WORK = 5.0
# The search costs (groups x cycles) per turn: above this many messages a split goes to CP-SAT, which is
# faster there (measured: an 8176-message split of an 8192-leaf phase searched for seconds, then 1.5 s of CP-SAT).
ORIENT_MAX_ITEMS = 1024
TABU = 8  # steps a turned unit is not turned back (unless that reaches a new least excess)


def _oriented_split(n: int, pairs: np.ndarray, groups: list[tuple[np.ndarray, int, int]]) -> np.ndarray | None:
    """A binary split of n items that puts between lo and up members of every group (local
    members, lo, up) on side 1, found without a solver; None if the search below finds none
    (CP-SAT then solves the model, with the pairs and without).

    Each item has at most one partner per side (_euler_pairs), so the pairs form paths and even
    cycles: 2-colouring each component separates every pair, and what is left free is one bit
    per component, its orientation. Side-1 counts are affine in the orientations, counts =
    base + D @ flip (D[g, c]: the change in group g when component c turns over), and the first
    stage searches the orientations for counts within bounds (a tabu descent of the total
    excess, _orient_kernel). Where the pairing leaves no split (small parts deep in a layer,
    whose sets earlier splits left unbalanced by one), the second stage goes on from there
    turning single items over, which is the plain split model's freedom. Measured on the
    512-leaf Table 3.1 tree's 8 benchmark phases: a plain descent (no tabu) stopped in a local
    minimum on 21 of 28 128-message splits; the tabu search on none (RESULTS.md, "Binary splits
    without a solver").
    """
    pairs = np.ascontiguousarray(np.asarray(pairs, dtype=np.int64).reshape(-1, 2))
    sizes = np.array([members.size for members, _, _ in groups], dtype=np.int64)
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    members = np.concatenate([m for m, _, _ in groups]).astype(np.int64) if groups else np.zeros(0, dtype=np.int64)
    lows = np.array([lo for _, lo, _ in groups], dtype=np.int64)
    ups = np.array([up for _, _, up in groups], dtype=np.int64)
    side, found = _orient_kernel(n, pairs, ptr, members, lows, ups, ORIENT_STEPS, TABU)
    return side if found else None


@njit(cache=True, nogil=True)
def _orient_kernel(n, pairs, ptr, members, lows, ups, steps, tabu):
    """(side per item, found): _oriented_split's two stages (its docstring) in compiled loops."""
    partner = np.full((n, 2), -1, dtype=np.int64)
    degree = np.zeros(n, dtype=np.int64)
    for k in range(pairs.shape[0]):
        a, b = pairs[k, 0], pairs[k, 1]
        if degree[a] == 2 or degree[b] == 2:
            return np.zeros(n, dtype=np.int64), False  # not two matchings: not a pairing this searches
        partner[a, degree[a]] = b
        partner[b, degree[b]] = a
        degree[a] += 1
        degree[b] += 1
    side = np.full(n, -1, dtype=np.int64)
    component = np.full(n, -1, dtype=np.int64)
    stack = np.empty(n, dtype=np.int64)
    count = 0
    for root in range(n):
        if side[root] >= 0:
            continue
        side[root], component[root] = 0, count
        top = 1
        stack[0] = root
        while top:
            top -= 1
            v = stack[top]
            for k in range(degree[v]):
                u = partner[v, k]
                if side[u] < 0:
                    side[u], component[u] = 1 - side[v], count
                    stack[top] = u
                    top += 1
                elif side[u] == side[v]:
                    return side, False  # an odd cycle: no split separates every pair
        count += 1
    groups = lows.size
    for stage in range(2):  # turn cycles over, then single items
        units = count if stage == 0 else n
        unit = component if stage == 0 else np.arange(n)
        change = np.zeros((groups, units), dtype=np.int64)  # +1 per member on side 0, -1 per member on side 1
        counts = np.zeros(groups, dtype=np.int64)
        for g in range(groups):
            for j in range(ptr[g], ptr[g + 1]):
                i = members[j]
                change[g, unit[i]] += 1 - 2 * side[i]
                counts[g] += side[i]
        turned = np.zeros(units, dtype=np.int64)
        last = np.full(units, -tabu - 1, dtype=np.int64)  # the step each unit last turned
        least = -1
        found = False
        for step in range(steps + 1):
            excess = 0
            for g in range(groups):
                excess += max(lows[g] - counts[g], 0) + max(counts[g] - ups[g], 0)
            if excess == 0:
                found = True
                break
            least = excess if least < 0 else min(least, excess)
            best, best_total = -1, 0
            for c in range(units):  # the turn that leaves the least excess, not tabu unless it reaches a new least
                sign = 1 - 2 * turned[c]
                total = 0
                for g in range(groups):
                    moved = counts[g] + sign * change[g, c]
                    total += max(lows[g] - moved, 0) + max(moved - ups[g], 0)
                if (step - last[c] > tabu or total < least) and (best < 0 or total < best_total):
                    best, best_total = c, total
            if best < 0:
                break
            sign = 1 - 2 * turned[best]
            for g in range(groups):
                counts[g] += sign * change[g, best]
            turned[best] = 1 - turned[best]
            last[best] = step
        for i in range(n):
            side[i] ^= turned[unit[i]]
        if found:
            return side, True
    return side, False


def _symmetry_broken(n: int, parts: int) -> np.ndarray:
    """Candidates per item for a model whose parts (links) are interchangeable: every bound
    applies to every part alike, so any solution can be relabelled to use its parts in order of
    first use. Item j may then take only parts 0..j. Without this, tight instances spend
    minutes refuting the parts' permutations (measured: 255 messages on 4 links, over 60 s
    unsolved without it, 0.5 s with it)."""
    candidates = np.full(n, parts, dtype=np.int64)
    candidates[: min(n, parts)] = np.arange(1, min(n, parts) + 1)
    return candidates


class LayerSolver:
    def __init__(self, options: LayeredOptions, report: PhaseReport):
        self.options, self.report = options, report

    def run(self, problem, hint=None, seed: int = 0, heuristic: bool = False):
        """One solve; `heuristic` (a split or a part's one model, which only proposes a layer's
        assignment) is capped at SPLIT_WORK. Running out counts as a timeout either way: a phase
        above its bound after one is `timeout`, not `feasible` (a better routing may have been
        missed); a phase at its bound is optimal whatever its calls did."""
        o = self.options
        limit = min(o.time_limit, SPLIT_WORK) if heuristic and o.time_limit else (SPLIT_WORK if heuristic else o.time_limit)
        result = solve(problem, o.solver, limit, o.threads, hint, o.glpk_options, seed)
        self.report.solver_seconds += result.seconds
        if result.status == TIMEOUT:
            self.report.timeouts += 1
        return result

    def split(self, items: np.ndarray, sets: LayerSets, factors: list[int], lower: np.ndarray, upper: np.ndarray) -> np.ndarray | None:
        """Recursive splitting of the links into their prime factors; the link index per item,
        or None if no solution was found.

        A set whose count on every final link must lie in [L, U] may put at most R*U and at
        least R*L of its members into a part that still spans R links: the same conditions,
        checked one factor at a time on ever smaller, independent parts. A split chosen without
        look-ahead can leave a part that cannot be split further: the split is then solved
        again, with that part's member set excluded from every part, a few times; after that the
        whole part is solved directly with all the links it spans. Small parts are solved with all
        their links at once from the start (see WHOLE_MAX_MESSAGES). Binary splits first try the
        Euler pairing (_euler_pairs), which leaves the solver one orientation per cycle.
        """
        if not factors:
            return np.zeros(len(items), dtype=np.int64)
        parts, span = factors[0], int(np.prod(factors[1:]))
        if len(factors) > 1 and _solve_whole(len(items), parts * span):
            halved = self._halved(items, sets, factors, lower, upper, mend=False)  # no solver where the cycles allow it
            return halved if halved is not None else self._assign(items, sets, parts * span, 1, lower, upper)
        excluded: list[np.ndarray] = []
        pairs = _euler_pairs(sets, items) if parts == 2 else None
        for attempt in range(SPLIT_RETRIES + 1):
            digits = self._assign(items, sets, parts, span, lower, upper, excluded, pairs, seed=attempt)
            if digits is None and pairs is not None:
                pairs = None  # the pairing excluded every solution: the plain split model
                digits = self._assign(items, sets, parts, span, lower, upper, excluded, seed=attempt)
            if digits is None:
                break
            link = np.empty(len(items), dtype=np.int64)
            for part in range(parts):
                mine = np.flatnonzero(digits == part)
                rest = self.split(items[mine], sets, factors[1:], lower, upper)
                if rest is None:
                    excluded.append(mine)
                    break
                link[mine] = part + parts * rest
            else:
                return link
        if len(factors) == 1:
            return None
        return self._assign(items, sets, parts * span, 1, lower, upper)

    def _halved(self, items, sets, factors: list[int], lower, upper, mend: bool = True) -> np.ndarray | None:
        """The link per item from binary splits alone, each by orienting its pairs' cycles
        (_oriented_split), down to single links; where a half cannot be halved, the part is solved
        with all its links in one model (`mend`; the outermost call leaves that to its caller);
        None where a factor is not 2, a split is not found that way, or the model has no solution."""
        if not factors:
            return np.zeros(len(items), dtype=np.int64)
        if factors[0] != 2 or len(items) > ORIENT_MAX_ITEMS:
            return None
        digits = self._oriented(items, sets, int(np.prod(factors[1:])), lower, upper, _euler_pairs(sets, items))
        if digits is None:
            return None
        link = np.empty(len(items), dtype=np.int64)
        for part in range(2):
            mine = np.flatnonzero(digits == part)
            rest = self._halved(items[mine], sets, factors[1:], lower, upper)
            if rest is None:
                # a half that cannot be halved: this part in one model, the smallest that can mend it (the
                # 56-message parts of the 512-leaf tree's middle layer: 28 messages on 4 links, not 56 on 8)
                return self._assign(items, sets, int(np.prod(factors)), 1, lower, upper) if mend else None
            link[mine] = part + 2 * rest
        return link

    def _oriented(self, items, sets, span: int, lower, upper, pairs) -> np.ndarray | None:
        """A binary split of `items` (each part spanning `span` links) within the set bounds,
        separating `pairs` where it can, found without a solver (_oriented_split), or None."""
        halves = [(local, max(low, local.size - up), min(up, local.size - low))
                  for local, low, up in _bounded_groups(sets, items, span, lower, upper)]
        digits = _oriented_split(len(items), pairs, halves)
        if digits is not None:
            self.report.oriented += 1
        return digits

    def _assign(self, items, sets, parts: int, span: int, lower, upper, excluded=(), pairs=None, seed: int = 0) -> np.ndarray | None:
        """Assign items to `parts` parts, each spanning `span` links, within the set bounds;
        no part may hold exactly the members of an `excluded` group; the two items of each of
        `pairs` (binary splits only) go to different parts in the model. A binary split is first
        searched without the solver (_oriented), whose answer may join a pair where the pairing
        leaves no split: the pairs are a device for speed, the bounds are the conditions."""
        if parts == 2 and pairs is not None and not excluded and len(items) <= ORIENT_MAX_ITEMS:  # without a solver
            digits = self._oriented(items, sets, span, lower, upper, pairs)
            if digits is not None:
                return digits
        restricted = _bounded_groups(sets, items, span, lower, upper)
        builder = ProblemBuilder(_symmetry_broken(len(items), parts))
        if pairs is not None:
            for pair in pairs:
                builder.add(pair, 1, lower=1, upper=1)
        for local, low, up in restricted:
            c = local.size
            if parts == 2:  # part 0 holds what part 1 does not: one group carries both bounds
                builder.add(local, 1, lower=max(low, c - up), upper=min(up, c - low))
                continue
            low = max(low, c - (parts - 1) * up)  # implied by the other parts' bounds; speeds CP-SAT 3-30x
            for part in range(parts):
                builder.add(local, part, lower=low, upper=up)
        for members in excluded:
            for part in range(parts):
                builder.add(members, part, upper=len(members) - 1)
        result = self.run(builder.build(), seed=seed, heuristic=True)
        return result.choice if result.solved else None

    def direct(self, xgft: Xgft, layer: int, sets: LayerSets, n: int, fallback: bool = True) -> tuple[np.ndarray | None, bool]:
        """The per-layer model with all W_{l+1} links; (links, conditions met). If the conditions
        have no solution: the smallest uniform excess over them, or None without `fallback`."""
        width = xgft.w[layer]
        o = self.options
        lower, upper = set_bounds(xgft, layer, sets, o.constraints, o.balance)
        attempts = [(lower, False)] + ([(np.zeros_like(lower), False)] if o.balance else [])
        attempts += [(np.zeros_like(lower), True)] if fallback else []
        for lows, slack in attempts:
            builder = ProblemBuilder(_symmetry_broken(n, width))
            for s in range(len(sets.lam)):
                members = sets.members_of(s)
                if upper[s] < 0 and lows[s] == 0:
                    continue
                bound = int(upper[s]) if upper[s] >= 0 else len(members)
                low = int(lows[s]) if slack else max(int(lows[s]), len(members) - (width - 1) * bound)
                for w in range(width):
                    builder.add(members, w, lower=low, upper=bound, capped=slack)
            result = self.run(builder.build(z_upper=n))
            if result.solved:
                return result.choice, not slack
            if result.status != INFEASIBLE:
                break  # a timeout: do not try weaker models on the clock
        return (np.arange(n, dtype=np.int64) % width if fallback else None), False


def _solve_node(xgft: Xgft, layer: int, idx: np.ndarray, src, dst, delta, options: LayeredOptions,
                solver: "LayerSolver", fallback: bool) -> tuple[np.ndarray | None, bool]:
    """w_{l+1} for the messages `idx` of one WT node at `layer`: (links, conditions met). Without
    `fallback` (the caller will solve the parent node again), (None, False) if the conditions
    have no solution."""
    report = solver.report
    report.subproblems += 1
    sets = layer_sets(xgft, layer, src[idx], dst[idx], delta[idx])
    if options.construction == "halving":
        lower, upper = set_bounds(xgft, layer, sets, options.constraints, options.balance)
        links = solver.split(np.arange(len(idx)), sets, prime_factors(xgft.w[layer]), lower, upper)
        if links is not None:
            report.split_solved += 1
            return links, True
    report.direct_solved += 1
    return solver.direct(xgft, layer, sets, len(idx), fallback)


OK, RELAXED, RETRY = "ok", "relaxed", "retry"


class LayerSearch:
    """Depth-first over the WT tree. The messages of a WT node at layer l only ever meet again
    in its own WT subtree, so the dynamic programming over layers is a tree: every node is solved,
    then its children at layer l + 1 (one per link). The seed's conditions do not make every
    solution extendable (measured: on the 256- and 2048-leaf Table 3.1 trees some strong layer
    solutions leave a child WT node without a strong solution), so a child without a solution
    makes its parent node be solved again with its messages in another order (another solution
    for every backend), up to `backtracks` times per search (BACKTRACKS per phase here); after that
    the failing node takes the smallest uniform excess over its bounds and the search carries on.
    `solve_node` solves one WT node (_solve_node: messages; synth.routing.consistent: units)."""

    def __init__(self, xgft: Xgft, src, dst, delta, layers: list[int], choice: np.ndarray, options: LayeredOptions,
                 solve_node=None, backtracks: int = BACKTRACKS):
        self.xgft, self.src, self.dst, self.delta, self.layers = xgft, src, dst, delta, layers
        self.choice, self.options = choice, options
        self.report = PhaseReport()
        self.solver = LayerSolver(options, self.report)
        self.solve_node = solve_node or _solve_node  # (xgft, layer, order, src, dst, delta, options, solver, fallback)
        self.budget = backtracks

    def subtree(self, position: int, idx: np.ndarray, has_parent: bool) -> str:
        """Route the messages `idx`, which share their WT node at layers[position]."""
        while position < len(self.layers) and not (self.delta[idx] > self.layers[position]).any():
            position += 1
        if position == len(self.layers):
            return OK
        layer, report = self.layers[position], self.report
        climbing = idx[self.delta[idx] > layer]
        saved = self.choice[climbing].copy()  # restored before every new attempt
        node = int(saved[0])
        for attempt in range(self.budget + 1):
            self.choice[climbing] = saved
            order = np.random.default_rng([attempt, layer, node]).permutation(climbing) if attempt else climbing
            may_retry = has_parent and report.backtracks < self.budget
            started = time.perf_counter()
            links, met = self.solve_node(self.xgft, layer, order, self.src, self.dst, self.delta, self.options,
                                         self.solver, fallback=not may_retry)
            report.layer_seconds[layer] = report.layer_seconds.get(layer, 0.0) + time.perf_counter() - started
            if links is None:
                return RETRY
            if not met and layer not in report.relaxed_layers:
                report.relaxed_layers.append(layer)
            self.choice[order] += links * self.xgft.wt_span[layer]
            outcome = OK if met else RELAXED
            for link in range(self.xgft.w[layer]):
                child = order[links == link]
                # A child asks for a retry only while budget is left (it solved without fallback), so
                # the parent always has an attempt to give it.
                result = self.subtree(position + 1, child, True) if child.size else OK
                if result == RETRY:
                    break
                if result == RELAXED:
                    outcome = RELAXED
            else:
                return outcome
            report.backtracks += 1
        raise AssertionError("unreachable: every failed attempt spends the phase's backtracking budget")


def route_phase(xgft: Xgft, src: np.ndarray, dst: np.ndarray, options: LayeredOptions,
                start_layer: int = 0, start_choice: np.ndarray | None = None) -> tuple[np.ndarray, PhaseReport]:
    """Route one phase (any multiset of messages): the path choice per message and a report.

    Dynamic programming over layers, depth-first over the WT tree (LayerSearch): a WT node's solution
    at layer l fixes the WT node each of its messages reaches at layer l + 1, which defines its
    children's subproblems. `start_layer` and `start_choice` (WT indices at that layer) continue
    from a given partial routing.
    """
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    delta = xgft.nca_layer(src, dst)
    choice = np.zeros(len(src), dtype=np.int64) if start_choice is None else np.array(start_choice, dtype=np.int64)
    layers = [l for l in range(start_layer, xgft.height) if xgft.w[l] > 1]
    search = LayerSearch(xgft, src, dst, delta, layers, choice, options)
    climbing = np.flatnonzero(delta > start_layer)
    for node in np.unique(choice[climbing]):
        search.subtree(0, climbing[choice[climbing] == node], has_parent=False)
    return choice, search.report


class PerPhaseRouter:
    """Router interface of synth.workflow for synthesizers that route one phase at a time:
    called with the flows of a batch, returns (choices, {phase: PhaseReport})."""

    expensive = True  # one phase per task

    def __init__(self, route_one, options: LayeredOptions):
        self.route_one, self.options = route_one, options
        if options.solver == "cpsat":
            import ortools.sat.python.cp_model  # noqa: F401  (OR-Tools loaded once here, not in every forked worker)

    def __call__(self, xgft: Xgft, src, dst, phase, occurrence, seed=0):
        src, dst, phase = (np.asarray(a, dtype=np.int64) for a in (src, dst, phase))
        choice = np.zeros(len(src), dtype=np.int64)
        reports = {}
        for p in np.unique(phase):
            idx = np.flatnonzero(phase == p)
            idx = idx[np.lexsort((dst[idx], src[idx]))]  # one order for the same flows: the same routes
            choice[idx], reports[int(p)] = self.route_one(xgft, src[idx], dst[idx], self.options)
        return choice, reports


class WholeWorkloadRouter:
    """Router interface of synth.workflow for synthesizers that route all selected phases in one
    call (destination-consistent routes: the phases share one set of tables). `route_all`
    returns (choices, PhaseReport); the one report stands for every phase."""

    expensive = True
    whole_workload = True

    def __init__(self, route_all, options: LayeredOptions):
        self.route_all, self.options = route_all, options

    def __call__(self, xgft: Xgft, src, dst, phase, occurrence, seed=0):
        choice, report = self.route_all(xgft, src, dst, phase, self.options)
        return choice, {int(p): report for p in np.unique(phase)}
