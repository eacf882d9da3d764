"""Personal journals: Markdown daily notes named by their date (Obsidian
``2023-04-05.md``, Logseq ``journals/2023_04_05.md``, anywhere in a folder or zip) and
the Day One JSON export (``Journal.json``: ``{"metadata": ..., "entries": [...]}``).

A daily note holds the day's entries: each paragraph (a block between blank lines; in a
Logseq journal each top-level bullet) is one ``note`` event spanning that local day in the
home zone, so "how many times did I ..." counts what happened, not the days it was written
on. Headings are not entries; an entry under one takes it as its title. A note of one
paragraph is one event whose text is the note without front matter. Tags (front matter,
page properties and the entry's inline ``#tags``) become attributes. A Day One entry is
one ``note`` at its creation time, offset from the entry's own ``timeZone``. Other
Markdown files are not ours (recognize returns 0). This module only parses; it never
writes the store.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta
from typing import NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import ijson
import orjson

from importers.base import UTC, Entry, Event, Importer, ImportIssue, offset_minutes

_DAILY_NAME = re.compile(r"^(\d{4})[-_.](\d{2})[-_.](\d{2})(?:[ _.-][^/]*)?\.(?:md|markdown)$", re.I)
_MAX_NOTE_BYTES = 4 * 1024 * 1024
_MAX_RAW = 4000
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_INLINE_TAG = re.compile(r"(?<![\w#/&])#([^\W\d][\w/-]*)")
_LOGSEQ_PROPERTY = re.compile(r"^\s*-?\s*([A-Za-z][\w-]*)::\s*(.*)$")
_RULE = re.compile(r"^\s{0,3}([-*_])(?:\s*\1){2,}\s*$")
_BULLET = re.compile(r"^[-*+]\s+")
_FM_LINE = re.compile(r"^([A-Za-z_][\w -]*?)\s*:\s*(.*)$")
_DAYONE_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!>|~])")
_DAYONE_MEDIA = re.compile(r"!\[[^\]]*\]\(dayone-moment:[^)]*\)\s*")
_RESERVED_FM = {"tags", "tag", "title", "date", "aliases", "alias", "created", "updated", "modified",
                "cssclass", "cssclasses", "publish", "permalink"}


class JournalFormatError(ValueError):
    """A journal file or entry that does not have the expected shape."""


# ---- recognition -------------------------------------------------------------------

def _daily_date(basename: str) -> date | None:
    m = _DAILY_NAME.match(basename)
    if not m:
        return None
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def _recognize_daily(entry: Entry) -> float:
    if _daily_date(entry.basename) is None:
        return 0.0
    head = entry.head
    if b"\x00" in head:
        return 0.0  # binary, whatever its name says
    return 0.9


def _recognize_dayone(entry: Entry) -> float:
    head = entry.head
    if not head.lstrip().startswith(b"{") or b'"entries"' not in head:
        return 0.0
    if b'"creationDate"' in head or b'"uuid"' in head:
        return 0.95
    if b'"metadata"' in head and b'"version"' in head:
        return 0.7
    return 0.0


# ---- Markdown daily notes ----------------------------------------------------------

def _scalar(value: str) -> str:
    v = value.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        v = v[1:-1]
    return v


def _list_value(value: str) -> list[str]:
    v = value.strip()
    if v.startswith("[") and v.endswith("]"):
        v = v[1:-1]
    return [_scalar(p).lstrip("#") for p in re.split(r"[,\s]+" if "," not in v else r",", v) if _scalar(p)]


def split_front_matter(text: str) -> tuple[dict[str, object], str]:
    """YAML-style front matter (the simple subset notes use: ``key: value``, inline
    ``[a, b]`` lists and ``- item`` lists) and the body after it."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    end = None
    for i in range(1, min(len(lines), 500)):
        if lines[i].strip() in ("---", "..."):
            end = i
            break
    if end is None:
        return {}, text
    meta: dict[str, object] = {}
    current: str | None = None
    for line in lines[1:end]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = re.match(r"^\s+-\s+(.*)$|^-\s+(.*)$", line)
        if item and current is not None:
            value = _scalar(item.group(1) or item.group(2) or "")
            existing = meta.get(current)
            meta[current] = (existing if isinstance(existing, list) else []) + [value.lstrip("#")]
            continue
        m = _FM_LINE.match(line)
        if not m:
            continue
        current = m.group(1).strip().lower()
        raw_value = m.group(2)
        if current in ("tags", "tag", "aliases", "alias"):
            meta[current] = _list_value(raw_value) if raw_value.strip() else []
        else:
            meta[current] = _scalar(raw_value)
    return meta, "\n".join(lines[end + 1:])


