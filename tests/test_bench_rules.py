"""The rule ablation: one plan from the model, run with every rule, with none and
with all but each one, and scored per variant."""
from __future__ import annotations

import json
from datetime import date

from app.bench import rules as R
from engine.answer import Answer
from engine.qa import HindsightEngine
from engine.operators import Models
from engine.qud import QudPlanner
from engine.qud.planner import GROUND_RULES
from tests.test_qa import _store_with, _workout
from tests.test_qud import ScriptedLLM

Q = "how many runs did i do in march 2024"
LISTED = 'FILTER(l=RETRIEVE(query="running"), filter=lambda e: year(e.start) == 2024 and month(e.start) == 3)'


class _Owned:
    def __init__(self, inner):
        self.inner, self.closed = inner, False

    def ask(self, question, *, today=None):
        return self.inner.ask(question, today=today)

    def close(self):
        self.closed = True


def test_each_variant_is_run_and_the_product_answer_is_every_rules(store, tmp_path):
    _store_with(store, tmp_path, [_workout(d, "running", 5.0) for d in (1, 3, 5)])
    llm = ScriptedLLM({Q: [LISTED]})
    asker = R._Ablating(_Owned(HindsightEngine(store, QudPlanner(llm), Models())))
    answer = asker.ask(Q, today=date(2024, 4, 1))
    # the product counts the listed rows ("how many"); the model's own plan lists them
    assert answer.answer == 3 and len(llm.temperatures) == 1
    variants = asker.answers[Q]
    assert variants[R.ALL].answer == 3 and isinstance(variants[R.NONE].answer, list)
    assert variants["count_listed_rows"].answer != 3
    assert asker.plans[Q]["count_listed_rows"] == LISTED and asker.plans[Q][R.NONE] == LISTED
    assert asker.planner.rules == ()  # it planned without rules; the variants added them


def test_scores_and_summary_say_what_each_rule_is_worth(tmp_path):
    ans = {R.NONE: Answer(Q, True, [1, 2, 3], ""), R.ALL: Answer(Q, True, 3, "")}
    for rule in GROUND_RULES:
        ans[rule.__name__] = ans[R.NONE] if rule.__name__ == "count_listed_rows" else ans[R.ALL]
    plans = {n: ("L" if a is ans[R.NONE] else "C") for n, a in ans.items()}

    asker = type("Asker", (), {"answers": {Q: ans}, "plans": {Q: plans}})()
    records = tmp_path / "r.jsonl"
    records.write_text(json.dumps({"id": "x1", "question": Q, "gold": [[3]], "category": "count"}) + "\n")
    items = R._scored(records, [asker], lambda r: bool(r["hit"]), "fresh-train")
    assert items[0]["changed"] == ["count_listed_rows"]
    assert items[0]["scores"][R.ALL] and not items[0]["scores"][R.NONE]
    figures = R.summarise(items, [r.__name__ for r in GROUND_RULES])
    worth = {r["rule"]: r for r in figures["rules"]}
    assert worth["count_listed_rows"]["gain"] == 1 and worth["count_listed_rows"]["questions_changed"] == 1
    assert worth["count_orders"]["gain"] == 0 and worth["count_orders"]["questions_changed"] == 0
    assert figures["hits_all_rules"] == 1 and figures["hits_no_rules"] == 0
    text = R.table(figures)
    assert "| count_listed_rows | 1 | +1 |" in text and "| as the model wrote them | 0 | 0 of 1 |" in text


YES_NO = "did i run in march 2024"


def test_a_reading_the_question_has_is_answered_without_it_and_the_others_as_the_product(store, tmp_path):
    _store_with(store, tmp_path, [_workout(d, "running", 5.0) for d in (1, 3)])
    asker = R._Ablating(_Owned(HindsightEngine(store, QudPlanner(ScriptedLLM({YES_NO: [LISTED]})), Models())))
    answer = asker.ask(YES_NO, today=date(2024, 4, 1))
    variants = asker.answers[YES_NO]
    assert answer.answer == "yes"
    # without the yes/no reading, the same plan answers with its entries
    without = variants[R.reading_variant("yes_no")]
    assert isinstance(without.answer, list) and len(without.answer) == 2
    # a reading whose words the question lacks is not run again: the product's answer
    assert variants[R.reading_variant("latest_asked")] is variants[R.ALL]
    assert asker.plans[YES_NO][R.reading_variant("yes_no")] != asker.plans[YES_NO][R.ALL]
    assert asker.runner.readings == R.READINGS  # put back after the variant


def test_under_a_planner_without_rules_only_the_readings_vary(store, tmp_path):
    _store_with(store, tmp_path, [_workout(d, "running", 5.0) for d in (1, 3, 5)])

    class Unruled:  # the fine-tuned planner's shape: no rules to switch
        llm_calls = 0

        def __init__(self):
            self.inner = QudPlanner(ScriptedLLM({Q: [LISTED]}))
            self.inner.rules = ()

        def plan(self, question, **kw):
            return self.inner.plan(question, **kw)

    engine = HindsightEngine(store, Unruled(), Models())
    asker = R._Ablating(_Owned(engine))
    asker.ask(Q, today=date(2024, 4, 1))
    plans = asker.plans[Q]
    assert plans[R.ALL] == LISTED == plans["count_listed_rows"]  # no rule rewrote the product's plan
    assert not hasattr(engine.planner, "rules")


def test_the_summary_counts_a_reading_like_a_rule(tmp_path):
    name = R.reading_variant("yes_no")
    yes, listed = Answer(YES_NO, True, "yes", ""), Answer(YES_NO, True, ["a", "b"], "")
    ans = {n: yes for n in (R.NONE, R.ALL, *R.measured())} | {name: listed}
    plans = {n: "P" for n in ans} | {name: "P (without yes_no)"}
    asker = type("Asker", (), {"answers": {YES_NO: ans}, "plans": {YES_NO: plans}})()
    records = tmp_path / "r.jsonl"
    records.write_text(json.dumps({"id": "x2", "question": YES_NO, "gold": [["yes"]], "category": "yesno"}) + "\n")
    items = R._scored(records, [asker], lambda r: bool(r["hit"]), "dev-p5")
    assert items[0]["changed"] == [name]
    worth = {r["rule"]: r for r in R.summarise(items, R.measured())["rules"]}
    assert worth[name]["gain"] == 1 and worth[name]["questions_changed"] == 1
