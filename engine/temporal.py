"""Days a question names without saying all of them ("the 13th of July", "aug 16th",
"last Sunday"), read as the days they are on the day the question is asked, the way a
person hearing it would, and written whole into the question the planner reads ("on
13 July 2024").

Why: plans say relative time through ``today()`` and are cached across days, so the
planner never sees the date; told "on the 13th of july" on 29 August 2024, both
planners wrote ``date(2023, 7, 13)``, a year nobody said (all 8 such questions of the
fresh-phrasing set's train part, with "last sunday" and "last saturday"). Reading a
date against the time it is said is what temporal taggers do (TimeML's value of an
underspecified date); it changes no plan and reads no question's other words.

- A day and month without a year is the latest such day up to today (a personal
  history is asked about afterwards); a day that is not in every year (29 February)
  is the latest year that has it.
- "last <weekday>" is the latest such weekday before today; so is a weekday alone
  after a preposition of time ("did we have the team weekly on monday", "since
  friday").
- "last week" is the week before today's, Monday to Sunday, and "this week" today's
  from its Monday on, written by their Monday ("in the week of Monday, 19 August
  2024"); the reading keeps the span's last day for the plan's repair. So is "the
  week of <a day>" ("the week of Monday, 29 May 2023", "the week of the 3rd of
  March"): the week, Monday to Sunday, that day is in (without a year, the latest
  such day up to today); "the week starting <a day>" is the seven days from it.
- "last month" and "this month" are today's month and the one before it, written
  whole ("in July 2024").
- A holiday of a fixed day after a preposition of time ("before christmas 2023", "on
  new years eve") is that day of the year it names, or the latest up to today.
- A month alone after a preposition of time ("in July", "since March") is the latest
  such month up to today's ("this July", "last July" and "July" alone are left as said).
- "may" and "march" are words too: read as months only with a day that says so
  ("the 3rd of May", "May 3rd", "on 3 May").
- A date with a year, weekdays ("on Sundays" recurs), a weekday with no preposition
  before it, and anything else is left as it is.

The words are :mod:`engine.locale_en`'s; this module only finds and resolves them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from engine.locale_en import (DAY_ARTICLE, DAY_FORMAT, DAY_MONTH_JOINERS, HOLIDAYS, LAST_WEEKDAY, MONTH_FORMAT,
                              MONTH_NUMBERS, MONTH_PREPOSITIONS, MONTH_TITLES, MONTHS_THAT_ARE_WORDS, NUMBER_UNITS,
                              RELATIVE_MONTHS, RELATIVE_WEEKS, IN, ON, ORDINAL_SUFFIXES,
                              TIME_PREPOSITIONS, TIMES_WORDS, WEEK_FORMAT, WEEK_OF, WEEKDAY_DAY_FORMAT,
                              WEEKDAY_NAMES, WEEKDAY_TITLES)

#: how many years back a day of the month is looked for (29 February: the last leap year)
_YEARS_BACK = 8


@dataclass(frozen=True, slots=True)
class DateReading:
    """A date as the question said it and the day it was read as."""

    said: str
    day: date
    written: str
    #: the last day of a span of days read ("last week": its Sunday); None for one day or a month
    last: date | None = None

    def __str__(self) -> str:
        return f"“{self.said}” as {self.written}"


def _alternatives(words) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


_MONTH = rf"(?P<month>{_alternatives(MONTH_NUMBERS)})\.?"
_DAY = rf"(?P<day>[0-3]?\d)(?P<ordinal>{_alternatives(ORDINAL_SUFFIXES)})?"
_NO_YEAR = r"(?!\s*,?\s*'?\d)"  # "13 July 2023", "July 13, 2023", "13 July '23" say their year
_NOT_AN_AMOUNT = rf"(?!\s+(?:{_alternatives((*NUMBER_UNITS, *TIMES_WORDS))})\b)"  # "in march 3 times"
_DAY_OF_MONTH = (rf"(?:(?P<article>{re.escape(DAY_ARTICLE)})\s+)?{_DAY}\s+"
                 rf"(?:(?:{_alternatives(DAY_MONTH_JOINERS)})\s+)?{_MONTH}(?![\w'’])")  # "the 13th of July"
_MONTH_THEN_DAY = rf"{_MONTH}\s+(?:(?P<article>{re.escape(DAY_ARTICLE)})\s+)?{_DAY}(?![\w'’/.-])"  # "aug 16th"
_DAY_MONTH = re.compile(rf"(?<![\w'’/.-]){_DAY_OF_MONTH}{_NO_YEAR}", re.IGNORECASE)
_MONTH_DAY = re.compile(rf"(?<![\w'’/.-]){_MONTH_THEN_DAY}{_NO_YEAR}{_NOT_AN_AMOUNT}", re.IGNORECASE)
_MONTH_ALONE = re.compile(rf"(?<![\w'’/.-]){_MONTH}(?![\w'’]){_NO_YEAR}", re.IGNORECASE)
_RELATIVE_MONTH = re.compile(rf"(?<![\w'’])(?P<said>{_alternatives(RELATIVE_MONTHS)})(?![\w'’])", re.IGNORECASE)
_APOSTROPHE = re.compile(r"['’]")
_HOLIDAY_NAMES = "|".join(re.escape(h).replace("'", "['’]?") for h in sorted(HOLIDAYS, key=len, reverse=True))
_HOLIDAY = re.compile(rf"(?<![\w'’])(?P<holiday>{_HOLIDAY_NAMES})(?:,?\s+(?P<year>\d{{4}}))?(?![\w'’])",
                      re.IGNORECASE)
_HOLIDAY_DAYS = {_APOSTROPHE.sub("", h): day for h, day in HOLIDAYS.items()}  # said with or without it
_LAST_WEEKDAY = re.compile(
    rf"(?<![\w'’])(?P<last>{_alternatives(LAST_WEEKDAY)})\s+(?P<weekday>{_alternatives(WEEKDAY_NAMES)})(?![\w'’])",
    re.IGNORECASE)
# a weekday a date follows is that date's ("on Monday, 26 August", "on friday the 3rd")
_WEEKDAY = re.compile(rf"(?<![\w'’])(?P<weekday>{_alternatives(WEEKDAY_NAMES)})(?![\w'’])"
                      rf"(?!,?\s+(?:{re.escape(DAY_ARTICLE)}\s+)?(?:\d|(?:{_alternatives(MONTH_NUMBERS)})(?![\w'’])))",
                      re.IGNORECASE)
_WEEK_OF_WORDS = "|".join(r"\s+".join(map(re.escape, words.split()))
                          for words in sorted(WEEK_OF, key=len, reverse=True))
_WEEK_OF_START = (rf"(?<![\w'’])(?:{re.escape(DAY_ARTICLE)}\s+)?(?P<week_of>{_WEEK_OF_WORDS})\s+"
                  rf"(?:(?:{_alternatives(WEEKDAY_NAMES)}),?\s+)?")  # "the week of Monday, 29 May"
_YEAR = r"(?:,?\s+(?P<year>\d{4}))?(?!\d)"
_WEEK_OF = [re.compile(_WEEK_OF_START + day + _YEAR, re.IGNORECASE) for day in (_DAY_OF_MONTH, _MONTH_THEN_DAY)]
_RELATIVE_WEEK = re.compile(rf"(?<![\w'’])(?P<said>{_alternatives(RELATIVE_WEEKS)})(?![\w'’])", re.IGNORECASE)
_WORD_BEFORE = re.compile(r"(\w+)\s*$")


Found = tuple[int, int, str, DateReading]  # (start, end, replacement, reading)


def read_dates(question: str, today: date) -> tuple[str, tuple[DateReading, ...]]:
    """``question`` with each date it leaves open written whole, and how each was read.
    The forms are read in the order below; a span one form took is not read again."""
    found: list[Found] = []
    for reader in (_weeks_of, _days, _holidays, _relative_months, _relative_weeks, _months, _last_weekdays,
                   _weekdays):
        for f in reader(question, today):
            if not any(f[0] < e and s < f[1] for s, e, _, _ in found):
                found.append(f)
    if not found:
        return question, ()
    found.sort(key=lambda f: f[0])
    out, at = [], 0
    for start, end, replacement, _ in found:
        out += [question[at:start], replacement]
        at = end
    out.append(question[at:])
    return "".join(out), tuple(f[3] for f in found)


def _day_written(day: date) -> str:
    return DAY_FORMAT.format(day=day.day, month=MONTH_TITLES[day.month - 1], year=day.year)


def _after(question: str, m: re.Match, words: frozenset[str]) -> bool:
    """Whether the word before the match is one of ``words``."""
    before = _WORD_BEFORE.search(question[:m.start()])
    return before is not None and before.group(1).lower() in words


def _days(question: str, today: date):
    """"the 13th of july", "aug 16th": the latest such day up to today."""
    for pattern in (_DAY_MONTH, _MONTH_DAY):
        for m in pattern.finditer(question):
            if _a_date(m, question) and (day := _latest_day(int(m["day"]), MONTH_NUMBERS[m["month"].lower()],
                                                            today)) is not None:
                yield m.start(), m.end(), _day_written(day), DateReading(m.group(0), day, _day_written(day))


def _holidays(question: str, today: date):
    """"before christmas 2023": that day; without a year, the latest up to today."""
    for m in _HOLIDAY.finditer(question):
        if not _after(question, m, TIME_PREPOSITIONS):
            continue
        month, day_of = _HOLIDAY_DAYS[_APOSTROPHE.sub("", m["holiday"].lower())]
        day = date(int(m["year"]), month, day_of) if m["year"] else _latest_day(day_of, month, today)
        if day is not None:
            yield m.start(), m.end(), _day_written(day), DateReading(m.group(0), day, _day_written(day))


def _relative_months(question: str, today: date):
    """"last month": the month before today's ("in July 2024")."""
    for m in _RELATIVE_MONTH.finditer(question):
        n = today.year * 12 + today.month - 1 - RELATIVE_MONTHS[" ".join(m["said"].lower().split())]
        year, month = n // 12, n % 12 + 1
        written = MONTH_FORMAT.format(month=MONTH_TITLES[month - 1], year=year)
        replacement = written if _after(question, m, MONTH_PREPOSITIONS) else f"{IN} {written}"
        yield m.start(), m.end(), replacement, DateReading(m.group(0), date(year, month, 1), written)


