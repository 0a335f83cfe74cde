"""The API's routes, their bounds and their check (synth.api)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from synth.api.networks import DEFAULT_MESSAGE_BYTES, _topology, workload


@dataclass(frozen=True)
class PhaseRouting:
    """One routed phase: its flows, their channel paths, and the contention next to the bound.

    Attributes
    ----------
    phase : int
        The phase number in the workload.
    src, dst, bytes : numpy.ndarray
        The flows (terminal numbers and message bytes), one entry per flow.
    offsets, channels : numpy.ndarray
        The paths in CSR form: flow ``i`` crosses ``channels[offsets[i]:offsets[i+1]]`` in travel order
        (channel ids of ``network().channel_src`` / ``channel_dst``).
    max_contention : int
        The most messages (or bytes over bandwidth, with ``load_unit="bytes"``) on one channel.
    lower_bound : int
        The strongest lower bound the run has: no routing of this phase does better.
    bound_source : str
        What the bound is: ``""`` for the cut bounds, ``"LP"`` for the LP bound over all paths, or a
        solver's proof (``"cpsat proof"``).
    status : str
        ``optimal`` (at the bound, or proven), ``feasible`` (above the bound, not proven) or
        ``timeout`` (a solver hit its time limit above the bound).

    Examples
    --------
    >>> phase = route("torus:4,4", "shift:1").phases[0]
    >>> phase.phase, len(phase.src), phase.path(0).tolist(), phase.gap
    (0, 16, [0, 32, 3], 0)
    >>> int(phase.loads(phase.channels.max() + 1).max()) == phase.max_contention
    True
    """

    phase: int
    src: np.ndarray
    dst: np.ndarray
    bytes: np.ndarray
    offsets: np.ndarray
    channels: np.ndarray
    max_contention: int
    lower_bound: int
    bound_source: str
    status: str

    def path(self, flow: int) -> np.ndarray:
        """The channels flow ``flow`` crosses, in order."""
        return self.channels[self.offsets[flow] : self.offsets[flow + 1]]

    def loads(self, num_channels: int) -> np.ndarray:
        """Messages per channel (one np.bincount of the paths)."""
        return np.bincount(self.channels, minlength=num_channels)

    @property
    def gap(self) -> int:
        return self.max_contention - self.lower_bound


@dataclass(frozen=True)
class Routing:
    """The result of :func:`route`: every selected phase routed and evaluated.

    Attributes
    ----------
    topology : Topology
        The network routed.
    router : str
        The router's name.
    phases : list of PhaseRouting
        One per selected phase, in order.
    load_unit : str
        What the contention and bounds count: ``messages``, or ``bytes`` (bytes over bandwidth).

    Examples
    --------
    >>> routing = route("torus:4,4", "shift:1")
    >>> routing.router, len(routing.phases), routing.max_contention, routing.optimal
    ('minimal', 1, 1, True)
    """

    topology: object
    router: str
    phases: list[PhaseRouting] = field(default_factory=list)
    load_unit: str = "messages"  # what the contention and bounds count: messages, or bytes over bandwidth
    # what synth route --out writes from (synth.app.route.write_routes): the file's header, the routed
    # phases as the router gave them, the flows a degraded network drops per phase
    _header: dict | None = field(default=None, repr=False, compare=False)
    _routed: list = field(default_factory=list, repr=False, compare=False)
    _dropped: dict | None = field(default=None, repr=False, compare=False)

    @property
    def max_contention(self) -> int:
        """The largest contention over the phases."""
        return max((p.max_contention for p in self.phases), default=0)

    @property
    def optimal(self) -> bool:
        """Whether every phase is at its lower bound (or proven optimal)."""
        return all(p.status == "optimal" for p in self.phases)

    def write(self, path, *, vls: int | None = None) -> str:
        """Write the routes file ``synth route --out PATH`` writes (synth-routes/2): JSON, or the
        compact HDF5 form for a path ending in ``.h5`` or ``.hdf5``; all or nothing (a failure leaves
        no file). With ``vls`` every path also gets a virtual lane, at most ``vls`` lanes, so that no
        lane's channel dependencies have a cycle (as ``synth route --vls``; more lanes needed is a
        SynthError saying how many). Returns the path.

        Examples
        --------
        >>> import os, tempfile
        >>> routing = route("dragonfly:2,4,2", "a2a-lin", router="minimal", phases="0-3")
        >>> path = routing.write(os.path.join(tempfile.mkdtemp(), "r.h5"), vls=4)
        >>> check(path).ok
        True
        """
        from synth.app.route import write_routes
        from synth.core.output import OutputSet

        if self._header is None:
            from synth.core.errors import SynthError

            raise SynthError("this Routing was not made by synth.route(): it has no routes file header")
        path = str(path)
        with OutputSet() as outputs:
            target = outputs.reserve(path)
            write_routes(target, self._header, iter(self._routed), self.topology, self.topology.network(),
                         self._dropped, vls)
        return path

    def to_networkx(self, phase: int | None = None):
        """The network as a networkx MultiDiGraph with the routing's channel loads.

        The graph of ``topology.to_networkx()`` (nodes with ``name``, ``kind`` and ``level``; every
        channel an edge keyed by its channel id with ``src_port``, ``dst_port`` and ``bandwidth``), each
        edge also with its ``load``: the messages crossing it in the given phase, or the most in any
        one phase when ``phase`` is None.

        Examples
        --------
        >>> routing = route("xgft:2:4,4:1,4", "a2a-lin", router="dmodk", phases="1")
        >>> graph = routing.to_networkx()
        >>> graph.number_of_nodes(), graph.number_of_edges()
        (24, 64)
        >>> max(load for _, _, load in graph.edges(data="load"))
        1
        """
        graph = self.topology.to_networkx()
        channels = graph.number_of_edges()
        chosen = [p for p in self.phases if phase is None or p.phase == phase]
        if phase is not None and not chosen:
            raise KeyError(f"phase {phase} was not routed")
        load = np.zeros(channels, dtype=np.int64)
        for p in chosen:
            np.maximum(load, p.loads(channels), out=load)
        graph.graph["router"] = self.router
        for a, b, c, data in graph.edges(keys=True, data=True):
            data["load"] = int(load[c])
        return graph


def route(net, traffic, router: str | None = None, *, phases: str = "all", message_bytes: int = DEFAULT_MESSAGE_BYTES,
          seed: int = 0, candidates: str | None = None, solver: str = "cpsat", time_limit: float | None = None,
          load_unit: str | None = None, workers: int = 1) -> Routing:
    """Route every selected phase of a workload and put its contention next to its lower bound.

    Parameters
    ----------
    net : Topology or str
        The network (from :func:`network`, or its spec).
    traffic : Workload or str
        A workload (from :func:`workload`) or a pattern string.
    router : str, optional
        Any router of ``synth route --router``: ``dmodk``, ``smodk``, ``random``, ``random-msg``,
        ``layered`` and ``monolithic`` on XGFTs; ``minimal``, ``minimal-random``, ``dor``, ``valiant``,
        ``valiant-any``, ``ugal``, ``paths``, ``updown`` and (dragonflies) ``layered`` on direct networks.
        Default: the family's (``dmodk`` on XGFTs, ``minimal`` elsewhere).
    phases : str, optional
        ``all`` (default), ``P``, ``P1,P2,...`` or ranges ``A-B``.
    message_bytes : int, optional
        The message size of a pattern string (default 4096).
    seed : int, optional
        The seed of the random routers.
    candidates : str, optional
        The ``paths`` router's candidate paths: ``minimal``, ``valiant`` or ``all``.
    solver : str, optional
        The synthesizing routers' backend: ``cpsat`` (default), ``cbc``, ``highs`` or ``glpk``.
    time_limit : float, optional
        Seconds per solver call (synthesizing routers).
    load_unit : str, optional
        ``messages`` or ``bytes`` (bytes over bandwidth per channel). Default: bytes where the links differ
        in rate and the router weighs bytes, else messages (as ``synth route`` decides).
    workers : int, optional
        Processes to route in (default 1: in this process).

    Returns
    -------
    Routing

    Examples
    --------
    >>> r = route("xgft:3:4,4,4:1,4,4", "a2a-opt", router="layered", phases="0-3")
    >>> [(p.phase, p.max_contention, p.lower_bound, p.status) for p in r.phases]
    [(0, 1, 1, 'optimal'), (1, 1, 1, 'optimal'), (2, 1, 1, 'optimal'), (3, 1, 1, 'optimal')]
    """
    from synth.app.route import plan_route
    from synth.topology.paths import as_paths
    from synth.routing.registry import RouterOptions
    from synth.workflow import route_phases

    topology = _topology(net)
    work = workload(topology, traffic, message_bytes=message_bytes) if isinstance(traffic, str) else traffic
    name = router or topology.default_router
    selected = work.select(phases)
    if load_unit is None:
        from synth.routing.registry import ROUTERS, default_load_unit

        load_unit = default_load_unit(topology.network(), ROUTERS.get(name, topology).minimizes_messages)[0]
    # the plan synth route makes: the router, its limits, the routes file's header
    plan = plan_route(topology, work, phases, selected, name, seed,
                      RouterOptions(solver=solver, time_limit=time_limit, candidates=candidates, load_unit=load_unit),
                      [], True, None)
    out, routed = [], []
    for phase in route_phases(topology, plan.network, work, selected, plan.router, seed, None, workers=workers,
                              keep_routes=True, load_unit=load_unit):
        flows, e = phase.flows, phase.evaluation
        paths = as_paths(topology, flows.src, flows.dst, phase.choice)
        routed.append(phase)
        out.append(PhaseRouting(e.phase, flows.src, flows.dst, flows.bytes, paths.offsets, paths.channels,
                                e.max_contention, e.lower_bound, e.bound_source, e.status))
    return Routing(topology, name, out, load_unit, _header=plan.header, _routed=routed, _dropped=plan.dropped)


@dataclass(frozen=True)
class PhaseBounds:
    """Lower bounds of one phase: no routing puts less on its busiest channel.

    Attributes
    ----------
    phase : int
    lower_bound : int
        The strongest of the bounds below.
    cuts : dict
        Per cut (XGFT: ``stage 1..H``; direct networks: ``terminal``, ``group``, ...), its bound.
    lp : int or None
        The LP bound over all paths (the multicommodity-flow relaxation), when asked for.

    Examples
    --------
    >>> (b,) = bounds("xgft:2:4,4:1,4", "a2a-lin", phases="5")
    >>> b.phase, b.lower_bound, b.cuts, b.lp
    (5, 1, {'stage 1': 1, 'stage 2': 1}, None)
    """

    phase: int
    lower_bound: int
    cuts: dict[str, int]
    lp: int | None = None


def bounds(net, traffic, *, phases: str = "all", message_bytes: int = DEFAULT_MESSAGE_BYTES, lp: bool = False,
           lp_time_limit: float | None = None) -> list[PhaseBounds]:
    """Lower bounds of the selected phases: the cut bounds, and with ``lp`` the LP bound.

    Parameters
    ----------
    net : Topology or str
    traffic : Workload or str
    phases : str, optional
    message_bytes : int, optional
    lp : bool, optional
        Also solve the LP relaxation over all paths per phase (HiGHS): slower, never weaker.
    lp_time_limit : float, optional
        Seconds per LP (default as ``synth bounds --lp``).

    Returns
    -------
    list of PhaseBounds

    Examples
    --------
    >>> [(b.phase, b.lower_bound) for b in bounds("dragonfly:2,4,2", "randperm:3", lp=True)]
    [(0, 2)]
    """
    from synth.app.bounds import phase_bounds
    from synth.execute import LocalExecutor

    topology = _topology(net)
    work = workload(topology, traffic, message_bytes=message_bytes) if isinstance(traffic, str) else traffic
    table = phase_bounds(topology, work, work.select(phases), lp=lp, lp_time_limit=lp_time_limit,
                         executor=LocalExecutor(1))
    cut_names = table.names[:-1] if lp else table.names
    return [PhaseBounds(int(phase), int(row.max(initial=0)), dict(zip(cut_names, (int(v) for v in row))),
                        int(row[-1]) if lp else None) for phase, row in zip(table.phases, table.values)]


def check(path):
    """Re-verify a routes file (or a Routing) from scratch, as ``synth check`` does.

    Every path is walked on the network rebuilt from the file's spec, the loads are recounted, the
    bounds recomputed and the statuses checked against them.

    Parameters
    ----------
    path : str or Routing
        A routes file (``synth route --out``, ``synth-routes/2``, JSON or HDF5), or a :class:`Routing`
        (checked as the file it writes).

    Returns
    -------
    CheckReport
        ``.ok``, ``.problems`` (one line each), ``.phases``, ``.paths``, ``.max_contention``,
        ``.note_lines()``.

    Examples
    --------
    >>> import os, tempfile
    >>> path = route("torus:4,4", "shift:1").write(os.path.join(tempfile.mkdtemp(), "r.json"))
    >>> report = check(path)
    >>> report.ok, report.problems, report.phases, report.paths
    (True, [], 1, 16)
    """
    from synth.api.outputs import _routes_path
    from synth.io.routes_file import read_routes
    from synth.checking.routes import check_routes

    with _routes_path(path) as file:
        return check_routes(read_routes(file))