def _decode(data: bytes, loc: str) -> tuple[str, ImportIssue | None]:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        issue = ImportIssue(loc, f"the note is not UTF-8 (bad byte at offset {exc.start}); "
                                 "read it as Windows-1252, check accented characters")
        return data.decode("cp1252", errors="replace"), issue


def _tags_of(meta: dict[str, object], body: str) -> list[str]:
    tags: list[str] = []
    for key in ("tags", "tag"):
        value = meta.get(key)
        if isinstance(value, list):
            tags += value
        elif isinstance(value, str) and value:
            tags += _list_value(value)
    in_code = False
    for line in body.split("\n"):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code or _HEADING.match(line):
            continue
        prop = _LOGSEQ_PROPERTY.match(line)
        if prop and prop.group(1).lower() in ("tags", "tag"):
            tags += [t.strip().strip("[]#") for t in prop.group(2).split(",") if t.strip()]
            continue
        tags += _INLINE_TAG.findall(line)
    seen: dict[str, None] = {}
    for t in tags:
        t = t.strip()
        if t and t.lower() not in (s.lower() for s in seen):
            seen[t] = None
    return list(seen)


def read_daily_note(entry: Entry) -> Iterator[Event | ImportIssue]:
    loc = entry.basename
    day = _daily_date(entry.basename)
    if day is None:
        yield ImportIssue(loc, "the file name is not a date (YYYY-MM-DD.md or YYYY_MM_DD.md)")
        return
    try:
        with entry.open() as f:
            data = f.read(_MAX_NOTE_BYTES + 1)
    except OSError as exc:
        yield ImportIssue(loc, f"cannot read the note: {exc}")
        return
    if len(data) > _MAX_NOTE_BYTES:
        data = data[:_MAX_NOTE_BYTES]
        yield ImportIssue(loc, f"the note is larger than {_MAX_NOTE_BYTES // (1024 * 1024)} MiB; "
                               "only its beginning was imported")
    if b"\x00" in data:
        yield ImportIssue(loc, "the file contains NUL bytes: it is not a text note")
        return
    text, issue = _decode(data, loc)
    if issue:
        yield issue
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    meta, raw_body = split_front_matter(text)
    body = raw_body.strip()
    if not body:
        yield ImportIssue(loc, "the note is empty (nothing after the front matter)")
        return
    title = ""
    if isinstance(meta.get("title"), str) and meta["title"]:
        title = str(meta["title"])
    else:
        for line in body.split("\n"):
            h = _HEADING.match(line)
            if h:
                title = h.group(1).strip()
                break
    zone = entry.context.home_tz
    start = datetime.combine(day, time(0, 0), tzinfo=zone).astimezone(UTC).astimezone(zone)
    end = datetime.combine(day + timedelta(days=1), time(0, 0), tzinfo=zone).astimezone(UTC).astimezone(zone)
    base: dict[str, object] = {"date": day.isoformat(), "weekday": f"{day:%A}"}
    fm: dict[str, object] = {}
    for key, value in meta.items():
        if key in _RESERVED_FM or not isinstance(value, str) or not value or len(fm) > 24:
            continue
        fm[re.sub(r"\W+", "_", key).strip("_") or "field"] = value[:200]
    first_line = text.count("\n") - raw_body.count("\n") + 1
    logseq = re.match(r"\d{4}_", entry.basename) is not None  # Logseq names its journals 2023_04_05.md
    entries, properties = _entries(raw_body, first_line, logseq)
    if len(entries) <= 1:
        entries = [_Entry(first_line, body, title or day.isoformat(), text)]
        properties = []
    for n, e in enumerate(entries, start=1):
        attrs = dict(base, words=len(e.text.split()), file=entry.basename)
        tags = _tags_of(meta, "\n".join(properties + [e.text]))
        if tags:
            attrs["tags"] = tags
        attrs.update(fm)
        single = len(entries) == 1
        yield Event(
            source="journal", kind="note", start=start, end=end,
            title=(title if single else e.section or title) or day.isoformat(), text=e.text,
            attributes=attrs, tz_offset_min=offset_minutes(start, zone),
            # entry 1 keeps the whole note's key, so a note that grows a paragraph keeps its first one
            key=f"daily|{day.isoformat()}|{entry.basename.lower()}" + ("" if n == 1 else f"|{n}"),
            locator=loc if single else f"{loc}, line {e.line}",
            raw=e.raw if len(e.raw) <= _MAX_RAW else e.raw[:_MAX_RAW] + "…",
        )


