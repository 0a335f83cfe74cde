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
    """

    topology: object
    router: str
    phases: list[PhaseRouting] = field(default_factory=list)

    @property
    def max_contention(self) -> int:
        """The largest contention over the phases."""
        return max((p.max_contention for p in self.phases), default=0)

    @property
    def optimal(self) -> bool:
        """Whether every phase is at its lower bound (or proven optimal)."""
        return all(p.status == "optimal" for p in self.phases)

    def to_networkx(self, phase: int | None = None):
        """The network as a networkx MultiDiGraph with the routing's channel loads.

        Nodes are the network's node numbers with a ``name`` and ``kind`` (``terminal`` or
        ``switch``); every channel is an edge keyed by its channel id with ``src_port``,
        ``dst_port``, ``bandwidth`` and ``load``: the messages crossing it in the given phase, or
        the most in any one phase when ``phase`` is None.

        Examples
        --------
        >>> routing = route("xgft:2:4,4:1,4", "a2a-lin", router="dmodk", phases="1")
        >>> graph = routing.to_networkx()
        >>> graph.number_of_nodes(), graph.number_of_edges()
        (24, 64)
        >>> max(load for _, _, load in graph.edges(data="load"))
        1
        """
        import networkx as nx

        graph_of = self.topology.network()
        channels = graph_of.num_channels
        chosen = [p for p in self.phases if phase is None or p.phase == phase]
        if phase is not None and not chosen:
            raise KeyError(f"phase {phase} was not routed")
        load = np.zeros(channels, dtype=np.int64)
        for p in chosen:
            np.maximum(load, p.loads(channels), out=load)
        graph = nx.MultiDiGraph(spec=self.topology.spec, router=self.router)
        n = graph_of.num_terminals
        for node, name in enumerate(graph_of.node_names):
            graph.add_node(node, name=name, kind="terminal" if node < n else "switch")
        for c in range(channels):
            graph.add_edge(int(graph_of.channel_src[c]), int(graph_of.channel_dst[c]), key=c,
                           src_port=int(graph_of.channel_src_port[c]), dst_port=int(graph_of.channel_dst_port[c]),
                           bandwidth=float(graph_of.channel_bandwidth[c]), load=int(load[c]))
        return graph


def route(net, traffic, router: str | None = None, *, phases: str = "all", message_bytes: int = DEFAULT_MESSAGE_BYTES,
          seed: int = 0, candidates: str | None = None, solver: str = "cpsat", time_limit: float | None = None,
          load_unit: str = "messages", workers: int = 1) -> Routing:
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
        ``messages`` (default) or ``bytes`` (bytes over bandwidth per channel).
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
    from synth.topology.paths import as_paths
    from synth.routing.registry import RouterOptions, make_router
    from synth.workflow import check_flow_limit, route_phases

    topology = _topology(net)
    work = workload(topology, traffic, message_bytes=message_bytes) if isinstance(traffic, str) else traffic
    name = router or topology.default_router
    function = make_router(name, topology, RouterOptions(solver=solver, time_limit=time_limit, candidates=candidates,
                                                         load_unit=load_unit))
    selected = work.select(phases)
    check_flow_limit(work, selected, function, True, None)
    out = []
    for routed in route_phases(topology, topology.network(), work, selected, function, seed, None, workers=workers,
                               keep_routes=True, load_unit=load_unit):
        flows, e = routed.flows, routed.evaluation
        paths = as_paths(topology, flows.src, flows.dst, routed.choice)
        out.append(PhaseRouting(e.phase, flows.src, flows.dst, flows.bytes, paths.offsets, paths.channels,
                                e.max_contention, e.lower_bound, e.bound_source, e.status))
    return Routing(topology, name, out)


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


def check(path: str):
    """Re-verify a routes file from scratch, as ``synth check`` does.

    Every path is walked on the network rebuilt from the file's spec, the loads are recounted, the
    bounds recomputed and the statuses checked against them.

    Parameters
    ----------
    path : str
        A routes file (``synth route --out``, ``synth-routes/2``).

    Returns
    -------
    CheckReport
        ``.ok``, ``.problems`` (one line each), ``.phases``, ``.paths``, ``.max_contention``,
        ``.note_lines()``.
    """
    from synth.io.routes_file import read_routes
    from synth.checking.routes import check_routes

    return check_routes(read_routes(path))
