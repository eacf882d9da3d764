"""Time filters the question never asked for are dropped from plans."""
from __future__ import annotations

import pytest

from engine.plan import parse_plan, print_plan, validate_plan
from engine.plan.ground import (count_distinct_things, count_instead_of_adding_text, count_listed_rows, count_orders,
                                count_trips, years_as_said,
                                add_up_the_time_asked_for, days_since_the_last_time,
                                drop_ungrounded_filters, extract_on_its_side, extract_what_the_question_asks,
                                first_or_last_time, group_by_month_of_year,
                                group_by_the_time_asked_for,
                                join_the_day_the_question_names, join_what_the_filter_relates,
                                join_what_the_query_relates, keep_to_the_year_asked, last_month_as_said,
                                one_answer_for_which_most,
                                names_as_mentioned, places_as_extracted, places_in_a_place_are_not_it,
                                retrieve_the_activity_not_the_company, retrieve_what_the_question_says,
                                mail_from_is_received, search_the_service_named,
                                search_without_the_time)

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
    # counted the plays: the artists are grouped first
    ("how many different artists did i listen to in 2022",
     'APPLY(l=FILTER(l=RETRIEVE(query="songs I listened to"), filter=lambda e: year(e.start) == 2022), fct=len)',
     'APPLY(l=GROUP_BY(l=EXTRACT(l=FILTER(l=RETRIEVE(query="songs I listened to"), filter=lambda e: year(e.start) '
     '== 2022), attr_names=["artist"], attr_types=[str]), attr_names=["artist"]), fct=len)'),
    # already grouped: left alone
    ("how many distinct cities did I visit",
     'APPLY(l=GROUP_BY(l=EXTRACT(l=RETRIEVE(query="trip"), attr_names=["city"], attr_types=[str]), '
     'attr_names=["city"]), fct=len)', None),
    # places are counted once however often visited ("cities": "city")
    ("How many places did I visit in Rome, Italy?", 'APPLY(l=RETRIEVE(query="place I visited in Rome"), fct=len)',
     'APPLY(l=GROUP_BY(l=EXTRACT(l=RETRIEVE(query="place I visited in Rome"), attr_names=["place"], '
     'attr_types=[str]), attr_names=["place"]), fct=len)'),
    ("In how many cities was I on holiday in 2022?", 'APPLY(l=RETRIEVE(query="holiday"), fct=len)',
     'APPLY(l=GROUP_BY(l=EXTRACT(l=RETRIEVE(query="holiday"), attr_names=["city"], attr_types=[str]), '
     'attr_names=["city"]), fct=len)'),
    # not a question about distinct things: left alone
    ("how many songs did I play", 'APPLY(l=RETRIEVE(query="songs I played"), fct=len)', None),
    ("How many times did I visit the Louvre?", 'APPLY(l=RETRIEVE(query="visited the Louvre"), fct=len)', None),
])
def test_counting_different_things_counts_groups(question, plan, expected):
    node = parse_plan(plan)
    repaired = count_distinct_things(node, question)
    assert (repaired is node) if expected is None else print_plan(repaired) == expected


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


@pytest.mark.parametrize("question, unit", [
    ("In which year have I watched the most number of a tv series?", "year"),
    ("what month did I watch tv series least", "month"),
])
def test_which_year_groups_by_the_year_not_by_the_thing(question, unit):
    plan = parse_plan(f'ARGMAX(l=GROUP_BY(l=EXTRACT(l={TV}, attr_names=["show"], attr_types=[str]), '
                      'attr_names=["show"]), arg_attr_name="show", val_attr_name="count")')
    assert print_plan(group_by_the_time_asked_for(plan, question)) == (
        f'ARGMAX(l=GROUP_BY(l=MAP(l={TV}, fct=lambda e: {unit}(e.start), res_name="{unit}"), '
        f'attr_names=["{unit}"]), arg_attr_name="{unit}", val_attr_name="count")')


@pytest.mark.parametrize("question", ["Which show did I watch the most?", "Which month of which year did I swim most?",
                                      "which month and year did I watch most tv", "In which year did I watch the most tv?"])
def test_other_argmaxes_keep_their_groups(question):
    plan = parse_plan(f'ARGMAX(l=GROUP_BY(l=MAP(l={TV}, fct=lambda e: year(e.start), res_name="year"), '
                      'attr_names=["year"]), arg_attr_name="year", val_attr_name="count")'
                      if "In which year" in question else
                      f'ARGMAX(l=GROUP_BY(l=EXTRACT(l={TV}, attr_names=["show"], attr_types=[str]), '
                      'attr_names=["show"]), arg_attr_name="show", val_attr_name="count")')
    assert group_by_the_time_asked_for(plan, question) is plan


SWIM = 'RETRIEVE(query="swimming")'
BY_YEAR_AND_MONTH = (f'GROUP_BY(l=MAP(l=MAP(l={SWIM}, fct=lambda e: year(e.start), res_name="year"), '
                     'fct=lambda e: month(e.start), res_name="month"), attr_names=["year", "month"])')


