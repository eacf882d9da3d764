"""iCalendar files (``.ics``; also jCal ``.jcal``) from Google Calendar Takeout,
Thunderbird, Outlook, Etar and other producers: one ``calendar_event`` per VEVENT
occurrence.

How a file is read:

* The text is split into components by its ``BEGIN:``/``END:`` lines *before*
  icalendar parses anything, and VEVENTs are parsed in groups of one UID (a series
  and its RECURRENCE-ID overrides belong together). A group that icalendar cannot
  parse is retried VEVENT by VEVENT, so one broken component becomes an
  :class:`ImportIssue` and the rest of the file imports.
* Time zones: TZIDs that name an IANA zone use the system zone database; custom
  VTIMEZONEs (Outlook's "W. Europe Standard Time", ...) are handed to icalendar with
  the group that uses them. UTC stays UTC. Floating times and all-day dates
  (``VALUE=DATE``) are placed in the user's home zone; an all-day event starts at
  local midnight and ``all_day`` is set.
* Recurrence (RRULE/RDATE/EXDATE/RECURRENCE-ID) is expanded with
  ``recurring-ical-events`` into one event per occurrence within the data's time
  range: from the series' first DTSTART up to the *horizon*, which is the latest
  DTSTART/DTSTAMP/LAST-MODIFIED/CREATED day in the file (read from the text before
  parsing) plus one year (so a weekly
  meeting without an end stops a year after the export was made). A series stops
  after :data:`MAX_OCCURRENCES` occurrences or :data:`SERIES_SECONDS` seconds of
  expansion, with an issue saying so.
* STATUS:CANCELLED events and occurrences are not events (a cancelled RECURRENCE-ID
  removes that occurrence).

icalendar parses a whole component tree in memory, so a file is read whole: files
up to :data:`MAX_FILE_BYTES` (64 MB, several hundred thousand events) are accepted,
larger ones are rejected with an issue. This module must not write to the store or
read anything but the entry it is given.
"""
from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator
from datetime import date, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from importers.base import UTC, Entry, Event, Importer, ImportIssue, offset_minutes

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_OCCURRENCES = 5000
SERIES_SECONDS = 10.0
HORIZON = timedelta(days=365)
_TEXT_LIMIT = 2000  # characters of DESCRIPTION kept in attributes and text
_RAW_LIMIT = 4000

_BEGIN_CAL = re.compile(rb"^\s*(\xef\xbb\xbf)?\s*BEGIN:VCALENDAR", re.I)
_JCAL = re.compile(rb'^\s*(\xef\xbb\xbf)?\s*\[\s*"vcalendar"', re.I)
_LINE_SPLIT = re.compile(r"\r\n|\n|\r")
_TZID_PARAM = re.compile(r";TZID=(\"[^\"]*\"|[^;:]*)", re.I)


class CalendarFormatError(ValueError):
    """The file is not an iCalendar file this importer can read."""


def _recognize(entry: Entry) -> float:
    head = entry.head
    name = entry.basename.lower()
    if _BEGIN_CAL.match(head):
        return 0.95
    if _JCAL.match(head):
        return 0.9
    # A file named like a calendar is claimed, so the report says why it could not be
    # read instead of listing it as unknown.
    if name.endswith((".ics", ".ical", ".ifb", ".icalendar", ".jcal")):
        return 0.6
    return 0.0


# ---- reading and splitting the text -------------------------------------------------

def _decode(data: bytes) -> tuple[str, str | None]:
    """The file's text and, when it was not UTF-8, a note on how it was decoded."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16"), None
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        where = exc.start
    # RFC 5545 says UTF-8; older Outlook exports write the Windows code page.
    return data.decode("cp1252", errors="replace"), (
        f"the file is not valid UTF-8 (first bad byte at offset {where}); read it as Windows-1252")


class _Block:
    """One component's lines, as written, with the line it starts on."""

    __slots__ = ("name", "lines", "line_no", "closed")

    def __init__(self, name: str, line_no: int):
        self.name = name
        self.lines: list[str] = []
        self.line_no = line_no
        self.closed = False

    def text(self) -> str:
        return "\r\n".join(self.lines) + "\r\n"

    def prop(self, name: str) -> str | None:
        """A top-level property's value, unfolded; None when absent."""
        want = name.upper()
        depth = 0
        for i, line in enumerate(self.lines):
            upper = line[:16].upper()
            if upper.startswith("BEGIN:"):
                depth += 1
                continue
            if upper.startswith("END:"):
                depth -= 1
                continue
            if depth != 1 or line[:1] in (" ", "\t"):
                continue
            key = re.split(r"[;:]", line, maxsplit=1)[0].upper()
            if key == want:
                value = line
                for cont in self.lines[i + 1:]:
                    if cont[:1] in (" ", "\t"):
                        value += cont[1:]
                    else:
                        break
                return value.split(":", 1)[1] if ":" in value else ""
        return None


