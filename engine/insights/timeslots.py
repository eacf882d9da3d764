"""Time attributes of a conversation in its own local time: date, weekday, hour,
month and season. Seasons are the meteorological ones of the northern hemisphere
(December-February is winter), the convention of the exports we read."""
from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

SEASONS = ("winter", "spring", "summer", "autumn")
WEEKDAYS = tuple(calendar.day_name)  # Monday first, as date.weekday() counts
MONTHS = tuple(calendar.month_name)[1:]


def season_of(month: int) -> str:
    return SEASONS[(month % 12) // 3]


def day_part(hour: int) -> str:
    """Six-hour parts of the day, named as the Insights view labels its rows."""
    return ("night", "morning", "afternoon", "evening")[hour // 6]


@dataclass(frozen=True, slots=True)
class LocalTime:
    day: date
    weekday: int  # 0 = Monday
    hour: int
    month: str  # "2024-03"
    season: str

    @property
    def weekday_name(self) -> str:
        return WEEKDAYS[self.weekday]

    @property
    def month_name(self) -> str:
        return MONTHS[self.day.month - 1]


def local_time(start_utc: datetime, tz_offset_min: int | None) -> LocalTime:
    """``start_utc`` as the store keeps it (naive UTC) shifted to the event's offset."""
    if start_utc.tzinfo is not None:
        start_utc = start_utc.astimezone(timezone.utc).replace(tzinfo=None)
    t = start_utc + timedelta(minutes=tz_offset_min or 0)
    return LocalTime(day=t.date(), weekday=t.weekday(), hour=t.hour, month=f"{t.year:04d}-{t.month:02d}",
                     season=season_of(t.month))
