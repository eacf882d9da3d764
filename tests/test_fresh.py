"""The fresh-phrasing set (``synth.fresh``) and ``hindsight bench fresh`` (fast: the
set's personas are generated once for the module, no store, no models).

These tests never quote an eval question: they read the files."""
from __future__ import annotations

import hashlib
import json
import math
import re
import shutil
from collections import Counter
from datetime import date, timedelta
from pathlib import Path

import pytest

from app.bench import fresh as fresh_bench
from app.bench import persona
from engine.answer import Answer
from synth import fresh
from synth.canonical import CANONICAL_FILE, connect
from synth.questions import templates
from synth.world import DEMO, PERSONAS


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """The set's personas, generated the way ``--gold-only`` caches them."""
    root = tmp_path_factory.mktemp("fresh-work")
    for seed in fresh.personas():
        fresh_bench.generated(seed, root)
    return root


@pytest.fixture(scope="module")
def golds(work):
    out = {}
    for seed in fresh.personas():
        canonical, today = fresh_bench.generated(seed, work)
        qs = [q for q in fresh.load() if q.persona == seed]
        out.update(fresh_bench.gold_for(canonical, qs, today))
    return out


# --------------------------------------------------------------------------- the files
def test_loader_reads_both_parts_with_distinct_ids_and_texts():
    train, ev = fresh.load("train"), fresh.load("eval")
    both = fresh.load()
    assert len(both) == len(train) + len(ev) >= 200
    assert len({q.id for q in both}) == len(both)
    assert len({q.question.casefold() for q in both}) == len(both), "a question is written twice"
    assert fresh.eval_texts() == [q.question for q in ev]
    assert not {q.question for q in train} & set(fresh.eval_texts())
    with pytest.raises(fresh.FreshSetError, match="no part 'test'"):
        fresh.load("test")


def test_personas_are_new_seeds():
    seeds = fresh.personas()
    assert 2 <= len(seeds) <= 3
    taken = {p.seed for p in PERSONAS.values()} | {DEMO.seed}
    assert not set(seeds) & taken


def test_every_category_answer_type_and_source_is_covered():
    qs = fresh.load()
    cats = Counter(q.category for q in qs)
    assert set(cats) == set(fresh.CATEGORIES)
    assert min(cats.values()) >= 20, cats
    assert {q.answer_type for q in qs} == set(fresh.ANSWER_TYPES)
    assert {s for q in qs for s in q.sources} == set(fresh.SOURCES)
    # unanswerable questions, and only they, expect no answer
    assert all((q.category == "unanswerable") == (q.answer_type == "none") for q in qs)


def _template_pattern(text: str) -> re.Pattern:
    """A template text with every {slot} matching anything, case and '?' aside."""
    parts = re.split(r"\{[a-z_]+\}", " ".join(text.lower().split()).rstrip("?"))
    return re.compile(".+".join(re.escape(p) for p in parts) + r"\??")


def test_no_question_is_an_instance_of_a_template():
    patterns = [_template_pattern(t) for tpl in templates() for t in tpl.texts]
    for q in fresh.load():
        text = " ".join(q.question.lower().split()).rstrip("?")
        assert not any(p.fullmatch(text) for p in patterns), q.id


def test_split_is_the_hash_rule_stratified_by_category():
    train, ev = fresh.load("train"), fresh.load("eval")
    expected = fresh.split(train + ev)
    assert all(expected[q.id] == "train" for q in train) and all(expected[q.id] == "eval" for q in ev)
    n_train, n_eval = Counter(q.category for q in train), Counter(q.category for q in ev)
    for cat in fresh.CATEGORIES:
        n = n_train[cat] + n_eval[cat]
        assert n_train[cat] == math.floor(fresh.TRAIN_SHARE * n), cat
        assert n_train[cat] / n <= 0.4 and n_eval[cat] / n >= 0.6, cat
    assert len(train) / (len(train) + len(ev)) <= 0.4


def test_eval_file_is_the_frozen_one():
    path = fresh.part_path("eval")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == fresh.EVAL_SHA256, \
        "eval.jsonl changed: the eval part is frozen; change it only together with EVAL_SHA256"


