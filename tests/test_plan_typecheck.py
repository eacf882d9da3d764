"""Plan expressions are type-checked before they run: a call or comparison the
interpreter rejects on every row, or one that is never true, is a validation
problem (so the planner tries again), and well-typed plans pass untouched."""
from __future__ import annotations

import gzip
import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from engine.plan import expr as X
from engine.plan import parse_plan, validate_plan
from engine.plan import typecheck as T
from engine.plan.rows import Row
from engine.qud import QudPlanner
from engine.qud.examples import EXAMPLES
from tests.test_qud import ScriptedLLM

ROOT = Path(__file__).resolve().parents[1]
CTX = X.EvalContext(today=date(2024, 5, 17))
ROW = Row({"start": datetime(2024, 4, 3, 18, 30, tzinfo=UTC),
           "end": datetime(2024, 4, 3, 19, 15, tzinfo=UTC), "source": "strava", "kind": "workout",
           "title": "Evening run", "text": "Evening run", "d": date(2024, 4, 3), "n": 7, "who": "Ada"}, ["ev1"])
EXTRACTED = 'EXTRACT(l=RETRIEVE(query="x"), attr_names=["d", "n", "who"], attr_types=[date, int, str])'


def _filter(body: str) -> str:
    return f"APPLY(l=FILTER(l={EXTRACTED}, filter=lambda e: {body}), fct=len)"


# (filter body, what the problem says): each fails on every row, or is never true
ILL_TYPED = [
    ("month(year(e.start) == 2024 and month(e.start) == 4) == 4", "month() takes a date or datetime"),
    ("e.start == 2024", "compares a datetime with a number: never true"),
    ("e.start >= \"2024-01-01\"", "cannot order a datetime against a text"),
    ("e[\"d\"] == \"2024-04-03\"", "compares a date with a text: never true"),
    ("e[\"n\"] > e.start", "cannot order a number against a datetime"),
    ("in_hours(e.start) > 1", "in_hours() takes a duration"),
    ("e.start + 3 > today()", "cannot compute datetime + number"),
    ("lower(e[\"n\"]) == \"x\"", "lower() takes a text"),
    ("hour(e[\"d\"]) > 17", "hour() takes a datetime"),
    ("e.title.year == 2024", "reads .year of a text"),
    ("\"Ada\" in e[\"n\"]", "looks inside a text or list"),
    ("e.start == today() - 3", "cannot compute date - number"),
]


@pytest.mark.parametrize("body,message", ILL_TYPED)
def test_an_ill_typed_filter_is_a_problem_and_does_fail_when_run(body, message):
    [problem] = validate_plan(parse_plan(_filter(body)))
    assert problem.operator == "FILTER" and message in problem.message
    # the checker says what the interpreter does: an error, or false on a row that has every value
    lam = parse_plan(_filter(body)).l.filter
    try:
        result = X.call_lambda(lam, (ROW,), CTX)
    except X.EvalError:
        return
    assert result is False and "never true" in message


WELL_TYPED = [
    "year(e.start) == 2024 and month(e.start) == 4",
    "e.start >= today() - days(60)",
    "e[\"d\"] == date(2024, 4, 3) and e[\"n\"] >= 7",
    "e[\"d\"] >= e.start - days(1)",  # a date against a datetime: local midnight
    "in_minutes(e.end - e.start) > 30 and hour(e.start) >= 18",
    "\"run\" in lower(e.title) and contains(e.text, \"RUN\")",
    "weekday(e.start) in [2, 3] or e.start.year == 2023",
    "e[\"who\"] == \"Ada\" and len(e[\"who\"]) == 3",
    "(e[\"n\"] if e[\"n\"] is not None else 0) > 3",
]


@pytest.mark.parametrize("body", WELL_TYPED)
def test_a_well_typed_filter_passes_and_runs(body):
    plan = parse_plan(_filter(body))
    assert validate_plan(plan) == []
    assert X.call_lambda(plan.l.filter, (ROW,), CTX) is True


def test_types_flow_through_map_group_by_and_join():
    # MAP's result is typed by its function: a duration in hours is a number
    assert validate_plan(parse_plan(
        'FILTER(l=MAP(l=RETRIEVE(query="x"), fct=lambda e: in_hours(duration(e)), res_name="h"), '
        'filter=lambda e: e["h"] > 1)')) == []
    [p] = validate_plan(parse_plan(
        'FILTER(l=MAP(l=RETRIEVE(query="x"), fct=lambda e: e.end - e.start, res_name="h"), '
        'filter=lambda e: e["h"] > 1)'))
    assert "duration against a number" in p.message
    # GROUP_BY keeps its keys' types and counts are numbers
    [p] = validate_plan(parse_plan(
        f'FILTER(l=GROUP_BY(l={EXTRACTED}, attr_names=["d"]), filter=lambda e: e["d"] == 2024 and e.count > 2)'))
    assert "date with a number" in p.message
    # JOIN's condition sees each side's rows
    [p] = validate_plan(parse_plan(
        f'JOIN(l1={EXTRACTED}, l2=RETRIEVE(query="y"), condition="i1[\\"who\\"] < i2.start")'))
    assert p.operator == "JOIN" and "text against a datetime" in p.message
    assert validate_plan(parse_plan(
        f'JOIN(l1={EXTRACTED}, l2=RETRIEVE(query="y"), condition="same_day(i1.start, i2.start)")')) == []