class _CalendarText:
    """A VCALENDAR's own properties and its VTIMEZONE and VEVENT blocks."""

    def __init__(self, line_no: int):
        self.line_no = line_no
        self.props: list[str] = []
        self.timezones: dict[str, _Block] = {}
        self.events: list[_Block] = []
        self.others: dict[str, int] = {}


def _split(text: str) -> tuple[list[_CalendarText], list[ImportIssue]]:
    """Components by BEGIN/END lines. Tolerates missing VCALENDAR wrappers, unclosed
    components (truncated files) and END lines that do not match."""
    calendars: list[_CalendarText] = []
    issues: list[ImportIssue] = []
    cal: _CalendarText | None = None
    block: _Block | None = None  # the open top-level component inside the calendar
    stack: list[str] = []  # names of the components open inside ``block``
    for n, line in enumerate(_LINE_SPLIT.split(text), start=1):
        if not line.strip():
            continue
        head = line[:64].upper()
        if head.startswith("BEGIN:"):
            comp = head[6:].strip()
            if comp == "VCALENDAR" and not stack:
                cal = _CalendarText(n)
                calendars.append(cal)
                continue
            if comp == "VEVENT" and "VEVENT" in stack and block is not None:
                issues.append(ImportIssue(
                    f"VEVENT at line {block.line_no}",
                    f"no END:VEVENT before the next BEGIN:VEVENT at line {n}; the event was skipped"))
                block, stack = None, []
            if not stack:
                if cal is None:  # a bare component without its VCALENDAR
                    cal = _CalendarText(n)
                    calendars.append(cal)
                block = _Block(comp, n)
            assert block is not None
            block.lines.append(line)
            stack.append(comp)
            continue
        if head.startswith("END:"):
            comp = head[4:].strip()
            if comp == "VCALENDAR":
                if block is not None and stack:
                    issues.append(ImportIssue(
                        f"{block.name} at line {block.line_no}",
                        f"no END:{block.name} before END:VCALENDAR at line {n} (truncated?); it was skipped"))
                block, stack, cal = None, [], None
                continue
            if not stack or block is None:
                continue  # a stray END line: nothing open to close
            if comp not in stack:
                block.lines.append(line)  # let icalendar judge it
                continue
            while stack:
                name = stack.pop()
                block.lines.append(f"END:{name}")  # closes what was left open inside, too
                if name == comp:
                    break
            if not stack:
                block.closed = True
                _file_block(cal, block)
                block = None
            continue
        if block is not None:
            if head.startswith(("RRULE", "EXRULE")) and ", " in line:
                # Exchange writes "BYDAY=MO, TU"; the spaces make the rule unreadable.
                line = re.sub(r",\s+", ",", line)
            block.lines.append(line)
        elif cal is not None:
            cal.props.append(line)
    if block is not None and stack:
        issues.append(ImportIssue(f"{block.name} at line {block.line_no}",
                                  f"the file ends inside this {block.name} (truncated?); it was skipped"))
    return calendars, issues


def _file_block(cal: _CalendarText | None, block: _Block) -> None:
    if cal is None:
        return
    if block.name == "VEVENT":
        cal.events.append(block)
    elif block.name == "VTIMEZONE":
        tzid = (block.prop("TZID") or "").strip().strip('"')
        if tzid:
            cal.timezones[tzid] = block
    else:
        cal.others[block.name] = cal.others.get(block.name, 0) + 1


# ---- values ------------------------------------------------------------------------

def _iana(tzid: str) -> bool:
    try:
        ZoneInfo(tzid)
        return True
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return False


