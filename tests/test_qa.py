"""The question engine end to end with a scripted planner LLM and no neural models:
plan, execute over a real store, answer with evidence, say plainly what fails."""
from __future__ import annotations

import re
import threading
from datetime import date, datetime, timedelta, timezone

import pytest

from engine.answer import Answer
from engine.ingest import import_paths
from engine.operators import Models
from engine.qa import HindsightEngine, is_follow_up
from engine.qud import QudPlanner
from importers.base import Entry, Event, Importer
from importers.registry import Registry
from tests.test_qud import ScriptedLLM

UTC = timezone.utc


def _store_with(store, tmp_path, events):
    f = tmp_path / "export.txt"
    f.write_text("x")
    reg = Registry([Importer("fake", "Fake", "1", lambda e: 1.0, lambda e: iter(events))])
    assert import_paths(store, [f], registry=reg).added == len(events)
    return store


def _workout(day: int, activity: str, km: float) -> Event:
    start = datetime(2024, 3, day, 7, 0, tzinfo=UTC)
    return Event(source="strava", kind="workout", start=start, end=start + timedelta(minutes=40),
                 title=f"Morning {activity}", text=f"{activity.title()} workout, {km} km.",
                 attributes={"activity": activity, "distance_km": km}, key=f"{day}-{activity}")


@pytest.fixture
def engine_over(store, tmp_path):
    def make(events, script):
        _store_with(store, tmp_path, events)
        llm = ScriptedLLM(script)
        return HindsightEngine(store, QudPlanner(llm), Models()), llm
    return make


def test_count_with_evidence_and_plan_tree(engine_over):
    events = [_workout(d, "running", 5.0 + d) for d in (1, 3, 5)] + [_workout(2, "swimming", 1.0)]
    eng, _ = engine_over(events, {"How many times did I go running in March 2024?": [
        'APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="running"), attr_names=["activity"], attr_types=[str]), '
        'filter=lambda e: e["activity"] == "running" and month(e.start) == 3), fct=len)']})
    seen = []
    ans = eng.ask("How many times did I go running in March 2024?", today=date(2024, 4, 1), progress=seen.append)
    assert ans.ok, ans.answer_text
    assert ans.answer == 3
    assert ans.answer_text.startswith("3 (from 3 source events)")
    assert len(ans.evidence) == 3
    assert ans.plan.operator == "APPLY" and ans.plan.children[0].operator == "FILTER"
    assert ans.plan.children[0].rows == 3
    assert {p.stage for p in seen} >= {"planning", "executing", "done"}
    assert ans.timings["total_ms"] >= ans.timings["planning_ms"]
    assert ans.to_json()["plan"]["children"][0]["operator"] == "FILTER"


def test_sum_of_extracted_amounts(engine_over):
    events = [_workout(d, "running", km) for d, km in ((1, 5.0), (8, 7.5), (15, 10.0))]
    eng, _ = engine_over(events, {"How far did I run in total?": [
        'SUM(l=EXTRACT(l=RETRIEVE(query="running"), attr_names=["distance_km"], attr_types=[float]), '
        'attr_name="distance_km")']})
    ans = eng.ask("How far did I run in total?", today=date(2024, 4, 1))
    assert ans.ok and ans.answer == pytest.approx(22.5)
    assert "In total: 22.50" in ans.answer_text


def test_the_first_or_last_time_is_the_earliest_or_latest_not_the_smallest(engine_over):
    events = [_workout(d, "running", 5.0) for d in (3, 9, 20)]
    eng, _ = engine_over(events, {"When did I first go running?": [
        'MIN(l=RETRIEVE(query="running"), attr_name="start")'], "How far was my longest run?": [
        'MAX(l=EXTRACT(l=RETRIEVE(query="running"), attr_names=["distance_km"], attr_types=[float]), '
        'attr_name="distance_km")']})
    first = eng.ask("When did I first go running?", today=date(2024, 4, 1))
    assert first.ok and first.answer_text.startswith("The earliest is: ")
    assert eng.ask("How far was my longest run?", today=date(2024, 4, 1)).answer_text.startswith("The largest is: 5")


def test_a_grouping_answers_with_the_groups_largest_first(engine_over):
    events = [_workout(d, a, 5.0) for d, a in ((1, "swimming"), (2, "running"), (3, "running"), (4, "cycling"),
                                                (5, "running"), (6, "cycling"))]
    eng, _ = engine_over(events, {"What are my top 3 sports?": [
        'GROUP_BY(l=EXTRACT(l=RETRIEVE(query="workout"), attr_names=["activity"], attr_types=[str]), '
        'attr_names=["activity"])']})
    ans = eng.ask("What are my top 3 sports?", today=date(2024, 4, 1))
    assert ans.ok, ans.answer_text
    assert ans.answer == ["running", "cycling", "swimming"]
    assert ans.answer_text.startswith("3 groups, largest first: running (3); cycling (2); swimming (1)")
    assert len(ans.evidence) == 6


