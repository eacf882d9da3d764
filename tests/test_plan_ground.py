"""Time filters the question never asked for are dropped from plans."""
from __future__ import annotations

import pytest

from engine.plan import parse_plan, print_plan, validate_plan
from engine.plan.ground import (count_instead_of_adding_text, count_listed_rows, count_orders, days_since_the_last_time,
                                drop_ungrounded_filters, first_or_last_time, keep_to_the_year_asked,
                                last_month_as_said, search_the_service_named)

RUNS = 'RETRIEVE(query="running")'


@pytest.mark.parametrize("question, plan, expected", [
    # a year copied from the examples
    ("Who did I run with most often",
     f'ARGMAX(l=GROUP_BY(l=EXTRACT(l=FILTER(l={RUNS}, filter=lambda e: year(e.start) == 2023), '
     'attr_names=["people"], attr_types=[str]), attr_names=["people"]), arg_attr_name="people", val_attr_name="count")',
     f'ARGMAX(l=GROUP_BY(l=EXTRACT(l={RUNS}, attr_names=["people"], attr_types=[str]), attr_names=["people"]), '
     'arg_attr_name="people", val_attr_name="count")'),
    # "last" alone is not a time window
    ("When did I last go running?",
     f'MAX(l=FILTER(l={RUNS}, filter=lambda e: e.start >= today() - days(7)), attr_name="start")',
     f'MAX(l={RUNS}, attr_name="start")'),
    # an invented summer, with the other condition kept
    ("How often did I run with Ana?",
     f'APPLY(l=FILTER(l={RUNS}, filter=lambda e: contains(e.text, "Ana") and month(e.start) >= 6), fct=len)',
     f'APPLY(l=FILTER(l={RUNS}, filter=lambda e: contains(e.text, "Ana")), fct=len)'),
])
def test_ungrounded_time_conditions_are_dropped(question, plan, expected):
    assert print_plan(drop_ungrounded_filters(parse_plan(plan), question)) == expected


@pytest.mark.parametrize("question, plan", [
    ("How often did I go running in june 2023",
     f'APPLY(l=FILTER(l={RUNS}, filter=lambda e: month(e.start) == 6 and year(e.start) == 2023), fct=len)'),
    ("How many emails did I send last year?",
     'APPLY(l=FILTER(l=RETRIEVE(query="email"), filter=lambda e: year(e.start) == year(today()) - 1), fct=len)'),
    ("How many times did I run this week?",
     f'APPLY(l=FILTER(l={RUNS}, filter=lambda e: e.start >= today() - days(7)), fct=len)'),
    ("How many runs over the last few weeks?",
     f'APPLY(l=FILTER(l={RUNS}, filter=lambda e: e.start >= today() - days(21)), fct=len)'),
    ("How many runs in the past 30 days?",
     f'APPLY(l=FILTER(l={RUNS}, filter=lambda e: e.start >= today() - days(30)), fct=len)'),
    ("How often did I do yoga on weekends?",
     'APPLY(l=FILTER(l=RETRIEVE(query="yoga"), filter=lambda e: weekday(e.start) >= 5), fct=len)'),
    ("What did I buy in December?",
     'FILTER(l=RETRIEVE(query="purchase"), filter=lambda e: month(e.start) == 12)'),
    ("How many runs last month?", f'APPLY(l=FILTER(l={RUNS}, filter=lambda e: month(e.start) == 10), fct=len)'),
    ("How often did I swim in the summer?",
     'APPLY(l=FILTER(l=RETRIEVE(query="swim"), filter=lambda e: month(e.start) >= 6 and month(e.start) <= 8), fct=len)'),
])
def test_time_conditions_the_question_asks_for_stay(question, plan):
    node = parse_plan(plan)
    assert drop_ungrounded_filters(node, question) is node


def test_the_rule_keeps_every_filter_the_example_library_teaches():
    from engine.qud.examples import EXAMPLES
    changed = [ex.question for ex in EXAMPLES
               if drop_ungrounded_filters(node := parse_plan(ex.plan), ex.question) is not node]
    assert changed == []


