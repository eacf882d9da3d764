"""The one registry of export formats.

Every module in this package (except the contract and shared parsing code, whose
names start with ``base``/``registry``/``_``) exposes ``IMPORTERS``: a tuple of
:class:`~importers.base.Importer`. They are collected on first use, so adding a
format means adding one module. Empty or duplicate names are refused.
"""
from __future__ import annotations

import fnmatch
import importlib
import logging
import pkgutil
from collections.abc import Iterable

from importers.base import Entry, Importer

log = logging.getLogger(__name__)

_SKIP = {"base", "registry"}


class RegistryError(ValueError):
    pass


class Registry:
    def __init__(self, importers: Iterable[Importer] = ()):
        self._by_name: dict[str, Importer] = {}
        for imp in importers:
            self.add(imp)

    def add(self, importer: Importer) -> None:
        if not importer.name or not importer.name.strip():
            raise RegistryError(f"importer with an empty name: {importer!r}")
        if importer.name in self._by_name:
            raise RegistryError(f"two importers are named {importer.name!r}")
        self._by_name[importer.name] = importer

    def __iter__(self):
        return iter(sorted(self._by_name.values(), key=lambda i: i.name))

    def __len__(self) -> int:
        return len(self._by_name)

    def get(self, name: str) -> Importer:
        try:
            return self._by_name[name]
        except KeyError:
            known = ", ".join(sorted(self._by_name)) or "none"
            raise RegistryError(f"no importer named {name!r}; known importers: {known}") from None

    def best(self, entry: Entry) -> tuple[Importer | None, float]:
        """The most confident importer for ``entry`` (None if nobody claims it)."""
        best, best_conf = None, 0.0
        for imp in self:
            try:
                conf = float(imp.recognize(entry))
            except Exception as exc:  # noqa: BLE001 - a broken recognizer must not stop an import
                log.warning("recognizer %s failed on %s: %s", imp.name, entry.name, exc)
                continue
            if conf > best_conf:
                best, best_conf = imp, conf
        return best, best_conf

    def ignored(self, entry: Entry) -> Importer | None:
        """The importer that lists this file as known-and-ignored, if any."""
        base = entry.basename.lower()
        for imp in self:
            if any(fnmatch.fnmatchcase(base, pat.lower()) for pat in imp.ignores):
                return imp
        return None


def discover() -> Registry:
    """Import every importer module in this package and register its IMPORTERS."""
    import importers as pkg

    reg = Registry()
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name in _SKIP or info.name.startswith("_") or info.name.startswith("base"):
            continue
        module = importlib.import_module(f"importers.{info.name}")
        for imp in getattr(module, "IMPORTERS", ()):
            reg.add(imp)
    return reg


_default: Registry | None = None


def default_registry() -> Registry:
    global _default
    if _default is None:
        _default = discover()
    return _default