def test_nothing_found_is_said_plainly(engine_over):
    eng, _ = engine_over([_workout(1, "running", 5.0)], {"What's the weather tomorrow?": [
        'APPLY(l=RETRIEVE(query="weather forecast"), fct=len)']})
    ans = eng.ask("What's the weather tomorrow?", today=date(2024, 4, 1))
    assert not ans.ok and ans.answer is None
    assert "found nothing in your data" in ans.answer_text and "weather forecast" in ans.answer_text


def _two_planners(store, tmp_path, events, first: dict, second: dict):
    _store_with(store, tmp_path, events)
    made = []

    def fallback():
        made.append(QudPlanner(ScriptedLLM(second)))
        return made[-1]
    return HindsightEngine(store, QudPlanner(ScriptedLLM(first)), Models(), fallback=fallback), made


RUNS = ('APPLY(l=FILTER(l=RETRIEVE(query="running"), filter=lambda e: year(e.start) == 2024 and month(e.start) == 3), '
        'fct=len)')


@pytest.mark.parametrize("first_plan", [
    'APPLY(l=RETRIEVE(query="weather forecast"), fct=len)',  # its search finds nothing
    'SUM(l=RETRIEVE(query="x"), attr_name="count")',  # not a valid plan
    'MAX(l=EXTRACT(l=RETRIEVE(query="running"), attr_names=["heart_rate"], attr_types=[float]), '
    'attr_name="heart_rate")',  # no value
])
def test_a_plan_that_gives_no_answer_is_planned_again_by_the_second_planner(store, tmp_path, first_plan):
    q = "How often did I run in March 2024?"
    eng, made = _two_planners(store, tmp_path, [_workout(d, "running", 5.0) for d in (1, 3)],
                              {q: [first_plan]}, {q: [RUNS]})
    ans = eng.ask(q, today=date(2024, 4, 1))
    assert ans.ok and ans.answer == 2, ans.answer_text
    assert ans.plan_text == RUNS and len(made) == 1
    assert ans.fallback.startswith("planned by the second planner") and ans.to_json()["fallback"] == ans.fallback
    assert ans.llm_calls == len(eng.planner.llm.prompts) + len(made[0].llm.prompts)
    assert ans.timings["total_ms"] >= ans.timings["planning_ms"] > 0


def test_the_second_planner_is_not_made_while_the_first_answers(store, tmp_path):
    q = "How often did I run in March 2024?"
    eng, made = _two_planners(store, tmp_path, [_workout(1, "running", 5.0)], {q: [RUNS]}, {q: [RUNS]})
    ans = eng.ask(q, today=date(2024, 4, 1))
    assert ans.ok and ans.answer == 1 and ans.fallback == "" and made == []


def test_when_neither_planner_answers_the_first_refusal_stands_with_offered_questions(store, tmp_path):
    q = "What's the weather tomorrow?"
    eng, made = _two_planners(store, tmp_path, [_workout(d, "running", 5.0) for d in (1, 2, 3)],
                              {q: ['APPLY(l=RETRIEVE(query="weather forecast"), fct=len)']},
                              {q: ['SUM(l=RETRIEVE(query="x"), attr_name="count")']})
    ans = eng.ask(q, today=date(2024, 4, 1))
    assert not ans.ok and ans.answer is None and len(made) == 1
    assert "found nothing in your data" in ans.answer_text and ans.fallback == ""
    assert ans.suggestions  # offered once, after both tried
    assert ans.llm_calls == len(eng.planner.llm.prompts) + len(made[0].llm.prompts) > 1


def test_a_day_named_without_its_year_is_planned_as_the_latest_such_day_and_said_so(store, tmp_path):
    """The planner never sees today's date; it is given the day written whole, both
    planners alike, and the answer says how the day was read."""
    said = "How far did I run on the 3rd of march?"
    whole = "How far did I run on 3 March 2024?"
    plan = ('SUM(l=EXTRACT(l=FILTER(l=RETRIEVE(query="running"), filter=lambda e: date(e.start) == '
            'date(2024, 3, 3)), attr_names=["distance_km"], attr_types=[float]), attr_name="distance_km")')
    eng, made = _two_planners(store, tmp_path, [_workout(d, "running", 4.0 + d) for d in (1, 3)],
                              {whole: ['APPLY(l=RETRIEVE(query="weather forecast"), fct=len)'], "How often did "
                               "I run in March 2024?": [RUNS]}, {whole: [plan]})
    ans = eng.ask(said, today=date(2024, 4, 1))
    assert ans.ok and ans.answer == 7.0, ans.answer_text
    assert ans.question == said and len(made) == 1
    assert ans.read_as == "“the 3rd of march” as 3 March 2024" and ans.to_json()["read_as"] == ans.read_as
    assert ans.fallback  # the second planner was given the same day
    plain = eng.ask("How often did I run in March 2024?", today=date(2024, 4, 1))
    assert plain.read_as == ""


