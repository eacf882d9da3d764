"""Plan rewrites that keep the answer and cut the extractor's work."""
from __future__ import annotations

import pytest

from engine.plan import check_plan, parse_plan
from engine.plan.optimize import drop_unread_extracts, extract_once, filter_before_extract
from engine.plan.printer import print_plan

RUNS = 'RETRIEVE(query="running")'


def _opt(text: str, rewrite=filter_before_extract) -> str:
    plan = parse_plan(text)
    out = rewrite(plan)
    check_plan(out)
    return print_plan(out)


@pytest.mark.parametrize("before, after", [
    # the whole condition reads what events have: it runs first, and the FILTER above goes
    (f'SUM(l=FILTER(l=EXTRACT(l={RUNS}, attr_names=["km"], attr_types=[float]), '
     f'filter=lambda e: year(e.start) == 2023), attr_name="km")',
     f'SUM(l=EXTRACT(l=FILTER(l={RUNS}, filter=lambda e: year(e.start) == 2023), attr_names=["km"], '
     f'attr_types=[float]), attr_name="km")'),
    # through two EXTRACTs, each condition as far as it can go: "km" down to its EXTRACT
    (f'FILTER(l=EXTRACT(l=EXTRACT(l={RUNS}, attr_names=["km"], attr_types=[float]), attr_names=["people"], '
     f'attr_types=[str]), filter=lambda e: e["km"] > 5 and month(e.start) == 6)',
     f'EXTRACT(l=FILTER(l=EXTRACT(l=FILTER(l={RUNS}, filter=lambda e: month(e.start) == 6), '
     f'attr_names=["km"], attr_types=[float]), filter=lambda e: e["km"] > 5), attr_names=["people"], '
     f'attr_types=[str])'),
])
def test_conditions_on_what_events_have_run_before_extract(before, after):
    assert _opt(before) == print_plan(parse_plan(after))


@pytest.mark.parametrize("text", [
    # reads the extracted attribute
    f'FILTER(l=EXTRACT(l={RUNS}, attr_names=["km"], attr_types=[float]), filter=lambda e: e["km"] > 5)',
    # passes the row itself to a function: left whole
    f'FILTER(l=EXTRACT(l={RUNS}, attr_names=["km"], attr_types=[float]), '
    f'filter=lambda e: in_hours(duration(e)) > 1)',
    # no EXTRACT under the FILTER
    f'FILTER(l={RUNS}, filter=lambda e: year(e.start) == 2023)',
])
def test_plans_without_such_a_condition_are_left_as_they_are(text):
    plan = parse_plan(text)
    assert filter_before_extract(plan) is plan


@pytest.mark.parametrize("before, after", [
    # the same key and type extracted again above a FILTER: the upper EXTRACT goes
    (f'GROUP_BY(l=EXTRACT(l=FILTER(l=EXTRACT(l={RUNS}, attr_names=["people", "km"], attr_types=[str, float]), '
     f'filter=lambda e: e["km"] > 5), attr_names=["people"], attr_types=[str]), attr_names=["people"])',
     f'GROUP_BY(l=FILTER(l=EXTRACT(l={RUNS}, attr_names=["people", "km"], attr_types=[str, float]), '
     f'filter=lambda e: e["km"] > 5), attr_names=["people"])'),
    # only the repeated key goes; another type is another question
    (f'SUM(l=EXTRACT(l=EXTRACT(l={RUNS}, attr_names=["km"], attr_types=[str]), attr_names=["km", "minutes"], '
     f'attr_types=[float, float]), attr_name="km")',
     f'SUM(l=EXTRACT(l=EXTRACT(l={RUNS}, attr_names=["km"], attr_types=[str]), attr_names=["km", "minutes"], '
     f'attr_types=[float, float]), attr_name="km")'),
    (f'SUM(l=EXTRACT(l=EXTRACT(l={RUNS}, attr_names=["km"], attr_types=[float]), attr_names=["km", "minutes"], '
     f'attr_types=[float, float]), attr_name="km")',
     f'SUM(l=EXTRACT(l=EXTRACT(l={RUNS}, attr_names=["km"], attr_types=[float]), attr_names=["minutes"], '
     f'attr_types=[float]), attr_name="km")'),
])
def test_what_was_extracted_below_is_not_extracted_again(before, after):
    assert _opt(before, extract_once) == print_plan(parse_plan(after))


