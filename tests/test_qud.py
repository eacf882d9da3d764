"""QUD: recursive decomposition, validation and retries, the plan cache, and the
example library."""
from __future__ import annotations

import json
import re

import pytest

from engine.plan import parse_plan, print_plan, validate_plan
from engine.plan.spec import OPERATORS
from engine.qud import PlanCache, PlanningError, QudPlanner
from engine.qud.examples import EXAMPLES


class ScriptedLLM:
    """A fake Planner: answers each prompt's last question from a script."""

    def __init__(self, script: dict[str, list[str]]):
        self.script = {k: list(v) for k, v in script.items()}
        self.prompts: list[str] = []
        self.temperatures: list[float] = []

    def complete(self, prompt, *, grammar=None, max_tokens=256, stop=(), temperature=0.0):
        assert grammar and "root" in grammar
        self.prompts.append(prompt)
        self.temperatures.append(temperature)
        question = re.findall(r"\nQ: (.*)\nP:$", prompt)[0]
        answers = self.script[question]
        return " " + (answers.pop(0) if len(answers) > 1 else answers[0])

    def close(self):
        pass


def test_recursive_decomposition_fills_every_qud():
    llm = ScriptedLLM({
        "How many runs did I do in March 2024?":
            ['APPLY(l=QUD("my runs in March 2024"), fct=len)'],
        "my runs in March 2024":
            ['FILTER(l=QUD("my runs"), filter=lambda e: year(e.start) == 2024 and month(e.start) == 3)'],
        "my runs": ['RETRIEVE(query="running")'],
    })
    planner = QudPlanner(llm)
    planned = planner.plan("How many runs did I do in March 2024?")
    assert planned.plan_text == ('APPLY(l=FILTER(l=RETRIEVE(query="running"), filter=lambda e: '
                                 'year(e.start) == 2024 and month(e.start) == 3), fct=len)')
    assert planned.llm_calls == 3
    assert [q for q, _ in planned.steps] == ["How many runs did I do in March 2024?", "my runs in March 2024",
                                             "my runs"]
    # every call shares one stable prefix (llama.cpp reuses its KV cache) and carries
    # nothing but the question
    assert all(p.startswith(planner.prefix) for p in llm.prompts)
    assert llm.prompts[2][len(planner.prefix):] == "Q: my runs\nP:"


def test_the_model_writes_inputs_without_names_and_the_plan_is_shown_with_them():
    llm = ScriptedLLM({"How many runs did I do in 2024?":
                       ['APPLY(FILTER(RETRIEVE("running"), filter=lambda e: year(e.start) == 2024), fct=len)']})
    planner = QudPlanner(llm, positional=True)
    planned = planner.plan("How many runs did I do in 2024?")
    assert planned.plan_text == ('APPLY(l=FILTER(l=RETRIEVE(query="running"), filter=lambda e: '
                                 'year(e.start) == 2024), fct=len)')
    # the examples and the grammar the model sees name no inputs and no query
    assert "\nP: APPLY(FILTER(RETRIEVE(" in planner.prefix and "query=" not in planner.prefix
    assert "(l=" not in planner.prefix and "l1=" not in planner.prefix and ", filter=lambda e:" in planner.prefix
    assert 'op-retrieve ::= "RETRIEVE(" string ")"' in planner.grammar
    assert 'op-filter ::= "FILTER(" plan ", filter=" row-lambda ")"' in planner.grammar
    named = QudPlanner(ScriptedLLM({}))  # the default
    assert '\nP: APPLY(l=FILTER(l=RETRIEVE(query="' in named.prefix
    assert named.prefix != planner.prefix  # and so a plan cache made with one is not served by the other


def test_invalid_plan_is_retried_warmer_then_accepted():
    llm = ScriptedLLM({"What did I spend on books?": [
        'SUM(l=RETRIEVE(query="books"), attr_name="count")',  # count without GROUP_BY: no repair
        'SUM(l=EXTRACT(l=RETRIEVE(query="books"), attr_names=["price"], attr_types=[float]), attr_name="price")',
    ]})
    planned = QudPlanner(llm).plan("What did I spend on books?")
    assert planned.attempts == 2
    assert llm.temperatures[0] == 0.0 and llm.temperatures[1] > 0
    assert validate_plan(planned.plan) == []


def test_no_valid_plan_raises_with_what_was_tried():
    llm = ScriptedLLM({"gibberish": ['SUM(l=RETRIEVE(query="x"), attr_name="count")']})
    with pytest.raises(PlanningError) as info:
        QudPlanner(llm, retries=1).plan("gibberish")
    assert len(info.value.attempts) == 2
    assert "count" in info.value.attempts[0]


def test_a_plan_missing_only_an_extract_is_repaired_without_another_call():
    llm = ScriptedLLM({"how many km did i swim": ['SUM(l=RETRIEVE(query="swimming"), attr_name="distance_km")']})
    planned = QudPlanner(llm).plan("how many km did i swim")
    assert planned.attempts == 1 and planned.llm_calls == 1
    assert planned.plan_text == ('SUM(l=EXTRACT(l=RETRIEVE(query="swimming"), attr_names=["distance_km"], '
                                 'attr_types=[float]), attr_name="distance_km")')


