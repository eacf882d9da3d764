"""The planner's training-only question families: gold computed over a generated
life's facts, every candidate a valid plan, and each family's question answerable
by the plan language (a candidate reads what the question is about)."""
from __future__ import annotations

import random
import re
from datetime import date
from pathlib import Path

import pytest

from engine.plan import parse_plan, validate_plan
from models.training import plan_families as F
from synth import personas
from synth.canonical import connect
from synth.questions import instantiate, templates


@pytest.fixture(scope="module")
def canonical(tmp_path_factory) -> Path:
    m = personas.generate("p1", tmp_path_factory.mktemp("p1"), years=0.6, scale=0.3, with_questions=False)
    return Path(m.out_dir) / m.canonical


@pytest.fixture(scope="module")
def drawn(canonical) -> dict[str, list[dict]]:
    con = connect(canonical)
    rng = random.Random(5)
    try:
        return {t.id: instantiate(t, con, persona="p1", today=date(2030, 1, 1), rng=rng, n=3, cache={})
                for t in F.FAMILIES}
    finally:
        con.close()


def test_families_are_train_only_and_new():
    bench = {t.id for t in templates()}
    assert F.FAMILIES and all(t.split == "train" and t.id.startswith("extra:") for t in F.FAMILIES)
    assert not bench & set(F.BY_ID)
    categories = {t.category for t in F.FAMILIES}
    assert {"lookup", "yesno", "first_last", "comparison", "temporal"} <= categories


def test_most_families_have_instances_with_gold_and_valid_candidates(drawn):
    with_gold = [tid for tid, insts in drawn.items() if any(i["answer"] for i in insts)]
    assert len(with_gold) >= len(F.FAMILIES) * 2 // 3, sorted(set(F.BY_ID) - set(with_gold))
    for tid, insts in drawn.items():
        for inst in insts:
            plans = F.family_sketches(tid, inst["params"])
            assert plans, tid
            for p in plans:
                assert not validate_plan(parse_plan(p)), (tid, p)


def test_a_lookup_reads_the_value_asked_of_the_day_asked(drawn):
    inst = next(i for i in drawn["extra:lookup:run_place:day"] if i["answer"])
    y, m, d = (int(x) for x in inst["params"]["day"].split("-"))
    plans = F.family_sketches("extra:lookup:run_place:day", inst["params"])
    assert all(f"date(e.start) == date({y}, {m}, {d})" in p and p.startswith("EXTRACT(") for p in plans)
    assert any('attr_names=["place"]' in p for p in plans)


def test_a_day_named_without_its_year_is_the_latest_before_today(canonical):
    from datetime import timedelta

    con = connect(canonical)
    try:
        today = con.execute("SELECT max(day) FROM events").fetchone()[0] + timedelta(days=1)
        t = F.BY_ID["extra:lookup:restaurant:recent_day"]
        insts = instantiate(t, con, persona="p1", today=today, rng=random.Random(3), n=4, cache={})
        assert insts and all(i["answer"] for i in insts)
        for inst in insts:
            named = inst["params"]["dayname"]
            assert named.lower() in inst["question"].lower() and not re.search(r"\d{4}", named)  # no year
            marks = ", ".join("?" * len(inst["evidence"]))
            [gold_day] = con.execute(f"SELECT DISTINCT day FROM events WHERE id IN ({marks})",
                                     inst["evidence"]).fetchall()
            assert today - timedelta(days=366) <= gold_day[0] < today  # the latest such day, not an older one
            [plan] = F.family_sketches(t.id, inst["params"])[:1]
            assert f"month(e.start) == {gold_day[0].month} and day(e.start) == {gold_day[0].day}" in plan
            assert "e.start < today() and e.start >= today() - days(365)" in plan and "date(" not in plan
    finally:
        con.close()


def test_yes_no_families_have_both_answers_somewhere(drawn):
    answers = {a[0] for tid, insts in drawn.items() if tid.startswith("extra:yesno:") for i in insts
               for a in i["answer"]}
    assert answers == {"yes", "no"}


def test_an_unknown_family_is_refused():
    with pytest.raises(ValueError, match="not a training family"):
        F.family_sketches("count:run:year", {"year": 2023})


def test_training_pairs_are_phrased_in_every_text_of_the_family():
    from models.training.plan_data import Instance, phrasings, train_template

    inst = Instance("i", "p1", "extra:lookup:mood:day", "train", {"day": "2023-03-05"}, "2024-01-01",
                    [["good"]], "text", "how was I feeling on 2023-03-05")
    texts = phrasings(inst, random.Random(1))
    assert len(texts) >= len(F.BY_ID["extra:lookup:mood:day"].texts)  # the asked one may be one of them
    assert all("2023" in t and ("March" in t or "2023-03-05" in t) for t in texts)
    assert train_template("count:run:year").split == "train"
    with pytest.raises(KeyError):
        train_template("no:such:template")


