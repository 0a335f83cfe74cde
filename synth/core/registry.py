"""Named registries: network families, routers, schedule algorithms, synthesis methods, solvers,
export formats, traffic patterns, executors.

A registry of plug-ins names none of them: it is given a package and an attribute, and on first use
imports every module of the package (`discover`) and registers what each declares under that
attribute (one entry or a tuple of them), so adding a family, a router, an algorithm, a method, a
solver or an export format is one new module. Nothing is imported before a registry is read, so a
command that needs none of them pays for none. The CLI help and every "unknown ... (known: ...)"
message list what the registry holds, so they never go stale. (The command line's help reads the
same declarations from the modules' source instead, importing nothing: synth.core.declared.)
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Callable, Generic, Iterator, TypeVar

from synth.core.errors import SynthError
from synth.core.validate import show

Entry = TypeVar("Entry")


class Registry(Generic[Entry]):
    """Entries by name. With `package` and `attribute`, its plug-ins: what the modules of `package`
    declare as `attribute`, found on first use, named by `key` and listed in `order` (a sort key;
    default the modules' name order, then the order each module declares them in)."""

    def __init__(self, what: str, package: str | None = None, attribute: str | None = None,
                 key: Callable[[Entry], str] = lambda entry: entry.name, order: Callable | None = None):
        self.what = what  # "network family", "router", ...: used in messages
        self._entries: dict[str, Entry] = {}
        self._package, self._attribute, self._key, self._order = package, attribute, key, order
        self._discovered = package is None

    def _loaded(self) -> dict[str, Entry]:
        if not self._discovered:
            self._discovered = True  # first: a plug-in that reads the registry as it is imported sees it as it grows
            found = discover(self._package, self._attribute)
            for entry in sorted(found, key=self._order) if self._order is not None else found:
                self.register(self._key(entry), entry)
        return self._entries

    def register(self, name: str, entry: Entry) -> Entry:
        if name in self._entries:
            raise ValueError(f"{self.what} '{name}' registered twice")
        self._entries[name] = entry
        return entry

    def get(self, name: str, context: str = "") -> Entry:
        try:
            return self._loaded()[name]
        except KeyError:
            where = f" in {context}" if context else ""
            raise SynthError(f"unknown {self.what} {show(name)}{where} (known: {self.known()})") from None

    def known(self) -> str:
        return ", ".join(self._loaded())

    def __contains__(self, name: object) -> bool:
        return name in self._loaded()

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())

    def __getitem__(self, name: str) -> Entry:
        return self._loaded()[name]

    def items(self):
        return self._loaded().items()

    def values(self):
        return self._loaded().values()


def plugins(package: str) -> list:
    """Every module of `package` imported, in name order (those whose names start with `_` left out):
    a registry finds its plug-ins this way and names none of them, so a plug-in is one new module."""
    infos = sorted(pkgutil.iter_modules(importlib.import_module(package).__path__), key=lambda m: m.name)
    return [importlib.import_module(f"{package}.{info.name}") for info in infos if not info.name.startswith("_")]


def discover(package: str, attribute: str) -> list:
    """The entries every module of `package` declares as `attribute` (one entry or a tuple of them),
    module by module in name order (a Registry's plug-ins)."""
    found = []
    for module in plugins(package):
        entries = getattr(module, attribute, ())
        found += list(entries) if isinstance(entries, (tuple, list)) else [entries]
    return found
