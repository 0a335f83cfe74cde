"""The API's networks and workloads (synth.api)."""

from __future__ import annotations

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