CHAT = 'RETRIEVE(query="chatgpt conversation")'


@pytest.mark.parametrize("question, plan, expected", [
    # the planner adds up messages for "how many messages": it means to count them
    ("how many messages did I write to chatgpt",
     f'SUM(l=FILTER(l=EXTRACT(l={CHAT}, attr_names=["message"], attr_types=[str]), '
     'filter=lambda e: e["role"] == "user"), attr_name="message")',
     f'APPLY(l=FILTER(l={CHAT}, filter=lambda e: e["role"] == "user"), fct=len)'),
    # the EXTRACT stays when the filter reads the attribute too
    ("How often did I ask ChatGPT something?",
     f'SUM(l=FILTER(l=EXTRACT(l={CHAT}, attr_names=["role", "x"], attr_types=[str, float]), '
     'filter=lambda e: e["role"] == "user"), attr_name="role")',
     f'APPLY(l=FILTER(l=EXTRACT(l={CHAT}, attr_names=["role", "x"], attr_types=[str, float]), '
     'filter=lambda e: e["role"] == "user"), fct=len)'),
    # adding up a number that is no count of the things asked about
    ("How many songs did I listen to in 2023?",
     'SUM(l=EXTRACT(l=FILTER(l=RETRIEVE(query="songs I listened to"), filter=lambda e: year(e.start) == 2023), '
     'attr_names=["total"], attr_types=[float]), attr_name="total")',
     'APPLY(l=FILTER(l=RETRIEVE(query="songs I listened to"), filter=lambda e: year(e.start) == 2023), fct=len)'),
    ("How often did I go running?", f'SUM(l=EXTRACT(l={RUNS}, attr_names=["km"], attr_types=[float]), attr_name="km")',
     f'APPLY(l={RUNS}, fct=len)'),
    ("how many times did I run", f'SUM(l=EXTRACT(l={RUNS}, attr_names=["km"], attr_types=[float]), attr_name="km")',
     f'APPLY(l={RUNS}, fct=len)'),
])
def test_adding_up_text_for_a_how_many_question_becomes_a_count(question, plan, expected):
    assert print_plan(count_instead_of_adding_text(parse_plan(plan), question)) == expected


@pytest.mark.parametrize("question, plan", [
    # numbers are added up as asked
    ("how many kilometres did I run", f'SUM(l=EXTRACT(l={RUNS}, attr_names=["km"], attr_types=[float]), attr_name="km")'),
    # units of measure and the attribute itself are added up
    ("How many hours of Netflix did I watch?",
     'SUM(l=EXTRACT(l=RETRIEVE(query="netflix"), attr_names=["duration_h"], attr_types=[float]), attr_name="duration_h")'),
    ("how many calories did I burn", f'SUM(l=EXTRACT(l={RUNS}, attr_names=["kcal"], attr_types=[int]), attr_name="kcal")'),
    ("How many steps did I walk in May?",
     'SUM(l=EXTRACT(l=RETRIEVE(query="daily steps"), attr_names=["steps"], attr_types=[int]), attr_name="steps")'),
    ("how many euros did I spend on amazon",
     'SUM(l=EXTRACT(l=RETRIEVE(query="amazon order"), attr_names=["total"], attr_types=[float]), attr_name="total")'),
    ("How many pushups did I do?",
     'SUM(l=EXTRACT(l=RETRIEVE(query="workout"), attr_names=["pushups"], attr_types=[int]), attr_name="pushups")'),
    # not a counting question: left for validation to refuse
    ("what did I write to chatgpt", f'SUM(l=EXTRACT(l={CHAT}, attr_names=["m"], attr_types=[str]), attr_name="m")'),
])
def test_other_sums_are_left_alone(question, plan):
    node = parse_plan(plan)
    assert count_instead_of_adding_text(node, question) is node