class _Entry(NamedTuple):
    line: int  # 1-based, in the file
    text: str
    section: str  # the heading above it, or ""
    raw: str


def _entries(body: str, first_line: int, logseq: bool) -> tuple[list[_Entry], list[str]]:
    """The note's entries and its property-only blocks (Logseq ``tags:: a, b``: they
    describe the page, so every entry carries them)."""
    entries: list[_Entry] = []
    properties: list[str] = []
    block: list[tuple[int, str]] = []
    section = ""
    in_code = False

    def flush() -> None:
        if not block:
            return
        lines = [ln for _, ln in block]
        if all(_LOGSEQ_PROPERTY.match(ln) for ln in lines):
            properties.extend(lines)
        else:
            shown = [_BULLET.sub("", lines[0], count=1) if logseq else lines[0]] + lines[1:]
            entries.append(_Entry(block[0][0], "\n".join(shown).strip(), section, "\n".join(lines)))
        block.clear()

    for i, line in enumerate(body.split("\n")):
        if line.lstrip().startswith("```"):
            in_code = not in_code
        elif not in_code:
            if not line.strip() or _RULE.match(line):
                flush()
                continue
            heading = _HEADING.match(line)
            if heading:
                flush()
                section = heading.group(1).strip()
                continue
            if logseq and _BULLET.match(line):
                flush()
        block.append((first_line + i, line))
    flush()
    return entries, properties


# ---- Day One JSON ------------------------------------------------------------------

def _parse_dayone_time(value: object, field: str) -> datetime:
    if not isinstance(value, str) or not value.strip():
        raise JournalFormatError(f"missing {field}")
    try:
        dt = datetime.fromisoformat(value.strip())
    except ValueError:
        raise JournalFormatError(f"{field} {value!r} is not an ISO date and time") from None
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt


def _zone_named(name: object):
    if not isinstance(name, str) or not name.strip():
        return None
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


def clean_dayone_text(text: str) -> str:
    """Day One escapes Markdown punctuation (``\\.``) and embeds photos as
    ``![](dayone-moment://…)``; readers want the plain sentences."""
    text = _DAYONE_MEDIA.sub("", text)
    text = _DAYONE_ESCAPE.sub(r"\1", text)
    return text.replace("\r\n", "\n").strip()


