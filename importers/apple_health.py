"""Apple Health: the ``export.xml`` the Health app writes (``apple_health_export/export.xml``
in the zip the phone produces; localized exports name it ``Export.xml``, ``exportar.xml``...,
so it is recognized by its ``<HealthData`` root, not by its name).

What it produces:

* one ``workout`` event per ``<Workout>``: activity, duration, distance, calories and
  heart rate, from the iOS 16+ ``<WorkoutStatistics>`` children or else from the older
  ``totalDistance``/``totalEnergyBurned`` attributes, units converted to km and kcal;
* daily ``health_summary`` events per local day: steps, walking+running distance and
  heart rate (min/avg/max) -- never one event per sample;
* one ``health_summary`` per ``<ActivitySummary>`` (the Activity rings of a day);
* one ``sleep`` event per night.

Rules a reader of the numbers must know:

* A local day is the date in the record's own ``startDate`` ("YYYY-MM-DD HH:MM:SS +HHMM");
  a sample that crosses midnight counts for the day it started.
* Steps and distance are recorded by the iPhone *and* the Watch for the same walk. The
  Health app de-duplicates by source priority per interval, which the export does not
  contain. We sum each source's samples per day and take the **largest source total** as
  the day's figure (the other sources are listed in ``by_source``). This never counts a
  step twice; it can undercount a day where one device was left at home for part of it.
* Sleep samples belong to the night of the local date of ``start - 12 h`` (a sample
  starting between noon on day D and noon on D+1 is the night of D). Per night and
  source, asleep stages and in-bed time are summed; the night's asleep time is the
  largest source total, for the same reason as steps.
* Only complete days are summarised. The store keeps the first event of a key, so a
  daily total must be final when it is written: the export date itself (the export was
  taken during it) and a night still running at export time are left out -- with an
  issue saying so -- and the next export brings them. For the same reason a file that
  breaks off (truncated, malformed) yields its workouts and Activity summaries but no
  daily totals, only an issue: re-importing the repaired file then gives the right ones.

Memory: the file is streamed with ``iterparse`` and every top-level element is dropped
once handled; the only state kept is one small accumulator per (day, metric, source)
and per (night, source), so memory grows with the number of days, not of records.

This module must not read ``workout-routes/*.gpx``, ``export_cda.xml`` or the ECG CSVs
(they are listed in ``ignores``), and must not keep elements after handling them.
"""
from __future__ import annotations

import logging
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from xml.etree import ElementTree as ET

import orjson

from importers._utf8 import Utf8Repaired, not_utf8_warning
from importers.base import Entry, Event, Importer, ImportIssue, offset_minutes

log = logging.getLogger(__name__)

SOURCE = "health"
_RAW_LIMIT = 4000

_STEPS = "HKQuantityTypeIdentifierStepCount"
_DISTANCE = "HKQuantityTypeIdentifierDistanceWalkingRunning"
_HEART = "HKQuantityTypeIdentifierHeartRate"
_SLEEP = "HKCategoryTypeIdentifierSleepAnalysis"
_ACTIVE_ENERGY = "HKQuantityTypeIdentifierActiveEnergyBurned"
_DISTANCE_TYPES = {
    _DISTANCE, "HKQuantityTypeIdentifierDistanceCycling", "HKQuantityTypeIdentifierDistanceSwimming",
    "HKQuantityTypeIdentifierDistanceWheelchair", "HKQuantityTypeIdentifierDistanceDownhillSnowSports",
    "HKQuantityTypeIdentifierDistanceRowing", "HKQuantityTypeIdentifierDistancePaddleSports",
    "HKQuantityTypeIdentifierDistanceCrossCountrySkiing", "HKQuantityTypeIdentifierDistanceSkatingSports",
}

# Unit conversion factors to km / kcal / minutes. "Cal" is the food calorie (= kcal).
_KM = {"km": 1.0, "m": 0.001, "cm": 0.00001, "mi": 1.609344, "ft": 0.0003048, "yd": 0.0009144}
_KCAL = {"kcal": 1.0, "Cal": 1.0, "cal": 0.001, "kJ": 0.239005736, "J": 0.000239005736}
_MIN = {"min": 1.0, "s": 1 / 60, "sec": 1 / 60, "hr": 60.0, "h": 60.0, "ms": 1 / 60000}

