"""The events RETRIEVE judges, as it reads them from the store: the :class:`Event`
record, its local times, and the few queries RETRIEVE asks of the events table
(its groups, a pattern's events, a sample, the events a filter's window keeps).

Reads the store; never writes it, and decides nothing.
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta, timezone

import orjson

from engine.operators.context import OperatorContext
from engine.plan import expr as X
from engine.plan.rows import Row
from engine.retrieval.index import read_events
from engine.retrieval.passages import passages
from engine.retrieval.patterns import Pattern, pattern_sql
from engine.retrieval.verbalise import key_values, pattern_items

_EVENT_SQL = 'SELECT id, source, kind, title, text, start, "end", tz_offset_min, attributes FROM events'
#: ids asked of the store at once
_ID_BATCH = 5000

Group = tuple[str, str]  # (source, kind)


def local(dt: datetime | None, offset_min: int | None) -> datetime | None:
    """A stored naive-UTC time as an aware datetime in the event's local offset."""
    if dt is None:
        return None
    tz = _OFFSETS.get(offset_min)
    if tz is None:  # one timezone object per offset (making one per event was half the cost)
        tz = _OFFSETS[offset_min] = timezone(timedelta(minutes=offset_min or 0))
    return dt.replace(tzinfo=timezone.utc).astimezone(tz)


_OFFSETS: dict[int | None, timezone] = {}


class Event:
    """One event of the store, with what the classifiers read of it."""
    __slots__ = ("id", "source", "kind", "title", "text", "start", "end", "attributes", "_pairs", "_items")

    def __init__(self, r: tuple):
        self.id, self.source, self.kind, self.title, self.text = r[0], r[1], r[2], r[3], r[4]
        self.start = local(r[5], r[7])
        self.end = local(r[6], r[7])
        self.attributes = orjson.loads(r[8]) if r[8] else {}
        self._pairs = self._items = None

    @property
    def pairs(self) -> list:
        if self._pairs is None:  # most kept events never need their pairs: computed on use
            self._pairs = key_values(self.source, self.kind, self.title, self.text, self.attributes)
        return self._pairs

    @property
    def items(self) -> set:
        if self._items is None:
            self._items = pattern_items(self.pairs)
        return self._items

    @property
    def said(self) -> str:
        """Its title and text, as a check of their words reads them."""
        return f"{self.title or ''} {self.text or ''}"

    def passages(self) -> list[str]:
        """What the event classifier reads (:func:`engine.retrieval.passages.passages`)."""
        return passages(self.pairs, self.source, self.kind, self.title, self.text)

    def row(self) -> Row:
        """The event as a row; the row shares the event's attributes (neither changes them)."""
        return Row.owning({"source": self.source, "kind": self.kind, "title": self.title or "",
                           "text": self.text or "", "start": self.start, "end": self.end},
                          frozenset((self.id,)), self.attributes)


def fetch_events(ctx: OperatorContext, ids: Iterable[str]) -> list[Event]:
    ids = list(ids)
    out: list[Event] = []
    for i in range(0, len(ids), _ID_BATCH):
        ctx.check_cancel()
        seen: set[str] = set()
        for r in read_events(ctx.store, ids[i:i + _ID_BATCH], _EVENT_SQL):
            if r[0] not in seen:  # one row per id
                seen.add(r[0])
                out.append(Event(r))
    return out


def group_sizes(ctx: OperatorContext) -> list[tuple[str, str, int]]:
    """(source, kind, number of events) of every group in the store, the biggest first."""
    return [(r[0], r[1], r[2]) for r in ctx.store.reader().execute(
        "SELECT source, kind, count(*) FROM events GROUP BY source, kind ORDER BY 3 DESC, 1, 2").fetchall()]


def ids_where(ctx: OperatorContext, p: Pattern, span: tuple | None = None) -> list[str]:
    """The ids of the events ``p`` matches; with a ``span``, of those whose start
    lies in it (as :func:`ids_starting_within`)."""
    where, params = pattern_sql(p)
    within, more = _span_sql(span) if span is not None else ("", [])
    return [r[0] for r in ctx.store.reader().execute(
        f"SELECT id FROM events WHERE {where}" + (f" AND {within}" if within else ""), params + more).fetchall()]


def ids_in_window(ctx: OperatorContext, source: str, kind: str) -> list[str] | None:
    """The ids of the group's events that pass the FILTER over this RETRIEVE, when
    that condition reads nothing but the events' times ("in October 2005"); else None."""
    fn = ctx.wanted
    if fn is None or not X.attributes_read(fn.body, fn.params[0]) <= {"start", "end"}:
        return None
    rows = ctx.store.reader().execute(
        'SELECT id, start, "end", tz_offset_min FROM events WHERE source = ? AND kind = ?', [source, kind]).fetchall()
    return [i for i, start, end, tz in rows
            if ctx.is_wanted(Row({"start": local(start, tz), "end": local(end, tz)}, (i,)))]


def ids_starting_within(ctx: OperatorContext, ids: list[str], span: tuple) -> list[str]:
    """Those of ``ids`` whose stored (UTC) start lies in ``span`` ([low, high), either
    end None for open; and in its month of the year, local time, where it names one:
    :data:`engine.plan.timerange.Span`), in the order given."""
    where, params = _span_sql(span)
    inside = {r[0] for r in read_events(ctx.store, ids, "SELECT id FROM events", where, params)}
    return [i for i in ids if i in inside]


def _span_sql(span: tuple) -> tuple[str, list]:
    low, high, month = span
    conditions = (("start >= ?", low), ("start < ?", high),
                  ("month(start + to_minutes(coalesce(tz_offset_min, 0)::BIGINT)) = ?", month))
    return (" AND ".join(w for w, v in conditions if v is not None), [v for _, v in conditions if v is not None])


def sample_ids(ctx: OperatorContext, source: str, kind: str, n: int) -> list[str]:
    """A deterministic sample of a group's event ids (by hash, so not the oldest)."""
    return [r[0] for r in ctx.store.reader().execute(
        "SELECT id FROM events WHERE source = ? AND kind = ? ORDER BY hash(id), id LIMIT ?",
        [source, kind, n]).fetchall()]