@pytest.mark.parametrize("question, plan, pick", [
    # the benchmark's plans: an extracted month name and year; month and each swim's start
    ("Which month of which year did I swimming the most?",
     f'ARGMAX(l=GROUP_BY(l=EXTRACT(l={SWIM}, attr_names=["month", "year"], attr_types=[str, str]), '
     'attr_names=["month", "year"]), arg_attr_name="month", val_attr_name="count")', "ARGMAX"),
    ("Which month of which year did I swimming the most?",
     f'ARGMAX(l=GROUP_BY(l=EXTRACT(l={SWIM}, attr_names=["month"], attr_types=[str]), '
     'attr_names=["month", "start"]), arg_attr_name="month", val_attr_name="count")', "ARGMAX"),
    ("in which month and year did I swim least",
     f'GROUP_BY(l=EXTRACT(l={SWIM}, attr_names=["month", "year"], attr_types=[int, int]), '
     'attr_names=["month", "year"])', "ARGMIN"),
])
def test_which_month_of_which_year_groups_by_both_of_the_start(question, plan, pick):
    grounded = group_by_month_of_year(parse_plan(plan), question)
    assert print_plan(grounded) == f'{pick}(l={BY_YEAR_AND_MONTH}, arg_attr_name="month", val_attr_name="count")'
    assert not validate_plan(grounded)


def test_month_and_year_groups_of_the_planners_own_stay():
    plan = parse_plan(f'ARGMAX(l={BY_YEAR_AND_MONTH}, arg_attr_name="month", val_attr_name="count")')
    assert group_by_month_of_year(plan, "Which month of which year did I swim the most?") is plan
    # "which month" alone is group_by_the_time_asked_for's; a list of groups asked for stays a list
    other = parse_plan(f'GROUP_BY(l=EXTRACT(l={SWIM}, attr_names=["month"], attr_types=[str]), attr_names=["month"])')
    assert group_by_month_of_year(other, "Which month did I swim the most?") is other
    assert group_by_month_of_year(other, "List my swims by month and year") is other


def _partners(query: str, key: str = "people") -> str:
    return (f'ARGMAX(l=GROUP_BY(l=UNNEST(l=EXTRACT(l=FILTER(l=RETRIEVE(query="{query}"), filter=lambda e: '
            f'year(e.start) == 2023), attr_names=["{key}"], attr_types=[str]), nested_attr_name="{key}", '
            f'unnested_attr_name="person"), attr_names=["person"]), arg_attr_name="person", val_attr_name="count")')


@pytest.mark.parametrize("query, activity", [
    ("running with people", "running"), ("went hiking with friends", "went hiking"),
    ("played tennis together with someone", "played tennis"), ("dinner with my friends", "dinner"),
])
def test_who_came_along_is_extracted_not_searched_for(query, activity):
    plan = parse_plan(_partners(query))
    assert print_plan(retrieve_the_activity_not_the_company(plan, "Who did I run with most often in 2023?")) \
        == _partners(activity)


@pytest.mark.parametrize("plan, question", [
    (_partners("dinner with Ana"), "Who?"),  # a named person is what to search for
    (_partners("running with friends", key="distance"), "Who?"),  # no people extracted
    ('APPLY(l=RETRIEVE(query="coffee with friends"), fct=len)', "Who?"),
    # the company is what is counted (persona p5's question; the plan the planner wrote)
    ('APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="coffee with people"), attr_names=["people"], attr_types=[str]), '
     'filter=lambda e: year(e.start) == year(today()) - 1), fct=len)', "How often did I meet someone for coffee last year"),
])
def test_other_queries_keep_their_company(plan, question):
    node = parse_plan(plan)
    assert retrieve_the_activity_not_the_company(node, question) is node


def test_no_rule_rewrites_a_plan_of_the_example_library():
    from engine.qud.examples import EXAMPLES
    from engine.qud.planner import _grounded
    changed = [ex.question for ex in EXAMPLES if _grounded(node := parse_plan(ex.plan), ex.question) is not node]
    # three known exceptions, left as written because every change to the examples
    # reshuffles the planner's other plans: the example counts an order history's rows,
    # one per item, and count_orders counts its orders (written with fct=orders, TimelineQA
    # multihop went 13 -> 12 of 36); the restaurant after climbing is extracted over
    # the JOIN, which extract_on_its_side moves to the restaurant visits' side; and the
    # questions to ChatGPT are searched as "a chatbot"'s, which search_the_service_named
    # keeps to ChatGPT's
    assert sorted(changed) == ["How many orders did I place on Amazon in 2022?",
                               "What did I ask ChatGPT about most this spring?",
                               "Which restaurant did I go to most after climbing?"]