def _months(question: str, today: date):
    """"in july": the latest such month up to today's."""
    for m in _MONTH_ALONE.finditer(question):
        if not _after(question, m, MONTH_PREPOSITIONS):
            continue
        month = MONTH_NUMBERS[m["month"].lower()]
        year = today.year if month <= today.month else today.year - 1
        written = MONTH_FORMAT.format(month=MONTH_TITLES[month - 1], year=year)
        yield m.start(), m.end(), written, DateReading(m.group(0), date(year, month, 1), written)


def _last_weekdays(question: str, today: date):
    """"last sunday": the latest Sunday before today."""
    for m in _LAST_WEEKDAY.finditer(question):
        day = _latest_weekday(WEEKDAY_NAMES.index(m["weekday"].lower()), today)
        written = _weekday_written(day)
        replacement = written if _after(question, m, TIME_PREPOSITIONS) else f"{ON} {written}"
        yield m.start(), m.end(), replacement, DateReading(m.group(0), day, written)


def _weekdays(question: str, today: date):
    """"on monday", "since friday": the latest such weekday before today."""
    for m in _WEEKDAY.finditer(question):
        if _after(question, m, TIME_PREPOSITIONS):
            day = _latest_weekday(WEEKDAY_NAMES.index(m["weekday"].lower()), today)
            written = _weekday_written(day)
            yield m.start(), m.end(), written, DateReading(m.group(0), day, written)


