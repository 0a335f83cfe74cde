"""`synth model`'s use cases: the seeds' analytical models, checked and computed (synth.cli.model prints them).

    diameter2 --radix R          [Prisacari20] ch.7: Figure 7.3 for one router radix (synth.pricing.diameter2_model)
    uniform SPEC                 ch.6: uniform-traffic bound T and balance of a dragonfly
    stencil SPEC --alpha ...     ch.5: nearest-neighbour demand on a dragonfly
    demand SPEC --traffic ...    ch.5: any workload's global-link demand on a dragonfly
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from synth.core.errors import SynthError
from synth.core.validate import parse_int, parse_positive_number
from synth.pricing.dragonfly_demand import ROUTINGS, GroupTraffic
from synth.pricing.stencil_model import STRATEGIES, best_placements, evaluate, neighbour_shares, task_grids
from synth.io.instance import resolve
from synth.topology import parse_topology
from synth.topology.dragonfly import uniform_throughput_bound
from synth.topology.family import DRAGONFLY_STENCIL_FORMS, DRAGONFLY_UNIFORM_FORMS

MAX_RADIX = 256  # router radix of the Figure 7.3 table
MAX_DIMENSIONS = 6
MAX_TASKS = 1 << 16  # the stencil search enumerates task grids and blocks: tens of thousands at most
MAX_BANDWIDTH = 1e6  # relative link bandwidths of the uniform and demand models
MIN_BANDWIDTH = 1e-6
MAX_TASK_SEARCH = 1 << 16  # terminals up to which the nearest fitting task counts are searched


def bandwidth(text: str, option: str) -> float:
    value = parse_positive_number(text, option, MAX_BANDWIDTH)
    if value < MIN_BANDWIDTH:
        raise SynthError(f"{option} must be at least {MIN_BANDWIDTH:g}, got {text}")
    return value


def _grid(text: str, option: str, dimensions: int | None = None) -> tuple[int, ...]:
    parts = text.split("x")
    if not 1 <= len(parts) <= MAX_DIMENSIONS:
        raise SynthError(f"{option} must be 1 to {MAX_DIMENSIONS} sizes joined by 'x', got {text!r}")
    values = tuple(parse_int(v, f"{option} size {k}", 1, 1 << 30) for k, v in enumerate(parts, 1))
    if dimensions is not None and len(values) != dimensions:
        raise SynthError(f"{option} has {len(values)} sizes, --alpha has {dimensions}")
    return values


def _intact_dragonfly(spec: str, fail: str | None, model: str, forms: str):
    """The network of a dragonfly model whose closed forms (`forms`, e.g. DRAGONFLY_STENCIL_FORMS) hold on it."""
    if fail:
        raise SynthError(f"--fail does not apply to the {model} model: its closed forms (Prisacari20) are for the intact network")
    topology = parse_topology(resolve(spec).spec)
    if forms not in topology.closed_forms() or topology.hierarchy() is None:
        raise SynthError(f"the {model} model is for dragonflies ({forms}), not {topology.family}")
    return topology


@dataclass
class StencilModel:
    topology: object
    alpha: tuple[int, ...]
    beta: tuple[int, ...] | None
    gamma: tuple[int, ...] | None
    results: dict  # strategy -> synth.pricing.stencil_model result, or None when none fits

    def shares(self) -> list[float] | None:
        return neighbour_shares(self.alpha, self.beta) if self.beta is not None else None

    def why_none(self, strategy: str) -> str:
        searched = self.beta is None and self.gamma is None
        if strategy == "random-direct":
            return "eq. 5.20 needs more than e blocks (ln ln |lambda| > 0)" + (" in every placement tried" if searched else "")
        return "no placement: no block gamma fits a group with the blocks fitting the groups"


def stencil_model(spec: str, fail: str | None, alpha_text: str, tasks: int | None, beta_text: str | None,
                  gamma_text: str | None) -> StencilModel:
    """[Prisacari20] ch.5's Cartesian nearest-neighbour exchange: the best task grid and group
    blocks per strategy (--tasks), or the given grid (--beta) and block (--gamma)."""
    topology = _intact_dragonfly(spec, fail, "stencil", DRAGONFLY_STENCIL_FORMS)
    p, a, groups = topology.hierarchy()
    alpha = _grid(alpha_text, "--alpha")
    beta = gamma = None
    if beta_text is not None:
        beta = _grid(beta_text, "--beta", len(alpha))
        if any(x % b for x, b in zip(alpha, beta)):
            raise SynthError(f"--beta {beta_text} does not divide --alpha {alpha_text}")
    if gamma_text is not None:
        if beta is None:
            raise SynthError("--gamma needs --beta")
        gamma = _grid(gamma_text, "--gamma", len(alpha))
        if any(b % g for b, g in zip(beta, gamma)):
            raise SynthError(f"--gamma {gamma_text} does not divide --beta {beta_text}")
        if prod(gamma) > p * a:
            raise SynthError(f"--gamma {gamma_text} puts {prod(gamma)} tasks in a group of {p * a} terminals")
        if prod(beta) // prod(gamma) > groups:
            raise SynthError(f"--gamma {gamma_text} needs {prod(beta) // prod(gamma)} groups, the network has {groups}")
        results = {s: evaluate(s, alpha, beta, gamma, groups) for s in STRATEGIES}
    else:
        if tasks is not None:
            _check_tasks(tasks, alpha, alpha_text, p * a * groups)
        results = best_placements(alpha, tasks or 0, p, a, groups, beta=beta)  # (--tasks xor --beta)
    return StencilModel(topology, alpha, beta, gamma, results)


def _check_tasks(tasks: int, alpha: tuple[int, ...], text: str, terminals: int) -> None:
    """Refuse a task count no task grid fits, saying the nearest counts that fit (sec. 5.3.4: the
    grid beta's sides divide the domain's, one task per terminal)."""
    if tasks > terminals:
        raise SynthError(f"--tasks {tasks:,} is more than the network's {terminals:,} terminals (one task per terminal)")
    if next(iter(task_grids(tasks, len(alpha), alpha)), None) is not None:
        return
    fits = [t for t in range(1, terminals + 1) if next(iter(task_grids(t, len(alpha), alpha)), None) is not None] \
        if terminals <= MAX_TASK_SEARCH else []
    below = max((t for t in fits if t < tasks), default=None)
    above = min((t for t in fits if t > tasks), default=None)
    near = " or ".join(f"{t:,}" for t in (below, above) if t is not None)
    raise SynthError(f"--tasks {tasks:,}: no grid of {tasks:,} tasks divides the domain {text} (every side of the task "
                     f"grid must divide the domain's side)" + (f"; {near} tasks fit" if near else ""))


def demand_model(topology, workload, phases):
    """[Prisacari20] eq. 5.1-5.6: the workload's demand on the dragonfly's global links per routing
    (None where a routing has no path: indirect with two groups)."""
    traffic = GroupTraffic(topology, workload, phases)
    return traffic, [traffic.demand(routing) for routing in ROUTINGS]


def uniform_model(spec: str, fail: str | None, b_l: float, b_r: float, b_p: float):
    """[Prisacari20] eq. 6.1-6.8 on a maximum-size dragonfly: the topology and its bound."""
    topology = _intact_dragonfly(spec, fail, "uniform-traffic", DRAGONFLY_UNIFORM_FORMS)
    if not topology.is_maximum:
        raise SynthError(f"{topology.spec}: eq. 6.1-6.8 are for the maximum size, a h + 1 = {topology.max_groups} "
                         f"groups, not {topology.groups}")
    return topology, uniform_throughput_bound(topology.p, topology.a, topology.h, b_l, b_r, b_p)
