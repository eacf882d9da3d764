"""The fine-tuned planner's prompt, schema and planning loop (a scripted LLM stands in
for the model here; the real adapter is exercised by the slow tests and the
benchmarks), and the training-data tools that feed it."""
from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest

from engine.plan import parse_plan, validate_plan
from engine.plan.grammar import build_grammar
from engine.plan.spec import OPERATORS
from engine.qud.planner import PlanningError
from engine.qud.tuned import END, TunedPlanner, prompt_prefix, render_prompt, schema_lines, store_schema, system_text
from engine.store import events_to_arrow
from importers.base import Event, offset_minutes

COUNT = 'APPLY(l=FILTER(l=RETRIEVE(query="running"), filter=lambda e: year(e.start) == 2023), fct=len)'


class Scripted:
    """Answers each completion with the next scripted text; records the prompts."""

    identity = "scripted"

    def __init__(self, *texts: str):
        self.texts = list(texts)
        self.prompts: list[tuple[str, float, str]] = []

    def complete(self, prompt, *, grammar=None, max_tokens=256, stop=(), temperature=0.0):
        self.prompts.append((prompt, temperature, grammar or ""))
        return self.texts.pop(0)

    def close(self):
        pass


def _add(store, events):
    def job(con):
        con.register("_fx", events_to_arrow(events, 1))
        try:
            con.execute("INSERT INTO events SELECT * FROM _fx")
        finally:
            con.unregister("_fx")
    store.write(job).result()


def test_system_text_follows_the_spec():
    text = system_text()
    for name in OPERATORS:
        assert f"{name}(" in text
    assert "QUD" not in text  # the tuned planner writes whole plans


def test_whole_plan_grammar_has_no_sub_questions():
    whole = build_grammar(whole=True).to_gbnf()
    assert "QUD(" not in whole and "QUD(" in build_grammar().to_gbnf()


def test_store_schema_names_attributes_never_values(store):
    t = datetime(2024, 5, 1, 8, tzinfo=timezone.utc)
    _add(store, [
        Event("strava", "workout", t, "Morning Run", end=t + timedelta(minutes=30),
              attributes={"sport": "running", "distance_km": 5.2}, tz_offset_min=offset_minutes(t)),
        Event("journal", "note", t, "Secret diary", text="my PIN is 4711", tz_offset_min=0),
    ])
    schema = store_schema(store.reader())
    assert schema == [("journal", "note", []), ("strava", "workout", ["distance_km", "sport"])]
    text = schema_lines(schema)
    assert text == "- journal/note: (no attributes)\n- strava/workout: distance_km, sport"
    for value in ("running", "5.2", "4711", "Morning Run", "Secret"):
        assert value not in prompt_prefix(text)


def test_prompt_is_a_stable_prefix_and_the_question():
    prompt = render_prompt("How far did I run?", "- strava/workout: distance_km")
    assert prompt.startswith(prompt_prefix("- strava/workout: distance_km"))
    assert prompt.endswith("Question: How far did I run?<|im_end|>\n<|im_start|>assistant\n")


def test_tuned_planner_validates_and_caches():
    llm = Scripted(COUNT)
    planner = TunedPlanner(llm, lambda: "- strava/workout: distance_km")
    planned = planner.plan("How often did I run in 2023?")
    assert planned.plan_text == COUNT and planned.llm_calls == 1
    prompt, temperature, grammar = llm.prompts[0]
    assert prompt.endswith("How often did I run in 2023?<|im_end|>\n<|im_start|>assistant\n")
    assert temperature == 0.0 and "QUD(" not in grammar
    again = planner.plan("how often did I run in 2023")  # normalised: the cache answers
    assert again.cached and len(llm.prompts) == 1


def test_tuned_planner_retries_warmer_and_reports_what_failed():
    llm = Scripted("APPLY(l=RETRIEVE(query=", COUNT)
    planned = TunedPlanner(llm, lambda: "").plan("runs in 2023?")
    assert planned.attempts == 2 and llm.prompts[1][1] > 0
    bad = 'SUM(l=RETRIEVE(query="running"), attr_name="distance_km")'  # reads what nothing extracts ...
    fixed = TunedPlanner(Scripted(bad), lambda: "").plan("how far did I run")
    assert not validate_plan(fixed.plan) and "EXTRACT(" in fixed.plan_text  # ... repaired structurally
    with pytest.raises(PlanningError) as err:
        TunedPlanner(Scripted("x(", "y(", "z("), lambda: "").plan("?")
    assert len(err.value.attempts) == 3


