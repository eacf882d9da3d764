"""One row per happening: RETRIEVE's rows from different sources that record the
same happening (spans that mostly coincide, a diary day and the one timed event
of that day, the same order number, a mail that gives a trip's first and last
day, a mail that names the day and time of a happening it is about) become one row, with the union of their key-value pairs, their spans and
their ids.

Rows in, rows out: no model, no store; the month names dates are read by are
:mod:`engine.locale_en`'s.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, timedelta

from engine.locale_en import MONTH, MONTH_NUMBERS, ORDINAL_SUFFIXES
from engine.plan.rows import Row, order_numbers, spans_whole_days

_ORDINAL = f"(?:{'|'.join(ORDINAL_SUFFIXES)})?"
# "07 Jun 2022", "June 7th, 2022", "2022-06-07": a day written with its year
_DAY_WRITTEN = re.compile(rf"\b(\d{{1,2}}){_ORDINAL}\s+({MONTH}),?\s+(\d{{4}})\b"
                          rf"|\b({MONTH})\s+(\d{{1,2}}){_ORDINAL},?\s+(\d{{4}})\b"
                          r"|\b(\d{4})-(\d{2})-(\d{2})\b", re.IGNORECASE)

# "4 November", "November 4th": a day written without its year
_DAY_OF_MONTH = re.compile(rf"\b(\d{{1,2}}){_ORDINAL}\s+({MONTH})\b|\b({MONTH})\s+(\d{{1,2}}){_ORDINAL}\b",
                           re.IGNORECASE)
_CLOCK = re.compile(r"\b([01]?\d|2[0-3]):([0-5]\d)\b")
#: how far from a time a mail writes its happening may start: booked at 20:25, seated at 20:30
ANNOUNCED_SLACK = timedelta(minutes=15)

MERGED_TEXTS = " | "  # joins the texts of events merged into one row


def merge_overlapping(rows: list[Row], min_overlap: float) -> list[Row]:
    """Merge rows from different sources whose spans overlap by at least
    ``min_overlap`` of the longer one, i.e. records of the same happening (point
    events: the same instant). A row of whole days (a diary's note of the day) is
    merged into the one timed happening of its day(s) that the search found, if
    there is exactly one, and the merged row keeps that happening's span: the
    football game in the calendar and the note "Football this evening" are one game
    at 19:00. Every rule merges rows of different sources only: the rows of a single
    source come back as they are, sorted (27,840 song plays took 0.26 s to find that)."""
    if len({r.get("source") for r in rows}) <= 1:
        return sorted(rows, key=_in_time_order)
    # by start, then id: which of two rows that start together leads a merged row never
    # depends on the order the search found them in
    order = sorted(range(len(rows)), key=lambda i: _in_time_order(rows[i]))
    parent = list(range(len(rows)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    _merge_coinciding_spans(rows, order, min_overlap, find, parent)
    # a mail about a happening first: it is no happening of its day for a day's note
    _merge_those_announcing_it(rows, find, parent)
    _merge_days_into_their_happening(rows, find, parent)
    _merge_orders(rows, find, parent)
    _merge_those_giving_its_days(rows, find, parent)
    groups: dict[int, list[int]] = {}
    for i in order:
        groups.setdefault(find(i), []).append(i)
    out = [rows[members[0]] if len(members) == 1 else _merged(rows, members) for members in groups.values()]
    out.sort(key=_in_time_order)
    return out


def _in_time_order(row: Row) -> tuple:
    """The order of RETRIEVE's rows: by start, then by their first event id."""
    return row.get("start"), min(row.ids)


def _merge_coinciding_spans(rows: list[Row], order: list[int], min_overlap: float,
                            find: Callable[[int], int], parent: list[int]) -> None:
    """Rows of different sources whose spans share ``min_overlap`` of the longer
    one (or that are the same instant) join one group; ``order`` is by start."""
    active: list[int] = []
    for i in order:
        r = rows[i]
        s, e = r.get("start"), r.get("end") or r.get("start")
        active = [j for j in active if (rows[j].get("end") or rows[j].get("start")) >= s]
        for j in active:
            o = rows[j]
            if o.get("source") == r.get("source"):
                continue
            os_, oe = o.get("start"), o.get("end") or o.get("start")
            longer = max(e - s, oe - os_)
            shared = min(e, oe) - max(s, os_)
            if longer <= timedelta(0):
                ok = s == os_
            else:
                # share of the longer span: a game and the workout recorded during it
                # merge, a three-minute song played during the game does not
                ok = shared / longer >= min_overlap
            if ok:
                parent[find(i)] = find(j)
        active.append(i)


def _merged(rows: list[Row], members: list[int]) -> Row:
    """The one row of a group of rows (in time order): the first leading row's values
    (:func:`_lead`), the leading rows' span, everyone's texts, sources, raw values
    and ids. The text of
    the row whose values it has comes first, then the others' in time order, so the
    title is read with the text it belongs to: a diary's note of the day starts at
    midnight, and read first under the Strava run's title "Morning Run", its "run
    around Loos Park" was answered "Morning Run" when asked where the run was."""
    best = min(_lead(rows[m]) for m in members)
    timed = [m for m in members if _lead(rows[m]) == best]
    values = dict(rows[timed[0]].values)
    raw: dict = {}
    for m in reversed(members):
        raw.update(rows[m].raw)
    values["start"] = min(rows[m].get("start") for m in timed)
    values["end"] = max((rows[m].get("end") or rows[m].get("start")) for m in timed)
    in_order = [timed[0], *(m for m in members if m != timed[0])]
    values["text"] = MERGED_TEXTS.join(t for t in (rows[m].get("text") for m in in_order) if t)
    values["sources"] = sorted({s for m in members for s in (rows[m].get("sources") or [rows[m].get("source")])})
    # each text with its own event's title: Strava's "Run with Adrian" says who ran, and
    # read under the watch's "Running, 12.99 km" that led the row, no one was found
    titles = tuple(t for m in in_order if rows[m].get("text")
                   for t in (rows[m].titles or (rows[m].get("title"),)))
    return Row(values, frozenset().union(*(rows[m].ids for m in members)), raw, titles)


def _start_of(rows: list[Row], members: list[int]):
    """When a group of rows happened: its leading rows' start, as :func:`_merged` makes
    it (a dinner's, not the day its booking mail was sent)."""
    best = min(_lead(rows[m]) for m in members)
    return min(rows[m].get("start") for m in members if _lead(rows[m]) == best)


def _lead(row: Row) -> int:
    """Which rows of a happening lead its merged row, lowest first: a timed span (a
    run, a game), then days that are more than one (a trip: its booking mail is no
    trip's time), then an instant (a purchase, a mail), then a day's note."""
    s, e = row.get("start"), row.get("end")
    lasts = isinstance(s, datetime) and isinstance(e, datetime) and e > s
    if not spans_whole_days(row):
        return 0 if lasts else 2
    return 1 if e - s > timedelta(days=1) else 3


def merge_into(row: Row, notes: list[Row]) -> Row:
    """``row`` with ``notes`` (whole-day notes that record its happening) merged in, as
    :func:`merge_overlapping` merges a day's note into its day's one happening."""
    rows = [row, *notes]
    return _merged(rows, list(range(len(rows))))


def _merge_orders(rows: list[Row], find: Callable[[int], int], parent: list[int]) -> None:
    """Rows of different sources that give the same order number are one order: the
    Amazon purchase and its confirmation and shipping mails, minutes or days apart
    (the demo's Amazon spending counted several orders twice). Rows of one source
    that give it at the same instant are the order's items: each stays a row of its
    own, with its amount, and the order's other rows join the first of them. (Joined
    through the mail, three items were one row with one item's amount, or not, as
    the search happened to list them.)"""
    giving: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        for order in order_numbers(r):
            giving.setdefault(order, []).append(i)
    for members in giving.values():
        if len({rows[i].get("source") for i in members}) < 2:
            continue
        members.sort(key=lambda i: _in_time_order(rows[i]))
        together: dict[tuple, list[int]] = {}
        for i in members:
            together.setdefault((rows[i].get("source"), rows[i].get("start")), []).append(i)
        items = max(together.values(), key=len)  # the first of the largest such set
        if len(items) == 1:
            items = []  # no items: all the order's rows are one
        first = items[0] if items else members[0]
        for i in members:
            if i != first and i not in items:
                parent[find(i)] = find(first)


def _merge_days_into_their_happening(rows: list[Row], find: Callable[[int], int], parent: list[int]) -> None:
    """Each group of whole-day rows joins the one group of timed rows from other
    sources that starts within its days, where there is exactly one."""
    groups: dict[int, list[int]] = {}
    for i in range(len(rows)):
        groups.setdefault(find(i), []).append(i)
    timed_by_day: dict[date, list[int]] = {}
    days: list[int] = []
    for root, members in groups.items():
        if all(spans_whole_days(rows[m]) for m in members):
            days.append(root)
        elif isinstance(start := _start_of(rows, members), datetime):
            timed_by_day.setdefault(start.date(), []).append(root)
    for root in days:
        members = groups[root]
        sources = {rows[m].get("source") for m in members}
        first, last = rows[members[0]].get("start"), rows[members[0]].get("end")
        on_its_days = [t for d in range((last - first).days + 1)
                       for t in timed_by_day.get((first + timedelta(days=d)).date(), ())]
        found = [t for t in on_its_days if first <= _start_of(rows, groups[t]) < last
                 and not sources & {rows[m].get("source") for m in groups[t]}]
        if len(found) == 1:
            parent[root] = found[0]


def days_written(text: str) -> set[date]:
    """The days ``text`` writes with their year: "out on 07 Jun 2022, back on 13 Jun
    2022" {2022-06-07, 2022-06-13}."""
    out: set[date] = set()
    for m in _DAY_WRITTEN.finditer(text or ""):
        g = m.groups()
        if g[0]:
            day, month, year = g[0], g[1], g[2]
        elif g[3]:
            day, month, year = g[4], g[3], g[5]
        else:
            year, month, day = g[6], g[7], g[8]
        number = int(month) if month.isdigit() else MONTH_NUMBERS.get(month.lower().rstrip(".")[:3])
        try:
            out.add(date(int(year), number, int(day)))
        except (TypeError, ValueError):
            continue
    return out


def _merge_those_giving_its_days(rows: list[Row], find: Callable[[int], int], parent: list[int]) -> None:
    """A row that is no span of days and writes both the first and the last day of a
    row of another source that spans several is about that happening: the booking
    mail "out on 07 Jun 2022, back on 13 Jun 2022" and the calendar's seven days in
    Barcelona are one trip (six trips were counted as twelve, and more)."""
    spans: dict[tuple[date, date], list[int]] = {}
    for i, r in enumerate(rows):
        s, e = r.get("start"), r.get("end")
        if isinstance(s, datetime) and isinstance(e, datetime) and e - s > timedelta(days=1):
            last = (e - timedelta(microseconds=1)).date() if spans_whole_days(r) else e.date()
            spans.setdefault((s.date(), last), []).append(i)
    if not spans:
        return
    for i, r in enumerate(rows):
        s, e = r.get("start"), r.get("end")
        if isinstance(s, datetime) and isinstance(e, datetime) and e - s > timedelta(days=1):
            continue
        written = days_written(f"{r.get('title') or ''} {r.get('text') or ''}")
        if len(written) < 2:
            continue
        found = [j for (first, last), js in spans.items() if first in written and last in written
                 for j in js if rows[j].get("source") != r.get("source")]
        if len({find(j) for j in found}) == 1:
            parent[find(i)] = find(found[0])


def day_announced(text: str, sent: date) -> date | None:
    """The one day ``text`` (written on ``sent``) names, with its year or without (then
    the first such day from ``sent`` on: "expects you on Friday, 4 November" in a mail
    of 2 November 2022 is 4 November 2022); None where it names none or several."""
    days = days_written(text)
    rest = _DAY_WRITTEN.sub(" ", text or "")
    for m in _DAY_OF_MONTH.finditer(rest):
        day, month = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        number = MONTH_NUMBERS.get(month.lower().rstrip(".")[:3])
        for year in (sent.year, sent.year + 1):
            try:
                d = date(year, number, int(day))
            except (TypeError, ValueError):
                break
            if d >= sent:
                days.add(d)
                break
    return next(iter(days)) if len(days) == 1 else None


def _merge_those_announcing_it(rows: list[Row], find: Callable[[int], int], parent: list[int]) -> None:
    """A row of an instant (a mail) that names one later day, and the times of day it
    names, is about the one timed happening of another source that starts on that day
    at such a time (within :data:`ANNOUNCED_SLACK`; any time where it names none), or,
    where no timed happening starts that day, the day's one note: the restaurant's
    "Pizzeria Niemeier expects you on Friday, 4 November at 20:25" and the calendar's
    dinner there at 20:25 are one dinner (a year of dinners at one place was counted
    with its booking mails: 28 for 23)."""
    starts: dict[date, list[int]] = {}  # the timed happenings by their day
    notes: dict[date, list[int]] = {}  # the notes of one day by that day
    for i, r in enumerate(rows):
        s, e = r.get("start"), r.get("end")
        if not isinstance(s, datetime) or not isinstance(e, datetime) or e <= s:
            continue
        if not spans_whole_days(r):
            starts.setdefault(s.date(), []).append(i)
        elif e - s == timedelta(days=1):
            notes.setdefault(s.date(), []).append(i)
    if not starts and not notes:
        return
    for i, r in enumerate(rows):
        s, e = r.get("start"), r.get("end")
        if not isinstance(s, datetime) or (isinstance(e, datetime) and e > s):
            continue  # a happening of its own, or a day's note: not an announcement
        text = f"{r.get('title') or ''} {r.get('text') or ''}"
        day = day_announced(text, s.date())
        if day is None or day < s.date():
            continue
        times = [datetime(day.year, day.month, day.day, int(h), int(m)) for h, m in _CLOCK.findall(text)]
        found = {find(j) for j in starts.get(day, ())
                 if rows[j].get("source") != r.get("source")
                 and (not times or any(_at_the_time(rows[j].get("start"), t, s) for t in times))}
        if not starts.get(day):  # no timed happening that day: the day's one note of it
            found = {find(j) for j in notes.get(day, ()) if rows[j].get("source") != r.get("source")}
        if len(found) == 1:
            parent[find(i)] = found.pop()


def _at_the_time(start: datetime, written: datetime, sent: datetime) -> bool:
    """Whether a happening starting at ``start`` starts at the clock time ``written``
    in a mail sent at ``sent``: read on the mail's clock (the sources' offsets
    differ: a calendar's times are UTC), within :data:`ANNOUNCED_SLACK`, or an hour
    off where summer time began or ended between the mail and the day."""
    if start.tzinfo is not None and sent.tzinfo is not None:
        start = start.astimezone(sent.tzinfo)
    off = abs(start.replace(tzinfo=None) - written)
    return off <= ANNOUNCED_SLACK or abs(off - timedelta(hours=1)) <= ANNOUNCED_SLACK