_SLEEP_ASLEEP = {
    "HKCategoryValueSleepAnalysisAsleep": "asleep",
    "HKCategoryValueSleepAnalysisAsleepUnspecified": "asleep",
    "HKCategoryValueSleepAnalysisAsleepCore": "core",
    "HKCategoryValueSleepAnalysisAsleepDeep": "deep",
    "HKCategoryValueSleepAnalysisAsleepREM": "rem",
}
_SLEEP_IN_BED = "HKCategoryValueSleepAnalysisInBed"
_SLEEP_AWAKE = "HKCategoryValueSleepAnalysisAwake"

_DEVICE_NAME = re.compile(r"\bname:([^,>]+)")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# Wider than any real export; outside it a date is broken and would overflow in UTC.
_MIN_YEAR, _MAX_YEAR = 1900, 2100
_DATE_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})$")


class HealthDateError(ValueError):
    pass


def _recognize(entry: Entry) -> float:
    head = entry.head
    if b"<HealthData" in head or b"<!DOCTYPE HealthData" in head:
        return 0.97
    # A localized name with an XML head whose DOCTYPE pushed the root past the first KiB.
    if entry.basename.lower() in {"export.xml", "exportar.xml", "exporter.xml", "esporta.xml"} \
            and head.lstrip().startswith(b"<?xml") and b"HealthKit" in head:
        return 0.8
    return 0.0


def parse_date(value: str | None) -> datetime:
    """'2024-01-01 01:01:36 +0200' -> aware datetime in that offset."""
    m = _DATE_RE.match(value or "")
    if not m:
        raise HealthDateError(f"not a Health date: {value!r}")
    y, mo, d, h, mi, s, sign, oh, om = m.groups()
    if not _MIN_YEAR <= int(y) <= _MAX_YEAR:
        raise HealthDateError(f"implausible year in {value!r}")
    off = (int(oh) * 60 + int(om)) * (-1 if sign == "-" else 1)
    try:
        return datetime(int(y), int(mo), int(d), int(h), int(mi), int(s),
                        tzinfo=timezone(timedelta(minutes=off)))
    except ValueError as exc:  # day 31 of a 30-day month, offset beyond 24 h...
        raise HealthDateError(f"not a Health date: {value!r} ({exc})") from None


def _offset_of(value: str) -> int | None:
    """The ±HHMM offset of a Health date string in minutes, without a full parse."""
    m = _DATE_RE.match(value)
    if not m:
        return None
    sign, oh, om = m.group(7), int(m.group(8)), int(m.group(9))
    if oh > 18 or om > 59:  # real offsets lie within ±18 h
        return None
    return (oh * 60 + om) * (-1 if sign == "-" else 1)


def _num(value: str | None) -> float | None:
    if value is None or value == "":
        return None
    try:
        x = float(value)
    except ValueError:
        return None
    return x if x == x and x not in (float("inf"), float("-inf")) else None


def _convert(value: float | None, unit: str | None, table: dict[str, float]) -> float | None:
    if value is None:
        return None
    factor = table.get((unit or "").strip())
    return None if factor is None else value * factor


def activity_name(workout_type: str) -> str:
    """HKWorkoutActivityTypeTraditionalStrengthTraining -> 'traditional strength training'."""
    name = workout_type.removeprefix("HKWorkoutActivityType") or workout_type
    return _CAMEL.sub(" ", name).lower().strip() or "workout"


def _device_name(device: str | None) -> str:
    if not device:
        return ""
    m = _DEVICE_NAME.search(device)
    return m.group(1).strip() if m else ""


def _raw(elem: ET.Element) -> str:
    text = ET.tostring(elem, encoding="unicode")
    text = re.sub(r">\s+<", "><", text)
    return text if len(text) <= _RAW_LIMIT else text[:_RAW_LIMIT] + "…"


def _r(x: float | None, nd: int = 2) -> float | None:
    return None if x is None else round(x, nd)


# ---- daily accumulators --------------------------------------------------------------

@dataclass(slots=True)
class _DaySum:
    """Per-source sums of one metric on one local day."""
    offset: int
    by_source: dict[str, float] = field(default_factory=dict)
    samples: int = 0


