"""synth's Python API: networks, workloads, routes with their bounds, and collective schedules.

Every function here is what a command of the command line does, without the printing: the command
line (synth.cli) and this module call the same use cases, so both give the same numbers. Results are
plain objects holding numpy arrays; nothing is written to disk unless a function says so.

Examples
--------
>>> import synth
>>> net = synth.network("dragonfly:2,4,2")
>>> net.network().num_terminals
72
>>> routing = synth.route(net, "randperm:3", router="minimal")
>>> phase = routing.phases[0]
>>> int(phase.max_contention), int(phase.lower_bound), phase.status
(4, 1, 'feasible')
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from synth import __all__  # noqa: E402,F401 - the public names, listed once (synth/__init__.py)

DEFAULT_MESSAGE_BYTES = 4096  # as `synth route --bytes`


def network(spec: str):
    """Build a network from its spec string.

    Parameters
    ----------
    spec : str
        A family's spec, such as ``"xgft:3:8,4,2:1,8,2"``, ``"dragonfly:2,4,2"``, ``"slimfly:5"``,
        ``"hyperx:4,4"``, ``"torus:8,8"`` or ``"kautz:3"`` (``synth topology --help`` lists every
        family's syntax), or the path of an instance file (``instances/*.toml``).

    Returns
    -------
    Topology
        The network of that family: ``.spec``, ``.family``, ``.label()``, ``.default_router`` and
        ``.network()``, the family-independent graph (terminals ``0..N-1`` first, then switches;
        directed channels as numpy arrays ``channel_src``, ``channel_dst``, with ports and bandwidth).

    Raises
    ------
    synth.core.errors.SynthError
        The spec is not a known family's, or its parameters are out of range (one line saying which).

    Examples
    --------
    >>> net = network("xgft:2:4,4:1,4")
    >>> net.family, net.network().num_terminals, net.network().num_switches
    ('xgft', 16, 8)
    >>> network("torus:4,4").default_router
    'minimal'
    """
    from synth.io.instance import load_instance
    from synth.topology import parse_topology

    if spec.endswith(".toml"):
        return parse_topology(load_instance(spec).spec)
    return parse_topology(spec)


def _topology(net):
    return network(net) if isinstance(net, str) else net


def workload(net, pattern: str, *, message_bytes: int = DEFAULT_MESSAGE_BYTES, placement: str | None = None):
    """A communication workload on a network's terminals: phases of flows.

    Parameters
    ----------
    net : Topology or str
        The network (from :func:`network`, or its spec).
    pattern : str
        A traffic pattern as ``synth route --traffic`` takes it: ``a2a-lin``, ``a2a-xor``, ``a2a-opt``,
        ``a2a-ghe``, ``a2a-bgh``, ``a2a-lat``, ``shift:K``, ``bitcomp``, ``bitrev``, ``randperm:SEED``,
        ``uniform:SEED``, ``stencil:A1xA2:B1xB2``, ``worst-case`` or ``csv:PATH``.
    message_bytes : int, optional
        The bytes of every message of a generated pattern (default 4096).
    placement : str, optional
        Where tasks sit: ``contiguous`` (the default), ``random:SEED`` or ``cartesian:G1xG2``.

    Returns
    -------
    Workload
        ``.num_phases``, ``.flows(phase)`` (numpy ``src``, ``dst``, ``bytes``), ``.select(text)``.

    Examples
    --------
    >>> w = workload("xgft:2:4,4:1,4", "a2a-lin")
    >>> w.num_phases, w.flows(1).src[:4].tolist(), w.flows(1).dst[:4].tolist()
    (16, [0, 1, 2, 3], [1, 2, 3, 4])
    """
    from synth.traffic.patterns import parse_pattern

    topology = _topology(net)
    graph = topology.network()
    made = parse_pattern(pattern, graph.num_terminals, topology.hierarchy(), message_bytes, topology=topology)
    if placement is not None:
        made = made.place(placement, graph.num_terminals, topology.hierarchy())
    if graph.failed_nodes is not None:  # a degraded network: flows whose ends no longer meet are dropped
        made = made.on_network(graph)
    return made


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


def schedule(collective: str, net, algorithm: str, *, message_bytes: int = 1 << 20, blocks: int | None = None,
             root: int = 0, peer: int | None = None, radix: int | None = None, batch: int | None = None,
             ranks_per_node: int = 1, sizes: str | None = None, router: str | None = None):
    """Generate a collective's step schedule and verify it by symbolic replay.

    Parameters
    ----------
    collective : str
        ``allgather``, ``reduce-scatter``, ``allreduce``, ``alltoall``, ``alltoallv``, ``broadcast``,
        ``reduce``, ``scatter``, ``gather`` or ``p2p``.
    net : Topology or str
        The network whose terminals hold the ranks (rank r on terminal r // ranks_per_node).
    algorithm : str
        A generator (``synth schedule --list``): ``ring``, ``swing-b``, ``bruck``, ``tuna``, ...
    message_bytes : int, optional
        A rank's message, split into the collective's blocks and rounded up to whole bytes.
    blocks, root, peer, radix, batch, ranks_per_node, sizes, router
        As the options of ``synth schedule`` of the same names.

    Returns
    -------
    Schedule
        Steps of transfers as numpy arrays (``step_ptr``, ``src``, ``dst``, ``op``, the blocks).

    Examples
    --------
    >>> s = schedule("allreduce", "torus:4,4", "swing-b", message_bytes=1024)
    >>> s.num_steps, s.num_transfers, verify(s).ok
    (8, 512, True)
    """
    from synth.app.schedule import make_schedule, plan_schedule

    plan = plan_schedule(collective, algorithm, _topology(net), message_bytes=message_bytes, blocks=blocks, root=root,
                         peer=peer, radix=radix, batch=batch, ranks_per_node=ranks_per_node, sizes=sizes, router=router)
    return make_schedule(plan, router)


def verify(schedule_):
    """Replay a schedule symbolically: does it deliver what its collective promises?

    Parameters
    ----------
    schedule_ : Schedule or str
        A schedule (from :func:`schedule`) or the path of a ``synth-schedule`` file (version 1 or 2).

    Returns
    -------
    VerifyReport
        ``.ok``, ``.violation`` (the first one, or None), ``.steps``, ``.transfers``, ``.block_sends``.
    """
    from synth.io.schedule_file import read_schedule
    from synth.collectives.verify import verify as replay

    return replay(read_schedule(schedule_) if isinstance(schedule_, str) else schedule_)


def price(schedule_, net=None, *, router: str | None = None, alpha: float = 1e-6, bandwidth: float = 100e9,
          seed: int = 0):
    """Price a schedule on its network with synth's cost model, next to the bound of any schedule.

    The cost model (docs/architecture.md): a step costs alpha for every message its busiest port
    starts, plus beta times the bytes of its busiest channel over that channel's bandwidth.

    Parameters
    ----------
    schedule_ : Schedule
    net : Topology or str, optional
        The network (default: the schedule's own spec).
    router : str, optional
        The routes the transfers take (default: the paths the schedule records, a synthesized
        schedule's, those its recorded cost was computed on; else the family's router's).
    alpha : float, optional
        Seconds to start one message (default 1e-6).
    bandwidth : float, optional
        Link bandwidth in bits per second (default 100e9).
    seed : int, optional

    Returns
    -------
    Costs
        ``.time`` (seconds), ``.lower_bound`` (seconds), ``.steps``, and DeSensi24's deficiencies
        ``.latency_deficiency``, ``.bandwidth_deficiency``, ``.congestion_deficiency``.

    Examples
    --------
    >>> s = schedule("allreduce", "torus:4,4", "swing-b", message_bytes=1 << 20)
    >>> c = price(s)
    >>> c.time >= c.lower_bound
    True
    """
    from synth.pricing.schedule_cost import costs, map_schedule

    topology = _topology(net) if net is not None else network(schedule_.spec)
    mapped = map_schedule(schedule_, topology, router, seed)
    return costs(mapped, schedule_.ranks, alpha, bandwidth)


def simulate(schedule_, net=None, *, model: str = "LV08", discipline: str = "bsp", router: str | None = None,
             alpha: float = 1e-6, bandwidth: float = 100e9, latency: float | None = None, hop_latency: float = 0.0,
             overhead: float = 0.0, seed: int = 0):
    """Replay a schedule on SimGrid along its transfers' paths, next to synth's cost model.

    A host per terminal, a link per directed channel, each transfer's route its own path
    (docs/simulation.md); the simulation runs in a worker process of its own and needs SimGrid's
    Python module (Debian's ``python3-simgrid`` or PyPI's ``simgrid``).

    Parameters
    ----------
    schedule_ : Schedule
    net : Topology or str, optional
        The network (default: the schedule's own spec).
    model : str, optional
        SimGrid's network model: ``LV08`` (its default), ``CM02`` (plain max-min sharing), ``SMPI``, ``IB``.
    discipline : str, optional
        ``bsp`` (a step starts when the previous one has ended everywhere) or ``async`` (a rank sends
        a step's messages once it has received its earlier steps').
    router : str, optional
        The routes the transfers take (default: the paths the schedule records, else the family's
        router's).
    alpha, bandwidth : float, optional
        The cost model's message start (seconds) and a link's bandwidth (bits per second).
    latency : float, optional
        SimGrid's latency of the link leaving a terminal, so of every route (default: alpha).
    hop_latency, overhead : float, optional
        Latency added per link between routers; seconds a rank spends on each message it sends.
    seed : int, optional

    Returns
    -------
    Simulation
        ``.labels`` (a row per step), ``.model`` and ``.simulated`` (seconds per row), ``.ends``,
        ``.model_total``, ``.simulated_total``.

    Examples
    --------
    >>> s = schedule("allreduce", "torus:4,4", "swing-b", message_bytes=1 << 20)
    >>> sim = simulate(s, model="CM02")
    >>> abs(sim.simulated_total - sim.model_total) < 1e-9 * sim.model_total
    True
    """
    from synth.app.simulate import SimulationOptions, simulate_schedule

    topology = _topology(net) if net is not None else network(schedule_.spec)
    options = SimulationOptions(model=model, discipline=discipline, alpha=alpha, bandwidth_bits=bandwidth,
                                latency=latency, hop_latency=hop_latency, overhead=overhead)
    return simulate_schedule(schedule_, topology, options, router, seed)


def compare(collective: str, net, *, sizes: str = "32B..512MiB", router: str | None = None, alpha: float = 1e-6,
            bandwidth: float = 100e9, synthesized: bool = False, time_limit: float = 60.0):
    """Price every algorithm of a collective on a network over message sizes.

    Parameters
    ----------
    collective : str
        An unrooted collective with equal blocks: ``allgather``, ``reduce-scatter``, ``allreduce``,
        ``alltoall``.
    net : Topology or str
    sizes : str, optional
        ``A..B`` (powers of two) or ``A,B,...`` with units B, KiB, MiB, GiB (default ``32B..512MiB``).
    router : str, optional
    alpha : float, optional
    bandwidth : float, optional
        Bits per second.
    synthesized : bool, optional
        Also synthesize a schedule (as :func:`synthesize` does) and list it as the column
        ``synthesized``; the bounds then include its bound (the cut bound; an all-to-all's flow bound).
    time_limit : float, optional
        Wall-clock seconds for that synthesis' programs, as ``synth synthesize --time-limit`` spends
        them (synth.solve.budget).

    Returns
    -------
    Comparison
        ``.sizes``, ``.candidates`` (their ``.label``), ``.times`` (sizes x candidates, seconds),
        ``.bounds`` (per size), ``.best``, ``.crossovers()``, ``.skipped``.

    Examples
    --------
    >>> c = compare("allreduce", "torus:4,4", sizes="1KiB,1MiB")
    >>> bool((c.times.min(axis=1) >= c.bounds).all())
    True
    """
    from synth.pricing.compare import compare as compare_all
    from synth.pricing.compare import parse_sizes
    from synth.pricing.bounds import with_strongest_bound

    topology = _topology(net)
    result = compare_all(collective, topology, parse_sizes(sizes), router, alpha, bandwidth)
    result = with_strongest_bound(result, topology, alpha, bandwidth)
    if synthesized:
        from synth.synthesis.portfolio import compare_with_synthesis

        result = compare_with_synthesis(result, topology, alpha, bandwidth, time_limit)
    return result


def synthesize(collective: str, net, *, sizes: str = "1MiB", chunks: int | None = None, root: int = 0,
               ranks_per_node: int = 1, transfers: str | None = None, router: str | None = None, solver: str = "cpsat",
               time_limit: float = 60.0, alpha: float = 1e-6, bandwidth: float = 100e9, method: str = "auto",
               block_sizes=None, routes: str | None = None, methods: str | None = None):
    """Synthesize a collective's schedule by optimization (a time-expanded integer program over
    every rank's blocks, or over one rank per orbit of the network's translations; balanced
    spreading trees above 64 ranks without translations; an all-to-all's pairs routed at once by
    the path-selection program), verified and priced next to the lower bounds of any schedule. The
    generated algorithms are on the front too: per size the least time of all is taken.

    Parameters
    ----------
    collective : str
        ``allgather``, ``reduce-scatter``, ``allreduce``, ``broadcast``, ``reduce``, ``alltoall`` or
        ``alltoallv``.
    net : Topology or str
        Up to 64 ranks with the exact program; up to 4096 where the network has translations (tori,
        HyperX, Kautz); else the trees, up to 4,000,000 deliveries (blocks x (ranks - 1)) and 1,024 ranks
        where every pair is a transfer, and above that the relay trees alone, up to 16,777,216 deliveries
        (4,096 ranks) where the ranks come in groups (a dragonfly's, or a router's ranks); an all-to-all up
        to 1,024 ranks (every rank pair a transfer).
    sizes : str, optional
        One size, ``A..B`` (powers of two) or ``A,B,...``: a schedule per size band.
    chunks : int, optional
        Blocks per rank (allgather, reduce-scatter, allreduce) or in all (broadcast, reduce);
        default: with the symmetric method the fewest that make the cut bound whole rounds, else 1.
    root, ranks_per_node, transfers, router, solver, time_limit, alpha, bandwidth, method : optional
        As ``synth synthesize`` takes them (``transfers``: ``neighbours`` or ``all``; ``method``:
        ``auto``, ``exact``, ``symmetric`` or ``trees``).
    block_sizes : str or numpy.ndarray, optional
        An alltoallv's P^2 block sizes (``random:S:SEED``, ``csv:PATH`` or an array); ``sizes`` is then
        not used: one band, at the matrix's sizes.
    routes : str, optional
        A routes file (synth-routes/2) whose paths the transfers take instead of ``router``'s: it
        needs a path for every node pair a transfer joins.
    methods : str, optional
        The registered synthesis methods to run, comma-separated (docs/methods.md; default: every one
        that applies).

    Returns
    -------
    list of Band
        Per size band: ``.sizes``, ``.schedule`` (a verified :class:`Schedule` whose ``.synthesis``
        dict records the method, the front of steps against rounds, the bounds, the time per size,
        the gap and the status).

    Examples
    --------
    >>> bands = synthesize("allgather", "torus:4", chunks=2, sizes="1KiB,1MiB")
    >>> record = bands[0].schedule.synthesis
    >>> record["status"], record["parts"][0]["steps"], record["parts"][0]["rounds"]
    ('optimal', 2, 3)
    >>> all(s["seconds"] >= s["bound_seconds"] for b in bands for s in b.schedule.synthesis["sizes"])
    True
    """
    from synth.app.schedule import checked_routes
    from synth.app.synthesize import SynthesisRequest
    from synth.app.synthesize import synthesize as run
    from synth.synthesis.methods import parse_methods
    from synth.pricing.compare import parse_sizes

    request = SynthesisRequest(collective, _topology(net), parse_sizes(sizes) if block_sizes is None else [1],
                               ranks_per_node, root, chunks, transfers, router, method, block_sizes, time_limit,
                               solver, None if routes is None else checked_routes(routes), alpha, bandwidth,
                               None if methods is None else parse_methods(methods, "methods"))
    return run(request).bands