def _broken(value: Any) -> bool:
    # icalendar keeps unparsable values as vBroken, whose attributes raise on access
    return type(value).__name__ == "vBroken"


def _first(component: Any, name: str) -> Any:
    """A property's first well-formed value (duplicated or broken ones are common)."""
    value = component.get(name)
    if isinstance(value, list):
        return next((v for v in value if not _broken(v)), None)
    return None if _broken(value) else value


def _dt(component: Any, name: str) -> date | datetime | None:
    value = _first(component, name)
    dt = getattr(value, "dt", None)
    if isinstance(dt, (date, datetime)):
        return dt
    return None


def _aware(value: date | datetime, home: tzinfo) -> tuple[datetime, bool]:
    """A zone-aware datetime and whether it came from a DATE (all-day) value."""
    if isinstance(value, datetime):
        if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
            return value.replace(tzinfo=home), False
        return value, False
    return datetime(value.year, value.month, value.day, tzinfo=home), True


def _text(component: Any, name: str) -> str:
    value = _first(component, name)
    if value is None:
        return ""
    if isinstance(value, list):  # e.g. several CATEGORIES lines
        value = value[0] if value else ""
    try:
        return str(value).strip()
    except Exception:  # noqa: BLE001 - a value icalendar could not render is just empty
        return ""


def _person(value: Any) -> str:
    """'Name <email>' (or just one of them) from an ATTENDEE/ORGANIZER value."""
    addr = str(value).strip()
    if addr.lower().startswith("mailto:"):
        addr = addr[7:]
    params = getattr(value, "params", {}) or {}
    name = str(params.get("CN", "") or "").strip().strip('"')
    if name and addr and name.lower() != addr.lower():
        return f"{name} <{addr}>"
    return name or addr


def _name_only(person: str) -> str:
    """The name of a 'Name <email>' from :func:`_person`; the address when no name."""
    name, _, rest = person.partition(" <")
    return name if rest.endswith(">") and name else person


def _people(component: Any, name: str) -> list[str]:
    value = component.get(name)
    if value is None:
        return []
    values = value if isinstance(value, list) else [value]
    return [p for p in (_person(v) for v in values) if p]


def _clip(s: str, limit: int) -> str:
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "…"


# ---- turning components into events -------------------------------------------------

class _FileState:
    def __init__(self, entry: Entry):
        self.home = entry.context.home_tz
        self.calendar_name = ""


