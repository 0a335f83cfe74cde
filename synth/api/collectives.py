"""The API's collective schedules: made, verified, priced, simulated, compared and synthesized (synth.api)."""

from __future__ import annotations

from synth.api.networks import _topology, network


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

    Examples
    --------
    >>> report = verify(schedule("broadcast", "torus:4,4", "binomial", message_bytes=4096))
    >>> report.ok, report.violation, report.steps, report.transfers
    (True, None, 4, 15)
    """
    from synth.io.schedule_file import read_schedule
    from synth.collectives.verify import verify as replay

    return replay(read_schedule(schedule_) if isinstance(schedule_, str) else schedule_)


def _node(intra_bandwidth: float | None, intra_latency: float | None, copy_cost: float):
    """What a node adds to the cost model (synth.pricing.alphabeta.NodeCosts), checked as the options are."""
    from synth.core.errors import SynthError
    from synth.pricing.alphabeta import NodeCosts

    for name, value, least in (("intra_bandwidth", intra_bandwidth, 1e-300), ("intra_latency", intra_latency, 0.0),
                               ("copy_cost", copy_cost, 0.0)):
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if value is not None and not (number and least <= value < float("inf")):
            raise SynthError(f"{name} must be a {'positive' if least else 'non-negative'} number, got {value!r}")
    return NodeCosts(intra_latency, intra_bandwidth, float(copy_cost))


def price(schedule_, net=None, *, router: str | None = None, alpha: float = 1e-6, bandwidth: float = 100e9,
          seed: int = 0, intra_bandwidth: float | None = None, intra_latency: float | None = None,
          copy_cost: float = 0.0):
    """Price a schedule on its network with synth's cost model, next to the bound of any schedule.

    The cost model (docs/architecture.md): a step costs alpha for every message its busiest port
    starts, plus beta times the bytes of its busiest channel over that channel's bandwidth; with
    ranks sharing a node, its internal link's latency and bandwidth, and a per-byte copy cost.

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
    intra_bandwidth : float, optional
        Bits per second of a node's internal link, which every byte moved between two ranks of one
        node crosses (default: unlimited).
    intra_latency : float, optional
        Seconds to start a message to a rank of the same node (default: alpha).
    copy_cost : float, optional
        Seconds per byte a rank copies: the blocks it receives in combined messages (default 0).

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

    node = _node(intra_bandwidth, intra_latency, copy_cost)
    topology = _topology(net) if net is not None else network(schedule_.spec)
    mapped = map_schedule(schedule_, topology, router, seed)
    return costs(mapped, schedule_.ranks, alpha, bandwidth, node)


def simulate(schedule_, net=None, *, model: str = "LV08", discipline: str = "bsp", router: str | None = None,
             alpha: float = 1e-6, bandwidth: float = 100e9, latency: float | None = None, hop_latency: float = 0.0,
             overhead: float = 0.0, seed: int = 0, intra_bandwidth: float | None = None,
             intra_latency: float | None = None, copy_cost: float = 0.0):
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
    intra_bandwidth, intra_latency, copy_cost : float, optional
        As :func:`price` takes them, in the model and on the platform (a node's memory link, a
        receiver's copy time).

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
                                latency=latency, hop_latency=hop_latency, overhead=overhead,
                                node=_node(intra_bandwidth, intra_latency, copy_cost))
    return simulate_schedule(schedule_, topology, options, router, seed)