@pytest.mark.parametrize("query, joined", [
    ("food I ate after playing football", 'JOIN(l1=RETRIEVE(query="playing football"), l2=RETRIEVE(query="food I ate"), '
                                          'condition="i2.start > i1.end and i2.start - i1.end < hours(6)")'),
    ("songs I listened to while running", 'JOIN(l1=RETRIEVE(query="songs I listened to"), l2=RETRIEVE(query="running"), '
                                          'condition="overlaps(i1, i2)")'),
    ("podcasts during my commute", 'JOIN(l1=RETRIEVE(query="podcasts"), l2=RETRIEVE(query="my commute"), '
                                   'condition="overlaps(i1, i2)")'),
])
def test_a_search_for_one_activity_after_another_is_a_join(query, joined):
    plan = parse_plan(f'GROUP_BY(l=EXTRACT(l=RETRIEVE(query="{query}"), attr_names=["cuisine"], attr_types=[str]), '
                      'attr_names=["cuisine"])')
    assert print_plan(join_what_the_query_relates(plan, "which cuisine?")) == (
        f'GROUP_BY(l=EXTRACT(l={joined}, attr_names=["cuisine"], attr_types=[str]), attr_names=["cuisine"])')


@pytest.mark.parametrize("query", ["coffee after 6pm", "walk after work", "runs after June", "tea after lunch",
                                   "restaurant meal", "climbing after"])
def test_a_time_after_an_activity_is_no_join(query):
    plan = parse_plan(f'APPLY(l=RETRIEVE(query="{query}"), fct=len)')
    assert join_what_the_query_relates(plan, "how often?") is plan


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


def test_a_filter_on_the_activity_the_question_says_they_follow_is_a_join():
    question = "which cuisine do i eat most after playing football in 2023?"
    plan = parse_plan(f'GROUP_BY(l=EXTRACT(l=FILTER(l=EXTRACT(l={MEALS}, attr_names=["cuisine", "sport"], '
                      'attr_types=[str, str]), filter=lambda e: e["sport"] == "football" and year(e.start) == 2023), '
                      f'{CUISINES}), attr_names=["cuisine"])')
    assert print_plan(join_what_the_filter_relates(plan, question)) == (
        'GROUP_BY(l=EXTRACT(l=FILTER(l=EXTRACT(l=JOIN(l1=RETRIEVE(query="playing football"), '
        f'l2={MEALS}, {AFTER}), {CUISINES}), filter=lambda e: year(e.start) == 2023), {CUISINES}), '
        'attr_names=["cuisine"])')


def test_a_text_filter_on_what_overlaps_is_a_join():
    plan = parse_plan('APPLY(l=FILTER(l=RETRIEVE(query="songs"), filter=lambda e: contains(e.text, "cycling")), '
                      'fct=len)')
    assert print_plan(join_what_the_filter_relates(plan, "How many songs did I play while cycling?")) == (
        'APPLY(l=JOIN(l1=RETRIEVE(query="songs"), l2=RETRIEVE(query="cycling"), condition="overlaps(i1, i2)"), '
        'fct=len)')


@pytest.mark.parametrize("question, plan", [
    # no activity the events follow
    ("How often did I eat out with football friends?",
     f'APPLY(l=FILTER(l=EXTRACT(l={MEALS}, attr_names=["sport"], attr_types=[str]), '
     'filter=lambda e: e["sport"] == "football"), fct=len)'),
    # a time, not an activity
    ("How often did I eat out after 9pm?",
     f'APPLY(l=FILTER(l={MEALS}, filter=lambda e: hour(e.start) >= 21), fct=len)'),
    # the filter compares nothing the activity says
    ("How often did I eat Italian food after playing football?",
     f'APPLY(l=FILTER(l=EXTRACT(l={MEALS}, {CUISINES}), filter=lambda e: e["cuisine"] == "Italian"), fct=len)'),
    # already a JOIN
    ("How often did I eat Italian food after playing football?",
     f'APPLY(l=FILTER(l=EXTRACT(l=JOIN(l1=RETRIEVE(query="football"), l2={MEALS}, {AFTER}), {CUISINES}), '
     'filter=lambda e: e["cuisine"] == "football"), fct=len)'),
])
def test_other_filters_are_no_join(question, plan):
    node = parse_plan(plan)
    assert join_what_the_filter_relates(node, question) is node


@pytest.mark.parametrize("question, query, searched", [
    ("What did I spend online last year?", "online purchase of a book", "online purchase"),
    ("What did I spend on books online?", "online purchase of a book", "online purchase of a book"),
    ("How many chats did I have about Python?", "ChatGPT conversation about Python", "ChatGPT conversation about Python"),
    ("How many chats did I have with ChatGPT?", "ChatGPT conversation about Python", "ChatGPT conversation"),
    ("How often did I eat out?", "meal at a restaurant", "meal at a restaurant"),   # where: a paraphrase
    ("When did I last visit the Tower of London?", "visit to Tower of London", "visit to Tower of London"),
])
def test_a_search_loses_what_it_is_of_when_the_question_never_says_it(question, query, searched):
    plan = parse_plan(f'APPLY(l=RETRIEVE(query="{query}"), fct=len)')
    assert print_plan(retrieve_what_the_question_says(plan, question)) == f'APPLY(l=RETRIEVE(query="{searched}"), fct=len)'