def test_unplannable_question_says_what_was_tried(engine_over):
    eng, _ = engine_over([_workout(1, "running", 5.0)], {"blorp": ['SUM(l=RETRIEVE(query="x"), attr_name="count")']})
    ans = eng.ask("blorp", today=date(2024, 4, 1))
    assert not ans.ok
    assert "couldn't turn this question into a plan" in ans.answer_text and "'count'" in ans.answer_text


def test_an_unanswered_question_offers_questions_the_data_answers_and_asking_one_runs_its_plan(engine_over):
    events = [_workout(d, a, km) for d, a, km in ((1, "running", 5.0), (2, "running", 7.0), (3, "swimming", 1.0),
                                                  (4, "running", 6.0))]
    eng, llm = engine_over(events, {"blorp": ['SUM(l=RETRIEVE(query="x"), attr_name="count")']})
    ans = eng.ask("blorp", today=date(2024, 4, 1))
    assert not ans.ok and len(ans.suggestions) == 3
    assert all("Strava workout" in q for q in ans.suggestions)
    assert ans.to_json()["suggestions"] == list(ans.suggestions)
    assert ans.suggestions[0] not in ans.answer_text  # the shells show them: the CLI as commands, the GUI as buttons
    calls = len(llm.prompts)
    offered = {q: eng.ask(q, today=date(2024, 4, 1)) for q in ans.suggestions}
    assert len(llm.prompts) == calls  # the offered plans ran; the planner was not asked
    assert all(a.ok for a in offered.values()), [a.answer_text for a in offered.values()]
    # another process (the CLI asks each question anew) knows them by their words alone
    fresh = HindsightEngine(eng.store, QudPlanner(llm), Models())
    assert fresh.ask(ans.suggestions[0], today=date(2024, 4, 1)).ok and len(llm.prompts) == calls


def test_offered_questions_are_the_store_s_kinds_and_attributes(store, tmp_path):
    from engine.qud import suggest

    _store_with(store, tmp_path, [_workout(d, a, km) for d, a, km in (
        (1, "running", 5.0), (2, "running", 7.0), (3, "swimming", 1.0), (4, "running", 6.0))])
    profiles = suggest.profile(store.reader())
    assert [(p.source, p.kind, p.events, p.latest_year) for p in profiles] == [("strava", "workout", 4, 2024)]
    assert profiles[0].text_keys == ("activity",) and profiles[0].number_keys == ("distance_km",)
    offered = {s.question: s.plan for s in suggest.candidates(profiles)}
    assert offered["Which activity comes up most in my Strava workout events?"].startswith("ARGMAX(")
    assert 'attr_name="distance_km"' in offered["What is the total distance km of my Strava workout events?"]
    assert "How many Strava workout events are from 2024?" in offered
    from tests.test_chattree import FakeEmbedder

    nearest = suggest.closest("how far did I go in total over all workouts, the whole distance",
                              list(suggest.candidates(profiles)), FakeEmbedder(), k=1)
    assert nearest[0].question == "What is the total distance km of my Strava workout events?"
    three = suggest.closest("how far in total", list(suggest.candidates(profiles)), FakeEmbedder())
    assert len(three) == 3 and len({s.form for s in three}) == 3  # never two of one form


def test_an_offered_question_names_a_kind_once():
    from engine.qud import suggest

    cal = suggest.KindProfile("calendar", "calendar_event", 46, 2016, (), ())
    spotify = suggest.KindProfile("spotify", "music_stream", 9, 2020, (), ())
    offered = [s.question for s in suggest.candidates([cal, spotify])]
    assert "How many Calendar events are from 2016?" in offered
    assert "How many Spotify music stream events do I have?" in offered
    assert not [q for q in offered if "alendar calendar" in q or "event event" in q]


def test_follow_up_uses_the_previous_question(engine_over):
    events = [_workout(d, "running", 5.0) for d in (1, 2)]
    eng, llm = engine_over(events, {
        # the planner reads the days left open written whole, in the earlier questions too
        "How many runs in March 2024?": ['APPLY(l=RETRIEVE(query="running"), fct=len)'],
        "How many runs in March 2024? | and in April 2024?":
            ['APPLY(l=FILTER(l=RETRIEVE(query="running"), filter=lambda e: month(e.start) == 4), fct=len)']})
    first = eng.ask("How many runs in March?", today=date(2024, 5, 1))
    second = eng.ask("and in April?", today=date(2024, 5, 1), history=[first])
    assert first.answer == 2 and second.answer == 0
    assert is_follow_up("what about books only?") and not is_follow_up("How many runs did I do in May?")


def test_cancel_before_planning(engine_over):
    eng, _ = engine_over([_workout(1, "running", 5.0)], {"q": ['APPLY(l=RETRIEVE(query="running"), fct=len)']})
    cancel = threading.Event()
    cancel.set()
    ans = eng.ask("q", today=date(2024, 4, 1), cancel=cancel)
    assert not ans.ok and ans.answer_text == "Cancelled."


