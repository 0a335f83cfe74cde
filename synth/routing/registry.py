"""The routers: one registry that every consumer asks (route, check, report, compare, the API, the docs).

A router is one module of synth.routing that declares `ROUTER = RouterSpec(...)` (or a tuple of
them), found on first use (synth.core.registry: this module imports none of them). Its spec says everything the rest of synth needs to know about it: the
name users type (`--router NAME`, recorded in routes files), the networks it applies to, the
options it takes, the path policy `synth check` verifies (a named one, or a PathPolicy bringing its
own check), why it refuses a network beyond what it `needs` (`refuses`), what a routes file records for it
(its synthesis options and per-phase solver report), its report columns and the line `synth
route` prints. Nothing else lists routers: an "unknown router" message, the CLI help, the
report's choices and the checker's policies all come from here.

A router is called through `Router` (the protocol of synth.workflow's batches):
router(topology, src, dst, phase=, occurrence=, seed=, size=) -> Routed, with per flow its route:
channel paths (`Paths`) or, on an XGFT, the compact encoding of its minimal up*/down* paths (the
WT index at the flow's NCA layer, expanded by synth.topology.paths.as_paths).

Two routers share the name `layered`: the XGFT one ([Prisacari20] ch.3, synth.routing.layered_xgft,
key `layered-xgft`) and the dragonfly one (ch.3's layers on ch.4's hierarchy,
synth.routing.layered_dragonfly, key `layered-dragonfly`); the network tells them apart, and
their keys name them apart everywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

from synth.core.errors import SynthError
from synth.core.registry import Registry
from synth.core.validate import show
from synth.topology.family import DIRECT, XGFT  # the networks a router applies to: Topology.routing_kind

# The path policies `synth check` verifies on a router's paths (synth.checking.routes).
MINIMAL, VIA_ONE, VIA_GROUP = "minimal", "via-one", "via-group"
LOAD_UNITS = ("messages", "bytes")


def default_load_unit(network, minimizes_messages: bool = False) -> tuple[str, list[float]]:
    """What loads count where the user did not say, and the links' differing rates ([] where they do not
    differ): bytes over bandwidth where the links differ in rate (counting messages would call a half-rate
    link's load equal to a full one's), unless the router only minimizes messages; else messages. The rule of
    `synth route`, `synth bounds` and synth.route()."""
    from synth.topology.network import differing_rates

    rates = differing_rates(network)
    return ("bytes" if rates and not minimizes_messages else "messages"), rates


@dataclass(frozen=True)
class RouterOptions:
    """What a user sets for a router (the options of `synth route`; keyword arguments of
    synth.api.route). A router takes the ones its spec lists in `takes`; the others must keep their
    defaults (`refuse_options`)."""

    constraints: str = "strong"  # the XGFT layered router's conditions ([Prisacari20] eq. 3.6-3.12)
    balance: bool = False
    construction: str = "halving"
    solver: str = "cpsat"
    time_limit: float | None = None
    threads: int = 1
    glpk_options: tuple[str, ...] | None = None
    consistency: str = "flow"  # flow: a route per message; destination: one per (switch, destination)
    candidates: str | None = None  # the path-selection router's candidate set (None: its default)
    load_unit: str = "messages"  # what a channel's load counts: messages, or bytes over bandwidth

    def __post_init__(self) -> None:
        if self.load_unit not in LOAD_UNITS:
            raise SynthError(f"unknown load unit '{self.load_unit}' (known: {', '.join(LOAD_UNITS)})")


# The command-line options of RouterOptions' fields (consistency and load_unit are every router's:
# their values are checked per router instead).
OPTION_FLAGS = {"constraints": ("--constraints",), "balance": ("--balance", "--no-balance"),
                "construction": ("--construction",), "solver": ("--solver",), "time_limit": ("--time-limit",),
                "threads": ("--threads",), "glpk_options": ("--glpk-options",), "candidates": ("--candidates",)}
SOLVER_OPTIONS = ("solver", "time_limit", "threads", "glpk_options")


@dataclass(frozen=True)
class PathPolicy:
    """A path policy of a router's own, beyond MINIMAL, VIA_ONE and VIA_GROUP (RouterSpec.policy):
    `synth check` verifies every path of a routes file of that router with it."""

    name: str
    text: str  # what `check` says the paths were verified to be ("N paths valid and TEXT")
    # check(topology) -> verify; verify(routers) -> (ok per row, what a path must be), routers a
    # (paths, k + 1) array of the routers each path of k router hops visits (contiguity, ends and
    # terminals are checked before)
    check: Callable


@dataclass(frozen=True)
class FileSchema:
    """What a routes file records for a synthesizing router (synth.io.routes_file checks it): its
    `synthesis` options and its per-phase `solver` report, by type."""

    synthesis: tuple[str, ...]  # required options
    synthesis_str: tuple[str, ...]  # those that are strings
    counts: tuple[str, ...]  # the report's integer counts (required)
    strings: tuple[str, ...] = ()  # its strings (optional unless in `required`)
    required: tuple[str, ...] = ()  # required beyond the counts
    flags: tuple[str, ...] = ()  # its booleans (optional)
    lists: tuple[str, ...] = ()  # its lists of integers
    synthesis_flags: tuple[str, ...] = ()  # options that are booleans
    synthesis_optional: tuple[str, ...] = ()  # integer options recorded only when used (a lane budget)


@dataclass
class Routed:
    """What a router returns for a batch of flows: their routes (Paths, or on an XGFT the WT index
    of every flow at its NCA layer) and, from a synthesizing router, how it got there per phase."""

    routes: object  # np.ndarray | synth.topology.paths.Paths
    reports: dict = field(default_factory=dict)


class Router(Protocol):
    """The router contract: synth.workflow routes batches of flows through it."""

    spec: "RouterSpec"
    options: object  # the router's own options (None for the fixed routers)
    expensive: bool  # synthesis: one phase per task
    whole_workload: bool  # all selected phases in one call (destination-consistent tables)
    weighs_bytes: bool  # it minimizes bytes over bandwidth: it is handed every flow's bytes (`size`)

    def __call__(self, topology, src, dst, *, phase, occurrence, seed: int = 0, size=None) -> Routed: ...


@dataclass(frozen=True)
class RouterSpec:
    """One router as the registry knows it (see the module's docstring)."""

    name: str  # what users type and routes files record
    networks: str  # XGFT or DIRECT
    summary: str  # one line for help texts and the docs
    build: Callable[[RouterOptions], Callable]  # the routing function for these options
    policy: str | PathPolicy = MINIMAL  # the path policy `check` verifies (direct networks; XGFT paths are minimal)
    key: str = ""  # unique among all routers (default: the name)
    needs: str | None = None  # "coordinates" (router coordinates) or "groups" (router groups), if any
    refuses: Callable[[object], str | None] | None = None  # its own reason not to apply to a topology (one line), or None
    takes: tuple[str, ...] = ()  # RouterOptions fields beyond consistency and load_unit
    consistent: bool = False  # destination-consistent by definition (tables without LMC as it is)
    minimizes_messages: bool = False  # a synthesizer whose models count messages: refuses load_unit bytes
    synthesis: Callable[[RouterOptions], object] | None = None  # the options object a routes file records
    synthesis_type: type | None = None  # reads them back (`check`); None: synthesis(...)'s type
    file_schema: FileSchema | None = None  # what its routes files record (synthesizing routers)
    label: Callable[[RouterOptions, int], str] | None = None  # `route`'s router line; default "NAME (seed S)"
    report: dict = field(default_factory=dict)  # report routing name -> (column label, consistency)
    report_default: bool = False  # its first report column is among a report's default routings
    elsewhere: str = ""  # what to use instead on the networks it does not apply to (one clause)
    proves: bool = False  # records per phase a solver's (or its LP's) proof over its own model
    proof_raises_bound: bool = False  # that proof is over every routing: it may raise the phase's lower bound
    lp_proof_key: str | None = None  # the solver report's field holding the LP bound an `lp` proof stands on
    records_lp_bound: bool = False  # its solver report carries the LP bound over all paths
    # (its options, lanes) -> the routing function within a budget of that many virtual lanes (route --vls N;
    # synthesis.lanes), for the routers that route within one
    within_lanes: Callable[[object, int], Callable] | None = None
    minimal_candidates: bool = False  # paths minimal when its synthesis says candidates "minimal"
    order: int = 0  # where help texts and lists put it (then by module name)

    @property
    def id(self) -> str:
        return self.key or self.name

    @property
    def lane_budget(self) -> bool:
        """It routes within a lane budget (route --vls N)."""
        return self.within_lanes is not None

    @property
    def synthesizes(self) -> bool:
        """Its routes files record `synthesis` and a solver report per phase; its phases carry a status."""
        return self.synthesis is not None

    def applies(self, topology) -> bool:
        return topology.routing_kind == self.networks and self.refusal(topology) is None

    def refusal(self, topology) -> str | None:
        """Why this router does not apply to `topology` (one line), or None when it does: `route`
        refuses such a run and `check` a file that claims it."""
        if topology.routing_kind != self.networks:
            kind = "fat trees (xgft)" if self.networks == XGFT else "direct networks"
            return f"the {self.name} router is for {kind}, not {topology.family}" + (f"; {self.elsewhere}" if self.elsewhere else "")
        if self.needs == "coordinates" and topology.router_coordinates() is None:
            return f"{self.name} needs a network with router coordinates (torus, hyperx, 2dfc), not {topology.family}"
        if self.needs == "groups" and topology.router_groups() is None:
            return f"{self.name} needs a network with groups (dragonfly), not {topology.family}"
        return self.refuses(topology) if self.refuses is not None else None

    def policy_for(self, synthesis: dict | None) -> str | PathPolicy:
        """The policy of a file's paths, given its recorded synthesis options."""
        if self.minimal_candidates and (synthesis or {}).get("candidates") == "minimal":
            return MINIMAL
        return self.policy

    def describe(self, options: RouterOptions, seed: int) -> str:
        return self.label(options, seed) if self.label is not None else f"{self.name} (seed {seed})"

    def recorded_synthesis(self, options: RouterOptions) -> dict | None:
        return self.synthesis(options).describe() if self.synthesis is not None else None

    def read_synthesis(self, recorded: dict):
        """The options object of a file's `synthesis` (its checks run: SynthError or TypeError when invalid)."""
        kind = self.synthesis_type if self.synthesis_type is not None else type(self.synthesis(RouterOptions()))
        return kind(**recorded)


class _Registry:
    """The specs the router modules declare, by key (Registry: found on first use; importing a router
    loads no solver). Two routers may share a name on different kinds of network: lookups by name
    take the network's kind."""

    def __init__(self):
        self._specs: Registry[RouterSpec] = Registry("router", "synth.routing", "ROUTER", key=lambda spec: spec.id,
                                                     order=lambda spec: spec.order)

    def specs(self) -> list[RouterSpec]:
        return list(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)

    def by_id(self, key: str) -> RouterSpec:
        return self._specs[key]

    def for_kind(self, kind: str) -> list[RouterSpec]:
        return [s for s in self.specs() if s.networks == kind]

    def names(self, kind: str) -> list[str]:
        return [s.name for s in self.for_kind(kind)]

    def applicable(self, topology) -> list[RouterSpec]:
        return [s for s in self.specs() if s.applies(topology)]

    def find(self, name: str, kind: str) -> RouterSpec | None:
        return next((s for s in self.for_kind(kind) if s.name == name), None)

    def get(self, name: str, topology) -> RouterSpec:
        """The router `name` on `topology`: one line naming the routers that apply when it is unknown
        or does not apply."""
        spec = self.find(name, topology.routing_kind)
        other = next((s for s in self.specs() if s.name == name and s.networks != topology.routing_kind), None)
        if spec is None and other is not None:  # a router of the other kind of network
            raise SynthError(other.refusal(topology))
        if spec is None:
            known = ", ".join(s.name for s in self.applicable(topology))
            raise SynthError(f"unknown router {show(name)} for {topology.family} networks (known: {known})")
        refusal = spec.refusal(topology)
        if refusal is not None:
            raise SynthError(refusal)
        return spec

    def taking(self, option: str) -> list[RouterSpec]:
        return [s for s in self.specs() if option in s.takes]


ROUTERS = _Registry()


class RouterCall:
    """A router made for a run: its spec, its options and the routing function, called as the
    `Router` protocol says (whatever the function returns: routes, or (routes, reports))."""

    def __init__(self, spec: RouterSpec, function: Callable, options: RouterOptions):
        self.spec, self.function, self.router_options = spec, function, options
        self.options = getattr(function, "options", None)
        self.expensive = bool(getattr(function, "expensive", False))
        self.whole_workload = bool(getattr(function, "whole_workload", False))
        self.weighs_bytes = bool(getattr(function, "weighs_bytes", False))

    def __call__(self, topology, src, dst, *, phase, occurrence, seed: int = 0, size=None) -> Routed:
        weighed = {"size": size} if self.weighs_bytes else {}
        out = self.function(topology, src, dst, phase=phase, occurrence=occurrence, seed=seed, **weighed)
        return Routed(*out) if isinstance(out, tuple) else Routed(out)

    def with_lanes(self, lanes: int) -> "RouterCall":
        """The same router within a budget of `lanes` virtual lanes (specs with lane_budget)."""
        return RouterCall(self.spec, self.spec.within_lanes(self.options, lanes), self.router_options)


def make_router(name: str, topology, options: RouterOptions | None = None) -> RouterCall:
    """The router `name` for `topology` with `options`, every option checked against what the
    router takes: one line when the router is unknown, does not apply or cannot keep an option."""
    options = options or RouterOptions()
    spec = ROUTERS.get(name, topology)
    if options.load_unit == "bytes" and spec.minimizes_messages:
        raise SynthError(f"the {name} router minimizes messages per channel: with --load-unit bytes use --router paths "
                         "(it minimizes bytes), or a fixed router")
    if options.consistency == "destination" and not spec.consistent and "consistency" not in spec.takes:
        takers = [s.name for s in ROUTERS.for_kind(spec.networks) if "consistency" in s.takes]
        by_definition = [s.name for s in ROUTERS.for_kind(spec.networks) if s.consistent]
        raise SynthError(f"--consistency destination is implemented for the {' and '.join(takers)} router"
                         f"{'s' * (len(takers) > 1)} on {topology.family} networks (and {' and '.join(by_definition)} "
                         f"{'are' if len(by_definition) > 1 else 'is'} destination-consistent by definition), not for "
                         f"'{name}'")
    return RouterCall(spec, spec.build(options), options)


def refuse_options(given: list[str], spec: RouterSpec, family: str) -> None:
    """A router option given for a router that ignores it is a mistake to say, not to drop
    (--construction with minimal routes nothing differently). `given`: the options on the command line."""
    for option, flags in OPTION_FLAGS.items():
        flag = next((f for f in flags if f in given), None)
        if flag is None or option in spec.takes:
            continue
        takers = [f"{s.name} ({'xgft' if s.networks == XGFT else 'direct networks'})" for s in ROUTERS.taking(option)]
        raise SynthError(f"{flag} applies to --router {', '.join(takers)}, not to '{spec.name}' on {family}")


def fixed(function: Callable) -> Callable:
    """A fixed (oblivious or adaptive) routing function as a spec's `build`: it takes no options."""
    return lambda options: function

