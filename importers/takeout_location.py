"""Google location history as place visits and trips, from its three current shapes:

* Takeout ``Semantic Location History/YYYY/YYYY_MONTH.json``:
  ``timelineObjects[{placeVisit}|{activitySegment}]``, times in UTC (ISO or, before 2022,
  ``startTimestampMs``), coordinates as ``latitudeE7``;
* the Android on-device export ``Timeline.json``: ``semanticSegments[{startTime, endTime,
  startTimeTimezoneUtcOffsetMinutes, visit|activity|timelinePath}]`` (plus ``rawSignals``
  and ``userLocationProfile``, not used), coordinates as ``"52.5163800°, 13.3777000°"``;
* the iOS export ``location-history.json``: a top-level array of the same segments with
  every value a string (``"geo:52.516380,13.377700"``, ``"1234.5"``).

A visit becomes ``place_visit`` (place, address, lat/lng, semantic type, duration); an
activity segment becomes ``travel`` (activity, distance_km, start/end coordinates).
Path-only segments (``timelinePath``, ``timelineMemory``) are the track of a trip that has
its own activity segment, so they produce nothing.

Deliberately not imported: ``Records.json`` (older ``Location History.json``), the raw
fixes. They are one point every few seconds to minutes -- millions per year -- and the
semantic files above already turn them into the visits and trips a person asks about;
one event per point would drown every question, and a daily aggregate of raw points
adds nothing the visits do not say better. They are listed in ``ignores`` so the report
names them. ``Settings.json`` and ``Timeline Edits.json`` likewise.

Dedup keys (shared by all three shapes): place visits placeId + UTC start; trips
UTC start + UTC end + activity type. Local offset: the segment's own offset where the
format has one, else the user's home zone. This module must not load a whole file: it
streams with ijson.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import orjson

from importers._json import iter_objects
from importers.base import UTC, Entry, Event, Importer, ImportIssue, offset_minutes

log = logging.getLogger(__name__)

SOURCE = "takeout"
_RAW_LIMIT = 3000
# Location history began in the 2000s; anything far outside is a broken value, and
# would overflow when converted to UTC.
_MIN_YEAR, _MAX_YEAR = 1990, 2100
_FLOAT = r"[-+]?\d+(?:\.\d+)?"
_DEG_PAIR = re.compile(rf"^\s*(?:geo:)?\s*({_FLOAT})\s*°?\s*,\s*({_FLOAT})\s*°?\s*$")

# Google's activity types, in the words a person would use.
_ACTIVITY_WORDS = {
    "IN_PASSENGER_VEHICLE": "driving", "IN_VEHICLE": "driving", "IN_CAR": "driving",
    "DRIVING": "driving", "IN_TAXI": "taxi", "IN_BUS": "bus", "IN_SUBWAY": "subway",
    "IN_TRAIN": "train", "IN_TRAM": "tram", "IN_FERRY": "ferry", "FLYING": "flying",
    "IN_CABLECAR": "cable car", "IN_GONDOLA_LIFT": "gondola", "IN_FUNICULAR": "funicular",
    "WALKING": "walking", "ON_FOOT": "walking", "RUNNING": "running", "HIKING": "hiking",
    "CYCLING": "cycling", "ON_BICYCLE": "cycling", "MOTORCYCLING": "motorcycling",
    "SAILING": "sailing", "SKIING": "skiing", "BOATING": "boating", "KAYAKING": "kayaking",
    "ROWING": "rowing", "SWIMMING": "swimming", "HORSEBACK_RIDING": "horseback riding",
    "STILL": "still", "UNKNOWN_ACTIVITY_TYPE": "unknown",
}


class LocationRecordError(ValueError):
    """A segment that cannot become an event; the message says which field."""


def _head(entry: Entry) -> bytes:
    return entry.head.lstrip(b"\xef\xbb\xbf \t\r\n")


def _recognize_semantic(entry: Entry) -> float:
    head = _head(entry)
    return 0.95 if head.startswith(b"{") and b'"timelineObjects"' in head else 0.0


def _recognize_ondevice(entry: Entry) -> float:
    head = _head(entry)
    return 0.95 if head.startswith(b"{") and b'"semanticSegments"' in head else 0.0


def _recognize_ios(entry: Entry) -> float:
    head = _head(entry)
    if not head.startswith(b"["):
        return 0.0
    keys = (b'"visit"', b'"activity"', b'"timelinePath"', b'"timelineMemory"')
    if b'"startTime"' in head and b'"endTime"' in head and (b'"geo:' in head or any(k in head for k in keys)):
        return 0.9
    if entry.basename.lower() == "location-history.json" and (head.rstrip() in (b"[", b"[]") or b'"startTime"' in head):
        return 0.7
    return 0.0


# ---- field parsing ---------------------------------------------------------------------------

def parse_time(value) -> datetime:
    """ISO time with Z or an offset, nanoseconds trimmed; or epoch milliseconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) or \
            isinstance(value, str) and value.strip().isdigit():
        try:
            dt = datetime.fromtimestamp(int(value) / 1000, UTC)
        except (OverflowError, OSError, ValueError):
            raise LocationRecordError(f"time out of range: {value!r}") from None
        if not _MIN_YEAR <= dt.year <= _MAX_YEAR:
            raise LocationRecordError(f"implausible date {value!r}")
        return dt
    if not isinstance(value, str) or not value.strip():
        raise LocationRecordError(f"missing time ({value!r})")
    text = value.strip()
    try:
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:  # maybe nanoseconds, which Python does not parse: trim to micro
            dt = datetime.fromisoformat(re.sub(r"(\.\d{6})\d+", r"\1", text))
    except ValueError:
        raise LocationRecordError(f"not an ISO time: {value!r}") from None
    dt = dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt
    if not _MIN_YEAR <= dt.year <= _MAX_YEAR:
        raise LocationRecordError(f"implausible date {value!r}")
    return dt