def _dayone_event(rec: dict, loc: str, journal: str, home_zone) -> tuple[Event, list[ImportIssue]]:
    problems: list[ImportIssue] = []
    start = _parse_dayone_time(rec.get("creationDate"), "creationDate")
    zone = _zone_named(rec.get("timeZone"))
    if zone is None:
        if rec.get("timeZone"):
            problems.append(ImportIssue(loc, f"unknown timeZone {rec.get('timeZone')!r}; used the home zone"))
        zone = home_zone
    raw_text = rec.get("text")
    text = clean_dayone_text(raw_text) if isinstance(raw_text, str) else ""
    uuid = rec.get("uuid")
    attrs: dict[str, object] = {"journal": journal, "date": start.astimezone(zone).date().isoformat()}
    if uuid:
        attrs["entry_id"] = str(uuid)
    tags = rec.get("tags")
    if isinstance(tags, list):
        tags = [str(t) for t in tags if isinstance(t, (str, int, float)) and str(t).strip()]
        if tags:
            attrs["tags"] = tags
    if rec.get("starred") is True:
        attrs["starred"] = True
    location = rec.get("location")
    place_text = ""
    if isinstance(location, dict):
        for field, attr in (("placeName", "location"), ("localityName", "city"),
                            ("administrativeArea", "region"), ("country", "country")):
            v = location.get(field)
            if isinstance(v, str) and v.strip():
                attrs[attr] = v.strip()
        for field in ("latitude", "longitude"):
            v = location.get(field)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                attrs[field] = float(v)
        place_text = ", ".join(str(attrs[a]) for a in ("location", "city", "country") if a in attrs)
        if "location" not in attrs and "city" in attrs:
            attrs["location"] = attrs["city"]
    weather = rec.get("weather")
    if isinstance(weather, dict):
        cond = weather.get("conditionsDescription")
        if isinstance(cond, str) and cond:
            attrs["weather"] = cond
        temp = weather.get("temperatureCelsius")
        if isinstance(temp, (int, float)) and not isinstance(temp, bool):
            attrs["temperature_c"] = round(float(temp), 1)
    if not text:
        text = "Journal entry without text" + (f" at {place_text}" if place_text else "") + "."
    title = ""
    first = text.split("\n", 1)[0].strip()
    h = _HEADING.match(first)
    title = h.group(1).strip() if h else first
    if len(title) > 80:
        title = title[:77].rstrip() + "…"
    body = text
    if place_text and place_text not in body:
        body += f"\n\n(Written at {place_text}.)"
    rec_raw = {k: v for k, v in rec.items() if k != "richText"}
    raw = orjson.dumps(rec_raw, default=str).decode()
    event = Event(
        source="journal", kind="note", start=start, title=title or "Journal entry", text=body,
        attributes=attrs, tz_offset_min=offset_minutes(start, zone),
        key=f"dayone|{uuid}" if uuid else "", locator=loc,
        raw=raw if len(raw) <= _MAX_RAW else raw[:_MAX_RAW] + "…",
    )
    return event, problems


def read_dayone(entry: Entry) -> Iterator[Event | ImportIssue]:
    journal = re.sub(r"\.json$", "", entry.basename, flags=re.I) or "Journal"
    index = -1
    try:
        with entry.open() as f:
            for index, rec in enumerate(ijson.items(f, "entries.item", use_float=True)):
                loc = f"entry {index + 1}"
                if not isinstance(rec, dict):
                    yield ImportIssue(loc, f"expected an entry object, found {type(rec).__name__}")
                    continue
                if rec.get("uuid"):
                    loc = f"entry {index + 1} (uuid {rec['uuid']})"
                try:
                    event, problems = _dayone_event(rec, loc, journal, entry.context.home_tz)
                except (JournalFormatError, OverflowError) as exc:
                    yield ImportIssue(loc, str(exc))
                    continue
                yield from problems
                yield event
    except ijson.common.IncompleteJSONError as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else "unexpected end of file"
        yield ImportIssue(f"entry {index + 2}", f"the JSON is broken or truncated after entry {index + 1}: {msg}")
    except (ijson.common.JSONError, UnicodeDecodeError, ValueError) as exc:
        yield ImportIssue(f"entry {index + 2}", f"not valid JSON: {exc}")


IMPORTERS = (
    Importer(
        name="journal_daily_notes", title="Markdown daily notes", version="2", source="journal",
        recognize=_recognize_daily, read=read_daily_note,
        description="Obsidian/Logseq daily notes named YYYY-MM-DD.md or YYYY_MM_DD.md",
        ignores=("logseq.config.edn", "custom.css", "workspace.json", "workspace-mobile.json",
                 "appearance.json", "core-plugins.json", "community-plugins.json", "hotkeys.json"),
    ),
    Importer(
        name="journal_dayone", title="Day One journal (JSON export)", version="1", source="journal",
        recognize=_recognize_dayone, read=read_dayone,
        description="Day One export: Journal.json with entries[]",
    ),
)
