"""Netflix viewing history: the account-data ``ViewingActivity.csv`` (one row per
playback, UTC start times, durations, devices, trailers) and the quick
``NetflixViewingHistory.csv`` download (title and a date in the account's locale).

Netflix gives no local offset, so the user's home zone is applied per timestamp.
Rows Netflix marks with a Supplemental Video Type (trailers, hooks, recaps) are kept
but made a ``trailer`` event: they are autoplayed previews, not viewing, and must
never be counted as watching. This module only parses; it never writes the store.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta

import orjson

from importers._csv import csv_rows
from importers.base import UTC, Entry, Event, Importer, ImportIssue, offset_minutes

_ACTIVITY_NAME = re.compile(r"^viewingactivity.*\.csv$", re.I)
_HISTORY_NAME = re.compile(r"^netflixviewinghistory.*\.csv$", re.I)
_ACTIVITY_REQUIRED = ("Profile Name", "Start Time", "Duration", "Title")
# The quick download is English-headed, but localized headers have been seen in the wild.
_HISTORY_HEADERS = {("title", "date"), ("titel", "datum"), ("titre", "date"), ("título", "fecha"),
                    ("titolo", "data")}

# Words Netflix (and its localized catalogues) put in the season segment of a title.
_SEASON_WORDS = (
    r"season|series|part|volume|vol\.|book|chapter|collection|limited series|miniseries|"
    r"staffel|teil|saison|temporada|stagione|seizoen|sezon|säsong|sæson|sesong|kausi|"
    r"シーズン|시즌"
)
# "Season 2", "Limited Series", "Staffel 1" or a trailing form such as "1. Staffel".
_SEASON_SEGMENT = re.compile(rf"^(?:{_SEASON_WORDS})\b.*$|^.*\b(?:{_SEASON_WORDS})$", re.I)
_NUMBER = re.compile(r"\d+")
_HMS = re.compile(r"^\s*(\d+):(\d{1,2}):(\d{1,2})\s*$")
_COUNTRY = re.compile(r"^\s*([A-Z]{2})\s*\((.+)\)\s*$")
_MAX_RAW = 2000


class NetflixFormatError(ValueError):
    """A Netflix field that does not have the shape Netflix writes."""


# ---- recognition -------------------------------------------------------------------

def _first_line(head: bytes) -> str:
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    return text.split("\n", 1)[0].strip().lower()


def _recognize_activity(entry: Entry) -> float:
    line = _first_line(entry.head)
    has_header = all(col.lower() in line for col in _ACTIVITY_REQUIRED)
    if has_header:
        return 0.95
    if _ACTIVITY_NAME.match(entry.basename) and not entry.head.strip():
        return 0.6
    return 0.0


def _recognize_history(entry: Entry) -> float:
    line = _first_line(entry.head)
    cells = tuple(c.strip().strip('"').strip() for c in line.split(","))
    if cells in _HISTORY_HEADERS:
        return 0.95 if _HISTORY_NAME.match(entry.basename) else 0.6
    return 0.0


# ---- shared parsing ----------------------------------------------------------------

def parse_hms(value: str, field: str) -> int:
    """Seconds in an ``H:MM:SS`` value."""
    m = _HMS.match(value or "")
    if not m:
        raise NetflixFormatError(f"{field} {value!r} is not H:MM:SS")
    h, mi, s = (int(g) for g in m.groups())
    return h * 3600 + mi * 60 + s


def split_title(title: str) -> dict[str, object] | None:
    """Show/season/episode of an episode title ("Show: Season 2: Episode name"), or
    None for a film. Only the first segment that names a season splits the title, so
    colons inside show or episode names survive."""
    parts = [p.strip() for p in title.split(": ")]
    for i in range(1, len(parts) - 1):
        if _SEASON_SEGMENT.match(parts[i]):
            show = ": ".join(parts[:i])
            season = parts[i]
            episode = ": ".join(parts[i + 1:])
            out: dict[str, object] = {"show": show, "season": season, "episode": episode}
            num = _NUMBER.search(season)
            if num:
                out["season_number"] = int(num.group())
            return out
    return None


def _minutes_text(seconds: int) -> str:
    if seconds < 60:
        return f"{seconds} s"
    m = round(seconds / 60)
    if m < 60:
        return f"{m} min"
    h, m = divmod(m, 60)
    return f"{h} h {m} min"


def _raw(record: dict) -> str:
    text = orjson.dumps(record).decode()
    return text if len(text) <= _MAX_RAW else text[:_MAX_RAW] + "…"


# ---- ViewingActivity.csv -----------------------------------------------------------

def _parse_start(value: str) -> datetime:
    value = value.strip()
    try:
        return datetime.strptime(value, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        raise NetflixFormatError(f"Start Time {value!r} is not a date and time") from None
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt


def _activity_event(rec: dict[str, str], loc: str, zone) -> Event:
    title = rec.get("Title", "").strip()
    if not title:
        raise NetflixFormatError("the Title is empty")
    profile = rec.get("Profile Name", "").strip()
    start_raw = rec.get("Start Time", "")
    start = _parse_start(start_raw)
    seconds = parse_hms(rec.get("Duration", ""), "Duration")
    end = start + timedelta(seconds=seconds)
    attrs: dict[str, object] = {"duration_s": seconds, "duration_min": round(seconds / 60, 2)}
    if profile:
        attrs["profile"] = profile
    device = rec.get("Device Type", "").strip()
    if device:
        attrs["device"] = device
    country = rec.get("Country", "").strip()
    if country:
        m = _COUNTRY.match(country)
        if m:
            attrs["country_code"], attrs["country"] = m.group(1), m.group(2).strip()
        else:
            attrs["country"] = country
    flags = rec.get("Attributes", "").strip()
    if flags:
        attrs["netflix_attributes"] = flags
        if "autoplayed" in flags.lower():
            attrs["autoplayed"] = True
    bookmark = rec.get("Bookmark", "").strip()
    if bookmark and _HMS.match(bookmark):
        attrs["bookmark_s"] = parse_hms(bookmark, "Bookmark")
    latest = rec.get("Latest Bookmark", "").strip()
    if latest:
        attrs["latest_view"] = latest.lower() != "not latest view"

    supplemental = rec.get("Supplemental Video Type", "").strip()
    parts = split_title(title)
    where = f" on {device}" if device else ""
    who = f" (profile {profile})" if profile else ""
    if supplemental:
        kind = "trailer"
        attrs["supplemental"] = True
        attrs["supplemental_type"] = supplemental.lower()
        attrs["title"] = title
        if parts:
            attrs.update(parts)
        text = (f"Netflix played a {supplemental.lower().replace('_', ' ')} for {title}{where}{who} "
                f"for {_minutes_text(seconds)}; this is a preview, not viewing")
    elif parts:
        kind = "episode_stream"
        attrs.update(parts)
        text = (f"Watched {parts['show']}, {parts['season']}, episode \"{parts['episode']}\" "
                f"on Netflix{where}{who} for {_minutes_text(seconds)}")
    else:
        kind = "movie_stream"
        attrs["movie"] = title
        text = f"Watched the film {title} on Netflix{where}{who} for {_minutes_text(seconds)}"
    return Event(
        source="netflix", kind=kind, start=start, end=end, title=title, text=text + ".",
        attributes=attrs, tz_offset_min=offset_minutes(start, zone),
        key=f"{profile}|{start_raw.strip()}|{title}", locator=loc, raw=_raw(rec),
    )


def read_activity(entry: Entry) -> Iterator[Event | ImportIssue]:
    zone = entry.context.home_tz
    header: list[str] | None = None
    for item in csv_rows(entry):
        if isinstance(item, ImportIssue):
            yield item
            continue
        line, row = item
        if header is None:
            header = [c.strip() for c in row]
            missing = [c for c in _ACTIVITY_REQUIRED if c not in header]
            if missing:
                yield ImportIssue(f"line {line}", "not a Netflix ViewingActivity.csv header: missing "
                                  + ", ".join(missing))
                return
            continue
        loc = f"line {line}"
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(header):
            yield ImportIssue(loc, f"the row has {len(row)} fields, the header {len(header)} "
                                   "(truncated or malformed row)")
            continue
        rec = dict(zip(header, row))
        try:
            yield _activity_event(rec, loc, zone)
        except NetflixFormatError as exc:
            yield ImportIssue(loc, str(exc))


# ---- NetflixViewingHistory.csv -----------------------------------------------------

_DATE_PARTS = re.compile(r"^\s*(\d{1,4})\s*([./\-])\s*(\d{1,2})\s*[./\-]\s*(\d{1,4})\s*\.?\s*$")


def infer_day_first(values: Iterator[str]) -> bool | None:
    """Whether ``a/b/c`` dates in a column put the day first: True when some first field
    exceeds 12, False when some second field does, None when the column never says."""
    day_first = month_first = False
    for value in values:
        m = _DATE_PARTS.match(value)
        if not m or len(m.group(1)) == 4:
            continue
        a, b = int(m.group(1)), int(m.group(3))
        if a > 12 >= b:
            day_first = True
        elif b > 12 >= a:
            month_first = True
        if day_first and month_first:
            return None  # contradictory column: decide per row by separator
    if day_first:
        return True
    if month_first:
        return False
    return None


def parse_history_date(value: str, day_first: bool | None) -> date:
    m = _DATE_PARTS.match(value or "")
    if not m:
        raise NetflixFormatError(f"Date {value!r} is not a date")
    a, sep, b, c = m.group(1), m.group(2), m.group(3), m.group(4)
    try:
        if len(a) == 4:  # ISO-like year first
            return date(int(a), int(b), int(c))
        year = int(c)
        if len(c) <= 2:
            year += 2000 if year < 70 else 1900
        if day_first is None:
            # Netflix's US locale writes M/D/YY; dotted and dashed dates are day first.
            day_first = sep != "/" or len(c) == 4
        day, month = (int(a), int(b)) if day_first else (int(b), int(a))
        return date(year, month, day)
    except ValueError as exc:
        raise NetflixFormatError(f"Date {value!r} is not a valid date: {exc}") from None


def _history_dates(entry: Entry) -> Iterator[str]:
    header_seen = False
    for item in csv_rows(entry):
        if isinstance(item, ImportIssue):
            continue
        if not header_seen:
            header_seen = True
            continue
        row = item[1]
        if len(row) >= 2:
            yield row[1]


def read_history(entry: Entry) -> Iterator[Event | ImportIssue]:
    zone = entry.context.home_tz
    # One streaming pass over the date column first: a single "23/01/2021" settles
    # the order for every ambiguous "01/02/2021" in the file.
    day_first = infer_day_first(_history_dates(entry))
    header_seen = False
    for item in csv_rows(entry):
        if isinstance(item, ImportIssue):
            yield item
            continue
        line, row = item
        if not header_seen:
            header_seen = True
            cells = tuple(c.strip().lower() for c in row)
            if cells not in _HISTORY_HEADERS:
                yield ImportIssue(f"line {line}", "not a NetflixViewingHistory.csv header (Title, Date)")
                return
            continue
        loc = f"line {line}"
        if not any(c.strip() for c in row):
            continue
        if len(row) != 2:
            yield ImportIssue(loc, f"the row has {len(row)} fields, expected 2 (Title, Date)")
            continue
        title, date_raw = row[0].strip(), row[1].strip()
        if not title:
            yield ImportIssue(loc, "the Title is empty")
            continue
        try:
            day = parse_history_date(date_raw, day_first)
        except NetflixFormatError as exc:
            yield ImportIssue(loc, str(exc))
            continue
        start = datetime.combine(day, time(0, 0), tzinfo=zone)
        # normalise through UTC so a zone's fold/gap at midnight is resolved the same way
        start = start.astimezone(UTC).astimezone(zone)
        attrs: dict[str, object] = {"date": day.isoformat(), "date_only": True}
        parts = split_title(title)
        when = f"{day:%A} {day.day} {day:%B %Y}"
        if parts:
            kind = "episode_stream"
            attrs.update(parts)
            text = f"Watched {parts['show']}, {parts['season']}, episode \"{parts['episode']}\" on Netflix on {when}."
        else:
            kind = "movie_stream"
            attrs["movie"] = title
            text = f"Watched {title} on Netflix on {when}."
        yield Event(
            source="netflix", kind=kind, start=start, title=title, text=text, attributes=attrs,
            tz_offset_min=offset_minutes(start, zone), key=f"history|{title}|{day.isoformat()}",
            locator=loc, raw=_raw({"Title": row[0], "Date": row[1]}),
        )


IMPORTERS = (
    Importer(
        name="netflix_viewing_activity", title="Netflix viewing activity", version="1",
        source="netflix", recognize=_recognize_activity, read=read_activity,
        description="CONTENT_INTERACTION/ViewingActivity.csv from the Netflix account data download",
        ignores=("ViewingActivity.xlsx", "Ratings.csv", "MyList.csv", "SearchHistory.csv",
                 "PlaybackRelatedEvents.csv", "InteractiveTitles.csv", "IndicatedPreferences.csv",
                 "BillingHistory.csv", "Devices.csv", "IpAddressesLogin.csv",
                 "IpAddressesAccountCreation.txt", "IpAddressesStreaming.csv", "Profiles.csv",
                 "AvatarHistory.csv", "SubscriptionHistory.csv", "AccountDetails.csv",
                 "MessagesSentByNetflix.csv", "CSContact.txt", "ChatTranscripts.txt",
                 "Cover sheet.pdf", "ClickstreamActions.csv", "GameplaySessions.csv"),
    ),
    Importer(
        name="netflix_viewing_history", title="Netflix viewing history (quick download)", version="1",
        source="netflix", recognize=_recognize_history, read=read_history,
        description="NetflixViewingHistory.csv: Title and a locale-dependent Date",
    ),
)
