"""synth: contention-optimal routing and schedule synthesis for interconnection networks.

The public API is synth.api, re-exported here: ``synth.network``, ``synth.workload``,
``synth.route``, ``synth.bounds``, ``synth.check``, ``synth.schedule``, ``synth.verify``,
``synth.price``, ``synth.compare`` and their result types. (These names are the API's: the
packages behind them are synth.routing, synth.collectives and synth.checking.) Importing synth imports nothing heavy
and changes nothing in the process: the API's modules load on first use (PEP 562), so that
``python -m synth`` installs its signal handlers before the long imports (synth/__main__.py).
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