@dataclass(slots=True)
class _DayHeart:
    offset: int
    low: float = float("inf")
    high: float = float("-inf")
    total: float = 0.0
    samples: int = 0


@dataclass(slots=True)
class _Night:
    start: datetime
    end: datetime
    # source -> stage -> minutes (stage: asleep/core/deep/rem/awake/in_bed)
    by_source: dict[str, dict[str, float]] = field(default_factory=dict)
    samples: int = 0


class _Aggregates:
    """Bounded state: one small object per (day, metric) and per night."""

    def __init__(self) -> None:
        self.sums: dict[tuple[str, str], _DaySum] = {}
        self.heart: dict[str, _DayHeart] = {}
        self.nights: dict[str, _Night] = {}
        self.valid_days: set[str] = set()  # dates already checked once; bounded by days

    def add_sum(self, metric: str, day: str, offset: int, source: str, value: float) -> None:
        acc = self.sums.get((metric, day))
        if acc is None:
            acc = self.sums[(metric, day)] = _DaySum(offset)
        acc.by_source[source] = acc.by_source.get(source, 0.0) + value
        acc.samples += 1

    def add_heart(self, day: str, offset: int, bpm: float) -> None:
        acc = self.heart.get(day)
        if acc is None:
            acc = self.heart[day] = _DayHeart(offset)
        acc.low = min(acc.low, bpm)
        acc.high = max(acc.high, bpm)
        acc.total += bpm
        acc.samples += 1

    def add_sleep(self, start: datetime, end: datetime, source: str, stage: str) -> None:
        night = (start - timedelta(hours=12)).date().isoformat()
        acc = self.nights.get(night)
        if acc is None:
            acc = self.nights[night] = _Night(start, end)
        acc.start = min(acc.start, start)
        acc.end = max(acc.end, end)
        stages = acc.by_source.setdefault(source, {})
        minutes = max((end - start).total_seconds(), 0.0) / 60
        stages[stage] = stages.get(stage, 0.0) + minutes
        acc.samples += 1


def _day_span(day: str, offset: int) -> tuple[datetime, datetime]:
    tz = timezone(timedelta(minutes=offset))
    d = date.fromisoformat(day)
    start = datetime(d.year, d.month, d.day, tzinfo=tz)
    return start, start + timedelta(days=1)


def _fmt_hm(minutes: float) -> str:
    h, m = divmod(int(round(minutes)), 60)
    return f"{h} h {m} min" if h else f"{m} min"


