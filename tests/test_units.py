"""Durations and distances in the unit a key names."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from engine.operators.units import in_unit, measure
from engine.plan.rows import Row

T = datetime(2021, 11, 1, 6, 0, tzinfo=timezone(timedelta(hours=1)))


@pytest.mark.parametrize("name, said", [
    ("duration_hours", ("duration", 3600.0)), ("minutes", ("duration", 60.0)), ("elapsed_s", ("duration", 1.0)),
    ("time_hours", ("duration", 3600.0)), ("total_duration_min", ("duration", 60.0)),
    ("distance_miles", ("distance", 1609.344)), ("km", ("distance", 1000.0)), ("distance_m", ("distance", 1.0)),
    ("calories", None), ("duration", None), ("speed_km_h", None), ("avg_pace_min", None), ("sleep_hours", None),
    ("distance_hours", None), ("hour", None), ("minute", None), ("m", None),
])
def test_what_a_name_measures(name, said):
    assert measure(name) == said


def workout(minutes: float = 33.4, **raw) -> Row:
    return Row({"source": "health", "kind": "workout", "start": T, "end": T + timedelta(minutes=minutes)},
               ("e1",), raw)


def test_an_attribute_in_another_unit_is_converted():
    assert in_unit(workout(duration_min=30.0, distance_km=1.4), "duration_hours") == (0.5, "duration_min")
    assert in_unit(workout(distance_km=1.5), "distance_m") == (1500.0, "distance_km")
    # of two durations, the one the key names first
    assert in_unit(workout(elapsed_min=48.2, duration_min=44.35), "duration_min")[1] == "duration_min"


def test_a_duration_no_attribute_holds_is_the_timed_span():
    assert in_unit(workout(90), "hours") == (1.5, "span")
    day = Row({"start": T.replace(hour=0), "end": T.replace(hour=0) + timedelta(days=1)}, ("d",), {})
    assert in_unit(day, "hours") is None     # a day's note tells no duration
    assert in_unit(workout(calories=289.0), "distance_km") is None
    assert in_unit(workout(duration_min=30.0), "calories") is None