def test_a_place_in_a_country_is_compared_as_the_extractor_writes_it():
    plan = parse_plan('APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="place I visited"), attr_names=["city"], '
                      'attr_types=[str]), filter=lambda e: e["city"] == "Rome, Italy" and year(e.start) == 2019), '
                      'fct=len)')
    assert print_plan(places_as_extracted(plan, "How many places did I visit in Rome, Italy in 2019?")) == (
        'APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="place I visited"), attr_names=["city"], attr_types=[str]), '
        'filter=lambda e: e["city"] in ["Rome, Italy", "Rome"] and year(e.start) == 2019), fct=len)')


@pytest.mark.parametrize("condition", ['e["city"] == "Rome"', 'e.title == "Rome, Italy"',
                                       'e["tags"] == "work, travel, family"', 'e["city"] != "Rome, Italy"'])
def test_other_comparisons_stay(condition):
    plan = parse_plan(f'FILTER(l=EXTRACT(l=RETRIEVE(query="trip"), attr_names=["city", "tags"], '
                      f'attr_types=[str, str]), filter=lambda e: {condition})')
    assert places_as_extracted(plan, "which trips?") is plan


def test_extracted_places_and_people_the_question_names_also_match_as_mentioned():
    plan = parse_plan('EXTRACT(l=FILTER(l=EXTRACT(l=RETRIEVE(query="visited Bangkok, Thailand"), '
                      'attr_names=["person", "place"], attr_types=[str, str]), filter=lambda e: e["place"] in '
                      '["Bangkok, Thailand", "Bangkok"] and e["person"] == "Valentina" and year(e.start) == 1999), '
                      'attr_names=["place"], attr_types=[str])')
    grounded = names_as_mentioned(plan, "Which places in Bangkok, Thailand did I visit with Valentina in 1999?")
    assert print_plan(grounded) == (
        'EXTRACT(l=FILTER(l=EXTRACT(l=RETRIEVE(query="visited Bangkok, Thailand"), attr_names=["person", "place"], '
        'attr_types=[str, str]), filter=lambda e: (e["place"] in ["Bangkok, Thailand", "Bangkok"] '
        'or contains(e.title, "Bangkok") or contains(e.text, "Bangkok")) and (e["person"] == "Valentina" '
        'or contains(e.title, "Valentina") or contains(e.text, "Valentina")) and year(e.start) == 1999), '
        'attr_names=["place"], attr_types=[str])')
    assert not validate_plan(grounded)
    # every name of a list is a mention
    plan = parse_plan('FILTER(l=EXTRACT(l=RETRIEVE(query="dinner"), attr_names=["people"], attr_types=[str]), '
                      'filter=lambda e: e["people"] in ["Ana", "Leo"])')
    assert print_plan(names_as_mentioned(plan, "dinners with Ana or Leo")).endswith(
        'filter=lambda e: e["people"] in ["Ana", "Leo"] or contains(e.title, "Ana") or contains(e.text, "Ana") '
        'or contains(e.title, "Leo") or contains(e.text, "Leo"))')
    # a mail's addresses
    plan = parse_plan('APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="mail from Patrick Perry"), attr_names=["direction", '
                      '"to"], attr_types=[str, str]), filter=lambda e: e["direction"] == "received" and e["to"] == '
                      '"Patrick Perry"), fct=len)')
    assert 'e["direction"] == "received" and (e["to"] == "Patrick Perry" or contains(e.title, "Patrick Perry") or ' \
        'contains(e.text, "Patrick Perry"))' in print_plan(
            names_as_mentioned(plan, "How many times did I receive mail from Patrick Perry in total?"))


def test_the_place_a_question_asks_for_places_in_is_none_of_them():
    plan = parse_plan('APPLY(l=GROUP_BY(l=EXTRACT(l=FILTER(l=RETRIEVE(query="place I visited"), '
                      'filter=lambda e: contains(e.text, "Rome")), attr_names=["place"], attr_types=[str]), '
                      'attr_names=["place"]), fct=len)')
    question = "How many places did I visit in Rome, Italy?"
    grounded = places_in_a_place_are_not_it(plan, question)
    assert print_plan(grounded) == (
        'APPLY(l=GROUP_BY(l=FILTER(l=EXTRACT(l=FILTER(l=RETRIEVE(query="place I visited"), '
        'filter=lambda e: contains(e.text, "Rome")), attr_names=["place"], attr_types=[str]), '
        'filter=lambda e: not contains("Rome, Italy", e["place"])), attr_names=["place"]), fct=len)')
    assert not validate_plan(grounded)
    # grounding a plan grounded before (the plan cache) changes nothing
    assert print_plan(places_in_a_place_are_not_it(grounded, question)) == print_plan(grounded)
    # other questions and keys stay
    assert places_in_a_place_are_not_it(plan, "How many places did I visit in 2019?") is plan
    cities = parse_plan('EXTRACT(l=RETRIEVE(query="trip"), attr_names=["city"], attr_types=[str])')
    assert places_in_a_place_are_not_it(cities, "Which places in Italy did I visit?") is cities


