"""Garmin Connect activities from the account data export:
``DI_CONNECT/DI-Connect-Fitness/*_summarizedActivities.json``, shaped
``[{"summarizedActivitiesExport": [{...}, ...]}]`` (a bare array of activities is
accepted too).

Units, as in real exports and the public parsers that read them: timestamps and
durations in milliseconds, ``distance`` in centimetres (its splits say
``unitEnum: CENTIMETER``), ``hrTimeInZone_N`` in milliseconds. ``beginTimestamp`` is
UTC; ``startTimeLocal`` is the same instant written as local wall time, so their
difference is the local offset at the start — no home-zone guess needed. Attribute
names match the Strava importer so questions work across both. The FIT files in
``DI-Connect-Uploaded-Files`` and other export JSON are listed as ignored. This module
only parses; it never writes the store.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta

import orjson

from importers._json import iter_array
from importers._workout import workout_attributes
from importers.base import UTC, Entry, Event, Importer, ImportIssue, offset_minutes
from importers.strava import sport_of

_NAME = re.compile(r"^.*summarizedactivities.*\.json$", re.I)
_MAX_RAW = 4000
_CM_PER_KM = 100_000
# Sanity bound on ms timestamps: 1990..2100.
_MIN_MS, _MAX_MS = 631_152_000_000, 4_102_444_800_000


class GarminFormatError(ValueError):
    """A Garmin field that does not have the shape Garmin writes."""


def _recognize(entry: Entry) -> float:
    head = entry.head
    if b'"summarizedActivitiesExport"' in head:
        return 0.97
    named = bool(_NAME.match(entry.basename))
    if named and (b'"activityId"' in head or b'"beginTimestamp"' in head):
        return 0.9
    if named and not head.strip():
        return 0.55
    return 0.0


def _number(rec: dict, field: str) -> float | None:
    value = rec.get(field)
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise GarminFormatError(f"{field} is {value!r}, not a number")
    try:
        n = float(value)
    except (TypeError, ValueError):
        raise GarminFormatError(f"{field} is {value!r}, not a number") from None
    if n != n or n in (float("inf"), float("-inf")):
        raise GarminFormatError(f"{field} is not a finite number")
    return n


def _ms_time(rec: dict, field: str) -> float:
    n = _number(rec, field)
    if n is None:
        raise GarminFormatError(f"missing {field}")
    if not _MIN_MS <= n <= _MAX_MS:
        raise GarminFormatError(f"{field} {n:.0f} is not a millisecond timestamp between 1990 and 2100")
    return n


def local_offset_min(begin_ms: float, local_ms: float | None) -> int | None:
    """Offset from UTC and local wall-clock milliseconds, rounded to a quarter hour
    (real offsets are multiples of 15 min; the two stamps can differ by a second)."""
    if local_ms is None:
        return None
    minutes = (local_ms - begin_ms) / 60_000
    quarter = round(minutes / 15) * 15
    if abs(quarter) > 14 * 60:
        return None
    return int(quarter)


def _activity_event(rec: dict, loc: str, zone) -> Event:
    begin_ms = _ms_time(rec, "beginTimestamp") if rec.get("beginTimestamp") is not None else None
    local_ms = _number(rec, "startTimeLocal")
    if begin_ms is None:
        gmt = _number(rec, "startTimeGmt")
        if gmt is None:
            raise GarminFormatError("missing beginTimestamp (and startTimeGmt)")
        begin_ms = _ms_time(rec, "startTimeGmt")
    start = datetime.fromtimestamp(begin_ms / 1000, tz=UTC)
    offset = local_offset_min(begin_ms, local_ms)
    if offset is None:
        offset = offset_minutes(start, zone)
    activity_id = rec.get("activityId")
    activity = str(rec.get("activityType") or rec.get("sportType") or "activity")
    if isinstance(rec.get("activityType"), dict):  # Connect API shape: {"typeKey": ...}
        activity = str(rec["activityType"].get("typeKey") or "activity")
    name = rec.get("name")
    name = str(name).strip() if name not in (None, "") else ""
    attrs: dict[str, object] = {"activity": activity, "sport": sport_of(activity)}
    if activity_id is not None:
        attrs["activity_id"] = str(activity_id)
    if name:
        attrs["name"] = name
    if rec.get("sportType"):
        attrs["sport_type"] = str(rec["sportType"])
    duration_ms = _number(rec, "duration")
    elapsed_ms = _number(rec, "elapsedDuration")
    moving_ms = _number(rec, "movingDuration")
    distance_cm = _number(rec, "distance")
    calories = _number(rec, "calories")
    avg_hr = _number(rec, "avgHr")
    max_hr = _number(rec, "maxHr")
    elevation_cm = _number(rec, "elevationGain")
    active_ms = moving_ms if moving_ms is not None else duration_ms
    total_ms = elapsed_ms if elapsed_ms is not None else duration_ms
    attrs.update(workout_attributes(
        distance_km=None if distance_cm is None else distance_cm / _CM_PER_KM,
        moving_min=None if active_ms is None else active_ms / 60_000,
        elapsed_min=None if total_ms is None else total_ms / 60_000,
        avg_hr=avg_hr, max_hr=max_hr, calories=calories,
        elevation_m=None if elevation_cm is None else elevation_cm / 100))
    for n in range(8):
        z = _number(rec, f"hrTimeInZone_{n}")
        if z is not None:
            attrs[f"hr_zone_{n}_min"] = round(z / 60_000, 2)
    for field, attr in (("locationName", "location"), ("deviceId", "device_id")):
        if rec.get(field) not in (None, ""):
            attrs[attr] = str(rec[field])
    if rec.get("manualActivity") is True:
        attrs["manual"] = True
    end = start + timedelta(milliseconds=total_ms) if total_ms and total_ms > 0 else None
    facts = []
    if distance_cm is not None:
        facts.append(f"{distance_cm / _CM_PER_KM:.2f} km")
    if active_ms is not None:
        facts.append(f"in {active_ms / 60_000:.0f} min")
    label = activity.replace("_", " ")
    text = f"{label[:1].upper()}{label[1:]} workout on Garmin" + (f" \"{name}\"" if name else "")
    if facts:
        text += ": " + " ".join(facts)
    extra = []
    if avg_hr is not None:
        extra.append(f"average heart rate {avg_hr:.0f} bpm")
    if max_hr is not None:
        extra.append(f"max heart rate {max_hr:.0f} bpm")
    if calories is not None:
        extra.append(f"{calories:.0f} kcal")
    if attrs.get("location"):
        extra.append(f"at {attrs['location']}")
    if extra:
        text += ", " + ", ".join(extra)
    raw = orjson.dumps(rec, default=str).decode()
    return Event(
        source="garmin", kind="workout", start=start, end=end, title=name or activity, text=text + ".",
        attributes=attrs, tz_offset_min=offset,
        key=str(activity_id) if activity_id is not None else "", locator=loc,
        raw=raw if len(raw) <= _MAX_RAW else raw[:_MAX_RAW] + "…",
    )


def _items(entry: Entry) -> Iterator[tuple[str, object] | ImportIssue]:
    """Activities with a locator, from the wrapped shape or a bare array."""
    wrapped = b'"summarizedActivitiesExport"' in entry.head or not (b'"activityId"' in entry.head
                                                                     or b'"beginTimestamp"' in entry.head)
    prefix = "item.summarizedActivitiesExport.item" if wrapped else "item"
    with entry.open() as f:
        for item in iter_array(f, prefix, reopen=entry.open):
            if isinstance(item, ImportIssue):  # the array broke (or a warning): say it of activities
                yield ImportIssue(item.locator.replace("item", "activity", 1),
                                  item.reason.replace(" items", " activities"), item.kept)
                return
            index, rec = item
            yield f"activity {index + 1}", rec


def read_activities(entry: Entry) -> Iterator[Event | ImportIssue]:
    zone = entry.context.home_tz
    for item in _items(entry):
        if isinstance(item, ImportIssue):
            yield item
            return
        loc, rec = item
        if not isinstance(rec, dict):
            yield ImportIssue(loc, f"expected an activity object, found {type(rec).__name__}")
            continue
        if rec.get("activityId") is not None:
            loc = f"{loc} (activityId {rec['activityId']})"
        try:
            yield _activity_event(rec, loc, zone)
        except (GarminFormatError, OverflowError, OSError) as exc:
            yield ImportIssue(loc, str(exc))


IMPORTERS = (
    Importer(
        name="garmin_activities", title="Garmin Connect activities", version="1", source="garmin",
        recognize=_recognize, read=read_activities,
        description="DI_CONNECT/DI-Connect-Fitness/*_summarizedActivities.json",
        ignores=("*_personalRecord.json", "*_workout.json", "*_workouts.json", "*_gear.json",
                 "*_courses.json", "*_goals.json", "*_trainingPlan*.json", "*_user_profile.json",
                 "*_userSettings.json", "*_UDSFile_*.json", "*sleepData.json", "*_healthStatusData.json",
                 "*_MetricsAcuteTrainingLoad*.json", "*_fitnessAgeData.json", "*_hydration*.json",
                 "UploadedFiles_*.zip", "*_[0-9]*.fit", "customer_data.json",
                 "*_summarizedActivities_DELETED.json"),
    ),
)