def test_a_changed_eval_file_is_refused(tmp_path, monkeypatch):
    for part in fresh.PARTS:
        shutil.copy(fresh.part_path(part), tmp_path / f"{part}.jsonl")
    monkeypatch.setattr(fresh, "FRESH_DIR", tmp_path)
    assert len(fresh.load("eval")) == len(fresh.eval_texts())
    lines = (tmp_path / "eval.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    first = json.loads(lines[0])
    first["question"] += " please"
    lines[0] = json.dumps(first, ensure_ascii=False) + "\n"
    (tmp_path / "eval.jsonl").write_text("".join(lines), encoding="utf-8")
    with pytest.raises(fresh.FreshSetError, match="not the frozen eval set"):
        fresh.load("eval")
    assert fresh.load("train")  # the train part is not frozen


# --------------------------------------------------------------------------- gold
def test_every_gold_runs_and_has_its_answer_type(golds):
    problems = {q.id: fresh.answer_type_problem(q.answer_type, golds[q.id]) for q in fresh.load()}
    assert not {k: v for k, v in problems.items() if v}


def test_gold_follows_the_canonical_facts(work):
    # an independent count over the JSON lines agrees with a count question's SQL
    seed = fresh.personas()[0]
    canonical, today = fresh_bench.generated(seed, work)
    by_kind = Counter(json.loads(line)["kind"] for line in open(canonical, encoding="utf-8"))
    con = connect(canonical)
    try:
        q = fresh.FreshQuestion("t-1", seed, "count", "number", ("spotify",), "how many podcasts in all",
                                "SELECT count(*) FROM events WHERE kind = 'podcast_play'")
        assert fresh.gold(con, q, today) == [[by_kind["podcast_play"]]]
        relative = fresh.FreshQuestion("t-2", seed, "yesno", "yesno", ("health",), "any steps the day before?",
                                       "SELECT CASE WHEN count(*) > 0 THEN 'yes' ELSE 'no' END FROM events "
                                       "WHERE kind = 'steps' AND day = $today - INTERVAL 1 DAY")
        assert fresh.gold(con, relative, today) == [["yes"]]
        assert fresh.gold(con, relative, date.fromisoformat(today) + timedelta(days=2)) == [["no"]]
        broken = fresh.FreshQuestion("t-3", seed, "count", "number", ("mail",), "x", "SELECT nope FROM events")
        with pytest.raises(fresh.FreshSetError, match="t-3: gold SQL failed"):
            fresh.gold(con, broken, today)
    finally:
        con.close()


# --------------------------------------------------------------------------- the benchmark
class FakeAsker:
    """Answers from a table of question -> Answer; unknown questions get no plan."""

    def __init__(self, answers: dict[str, Answer]):
        self.answers = answers
        self.todays: list[date | None] = []
        self.closed = False

    def ask(self, question: str, *, today: date | None = None) -> Answer:
        self.todays.append(today)
        return self.answers.get(question) or Answer(question, False, None, "no plan", llm_calls=1,
                                                    timings={"planning_ms": 3000.0, "total_ms": 3000.0})

    def close(self) -> None:
        self.closed = True


def _ok(question: str, value) -> Answer:
    return Answer(question, True, value, str(value), plan_text="AGG(...)", llm_calls=1,
                  timings={"planning_ms": 1000.0, "total_ms": 2000.0})


def _prepared_without_store(work: Path, tmp_path: Path):
    """A stand-in for ``prepare``: the generated persona laid out like a prepared
    one, without importing it (the fake askers need no store)."""

    def fake_prepare(seed, work_dir, echo=lambda _: None, **kw):
        canonical, today = fresh_bench.generated(seed, work)
        folder = tmp_path / f"s{seed}"
        (folder / "persona").mkdir(parents=True, exist_ok=True)
        if not (folder / "persona" / CANONICAL_FILE).exists():
            (folder / "persona" / CANONICAL_FILE).symlink_to(canonical)
        return persona.PreparedPersona(f"s{seed}", folder, folder / "hindsight.duckdb", today, "Europe/Berlin",
                                       folder / "persona" / "questions.jsonl", {"events": 1}, cached=True)
    return fake_prepare


def test_run_scores_with_rlx_for_amounts_and_reports_per_category(work, golds, tmp_path, monkeypatch):
    limit = 2 * len(fresh.CATEGORIES)
    chosen = fresh_bench.select(fresh.load("train"), limit)
    assert Counter(q.category for q in chosen) == {c: 2 for c in fresh.CATEGORIES}

    monkeypatch.setattr(fresh_bench, "prepare", _prepared_without_store(work, tmp_path))
    answers: dict[str, Answer] = {}
    expect_score, expect_hit = {}, {}
    for i, q in enumerate(chosen):
        gold = golds[q.id]
        if q.category == "unanswerable":
            continue  # no plan: an honest refusal, which is right here
        value = gold[0][0]
        if q.category == "sum" and i % 2 == 0:
            answers[q.question] = _ok(q.question, round(value * 1.05, 2))  # 5 % off: Rlx only
            expect_score[q.id], expect_hit[q.id] = True, False
        elif i % 4 == 1:
            answers[q.question] = _ok(q.question, "something else")
            expect_score[q.id] = expect_hit[q.id] = False
        else:
            answers[q.question] = _ok(q.question, value)
            expect_score[q.id] = expect_hit[q.id] = True
    askers: list[FakeAsker] = []

    def open_asker(method, store_file):
        askers.append(FakeAsker(answers))
        return askers[-1]

    figs = fresh_bench.run("reqap", part="train", limit=limit, work_dir=work, results_dir=tmp_path / "res",
                           open_asker=open_asker)
    records = [json.loads(line) for line in open(figs["records_file"], encoding="utf-8")]
    assert len(records) == figs["questions"] == limit
    assert len(askers) == len({q.persona for q in chosen}) and all(a.closed for a in askers)
    by_id = {r["id"]: r for r in records}
    for qid, hit in expect_hit.items():
        assert by_id[qid]["hit"] is hit, qid
    unanswerable = [q.id for q in chosen if q.category == "unanswerable"]
    assert all(by_id[i]["hit"] and not by_id[i]["valid_plan"] for i in unanswerable)
    right = sum(expect_score.values()) + len(unanswerable)
    assert figs["score"] == round(right / limit, 4)
    assert figs["hit_at_1"] == round((sum(expect_hit.values()) + len(unanswerable)) / limit, 4)
    assert figs["score"] > figs["hit_at_1"], "a sum 5 % off counts in the headline, not in Hit@1"
    assert figs["score_per_category"]["unanswerable"] == {"questions": 2, "score": 1.0}
    assert figs["valid_plan_share"] == round(len(answers) / limit, 4)
    # every question was asked with its persona's today
    todays = {fresh_bench.generated(s, work)[1] for s in fresh.personas()}
    assert {t.isoformat() for a in askers for t in a.todays} <= todays
    md = fresh_bench.table(figs)
    assert f"| Hit@1 (Rlx for amounts) | {figs['score'] * 100:.1f}% |" in md
    assert "| planning median / p95 |" in md and "| unanswerable | 2 | 100.0% |" in md


def test_select_spreads_over_categories():
    qs = fresh.load("eval")
    assert fresh_bench.select(qs, None) == qs
    first = fresh_bench.select(qs, len(fresh.CATEGORIES))
    assert {q.category for q in first} == set(fresh.CATEGORIES)


def test_cli_gold_only_prints_the_golds(cli, work):
    code, out, err = cli("bench", "fresh", "--gold-only", "--limit", "9", "--json", "--work-dir", str(work))
    assert code == 0, err
    payload = json.loads(out)
    assert payload["problems"] == 0 and len(payload["questions"]) == 9
    assert {r["category"] for r in payload["questions"]} == set(fresh.CATEGORIES)
    for r in payload["questions"]:
        assert (r["gold"] == []) == (r["answer_type"] == "none"), r["id"]
    md = fresh_bench.gold_table(payload)
    assert "gold of 9 questions, 0 with a problem" in md and md.count("\n| s") == 9


def test_gold_table_flags_a_problem():
    result = {"part": "train", "problems": 1, "questions": [
        {"id": "s1-001", "category": "count", "answer_type": "number", "question": "how many | runs",
         "gold": [], "problem": "expected an answer, got no rows"}]}
    md = fresh_bench.gold_table(result)
    assert "| s1-001 | count | number | how many \\| runs | [] | expected an answer, got no rows |" in md


def test_cli_fresh_saves_a_report(cli, work, tmp_path, monkeypatch):
    monkeypatch.setattr(fresh_bench, "prepare", _prepared_without_store(work, tmp_path))
    monkeypatch.setattr(fresh_bench, "open_method", lambda method, store, **kw: FakeAsker({}))
    res = tmp_path / "res"
    code, out, err = cli("bench", "fresh", "--part", "train", "--limit", "3", "--json", "--results", str(res),
                         "--work-dir", str(work))
    assert code == 0, err
    figures = json.loads(out)["figures"]
    assert figures["questions"] == 3 and figures["part"] == "train" and figures["valid_plan_share"] == 0.0
    assert (res / "fresh-train-reqap-latest.json").is_file()
    assert "[1/3] ---" in err  # progress on stderr


def test_cli_fresh_refuses_an_unknown_method(cli, tmp_path):
    code, out, err = cli("bench", "fresh", "--method", "sql", "--work-dir", str(tmp_path))
    assert code != 0 and "sql" in err


def test_prepare_refuses_an_unknown_persona(tmp_path):
    with pytest.raises(persona.BenchError, match="unknown persona 'nobody'"):
        persona.prepare("nobody", tmp_path)