@pytest.mark.parametrize("question, plan, expected", [
    # "most recently" orders the answer; it names no window
    ("When did I listen to The Honey Walshs most recently?",
     'MAX(l=FILTER(l=RETRIEVE(query="The Honey Walshs"), filter=lambda e: year(e.start) == year(today()) - 1), '
     'attr_name="start")',
     'MAX(l=RETRIEVE(query="The Honey Walshs"), attr_name="start")'),
    # an hour the question never mentions
    ("what weekday do i usually go running",
     f'GROUP_BY(l=MAP(l=FILTER(l={RUNS}, filter=lambda e: hour(e.start) >= 7), fct=lambda e: weekday_name(e.start), '
     'res_name="weekday"), attr_names=["weekday"])',
     f'GROUP_BY(l=MAP(l={RUNS}, fct=lambda e: weekday_name(e.start), res_name="weekday"), attr_names=["weekday"])'),
    # a weekday and a day of the month out of nowhere
    ("How often did I run with Ana?",
     f'APPLY(l=FILTER(l={RUNS}, filter=lambda e: weekday(e.start) == 5 and day(e.start) == 1 and '
     'contains(e.text, "Ana")), fct=len)',
     f'APPLY(l=FILTER(l={RUNS}, filter=lambda e: contains(e.text, "Ana")), fct=len)'),
    # a unit alone names no window: "which year", "each day" (TimelineQA)
    ("Which month of which year did I go swimming the most?",
     'GROUP_BY(l=FILTER(l=RETRIEVE(query="swimming"), filter=lambda e: year(e.start) == year(today()) - 1), '
     'attr_names=["month"])',
     'GROUP_BY(l=RETRIEVE(query="swimming"), attr_names=["month"])'),
    ("How long do I spend on average each day talking to my friends?",
     'AVG(l=FILTER(l=RETRIEVE(query="talk"), filter=lambda e: e.start >= today() - days(1)), attr_name="hours")',
     'AVG(l=RETRIEVE(query="talk"), attr_name="hours")'),
    # "which month" names none (a real ChatGPT export's question)
    ("Which month did I ask ChatGPT the most questions?",
     'ARGMAX(l=GROUP_BY(l=MAP(l=FILTER(l=RETRIEVE(query="question to ChatGPT"), filter=lambda e: month(e.start) >= 3 '
     'and month(e.start) <= 5), fct=lambda e: month(e.start), res_name="month"), attr_names=["month"]), '
     'arg_attr_name="month", val_attr_name="count")',
     'ARGMAX(l=GROUP_BY(l=MAP(l=RETRIEVE(query="question to ChatGPT"), fct=lambda e: month(e.start), res_name="month"), '
     'attr_names=["month"]), arg_attr_name="month", val_attr_name="count")'),
    # dates in a year the question does not name
    ("how many songs did i listen to during my trip to Mexico City",
     'APPLY(l=FILTER(l=RETRIEVE(query="song"), filter=lambda e: e.start >= date(2023, 10, 1)), fct=len)',
     'APPLY(l=RETRIEVE(query="song"), fct=len)'),
    # what the planner knows of the thing asked about is no time window (TimelineQA)
    ("How many times did I visit Liberty Bell?",
     'APPLY(l=FILTER(l=RETRIEVE(query="visited Liberty Bell"), filter=lambda e: e.start == date(1776, 7, 4)), fct=len)',
     'APPLY(l=RETRIEVE(query="visited Liberty Bell"), fct=len)'),
    # an end past the start's day, copied from "nights out past midnight" (TimelineQA)
    ("When did I last go get groceries with Chloe?",
     'MAX(l=FILTER(l=RETRIEVE(query="go get groceries with Chloe"), filter=lambda e: e.end is not None and '
     'date(e.end) > date(e.start)), attr_name="start")',
     'MAX(l=RETRIEVE(query="go get groceries with Chloe"), attr_name="start")'),
])
def test_more_ungrounded_time_conditions_are_dropped(question, plan, expected):
    assert print_plan(drop_ungrounded_filters(parse_plan(plan), question)) == expected


