"""Days a question leaves open are read against the day it is asked and written
whole for the planner; everything else in the question is left as it is."""
from __future__ import annotations

from datetime import date

import pytest

from engine.temporal import read_dates

THURSDAY = date(2024, 8, 29)


@pytest.mark.parametrize("question, planned", [
    ("which park did I run around on the 13th of july", "which park did I run around on 13 July 2024"),
    ("how was I feeling on 21 august?", "how was I feeling on 21 August 2024?"),
    ("what mood was i in on aug 16th", "what mood was i in on 16 August 2024"),
    ("what did I buy on Sept. 30", "what did I buy on 30 September 2023"),  # not yet this year: last year's
    ("what happened on 29 august", "what happened on 29 August 2024"),  # today itself
    ("what happened on 30 august", "what happened on 30 August 2023"),
    ("where was I on 29 feb", "where was I on 29 February 2024"),
    ("who did I meet last sunday?", "who did I meet on Sunday, 25 August 2024?"),
    ("did I run last thursday", "did I run on Thursday, 22 August 2024"),  # a week ago, not today
    ("how many runs since last friday", "how many runs since Friday, 23 August 2024"),
    ("on 3 may and on the 4th of may", "on 3 May 2024 and on 4 May 2024"),
    ("may 3rd", "3 May 2024"),
    ("total calories I burned running in july", "total calories I burned running in July 2024"),
    ("what did I do in september?", "what did I do in September 2023?"),  # not yet this year
    ("how many runs since march", "how many runs since March 2024"),
    ("in August, how often did I swim", "in August 2024, how often did I swim"),  # this month so far
    ("how many chats did I start last month?", "how many chats did I start in July 2024?"),
    ("runs since last month", "runs since July 2024"),
    ("the last song I played on new years eve 2023", "the last song I played on 31 December 2023"),
    ("what did I order before Christmas 2022?", "what did I order before 25 December 2022?"),
    ("where was I on New Year’s Day", "where was I on 1 January 2024"),
    ("what did I do on christmas eve", "what did I do on 24 December 2023"),  # not yet this year
    ("did we have the team weekly on monday", "did we have the team weekly on Monday, 26 August 2024"),
    ("how many runs since Friday?", "how many runs since Friday, 23 August 2024?"),
    ("what did I do on thursday", "what did I do on Thursday, 22 August 2024"),  # said today: a week ago
    ("did I go to the gym last week", "did I go to the gym in the week of Monday, 19 August 2024"),
    ("did i order anything from amazon this week?",
     "did i order anything from amazon in the week of Monday, 26 August 2024?"),
    ("runs the week before last", "runs in the week of Monday, 12 August 2024"),
    ("songs during last week", "songs during the week of Monday, 19 August 2024"),
    ("runs in the week of the 3rd of march", "runs in the week of Monday, 26 February 2024"),  # its week
    ("what did i do the week of june 5th", "what did i do the week of Monday, 3 June 2024"),
    ("what did I do in the week starting Wednesday, 7 August", "what did I do in the week of Wednesday, 7 August 2024"),
])
def test_a_day_without_its_year_is_the_latest_such_day_up_to_today(question, planned):
    text, readings = read_dates(question, THURSDAY)
    assert text == planned
    assert readings and all(r.day <= THURSDAY for r in readings)


def test_a_week_read_keeps_its_last_day():
    assert [(r.day, r.last) for r in read_dates("runs last week", THURSDAY)[1]] == [
        (date(2024, 8, 19), date(2024, 8, 25))]
    assert [(r.day, r.last) for r in read_dates("runs this week", THURSDAY)[1]] == [(date(2024, 8, 26), THURSDAY)]
    assert read_dates("runs on monday", THURSDAY)[1][0].last is None


def test_a_week_written_by_a_day_is_read_as_its_span():
    said = "chats in the week of Monday, 29 May 2023"
    text, (reading,) = read_dates(said, THURSDAY)
    assert text == said  # already whole: written as it was said
    assert (reading.day, reading.last) == (date(2023, 5, 29), date(2023, 6, 4))
    _, (wednesday,) = read_dates("songs in the week of wednesday, 31 may 2023", THURSDAY)
    assert (wednesday.day, wednesday.last) == (date(2023, 5, 29), date(2023, 6, 4))  # Monday to Sunday
    _, (starting,) = read_dates("songs in the week beginning 31 May 2023", THURSDAY)
    assert (starting.day, starting.last) == (date(2023, 5, 31), date(2023, 6, 6))  # seven days from it
    assert read_dates("in the week of 31 february 2023", THURSDAY) == ("in the week of 31 february 2023", ())


@pytest.mark.parametrize("question", [
    "what did I do on 13 July 2023",
    "on July 13, 2022 what happened",
    "what did I do on 2024-07-13",
    "how often did I run in July 2023?",
    "July netflix total",  # no preposition: said as it is
    "what did I do last july",
    "between may and july",
    "what do I usually do on sundays",
    "I may run 5 km",
    "my top 3 may songs",
    "did I run in march 3 times",
    "what happened on 31 february",
    "what did I buy for christmas",  # what a gift was for, not a day
    "what did I do on Monday, 26 August 2024",  # a weekday with its date is that date's
    "what did I do on friday the 3rd of may 2024",
    "which monday did I run most",  # no preposition: not a day
    "how many weeks did I run",
])
def test_a_date_with_its_year_a_month_or_a_word_is_left_alone(question):
    assert read_dates(question, THURSDAY) == (question, ())


def test_a_reading_says_what_was_said_and_the_day():
    _, (reading,) = read_dates("which restaurant did I go to last sunday?", THURSDAY)
    assert reading.day == date(2024, 8, 25) and str(reading) == "“last sunday” as Sunday, 25 August 2024"


def test_last_month_in_january_is_december_of_the_year_before():
    assert read_dates("how many runs last month", date(2024, 1, 15))[0] == "how many runs in December 2023"