def _event(comp: Any, state: _FileState, uid: str, recurring: bool, locator: str,
           raw: str) -> Event | ImportIssue | None:
    """One event from a VEVENT or an occurrence of one; None for cancelled ones."""
    status = _text(comp, "STATUS").upper()
    if status == "CANCELLED":
        return None
    start_value = _dt(comp, "DTSTART")
    if start_value is None:
        broken = comp.get("DTSTART")
        why = "has no DTSTART" if broken is None else f"has an unreadable DTSTART ({_clip(str(getattr(broken, 'to_ical', lambda: broken)()), 60)})"
        return ImportIssue(locator, f"the event {why}; it was skipped")
    start, all_day = _aware(start_value, state.home)
    end_value = _dt(comp, "DTEND")
    end: datetime | None = None
    if end_value is not None:
        end, _ = _aware(end_value, state.home)
    else:
        dur = _first(comp, "DURATION")
        delta = getattr(dur, "dt", None)
        if isinstance(delta, timedelta):
            end = start + delta
        elif all_day:
            end = start + timedelta(days=1)
    if all_day and end is not None:
        # An all-day span ends at local midnight of its last day + 1, in the home zone.
        end = end.replace(tzinfo=state.home)
    if end is not None and end < start:
        end = None  # a backwards DTEND is a producer bug; keep the start, drop the span

    summary = _text(comp, "SUMMARY") or "(no title)"
    location = _text(comp, "LOCATION")
    description = _clip(_text(comp, "DESCRIPTION"), _TEXT_LIMIT)
    attendees = _people(comp, "ATTENDEE")
    organizer_list = _people(comp, "ORGANIZER")
    organizer = organizer_list[0] if organizer_list else ""
    rid = _dt(comp, "RECURRENCE-ID")

    local = start.astimezone(start.tzinfo)
    if all_day:
        days = ((end - start).days if end else 1) or 1
        when = f"on {local:%A %d %B %Y}" + (
            f" for {days} days (all day)" if days > 1 else " (all day)")
    else:
        when = f"on {local:%A %d %B %Y} at {local:%H:%M}"
        if end is not None:
            local_end = end.astimezone(start.tzinfo)
            when += f" until {local_end:%H:%M}" if local_end.date() == local.date() else \
                f" until {local_end:%A %d %B %Y %H:%M}"
    # What the event is comes before who was asked to it: RETRIEVE's classifiers read
    # about the first 64 tokens of an event, and five attendees written with their
    # addresses used them all (the description of a weekly meeting was never read).
    text = f"Calendar event: {summary} {when}"
    if location:
        text += f" at {location}"
    text += "."
    if description:
        text += f" {_clip(' '.join(description.split()), 600)}"
        text += "" if text.endswith((".", "!", "?", "…")) else "."
    organizer_name = _name_only(organizer)
    others = [n for n in map(_name_only, attendees) if n != organizer_name]
    if organizer_name:
        text += f" Organised by {organizer_name}."
    if others:
        text += f" With {', '.join(others[:10])}" + (f" and {len(others) - 10} more" if len(others) > 10 else "") + "."

    attrs: dict[str, Any] = {
        "summary": summary, "all_day": all_day, "recurring": recurring,
        "status": status.lower() if status else "",
    }
    if location:
        attrs["location"] = location
    if description:
        attrs["description"] = description
    if attendees:
        attrs["attendees"] = attendees
    if organizer:
        attrs["organizer"] = organizer
    if state.calendar_name:
        attrs["calendar"] = state.calendar_name
    if uid:
        attrs["uid"] = uid
    if end is not None:
        attrs["duration_min"] = round((end - start).total_seconds() / 60, 1)

    # The occurrence's identity: UID plus its RECURRENCE-ID (for a plain occurrence of
    # a series, the original start is the RECURRENCE-ID-to-be).
    ident = rid if rid is not None else start_value
    if isinstance(ident, datetime) and ident.tzinfo is not None:
        ident_s = ident.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    elif isinstance(ident, datetime):
        ident_s = ident.strftime("%Y%m%dT%H%M%S")
    else:
        ident_s = ident.strftime("%Y%m%d")
    key = f"{uid}|{ident_s}" if uid else ""
    tz_off = offset_minutes(start) if not all_day else offset_minutes(start, state.home)
    return Event(source="calendar", kind="calendar_event", start=start, end=end, title=summary,
                 text=text, attributes=attrs, tz_offset_min=tz_off, key=key,
                 locator=f"{locator}, {ident_s}" if recurring else locator, raw=raw)


def _parse(text: str) -> Any:
    from icalendar import Calendar

    return Calendar.from_ical(text)


def _mini_calendar(cal: _CalendarText, blocks: list[_Block]) -> str:
    """A calendar holding only ``blocks`` and the custom time zones they use."""
    tzids: set[str] = set()
    for b in blocks:
        for line in b.lines:
            for m in _TZID_PARAM.finditer(line[:200]):
                tzids.add(m.group(1).strip().strip('"'))
    parts = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//hindsight//split//EN"]
    for tzid in sorted(tzids):
        block = cal.timezones.get(tzid)
        if block is not None and not _iana(tzid):
            parts.append(block.text().rstrip("\r\n"))
    for b in blocks:
        parts.append(b.text().rstrip("\r\n"))
    parts.append("END:VCALENDAR")
    return "\r\n".join(parts) + "\r\n"


def _reason(exc: Exception) -> str:
    msg = " ".join(str(exc).split())
    return _clip(f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__, 300)