def _emit_aggregates(agg: _Aggregates, exported: datetime | None) -> Iterator[Event | ImportIssue]:
    export_day = exported.date().isoformat() if exported else None
    # Night D runs from noon on D to noon on D+1; it is over once the export is past that.
    last_night = (exported - timedelta(hours=36)).date().isoformat() if exported else None
    unfinished = [] if export_day is None else sorted(
        {day for (_, day) in agg.sums if day >= export_day} | {day for day in agg.heart if day >= export_day})
    if unfinished:
        yield ImportIssue(f"daily totals for {', '.join(unfinished)}",
                          f"the export was taken on {export_day}, so the step, distance and heart-rate "
                          "totals of that day are incomplete and were left out; a later export brings them")
    late_nights = sorted(n for n in agg.nights if last_night is not None and n > last_night)
    if late_nights:
        yield ImportIssue(f"sleep in the night of {', '.join(late_nights)}",
                          "the night was not over when the export was taken; it was left out")
    for (metric, day), acc in sorted(agg.sums.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if export_day is not None and day >= export_day:
            continue
        start, end = _day_span(day, acc.offset)
        best_source, best = max(acc.by_source.items(), key=lambda kv: (kv[1], kv[0]))
        attrs: dict = {"metric": metric, "date": day, "source_used": best_source,
                       "samples": acc.samples}
        by_source = {s: round(v, 3) for s, v in sorted(acc.by_source.items())}
        if metric == "steps":
            steps = int(round(best))
            attrs.update(steps=steps, by_source={s: int(round(v)) for s, v in by_source.items()})
            title = f"{steps:,} steps on {day}"
            text = f"Walked {steps:,} steps on {day} (counted by {best_source})."
        else:
            km = round(best, 2)
            attrs.update(distance_km=km, by_source=by_source)
            title = f"{km} km walked or run on {day}"
            text = f"Walked or ran {km} km on {day} (measured by {best_source})."
        yield Event(source=SOURCE, kind="health_summary", start=start, end=end, title=title, text=text,
                    attributes=attrs, tz_offset_min=acc.offset, key=f"{metric}|{day}",
                    locator=f"{metric} on {day}", raw=orjson.dumps({"by_source": by_source}).decode())
    for day, acc in sorted(agg.heart.items()):
        if export_day is not None and day >= export_day:
            continue
        start, end = _day_span(day, acc.offset)
        avg = round(acc.total / acc.samples, 1)
        attrs = {"metric": "heart_rate", "date": day, "min_bpm": round(acc.low, 1), "avg_bpm": avg,
                 "max_bpm": round(acc.high, 1), "samples": acc.samples}
        yield Event(
            source=SOURCE, kind="health_summary", start=start, end=end,
            title=f"Heart rate on {day}: {attrs['min_bpm']:g}–{attrs['max_bpm']:g} bpm",
            text=(f"Heart rate on {day}: lowest {attrs['min_bpm']:g} bpm, average {avg:g} bpm, "
                  f"highest {attrs['max_bpm']:g} bpm over {acc.samples} measurements."),
            attributes=attrs, tz_offset_min=acc.offset, key=f"heart_rate|{day}",
            locator=f"heart rate on {day}", raw=orjson.dumps(attrs).decode())
    for night, acc in sorted(agg.nights.items()):
        if night in late_nights:
            continue
        per_source = {}
        for src, stages in acc.by_source.items():
            asleep = sum(v for k, v in stages.items() if k in {"asleep", "core", "deep", "rem"})
            per_source[src] = (asleep, stages.get("in_bed", 0.0))
        best_src = max(per_source, key=lambda s: (per_source[s][0], per_source[s][1], s))
        asleep, _ = per_source[best_src]
        in_bed = max(v[1] for v in per_source.values())
        stages = acc.by_source[best_src]
        attrs = {"night": night, "asleep_min": round(asleep, 1), "in_bed_min": round(in_bed, 1),
                 "source_used": best_src, "samples": acc.samples}
        for stage in ("core", "deep", "rem", "awake"):
            if stage in stages:
                attrs[f"{stage}_min"] = round(stages[stage], 1)
        if asleep > 0:
            text = f"Slept {_fmt_hm(asleep)} in the night of {night}"
            if in_bed > 0:
                text += f" ({_fmt_hm(in_bed)} in bed)"
        else:
            text = f"Spent {_fmt_hm(in_bed)} in bed in the night of {night} (no sleep stages recorded)"
        yield Event(
            source=SOURCE, kind="sleep", start=acc.start, end=acc.end,
            title=f"Sleep, night of {night}: {_fmt_hm(asleep or in_bed)}",
            text=text + f", {acc.start:%H:%M}–{acc.end:%H:%M}.", attributes=attrs,
            tz_offset_min=offset_minutes(acc.start), key=f"sleep|{night}",
            locator=f"sleep in the night of {night}",
            raw=orjson.dumps({s: {k: round(v, 1) for k, v in st.items()}
                              for s, st in acc.by_source.items()}).decode())


# ---- per-element handlers ---------------------------------------------------------------

def _record(elem: ET.Element, agg: _Aggregates, loc: str) -> ImportIssue | None:
    rtype = elem.get("type")
    if rtype not in (_STEPS, _DISTANCE, _HEART, _SLEEP):
        return None  # other record types are not summarised (yet); not an error
    start_s = elem.get("startDate") or ""
    offset = _offset_of(start_s)
    if offset is None:
        return ImportIssue(loc, f"{rtype}: bad or missing startDate {start_s!r}")
    day = start_s[:10]
    if day not in agg.valid_days:
        try:
            parse_date(start_s)
        except HealthDateError as exc:
            return ImportIssue(loc, f"{rtype}: {exc}")
        agg.valid_days.add(day)
    source = elem.get("sourceName") or "unknown source"
    if rtype == _SLEEP:
        try:
            start, end = parse_date(start_s), parse_date(elem.get("endDate"))
        except HealthDateError as exc:
            return ImportIssue(loc, f"sleep record: {exc}")
        value = elem.get("value") or ""
        stage = _SLEEP_ASLEEP.get(value) or (
            "in_bed" if value == _SLEEP_IN_BED else "awake" if value == _SLEEP_AWAKE else None)
        if stage is None:
            return ImportIssue(loc, f"sleep record: unknown value {value!r}")
        agg.add_sleep(start, end, source, stage)
        return None
    value = _num(elem.get("value"))
    if value is None or value < 0:
        return ImportIssue(loc, f"{rtype}: bad value {elem.get('value')!r}")
    if rtype == _STEPS:
        agg.add_sum("steps", day, offset, source, value)
    elif rtype == _DISTANCE:
        km = _convert(value, elem.get("unit") or "km", _KM)
        if km is None:
            return ImportIssue(loc, f"{rtype}: unknown distance unit {elem.get('unit')!r}")
        agg.add_sum("walking_running_distance", day, offset, source, km)
    else:
        agg.add_heart(day, offset, value)
    return None


def _workout(elem: ET.Element, loc: str) -> Event | ImportIssue:
    wtype = elem.get("workoutActivityType") or ""
    try:
        start = parse_date(elem.get("startDate"))
        end = parse_date(elem.get("endDate"))
    except HealthDateError as exc:
        return ImportIssue(loc, f"workout {wtype or '(no type)'}: {exc}")
    activity = activity_name(wtype) if wtype else "workout"
    duration = _convert(_num(elem.get("duration")), elem.get("durationUnit") or "min", _MIN)
    if duration is None:
        duration = (end - start).total_seconds() / 60
    distance = _convert(_num(elem.get("totalDistance")), elem.get("totalDistanceUnit"), _KM)
    calories = _convert(_num(elem.get("totalEnergyBurned")), elem.get("totalEnergyBurnedUnit"), _KCAL)
    hr_avg = hr_max = hr_min = None
    meta: dict[str, str] = {}
    route_files: list[str] = []
    for child in elem:
        tag = child.tag
        if tag == "WorkoutStatistics":
            stype = child.get("type") or ""
            unit = child.get("unit")
            if stype in _DISTANCE_TYPES:
                d = _convert(_num(child.get("sum")), unit, _KM)
                if d is not None:
                    distance = d
            elif stype == _ACTIVE_ENERGY:
                c = _convert(_num(child.get("sum")), unit, _KCAL)
                if c is not None:
                    calories = c
            elif stype == _HEART:
                hr_avg = _num(child.get("average"))
                hr_max = _num(child.get("maximum"))
                hr_min = _num(child.get("minimum"))
        elif tag == "MetadataEntry":
            k, v = child.get("key"), child.get("value")
            if k and v is not None:
                meta[k] = v
        elif tag == "WorkoutRoute":
            for ref in child.iter("FileReference"):
                if ref.get("path"):
                    route_files.append(ref.get("path"))
    source = elem.get("sourceName") or ""
    device = _device_name(elem.get("device"))
    attrs: dict = {"activity": activity, "duration_min": _r(duration, 1)}
    if distance is not None:
        attrs["distance_km"] = _r(distance)
    if calories is not None:
        attrs["calories"] = _r(calories, 0)
    if hr_avg is not None:
        attrs["avg_heart_rate"] = _r(hr_avg, 0)
    if hr_max is not None:
        attrs["max_heart_rate"] = _r(hr_max, 0)
    if hr_min is not None:
        attrs["min_heart_rate"] = _r(hr_min, 0)
    if source:
        attrs["app"] = source
    if device:
        attrs["device"] = device
    if meta.get("HKIndoorWorkout") in ("0", "1"):
        attrs["indoor"] = meta["HKIndoorWorkout"] == "1"
    elev = meta.get("HKElevationAscended", "").split()
    if len(elev) == 2 and _num(elev[0]) is not None and elev[1] in ("cm", "m", "ft"):
        attrs["elevation_gain_m"] = round(_num(elev[0]) * {"cm": 0.01, "m": 1.0, "ft": 0.3048}[elev[1]], 1)
    if route_files:
        attrs["route_file"] = route_files[0]
    facts = [_fmt_hm(attrs["duration_min"])]
    if "distance_km" in attrs:
        facts.append(f"{attrs['distance_km']:g} km")
    if "calories" in attrs:
        facts.append(f"{attrs['calories']:g} kcal")
    text = f"{activity.capitalize()} workout: " + ", ".join(facts)
    if "avg_heart_rate" in attrs:
        text += f", average heart rate {attrs['avg_heart_rate']:g} bpm"
        if "max_heart_rate" in attrs:
            text += f" (max {attrs['max_heart_rate']:g})"
    if source:
        text += f"; recorded by {source}"
    title = f"{activity.capitalize()}" + (f", {attrs['distance_km']:g} km" if "distance_km" in attrs else
                                          f", {_fmt_hm(attrs['duration_min'])}")
    return Event(source=SOURCE, kind="workout", start=start, end=end, title=title, text=text + ".",
                 attributes=attrs, tz_offset_min=offset_minutes(start),
                 key=f"workout|{wtype}|{elem.get('startDate')}|{elem.get('endDate')}|{source}",
                 locator=loc, raw=_raw(elem))


def _activity_summary(elem: ET.Element, loc: str, zone) -> Event | ImportIssue | None:
    day = elem.get("dateComponents") or ""
    try:
        d = date.fromisoformat(day)
    except ValueError:
        return ImportIssue(loc, f"activity summary: bad dateComponents {day!r}")
    if not _MIN_YEAR <= d.year <= _MAX_YEAR:
        return ImportIssue(loc, f"activity summary: implausible date {day!r}")
    fields = {
        "active_energy_kcal": _convert(_num(elem.get("activeEnergyBurned")),
                                       elem.get("activeEnergyBurnedUnit") or "kcal", _KCAL),
        "active_energy_goal_kcal": _convert(_num(elem.get("activeEnergyBurnedGoal")),
                                            elem.get("activeEnergyBurnedUnit") or "kcal", _KCAL),
        "exercise_min": _num(elem.get("appleExerciseTime")),
        "exercise_goal_min": _num(elem.get("appleExerciseTimeGoal")),
        "stand_hours": _num(elem.get("appleStandHours")),
        "stand_goal_hours": _num(elem.get("appleStandHoursGoal")),
        "move_min": _num(elem.get("appleMoveTime")),
        "move_goal_min": _num(elem.get("appleMoveTimeGoal")),
    }
    attrs: dict = {"metric": "activity", "date": day}
    if not fields["move_min"] and not fields["move_goal_min"]:
        del fields["move_min"], fields["move_goal_min"]  # only used for some wheelchair/kids setups
    attrs.update({k: round(v, 1) for k, v in fields.items() if v is not None})
    if not any(v for v in fields.values()):
        return None  # days before a Watch was paired: all zero, no goals; nothing happened
    start = datetime(d.year, d.month, d.day).replace(tzinfo=zone)
    # Re-derive the offset after attaching: ZoneInfo resolves DST at that wall time.
    end = (datetime(d.year, d.month, d.day) + timedelta(days=1)).replace(tzinfo=zone)
    parts = []
    if "active_energy_kcal" in attrs:
        goal = attrs.get("active_energy_goal_kcal")
        parts.append(f"burned {attrs['active_energy_kcal']:g} kcal of active energy"
                     + (f" (goal {goal:g})" if goal else ""))
    if "exercise_min" in attrs:
        goal = attrs.get("exercise_goal_min")
        parts.append(f"exercised {attrs['exercise_min']:g} min" + (f" (goal {goal:g})" if goal else ""))
    if "stand_hours" in attrs:
        goal = attrs.get("stand_goal_hours")
        parts.append(f"stood in {attrs['stand_hours']:g} hours" + (f" (goal {goal:g})" if goal else ""))
    closed = [name for name, v, g in (("move", "active_energy_kcal", "active_energy_goal_kcal"),
                                       ("exercise", "exercise_min", "exercise_goal_min"),
                                       ("stand", "stand_hours", "stand_goal_hours"))
              if attrs.get(g) and attrs.get(v, 0) >= attrs[g]]
    attrs["rings_closed"] = len(closed)
    text = f"Activity on {day}: " + ", ".join(parts) + "."
    return Event(source=SOURCE, kind="health_summary", start=start, end=end,
                 title=f"Activity rings on {day}", text=text, attributes=attrs,
                 tz_offset_min=offset_minutes(start), key=f"activity|{day}", locator=loc,
                 raw=_raw(elem))


# ---- the reader -----------------------------------------------------------------------------

def _declares_utf8(head: bytes) -> bool:
    """Whether the XML is UTF-8: it says so, or names no encoding (XML's default)."""
    m = re.match(rb"\s*<\?xml[^>]*encoding=[\"']([A-Za-z0-9._-]+)", head)
    return m is None or m.group(1).lower().replace(b"_", b"-") in (b"utf-8", b"utf8")


def read(entry: Entry) -> Iterator[Event | ImportIssue]:
    zone = entry.context.home_tz
    agg = _Aggregates()
    exported: datetime | None = None
    broken = False
    counts = {"Record": 0, "Workout": 0, "ActivitySummary": 0}
    seen_root = False
    depth = 0
    root: ET.Element | None = None
    with entry.open() as raw:
        # a byte that is not UTF-8 would end expat's parse there, and every record after it
        f = Utf8Repaired(raw) if _declares_utf8(entry.head) else raw
        try:
            for event, elem in ET.iterparse(f, events=("start", "end")):
                if event == "start":
                    depth += 1
                    if depth == 1:
                        root = elem
                        seen_root = elem.tag == "HealthData"
                        if not seen_root:
                            yield ImportIssue("line 1", f"the root element is <{elem.tag}>, "
                                                        "not <HealthData>: not an Apple Health export")
                            return
                    continue
                depth -= 1
                if depth != 1:
                    continue  # children are handled with their top-level parent
                tag = elem.tag
                n = counts[tag] = counts.get(tag, 0) + 1
                loc = f"{tag} {n}"
                if tag == "Record":
                    issue = _record(elem, agg, loc + f" ({elem.get('startDate') or 'no date'})")
                    if issue is not None:
                        yield issue
                elif tag == "Workout":
                    yield _workout(elem, loc + f" ({elem.get('startDate') or 'no date'})")
                elif tag == "ActivitySummary":
                    item = _activity_summary(elem, loc + f" ({elem.get('dateComponents') or 'no date'})", zone)
                    if item is not None:
                        yield item
                elif tag == "ExportDate":
                    try:
                        exported = parse_date(elem.get("value"))
                    except HealthDateError as exc:
                        yield ImportIssue(loc, f"export date unreadable ({exc}); all days are summarised")
                # Drop what was handled so memory stays flat however long the file is.
                elem.clear()
                if root is not None:
                    root.clear()
        except ET.ParseError as exc:
            line, col = getattr(exc, "position", (0, 0))
            what = "the file ends early (truncated?)" if "no element found" in str(exc) or \
                "unclosed token" in str(exc) else "the XML is malformed"
            yield ImportIssue(f"line {line}, column {col}",
                              f"{what}: {exc}; the workouts and activity summaries before this point "
                              "were imported")
            broken = True
        except (OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            yield ImportIssue("file", f"cannot read the rest of the file: {exc}")
            broken = True
        if isinstance(f, Utf8Repaired) and f.first_bad is not None:
            yield not_utf8_warning(f.first_bad)
    if not seen_root:
        return
    if broken:
        days = len({d for (_, d) in agg.sums} | set(agg.heart))
        if days or agg.nights:
            yield ImportIssue("daily totals", f"the file is incomplete, so the daily step, distance and "
                              f"heart-rate totals of {days} days and {len(agg.nights)} nights of sleep were "
                              "not created (they would be wrong); import a complete export to get them")
        return
    yield from _emit_aggregates(agg, exported)


IMPORTERS = (
    Importer(
        name="apple_health", title="Apple Health export", version="1", source=SOURCE,
        recognize=_recognize, read=read,
        description="export.xml from the Health app (apple_health_export/export.xml in export.zip)",
        ignores=("export_cda.xml", "route_*.gpx", "ecg_*.csv", "*.fhir.json"),
    ),
)