@pytest.mark.parametrize("condition", [
    'e["person"] != "Valentina"',          # a negation keeps its meaning
    'e["cuisine"] == "Italian"',           # a category, not a place or a name
    'e["city"] == "Paris"',                # a name the question does not say
    'e["city"] == "rome"',                 # a source's own lower-case value
    'e.title == "Valentina"',              # no extracted attribute
])
def test_other_conditions_are_not_widened(condition):
    plan = parse_plan('FILTER(l=EXTRACT(l=RETRIEVE(query="trip"), attr_names=["person", "city", "cuisine"], '
                      f'attr_types=[str, str, str]), filter=lambda e: {condition})')
    assert names_as_mentioned(plan, "Did I eat Italian food in Rome with Valentina?") is plan


GROUPED = f'GROUP_BY(l=EXTRACT(l={MEALS}, {CUISINES}), attr_names=["cuisine"])'


@pytest.mark.parametrize("question, op", [
    ("which cuisine do i eat most after playing football", "ARGMAX"),
    ("What cuisine did I eat the least in 2023?", "ARGMIN"),
    ("Who did I have dinner with most often?", "ARGMAX"),
    ("What do I bake or cook the most often?", "ARGMAX"),
])
def test_which_one_most_takes_the_largest_group(question, op):
    assert print_plan(one_answer_for_which_most(parse_plan(GROUPED), question)) == (
        f'{op}(l={GROUPED}, arg_attr_name="cuisine", val_attr_name="count")')


@pytest.mark.parametrize("question", ["Which 5 cuisines did I eat most?", "What are the most common foods I eat?",
                                      "What cuisines do I eat most?", "which cuisine do i eat",
                                      "top 3 cuisines i ate most"])
def test_lists_and_other_questions_keep_their_groups(question):
    plan = parse_plan(GROUPED)
    assert one_answer_for_which_most(plan, question) is plan


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


@pytest.mark.parametrize("question, plan, expected", [
    # the extracted city and country the search names: the event mentions the city
    ("How many times did I travel to Rome, Italy?",
     f'APPLY(l=FILTER(l=EXTRACT(l={ROME}, attr_names=["city", "country"], attr_types=[str, str]), '
     'filter=lambda e: e["city"] == "Rome" and e["country"] == "Italy"), fct=len)',
     f'APPLY(l=FILTER(l={ROME}, filter=lambda e: contains(e.title, "Rome") or contains(e.text, "Rome")), '
     'fct=trips)'),
    # a time condition stays, and so does an extracted value the question does not say;
    # "Miami, US" is mentioned as "Miami"
    ("How many times did I travel to Miami, US in year 1997?",
     'APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="travel to Miami, US"), attr_names=["destination", "with"], '
     'attr_types=[str, str]), filter=lambda e: year(e.start) == 1997 and e["destination"] in ["Miami, US", "Miami"] '
     'and e["with"] == "Ana"), fct=len)',
     'APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="travel to Miami, US"), attr_names=["with"], attr_types=[str]), '
     'filter=lambda e: year(e.start) == 1997 and e["with"] == "Ana" and '
     '(contains(e.title, "Miami") or contains(e.text, "Miami"))), fct=trips)'),
    # a search that does not name the place keeps the condition
    ("How many trips did I take to Rome?",
     'APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="trip"), attr_names=["city"], attr_types=[str]), '
     'filter=lambda e: e["city"] == "Rome"), fct=len)',
     'APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="trip"), attr_names=["city"], attr_types=[str]), '
     'filter=lambda e: e["city"] == "Rome"), fct=trips)'),
])
def test_counting_travels_counts_trips(question, plan, expected):
    grounded = count_trips(parse_plan(plan), question)
    assert print_plan(grounded) == expected
    assert not validate_plan(grounded)


@pytest.mark.parametrize("question", [
    "How many times did I fly to Rome?",            # each flight counts
    "How many times did I go to the dentist?",
    "How many times did I visit Liberty Bell?",     # visits within one trip count
])
def test_other_counts_are_no_trips(question):
    node = parse_plan(f'APPLY(l={ROME}, fct=len)')
    assert count_trips(node, question) is node


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


@pytest.mark.parametrize("question, op, unit", [
    ("how many minutes did i spend running in Nov 2021", "SUM", "minutes"),
    ("average run in hours in Nov 2021", "AVG", "hours"),
    ("how much time did I spend running in Nov 2021", "SUM", "minutes"),
])
def test_minutes_or_hours_asked_for_add_up_durations_not_distances(question, op, unit):
    plan = parse_plan(f'{op}(l=EXTRACT(l={RUNS_NOV}, attr_names=["distance_km"], attr_types=[float]), '
                      'attr_name="distance_km")')
    grounded = add_up_the_time_asked_for(plan, question)
    assert print_plan(grounded) == (f'{op}(l=MAP(l={RUNS_NOV}, fct=lambda e: in_{unit}(duration(e)), '
                                    f'res_name="{unit}"), attr_name="{unit}")')
    assert not validate_plan(grounded)