def _expand(calendar: Any, uid: str, first: datetime, horizon: datetime, locator: str,
            state: _FileState, raw: str) -> Iterator[Event | ImportIssue]:
    """Occurrences of one series in [first, horizon], in windows that grow while they
    are sparse, so dense rules (FREQ=SECONDLY) hit the cap after one small window."""
    import recurring_ical_events

    query = recurring_ical_events.of(calendar, keep_recurrence_attributes=True)
    seen: set[str] = set()
    count = 0
    window = timedelta(days=1)
    t = first
    deadline = time.monotonic() + SERIES_SECONDS
    while t <= horizon:
        stop = min(t + window, horizon + timedelta(seconds=1))
        occurrences = query.between(t, stop)
        for occ in occurrences:
            item = _event(occ, state, uid, True, locator, raw)
            if item is None:
                continue
            if isinstance(item, ImportIssue):
                yield item
                return
            if item.start > horizon:
                continue
            ident = item.key or item.locator
            if ident in seen:
                continue  # an occurrence spanning two windows
            seen.add(ident)
            count += 1
            if count > MAX_OCCURRENCES:
                yield ImportIssue(locator, f"the series has more than {MAX_OCCURRENCES} occurrences "
                                           f"before {horizon:%Y-%m-%d}; only the first {MAX_OCCURRENCES} were kept")
                return
            yield item
        if time.monotonic() > deadline:
            yield ImportIssue(locator, f"expanding the series took longer than {SERIES_SECONDS:.0f} s; "
                                       f"stopped at {t:%Y-%m-%d} after {count} occurrences")
            return
        n = len(occurrences)
        growth = 8.0 if n == 0 else min(8.0, max(0.25, 200 / n))
        window = min(max(window * growth, timedelta(hours=1)), timedelta(days=3660))
        t = stop


def _walk_group(cal: _CalendarText, blocks: list[_Block]) -> Iterator[tuple[Any, _Block] | ImportIssue]:
    """Parsed VEVENTs of one UID group; on failure, retried block by block."""
    try:
        parsed = _parse(_mini_calendar(cal, blocks))
        comps = list(parsed.walk("VEVENT"))
        if len(comps) == len(blocks):
            yield from zip(comps, blocks)
            return
    except Exception:  # noqa: BLE001 - any parser failure is retried per component below
        pass
    for block in blocks:
        try:
            comps = list(_parse(_mini_calendar(cal, [block])).walk("VEVENT"))
        except Exception as exc:  # noqa: BLE001 - icalendar raises many types for bad input
            yield ImportIssue(f"VEVENT at line {block.line_no}", f"cannot parse the event: {_reason(exc)}")
            continue
        if not comps:
            yield ImportIssue(f"VEVENT at line {block.line_no}", "the event holds no readable VEVENT")
            continue
        yield comps[0], block


def _read(entry: Entry) -> Iterator[Event | ImportIssue]:
    try:
        with entry.open() as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        yield ImportIssue("file", f"cannot read the file: {exc}")
        return
    if len(data) > MAX_FILE_BYTES:
        yield ImportIssue("file", f"the calendar is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB, "
                                  "the most this importer reads at once; split it and import the parts")
        return
    if not data.strip():
        yield ImportIssue("file", "the file is empty")
        return
    text, note = _decode(data)
    if note:
        yield ImportIssue("file", note)
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("["):
        try:
            text = _jcal_to_ical(stripped)
        except CalendarFormatError as exc:
            yield ImportIssue("file", str(exc))
            return
    if "\x00" in text:
        text = text.replace("\x00", "")
    if not re.search(r"^\s*BEGIN:(VCALENDAR|VEVENT)\s*$", text, re.I | re.M):
        yield ImportIssue("file", "not an iCalendar file: there is no BEGIN:VCALENDAR or BEGIN:VEVENT line")
        return
    calendars, issues = _split(text)
    yield from issues
    state = _FileState(entry)

    total_events = 0
    for cal in calendars:
        name_line = next((p for p in cal.props if p.upper().startswith("X-WR-CALNAME")), None)
        state.calendar_name = name_line.split(":", 1)[1].strip() if name_line and ":" in name_line else ""
        yield from _read_calendar(cal, state)
        total_events += len(cal.events)
    if total_events == 0:
        others = sorted({k for c in calendars for k in c.others})
        found = f" (it holds {', '.join(others)})" if others else ""
        yield ImportIssue("file", f"the calendar has no events (VEVENT){found}; nothing to import")