def _relative_weeks(question: str, today: date):
    """"last week": Monday to Sunday of the week before today's; "this week": today's
    from its Monday."""
    for m in _RELATIVE_WEEK.finditer(question):
        back = RELATIVE_WEEKS[" ".join(m["said"].lower().split())]
        first = today - timedelta(days=today.weekday() + 7 * back)
        last = first + timedelta(6) if back else today
        written = WEEK_FORMAT.format(first=_weekday_written(first))
        replacement = written if _after(question, m, MONTH_PREPOSITIONS) else f"{IN} {written}"
        yield m.start(), m.end(), replacement, DateReading(m.group(0), first, written, last)


def _weeks_of(question: str, today: date):
    """"the week of 29 May 2023": Monday to Sunday of the week that day is in; "the week
    starting 7 August": the seven days from it."""
    for pattern in _WEEK_OF:
        for m in pattern.finditer(question):
            day_of, month = int(m["day"]), MONTH_NUMBERS[m["month"].lower()]
            try:
                day = date(int(m["year"]), month, day_of) if m["year"] else _latest_day(day_of, month, today)
            except ValueError:
                continue
            if day is None:
                continue
            first = day - timedelta(days=day.weekday()) if WEEK_OF[" ".join(m["week_of"].lower().split())] else day
            written = WEEK_FORMAT.format(first=_weekday_written(first))
            yield m.start(), m.end(), written, DateReading(m.group(0), first, written, first + timedelta(6))


def _latest_weekday(wanted: int, today: date) -> date:
    return today - timedelta(days=(today.weekday() - wanted - 1) % 7 + 1)


def _weekday_written(day: date) -> str:
    return WEEKDAY_DAY_FORMAT.format(weekday=WEEKDAY_TITLES[day.weekday()], day=day.day,
                                     month=MONTH_TITLES[day.month - 1], year=day.year)


def _a_date(m: re.Match, question: str) -> bool:
    """Whether a month that is a word too ("may") is a month here: its day has an
    ordinal or an article, or a time preposition stands before it ("on 3 May")."""
    if m["month"].lower().rstrip(".") not in MONTHS_THAT_ARE_WORDS or m["ordinal"] or m["article"]:
        return True
    return _after(question, m, TIME_PREPOSITIONS)


def _latest_day(day: int, month: int, today: date) -> date | None:
    """The latest ``day`` of ``month`` up to ``today``; None where no year has it."""
    for year in range(today.year, today.year - _YEARS_BACK, -1):
        try:
            d = date(year, month, day)
        except ValueError:
            continue
        if d <= today:
            return d
    return None
