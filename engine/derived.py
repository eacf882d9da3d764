"""Data derived from the events, and how each kind is checked and rebuilt.

The events in the store are the only thing Hindsight cannot make again; everything
computed from them (the search index today; chat trees and insights as they come)
registers here a :class:`DerivedData`: a cheap read-only ``check`` that says what is
wrong with it, and a ``rebuild`` that makes it again from the events.
``hindsight doctor`` runs every check; ``hindsight doctor --repair`` rebuilds what a
check found damaged. A rebuild never writes to the events.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb


@dataclass(frozen=True, slots=True)
class DerivedData:
    name: str  # a stable identifier, e.g. "search_index"
    title: str  # in the user's words, e.g. "the search index"
    #: the data folder -> None when whole (or not built yet), else what is wrong, naming the file
    check: Callable[[Path], str | None]
    #: (the open store, the data folder) -> a one-line summary of what was rebuilt
    rebuild: Callable[[object, Path], str]


class DerivedDataError(ValueError):
    pass


_REGISTRY: dict[str, DerivedData] = {}


def register(kind: DerivedData) -> None:
    """Add a kind of derived data; an empty or taken name is refused. Registering the
    very same record again (a module imported twice) is a no-op."""
    if not kind.name.strip():
        raise DerivedDataError(f"derived data with an empty name: {kind!r}")
    known = _REGISTRY.get(kind.name)
    if known is not None and known != kind:
        raise DerivedDataError(f"two kinds of derived data are named {kind.name!r}")
    _REGISTRY[kind.name] = kind


def registered() -> list[DerivedData]:
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


def check_duckdb_file(path: Path, tables: tuple[str, ...]) -> str | None:
    """Whether the DuckDB file at ``path`` opens and every row of ``tables`` can be
    read (DuckDB checks each block's checksum as it reads it). None when it is whole
    or absent."""
    if not path.exists():
        return None
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        return f"{path} cannot be opened: {_first_line(exc)}"
    try:
        for table in tables:
            columns = [r[0] for r in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]).fetchall()]
            if not columns:
                return f"{path} has no table {table}"
            # touch every column of every row, so every block is read and its checksum checked
            touched = " + ".join(f'coalesce(length(CAST("{c}" AS VARCHAR)), 0)' for c in columns)
            con.execute(f'SELECT count(*), sum({touched}) FROM "{table}"').fetchone()
    except duckdb.Error as exc:
        return f"{path} is damaged: {_first_line(exc)}"
    finally:
        con.close()
    return None


def remove_duckdb_file(path: Path) -> None:
    """Delete a DuckDB file and its write-ahead log."""
    for p in (path, path.with_name(path.name + ".wal")):
        p.unlink(missing_ok=True)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