@pytest.mark.parametrize("question, plan", [
    ("how often did i start watching netflix after 10pm in 2021",
     'APPLY(l=FILTER(l=RETRIEVE(query="Netflix"), filter=lambda e: hour(e.start) >= 22), fct=len)'),
    ("How many runs before 7 am?", f'APPLY(l=FILTER(l={RUNS}, filter=lambda e: e.start.hour < 7), fct=len)'),
    ("How many times did I run on a Sunday?", f'APPLY(l=FILTER(l={RUNS}, filter=lambda e: weekday(e.start) == 6), fct=len)'),
    ("What did I do on the 14th of March 2022?",
     'FILTER(l=RETRIEVE(query="event"), filter=lambda e: e.start >= date(2022, 3, 14) and day(e.start) == 14)'),
    ("Who did I meet in the evenings?", 'FILTER(l=RETRIEVE(query="meeting"), filter=lambda e: hour(e.start) >= 18)'),
    ("How many meetings ran until after 6 pm?",
     'APPLY(l=FILTER(l=RETRIEVE(query="meeting"), filter=lambda e: hour(e.end) >= 18), fct=len)'),
    ("How many trips lasted more than a week?",
     'APPLY(l=FILTER(l=RETRIEVE(query="trip"), filter=lambda e: e.end - e.start > days(7)), fct=len)'),
])
def test_time_of_day_weekday_and_dates_the_question_asks_for_stay(question, plan):
    node = parse_plan(plan)
    assert drop_ungrounded_filters(node, question) is node


@pytest.mark.parametrize("question, plan, expected", [
    ("How many times did I go to 池田 Banh Mi in 2021?",
     'FILTER(l=RETRIEVE(query="visited 池田 Banh Mi"), filter=lambda e: year(e.start) == 2021)',
     'APPLY(l=FILTER(l=RETRIEVE(query="visited 池田 Banh Mi"), filter=lambda e: year(e.start) == 2021), fct=len)'),
    ("how often did I swim", 'RETRIEVE(query="swimming")', 'APPLY(l=RETRIEVE(query="swimming"), fct=len)'),
    ("How many places did I visit in Rome, Italy?",
     'GROUP_BY(l=EXTRACT(l=RETRIEVE(query="visited Rome"), attr_names=["place"], attr_types=[str]), '
     'attr_names=["place"])',
     'APPLY(l=GROUP_BY(l=EXTRACT(l=RETRIEVE(query="visited Rome"), attr_names=["place"], attr_types=[str]), '
     'attr_names=["place"]), fct=len)'),
])
def test_a_counting_question_answered_with_a_list_counts_it(question, plan, expected):
    assert print_plan(count_listed_rows(parse_plan(plan), question)) == expected


@pytest.mark.parametrize("question, plan", [
    ("How many km did I run?", f'EXTRACT(l={RUNS}, attr_names=["distance_km"], attr_types=[float])'),
    ("Which runs did I do in May?", f'FILTER(l={RUNS}, filter=lambda e: month(e.start) == 5)'),
    ("How many times did I run?", f'APPLY(l={RUNS}, fct=len)'),
    ("How many songs did I play per artist?",
     'GROUP_BY(l=EXTRACT(l=RETRIEVE(query="songs I listened to"), attr_names=["artist"], attr_types=[str]), '
     'attr_names=["artist"])'),
])
def test_lists_that_are_no_count_stay(question, plan):
    node = parse_plan(plan)
    assert count_listed_rows(node, question) is node


@pytest.mark.parametrize("question, wrapped", [
    ("When did I eat out with Patrick Perry for the first time?", "MIN"),
    ("when did i first go swimming", "MIN"),
    ("When did I last eat at Casa Lobato", "MAX"),
    ("When did I listen to The Honey Walshs most recently?", "MAX"),
    ("What day was my latest run?", "MAX"),
])
def test_when_first_or_last_takes_the_first_or_last_start(question, wrapped):
    plan = parse_plan(f'FILTER(l={RUNS}, filter=lambda e: contains(e.text, "x"))')
    assert print_plan(first_or_last_time(plan, question)) == f'{wrapped}(l={print_plan(plan)}, attr_name="start")'


