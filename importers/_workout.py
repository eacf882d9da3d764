"""The workout attributes every fitness importer writes, in one place: questions
like "how far did I run" must work across Strava, Garmin and others, so the names
and units (km, minutes, bpm, kcal, m) are defined once here."""
from __future__ import annotations


def workout_attributes(*, distance_km: float | None = None, moving_min: float | None = None,
                       elapsed_min: float | None = None, avg_hr: float | None = None,
                       max_hr: float | None = None, calories: float | None = None,
                       elevation_m: float | None = None) -> dict:
    attrs: dict = {}
    if distance_km is not None:
        attrs["distance_km"] = round(distance_km, 3)
    if moving_min is not None:
        attrs["duration_min"] = round(moving_min, 2)
    if elapsed_min is not None:
        attrs["elapsed_min"] = round(elapsed_min, 2)
    if avg_hr is not None:
        attrs["avg_heart_rate"] = round(avg_hr)
    if max_hr is not None:
        attrs["max_heart_rate"] = round(max_hr)
    if calories is not None:
        attrs["calories"] = round(calories)
    if elevation_m is not None:
        attrs["elevation_gain_m"] = round(elevation_m, 1)
    return attrs