def test_runaway_decomposition_is_bounded():
    llm = ScriptedLLM({"loop": ['APPLY(l=QUD("loop"), fct=len)']})
    with pytest.raises(PlanningError, match="no valid plan"):
        QudPlanner(llm, max_steps=4, retries=0).plan("loop")


def test_plan_cache_reuses_plans_for_the_same_question(tmp_path):
    llm = ScriptedLLM({"how many runs": ['APPLY(l=RETRIEVE(query="running"), fct=len)']})
    cache = PlanCache(tmp_path / "plans.json")
    planner = QudPlanner(llm, cache=cache)
    planner.plan("how many runs")
    again = planner.plan("  How many RUNS? ")
    assert again.cached and len(llm.prompts) == 1
    assert cache.hits == 1 and cache.misses == 1
    # persisted: a new planner (next app start) hits too
    fresh = QudPlanner(ScriptedLLM({}), cache=PlanCache(tmp_path / "plans.json"))
    assert fresh.plan("how many runs").cached


def test_plans_cached_with_other_examples_are_planned_afresh(tmp_path):
    plan = 'APPLY(l=RETRIEVE(query="running"), fct=len)'
    QudPlanner(ScriptedLLM({"how many runs": [plan]}), cache=PlanCache(tmp_path / "plans.json")).plan("how many runs")
    llm = ScriptedLLM({"how many runs": [plan]})
    fewer = QudPlanner(llm, examples=EXAMPLES[:-1], cache=PlanCache(tmp_path / "plans.json"))
    assert not fewer.plan("how many runs").cached and len(llm.prompts) == 1
    # a cache file from before plans were tied to their examples: nothing in it is trusted
    (tmp_path / "old.json").write_text(json.dumps({"how many runs": plan}))
    llm = ScriptedLLM({"how many runs": [plan]})
    assert not QudPlanner(llm, cache=PlanCache(tmp_path / "old.json")).plan("how many runs").cached


def test_plans_cached_by_another_model_are_planned_afresh(tmp_path):
    plan = 'APPLY(l=RETRIEVE(query="running"), fct=len)'
    first = ScriptedLLM({"how many runs": [plan]})
    first.identity = "qwen-1.5b.gguf:1117320768"
    QudPlanner(first, cache=PlanCache(tmp_path / "plans.json")).plan("how many runs")
    same = ScriptedLLM({"how many runs": [plan]})
    same.identity = "qwen-1.5b.gguf:1117320768"
    assert QudPlanner(same, cache=PlanCache(tmp_path / "plans.json")).plan("how many runs").cached
    other = ScriptedLLM({"how many runs": [plan]})
    other.identity = "qwen-0.5b.gguf:491400064"
    assert not QudPlanner(other, cache=PlanCache(tmp_path / "plans.json")).plan("how many runs").cached
    assert len(other.prompts) == 1


def test_follow_up_is_planned_with_the_previous_question():
    llm = ScriptedLLM({"How many runs in 2024? | and in 2023?":
                       ['APPLY(l=FILTER(l=RETRIEVE(query="running"), filter=lambda e: year(e.start) == 2023), fct=len)']})
    planned = QudPlanner(llm).plan("and in 2023?", previous="How many runs in 2024?")
    assert "2023" in planned.plan_text


def test_example_library_is_large_valid_and_covers_every_operator():
    assert len(EXAMPLES) >= 60
    used = set()
    for ex in EXAMPLES:
        node = parse_plan(ex.plan)
        assert validate_plan(node) == [], ex.question
        assert print_plan(node) == ex.plan, ex.question
        used |= set(re.findall(r"\b([A-Z_]{3,})\(", ex.plan))
    assert set(OPERATORS) <= used
    tags = {t for ex in EXAMPLES for t in ex.tags}
    assert {"join", "overlap", "unnest", "relative", "weekday", "hour", "sum", "followup"} <= tags


def test_no_example_is_a_benchmark_test_question():
    from synth.questions import templates

    def norm(s: str) -> str:
        return re.sub(r"[^a-z ]", "", re.sub(r"\{[^}]*\}", "", s.lower())).split()

    test_texts = set()
    for t in templates("test"):
        for variant in getattr(t, "texts", None) or [getattr(t, "text", "")]:
            test_texts.add(" ".join(norm(variant)))
    assert test_texts, "the benchmark exposes its test templates"
    for ex in EXAMPLES:
        assert " ".join(norm(ex.question.split(" | ")[0])) not in test_texts, ex.question


def test_no_example_is_a_timelineqa_question():
    from synth.timelineqa import TimelineQAError, load_questions

    def norm(s: str) -> str:
        return " ".join(re.sub(r"[^a-z0-9 ]", " ", s.lower()).split())

    try:
        questions = {norm(q["question"]) for q in load_questions()}
    except TimelineQAError as exc:
        pytest.skip(f"TimelineQA data not beside the checkout: {exc}")
    assert questions
    for ex in EXAMPLES:
        assert norm(ex.question.split(" | ")[0]) not in questions, ex.question


