"""Layers only point down (issue 23, item 5): the import-linter contracts of pyproject.toml hold.
A new upward import between the packages they cover fails here, with the import chain.

Family-specific choices are Topology capabilities (issue 23, item 2; tests/unit/topology/
test_capabilities.py): no module of synth outside synth/topology/ and the routers that only exist
for XGFTs tests `isinstance(..., Xgft)`, compares a `family` to a string literal, asks whether a
spec starts with "xgft", or compares `routing_kind` outside the router registry, which matches
routers to networks by it (an AST scan of synth/)."""

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO


def test_the_import_contracts_hold():
    command = shutil.which("lint-imports")
    if command is None:
        assert not os.environ.get("CI"), "CI installs the test extra, import-linter with it"
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    done = subprocess.run([command, "--config", str(REPO / "pyproject.toml")], cwd=REPO, capture_output=True, text=True,
                          timeout=240, env={"PYTHONPATH": str(REPO), "PATH": str(Path(sys.executable).parent)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "broken" not in done.stdout.lower().replace("0 broken", ""), done.stdout


def test_every_package_has_a_layer():
    """A new package of synth is in the layers contract, or its imports would not be checked."""
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layered = {name.strip() for contract in config if contract["type"] == "layers" for layer in contract["layers"]
               for name in layer.split("|")}
    packages = {f"synth.{p.name}" for p in (REPO / "synth").iterdir() if (p / "__init__.py").exists()}
    modules = {f"synth.{p.stem}" for p in (REPO / "synth").glob("*.py") if p.stem not in ("__init__", "__main__")}
    assert packages | modules - {"synth.api"} <= layered | {"synth.api"}, sorted((packages | modules) - layered)


SYNTH = REPO / "synth"
# The XGFT's own code: its family package, and routers that exist for XGFTs only.
XGFT_OWN = ("topology/", "routing/layered_xgft.py", "routing/oblivious.py", "routing/monolithic.py",
            "routing/consistent.py", "routing/xgft_layers.py")
ROUTER_REGISTRY = "routing/registry.py"  # routers apply to a Topology.routing_kind of network


def _is_family(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "family" or isinstance(node, ast.Attribute) and node.attr == "family"


def _is_text(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and any(_is_text(e) for e in node.elts)


def family_checks(tree: ast.AST, registry: bool = False) -> list[tuple[int, str]]:
    """(line, what) of every isinstance(..., Xgft), family-to-literal comparison, startswith("xgft")
    and (unless in the router registry) routing_kind comparison."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" \
                and len(node.args) == 2:
            kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            if any(isinstance(k, ast.Name) and k.id == "Xgft" or isinstance(k, ast.Attribute) and k.attr == "Xgft"
                   for k in kinds):
                found.append((node.lineno, "isinstance(..., Xgft)"))
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_family(s) for s in sides) and any(_is_text(s) for s in sides):
                found.append((node.lineno, "family compared to a string"))
            if not registry and any(isinstance(s, (ast.Name, ast.Attribute)) and "routing_kind" in (getattr(s, "id", None),
                                                                                                  getattr(s, "attr", None))
                                    for s in sides):
                found.append((node.lineno, "routing_kind compared"))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "startswith" \
                and node.args and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).startswith("xgft"):
            found.append((node.lineno, 'startswith("xgft")'))
    return found


def test_the_scan_finds_each_kind_of_check():
    source = ("isinstance(t, Xgft)\nisinstance(t, (Dragonfly, topology.Xgft))\nt.family == 'dragonfly'\n"
              "family in ('slimfly', 'mlfm')\n'torus' != net.family\nspec.startswith('xgft:')\n"
              "t.routing_kind == XGFT\nisinstance(t, RouterGrid)\nt.family == other.family\nlabel == 'xgft'\n")
    assert [line for line, _ in family_checks(ast.parse(source))] == [1, 2, 3, 4, 5, 6, 7]
    assert [line for line, _ in family_checks(ast.parse(source), registry=True)] == [1, 2, 3, 4, 5, 6]


def test_no_module_asks_which_family_a_network_is():
    found = {}
    for path in sorted(SYNTH.rglob("*.py")):
        name = path.relative_to(SYNTH).as_posix()
        if not name.startswith(XGFT_OWN):
            found[name] = family_checks(ast.parse(path.read_text(encoding="utf-8"), str(path)), name == ROUTER_REGISTRY)
    found = {name: checks for name, checks in found.items() if checks}
    assert not found, f"family checks where a Topology capability belongs (synth/topology/family.py): {found}"


def test_use_cases_never_print():
    """synth/app/ returns results; the command line and synth.render print them (issue 40)."""
    for path in sorted((REPO / "synth" / "app").glob("*.py")):
        calls = [node for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"]
        assert not calls, f"{path.name}:{calls[0].lineno} prints"


def test_the_synthesis_method_registry_names_none_of_its_methods():
    """A method is one module of synth/synthesis/methods/ found by synth.core.registry.discover: the
    registry's own module imports none of them, and the portfolio none by name (issue 40)."""
    from synth.synthesis.methods import method_names

    methods = REPO / "synth" / "synthesis" / "methods"
    modules = {p.stem for p in methods.glob("*.py") if p.stem != "__init__"}
    for path in (methods / "__init__.py", REPO / "synth" / "synthesis" / "portfolio.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                module = getattr(node, "module", None) or ""
                names = [f"{module}.{a.name}" if module else a.name for a in node.names]
                assert not any(n.startswith("synth.synthesis.methods.") and n.split(".")[3] in modules
                               for n in names), f"{path.name} imports a method: {names}"
    assert len(method_names()) == len(modules)  # every module declares one METHOD


# Every registry of plug-ins: where it is defined, its package and the attribute its plug-ins declare.
PLUGIN_REGISTRIES = [
    ("synth.topology.family", "FAMILIES", "synth.topology", "FAMILY"),
    ("synth.routing.registry", "ROUTERS", "synth.routing", "ROUTER"),
    ("synth.collectives.algorithms", "ALGORITHMS", "synth.collectives.algorithms", "ALGORITHM"),
    ("synth.synthesis.methods", "METHODS", "synth.synthesis.methods", "METHOD"),
    ("synth.solve", "SOLVERS", "synth.solve", "SOLVER"),
    ("synth.io", "EXPORT_FORMATS", "synth.io", "EXPORT_FORMAT"),
]


@pytest.fixture(scope="module")
def import_graph():
    grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter (pip install -e '.[test]')")
    return grimp.build_graph("synth", cache_dir=None)


@pytest.mark.parametrize("home, name, package, attribute", PLUGIN_REGISTRIES)
def test_a_registry_imports_none_of_its_plugins(import_graph, home, name, package, attribute):
    """A plug-in is one module that declares `attribute`; the registry finds it on first use
    (synth.core.registry.Registry) and its module reaches none of them by any chain of imports, so
    adding one is one new file and importing the registry loads none (issue 40)."""
    import importlib
    import pkgutil

    registry = getattr(importlib.import_module(home), name)
    modules = [f"{package}.{m.name}" for m in pkgutil.iter_modules(importlib.import_module(package).__path__)]
    declaring = [m for m in modules if hasattr(importlib.import_module(m), attribute)]
    assert declaring, f"no module of {package} declares {attribute}"
    reached = import_graph.find_upstream_modules(home) | {home}
    assert not reached & set(declaring), f"{home} imports plug-ins of {name}: {sorted(reached & set(declaring))}"
    entries = sum(len(getattr(importlib.import_module(m), attribute)) if isinstance(
        getattr(importlib.import_module(m), attribute), tuple) else 1 for m in declaring)
    assert len(registry) == entries, f"{name} holds {len(registry)} entries, its modules declare {entries}"


def test_registries_list_their_plugins_in_a_fixed_order():
    """The order of help texts and "known:" lists does not depend on which module was imported first
    (the algorithms were listed in import order before issue 40's registry)."""
    import subprocess

    code = ("import sys; sys.argv[1:] and __import__(sys.argv[1]);"
            "from synth.collectives.algorithms import ALGORITHMS; from synth.topology import FAMILIES;"
            "from synth.routing.registry import ROUTERS; print(ALGORITHMS.known(), FAMILIES.known(),"
            "[s.id for s in ROUTERS.specs()])")
    runs = {subprocess.run([sys.executable, "-c", code, *first], capture_output=True, text=True, cwd=REPO,
                           check=True).stdout
            for first in ([], ["synth.collectives.algorithms.swing"], ["synth.topology.xgft"],
                          ["synth.routing.updown"])}
    assert len(runs) == 1, runs
