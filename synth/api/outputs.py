"""The API's files: routes and schedule files, switch tables, virtual lanes and exports (synth.api).

Each writes what the command of the same job writes (``synth route --out``, ``synth schedule --out``,
``synth tables``, ``synth vls``, ``synth export``) through the same use cases (synth.app) and
writers (synth.io), all or nothing: a failure leaves no file behind.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager


@contextmanager
def _routes_path(routes):
    """The path of a routes file: `routes` itself, or a Routing written to a temporary JSON file (so
    that it is read and re-verified exactly as a file on disk is)."""
    if isinstance(routes, (str, os.PathLike)):
        yield str(routes)
        return
    with tempfile.TemporaryDirectory(prefix="synth-routes-") as directory:
        yield routes.write(os.path.join(directory, "routes.json"))


def write_routes(routing, path, *, vls: int | None = None) -> str:
    """Write a :class:`Routing` as the routes file ``synth route --out PATH`` writes.

    Parameters
    ----------
    routing : Routing
        From :func:`route`.
    path : str
        The file: JSON (``synth-routes/2``), or the compact HDF5 form for a name ending in ``.h5`` or
        ``.hdf5`` (``synth check``, ``synth tables`` and :func:`check` read both).
    vls : int, optional
        Also give every path a virtual lane, at most ``vls`` lanes, so that no lane can deadlock (as
        ``synth route --vls``); recorded in the file.

    Returns
    -------
    str
        The path written.

    Examples
    --------
    >>> import os, tempfile
    >>> routing = route("xgft:2:4,4:1,4", "a2a-lin", router="dmodk", phases="1-3")
    >>> path = write_routes(routing, os.path.join(tempfile.mkdtemp(), "r.json"))
    >>> check(path).ok, check(path).phases
    (True, 3)
    """
    return routing.write(path, vls=vls)


def write_schedule(schedule_, path) -> str:
    """Write a schedule as the file ``synth schedule --out PATH`` (or ``synth synthesize --out``) writes.

    Parameters
    ----------
    schedule_ : Schedule
        From :func:`schedule`, or a band's ``.schedule`` from :func:`synthesize`.
    path : str
        The file: JSON (``synth-schedule/1``, ``/2`` with recorded paths), or the compact HDF5 form
        for a name ending in ``.h5`` or ``.hdf5`` (``synth verify`` and :func:`verify` read both).

    Returns
    -------
    str
        The path written.

    Examples
    --------
    >>> import os, tempfile
    >>> s = schedule("allgather", "torus:4,4", "ring", message_bytes=4096)
    >>> path = write_schedule(s, os.path.join(tempfile.mkdtemp(), "s.h5"))
    >>> verify(path).ok, verify(path).steps
    (True, 15)
    """
    from synth.core.output import OutputSet
    from synth.io.schedule_file import write_schedule_output

    path = str(path)
    with OutputSet() as outputs:
        write_schedule_output(outputs.reserve(path), schedule_)
    return path


def switch_tables(routes, out=None, *, format: str = "opensm", lmc: int | None = None, allow_deadlock: bool = False):
    """The switch forwarding tables of routes, as ``synth tables ROUTES --out DIR`` makes them.

    The routes are re-verified first (as :func:`check`): tables only for routes that pass.

    Parameters
    ----------
    routes : Routing or str
        A :class:`Routing` or a routes file.
    out : str, optional
        A directory to write the files into (all or nothing); without it nothing is written.
    format : str, optional
        ``opensm`` (default): ``fabric.net``, ``guid2lid``, ``lfts.dump`` for OpenSM's file engine,
        ``dlid.csv``, the routes, and for routes with lanes the QoS policy; ``json`` or ``csv``: the
        per-switch tables (docs/formats.md).
    lmc : int, optional
        LIDs per terminal = 2^lmc, 0..7 (default: the fewest that hold the routes).
    allow_deadlock : bool, optional
        Make tables of routes whose channel dependencies have a cycle and no virtual lanes (they can
        deadlock the fabric; refused by default, as ``synth tables`` refuses them without ``--allow-deadlock``).

    Returns
    -------
    RenderedTables
        ``.texts`` (file name -> content), ``.tables`` (``.lids`` the LID plan with ``.lmc`` and
        ``.max_lid``; ``.out_port[switch, lid]``; ``.dlid`` per flow), ``.lanes_used``, ``.least_lmc``.

    Examples
    --------
    >>> rendered = switch_tables(route("xgft:2:4,4:1,4", "a2a-lin", router="dmodk"))
    >>> sorted(rendered.texts), rendered.tables.lids.lmc
    (['dlid.csv', 'fabric.net', 'guid2lid', 'lfts.dump', 'routes.json'], 0)
    """
    from synth.app.tables import make_tables

    with _routes_path(routes) as path:
        return make_tables(path, None if out is None else str(out), format, lmc, allow_deadlock)[0]


def virtual_lanes(routes, out=None, *, max_vls: int = 8, exact: bool = False, time_limit: float = 60.0):
    """Virtual lanes for routes so that no lane's channel dependencies have a cycle (the routes cannot
    deadlock), as ``synth vls ROUTES --out FILE`` assigns them.

    Parameters
    ----------
    routes : Routing or str
        A :class:`Routing` or a routes file (``synth-routes/2``), re-verified first.
    out : str, optional
        Write the routes file again with a lane per path (a ``vls`` list per phase).
    max_vls : int, optional
        The lanes the fabric has (default 8); needing more is a SynthError saying how many.
    exact : bool, optional
        Prove the least number with CP-SAT (at most 50,000 paths).
    time_limit : float, optional
        CP-SAT's deterministic time per lane count tried with ``exact``.

    Returns
    -------
    Lanes
        ``.lanes`` (a lane per path, in file order), ``.count``, ``.per_phase()`` (phase -> its
        paths' lanes), ``.line()`` (what ``synth vls`` prints).

    Examples
    --------
    >>> lanes = virtual_lanes(route("dragonfly:2,4,2", "a2a-lin", router="valiant", phases="0-7"))
    >>> lanes.count, len(lanes.lanes), len(lanes.per_phase()[0])
    (3, 576, 72)
    """
    from synth.app.vls import assign_lanes, write_laned_routes
    from synth.core.output import OutputSet

    with _routes_path(routes) as path:
        lanes = assign_lanes(path, max_vls, exact, time_limit)
        if out is not None:
            with OutputSet() as outputs:
                outputs.protect(path)
                write_laned_routes(outputs.reserve(out), lanes)
    return lanes


def export(schedule_, format: str = "msccl-xml", *, name: str | None = None, protocol: str = "Simple",
           out=None, min_bytes: int = 0, max_bytes: int = 0, max_steps: int = 64) -> str:
    """A verified schedule in a collective library's format, as ``synth export`` writes it.

    Parameters
    ----------
    schedule_ : Schedule or str
        A schedule, or a schedule file (JSON or HDF5); verified first (a wrong one is refused).
    format : str, optional
        One of ``synth.io.EXPORT_FORMATS``: ``msccl-xml`` (MSCCL's XML algorithm, docs/formats.md).
    name : str, optional
        The algorithm's name (default ``synth-ALGORITHM-COLLECTIVE-P``).
    protocol : str, optional
        MSCCL's protocol: ``Simple`` (default), ``LL`` or ``LL128``.
    out : str, optional
        Also write the text to this file (all or nothing).
    min_bytes, max_bytes : int, optional
        The message sizes MSCCL selects the file for (``minBytes``/``maxBytes``, both inclusive; 0 and 0: every
        size; ``synth export --min-bytes/--max-bytes``).
    max_steps : int, optional
        Steps a thread block holds (MSCCL_MAX_NUM_STEPS as MSCCL was built; default 64).

    Returns
    -------
    str
        The exported text.

    Examples
    --------
    >>> xml = export(schedule("allgather", "torus:4", "ring", message_bytes=1024))
    >>> xml.startswith('<algo name="synth-ring-allgather-4"')
    True
    """
    from synth.app.export import check_export, export_text
    from synth.core.output import OutputSet
    from synth.io.schedule_file import read_schedule

    check_export(format, protocol, min_bytes, max_bytes, max_steps)
    options = dict(min_bytes=min_bytes, max_bytes=max_bytes, max_steps=max_steps)
    if isinstance(schedule_, (str, os.PathLike)):
        text = export_text(read_schedule(str(schedule_)), format, name, protocol, str(schedule_), **options)
    else:
        text = export_text(schedule_, format, name, protocol, **options)
    if out is not None:
        with OutputSet() as outputs:
            outputs.protect(schedule_ if isinstance(schedule_, (str, os.PathLike)) else None)
            outputs.reserve(out).write(text)
    return text