def test_follow_up_is_asked_with_the_question_it_follows():
    llm = Scripted(COUNT)
    TunedPlanner(llm, lambda: "").plan("and in 2023?", previous="How often did I run in 2022?")
    assert "Question: How often did I run in 2022? | and in 2023?" + END in llm.prompts[0][0]


# ------------------------------------------------------------------ training data tools
def test_surface_variants_keep_parameter_values():
    from models.training.plan_data import surface_variants

    rng = random.Random(1)
    text = "How many times did I eat Vietnamese food in 2023?"
    variants = [v for _ in range(30) for v in surface_variants(text, rng, 2, keep=["Vietnamese", "2023"])]
    assert variants and all(v != text for v in variants)
    assert all("vietnamese" in v.lower() and "2023" in v for v in variants)
    assert any(v != v.lower() or v.islower() for v in variants)


def test_sketches_are_valid_plans_for_train_templates_only():
    from models.training.plan_sketches import sketches
    from synth.questions import templates

    train = {t.id for t in templates("train")}
    for tid, params in (("count:run:year", {"year": 2023}), ("sum:amazon_spend:month", {"month": "2023-05"}),
                        ("argmax:artist:all", {}), ("temporal:last:run", {})):
        if tid not in train:
            continue
        plans = sketches(tid, params)
        assert plans
        for p in plans:
            assert not validate_plan(parse_plan(p)), p
    test_id = next(t.id for t in templates("test"))
    with pytest.raises(ValueError, match="only train templates"):
        sketches(test_id, {})


def test_join_templates_get_valid_join_plans_that_read_the_asked_for_side():
    """A joined row keeps l1's attributes: the asked-for events are l1, the events that
    place them in time (the run, the trip) l2."""
    from models.training.plan_sketches import sketches
    from synth.questions import templates

    train = {t.id for t in templates("train")}
    cases = {"join:artist_while_running": ({}, '"songs I listened to"', "overlaps(i1, i2)"),
             "join:cuisine_after_football_count": ({"cuisine": "Thai"}, '"Thai', "i1.start > i2.end"),
             "join:km_on_trip": ({"city": "Oslo"}, '"running"', "i1.start >= i2.start")}
    for tid, (params, asked, cond) in cases.items():
        if tid not in train:
            continue
        plans = sketches(tid, params)
        assert plans and all("JOIN(l1=" in p for p in plans), tid
        assert any(f"JOIN(l1=RETRIEVE(query={asked}" in p and cond in p for p in plans), tid
        for p in plans:
            assert not validate_plan(parse_plan(p)), p


def test_kept_needs_the_gold_answer():
    from models.training.plan_data import Instance, kept

    inst = Instance("i", "p1", "count:run:year", "train", {}, "2024-01-01", [[3]], "number", "q")
    assert kept({"ok": True, "plan_text": COUNT, "hit": True}, inst)
    assert kept({"ok": True, "plan_text": COUNT, "hit": False, "rlx": True}, inst)
    assert not kept({"ok": True, "plan_text": COUNT, "hit": False, "rlx": False}, inst)
    assert not kept({"ok": False, "plan_text": COUNT, "hit": True}, inst)


def test_an_installation_without_the_tuned_planner_s_model_is_complete_while_the_few_shot_one_answers(monkeypatch):
    """The signed build bundles no fine-tuned planner while no adapter is committed:
    its model status must not say "1 of 8 models are not ready (planner_tuned)", or the
    installed app never answers (found by `make test-dist`)."""
    import models.status
    from app import assemble
    from app.gui import engine_factory as ef

    roles = {r: {"ready": r != "planner_tuned"} for r in ("planner", "planner_tuned", "embedder", "extractor")}
    monkeypatch.setattr(models.status, "status", lambda: {"roles": roles})
    monkeypatch.setenv(assemble.PLANNER_ENV, "fewshot")
    assert set(ef.model_status()) == {"planner", "embedder", "extractor"}
    monkeypatch.setenv(assemble.PLANNER_ENV, "tuned")  # then it is needed, and missing
    assert ef.model_status()["planner_tuned"] == {"ready": False}
