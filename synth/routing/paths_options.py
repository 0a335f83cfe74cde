"""The path-selection router's options (what a routes file records as its `synthesis`) and its report
per phase (synth.routing.path_selection; its destination-consistent variant synth.routing.consistent_direct
and the dragonfly's layers read them too)."""

from __future__ import annotations

from dataclasses import dataclass

from synth.core.errors import SynthError
from synth.routing.candidates import check_candidate_set
from synth.routing.lane_orders import check_budget
from synth.routing.registry import LOAD_UNITS, RouterOptions
from synth.solve import check_solver

DEFAULT_BUDGET = 20.0  # solver seconds per phase without --time-limit


@dataclass(frozen=True)
class PathsOptions:
    candidates: str = "all"
    solver: str = "cpsat"
    time_limit: float | None = None  # solver seconds per phase (CP-SAT: deterministic)
    threads: int = 1
    glpk_options: tuple[str, ...] | None = None
    consistency: str = "flow"  # flow: any candidate per flow; destination: one next hop per (router, destination)
    objective: str = "messages"  # what the busiest channel's load counts: messages, or bytes (over bandwidth)
    lanes: int | None = None  # a budget of virtual lanes: only candidates some lane order admits (synth.routing.lane_orders)
    # time_limit in wall-clock seconds for the phase's solver calls, spent as CP-SAT's deterministic
    # work (synth.solve.budget: what `synthesize --time-limit` means); not recorded (describe)
    wall_clock: bool = False

    def __post_init__(self) -> None:
        check_candidate_set(self.candidates)
        check_solver(self.solver)
        if self.objective not in LOAD_UNITS:
            raise SynthError(f"unknown load unit '{self.objective}' (known: {', '.join(LOAD_UNITS)})")
        if self.objective == "bytes" and self.consistency == "destination":
            raise SynthError("--consistency destination builds tables without weighing flows: use --load-unit messages")
        if self.consistency not in ("flow", "destination"):
            raise SynthError(f"unknown consistency '{self.consistency}' (known: flow, destination)")
        if self.lanes is not None:
            check_budget(self.lanes)
            if self.consistency == "destination":
                raise SynthError("a lane budget chooses each flow's path among its candidates: it needs --consistency flow")
        if self.consistency == "destination" and self.candidates != "minimal":
            raise SynthError(f"--consistency destination keeps routes minimal (one next hop per router and destination "
                             f"cannot hold detours without loops): use --candidates minimal, not {self.candidates}")

    @property
    def budget(self) -> float:
        return self.time_limit if self.time_limit is not None else DEFAULT_BUDGET

    def describe(self) -> dict:
        return {"candidates": self.candidates, "solver": self.solver, "time_limit": self.time_limit,
                "threads": self.threads, "consistency": self.consistency,
                **({"lanes": self.lanes} if self.lanes is not None else {})}


@dataclass
class PathsReport:
    """How a phase was routed; `as_dict` is what the routes file records (no timings)."""

    choices: int = 0  # flow-candidate pairs of the phase
    # the LP bound over all paths (synth.measure.lp_bound): no routing at all does better; None where no LP ran
    # (no flow between routers), which the routes file records by leaving it out, not as a bound of 0
    lp_bound: int | None = None
    candidate_bound: int = 0  # no choice among the candidates does better
    lp_status: str = "optimal"  # of the candidate LP (synth.measure.lp_bound.LpBound.status)
    start: str = ""  # which starting routing was best
    start_contention: int = 0
    moves: int = 0  # descent moves
    neighbourhoods: int = 0  # LNS models solved
    exact: str | None = None  # status of the whole-phase model, when one was solved
    timeouts: int = 0
    proven_by: str | None = None
    solver_seconds: float = 0.0
    clock_ended: bool = False  # a wall-clock budget's clock, not its work, ended a call (not recorded: a rerun may differ)

    def progress_text(self) -> str:
        how = f"exact {self.exact}" if self.exact else f"{self.neighbourhoods} neighbourhoods"
        return (f"{self.choices:,} choices, candidate bound {self.candidate_bound} (LP {self.lp_status}), "
                f"start {self.start} {self.start_contention}, {self.moves} moves, {how}"
                + (f", {self.timeouts} solver timeouts" if self.timeouts else "")
                + (", stopped by the clock before its work (a rerun may differ)" if self.clock_ended else ""))

    def as_dict(self) -> dict:
        return {"choices": self.choices, **({"lp_bound": self.lp_bound} if self.lp_bound is not None else {}),
                "candidate_bound": self.candidate_bound, "lp_status": self.lp_status,
                "start": self.start, "start_contention": self.start_contention, "moves": self.moves,
                "neighbourhoods": self.neighbourhoods, "timeouts": self.timeouts,
                **({"exact": self.exact} if self.exact else {}),
                **({"proven_by": self.proven_by} if self.proven_by else {})}


def paths_options(options: RouterOptions) -> PathsOptions:
    """The path-selection router's options from a run's: the candidate set (default all; minimal
    with destination consistency), the load it minimizes, the solver options."""
    candidates = options.candidates
    if candidates is None:
        candidates = "minimal" if options.consistency == "destination" else "all"
    return PathsOptions(candidates=candidates, solver=options.solver, time_limit=options.time_limit,
                        threads=options.threads, glpk_options=options.glpk_options, consistency=options.consistency,
                        objective=options.load_unit)
