"""The planner's repairs: plans that read an attribute nothing below extracts, and a
relative date's month compared without its year."""
from __future__ import annotations

from datetime import date

import pytest

from engine.plan import parse_plan, print_plan, validate_plan
from engine.plan.repair import add_missing_extracts, bind_relative_dates, over_the_days_read


@pytest.mark.parametrize("plan,expected", [
    ('SUM(l=FILTER(l=RETRIEVE(query="swimming"), filter=lambda e: year(e.start) == 2023), attr_name="distance_km")',
     'SUM(l=EXTRACT(l=FILTER(l=RETRIEVE(query="swimming"), filter=lambda e: year(e.start) == 2023), '
     'attr_names=["distance_km"], attr_types=[float]), attr_name="distance_km")'),
    ('ARGMAX(l=GROUP_BY(l=RETRIEVE(query="songs"), attr_names=["artist"]), arg_attr_name="artist", '
     'val_attr_name="count")',
     'ARGMAX(l=GROUP_BY(l=EXTRACT(l=RETRIEVE(query="songs"), attr_names=["artist"], attr_types=[str]), '
     'attr_names=["artist"]), arg_attr_name="artist", val_attr_name="count")'),
    ('APPLY(l=FILTER(l=RETRIEVE(query="runs"), filter=lambda e: e["distance_km"] > 10 and e["city"] == "Oslo"), '
     'fct=len)',
     'APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="runs"), attr_names=["city", "distance_km"], '
     'attr_types=[str, float]), filter=lambda e: e["distance_km"] > 10 and e["city"] == "Oslo"), fct=len)'),
    # the FILTER reads it first, as text; the SUM above it needs a number ("how many km did i swim")
    ('SUM(l=FILTER(l=RETRIEVE(query="swimming"), filter=lambda e: e["distance_km"] is not None), '
     'attr_name="distance_km")',
     'SUM(l=FILTER(l=EXTRACT(l=RETRIEVE(query="swimming"), attr_names=["distance_km"], attr_types=[float]), '
     'filter=lambda e: e["distance_km"] is not None), attr_name="distance_km")'),
])
def test_a_missing_extract_is_inserted_under_its_reader(plan, expected):
    node = parse_plan(plan)
    assert validate_plan(node)
    fixed = add_missing_extracts(node)
    assert print_plan(fixed) == print_plan(parse_plan(expected))
    assert not validate_plan(fixed)


def test_a_valid_plan_is_left_as_it_is():
    node = parse_plan('SUM(l=EXTRACT(l=RETRIEVE(query="runs"), attr_names=["km"], attr_types=[float]), '
                      'attr_name="km")')
    assert add_missing_extracts(node) is node


def test_count_without_a_group_by_is_not_invented():
    node = parse_plan('SUM(l=FILTER(l=RETRIEVE(query="yoga"), filter=lambda e: year(e.start) == 2023), '
                      'attr_name="count")')
    assert validate_plan(add_missing_extracts(node))


_SONGS = 'APPLY(l=FILTER(l=RETRIEVE(query="songs"), filter=lambda e: {}), fct=len)'


@pytest.mark.parametrize("written,bound", [
    ("month(e.start) == month(today() - days(30))",
     "year(e.start) == year(today() - days(30)) and month(e.start) == month(today() - days(30))"),
    ("day(e.start) == day(today() - days(1))",
     ("year(e.start) == year(today() - days(1)) and month(e.start) == month(today() - days(1)) "
      "and day(e.start) == day(today() - days(1))")),
    # the other conditions stay as they were; the year comes just before its month
    ('e.title == "Muse" and month(e.start) == month(today())',
     'e.title == "Muse" and year(e.start) == year(today()) and month(e.start) == month(today())'),
])
def test_a_relative_dates_month_is_compared_with_its_year(written, bound):
    node = parse_plan(_SONGS.format(written))
    fixed = bind_relative_dates(node)
    assert print_plan(fixed) == print_plan(parse_plan(_SONGS.format(bound)))
    assert not validate_plan(fixed)


@pytest.mark.parametrize("written", [
    "year(e.start) == year(today() - days(30)) and month(e.start) == month(today() - days(30))",
    "month(e.start) == 12",  # December of any year
    "month(e.start) == month(today()) and day(e.start) == day(today())",  # this day, every year
    "year(e.start) == 2023 and month(e.start) == month(today())",
    "month(e.start) >= month(today())",
    "e.start >= today() - days(30)",
])
def test_dates_that_say_their_year_or_are_no_single_relative_field_are_left(written):
    node = parse_plan(_SONGS.format(written))
    assert bind_relative_dates(node) is node


def test_a_relative_month_is_bound_under_any_operator():
    node = parse_plan('ARGMAX(l=GROUP_BY(l=EXTRACT(l=FILTER(l=RETRIEVE(query="songs"), filter=lambda e: '
                      'month(e.start) == month(today() - days(30))), attr_names=["artist"], attr_types=[str]), '
                      'attr_names=["artist"]), arg_attr_name="artist", val_attr_name="count")')
    assert "year(e.start) == year(today() - days(30))" in print_plan(bind_relative_dates(node))


LAST_WEEK = [(date(2024, 8, 19), date(2024, 8, 25))]


@pytest.mark.parametrize("written, whole", [
    ('FILTER(l=RETRIEVE(query="running"), filter=lambda e: date(e.start) == date(2024, 8, 19))',
     'FILTER(l=RETRIEVE(query="running"), filter=lambda e: date(e.start) >= date(2024, 8, 19) and '
     'date(e.start) <= date(2024, 8, 25))'),
    ('APPLY(l=FILTER(l=RETRIEVE(query="songs"), filter=lambda e: e.start == date(2024, 8, 19) and '
     'e["artist"] == "Muse"), fct=len)',
     'APPLY(l=FILTER(l=RETRIEVE(query="songs"), filter=lambda e: e.start >= date(2024, 8, 19) and '
     'e.start <= date(2024, 8, 25) and e["artist"] == "Muse"), fct=len)'),
])
def test_a_condition_that_keeps_the_first_day_of_a_span_read_keeps_the_span(written, whole):
    assert print_plan(over_the_days_read(parse_plan(written), LAST_WEEK)) == whole


@pytest.mark.parametrize("written", [
    # the span's days said whole already, another day, another comparison
    'FILTER(l=RETRIEVE(query="run"), filter=lambda e: date(e.start) >= date(2024, 8, 19) and '
    'date(e.start) <= date(2024, 8, 25))',
    'FILTER(l=RETRIEVE(query="run"), filter=lambda e: date(e.start) == date(2024, 8, 20))',
    'FILTER(l=RETRIEVE(query="run"), filter=lambda e: date(e.start) > date(2024, 8, 19))',
])
def test_a_condition_that_says_the_span_or_another_day_is_left(written):
    plan = parse_plan(written)
    assert over_the_days_read(plan, LAST_WEEK) is plan
    assert over_the_days_read(plan, []) is plan