def test_an_extract_behind_a_group_by_is_not_looked_through():
    plan = parse_plan(f'EXTRACT(l=GROUP_BY(l=EXTRACT(l={RUNS}, attr_names=["people"], attr_types=[str]), '
                      f'attr_names=["people"]), attr_names=["people"], attr_types=[str])')
    assert extract_once(plan) is plan


CHATS = 'RETRIEVE(query="ChatGPT conversation")'


@pytest.mark.parametrize("before, after", [
    # a count never sees the role
    (f'APPLY(l=FILTER(l=EXTRACT(l={CHATS}, attr_names=["role"], attr_types=[str]), '
     f'filter=lambda e: year(e.start) == 2023), fct=len)',
     f'APPLY(l=FILTER(l={CHATS}, filter=lambda e: year(e.start) == 2023), fct=len)'),
    # the filter reads one of two extracted keys; the sum reads its own
    (f'SUM(l=FILTER(l=EXTRACT(l={RUNS}, attr_names=["km", "people", "mood"], attr_types=[float, str, str]), '
     f'filter=lambda e: e["mood"] == "good"), attr_name="km")',
     f'SUM(l=FILTER(l=EXTRACT(l={RUNS}, attr_names=["km", "mood"], attr_types=[float, str]), '
     f'filter=lambda e: e["mood"] == "good"), attr_name="km")'),
    # through a GROUP_BY and a MAP
    (f'ARGMAX(l=GROUP_BY(l=MAP(l=EXTRACT(l={RUNS}, attr_names=["km", "people"], attr_types=[float, str]), '
     f'fct=lambda e: month(e.start), res_name="month"), attr_names=["month"]), arg_attr_name="month", '
     f'val_attr_name="count")',
     f'ARGMAX(l=GROUP_BY(l=MAP(l={RUNS}, fct=lambda e: month(e.start), res_name="month"), '
     f'attr_names=["month"]), arg_attr_name="month", val_attr_name="count")'),
])
def test_extracted_attributes_nothing_reads_are_not_extracted(before, after):
    assert _opt(before, drop_unread_extracts) == print_plan(parse_plan(after))


@pytest.mark.parametrize("text", [
    # rows are the answer: what they show is read
    f'FILTER(l=EXTRACT(l={RUNS}, attr_names=["km"], attr_types=[float]), filter=lambda e: year(e.start) == 2023)',
    # a filter that passes the row to a function may read anything
    f'APPLY(l=FILTER(l=EXTRACT(l={RUNS}, attr_names=["km"], attr_types=[float]), '
    f'filter=lambda e: in_hours(duration(e)) > 1), fct=len)',
    # below a JOIN: its condition and the rows above decide
    f'APPLY(l=JOIN(l1=EXTRACT(l={RUNS}, attr_names=["km"], attr_types=[float]), l2={CHATS}, '
    f'condition="overlaps(i1, i2)"), fct=len)',
    # a group's rows, read by name above the GROUP_BY: the km of each month
    f'ARGMAX(l=MAP(l=GROUP_BY(l=MAP(l=EXTRACT(l={RUNS}, attr_names=["km"], attr_types=[float]), '
    f'fct=lambda e: month(e.start), res_name="month"), attr_names=["month"]), fct=lambda e: sum(e.group["km"]), '
    f'res_name="total"), arg_attr_name="month", val_attr_name="total")',
])
def test_extracts_that_may_be_read_stay(text):
    plan = parse_plan(text)
    assert drop_unread_extracts(plan) is plan
