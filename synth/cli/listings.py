"""The registries' names as the help texts list them, read from the plug-in modules' source
(synth.core.declared), so that `synth COMMAND --help` imports none of them (issue 41: start-up).
tests/unit/cli/test_startup.py compares every listing with the registry it stands for."""

from __future__ import annotations

from synth.core.declared import declared


def router_names(kind: str) -> list[str]:
    """synth.routing.registry.ROUTERS.names(kind): the routers of one kind of network, in their order."""
    specs = declared("synth.routing", "ROUTER", "RouterSpec", ("name", "networks"))
    return [spec.name for spec in sorted(specs, key=lambda spec: getattr(spec, "order", 0)) if spec.networks == kind]


def method_names() -> list[str]:
    """synth.synthesis.methods.method_names(): the synthesis methods, in their order."""
    methods = declared("synth.synthesis.methods", "METHOD", "Method", ("name",))
    return [m.name for m in sorted(methods, key=lambda m: (m.order, m.name))]


def solver_names() -> list[str]:
    """The names of synth.solve.SOLVERS, in their order."""
    return [b.name for b in sorted(declared("synth.solve", "SOLVER", "Backend", ("name",)),
                                   key=lambda b: getattr(b, "order", 0))]
