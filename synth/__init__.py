"""synth: routing and schedule synthesis for HPC interconnects, each result next to a lower bound.

The public API is synth.api, re-exported here (docs/api.md; every name has a runnable example):

- networks and workloads: ``network``, ``workload`` (a network's ``.to_networkx()``);
- routes: ``route`` (a ``Routing`` of ``PhaseRouting``), ``bounds`` (``PhaseBounds``), ``check``;
- collective schedules: ``schedule``, ``verify``, ``price``, ``simulate`` (SimGrid), ``compare``
  (every algorithm over sizes, ``.best`` naming the best per size), ``synthesize`` (schedules made
  by optimization, per size band) and ``sweep`` (compare over many networks, on the local pool or Dask);
- files: ``write_routes``, ``write_schedule``, ``switch_tables`` (OpenSM's LFTs, JSON, CSV),
  ``virtual_lanes`` (deadlock-free lanes, as ``synth vls``) and ``export`` (MSCCL's XML).

These names are the API's: the packages behind them are synth.routing, synth.collectives,
synth.checking and synth.tables. Importing synth imports nothing heavy and changes nothing in the
process: the API's modules load on first use (PEP 562), so that ``python -m synth`` installs its
signal handlers before the long imports (synth/__main__.py).

>>> import synth
>>> synth.route("torus:4,4", "shift:1").optimal
True
"""

__version__ = "0.1.0"

__all__ = [
    "network",
    "workload",
    "route",
    "bounds",
    "check",
    "schedule",
    "verify",
    "price",
    "compare",
    "simulate",
    "synthesize",
    "sweep",
    "write_routes",
    "write_schedule",
    "switch_tables",
    "virtual_lanes",
    "export",
    "Routing",
    "PhaseRouting",
    "PhaseBounds",
]


def __getattr__(name: str):
    if name in __all__:
        from synth import api

        return getattr(api, name)
    raise AttributeError(f"module 'synth' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*__all__, "__version__"])