def test_a_list_of_rows_is_told_from_its_rows():
    # APPLY's l and GROUP_BY's group hold rows: a row has no length, a list of rows no sum
    [p] = validate_plan(parse_plan('APPLY(l=RETRIEVE(query="x"), fct=lambda l: len(l) - len(l[0]))'))
    assert p.operator == "APPLY" and "len() takes" in p.message and "given a row" in p.message
    assert validate_plan(parse_plan('APPLY(l=RETRIEVE(query="x"), fct=lambda l: len(l) - 1)')) == []
    [p] = validate_plan(parse_plan(
        f'MAP(l=GROUP_BY(l={EXTRACTED}, attr_names=["who"]), fct=lambda e: sum(e.group), res_name="s")'))
    assert "sum() takes a list" in p.message and "list of rows" in p.message
    assert validate_plan(parse_plan(
        f'MAP(l=GROUP_BY(l={EXTRACTED}, attr_names=["who"]), fct=lambda e: len(e.group), res_name="s")')) == []


def test_unknown_attributes_and_unknown_kinds_pass():
    # an attribute UNNEST gives, or a value of a function of either kind, is not judged
    assert T.check(parse_plan(_filter("max(e[\"n\"], 3) == \"x\"")).l.filter.body, {"e": None}) == []
    assert validate_plan(parse_plan(
        f'FILTER(l=UNNEST(l={EXTRACTED}, nested_attr_name="who", unnested_attr_name="w"), '
        'filter=lambda e: e["w"] > 3)')) == []


def test_every_example_and_verified_training_plan_is_well_typed():
    plans = {ex.plan for ex in EXAMPLES}
    with gzip.open(ROOT / "models/training/data/planner_pairs.jsonl.gz", "rt", encoding="utf-8") as f:
        plans |= {json.loads(line)["plan"] for line in f if line.strip()}
    assert len(plans) > 400
    problems = {p: validate_plan(parse_plan(p), executable=False) for p in plans}
    assert {p: v for p, v in problems.items() if v} == {}


def test_the_planner_tries_again_when_the_plan_is_ill_typed():
    ill = _filter("month(year(e.start) == 2024 and month(e.start) == 4) == 4")
    good = _filter("year(e.start) == 2024 and month(e.start) == 4")
    llm = ScriptedLLM({"how often in April 2024": [ill, good]})
    planned = QudPlanner(llm).plan("how often in April 2024")
    assert planned.attempts == 2 and planned.plan_text == good
    assert llm.temperatures[1] > llm.temperatures[0]


def test_durations_and_dates_compute_as_the_interpreter_does():
    body = parse_plan(_filter("e.start - days(1) < e.end")).l.filter.body
    assert T.type_of(body.left, {"e": None}) == T.DATETIME
    assert X.evaluate(body.left, {"e": ROW}, CTX) == ROW.get("start") - timedelta(days=1)
    assert T.type_of(parse_plan(_filter("e.end - e.start > days(0)")).l.filter.body.left, {"e": None}) == T.DURATION


@pytest.mark.parametrize("op", ["ARGMIN", "ARGMAX"])
def test_ranking_rows_by_a_text_is_a_problem_and_by_a_number_or_time_is_not(op):
    """ARGMIN over a text orders alphabetically, which answers no question: a plan
    that ranked chat turns by their role tied every turn. Text from EXTRACT and the
    event's own text attributes both count; numbers, dates, times and values of
    unknown kind pass."""
    for val, bad in [("who", True), ("title", True), ("source", True), ("n", False), ("d", False),
                     ("start", False)]:
        problems = validate_plan(parse_plan(f'{op}(l={EXTRACTED}, arg_attr_name="who", val_attr_name="{val}")'))
        assert bool(problems) is bad, (val, problems)
        if bad:
            assert f"ranks the rows by '{val}', which is text" in str(problems[0])
    grouped = f'{op}(l=GROUP_BY(l={EXTRACTED}, attr_names=["who"]), arg_attr_name="who", val_attr_name="count")'
    assert validate_plan(parse_plan(grouped)) == []
    unnested = (f'{op}(l=UNNEST(l={EXTRACTED}, nested_attr_name="who", unnested_attr_name="w"), '
                'arg_attr_name="w", val_attr_name="w")')
    assert validate_plan(parse_plan(unnested)) == []


def test_a_list_of_rows_read_by_name_gives_each_row_s_value():
    """l["km"] over the whole list (APPLY), e.group["km"] over a group: amounts per
    period and "more than" between two sums, in the plan language itself."""
    rows = [Row({**ROW.values, "km": km}, [f"ev{i}"]) for i, km in enumerate((5.0, None, -2.0))]
    yes = parse_plan('APPLY(l=MAP(l=RETRIEVE(query="x"), fct=lambda e: 1, res_name="km"), '
                     'fct=lambda l: sum(l["km"]) > 2)')
    assert validate_plan(yes) == []
    assert X.call_lambda(yes.fct, (rows,), CTX) is True  # 5 + (null skipped) - 2 = 3
    per_group = parse_plan('MAP(l=GROUP_BY(l=MAP(l=RETRIEVE(query="x"), fct=lambda e: 1, res_name="km"), '
                           'attr_names=["km"]), fct=lambda e: sum(e.group["km"]), res_name="total")')
    assert validate_plan(per_group) == []
    assert X.call_lambda(per_group.fct, (Row({"group": rows, "count": 3}, ["g"]),), CTX) == 3.0
    with pytest.raises(X.EvalError, match="no attribute 'nope'"):
        X.call_lambda(parse_plan('APPLY(l=RETRIEVE(query="x"), fct=lambda l: sum(l["nope"]))').fct, (rows,), CTX)
    [problem] = validate_plan(parse_plan('APPLY(l=RETRIEVE(query="x"), fct=lambda l: l["title"] > 3)'))
    assert "list" in problem.message
