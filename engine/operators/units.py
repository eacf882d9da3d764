"""Quantities in the unit a key names, from attributes in another unit or the span.

Asked "total workout time in 2021 in hours", the planner extracted
``duration_hours``. No attribute is named so, Apple Health's workouts hold
``duration_min``, and the extractor read "1.4" off "Swimming, 1.4 km", "50" off
"Yoga, 50 min" and 898 off the calories: 7,249 hours in all (31.9 in truth). A key
that names a duration or a distance in a unit ("duration_hours", "minutes",
"distance_miles", "km") is read off an attribute of the same quantity in any unit
(``duration_min``, ``distance_km``, ``elapsed_s``) and converted, or, for a
duration, off the event's own span when it is timed (a day's note tells no
duration). This module reads rows only.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from engine.plan.rows import Row, spans_whole_days

# unit word -> (quantity, size in the quantity's base unit: seconds, metres)
_UNITS: dict[str, tuple[str, float]] = {}
for _words, _quantity, _size in (
        ("s sec secs second seconds", "duration", 1.0),
        ("min mins minute minutes", "duration", 60.0),
        ("h hr hrs hour hours", "duration", 3600.0),
        ("m meter meters metre metres", "distance", 1.0),
        ("km kms kilometer kilometers kilometre kilometres", "distance", 1000.0),
        ("mi mile miles", "distance", 1609.344)):
    for _w in _words.split():
        _UNITS[_w] = (_quantity, _size)

# alone, a part of a time ("hour": of the day) or too short to tell
_NOT_ALONE = frozenset("hour minute second h m s min mi".split())

# words before the unit that say which quantity ("duration_min", "time_hours")
_QUANTITY_WORDS = {"duration": "duration", "time": "duration", "length": "duration", "elapsed": "duration",
                   "moving": "duration", "total": None, "workout": None, "activity": None,
                   "distance": "distance", "dist": "distance"}


def measure(name: str) -> tuple[str, float] | None:
    """(quantity, unit size) that a key or an attribute name says, e.g.
    "duration_hours" -> ("duration", 3600); None for anything else ("calories",
    "speed_km_h", "hours_of_sleep", and "hour": the hour of the day)."""
    words = [w for w in name.lower().replace("-", "_").replace(" ", "_").split("_") if w]
    if not words or words[-1] not in _UNITS or any(w in _UNITS for w in words[:-1]) \
            or (len(words) == 1 and words[0] in _NOT_ALONE):
        return None
    quantity, size = _UNITS[words[-1]]
    for w in words[:-1]:
        said = _QUANTITY_WORDS.get(w, "other")
        if said == "other" or (said is not None and said != quantity):
            return None
    return quantity, size


def in_unit(row: Row, key: str) -> tuple[Any, str] | None:
    """The row's ``key`` quantity in the key's unit and where it came from (an
    attribute's name, or "span"); None when the row holds no such quantity."""
    wanted = measure(key)
    if wanted is None:
        return None
    quantity, size = wanted
    prefix = key.lower().rsplit("_", 1)[0] if "_" in key else None
    holders = [(name, m) for name, value in row.raw.items()
               if (m := measure(name)) is not None and m[0] == quantity and _number(value) is not None]
    holders.sort(key=lambda h: not (prefix and h[0].lower().startswith(prefix)))  # "duration_min" first
    if holders:
        name, (_, their_size) = holders[0]
        return _number(row.raw[name]) * their_size / size, name
    start, end = row.get("start"), row.get("end")
    if quantity == "duration" and isinstance(start, datetime) and isinstance(end, datetime) and end > start \
            and not spans_whole_days(row):
        return (end - start).total_seconds() / size, "span"
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)