@pytest.mark.parametrize("question, written, meant", [
    ("When did I last listen to Lauren Davis?", "MIN", "MAX"),
    ("when did i first eat out with Benito", "MAX", "MIN"),
])
def test_a_first_or_last_start_taken_the_wrong_way_round_is_turned(question, written, meant):
    rows = f'FILTER(l={RUNS}, filter=lambda e: contains(e.text, "x"))'
    plan = parse_plan(f'{written}(l={rows}, attr_name="start")')
    assert print_plan(first_or_last_time(plan, question)) == f'{meant}(l={rows}, attr_name="start")'
    right = parse_plan(f'{meant}(l={rows}, attr_name="start")')
    assert first_or_last_time(right, question) is right
    # a MIN of something else is the question's, not the time's
    other = parse_plan(f'{written}(l=EXTRACT(l={rows}, attr_names=["km"], attr_types=[float]), attr_name="km")')
    assert first_or_last_time(other, question) is other


@pytest.mark.parametrize("question", ["Which runs did I do first in 2023?", "when did I run",
                                      "When did I first and last run?"])
def test_other_lists_are_no_first_or_last(question):
    plan = parse_plan(f'FILTER(l={RUNS}, filter=lambda e: contains(e.text, "x"))')
    assert first_or_last_time(plan, question) is plan


TV = 'RETRIEVE(query="watched a tv series")'


SWIM = 'RETRIEVE(query="swimming")'
BY_YEAR_AND_MONTH = (f'GROUP_BY(l=MAP(l=MAP(l={SWIM}, fct=lambda e: year(e.start), res_name="year"), '
                     'fct=lambda e: month(e.start), res_name="month"), attr_names=["year", "month"])')


def _partners(query: str, key: str = "people") -> str:
    return (f'ARGMAX(l=GROUP_BY(l=UNNEST(l=EXTRACT(l=FILTER(l=RETRIEVE(query="{query}"), filter=lambda e: '
            f'year(e.start) == 2023), attr_names=["{key}"], attr_types=[str]), nested_attr_name="{key}", '
            f'unnested_attr_name="person"), attr_names=["person"]), arg_attr_name="person", val_attr_name="count")')


def test_no_rule_rewrites_a_plan_of_the_example_library():
    from engine.qud.examples import EXAMPLES
    from engine.qud.planner import _grounded
    changed = [ex.question for ex in EXAMPLES if _grounded(node := parse_plan(ex.plan), ex.question) is not node]
    # two known exceptions, left as written because every change to the examples
    # reshuffles the planner's other plans: the example counts an order history's rows,
    # one per item, and count_orders counts its orders (written with fct=orders, TimelineQA
    # multihop went 13 -> 12 of 36); and the questions to ChatGPT are searched as "a
    # chatbot"'s, which search_the_service_named keeps to ChatGPT's
    assert sorted(changed) == ["How many orders did I place on Amazon in 2022?",
                               "What did I ask ChatGPT about most this spring?"]


MEALS = 'RETRIEVE(query="restaurant meal")'
CUISINES = 'attr_names=["cuisine"], attr_types=[str]'
AFTER = 'condition="i2.start > i1.end and i2.start - i1.end < hours(6)"'


@pytest.mark.parametrize("question, kept", [
    ("which cuisine do i eat most after playing football", False),  # the planner's "Italian"
    ("How often did I eat Italian food?", True),
    ("how often did i eat italian food", True),                       # any case
    ("How often did I eat Italian or Greek food?", True),
])
def test_a_name_the_question_does_not_say_is_no_filter(question, kept):
    plan = parse_plan(f'APPLY(l=FILTER(l=EXTRACT(l={MEALS}, {CUISINES}), '
                      'filter=lambda e: e["cuisine"] == "Italian"), fct=len)')
    grounded = drop_ungrounded_filters(plan, question)
    assert (grounded is plan) == kept
    if not kept:
        assert print_plan(grounded) == f'APPLY(l=EXTRACT(l={MEALS}, {CUISINES}), fct=len)'