def _e7(value) -> float | None:
    try:
        n = int(value)
    except (TypeError, ValueError):
        return None
    # Some exports wrote negative E7 values as unsigned 32-bit integers.
    if n > 1_800_000_000:
        n -= 1 << 32
    return n / 1e7


def _latlng_text(value) -> tuple[float, float] | None:
    if isinstance(value, dict):
        value = value.get("latLng")
    if not isinstance(value, str):
        return None
    m = _DEG_PAIR.match(value)
    if not m:
        return None
    lat, lng = float(m.group(1)), float(m.group(2))
    return (lat, lng) if -90 <= lat <= 90 and -180 <= lng <= 180 else None


def _num(value) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if x == x and abs(x) != float("inf") else None


def _semantic_type(value) -> str:
    if not isinstance(value, str) or not value:
        return ""
    t = value.upper().removeprefix("TYPE_").removeprefix("INFERRED_")
    return "" if t in ("UNKNOWN", "NONE") else t.lower().replace("_", " ")


def activity_word(kind: str) -> str:
    key = kind.strip().upper().replace(" ", "_")
    return _ACTIVITY_WORDS.get(key, key.lower().replace("_", " ") or "unknown")


def _fmt_min(minutes: float) -> str:
    h, m = divmod(int(round(minutes)), 60)
    return f"{h} h {m} min" if h else f"{m} min"


def _raw(rec) -> str:
    text = orjson.dumps(rec).decode()
    return text if len(text) <= _RAW_LIMIT else text[:_RAW_LIMIT] + "…"


def _key_time(dt: datetime) -> str:
    return dt.astimezone(UTC).replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def _check_span(start: datetime, end: datetime) -> None:
    if end < start:
        raise LocationRecordError(f"ends before it starts ({start.isoformat()} > {end.isoformat()})")


def _visit_event(*, start: datetime, end: datetime, tz_offset: int, place_id: str, name: str,
                 address: str, lat: float | None, lng: float | None, semantic: str,
                 loc: str, raw: str, confidence=None) -> Event:
    _check_span(start, end)
    minutes = (end - start).total_seconds() / 60
    label = name or (semantic.capitalize() if semantic else "") or address or (
        f"{lat:.5f}, {lng:.5f}" if lat is not None and lng is not None else "an unnamed place")
    attrs: dict = {"place": name or label, "duration_min": round(minutes, 1)}
    if address:
        attrs["address"] = address
    if lat is not None and lng is not None:
        attrs.update(lat=round(lat, 7), lng=round(lng, 7))
    if semantic:
        attrs["semantic_type"] = semantic
    if place_id:
        attrs["place_id"] = place_id
    if confidence is not None:
        attrs["confidence"] = confidence
    text = f"Was at {label}"
    if address and address != label:
        text += f" ({address})"
    if semantic and semantic.capitalize() != label:
        text += f", which is {semantic}"
    text += f" for {_fmt_min(minutes)}."
    return Event(source=SOURCE, kind="place_visit", start=start, end=end, title=label, text=text,
                 attributes=attrs, tz_offset_min=tz_offset,
                 key=f"visit|{place_id or f'{lat},{lng}'}|{_key_time(start)}", locator=loc, raw=raw)