def _read_calendar(cal: _CalendarText, state: _FileState) -> Iterator[Event | ImportIssue]:
    groups: dict[str, list[_Block]] = {}
    for i, block in enumerate(cal.events):
        uid = (block.prop("UID") or "").strip()
        groups.setdefault(uid or f"\x00no-uid-{i}", []).append(block)

    horizon = _horizon(cal, state)

    def parsed_groups() -> Iterator[tuple[str, list[tuple[Any, _Block]]] | ImportIssue]:
        # One group at a time, so parsed components never pile up for a whole file.
        for uid, blocks in groups.items():
            items: list[tuple[Any, _Block]] = []
            for item in _walk_group(cal, blocks):
                if isinstance(item, ImportIssue):
                    yield item
                else:
                    items.append(item)
            if items:
                yield uid, items

    for group in parsed_groups():
        if isinstance(group, ImportIssue):
            yield group
            continue
        uid, items = group
        real_uid = "" if uid.startswith("\x00") else uid
        recurring = any(comp.get("RRULE") is not None or comp.get("RDATE") is not None
                        for comp, _ in items)
        if not recurring:
            for comp, block in items:
                raw = _clip(block.text(), _RAW_LIMIT)
                locator = _locator(block, real_uid)
                try:
                    item = _event(comp, state, real_uid, False, locator, raw)
                except Exception as exc:  # noqa: BLE001 - icalendar's values raise many types
                    item = ImportIssue(locator, f"cannot read the event: {_reason(exc)}")
                if item is not None:
                    yield item
            continue
        masters = [(c, b) for c, b in items if c.get("RECURRENCE-ID") is None]
        first_block = (masters or items)[0][1]
        locator = _locator(first_block, real_uid)
        raw = _clip(first_block.text(), _RAW_LIMIT)
        starts = [_aware(v, state.home)[0] for v in (_dt(c, "DTSTART") for c, _ in items) if v is not None]
        if not starts:
            yield ImportIssue(locator, "the recurring event has no readable DTSTART; it was skipped")
            continue
        try:
            from icalendar import Calendar

            calendar = Calendar()
            for comp, _ in items:
                calendar.add_component(comp)
            yield from _expand(calendar, real_uid, min(starts) - timedelta(days=1), horizon,
                               locator, state, raw)
        except Exception as exc:  # noqa: BLE001 - a bad rule must not stop the other series
            yield ImportIssue(locator, f"cannot expand the recurrence: {_reason(exc)}")


_DATE_PROP = re.compile(r"^(DTSTART|DTSTAMP|LAST-MODIFIED|CREATED)[;:].*:(\d{4})(\d\d)(\d\d)", re.I)


def _horizon(cal: _CalendarText, state: _FileState) -> datetime:
    """The end of the data's time range: the latest DTSTART/DTSTAMP/LAST-MODIFIED/
    CREATED day in the calendar (read from the text, before parsing) plus a year."""
    latest: date | None = None
    for block in cal.events:
        for line in block.lines:
            m = _DATE_PROP.match(line)
            if not m:
                continue
            try:
                day = date(int(m.group(2)), int(m.group(3)), int(m.group(4)))
            except ValueError:
                continue
            if latest is None or day > latest:
                latest = day
    if latest is None:
        return datetime.now(UTC) + HORIZON
    # the end of that day, wherever the user is
    return datetime(latest.year, latest.month, latest.day, tzinfo=state.home) + timedelta(days=1) + HORIZON


def _locator(block: _Block, uid: str) -> str:
    return f"VEVENT at line {block.line_no}" + (f", UID {_clip(uid, 120)}" if uid else "")


def _jcal_to_ical(text: str) -> str:
    from icalendar import Calendar

    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CalendarFormatError(f"not a calendar: the file starts like JSON but is not valid JSON ({exc})") from None
    try:
        cal = Calendar.from_jcal(data)
        return cal.to_ical().decode("utf-8", errors="replace")
    except Exception as exc:  # noqa: BLE001 - jCal errors come in many types
        raise CalendarFormatError(f"cannot read the jCal (JSON) calendar: {_reason(exc)}") from None


IMPORTERS = (
    Importer(
        name="icalendar", title="iCalendar calendar (.ics)", version="1", source="calendar",
        recognize=_recognize, read=_read,
        description="Google Calendar Takeout Calendar/*.ics, Thunderbird, Outlook, Etar and other .ics exports; jCal",
    ),
)