def test_a_time_filter_the_question_does_not_ask_for_is_dropped_also_from_cached_plans(tmp_path):
    invented = 'APPLY(l=FILTER(l=RETRIEVE(query="running"), filter=lambda e: year(e.start) == 2023), fct=len)'
    llm = ScriptedLLM({"how many runs": [invented]})
    planned = QudPlanner(llm).plan("how many runs")
    assert planned.plan_text == 'APPLY(l=RETRIEVE(query="running"), fct=len)'
    cache = PlanCache(tmp_path / "plans.json")
    cache.put("how many runs", invented)  # planned before the rule existed
    again = QudPlanner(ScriptedLLM({}), cache=cache).plan("how many runs")
    assert again.cached and again.plan_text == 'APPLY(l=RETRIEVE(query="running"), fct=len)'


def test_the_cache_keeps_the_models_plan_so_a_rule_removed_does_not_live_on(tmp_path):
    invented = 'APPLY(l=FILTER(l=RETRIEVE(query="running"), filter=lambda e: year(e.start) == 2023), fct=len)'
    with_rules = QudPlanner(ScriptedLLM({"how many runs": [invented]}), cache=PlanCache(tmp_path / "plans.json"))
    assert with_rules.plan("how many runs").plan_text == 'APPLY(l=RETRIEVE(query="running"), fct=len)'
    without = QudPlanner(ScriptedLLM({}), cache=PlanCache(tmp_path / "plans.json"))
    without.rules = ()  # the rule that dropped the filter is gone
    again = without.plan("how many runs")
    assert again.cached and again.plan_text == invented


def test_a_cache_of_plans_made_after_the_rules_is_not_served(tmp_path):
    ruled = QudPlanner(ScriptedLLM({"how many runs": ['APPLY(l=RETRIEVE(query="running"), fct=len)']}))
    old = tmp_path / "plans.json"  # the fingerprint of this prompt and model before the cache held raw plans
    import hashlib
    import json

    old.write_text(json.dumps({"library": hashlib.sha256(ruled.prefix.encode()).hexdigest()[:16],
                               "plans": {"how many runs": 'APPLY(l=RETRIEVE(query="running"), fct=len)'}}))
    assert not QudPlanner(ScriptedLLM({"how many runs": ['APPLY(l=RETRIEVE(query="running"), fct=len)']}),
                          cache=PlanCache(old)).plan("how many runs").cached


def test_a_how_many_question_planned_as_a_sum_counts_also_from_cached_plans(tmp_path):
    summed = ('SUM(l=EXTRACT(l=RETRIEVE(query="songs I listened to"), attr_names=["total"], attr_types=[float]), '
              'attr_name="total")')
    question = "How many songs did I listen to?"
    planned = QudPlanner(ScriptedLLM({question: [summed]})).plan(question)
    assert planned.plan_text == 'APPLY(l=RETRIEVE(query="songs I listened to"), fct=len)'
    cache = PlanCache(tmp_path / "plans.json")
    cache.put(question, summed)  # planned before the rule existed
    again = QudPlanner(ScriptedLLM({}), cache=cache).plan(question)
    assert again.cached and again.plan_text == 'APPLY(l=RETRIEVE(query="songs I listened to"), fct=len)'


def test_a_count_planned_as_a_sum_of_text_is_repaired_into_a_count():
    """"how many messages" came back as SUM over the messages, reading a role nothing
    extracts: the plan counts the rows and extracts the role instead of failing."""
    llm = ScriptedLLM({"how many messages did I write to chatgpt": [
        'SUM(l=FILTER(l=EXTRACT(l=RETRIEVE(query="chatgpt conversation"), attr_names=["message"], '
        'attr_types=[str]), filter=lambda e: e["role"] == "user"), attr_name="message")']})
    planned = QudPlanner(llm).plan("how many messages did I write to chatgpt")
    assert planned.plan_text == ('APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="chatgpt conversation"), '
                                 'attr_names=["role"], attr_types=[str]), filter=lambda e: e["role"] == "user"), '
                                 'fct=len)')
    assert len(llm.prompts) == 1


def test_a_relative_month_planned_without_its_year_gets_it_whatever_the_question_says(tmp_path):
    """The repair reads the plan, not the question: no words of it are needed."""
    alone = 'APPLY(l=FILTER(l=RETRIEVE(query="songs"), filter=lambda e: month(e.start) == month(today())), fct=len)'
    bound = ('APPLY(l=FILTER(l=RETRIEVE(query="songs"), filter=lambda e: year(e.start) == year(today()) '
             'and month(e.start) == month(today())), fct=len)')
    question = "Songs played since the 1st?"
    assert QudPlanner(ScriptedLLM({question: [alone]})).plan(question).plan_text == bound
    cache = PlanCache(tmp_path / "plans.json")
    cache.put(question, alone)  # planned before the repair existed
    again = QudPlanner(ScriptedLLM({}), cache=cache).plan(question)
    assert again.cached and again.plan_text == bound