def _travel_event(*, start: datetime, end: datetime, tz_offset: int, kind: str,
                  distance_m: float | None, start_ll, end_ll, loc: str, raw: str,
                  start_place: str = "", end_place: str = "") -> Event:
    _check_span(start, end)
    minutes = (end - start).total_seconds() / 60
    word = activity_word(kind or "UNKNOWN_ACTIVITY_TYPE")
    type_code = (kind or "UNKNOWN_ACTIVITY_TYPE").strip().upper().replace(" ", "_")
    attrs: dict = {"activity": word, "activity_type": type_code, "duration_min": round(minutes, 1)}
    if distance_m is not None:
        attrs["distance_km"] = round(distance_m / 1000, 2)
    if start_ll:
        attrs.update(start_lat=round(start_ll[0], 7), start_lng=round(start_ll[1], 7))
    if end_ll:
        attrs.update(end_lat=round(end_ll[0], 7), end_lng=round(end_ll[1], 7))
    if start_place:
        attrs["start_place"] = start_place
    if end_place:
        attrs["end_place"] = end_place
    text = f"Travelled by {word}" if word not in ("walking", "running", "cycling", "hiking") else word.capitalize()
    if "distance_km" in attrs:
        text += f" {attrs['distance_km']:g} km"
    if start_place:
        text += f" from {start_place}"
    if end_place:
        text += f" to {end_place}"
    text += f" in {_fmt_min(minutes)}."
    title = word.capitalize() + (f", {attrs['distance_km']:.1f} km" if "distance_km" in attrs else "")
    return Event(source=SOURCE, kind="travel", start=start, end=end, title=title, text=text,
                 attributes=attrs, tz_offset_min=tz_offset,
                 key=f"travel|{_key_time(start)}|{_key_time(end)}|{type_code}", locator=loc, raw=raw)


# ---- Semantic Location History -------------------------------------------------------------

def _duration(obj: dict) -> tuple[datetime, datetime]:
    dur = obj.get("duration")
    if not isinstance(dur, dict):
        raise LocationRecordError("missing 'duration'")
    start = dur.get("startTimestamp", dur.get("startTimestampMs"))
    end = dur.get("endTimestamp", dur.get("endTimestampMs"))
    if start is None or end is None:
        raise LocationRecordError("'duration' has no start or end timestamp")
    return parse_time(start), parse_time(end)


def _semantic_item(rec: dict, loc: str, zone) -> Event | ImportIssue | None:
    if "placeVisit" in rec and isinstance(rec["placeVisit"], dict):
        pv = rec["placeVisit"]
        start, end = _duration(pv)
        where = pv.get("location") if isinstance(pv.get("location"), dict) else {}
        lat, lng = _e7(where.get("latitudeE7")), _e7(where.get("longitudeE7"))
        if lat is None or lng is None:
            lat, lng = _e7(pv.get("centerLatE7")), _e7(pv.get("centerLngE7"))
        return _visit_event(
            start=start, end=end, tz_offset=offset_minutes(start, zone),
            place_id=str(where.get("placeId") or ""), name=str(where.get("name") or ""),
            address=str(where.get("address") or "").replace("\n", ", "), lat=lat, lng=lng,
            semantic=_semantic_type(where.get("semanticType")),
            confidence=pv.get("placeConfidence"), loc=loc, raw=_raw(_without_paths(pv)))
    if "activitySegment" in rec and isinstance(rec["activitySegment"], dict):
        seg = rec["activitySegment"]
        start, end = _duration(seg)
        sl = seg.get("startLocation") if isinstance(seg.get("startLocation"), dict) else {}
        el = seg.get("endLocation") if isinstance(seg.get("endLocation"), dict) else {}

        def ll(d):
            a, b = _e7(d.get("latitudeE7")), _e7(d.get("longitudeE7"))
            return (a, b) if a is not None and b is not None else None
        kind = seg.get("activityType")
        if not isinstance(kind, str):
            acts = seg.get("activities")
            kind = acts[0].get("activityType") if isinstance(acts, list) and acts and isinstance(acts[0], dict) else ""
        distance = _num(seg.get("distance"))
        if distance is None and isinstance(seg.get("waypointPath"), dict):
            distance = _num(seg["waypointPath"].get("distanceMeters"))
        return _travel_event(
            start=start, end=end, tz_offset=offset_minutes(start, zone), kind=str(kind or ""),
            distance_m=distance, start_ll=ll(sl), end_ll=ll(el), loc=loc, raw=_raw(_without_paths(seg)),
            start_place=str(sl.get("name") or ""), end_place=str(el.get("name") or ""))
    raise LocationRecordError("neither 'placeVisit' nor 'activitySegment'")


def _without_paths(obj: dict) -> dict:
    # The raw text stays small: paths and candidate lists are long and say nothing new.
    drop = {"waypointPath", "simplifiedRawPath", "transitPath", "otherCandidateLocations",
            "childVisits", "activities", "timelinePath"}
    return {k: v for k, v in obj.items() if k not in drop}