def test_a_yes_no_question_is_answered_yes_or_no_with_its_entries(engine_over):
    events = [_workout(d, "running", 5.0) for d in (1, 3)]
    plan = 'FILTER(l=RETRIEVE(query="running"), filter=lambda e: date(e.start) == date(2024, 3, {day}))'
    eng, _ = engine_over(events, {"Did I go running on 2024/03/03?": [plan.format(day=3)],
                                  "Did I go running on 2024/03/04?": [plan.format(day=4)]})
    yes = eng.ask("Did I go running on 2024/03/03?", today=date(2024, 4, 1))
    assert yes.ok and yes.answer == "yes" and len(yes.evidence) == 1
    assert yes.answer_text.startswith("Yes: 1 matching entry")
    no = eng.ask("Did I go running on 2024/03/04?", today=date(2024, 4, 1))
    assert no.ok and no.answer == "no" and no.answer_text.startswith("No")


def test_a_plan_ending_in_extract_answers_with_the_extracted_values(engine_over):
    events = [_workout(d, "running", km) for d, km in ((1, 5.0), (3, 7.5))]
    eng, _ = engine_over(events, {"How far did I run on 2024/03/03?": [
        'EXTRACT(l=FILTER(l=RETRIEVE(query="running"), filter=lambda e: date(e.start) == date(2024, 3, 3)), '
        'attr_names=["distance_km"], attr_types=[float])']})
    ans = eng.ask("How far did I run on 2024/03/03?", today=date(2024, 4, 1))
    assert ans.ok and ans.answer == [7.5], ans.answer_text
    assert ans.answer_text.startswith("1 value: 7.50")


def test_a_join_with_an_extract_on_one_side_answers_with_the_extracted_values(engine_over):
    events = [_workout(d, "running", km) for d, km in ((1, 5.0), (3, 7.5))]
    lunch = datetime(2024, 3, 3, 12, 0, tzinfo=UTC)
    events.append(Event(source="calendar", kind="calendar_event", start=lunch, end=lunch + timedelta(hours=1),
                        title="Team lunch", text="Team lunch at the canteen.", key="lunch"))
    question = "How far did I run on the day of the team lunch?"
    eng, _ = engine_over(events, {question: [
        'JOIN(l1=RETRIEVE(query="team lunch"), l2=EXTRACT(l=RETRIEVE(query="running"), attr_names=["distance_km"], '
        'attr_types=[float]), condition="same_day(i1.start, i2.start)")']})
    ans = eng.ask(question, today=date(2024, 4, 1))
    assert ans.ok and ans.answer == [7.5], ans.answer_text
    assert ans.answer_text.startswith("1 value: 7.50")


def test_values_extracted_only_to_choose_rows_are_no_answer_the_rows_are(engine_over):
    events = [_workout(d, "running", km) for d, km in ((1, 5.0), (3, 7.5))]
    plan = ('FILTER(l=EXTRACT(l=RETRIEVE(query="running"), attr_names=["distance_km"], attr_types=[float]), '
            'filter=lambda e: {})')
    eng, _ = engine_over(events, {"Which of my runs were 7.5 km?": [plan.format('e["distance_km"] == 7.5')],
                                  "How far were my runs of more than 6 km?": [plan.format('e["distance_km"] > 6')]})
    fixed = eng.ask("Which of my runs were 7.5 km?", today=date(2024, 4, 1))
    assert fixed.ok and fixed.answer_text.startswith("1 matching entry"), fixed.answer_text
    # a value the filter only bounds is still worth reading
    bounded = eng.ask("How far were my runs of more than 6 km?", today=date(2024, 4, 1))
    assert bounded.ok and bounded.answer == [7.5], bounded.answer_text


def test_what_was_my_shortest_run_is_the_run_its_day_and_distance(engine_over):
    events = [_workout(d, "running", km) for d, km in ((1, 5.0), (3, 7.5), (9, 4.2))]
    plan = ('MIN(l=EXTRACT(l=RETRIEVE(query="running"), attr_names=["distance_km"], attr_types=[float]), '
            'attr_name="distance_km")')
    eng, _ = engine_over(events, {"What was my shortest run?": [plan], "How short was my shortest run?": [plan],
                                  "shortest run in 2024": [plan]})
    run = eng.ask("What was my shortest run?", today=date(2024, 4, 1))
    assert run.ok and run.answer == ["2024-03-09", 4.2], run.answer_text
    assert "4.20, on Saturday 9 March 2024" in run.answer_text
    bare = eng.ask("shortest run in 2024", today=date(2024, 4, 1))  # said as a phrase, the run all the same
    assert bare.ok and bare.answer == ["2024-03-09", 4.2], bare.answer_text
    how = eng.ask("How short was my shortest run?", today=date(2024, 4, 1))  # asks the distance alone
    assert how.ok and how.answer == 4.2, how.answer_text