def compare(collective: str, net, *, sizes: str | None = None, router: str | None = None, alpha: float = 1e-6,
            bandwidth: float = 100e9, synthesized: bool = False, time_limit: float = 60.0, reproducible: bool = False,
            ranks_per_node: int = 1, root: int = 0, peer: int | None = None, block_sizes=None,
            intra_bandwidth: float | None = None, intra_latency: float | None = None, copy_cost: float = 0.0):
    """Price every algorithm of a collective on a network over message sizes.

    Parameters
    ----------
    collective : str
        Any collective :func:`schedule` generates: ``allgather``, ``reduce-scatter``, ``allreduce``,
        ``alltoall``, ``alltoallv``, ``broadcast``, ``reduce``, ``scatter``, ``gather``, ``p2p``.
    net : Topology or str
    sizes : str, optional
        ``A..B`` (powers of two) or ``A,B,...`` with units B, KiB, MiB, GiB (default ``32B..512MiB``;
        an alltoallv's: the bytes a rank sends on average, its matrix scaled to each in proportion,
        default the matrix as given).
    root, peer : int, optional
        A rooted collective's root (p2p: the source) and p2p's destination.
    block_sizes : str or numpy.ndarray, optional
        An alltoallv's P^2 block sizes (``random:S:SEED``, ``csv:PATH`` or an array), as
        :func:`synthesize` takes them.
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
    reproducible : bool, optional
        The same synthesized schedule on any machine: the solver's work alone ends each program, the
        clock only a runaway guard (``--reproducible``; a slow machine takes longer instead).
    ranks_per_node, intra_bandwidth, intra_latency, copy_cost : optional
        Q ranks a terminal, and what a node adds to the model, as :func:`price` takes them.

    Returns
    -------
    Comparison
        ``.sizes``, ``.candidates`` (their ``.label``), ``.times`` (sizes x candidates, seconds),
        ``.bounds`` (per size), ``.best`` (per size the name of the fastest: an algorithm, or
        ``synthesized``), ``.best_index`` (the same as indices into ``.candidates``),
        ``.crossovers()`` ((size, best before, best from there on) where the best changes),
        ``.skipped``.

    Examples
    --------
    >>> c = compare("allreduce", "torus:4,4", sizes="1KiB,1MiB")
    >>> bool((c.times.min(axis=1) >= c.bounds).all())
    True
    >>> c.best, c.crossovers()
    (['swing-l', 'swing-b'], [(1048576, 'swing-l', 'swing-b')])
    >>> v = compare("alltoallv", "torus:2,4", block_sizes="random:4096:1", sizes="1KiB,1MiB")
    >>> v.best, bool((v.times.min(axis=1) >= v.bounds).all())
    (['multitree', 'spread-out'], True)
    """
    from synth.pricing.compare import compare as compare_all
    from synth.core.sizes import parse_sizes
    from synth.pricing.bounds import with_strongest_bound

    node = _node(intra_bandwidth, intra_latency, copy_cost)
    topology = _topology(net)
    result = compare_all(collective, topology, None if sizes is None else parse_sizes(sizes), router, alpha, bandwidth,
                         node, ranks_per_node, root, peer, block_sizes)
    result = with_strongest_bound(result, topology, alpha, bandwidth, ranks_per_node, root, node=node)
    if synthesized:
        from synth.solve.budget import reproducible as work_only
        from synth.synthesis.portfolio import compare_with_synthesis

        with work_only(reproducible):
            result = compare_with_synthesis(result, topology, alpha, bandwidth, time_limit, node=node)
    return result


