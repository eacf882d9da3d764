"""The planner's training-only question families: gold computed over a generated
life's facts, every candidate a valid plan, and each family's question answerable
by the plan language (a candidate reads what the question is about)."""
from __future__ import annotations

import random
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
