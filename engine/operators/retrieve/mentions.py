"""A day's note that states what a kept happening measured records that happening:
"Did 8.5 km in Textor Park with Tyler." on the day of an 8.5 km Strava run is that
run, though it never says "run". The search and the reranker judge a note by what it
says of the query (neither kept that note for "running", nor "Ran 8.7 km in Knappe
Park this morning.": reranker 0.21, embedder 0.42), so where the run was, who came,
how it felt was never read. A measure (a number with its unit) is what the note and
the workout share, whatever language the note is in.

The note joins the happening's row (:func:`engine.operators.retrieve.merging.merge_into`):
it adds the note's words and id, never a row, so counts stay counts of happenings. Only
a day with one kept timed happening is read (with two runs that day, a note's "5 km"
could be either), only notes of another source, and only a measure precise enough to
tell (two significant digits or more, and the same unit: 8.71 km is "8.7 km", 5 km is
no one's in particular).

Reads the store; decides which notes join which rows.
"""
from __future__ import annotations

import re
from datetime import date, datetime
from decimal import Decimal, InvalidOperation

from engine.locale_en import MEASURE_UNITS
from engine.operators.context import OperatorContext
from engine.operators.retrieve.events import fetch_events
from engine.plan.rows import Row, spans_whole_days

_UNIT_OF = {u.lower(): group for group, units in MEASURE_UNITS.items() for u in units}
_MEASURE = re.compile(
    rf"(?<![\w.,])(\d+(?:[.,]\d+)?)\s*({'|'.join(sorted(map(re.escape, _UNIT_OF), key=len, reverse=True))})(?!\w)",
    re.IGNORECASE)
#: the fewest significant digits a measure needs to say which happening it is
_MIN_DIGITS = 2
#: the most rows whose days are read (a search that keeps more is about a kind, not a happening)
MAX_ROWS = 5000

Measure = tuple[str, Decimal]  # (unit group, value)


def measures(text: str) -> set[Measure]:
    """The measures ``text`` states: ("distance_km", 8.71) for "8.71 km"."""
    out: set[Measure] = set()
    for number, unit in _MEASURE.findall(text or ""):
        try:
            out.add((_UNIT_OF[unit.lower()], Decimal(number.replace(",", "."))))
        except InvalidOperation:
            continue
    return out


def states(note: set[Measure], happening: set[Measure]) -> bool:
    """Whether a measure of ``note`` is one of ``happening``'s as the note rounds it
    (8.71 km is "8.7 km"), with enough digits to tell."""
    for unit, said in note:
        digits = said.normalize().as_tuple()
        if len(digits.digits) < _MIN_DIGITS:
            continue
        places = Decimal(1).scaleb(min(0, digits.exponent))
        if any(u == unit and v.quantize(places) == said for u, v in happening):
            return True
    return False


def notes_stating(ctx: OperatorContext, rows: list[Row]) -> dict[int, list[Row]]:
    """For each row (by index) that is its day's one timed happening among ``rows``,
    the whole-day notes of that day from other sources, not among ``rows``, that state
    one of its measures."""
    if not rows or len(rows) > MAX_ROWS:
        return {}
    timed: dict[date, list[int]] = {}
    for n, r in enumerate(rows):
        if isinstance(r.get("start"), datetime) and not spans_whole_days(r):
            timed.setdefault(r.get("start").date(), []).append(n)
    wanted = {d: ns[0] for d, ns in timed.items() if len(ns) == 1}
    said = {d: m for d, n in wanted.items() if (m := measures(f"{rows[n].get('title') or ''} {rows[n].get('text') or ''}"))}
    if not said:
        return {}
    kept = frozenset().union(*(r.ids for r in rows))
    out: dict[int, list[Row]] = {}
    for note in _day_notes(ctx, sorted(said)):
        day = note.start.date()
        n = wanted.get(day)
        if n is None or note.id in kept or note.source in (rows[n].get("sources") or [rows[n].get("source")]):
            continue
        row = note.row()
        if spans_whole_days(row) and states(measures(note.text or ""), said[day]):
            out.setdefault(n, []).append(row)
    if out:
        ctx.note(f"{sum(map(len, out.values()))} notes of the day joined the happening whose measure they "
                 "state (a distance, a duration)")
    return out


def _day_notes(ctx: OperatorContext, days: list[date]):
    """The events that start at a local midnight on one of ``days`` and end at a later
    one: a diary's notes, all-day entries."""
    if not days:
        return []
    local_start = "start + to_minutes(coalesce(tz_offset_min, 0)::BIGINT)"
    ids = [r[0] for r in ctx.store.reader().execute(
        f'SELECT id FROM events WHERE "end" IS NOT NULL AND "end" > start AND CAST({local_start} AS TIME) = TIME '
        f"'00:00' AND list_contains(?, CAST({local_start} AS DATE))", [days]).fetchall()]
    return fetch_events(ctx, ids)
