"""Named registries: network families, routers, traffic patterns, algorithms.

Adding one of these is one module plus one `register` call; the CLI help and every "unknown
... (known: ...)" message list what the registry holds, so they never go stale.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Generic, Iterator, TypeVar

from synth.core.errors import SynthError
from synth.core.validate import show

Entry = TypeVar("Entry")


class Registry(Generic[Entry]):
    def __init__(self, what: str):
        self.what = what  # "network family", "router", ...: used in messages
        self._entries: dict[str, Entry] = {}

    def register(self, name: str, entry: Entry) -> Entry:
        if name in self._entries:
            raise ValueError(f"{self.what} '{name}' registered twice")
        self._entries[name] = entry
        return entry

    def get(self, name: str, context: str = "") -> Entry:
        try:
            return self._entries[name]
        except KeyError:
            where = f" in {context}" if context else ""
            raise SynthError(f"unknown {self.what} {show(name)}{where} (known: {self.known()})") from None

    def known(self) -> str:
        return ", ".join(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __getitem__(self, name: str) -> Entry:
        return self._entries[name]

    def items(self):
        return self._entries.items()

    def values(self):
        return self._entries.values()


def plugins(package: str) -> list:
    """Every module of `package` imported, in name order (those whose names start with `_` left out):
    a registry finds its plug-ins this way and names none of them, so a plug-in is one new module."""
    infos = sorted(pkgutil.iter_modules(importlib.import_module(package).__path__), key=lambda m: m.name)
    return [importlib.import_module(f"{package}.{info.name}") for info in infos if not info.name.startswith("_")]


def discover(package: str, attribute: str) -> list:
    """The entries every module of `package` declares as `attribute` (one entry or a tuple of them),
    module by module in name order (synth.synthesis.methods' METHOD)."""
    found = []
    for module in plugins(package):
        entries = getattr(module, attribute, ())
        found += list(entries) if isinstance(entries, (tuple, list)) else [entries]
    return found