def test_how_many_days_ago_is_said_in_days(engine_over):
    events = [_workout(d, "running", 5.0) for d in (3, 9, 20)]
    eng, _ = engine_over(events, {"how many days ago did i last run": ['MAX(l=RETRIEVE(query="running"), attr_name="start")']})
    ans = eng.ask("how many days ago did i last run", today=date(2024, 4, 1))
    assert ans.ok and ans.answer == 12, ans.answer_text  # 20 March to 1 April
    assert ans.answer_text == "12 days ago, on Wednesday 20 March 2024 (from 1 source event)."


def test_the_last_n_things_are_the_latest_rows_or_groups_latest_first(engine_over):
    events = [_workout(d, a, km) for d, a, km in ((1, "swimming", 1.0), (2, "running", 5.0), (9, "cycling", 20.0),
                                                    (12, "running", 6.0), (20, "rowing", 3.0))]
    grouped = ('GROUP_BY(l=EXTRACT(l=RETRIEVE(query="workout"), attr_names=["activity"], attr_types=[str]), '
               'attr_names=["activity"])')
    rows = 'RETRIEVE(query="workout")'
    eng, _ = engine_over(events, {"What were the last 3 sports I did?": [grouped],
                                  "my two earliest workouts": [rows],
                                  "What sports did I do in the last 3 weeks?": [grouped]})
    last = eng.ask("What were the last 3 sports I did?", today=date(2024, 4, 1))
    assert last.ok and last.answer == ["rowing", "running", "cycling"], last.answer_text  # by their latest day
    assert last.answer_text.startswith("3 groups, latest first: rowing (1); running (2); cycling (1)")
    assert len(last.evidence) == 4  # the rows shown, not the swim
    first = eng.ask("my two earliest workouts", today=date(2024, 4, 1))
    assert first.ok and first.answer_text.startswith("2 matching entries: 2024-03-01"), first.answer_text
    # "the last 3 weeks" is a time span: all the groups, largest first
    span = eng.ask("What sports did I do in the last 3 weeks?", today=date(2024, 4, 1))
    assert span.ok and len(span.answer) == 4 and "largest first" in span.answer_text


@pytest.mark.parametrize("question, asked", [
    ("what were the last 3 things i bought on amazon", (3, True)),
    ("last three restaurants i ate at", (3, True)),
    ("my 5 most recent orders", (5, True)),
    ("the first two songs I played in 2023", (2, False)),
    ("How many songs did I play in the last 3 months?", None),
    ("What did I buy in the first two weeks of May?", None),
    ("How many times did I run in the last 2 years", None),
    ("What did I eat last week?", None),
])
def test_which_questions_ask_for_the_latest_or_earliest_rows(question, asked):
    from engine.qa import _latest_asked
    assert _latest_asked(question) == asked


def test_an_empty_store_says_to_import_first_without_planning(engine_over):
    eng, llm = engine_over([], {})
    ans = eng.ask("How often did I do yoga in total?", today=date(2024, 4, 1))
    assert not ans.ok and "Nothing has been imported yet" in ans.answer_text
    assert "hindsight import" in ans.answer_text
    assert ans.llm_calls == 0 and eng.planner.llm_calls == 0


def test_a_winning_year_or_group_key_is_written_as_a_label_not_a_quantity():
    from engine.plan import parse_plan
    from engine.qa import _sentence, format_key
    groups = 'GROUP_BY(l=MAP(l=RETRIEVE(query="chat"), fct=lambda e: {0}(e.start), res_name="{0}"), attr_names=["{0}"])'
    by_year = parse_plan(f'ARGMAX(l={groups.format("year")}, arg_attr_name="year", val_attr_name="count")')
    by_month = parse_plan(f'ARGMAX(l={groups.format("month")}, arg_attr_name="month", val_attr_name="count")')
    assert _sentence(by_year, 2023, 57, "") == "2023 (from 57 source events)."
    assert _sentence(by_month, 5, 289, "") == "May (from 289 source events)."  # a real ChatGPT export's answer
    assert _sentence(parse_plan('SUM(l=RETRIEVE(query="x"), attr_name="total")'), 2023, 57, "") \
        == "In total: 2,023 (from 57 source events)."
    assert format_key(7) == "7" and format_key("Muse") == "Muse" and format_key(True) == "yes"
    assert format_key(5, "month") == "May" and format_key(13, "month") == "13"
    two = parse_plan('ARGMAX(l=GROUP_BY(l=MAP(l=MAP(l=RETRIEVE(query="swim"), fct=lambda e: year(e.start), '
                     'res_name="year"), fct=lambda e: month(e.start), res_name="month"), attr_names=["year", "month"]), '
                     'arg_attr_name="month", val_attr_name="count")')
    assert _sentence(two, [2006, 8], 4, "") == "August 2006 (from 4 source events)."
    # a tie is said, with a few of the others named
    assert _sentence(two, [2006, 8], 4, "", ties=[[2007, 7], [2008, 6]]) \
        == "August 2006 (from 4 source events); tied with July 2007, June 2008."
    assert _sentence(by_month, 5, 9, "", ties=list(range(6, 12))) \
        == "May (from 9 source events); tied with June, July, August, September and 2 more."
    # trips say what was counted: not the 163 notes of their days
    trips = parse_plan('APPLY(l=RETRIEVE(query="travel to Rome"), fct=trips)')
    assert _sentence(trips, 12, 163, "") == "12 trips (from 163 source events)."
    assert _sentence(trips, 1, 10, "") == "1 trip (from 10 source events)."
    orders = parse_plan('APPLY(l=RETRIEVE(query="Amazon purchase"), fct=orders)')
    assert _sentence(orders, 46, 73, "") == "46 orders (from 73 source events)."
    from engine.qa import format_keys
    assert format_keys([7, 2023], ["month", "year"]) == "July 2023"  # a group listing's key, not "7, 2,023"
    assert format_keys(["Muse", 2023], ["artist", "year"]) == "Muse, 2023"