def test_names_said_in_other_words_and_values_in_lower_case_stay():
    plan = parse_plan('APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="songs"), attr_names=["artist", "status"], '
                      'attr_types=[str, str]), filter=lambda e: contains(e["artist"], "Beatle") '
                      'and e["status"] == "finished"), fct=len)')
    assert drop_ungrounded_filters(plan, "how many songs by the beatles did i play") is plan


GROUPED = f'GROUP_BY(l=EXTRACT(l={MEALS}, {CUISINES}), attr_names=["cuisine"])'


CHATS = 'EXTRACT(l=RETRIEVE(query="ChatGPT conversation"), attr_names=["role"], attr_types=[str])'


def test_a_first_start_is_answered_with_the_start_and_who_spoke_needs_the_question():
    from engine.qud.planner import _grounded
    plan = parse_plan(f'ARGMIN(l=FILTER(l={CHATS}, filter=lambda e: e["role"] == "user"), arg_attr_name="role", '
                      'val_attr_name="start")')
    assert print_plan(_grounded(plan, "When was my first conversation with ChatGPT?")) == (
        'MIN(l=RETRIEVE(query="ChatGPT conversation"), attr_name="start")')
    asked = "When did I first ask ChatGPT a question?"
    assert print_plan(_grounded(plan, asked)) == (
        f'MIN(l=FILTER(l={CHATS}, filter=lambda e: e["role"] == "user"), attr_name="start")')


ROME = 'RETRIEVE(query="travel to Rome")'


TRAVEL = 'RETRIEVE(query="travel")'
SINCE = (f'MIN(l=MAP(l={TRAVEL}, fct=lambda e: (today() - date(e.start)).days, res_name="days_ago"), '
         'attr_name="days_ago")')


@pytest.mark.parametrize("question, plan", [
    ("how many days ago did i last travel", f'MAX(l={TRAVEL}, attr_name="start")'),
    ("How long since I travelled?", TRAVEL),
    # an argmax of extracted "days" over the one search
    ("how many days ago did i last travel",
     f'ARGMAX(l=EXTRACT(l=GROUP_BY(l=EXTRACT(l={TRAVEL}, attr_names=["start"], attr_types=[datetime]), '
     'attr_names=["start"]), attr_names=["days"], attr_types=[float]), arg_attr_name="start", val_attr_name="days")'),
])
def test_how_many_days_ago_counts_the_days_since_the_latest(question, plan):
    grounded = days_since_the_last_time(parse_plan(plan), question)
    assert print_plan(grounded) == SINCE
    filtered = parse_plan(f'MAX(l=FILTER(l={TRAVEL}, filter=lambda e: year(e.start) == 2022), attr_name="start")')
    assert "FILTER(l=RETRIEVE(query=\"travel\"), filter=lambda e: year(e.start) == 2022)" \
        in print_plan(days_since_the_last_time(filtered, question))
    assert not validate_plan(grounded)


@pytest.mark.parametrize("question, plan", [
    ("When did I last travel?", f'MAX(l={TRAVEL}, attr_name="start")'),   # a date is asked for
    ("how many days ago did i last travel",
     f'APPLY(l=JOIN(l1={TRAVEL}, l2=RETRIEVE(query="run"), condition="overlaps(i1, i2)"), fct=len)'),
])
def test_other_latest_starts_stay(question, plan):
    node = parse_plan(plan)
    assert days_since_the_last_time(node, question) is node


RUNS_NOV = 'FILTER(l=RETRIEVE(query="running"), filter=lambda e: year(e.start) == 2021 and month(e.start) == 11)'