def read_semantic(entry: Entry) -> Iterator[Event | ImportIssue]:
    yield from _read_array(entry, "timelineObjects.item", "timelineObjects",
                           lambda rec, loc: _semantic_item(rec, loc, entry.context.home_tz))


# ---- on-device Timeline (Android) and iOS ---------------------------------------------------

def _segment(rec: dict, loc: str, zone) -> Event | ImportIssue | None:
    if not any(k in rec for k in ("visit", "activity")):
        if any(k in rec for k in ("timelinePath", "timelineMemory")):
            return None  # a trip's track or a trip summary; the activity segment says it
        raise LocationRecordError("neither 'visit' nor 'activity'")
    start, end = parse_time(rec.get("startTime")), parse_time(rec.get("endTime"))
    off = rec.get("startTimeTimezoneUtcOffsetMinutes")
    if _num(off) is not None:
        tz_offset = int(_num(off))
        start = start.astimezone(_fixed(tz_offset))
        end_off = _num(rec.get("endTimeTimezoneUtcOffsetMinutes"))
        end = end.astimezone(_fixed(tz_offset if end_off is None else int(end_off)))
    elif isinstance(rec.get("startTime"), str) and not rec["startTime"].strip().endswith("Z") \
            and re.search(r"[+-]\d{2}:?\d{2}$", rec["startTime"].strip()):
        tz_offset = offset_minutes(start)
    else:
        tz_offset = offset_minutes(start, zone)
    raw = _raw(_without_paths(rec))
    if isinstance(rec.get("visit"), dict):
        top = rec["visit"].get("topCandidate")
        top = top if isinstance(top, dict) else {}
        where = _latlng_text(top.get("placeLocation"))
        return _visit_event(
            start=start, end=end, tz_offset=tz_offset,
            place_id=str(top.get("placeId") or top.get("placeID") or ""), name="", address="",
            lat=where[0] if where else None, lng=where[1] if where else None,
            semantic=_semantic_type(top.get("semanticType")),
            confidence=_num(top.get("probability")), loc=loc, raw=raw)
    act = rec.get("activity")
    if not isinstance(act, dict):
        raise LocationRecordError("'activity' is not an object")
    top = act.get("topCandidate") if isinstance(act.get("topCandidate"), dict) else {}
    return _travel_event(
        start=start, end=end, tz_offset=tz_offset, kind=str(top.get("type") or ""),
        distance_m=_num(act.get("distanceMeters")), start_ll=_latlng_text(act.get("start")),
        end_ll=_latlng_text(act.get("end")), loc=loc, raw=raw)


def _fixed(minutes: int) -> timezone:
    try:
        return timezone(timedelta(minutes=minutes))
    except ValueError:
        raise LocationRecordError(f"impossible UTC offset {minutes} min") from None


def read_ondevice(entry: Entry) -> Iterator[Event | ImportIssue]:
    yield from _read_array(entry, "semanticSegments.item", "semanticSegments",
                           lambda rec, loc: _segment(rec, loc, entry.context.home_tz))


def read_ios(entry: Entry) -> Iterator[Event | ImportIssue]:
    yield from _read_array(entry, "item", "",
                           lambda rec, loc: _segment(rec, loc, entry.context.home_tz))


def _read_array(entry: Entry, prefix: str, label: str, convert) -> Iterator[Event | ImportIssue]:
    with entry.open() as f:
        for item in iter_objects(f, prefix, label=label, reopen=entry.open):
            if isinstance(item, ImportIssue):
                yield item
                continue
            loc, rec = item
            try:
                ev = convert(rec, loc)
            except (LocationRecordError, OverflowError) as exc:
                yield ImportIssue(loc, str(exc))
                continue
            if ev is not None:
                yield ev


IMPORTERS = (
    Importer(
        name="takeout_semantic_location", title="Google Takeout Semantic Location History",
        version="1", source=SOURCE, recognize=_recognize_semantic, read=read_semantic,
        description="Semantic Location History/YYYY/YYYY_MONTH.json",
        ignores=("Records.json", "Location History.json", "Settings.json", "Timeline Edits.json",
                 "Encrypted Backups.txt", "Standortverlauf.json", "Historique des positions.json"),
    ),
    Importer(
        name="google_timeline_android", title="Google Maps Timeline (Android on-device export)",
        version="1", source=SOURCE, recognize=_recognize_ondevice, read=read_ondevice,
        description="Timeline.json exported from Google Maps on Android",
    ),
    Importer(
        name="google_timeline_ios", title="Google Maps Timeline (iOS export)",
        version="1", source=SOURCE, recognize=_recognize_ios, read=read_ios,
        description="location-history.json exported from Google Maps on iOS",
    ),
)