@pytest.mark.parametrize("question, attr", [
    ("how many km did i run in Nov 2021", "distance_km"),              # a distance asked for
    ("how many minutes did i spend running in Nov 2021", "duration_min"),  # a time already
])
def test_other_sums_keep_their_attribute(question, attr):
    node = parse_plan(f'SUM(l=EXTRACT(l={RUNS_NOV}, attr_names=["{attr}"], attr_types=[float]), attr_name="{attr}")')
    assert add_up_the_time_asked_for(node, question) is node



@pytest.mark.parametrize("question, attr, timed", [
    ("how many hours did i spend on sports in total", "duration", "duration_hours"),
    ("how many minutes did i spend running in Nov 2021", "time", "time_minutes"),
])
def test_a_time_in_no_unit_is_extracted_in_the_unit_asked_for(question, attr, timed):
    plan = parse_plan(f'SUM(l=EXTRACT(l={RUNS_NOV}, attr_names=["{attr}"], attr_types=[float]), attr_name="{attr}")')
    grounded = add_up_the_time_asked_for(plan, question)
    assert print_plan(grounded) == (f'SUM(l=EXTRACT(l={RUNS_NOV}, attr_names=["{timed}"], attr_types=[float]), '
                                    f'attr_name="{timed}")')
    assert not validate_plan(grounded)
    assert add_up_the_time_asked_for(grounded, question) is grounded  # once is enough
    # "how much time" names no unit: as it was
    assert add_up_the_time_asked_for(plan, "how much time did i spend on sports") is plan


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
    ("How many times did I make chicken parmesan spaghetti after 2019?",
     'APPLY(l=FILTER(l=RETRIEVE(query="made chicken parmesan spaghetti"), filter=lambda e: year(e.start) >= 2019), '
     'fct=len)',
     'APPLY(l=FILTER(l=RETRIEVE(query="made chicken parmesan spaghetti"), filter=lambda e: year(e.start) > 2019), '
     'fct=len)'),
    ("which runs did I do before 2015 in May",
     'FILTER(l=RETRIEVE(query="running"), filter=lambda e: year(e.start) <= 2015 and month(e.start) == 5)',
     'FILTER(l=RETRIEVE(query="running"), filter=lambda e: year(e.start) < 2015 and month(e.start) == 5)'),
    # a day of the year said: its year
    ("How many calendar events were after 2019?",
     'APPLY(l=FILTER(l=RETRIEVE(query="calendar event"), filter=lambda e: e.start > date(2019, 1, 1)), fct=len)',
     'APPLY(l=FILTER(l=RETRIEVE(query="calendar event"), filter=lambda e: year(e.start) > 2019), fct=len)'),
    ("Which runs were before 2015?",
     'FILTER(l=RETRIEVE(query="running"), filter=lambda e: date(e.start) <= date(2015, 12, 31))',
     'FILTER(l=RETRIEVE(query="running"), filter=lambda e: year(e.start) < 2015)'),
])
def test_after_a_year_is_from_the_next_year_on(question, plan, expected):
    assert print_plan(years_as_said(parse_plan(plan), question)) == expected


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
    # no year, two years, or a year said with after/before (years_as_said's)
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


@pytest.mark.parametrize("question, plan", [
    ("How many runs since 2019?", 'FILTER(l=RETRIEVE(query="running"), filter=lambda e: year(e.start) >= 2019)'),
    ("How many runs after 2019?", 'FILTER(l=RETRIEVE(query="running"), filter=lambda e: year(e.start) > 2019)'),
    ("How many runs after 2019?", 'FILTER(l=RETRIEVE(query="running"), filter=lambda e: year(e.start) >= 2018)'),
    ("How many runs after 2019?", 'FILTER(l=RETRIEVE(query="running"), filter=lambda e: e.start < date(2019, 6, 1))'),
    ("How many runs since 2019?", 'FILTER(l=RETRIEVE(query="running"), filter=lambda e: e.start >= date(2019, 1, 1))'),
])
def test_years_said_otherwise_stay(question, plan):
    node = parse_plan(plan)
    assert years_as_said(node, question) is node


def test_what_happened_on_the_day_of_an_activity_is_joined_by_the_day():
    plan = parse_plan('EXTRACT(l=RETRIEVE(query="ate food in Qutub Minar"), attr_names=["food"], attr_types=[str])')
    out = join_the_day_the_question_names(plan, "what did I eat on the day that I visited Qutub Minar?")
    assert print_plan(out) == ('EXTRACT(l=JOIN(l1=RETRIEVE(query="visited Qutub Minar"), '
                               'l2=RETRIEVE(query="ate food"), condition="same_day(i1.start, i2.start)"), '
                               'attr_names=["food"], attr_types=[str])')
    assert validate_plan(out) == []