def test_new_pairs_are_added_to_an_earlier_build_once(tmp_path, monkeypatch):
    import gzip
    import json

    from models.training import plan_data as D

    monkeypatch.setattr(D, "_persona_folder", lambda work, pid: tmp_path)
    monkeypatch.setattr(D, "schema_of", lambda path: [("journal", "note", ["date", "words"]),
                                                      ("strava", "workout", ["sport"])])
    base = tmp_path / "base"
    base.mkdir()
    old = {"id": "old:1", "prompt": "p", "completion": "c", "question": "q", "template": "count:run:year",
           "plan": 'APPLY(l=RETRIEVE(query="running"), fct=len)'}
    with gzip.open(base / "pairs.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write(json.dumps(old) + "\n")
    (base / "pairs.manifest.json").write_text(json.dumps({
        "sha256": "abc", "verified_instances": 1, "hand_written_examples": 78, "instances_per_family": {"count": 1},
        "instances_per_operator": {"RETRIEVE": 1, "APPLY": 1}, "instances_per_origin": {"template sketch": 1}}))
    rec = {"id": "new:1", "persona": "p1", "template": "extra:lookup:mood:day", "params": {"day": "2023-03-05"},
           "today": "2024-01-01", "answer": [["good"]], "answer_type": "text",
           "question": "how was I feeling on 2023-03-05",
           "plan": 'EXTRACT(l=RETRIEVE(query="journal note"), attr_names=["mood"], attr_types=[str])'}
    m = D.build([rec, {**rec, "id": "old:1"}], tmp_path, tmp_path / "out", base_pairs=base / "pairs.jsonl.gz")
    with gzip.open(tmp_path / "out" / "pairs.jsonl.gz", "rt", encoding="utf-8") as f:
        pairs = [json.loads(line) for line in f]
    assert [p for p in pairs if p["id"] == "old:1"] == [old]  # kept as it was, not made again
    new = [p for p in pairs if p["id"] == "new:1"]
    assert len(new) >= 3 and not any(p["id"].startswith("hand:") for p in pairs)
    assert all('attr_names=["mood"]' in p["completion"] and p["question"] in p["prompt"] for p in new)
    assert m["verified_instances"] == 2 and m["hand_written_examples"] == 78
    assert m["instances_per_family"] == {"count": 1, "extra:lookup": 1}
    assert m["instances_per_operator"]["RETRIEVE"] == 2 and m["instances_per_operator"]["EXTRACT"] == 1
    assert m["added_to"] == {"sha256": "abc", "pairs": 1} and m["pairs_added"] == len(new) == m["pairs"] - 1


def test_the_held_out_check_catches_a_test_persona_name_and_passes_a_train_one():
    from models.training.plan_data import held_out_check
    from synth.leakage import held_out_names

    held_out = held_out_check()
    name = next(iter(sorted(held_out_names())), None)
    if name is not None:
        assert held_out(f'{{"answer": [["{name}"]]}}')
    assert not held_out("where did I run on 5 July 2022")


def test_balancing_caps_each_family_by_whole_instances_and_keeps_rare_ones():
    from models.training.planner_lora import balanced, family_of

    pairs = [{"id": f"c{i}", "template": "count:runs_in_month", "q": k} for i in range(50) for k in range(3)]
    pairs += [{"id": f"l{i}", "template": "extra:lookup:park_of_run", "q": k} for i in range(4) for k in range(3)]
    pairs += [{"id": "h0", "template": "hand-written", "q": 0}]
    kept, left = balanced(pairs, 10, random.Random(1))
    ids = {}
    for p in kept:
        ids.setdefault(family_of(p["template"]), set()).add(p["id"])
    assert {k: len(v) for k, v in ids.items()} == {"count": 10, "extra:lookup": 4, "hand-written": 1}
    assert left == {"count": 40}
    assert all(sum(p["id"] == i for p in kept) == 3 for i in ids["count"])  # every phrasing of a kept instance
    assert kept != balanced(pairs, 10, random.Random(2))[0]


def test_a_run_on_fixed_time_cuts_its_schedule_to_the_steps_that_fit():
    from models.training.planner_lora import fitted_steps

    assert fitted_steps(1000, 12, 0.5, 100.0) == 212  # 200 more steps of half a second
    assert fitted_steps(100, 12, 0.5, 100.0) == 100  # the whole run fits: unchanged
    assert fitted_steps(1000, 12, 2.0, -30.0) == 13  # over time already: one more step, then save
    assert fitted_steps(1000, 12, 0.0, 100.0) == 1000  # no pace read: unchanged


def test_an_instance_that_draws_one_query_s_value_twice_is_not_verified():
    from app.bench.plan_verify import _same_twice

    t = F.BY_ID["extra:difference:run_km:years"]
    assert _same_twice(t, {"year": 2022, "other_year": 2022})
    assert not _same_twice(t, {"year": 2023, "other_year": 2022})
    assert not _same_twice(F.BY_ID["extra:top_sum:amazon_month:year"], {"year": 2022})
