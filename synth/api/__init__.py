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

from synth import __all__  # noqa: F401 - the public names, listed once (synth/__init__.py)
from synth.api.collectives import compare, price, schedule, simulate, sweep, synthesize, verify  # noqa: F401
from synth.api.networks import network, workload  # noqa: F401
from synth.api.outputs import export, switch_tables, virtual_lanes, write_routes, write_schedule  # noqa: F401
from synth.api.routes import PhaseBounds, PhaseRouting, Routing, bounds, check, route  # noqa: F401