def test_a_value_asked_for_and_found_in_no_entry_is_said_not_found(engine_over):
    """"Which hotel did I book?" over mails none of which names one: the answer says
    the hotel was not found and shows where it was looked for, not the mails as if
    they were the hotel."""
    events = [_workout(d, "running", km) for d, km in ((1, 5.0), (3, 7.5))]
    plan = 'EXTRACT(l=RETRIEVE(query="running"), attr_names=["shoe_brand"], attr_types=[str])'
    eng, _ = engine_over(events, {"Which shoes did I run in?": [plan]})

    class NothingSaid:  # an extractor that finds the key in no text
        def extract(self, items):
            return ["" for _ in items]

    eng.models = Models(extractor=NothingSaid())
    ans = eng.ask("Which shoes did I run in?", today=date(2024, 4, 1))
    assert ans.ok and ans.answer == [], ans.answer_text
    assert ans.answer_text.startswith("Not found: none of the 2 matching entries says the shoe brand ("), \
        ans.answer_text
    assert len(ans.evidence) == 2


def test_the_month_with_the_largest_sum_is_answered_by_name(engine_over):
    """Amounts per period in the plan language: each month's km summed over its
    group's rows, the largest named as the sentence says it."""
    def run(month: int, day: int, km: float) -> Event:
        start = datetime(2024, month, day, 7, 0, tzinfo=UTC)
        return Event(source="strava", kind="workout", start=start, end=start + timedelta(minutes=40),
                     title="Morning run", text=f"Running workout, {km} km.",
                     attributes={"activity": "running", "distance_km": km}, key=f"{month}-{day}")
    # March has more runs, April more km: a count would say March
    events = [run(3, d, 2.0) for d in (1, 2, 3)] + [run(4, d, 9.0) for d in (1, 2)]
    question = "Which month had the most km?"
    plan = ('ARGMAX(l=MAP(l=GROUP_BY(l=MAP(l=EXTRACT(l=RETRIEVE(query="running"), attr_names=["distance_km"], '
            'attr_types=[float]), fct=lambda e: month(e.start), res_name="month"), attr_names=["month"]), '
            'fct=lambda e: sum(e.group["distance_km"]), res_name="total"), arg_attr_name="month", '
            'val_attr_name="total")')
    eng, _ = engine_over(events, {question: [plan]})
    ans = eng.ask(question, today=date(2024, 5, 1))
    assert ans.ok, ans.answer_text
    assert ans.answer == "2024-04" and ans.answer_text.startswith("April")  # the month of its year
    plain = ('ARGMAX(l=GROUP_BY(l=MAP(l=RETRIEVE(query="running"), fct=lambda e: month(e.start), '
             'res_name="month"), attr_names=["month"]), arg_attr_name="month", val_attr_name="count")')
    from engine.plan import parse_plan
    from engine.qa import _key_value

    assert _key_value(parse_plan(plain), 3, {2023, 2024}) == "March"  # months of several years: by name
    assert _key_value(parse_plan(plain), 3, {2024}) == "2024-03"


def test_extracted_values_come_once_each_the_one_nearest_the_question_first():
    from engine.plan.rows import Row
    from engine.qa import distinct_best_first

    rows = [Row({"order_id": v}, [i]) for v, i in (("A1", "m1"), ("B2", "m2"), ("A1", "m3"), ("C3", "m4"))]
    found = [(r.values["order_id"], r) for r in rows]
    assert distinct_best_first(found, {"m1": 0.2, "m2": 0.7, "m3": 0.1, "m4": 0.3}) == [("B2", 1), ("C3", 1), ("A1", 2)]
    # without the embedder's word: each value once, in the rows' order
    assert distinct_best_first(found, {}) == [("A1", 2), ("B2", 1), ("C3", 1)]
    merged = Row({"order_id": "D4"}, ["x", "m9"])  # a merged row is as near as its nearest event
    assert distinct_best_first([*found, ("D4", merged)], {"m2": 0.7, "m9": 0.8})[0] == ("D4", 1)