@pytest.mark.parametrize("question, counted", [
    ("How often did I order something on Amazon in total", "orders"),
    ("did i buy stuff on amazon a lot last month? how many times", "orders"),
    ("How many orders did I place in 2022?", "orders"),
    ("How many things did I buy on Amazon?", "len"),     # the items
    ("How often did I go running?", "len"),
])
def test_counting_how_often_something_was_ordered_counts_orders(question, counted):
    node = parse_plan('APPLY(l=RETRIEVE(query="Amazon purchase"), fct=len)')
    assert print_plan(count_orders(node, question)) == f'APPLY(l=RETRIEVE(query="Amazon purchase"), fct={counted})'


@pytest.mark.parametrize("question, plan, expected", [
    ("longest run in 2023",
     'MAX(l=EXTRACT(l=RETRIEVE(query="running"), attr_names=["distance_km"], attr_types=[float]), '
     'attr_name="distance_km")',
     'MAX(l=EXTRACT(l=FILTER(l=RETRIEVE(query="running"), filter=lambda e: year(e.start) == 2023), '
     'attr_names=["distance_km"], attr_types=[float]), attr_name="distance_km")'),
    # above the FILTERs the plan has, with the month said with the year
    ("How many runs before 8am did I do in May 2022?",
     'APPLY(l=FILTER(l=RETRIEVE(query="running"), filter=lambda e: hour(e.start) < 8), fct=len)',
     'APPLY(l=FILTER(l=FILTER(l=RETRIEVE(query="running"), filter=lambda e: hour(e.start) < 8), '
     'filter=lambda e: year(e.start) == 2022 and month(e.start) == 5), fct=len)'),
])
def test_a_year_the_plan_leaves_out_is_kept_to(question, plan, expected):
    grounded = keep_to_the_year_asked(parse_plan(plan), question)
    assert print_plan(grounded) == expected
    assert validate_plan(grounded) == []


@pytest.mark.parametrize("question, plan", [
    # the plan says the year already (in a filter, a query, or a date)
    ("longest run in 2023", 'FILTER(l=RETRIEVE(query="running"), filter=lambda e: e.start >= date(2023, 1, 1))'),
    ("songs I played in 2023", 'RETRIEVE(query="songs played in 2023")'),
    # no year, two years, or a year said with after/before
    ("longest run", 'RETRIEVE(query="running")'),
    ("runs in 2022 and in 2023", 'RETRIEVE(query="running")'),
    ("runs after 2019 and in 2023", 'RETRIEVE(query="running")'),
    # two searches: which one the year is about is not for a rule to guess
    ("music while running in 2023",
     'JOIN(l1=RETRIEVE(query="music"), l2=RETRIEVE(query="running"), condition="overlaps(i1, i2)")'),
])
def test_a_year_the_plan_says_or_cannot_place_stays(question, plan):
    node = parse_plan(plan)
    assert keep_to_the_year_asked(node, question) is node


LAST_MONTH = ("year(e.start) == year(today() - days(day(today()))) and "
              "month(e.start) == month(today() - days(day(today())))")


