"""The persona generator: determinism, volume, template splits, gold SQL, and export
files that parse with the standard library and import through the real pipeline."""
from __future__ import annotations

import csv
import json
import mailbox
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from synth import personas, questions, verbalize
from synth.simulate import simulate
from synth.world import PERSONAS, build_world

SMALL = dict(years=0.3, scale=0.2, questions_per_template=1)


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> personas.Manifest:
    return personas.generate("p1", tmp_path_factory.mktemp("p1"), **SMALL)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _canonical(m: personas.Manifest) -> list[dict]:
    with open(Path(m.out_dir) / m.canonical, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _questions(m: personas.Manifest) -> list[dict]:
    return questions.load_questions(Path(m.out_dir) / m.questions)


def test_same_seed_gives_identical_bytes(small, tmp_path):
    again = personas.generate("p1", tmp_path / "again", **SMALL)
    a, b = _files(Path(small.out_dir)), _files(Path(again.out_dir))
    assert sorted(a) == sorted(b)
    different = [name for name in a if a[name] != b[name]]
    assert different == []
    assert again.facts == small.facts


def test_another_persona_differs(small, tmp_path):
    other = personas.generate("p2", tmp_path / "p2", years=0.1, scale=0.2, with_questions=False)
    assert other.today != small.today or other.facts != small.facts
    ours = {r["attributes"].get("artist") for r in _canonical(small)} - {None}
    theirs = {r["attributes"].get("artist") for r in _canonical(other)} - {None}
    assert not ours & theirs  # each persona has its own world


def test_full_persona_volume():
    # every persona must reach 30k facts; p3 has the fewest
    spec = PERSONAS["p3"]
    life = simulate(build_world(spec))
    kinds = Counter(f.kind for f in life.facts)
    assert len(life.facts) >= 30_000, kinds
    assert kinds["music_play"] > 20_000
    assert kinds["workout"] > 300 and kinds["meal_out"] > 300 and kinds["email"] > 2_000
    assert len(life.trips) >= 5
    # trips move the day into the destination's zone
    trip = life.trips[0]
    on_trip = [f for f in life.facts if f.kind == "music_play" and trip.start < f.start.date() < trip.end]
    assert on_trip and all(str(f.start.tzinfo) == trip.dest.tz for f in on_trip)


def test_small_persona_has_every_source(small):
    assert set(small.exports) == {"spotify", "netflix", "mail", "calendar", "amazon", "health", "strava",
                                  "journal", "chatgpt"}
    for source, n in small.records_per_source.items():
        assert n > 0, source
    rows = _canonical(small)
    assert len(rows) == small.facts
    assert all(r["exports"] for r in rows)
    # facts that only text knows about: restaurant visits outside any structured export
    text_only = [r for r in rows if r["kind"] == "meal_out"
                 and {e["file"].split("/")[0] for e in r["exports"]} <= {"journal", "Takeout"}]
    assert text_only


def test_template_inventory_and_splits():
    ts = questions.templates()
    assert len(ts) >= 150
    by_cat = Counter(t.category for t in ts)
    assert set(by_cat) == set(questions.CATEGORIES)
    for cat in questions.CATEGORIES:
        splits = {t.split for t in ts if t.category == cat}
        assert splits == {"train", "dev", "test"}, cat
    train_dev = {t.id for t in ts if t.split in ("train", "dev")}
    test = {t.id for t in questions.templates("test")}
    assert test and not train_dev & test
    assert all(len(t.texts) >= 1 for t in ts)


def test_questions_never_leak_test_templates(small):
    split_of = {t.id: t.split for t in questions.templates()}
    qs = _questions(small)
    assert qs
    for q in qs:
        assert q["split"] == split_of[q["template"]]
    train = questions.load_questions(Path(small.out_dir) / small.questions, split="train")
    assert train and all(split_of[q["template"]] == "train" for q in train)


def test_gold_sql_answers_and_evidence(small):
    qs = _questions(small)
    assert len({q["template"] for q in qs}) >= 150
    nonempty = [q for q in qs if q["answer"] and q["answer"] not in ([[0]], [[0.0]])]
    assert len(nonempty) / len(qs) >= 0.8
    ids = {r["id"] for r in _canonical(small)}
    for q in qs:
        assert q["today"] == small.today
        assert set(q["evidence"]) <= ids, q["id"]
        assert q["question"] and "{" not in q["question"], q["question"]


def test_a_count_answer_matches_the_canonical_rows(small):
    rows = _canonical(small)
    qs = [q for q in _questions(small) if q["template"] == "count:run:month"]
    assert qs
    for q in qs:
        month = q["params"]["month"]
        runs = [r for r in rows if r["kind"] == "workout" and r["attributes"]["sport"] == "running"
                and r["start_local"].startswith(month)]
        assert q["answer"] == [[len(runs)]]
        assert sorted(q["evidence"]) == sorted(r["id"] for r in runs)


def test_exports_parse_with_the_standard_library(small):
    root = Path(small.out_dir) / small.exports_dir
    recs = small.records_per_source
    plays = sum(len(json.loads((root / p).read_text(encoding="utf-8"))) for p in small.exports["spotify"])
    assert plays == recs["spotify"]
    (mbox_path,) = small.exports["mail"]
    box = mailbox.mbox(str(root / mbox_path))
    msgs = list(box)
    assert len(msgs) == recs["mail"]
    assert any("Sent" in m["X-Gmail-Labels"] for m in msgs)
    assert all(m["Message-ID"] and m["Date"] for m in msgs)
    (xml_path,) = small.exports["health"]
    tree = ET.parse(root / xml_path)
    workouts = tree.getroot().findall("Workout")
    assert workouts and all(w.find("WorkoutStatistics") is not None for w in workouts)
    assert len(workouts) + len(tree.getroot().findall("Record")) == recs["health"]
    for source in ("netflix", "amazon", "strava"):
        (path,) = small.exports[source]
        with open(root / path, encoding="utf-8-sig", newline="") as f:
            rows = list(csv.reader(f))
        assert len(rows) - 1 == recs[source], source
        assert all(len(r) == len(rows[0]) for r in rows)
    (ics,) = small.exports["calendar"]
    text = (root / ics).read_bytes().decode("utf-8").replace("\r\n ", "")
    assert text.count("BEGIN:VEVENT") == text.count("END:VEVENT") > 0
    assert "RRULE:FREQ=WEEKLY" in text and "EXDATE;TZID=" in text
    assert all(len(line.encode()) <= 75 for line in (root / ics).read_bytes().decode().split("\r\n"))
    (conv,) = small.exports["chatgpt"]
    convs = json.loads((root / conv).read_text(encoding="utf-8"))
    assert len(convs) == recs["chatgpt"]
    for c in convs:
        assert c["current_node"] in c["mapping"]
        node = c["mapping"][c["current_node"]]
        while node["parent"] is not None:  # the active branch leads back to the root
            node = c["mapping"][node["parent"]]
    assert len(small.exports["journal"]) == recs["journal"]
    assert all(Path(p).name[:4].isdigit() and p.endswith(".md") for p in small.exports["journal"])


def test_import_through_the_real_pipeline(small):
    for module in ("spotify", "netflix", "mail", "calendar", "amazon", "apple_health", "strava", "journal",
                   "chatgpt"):
        pytest.importorskip(f"importers.{module}")
    from engine.ingest import import_paths
    from engine.store import EventStore
    from importers.base import ImportContext

    spec = PERSONAS["p1"]
    ctx = ImportContext(home_tz=ZoneInfo(spec.home_tz), own_addresses=frozenset([spec.email]))
    with EventStore(":memory:") as store:
        report = import_paths(store, [Path(small.out_dir) / small.exports_dir], context=ctx)
        assert not report.unrecognized and not report.failed
        assert report.skipped == 0, [f.issues for f in report.files if f.issues]
        counts = dict(((s, k), n) for s, k, n in store.reader().execute(
            "SELECT source, kind, count(*) FROM events GROUP BY ALL").fetchall())
    by_source = Counter()
    for (s, _k), n in counts.items():
        by_source[s] += n
    recs = small.records_per_source
    kinds = small.facts_per_kind
    for source in ("spotify", "netflix", "amazon", "strava", "mail", "calendar", "journal"):
        assert by_source[source] == recs[source], source
    assert counts[("chatgpt", "chat_conversation")] == kinds["chat"]
    canonical_health_workouts = sum(1 for r in _canonical(small) if r["kind"] == "workout"
                                    and any(e["file"].endswith("export.xml") for e in r["exports"]))
    assert counts[("health", "workout")] == canonical_health_workouts


def test_demo_dataset(tmp_path):
    m = personas.write_demo(tmp_path / "demo")
    assert 1_500 <= m.facts <= 8_000
    assert set(m.exports) == set(personas.DEMO_SOURCES)
    sample = questions.load_questions(tmp_path / "demo" / m.questions)
    assert len(sample) >= 6 and m.questions_count == len(sample)
    assert personas.Manifest.load(tmp_path / "demo").facts == m.facts
    assert all(q["answer"] and q["evidence"] for q in sample)


def test_extraction_examples_state_their_values(small):
    spec = PERSONAS["p1"]
    life = simulate(build_world(spec), years=0.1, scale=0.1)
    triples = list(verbalize.extraction_examples(life.facts, seed=3))
    assert len({k for _, k, _ in triples}) >= 5
    for text, key, value in triples:
        if key != "sport":
            assert value.lower() in text.lower(), (text, key, value)