def test_a_value_the_question_itself_names_is_no_answer_to_it():
    from engine.plan.rows import Row
    from engine.qa import not_named_by

    found = [(v, Row({}, [str(n)])) for n, v in enumerate(["Tokyo", "14C", "tokyo", "Tokyo Haneda", 3.0])]
    kept, echoed = not_named_by("which seat did I have on the flight to Tokyo?", found)
    assert [v for v, _ in kept] == ["14C", "Tokyo Haneda", 3.0] and echoed == ["Tokyo", "tokyo"]


def test_a_lookup_that_reads_only_what_the_question_names_says_it_found_nothing(engine_over):
    q = "Which seat did I have on the flight to Tokyo?"
    flight = Event(source="mail", kind="mail", start=datetime(2024, 3, 2, 9, tzinfo=UTC), title="Your flight to Tokyo",
                   text="Your flight to Tokyo is booked.", attributes={"destination": "Tokyo"}, key="f")
    eng, _ = engine_over([flight], {q: [
        'EXTRACT(l=RETRIEVE(query="flight to Tokyo"), attr_names=["destination"], attr_types=[str])']})
    ans = eng.ask(q, today=date(2024, 4, 1))
    assert ans.ok and ans.answer == []
    assert ans.answer_text.startswith("Not found: none of the 1 matching entry says the destination")
    assert ans.answer_text.endswith("What was read instead is what the question itself names: Tokyo.")


def _dinner(day: int, place: str) -> Event:
    start = datetime(2024, 3, day, 19, 30, tzinfo=UTC)
    return Event(source="calendar", kind="calendar_event", start=start, end=start + timedelta(hours=2),
                 title=f"Dinner at {place}", text=f"Table for two at {place}.", attributes={"location": place},
                 key=f"dinner-{day}")


def test_a_name_the_plan_lost_is_searched_for(engine_over):
    """The planner searched for dinners and dropped the restaurant the question names;
    the store holds it as a value, so the search gets it back (which of the dinners
    say it is RETRIEVE's to judge, with the real models: tests/test_ask_real.py)."""
    events = [_dinner(d, "Trattoria Vellani") for d in (1, 8)] + [_dinner(d, "Café Moravia") for d in (2, 9, 16)]
    question = "how many times did i have dinner at trattoria vellani"
    other = "how many times did i have dinner at the salon"
    eng, _ = engine_over(events, {question: ['APPLY(l=RETRIEVE(query="dinner"), fct=len)'],
                                  other: ['APPLY(l=RETRIEVE(query="dinner"), fct=len)']})
    ans = eng.ask(question, today=date(2024, 4, 1))
    assert ans.ok and ans.plan_text == 'APPLY(l=RETRIEVE(query="dinner Trattoria Vellani"), fct=len)'
    assert ans.read_as == "“Trattoria Vellani” as the name your data has"  # the user can check it
    eng.give_names = False
    assert eng.ask(question, today=date(2024, 4, 1)).plan_text == 'APPLY(l=RETRIEVE(query="dinner"), fct=len)'
    # a name the plan says is left as it is, and so is a plan for a question that names nothing in the data
    eng.give_names = True
    assert eng.ask(other, today=date(2024, 4, 1)).plan_text == 'APPLY(l=RETRIEVE(query="dinner"), fct=len)'


def test_a_first_name_is_a_name_where_an_address_spells_it(engine_over):
    """A person is called by their first name, in lower case too: the store's
    attendee "Ilse Brandt <ilse.brandt77@…>" makes "ilse" hers."""
    events = [_dinner(1, "Café Moravia"), _dinner(2, "Café Moravia")]
    events[0].attributes["attendees"] = ["Ilse Brandt <ilse.brandt77@example.org>"]
    question = "when did i last have dinner with ilse"
    eng, _ = engine_over(events, {question: ['MAX(l=RETRIEVE(query="dinner"), attr_name="start")']})
    planned = eng.ask(question, today=date(2024, 4, 1)).plan_text
    assert planned == 'MAX(l=RETRIEVE(query="dinner Ilse"), attr_name="start")'


def test_closing_the_engine_waits_for_a_names_read_it_started(engine_over, monkeypatch):
    """The store closes after the engine: a names read started in the background
    (build_engine starts one) is over by then, so it never reads a closed store."""
    import time as time_

    from engine import qa
    from engine.qud.store_names import store_names

    eng, _ = engine_over([_dinner(1, "Café Moravia")], {})
    monkeypatch.setattr(qa, "store_names", lambda con: time_.sleep(0.5) or store_names(con))
    eng.prepare_names()
    reading = eng._names[1]
    eng.close()
    assert reading.done()