def test_on_the_day_of_an_activity_the_thing_extracted_is_searched_for():
    plan = parse_plan('EXTRACT(l=RETRIEVE(query="played football"), attr_names=["food"], attr_types=[str])')
    out = join_the_day_the_question_names(plan, "What did I eat on the day I played football?")
    assert print_plan(out) == ('EXTRACT(l=JOIN(l1=RETRIEVE(query="played football"), l2=RETRIEVE(query="food"), '
                               'condition="same_day(i1.start, i2.start)"), attr_names=["food"], attr_types=[str])')


@pytest.mark.parametrize("plan, expected", [
    # the food is the meals', not the game's
    ('EXTRACT(l=JOIN(l1=RETRIEVE(query="played football"), l2=RETRIEVE(query="food"), '
     'condition="same_day(i1.start, i2.start)"), attr_names=["food"], attr_types=[str])',
     'JOIN(l1=RETRIEVE(query="played football"), l2=EXTRACT(l=RETRIEVE(query="food"), attr_names=["food"], '
     'attr_types=[str]), condition="same_day(i1.start, i2.start)")'),
    # ... on the left as well, and a key neither search says stays above
    ('EXTRACT(l=JOIN(l1=RETRIEVE(query="ate food"), l2=RETRIEVE(query="visited Qutub Minar"), '
     'condition="same_day(i1.start, i2.start)"), attr_names=["food", "cuisine"], attr_types=[str, str])',
     'EXTRACT(l=JOIN(l1=EXTRACT(l=RETRIEVE(query="ate food"), attr_names=["food"], attr_types=[str]), '
     'l2=RETRIEVE(query="visited Qutub Minar"), condition="same_day(i1.start, i2.start)"), '
     'attr_names=["cuisine"], attr_types=[str])'),
])
def test_a_thing_extracted_over_a_join_is_extracted_on_the_side_that_searched_it(plan, expected):
    out = extract_on_its_side(parse_plan(plan))
    assert print_plan(out) == expected
    assert validate_plan(out) == []


def test_what_was_eaten_is_extracted_where_the_plan_lists_events():
    plan = parse_plan('JOIN(l1=RETRIEVE(query="visited Qutub Minar"), l2=RETRIEVE(query="ate food"), '
                      'condition="same_day(i1.start, i2.start)")')
    out = extract_on_its_side(extract_what_the_question_asks(plan, "what did I eat on the day that I visited Qutub Minar?"))
    assert print_plan(out) == ('JOIN(l1=RETRIEVE(query="visited Qutub Minar"), l2=EXTRACT(l=RETRIEVE(query="ate food"), '
                               'attr_names=["food"], attr_types=[str]), condition="same_day(i1.start, i2.start)")')
    listed = parse_plan('FILTER(l=RETRIEVE(query="reading"), filter=lambda e: year(e.start) == 2017)')
    assert print_plan(extract_what_the_question_asks(listed, "What did I read in 2017?")) == (
        'EXTRACT(l=FILTER(l=RETRIEVE(query="reading"), filter=lambda e: year(e.start) == 2017), '
        'attr_names=["book"], attr_types=[str])')


@pytest.mark.parametrize("question, plan", [
    # something is extracted already
    ("What did I eat in Rome?", 'EXTRACT(l=RETRIEVE(query="ate food in Rome"), attr_names=["dish"], attr_types=[str])'),
    # a count, not a list of events
    ("What did I eat most often?", 'APPLY(l=RETRIEVE(query="ate food"), fct=len)'),
    # no thing asked for
    ("What did I do on the day I played football?", 'RETRIEVE(query="played football")'),
    ("What did I spend on Amazon in 2023?", 'RETRIEVE(query="Amazon order")'),
    # an order's title is what was bought
    ("What did I order online in the week before my vacation?",
     'JOIN(l1=RETRIEVE(query="vacation trip"), l2=RETRIEVE(query="online order"), '
     'condition="i2.start < i1.start and i1.start - i2.start < days(7)")'),
])
def test_plans_that_extract_or_answer_no_thing_keep_their_shape(question, plan):
    node = parse_plan(plan)
    assert extract_what_the_question_asks(node, question) is node


@pytest.mark.parametrize("plan", [
    # neither search says "cuisine"
    'EXTRACT(l=JOIN(l1=RETRIEVE(query="football"), l2=RETRIEVE(query="restaurant meal"), '
    'condition="i2.start > i1.end"), attr_names=["cuisine"], attr_types=[str])',
    # both say "run"
    'EXTRACT(l=JOIN(l1=RETRIEVE(query="morning run"), l2=RETRIEVE(query="evening run"), '
    'condition="same_day(i1.start, i2.start)"), attr_names=["run_distance"], attr_types=[float])',
    # a time is no thing to search for
    'EXTRACT(l=JOIN(l1=RETRIEVE(query="date night"), l2=RETRIEVE(query="cinema"), '
    'condition="same_day(i1.start, i2.start)"), attr_names=["date"], attr_types=[date])',
])
def test_keys_no_one_side_searched_stay_over_the_join(plan):
    node = parse_plan(plan)
    assert extract_on_its_side(node) is node