def synthesize(collective: str, net, *, sizes: str = "1MiB", chunks: int | None = None, root: int = 0,
               ranks_per_node: int = 1, transfers: str | None = None, router: str | None = None, solver: str = "cpsat",
               time_limit: float = 60.0, reproducible: bool = False, alpha: float = 1e-6, bandwidth: float = 100e9,
               method: str = "auto", block_sizes=None, routes: str | None = None, methods: str | None = None,
               intra_bandwidth: float | None = None, intra_latency: float | None = None, copy_cost: float = 0.0):
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
    reproducible : bool, optional
        The same schedule on any machine (``--reproducible``): the solver's work alone ends each
        program, the clock only a runaway guard, so a slow machine takes longer instead.
    block_sizes : str or numpy.ndarray, optional
        An alltoallv's P^2 block sizes (``random:S:SEED``, ``csv:PATH`` or an array); ``sizes`` is then
        not used: one band, at the matrix's sizes.
    routes : str, optional
        A routes file (synth-routes/2) whose paths the transfers take instead of ``router``'s: it
        needs a path for every node pair a transfer joins.
    methods : str, optional
        The registered synthesis methods to run, comma-separated (docs/methods.md; default: every one
        that applies).
    intra_bandwidth, intra_latency, copy_cost : float, optional
        What a node adds to the model, as :func:`price` takes them: the front's points are chosen
        and recorded under it.

    Returns
    -------
    list of Band
        Per size band (consecutive sizes that choose the same points): ``.sizes``,
        ``.message_bytes`` and ``.schedule``, a verified :class:`Schedule` whose blocks are sized for
        ``.message_bytes``, the band's first size (its ``.synthesis`` dict records the method, the
        front of steps against rounds, the bounds, the time per size of the band, the gap and the
        status). For a schedule sized for another size of a band, synthesize that size alone
        (``sizes="N"``).

    Examples
    --------
    >>> bands = synthesize("allgather", "torus:4", chunks=2, sizes="1KiB,1MiB")
    >>> record = bands[0].schedule.synthesis
    >>> record["status"], record["parts"][0]["steps"], record["parts"][0]["rounds"]
    ('optimal', 2, 3)
    >>> all(s["seconds"] >= s["bound_seconds"] for b in bands for s in b.schedule.synthesis["sizes"])
    True
    >>> [(b.sizes, b.message_bytes, int(b.schedule.block_bytes[0])) for b in bands]
    [([1024, 1048576], 1024, 128)]
    """
    from synth.app.schedule import checked_routes
    from synth.app.synthesize import SynthesisRequest
    from synth.app.synthesize import synthesize as run
    from synth.synthesis.methods import parse_methods
    from synth.core.sizes import parse_sizes

    request = SynthesisRequest(collective, _topology(net), parse_sizes(sizes) if block_sizes is None else [1],
                               ranks_per_node, root, chunks, transfers, router, method, block_sizes, time_limit,
                               solver, None if routes is None else checked_routes(routes), alpha, bandwidth,
                               None if methods is None else parse_methods(methods, "methods"),
                               _node(intra_bandwidth, intra_latency, copy_cost))
    from synth.solve.budget import reproducible as work_only

    with work_only(reproducible):
        return run(request).bands


def sweep(networks, collectives, *, sizes: str | None = None, router: str | None = None, alpha: float = 1e-6,
          bandwidth: float = 100e9, synthesized: bool = False, time_limit: float = 60.0, ranks_per_node: int = 1,
          executor: str | None = None, checkpoint: str | None = None):
    """:func:`compare` over every network and collective: each (network, collective) cell a task on
    an executor (``synth sweep``), kept in a checkpoint as it finishes where one is given.

    Parameters
    ----------
    networks, collectives : list of str
        Network specs and collective names (alltoallv excepted: its blocks come from a matrix);
        the cells run networks outer, collectives inner.
    sizes, router, alpha, bandwidth, ranks_per_node : optional
        As :func:`compare` takes them (``bandwidth`` in bits per second).
    synthesized, time_limit : optional
        Also synthesize each cell's schedule, within ``time_limit`` seconds of solver work: a cell
        ends at its work, never at a worker's clock (``reproducible``), so the figures are the
        same on any executor.
    executor : str, optional
        ``local[:WORKERS]``, ``dask``, ``dask:ADDRESS`` or ``dask:SCHEDULER.json`` (default: the
        cells one after another in this process).
    checkpoint : str, optional
        A directory keeping each finished cell; the same call goes on from there.

    Returns
    -------
    list of CellResult
        Per cell: ``.network``, ``.collective``, ``.ranks``, ``.router``, ``.sizes``, ``.labels``
        (the candidates), ``.times`` (sizes x candidates, seconds), ``.bounds`` (per size),
        ``.best`` (per size the index of the fastest) and ``.skipped``.

    Examples
    --------
    >>> cells = sweep(["torus:2,4", "kautz:2,2"], ["allgather"], sizes="1KiB,1MiB")
    >>> [(c.network, c.ranks, [c.labels[b] for b in c.best]) for c in cells]
    [('torus:2,4', 8, ['multitree', 'multitree']), ('kautz:2,2', 6, ['kautz-c', 'kautz-c'])]
    >>> all((c.times >= c.bounds[:, None] * (1 - 1e-12)).all() for c in cells)
    True
    """
    from synth.app.sweep import read_spec, sweep as run_sweep
    from synth.execute import LocalExecutor, parse_executor
    from synth.io.checkpoint import Checkpoint

    spec = read_spec({"networks": list(networks), "collectives": list(collectives),
                      **({"bytes": sizes} if sizes is not None else {}), **({"router": router} if router else {}),
                      "alpha": alpha, "bandwidth": bandwidth / 1e9, "ranks_per_node": ranks_per_node,
                      "synthesize": synthesized, **({"time_limit": time_limit} if synthesized else {})}, "sweep()")
    runner = LocalExecutor(1) if executor is None else parse_executor(executor)
    with runner:
        kept = Checkpoint(checkpoint, spec.inputs()) if checkpoint is not None else None
        if kept is not None:
            runner.start()  # workers up (or the cluster reached) before the directory is made
            kept.create()
        return run_sweep(spec, runner, kept)