def test_a_name_no_event_there_says_is_answered_without_it_and_said_so(engine_over):
    """"Where did Tyler and I run on 6 January?": the store knows Tyler (his mails),
    but the day's one run names no one. The search given his name keeps nothing, so
    the plan runs as the planner wrote it, and the answer says Tyler was not found."""
    def run(day: int, park: str) -> Event:
        start = datetime(2024, 1, day, 8, tzinfo=UTC)
        return Event(source="strava", kind="workout", start=start, end=start + timedelta(minutes=40),
                     title="Morning run", text=f"Running workout around {park}.",
                     attributes={"activity": "running", "location": park}, key=f"run-{day}")
    mail = Event(source="mail", kind="mail", start=datetime(2024, 1, 2, 9, tzinfo=UTC), title="football on sunday?",
                 text="Are you in?", attributes={"from": "Tyler Johnson <tyler.johnson@example.org>"}, key="m")
    question = "where did tyler and I run on the 6th of january?"
    plan = ('EXTRACT(l=FILTER(l=RETRIEVE(query="running"), filter=lambda e: date(e.start) == date(2024, 1, 6)), '
            'attr_names=["location"], attr_types=[str])')
    eng, _ = engine_over([run(6, "Textor Park"), run(9, "Loos Park"), mail],
                         {"where did tyler and I run on 6 January 2024?": [plan] * 2})
    from engine.operators.context import RetrieveSettings
    from tests.test_operators import FakePatterns, FakeReranker

    # every workout is for the reranker to judge; it passes any run, whoever it was with
    eng.models = Models(patterns=FakePatterns({"workout": "partial"}, default="irrelevant"),
                        reranker=FakeReranker("running"))
    eng.retrieve_settings = RetrieveSettings(verify_irrelevant=0)
    ans = eng.ask(question, today=date(2024, 2, 1))
    assert ans.ok and ans.answer == ["Textor Park"], ans.answer_text
    assert ans.answer_text.startswith("Nothing that matched says “Tyler”, so this is the answer without that name: ")
    assert ans.plan_text == plan and "Tyler" not in ans.read_as
    eng.give_names = False  # without the names nothing is said of them
    assert not eng.ask(question, today=date(2024, 2, 1)).answer_text.startswith("Nothing that matched")


def test_a_name_the_events_say_keeps_its_answer_even_when_it_is_not_found_in_them(engine_over):
    """The named search kept the day's run with Tyler, none of which says a park:
    that is the answer ("not found"), not a run that names no one."""
    def run(day: int, text: str) -> Event:
        start = datetime(2024, 1, day, 8, tzinfo=UTC)
        return Event(source="strava", kind="workout", start=start, end=start + timedelta(minutes=40),
                     title="Morning run", text=text, attributes={"activity": "running"}, key=f"run-{day}")
    mail = Event(source="mail", kind="mail", start=datetime(2024, 1, 2, 9, tzinfo=UTC), title="football on sunday?",
                 text="Are you in?", attributes={"from": "Tyler Johnson <tyler.johnson@example.org>"}, key="m")
    plan = ('EXTRACT(l=FILTER(l=RETRIEVE(query="running"), filter=lambda e: date(e.start) == date(2024, 1, 6)), '
            'attr_names=["park"], attr_types=[str])')
    other = run(6, "Morning run around Loos Park.")  # the same day's other run, which says a park and no one
    other.key = "run-6b"
    other.start, other.end = other.start + timedelta(hours=9), other.end + timedelta(hours=9)
    eng, _ = engine_over([run(6, "Running with Tyler."), other, mail],
                         {"where did tyler and I run on 6 January 2024?": [plan] * 2})
    from engine.operators.context import RetrieveSettings
    from tests.test_operators import FakePatterns, FakeReranker

    class ParksSaid:  # reads the park where the text says one
        def extract(self, items):
            return ["Loos Park" if "Loos Park" in text else "" for text, _ in items]

    eng.models = Models(patterns=FakePatterns({"workout": "partial"}, default="irrelevant"),
                        reranker=FakeReranker("running"), extractor=ParksSaid())
    eng.retrieve_settings = RetrieveSettings(verify_irrelevant=0)
    ans = eng.ask("where did tyler and I run on the 6th of january?", today=date(2024, 2, 1))
    assert ans.answer == [] and ans.answer_text.startswith("Not found: none of the 1 matching entry"), ans.answer_text
    assert "Tyler" in ans.plan_text and "“Tyler” as the name your data has" in ans.read_as


def test_a_plan_that_keeps_the_first_day_of_last_week_counts_the_whole_week(engine_over):
    """"last week" is read as Monday to Sunday before today's week; a plan that keeps
    its Monday alone is made to keep the seven days, and the answer says how it was read."""
    question = "how many runs did I do last week"
    written = "how many runs did I do in the week of Monday, 25 March 2024"
    events = [_workout(d, "running", 5.0) for d in (24, 25, 27, 31)]
    eng, _ = engine_over(events, {written: [
        'APPLY(l=FILTER(l=RETRIEVE(query="running"), filter=lambda e: date(e.start) == date(2024, 3, 25)), fct=len)']})
    ans = eng.ask(question, today=date(2024, 4, 3))
    assert ans.answer == 3, ans.answer_text  # the 25th, 27th and 31st; not the 24th
    assert "date(e.start) >= date(2024, 3, 25) and date(e.start) <= date(2024, 3, 31)" in ans.plan_text
    assert ans.read_as == "“last week” as the week of Monday, 25 March 2024"
