"""The TimelineQA life as a benchmark: diary notes, questions, recomputed gold."""
from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from synth import timelineqa as tq

pytestmark = pytest.mark.skipif(not (tq.DATA_DIR / "db-sparse-0.json").is_file(),
                                reason="shared TimelineQA data not present")


@pytest.fixture(scope="module")
def qs() -> list[dict]:
    return tq.load_questions()


def _log(name: str) -> list[dict]:
    with open(tq.DATA_DIR / "sparse-0" / name, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_notes_one_per_diary_day(tmp_path):
    paths = tq.write_notes(tmp_path / "notes")
    days = json.loads((tq.DATA_DIR / "sparse-0" / "sparse-0.json").read_text(encoding="utf-8"))
    with_text = [d for d, eps in days.items() if any((e or {}).get("text_template_based") for e in eps.values())]
    assert len(paths) == len(with_text) > 7000
    assert sorted(p.name for p in paths) == sorted(f"{d.replace('/', '-')}.md" for d in with_text)
    note = (tmp_path / "notes" / "1996-01-29.md").read_text(encoding="utf-8")
    assert "I spent 39 minutes on news today." in note


def test_notes_import_as_journal_notes(tmp_path):
    pytest.importorskip("importers.journal")
    from engine.ingest import import_paths
    from engine.store import EventStore

    paths = tq.write_notes(tmp_path / "all")
    picked = paths[100:105]
    with EventStore(":memory:") as store:
        report = import_paths(store, picked)
        assert not report.unrecognized and not report.failed
        rows = store.reader().execute("SELECT source, text FROM events").fetchall()
    # one event per episode: each paragraph under the day's heading is an entry of its own
    # (a day of one episode is one event holding the whole note, heading and all)
    episodes = []
    for path in picked:
        note = path.read_text(encoding="utf-8").strip()
        paragraphs = note.split("\n\n")[1:]
        episodes += paragraphs if len(paragraphs) > 1 else [note]
    assert {r[0] for r in rows} == {"journal"}
    assert sorted(r[1] for r in rows) == sorted(episodes) and len(episodes) > len(picked)


def test_question_counts_and_today(qs):
    kinds = Counter(q["kind"] for q in qs)
    assert kinds == {"multihop": 36, "atomic": 100}
    assert {q["today"] for q in qs} == {"2022-12-31"}
    assert len({q["id"] for q in qs}) == 136
    assert {q["category"] for q in qs if q["kind"] == "multihop"} >= {"aggregation", "grouping", "ordering",
                                                                      "temporal", "join"}


def test_recomputed_answers_repair_split_values(qs):
    fixed = [q for q in qs if q["recomputed"]]
    assert fixed, "the shipped q42 answer is split on commas and must be recomputed"
    for q in qs:
        if q["kind"] == "multihop":
            assert not any(str(v).startswith('"') for row in q["answer"] for v in row), q["id"]
    q42 = next(q for q in qs if q["template"] == "q42")
    assert q42["recomputed"]
    counts = Counter(r["city"] for r in _log("travel-log.csv"))
    top = [c for c, _ in counts.most_common()]
    fifth = counts.most_common(5)[-1][1]
    assert [row[0] for row in q42["answer"]][:1] == top[:1]
    assert {row[0] for row in q42["answer"]} <= {c for c, n in counts.items() if n >= fifth}
    assert len(q42["answer"]) == 5


def test_recomputed_counts_match_the_logs(qs):
    by_t = {q["template"]: q for q in qs if q["kind"] == "multihop"}
    chats = _log("daily_chat-log.csv")
    layla = sum(1 for r in chats if r["date"].startswith("2005/10/")
                and "Layla" in [p.strip() for p in r["friends"].split(",")])
    assert float(by_t["q6"]["answer"][0][0]) == layla
    trips = _log("travel-log.csv")
    assert float(by_t["q39"]["answer"][0][0]) == sum(1 for r in trips if r["city"] == "Rome, Italy")
    meals = _log("daily_meal-log.csv")
    grace = {r["foodtype"] for r in meals if r["date"].startswith("2019/09/") and r["mealtype"] == "dinner"
             and "Grace" in [p.strip() for p in r["people_string"].split(",")]}
    assert {row[0] for row in by_t["q10"]["answer"]} == grace


def test_translate_keeps_sqlite_argmax_semantics():
    sql = "select friends, max(length) from (select friends, sum(howlong) as length from df1 group by friends) as b"
    out = tq.translate(sql)
    assert "ORDER BY length DESC" in out and out.endswith("LIMIT 1")
    grouped = "select year, max(num) from (select year, count(*) as num from df) group by year"
    assert tq.translate(grouped) == grouped


def test_missing_data_is_a_clear_error(tmp_path):
    with pytest.raises(tq.TimelineQAError, match=str(tmp_path)):
        tq.load_questions(tmp_path)