@pytest.mark.parametrize("question, plan, expected", [
    # the year of a month ago, without its month: the whole year counted
    ("how often did i order something on amazon last month?",
     'APPLY(l=FILTER(l=RETRIEVE(query="amazon order"), filter=lambda e: year(e.start) == year(today() - days(30))), '
     'fct=len)',
     f'APPLY(l=FILTER(l=RETRIEVE(query="amazon order"), filter=lambda e: {LAST_MONTH}), fct=len)'),
    # nothing relative to today: the one search is kept to last month
    ("How far did I run in the previous month?",
     'SUM(l=EXTRACT(l=RETRIEVE(query="running"), attr_names=["distance_km"], attr_types=[float]), '
     'attr_name="distance_km")',
     f'SUM(l=EXTRACT(l=FILTER(l=RETRIEVE(query="running"), filter=lambda e: {LAST_MONTH}), '
     'attr_names=["distance_km"], attr_types=[float]), attr_name="distance_km")'),
])
def test_last_month_is_the_month_before_todays(question, plan, expected):
    from datetime import date, datetime

    from engine.operators import Models, OperatorContext
    from engine.operators.relational import filter_rows
    from engine.plan.rows import Row

    grounded = last_month_as_said(parse_plan(plan), question)
    assert print_plan(grounded) == expected
    assert validate_plan(grounded) == []
    # on 31 January, last month is December of the year before (30 days back is still January)
    node = parse_plan(f'FILTER(l=RETRIEVE(query="x"), filter=lambda e: {LAST_MONTH})')
    rows = [Row({"start": datetime(y, m, d, 12)}, (f"{y}-{m}-{d}",)) for y, m, d in
            ((2023, 12, 1), (2023, 12, 31), (2024, 1, 1), (2022, 12, 15), (2023, 11, 30))]
    ctx = OperatorContext(store=None, models=Models(), today=date(2024, 1, 31))
    assert [sorted(r.ids) for r in filter_rows(node, rows, ctx)] == [["2023-12-1"], ["2023-12-31"]]


@pytest.mark.parametrize("question, plan", [
    # the plan reads a month already, or counts back from today itself
    ("runs last month", 'FILTER(l=RETRIEVE(query="running"), filter=lambda e: month(e.start) == 7)'),
    ("runs last month", 'FILTER(l=RETRIEVE(query="running"), filter=lambda e: e.start >= today() - days(30))'),
    # not last month, or the last month of something
    ("runs last year", 'FILTER(l=RETRIEVE(query="running"), filter=lambda e: year(e.start) == year(today()) - 1)'),
    ("runs in the last month of 2023", 'RETRIEVE(query="running")'),
    # two searches: which one the month is about is not for a rule to guess
    ("music while running last month",
     'JOIN(l1=RETRIEVE(query="music"), l2=RETRIEVE(query="running"), condition="overlaps(i1, i2)")'),
])
def test_last_month_said_by_the_plan_or_not_asked_stays(question, plan):
    node = parse_plan(plan)
    assert last_month_as_said(node, question) is node


@pytest.mark.parametrize("question, plan, expected", [
    ("When did I last talk to ChatGPT?",
     'MAX(l=RETRIEVE(query="chatbot conversation"), attr_name="start")',
     'MAX(l=RETRIEVE(query="ChatGPT chatbot conversation"), attr_name="start")'),
    ("how many shows did i watch on netflix in 2023",
     'APPLY(l=FILTER(l=RETRIEVE(query="watched a show"), filter=lambda e: year(e.start) == 2023), fct=len)',
     'APPLY(l=FILTER(l=RETRIEVE(query="Netflix watched a show"), filter=lambda e: year(e.start) == 2023), fct=len)'),
])
def test_the_service_the_question_names_is_searched_for(question, plan, expected):
    grounded = search_the_service_named(parse_plan(plan), question)
    assert print_plan(grounded) == expected
    assert validate_plan(grounded) == []


@pytest.mark.parametrize("question, plan", [
    # the search names it (or another service) already
    ("how much did i spend on amazon in 2023", 'RETRIEVE(query="Amazon purchase")'),
    ("songs on spotify", 'RETRIEVE(query="music I streamed on Spotify")'),
    # no service, or two: which the search is about is not for a rule to guess
    ("When did I last go running?", 'MAX(l=RETRIEVE(query="running"), attr_name="start")'),
    ("did I use Spotify or Netflix more", 'RETRIEVE(query="streaming")'),
    # two searches
    ("which artist did i listen to most on spotify while running",
     'JOIN(l1=RETRIEVE(query="songs I listened to"), l2=RETRIEVE(query="running"), condition="overlaps(i1, i2)")'),
])
def test_a_search_for_the_service_or_none_named_stays(question, plan):
    node = parse_plan(plan)
    assert search_the_service_named(node, question) is node