@pytest.mark.parametrize("question, plan", [
    # the search is the activity itself: what was eaten is not in the plan to keep
    ("what did I eat on the day that I visited Qutub Minar?", 'RETRIEVE(query="visited Qutub Minar")'),
    # ... nor a thing to search for: who was there is the activity's company
    ("Who was with me on the day I played football?",
     'EXTRACT(l=RETRIEVE(query="played football"), attr_names=["people"], attr_types=[str])'),
    # no day of an activity
    ("What did I eat in Rome, Italy?",
     'GROUP_BY(l=EXTRACT(l=RETRIEVE(query="ate food in Rome, Italy"), attr_names=["food"], attr_types=[str]), '
     'attr_names=["food"])'),
    # already a join
    ("What did I buy on the day I visited the Louvre?",
     'JOIN(l1=RETRIEVE(query="visited the Louvre"), l2=RETRIEVE(query="bought something"), '
     'condition="same_day(i1.start, i2.start)")'),
])
def test_plans_with_no_day_to_join_stay(question, plan):
    node = parse_plan(plan)
    assert join_the_day_the_question_names(node, question) is node


@pytest.mark.parametrize("query, expected", [
    ("running in Nov 2021", "running"), ("running in 2021", "running"), ("walks on Mondays", "walks"),
    ("songs in the morning", "songs"), ("running last year", "running"),
    ("ate in Rome", "ate in Rome"), ("running", "running"), ("in 2021", "in 2021"),
])
def test_a_search_under_a_time_filter_is_without_the_time(query, expected):
    plan = parse_plan(f'FILTER(l=RETRIEVE(query="{query}"), filter=lambda e: year(e.start) == 2021)')
    out = search_without_the_time(plan, "how many minutes did i spend running in Nov 2021")
    assert out.l.query == expected
    assert (out is plan) == (query == expected)


def test_a_search_under_a_filter_on_no_time_keeps_its_words():
    plan = parse_plan('FILTER(l=EXTRACT(l=RETRIEVE(query="songs in 2021"), attr_names=["artist"], attr_types=[str]), '
                      'filter=lambda e: e["artist"] == "Muse")')
    assert search_without_the_time(plan, "songs by Muse in 2021") is plan
    plan = parse_plan('FILTER(l=RETRIEVE(query="songs in 2021"), filter=lambda e: contains(e.title, "Muse"))')
    assert search_without_the_time(plan, "songs by Muse in 2021") is plan


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


@pytest.mark.parametrize("question, plan, expected", [
    ("How many times did I get an email from Astrid Lacroix in total?",
     'APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="email from Astrid Lacroix"), attr_names=["direction", "to"], '
     'attr_types=[str, str]), filter=lambda e: e["direction"] == "sent" and (e["to"] == "Astrid Lacroix" '
     'or contains(e.text, "Astrid Lacroix"))), fct=len)',
     'APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="email from Astrid Lacroix"), attr_names=["direction", "from"], '
     'attr_types=[str, str]), filter=lambda e: e["direction"] == "received" and (e["from"] == "Astrid Lacroix" '
     'or contains(e.text, "Astrid Lacroix"))), fct=len)'),
    # the direction alone: nothing else to turn round
    ("how many mails did i receive in 2023",
     'APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="mail"), attr_names=["direction"], attr_types=[str]), '
     'filter=lambda e: e["direction"] == "sent" and year(e.start) == 2023), fct=len)',
     'APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="mail"), attr_names=["direction"], attr_types=[str]), '
     'filter=lambda e: e["direction"] == "received" and year(e.start) == 2023), fct=len)'),
])
def test_mail_from_someone_is_mail_received(question, plan, expected):
    grounded = mail_from_is_received(parse_plan(plan), question)
    assert print_plan(grounded) == expected
    assert validate_plan(grounded) == []


@pytest.mark.parametrize("question, plan", [
    # sending is what was asked
    ("How many emails did I send to Astrid?",
     'APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="mail I sent"), attr_names=["direction", "to"], '
     'attr_types=[str, str]), filter=lambda e: e["direction"] == "sent" and e["to"] == "Astrid"), fct=len)'),
    ("which mails from my landlord did i reply to",
     'FILTER(l=EXTRACT(l=RETRIEVE(query="mail"), attr_names=["direction"], attr_types=[str]), '
     'filter=lambda e: e["direction"] == "sent")'),
    # received already, or no direction at all
    ("How many emails did I get from Bob?",
     'APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="mail"), attr_names=["direction"], attr_types=[str]), '
     'filter=lambda e: e["direction"] == "received"), fct=len)'),
    ("how many mails from Bob", 'APPLY(l=RETRIEVE(query="mail from Bob"), fct=len)'),
    # no mail in the question
    ("who did I get flowers from", 'FILTER(l=EXTRACT(l=RETRIEVE(query="flowers"), attr_names=["direction"], '
     'attr_types=[str]), filter=lambda e: e["direction"] == "sent")'),
])
def test_mail_sent_or_not_turned_round_stays(question, plan):
    node = parse_plan(plan)
    assert mail_from_is_received(node, question) is node
