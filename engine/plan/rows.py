"""The rows operators pass between each other, with their provenance.

A row is a mapping of attribute names to values plus ``ids``: the ids of the store
events it derives from, so every answer can show its evidence. Datetimes in rows
are timezone-aware in the event's local offset: comparisons are by instant, while
``hour``/``weekday``/``date`` read local time. This module holds data only.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime, time
from typing import Any


class Row:
    """One row. ``raw`` keeps the stored event's own attributes for EXTRACT, and
    ``titles`` a merged row's events' titles, one for each text its text joins, in
    that order (None for a row of one event); plan expressions see only ``values``."""

    __slots__ = ("values", "ids", "raw", "titles")

    def __init__(self, values: Mapping[str, Any], ids: Iterable[str], raw: Mapping[str, Any] | None = None,
                 titles: tuple[str | None, ...] | None = None):
        self.values = dict(values)
        self.ids = frozenset(ids)
        self.raw = dict(raw) if raw else {}
        self.titles = titles

    @classmethod
    def owning(cls, values: dict[str, Any], ids: frozenset[str], raw: dict[str, Any]) -> "Row":
        """A row that takes ``values`` and ``raw`` as they are, without copying: for
        dicts its caller has just made and gives up (RETRIEVE makes hundreds of
        thousands of rows, and copying their dicts was a fifth of its time)."""
        row = cls.__new__(cls)
        row.values, row.ids, row.raw, row.titles = values, ids, raw, None
        return row

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)

    def has(self, name: str) -> bool:
        return name in self.values

    def with_values(self, **values: Any) -> "Row":
        merged = dict(self.values)
        merged.update(values)
        return Row(merged, self.ids, self.raw, self.titles)

    def __repr__(self) -> str:
        shown = {k: v for k, v in self.values.items() if k not in ("text", "group")}
        return f"Row({shown}, ids={sorted(self.ids)})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Row) and self.values == other.values and self.ids == other.ids

    __hash__ = None  # type: ignore[assignment]  # mutable values: not hashable


def spans_whole_days(row: Row) -> bool:
    """The row's span runs from a local midnight to a later one: a diary's day note,
    an all-day calendar entry. It says on which days something happened, not when."""
    s, e = row.get("start"), row.get("end")
    return (isinstance(s, datetime) and isinstance(e, datetime) and e > s
            and s.time() == time(0) and e.time() == time(0))


# "order 598-0263096-3457224", "order #UN00837737": a shop's number for one order
ORDER_NUMBER = re.compile(r"\border\s+(?:no\.?\s*|number\s+|#\s*)?([A-Z0-9]*\d[A-Z0-9-]{5,})", re.IGNORECASE)


def order_numbers(row: Row) -> set[str]:
    """The order numbers a row's title and text give ("... on Amazon.de (order
    519-1029817-5120823)"), upper-cased."""
    return {m.group(1).upper() for m in ORDER_NUMBER.finditer(f"{row.get('title') or ''} {row.get('text') or ''}")}
