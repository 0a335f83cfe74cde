"""What synth's modules declare, read from their source without importing them: the command line's
help (`synth --help`, `synth COMMAND --help`) and its parse errors name registries and limits but
must not pay for numpy, SciPy or a solver (issue 41: start-up under 0.3 s of CPU).

A registry (synth.core.registry) imports every module of its package on first use; `declared`
reads the same modules' declarations (`FAMILY = Family("torus", SYNTAX, "...")`, a tuple of them)
with `ast`, in the same order, evaluating only literals: strings, numbers, tuples and lists of them,
arithmetic and f-strings of them, `*` in a tuple, and module-level names bound to such values, in the module itself or
imported from another module of synth (`from synth.routing.registry import DIRECT`). `constant`
reads one module-level value the same way. A value that is not a literal (an f-string, a call) is
left out of the declaration's fields, and asking for it is a ValueError: what the help lists is then
computed by importing. tests/unit/cli/test_startup.py compares every listing with the real registry.
"""

from __future__ import annotations

import ast
import operator
import re
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]  # the synth package


class NotStatic(ValueError):
    """The value is not a literal the reader evaluates."""


def _path(module: str) -> Path:
    """The source file of a module of synth (a package: its __init__.py)."""
    parts = module.split(".")
    if parts[0] != "synth":
        raise NotStatic(f"{module} is not a module of synth")
    base = ROOT.joinpath(*parts[1:])
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


# A top-level statement starts at column 0 with a name or a decorator; one this reader reads is an
# assignment, an import from a module or a decorator (a def's or class's body is skipped unparsed).
_STATEMENT = re.compile(r"^[A-Za-z_@]", re.MULTILINE)
_READ = re.compile(r"(from\s|[A-Za-z_][\w, ]*(:[^=\n]*)?=[^=]|@)")


@lru_cache(maxsize=None)
def _tree(module: str) -> ast.Module:
    """The module's top-level assignments, imports and decorators, parsed one statement at a time: a
    listing reads a few statements of large modules (parsing all of synth/routing takes 50 ms); a
    statement that does not parse on its own (column-0 text inside a string) makes it parse all."""
    path = _path(module)
    source = path.read_text(encoding="utf-8")
    start = 0
    docstring = re.match(r'\s*[rRbB]?("""|\'\'\')', source)
    if docstring is not None:  # the module's docstring, whose lines may start at column 0
        end = source.find(docstring.group(1), docstring.end())
        start = end + 3 if end >= 0 else 0
    starts = [m.start() for m in _STATEMENT.finditer(source, start)] + [len(source)]
    body = []
    try:
        for begin, end in zip(starts, starts[1:]):
            if not _READ.match(source, begin):
                continue
            text = source[begin:end]
            if text.startswith("@"):
                text += "def _():\n    pass\n"
            body += ast.parse(text).body
    except SyntaxError:
        return ast.parse(source, str(path))
    return ast.Module(body=body, type_ignores=[])


def _package_of(module: str) -> str:
    return module if _path(module).name == "__init__.py" else module.rpartition(".")[0]


def _bindings(module: str) -> dict[str, ast.AST | tuple[str, str]]:
    """Module-level names: an expression, or (module, name) for an import from synth."""
    found: dict[str, ast.AST | tuple[str, str]] = {}
    for node in _tree(module).body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node.value
                elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) \
                        and len(target.elts) == len(node.value.elts):
                    for name, value in zip(target.elts, node.value.elts):
                        if isinstance(name, ast.Name):
                            found[name.id] = value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            found[node.target.id] = node.value
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:  # relative: from . import x, from .a import x
                base = _package_of(module).split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            if source.split(".")[0] == "synth":
                for alias in node.names:
                    found[alias.asname or alias.name] = (source, alias.name)
    return found


_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
              ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow, ast.LShift: operator.lshift}


def _evaluate(node: ast.AST, module: str, depth: int = 0):
    if depth > 20:
        raise NotStatic("too deep")
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)):
        values = []
        for element in node.elts:
            if isinstance(element, ast.Starred):
                values += list(_evaluate(element.value, module, depth + 1))
            else:
                values.append(_evaluate(element, module, depth + 1))
        return tuple(values) if isinstance(node, ast.Tuple) else values
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.left, module, depth + 1), _evaluate(node.right, module, depth + 1))
    if isinstance(node, ast.JoinedStr):  # an f-string of literals
        return "".join(str(_evaluate(value, module, depth + 1)) for value in node.values)
    if isinstance(node, ast.FormattedValue):
        value = _evaluate(node.value, module, depth + 1)
        value = {-1: value, ord("r"): repr(value), ord("s"): str(value), ord("a"): ascii(value)}[node.conversion]
        return format(value, _evaluate(node.format_spec, module, depth + 1) if node.format_spec is not None else "")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand, module, depth + 1)
    if isinstance(node, ast.Name):
        return _value(module, node.id, depth + 1)
    raise NotStatic(f"{module}: {ast.dump(node)[:60]} is not a literal")


def _value(module: str, name: str, depth: int = 0):
    binding = _bindings(module).get(name)
    if binding is None:
        raise NotStatic(f"{module} declares no {name}")
    if isinstance(binding, tuple):  # imported from another module of synth
        return _value(*binding, depth + 1)
    return _evaluate(binding, module, depth)


def constant(module: str, name: str):
    """The module-level literal `name` of `module` (a module of synth), without importing it."""
    return _value(module, name)


def _fields(call: ast.Call, module: str, fields: tuple[str, ...]) -> SimpleNamespace:
    values = {}
    arguments = list(zip(fields, call.args)) + [(k.arg, k.value) for k in call.keywords if k.arg is not None]
    for field, node in arguments:
        try:
            values[field] = _evaluate(node, module)
        except NotStatic:
            pass  # not a literal: left out
    return SimpleNamespace(**values)


def calls(module: str, name: str, kind: str, fields: tuple[str, ...]) -> list[SimpleNamespace]:
    """The `kind(...)` calls in the value bound to `name` in `module`, in source order, each as its
    literal arguments: positional ones named by `fields`, keywords by their own names."""
    binding = _bindings(module).get(name)
    if binding is None or isinstance(binding, tuple):
        return []
    found = [node for node in ast.walk(binding) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
             and node.func.id == kind]
    found.sort(key=lambda node: (node.lineno, node.col_offset))
    return [_fields(node, module, fields) for node in found]


def declared(package: str, attribute: str, kind: str, fields: tuple[str, ...]) -> list[SimpleNamespace]:
    """What every module of `package` declares as `attribute` (`kind(...)` calls), module by module
    in name order as Registry.discover finds them (modules whose names start with `_` left out)."""
    directory = _path(package).parent
    names = sorted(p.stem for p in directory.glob("*.py") if p.stem != "__init__")
    names += [p.name for p in directory.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    found = []
    for name in sorted(set(names)):
        if not name.startswith("_"):
            found += calls(f"{package}.{name}", attribute, kind, fields)
    return found


def decorated(module: str, decorator: str, fields: tuple[str, ...]) -> list[SimpleNamespace]:
    """The arguments of every `@decorator(...)` on the module's top-level functions, in source order
    (registries filled by a decorator, as the traffic patterns are)."""
    found = []
    for node in _tree(module).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            for call in node.decorator_list:
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == decorator:
                    found.append(_fields(call, module, fields))
    return found
