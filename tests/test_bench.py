"""The benchmark harness: runners, baselines' safety, report shapes (fast, with fake
engines), and one real-model smoke run per method (slow)."""
from __future__ import annotations

import json
import os
from datetime import date
from pathlib import Path

import duckdb
import pytest

from app.bench import baselines, persona, timelineqa
from engine.answer import Answer
from synth.questions import load_questions


# --------------------------------------------------------------------------- fakes
class FakeEngine:
    """Answers from a table of question -> value; records the today it was given."""

    def __init__(self, answers: dict[str, object], fail_on: str = ""):
        self.answers = answers
        self.fail_on = fail_on
        self.seen: list[tuple[str, date | None]] = []
        self.closed = False

    def ask(self, question: str, *, today: date | None = None) -> Answer:
        self.seen.append((question, today))
        if self.fail_on and self.fail_on in question:
            raise RuntimeError("model crashed")
        if question not in self.answers:
            return Answer(question, False, None, "no plan", llm_calls=3, timings={"planning_ms": 900.0,
                                                                                   "total_ms": 900.0})
        return Answer(question, True, self.answers[question], "text", plan_text="APPLY(...)", llm_calls=2,
                      timings={"planning_ms": 100.0, "execution_ms": 20.0, "total_ms": 120.0,
                               "op_retrieve_ms": 15.0})

    def close(self) -> None:
        self.closed = True


class FakeLLM:
    """A Planner that returns a fixed completion and keeps the prompts it saw."""

    def __init__(self, reply: str):
        self.reply = reply
        self.prompts: list[str] = []

    def complete(self, prompt, *, grammar=None, max_tokens=256, stop=(), temperature=0.0) -> str:
        self.prompts.append(prompt)
        return self.reply

    def close(self) -> None:
        pass


QUESTIONS = [
    {"id": "p:a:0", "category": "aggregation", "question": "how often did i run in 2023", "today": "2024-11-29",
     "answer": [[52]]},
    {"id": "p:b:0", "category": "ordering", "question": "which artist did i play most", "today": "2024-11-29",
     "answer": [["Jacob Norman"]]},
    {"id": "p:c:0", "category": "temporal", "question": "when did i last swim", "today": "2024-11-29",
     "answer": [["2024-11-20"]]},
    {"id": "p:d:0", "category": "temporal", "question": "crash please", "today": "2024-11-29", "answer": [[1]]},
]


# --------------------------------------------------------------------------- runner
def test_answer_all_scores_appends_and_survives_a_crash(tmp_path):
    engine = FakeEngine({"how often did i run in 2023": 55, "which artist did i play most": ["Stone Aurora"]},
                        fail_on="crash")
    out = tmp_path / "r.jsonl"
    lines: list[str] = []
    records = persona.answer_all(engine, QUESTIONS, "reqap", out, echo=lines.append)
    assert [r["hit"] for r in records] == [False, False, False, False]
    assert [r["rlx"] for r in records] == [True, False, False, False]  # 55 is within 10% of 52
    assert records[2]["valid_plan"] is False and records[2]["llm_calls"] == 3
    assert "RuntimeError: model crashed" in records[3]["answer_text"]
    assert engine.seen[0] == ("how often did i run in 2023", date(2024, 11, 29))
    # one line per question on disk and on the progress stream, in order
    on_disk = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in on_disk] == [q["id"] for q in QUESTIONS]
    assert len(lines) == 4 and lines[0].startswith("[1/4] rlx")


def test_records_are_on_disk_before_the_run_ends(tmp_path):
    out = tmp_path / "r.jsonl"

    class Interrupting(FakeEngine):
        def ask(self, question, *, today=None):
            if question == "when did i last swim":
                raise KeyboardInterrupt
            return super().ask(question, today=today)

    with pytest.raises(KeyboardInterrupt):
        persona.answer_all(Interrupting({"how often did i run in 2023": 52}), QUESTIONS, "reqap", out)
    kept = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in kept] == ["p:a:0", "p:b:0"] and kept[0]["hit"] is True


@pytest.fixture
def small_personas(monkeypatch):
    """The real generator and importers, on a short thin life, so a run takes seconds."""
    import synth as synth

    real = synth.generate
    calls = []

    def small(pid, out_dir, **kw):
        calls.append(pid)
        assert kw == {"scale": 0.05, "years": 0.3}
        return real(pid, out_dir, **kw)

    monkeypatch.setattr(synth, "generate", small)
    return calls


def test_persona_run_imports_once_and_scores(tmp_path, small_personas):
    opened = []

    def open_asker(method, store_file):
        from engine.store import EventStore

        with EventStore(store_file, read_only=True) as s:  # the real import landed in the store
            assert s.count() > 500
            sources = {r["source"] for r in s.sources()}
        assert {"spotify", "strava", "journal", "mail"} <= sources
        opened.append(store_file)
        qs = load_questions(Path(store_file).parent / "persona" / "questions.jsonl", "dev")
        # right about one of the two questions the run asks, wrong about the other
        return FakeEngine({q["question"]: q["answer"][0][0] for q in persona.spread(qs, 2)[:1]})

    figs = persona.run("reqap", split="dev", limit=2, work_dir=tmp_path / "work", results_dir=tmp_path / "res",
                       open_asker=open_asker, scale=0.05, years=0.3)
    assert small_personas == ["p4"]
    assert figs["questions"] == 2 and figs["hit_at_1"] == 0.5 and figs["rlx_hit_at_1"] == 0.5
    assert figs["imports"]["p4"]["events"] > 500 and figs["imports"]["p4"]["cached"] is False
    assert figs["imports"]["p4"]["events_per_s"] > 0 and figs["peak_rss_mb"] > 0
    assert len(Path(figs["records_file"]).read_text().splitlines()) == 2
    again = persona.run("reqap", split="dev", limit=1, work_dir=tmp_path / "work", results_dir=tmp_path / "res",
                        open_asker=open_asker, scale=0.05, years=0.3)
    assert small_personas == ["p4"], "the second run must reuse the cached store"
    assert again["imports"]["p4"]["cached"] is True and again["questions"] == 1
    assert opened[0] == opened[1]


def test_persona_run_refuses_unknowns(tmp_path):
    with pytest.raises(persona.BenchError, match="no persona 'p99'"):
        persona.run("reqap", persona="p99", work_dir=tmp_path)
    with pytest.raises(persona.BenchError, match="unknown method"):
        persona.run("sql", work_dir=tmp_path)


def test_cli_persona_saves_report_and_diff(cli, tmp_path, small_personas, monkeypatch):
    runs: list[Path] = []

    def fake_open(method, store_file, **kw):
        runs.append(store_file)
        qs = load_questions(Path(store_file).parent / "persona" / "questions.jsonl", "dev")
        # the first run answers everything right, the second nothing: the diff shows the drop
        return FakeEngine({q["question"]: q["answer"][0][0] for q in qs} if len(runs) == 1 else {})

    monkeypatch.setattr(persona, "open_method", fake_open)
    res, work = tmp_path / "res", tmp_path / "work"
    code, out, err = cli("bench", "persona", "--split", "dev", "--limit", "2", "--json", "--scale", "0.05",
                         "--years", "0.3", "--results", str(res), "--work-dir", str(work))
    assert code == 0, err
    payload = json.loads(out)
    assert payload["figures"]["hit_at_1"] == 1.0 and payload["figures"]["method"] == "reqap"
    assert "[1/2] HIT" in err and "[2/2] HIT" in err  # progress on stderr, JSON alone on stdout
    assert (res / "persona-reqap-dev-small-latest.json").is_file()
    md = Path(payload["report"]).read_text()
    assert "| Hit@1 | 100.0% |" in md and "| category |" in md
    code, out, err = cli("bench", "persona", "--split", "dev", "--limit", "2", "--json", "--scale", "0.05",
                         "--years", "0.3", "--results", str(res), "--work-dir", str(work))
    assert code == 0
    assert "| hit_at_1 | 1 | 0 (-100.0%) |" in json.loads(out)["diff"]


def test_cli_persona_unknown_persona_is_a_user_error(cli, tmp_path):
    code, out, err = cli("bench", "persona", "--persona", "nobody", "--work-dir", str(tmp_path))
    assert code == 1 and "no persona 'nobody'" in err


def test_table_shape():
    figs = persona.figures_for("rag", [persona.score_answer(QUESTIONS[0], Answer("q", True, 52, "52",
                                                                               timings={"total_ms": 2000.0,
                                                                                        "op_filter_ms": 3.0}),
                                                          "rag")], personas=["p4"], split="dev", imports={})
    md = persona.table(figs)
    assert "Method **rag**, 1 questions (p4, split dev)" in md
    assert "| Hit@1 | 100.0% |" in md and "| FILTER | 1 | 3 ms | 3 ms |" in md
    assert "| latency median / p95 | 2.0 s / 2.0 s |" in md


# --------------------------------------------------------------------------- TimelineQA
def test_timelineqa_gold_values_split_listed_answers():
    q = {"answer": [["Jack, Olivia"]]}
    assert timelineqa.gold_values(q) == [["Jack, Olivia"], ["Jack"], ["Olivia"]]
    from app.bench import scoring

    assert scoring.hit_at_1("Olivia", timelineqa.gold_values(q))
    assert not scoring.hit_at_1("Olivia", q["answer"])


@pytest.fixture
def short_diary(tmp_path):
    """TimelineQA's files with the diary cut to its first 40 days (the import of all
    7,903 notes takes minutes); questions and logs are the real ones."""
    import shutil

    from synth.timelineqa import DATA_DIR

    d = tmp_path / "tqa"
    shutil.copytree(DATA_DIR, d)
    diary = d / "sparse-0" / "sparse-0.json"
    days = json.loads(diary.read_text())
    diary.chmod(0o644)
    diary.write_text(json.dumps({k: days[k] for k in sorted(days)[:40]}))
    return d


def test_timelineqa_run_imports_the_diary_and_uses_the_fixed_today(tmp_path, short_diary):
    engine = FakeEngine({})

    def open_asker(method, store_file):
        from engine.store import EventStore

        with EventStore(store_file, read_only=True) as s:
            assert [r["source"] for r in s.sources()] == ["journal"] and s.count() >= 40
        return engine

    figs = timelineqa.run("reqap", kind="multihop", limit=2, work_dir=tmp_path / "w", results_dir=tmp_path / "r",
                          open_asker=open_asker, data_dir=short_diary)
    assert figs["questions"] == 2 and figs["hit_at_1"] == 0.0 and figs["kind"] == "multihop"
    assert {t for _, t in engine.seen} == {date(2022, 12, 31)} and engine.closed
    with pytest.raises(persona.BenchError, match="kind"):
        timelineqa.select([], "some", None)


# --------------------------------------------------------------------------- CodeGen
@pytest.fixture
def events_db(tmp_path):
    path = tmp_path / "s.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE events (id VARCHAR, source VARCHAR, kind VARCHAR, title VARCHAR, text VARCHAR, "
                "start TIMESTAMP, \"end\" TIMESTAMP, tz_offset_min INTEGER, attributes JSON)")
    con.execute("INSERT INTO events VALUES "
                "('a', 'strava', 'workout', 'Run', NULL, '2024-03-01 23:30', NULL, 60, '{\"sport\": \"running\", \"distance_km\": 5}'),"
                "('b', 'strava', 'workout', 'Ride', NULL, '2024-03-02 10:00', NULL, 60, '{\"sport\": \"cycling\", \"distance_km\": 30}'),"
                "('c', 'spotify', 'music_stream', 'Song', NULL, '2024-03-02 11:00', NULL, 60, '{\"artist\": \"Jacob Norman\"}')")
    con.close()
    return path


@pytest.mark.parametrize("sql, reason", [
    ("DROP TABLE events", "not DROP"),
    ("DELETE FROM events", "not DELETE"),
    ("INSERT INTO events SELECT * FROM events", "not INSERT"),
    ("SELECT 1; DROP TABLE events", "one statement, got 2"),
    ("COPY events TO 'x.csv'", "not COPY"),
    ("ATTACH 'other.db'", "not ATTACH"),
    ("CALL pragma_version()", "not CALL"),
    ("EXPLAIN SELECT 1", "not EXPLAIN"),
    ("SET memory_limit = '10GB'", "not SET"),
    ("SELEKT 1", "does not parse"),
])
def test_check_select_refuses_everything_but_one_select(sql, reason):
    with pytest.raises(baselines.UnsafeSQL, match=reason):
        baselines.check_select(sql)


def test_check_select_accepts_queries():
    assert baselines.check_select("WITH x AS (SELECT 1 AS a) SELECT a FROM x;") .startswith("WITH")
    assert baselines.check_select("  select count(*) from my_events") == "select count(*) from my_events"


def test_codegen_answers_from_local_times_and_describes_the_store(events_db):
    llm = FakeLLM(" count(*) FROM my_events WHERE attributes->>'sport' = 'running' "
                  "AND start_local >= DATE '2024-03-02';")
    cg = baselines.CodeGenBaseline(baselines.open_read_only(events_db), llm)
    a = cg.ask("how many runs on 2 March?", today=date(2024, 4, 1))
    # 23:30 UTC + 60 min is 00:30 local on 2 March
    assert a.ok and a.answer == 1 and a.llm_calls == 1 and a.plan_text.startswith("SELECT count(*)")
    prompt = llm.prompts[0]
    assert "source='strava' kind='workout' (2): " in prompt and "sport (\"running\")" in prompt
    assert "distance_km (5)" in prompt and "Today is 2024-04-01." in prompt
    assert prompt.endswith("Q: how many runs on 2 March?\nSQL: SELECT")
    cg.close()


def test_codegen_never_runs_writes_nor_reads_files(events_db, tmp_path):
    cg = baselines.CodeGenBaseline(baselines.open_read_only(events_db), FakeLLM(" 1; DROP TABLE events;"))
    # the stop sequence ends the completion at the first ';' for a real model; a fake
    # that ignores it must still be refused as a second statement
    a = cg.ask("drop it")
    assert not a.ok and "refused" in a.answer_text
    cg.llm = FakeLLM(f" * FROM read_csv('{tmp_path / 'x.csv'}')")
    (tmp_path / "x.csv").write_text("a\n1\n")
    a = cg.ask("read a file")
    assert not a.ok and "failed" in a.answer_text
    cg.close()
    con = duckdb.connect(str(events_db), read_only=True)
    assert con.execute("SELECT count(*) FROM events").fetchone()[0] == 3
    con.close()


def test_codegen_times_out_and_limits_rows(events_db):
    cg = baselines.CodeGenBaseline(baselines.open_read_only(events_db),
                                   FakeLLM(" count(*) FROM range(100000000000) a, range(1000) b"), timeout_s=0.5)
    a = cg.ask("forever")
    assert not a.ok and "longer than" in a.answer_text and a.timings["total_ms"] < 20_000
    cg.llm = FakeLLM(" * FROM range(10000)")
    cg.row_limit = 7
    a = cg.ask("many")
    assert a.ok and len(a.answer) == 7
    cg.close()


# --------------------------------------------------------------------------- RAG
def test_rag_puts_retrieved_events_in_the_prompt(store):
    from datetime import datetime, timezone

    from engine.retrieval.index import RetrievalIndex
    from importers.base import Event

    evs = [Event(source="strava", kind="workout", title=f"Morning swim {i}", start=datetime(2024, 3, i + 1, 7,
                 tzinfo=timezone.utc), attributes={"sport": "swimming"}, file="a.csv", locator=f"row {i}")
           for i in range(3)]
    evs.append(Event(source="spotify", kind="music_stream", title="Song", start=datetime(2024, 3, 5, 9,
                     tzinfo=timezone.utc), attributes={"artist": "Jacob Norman"}, file="b.json", locator="0"))

    def write(con):
        store.append_events(con, evs, 1)
    store.write(write).result()

    class Reranker:
        def score(self, pairs):
            return [1.0 if "swim" in doc else 0.0 for _, doc in pairs]

    llm = FakeLLM(" 2024-03-03\n")
    rag = baselines.RagBaseline(store, RetrievalIndex(store), llm, reranker=Reranker(), top_k=2)
    a = rag.ask("when did I last swim", today=date(2024, 4, 1))
    assert a.ok and a.answer == "2024-03-03" and len(a.evidence) == 2
    prompt = llm.prompts[0]
    assert "2024-03-03 07:00 | source: strava | kind: workout | title: Morning swim 2" in prompt
    assert "Jacob Norman" not in prompt  # ranked out by the reranker (top 2)
    assert prompt.endswith("Question: when did I last swim\nAnswer:")
    rag.llm = FakeLLM("unknown")
    assert not rag.ask("when did I last swim").ok
    rag.close()


@pytest.mark.parametrize("text, value", [("42", 42), (" 1,204.5 ", 1204.5), ("Answer: Jacob Norman.", "Jacob Norman"),
                                         ("unknown", None), ("a; b", ["a", "b"]), ("2024-03-03", "2024-03-03")])
def test_parse_short_answer(text, value):
    assert baselines.parse_short_answer(text) == value


# --------------------------------------------------------------------------- real models
def _models_ready(cache: Path) -> str:
    from models.status import status

    st = status(cache)
    missing = [r for r, v in st["roles"].items() if not v["ready"]]
    return f"models not ready in {st['cache']}: {', '.join(missing)} (run 'hindsight models build')" if missing else ""


@pytest.mark.slow
@pytest.mark.parametrize("method, limit", [("reqap", 2), ("rag", 1), ("codegen", 1)])
def test_real_models_persona_smoke(cli, tmp_path, monkeypatch, model_registry, method, limit):
    reason = _models_ready(Path(model_registry.cache))
    if reason:
        pytest.skip(reason)
    # the cli fixture points at an empty model cache; this test wants the real models
    monkeypatch.setenv("HINDSIGHT_CACHE_DIR", str(model_registry.cache))
    work = Path(os.environ.get("HINDSIGHT_BENCH_WORK", tmp_path / "work"))
    # a thin, short life: a full persona's first retrieval index takes hours on 2 cores
    code, out, err = cli("bench", "persona", "--split", "dev", "--limit", str(limit), "--method", method,
                         "--scale", "0.05", "--years", "0.3", "--json", "--results", str(tmp_path / "res"),
                         "--work-dir", str(work))
    assert code == 0, err
    figs = json.loads(out)["figures"]
    assert figs["questions"] == limit and figs["method"] == method
    assert figs["llm_calls_per_question"] >= 1 and figs["latency_ms"]["median"] > 0
    recs = [json.loads(line) for line in Path(figs["records_file"]).read_text().splitlines()]
    assert len(recs) == limit and all(r["timings"].get("total_ms") for r in recs)


def test_limit_spreads_questions_over_templates():
    qs = [{"id": f"p:{t}:{i}", "question": f"{t} {i}"} for t in ("a", "b", "c") for i in range(5)]
    picked = persona.spread(qs, 5)
    assert len(picked) == 5 and {q["id"].split(":")[1] for q in picked} == {"a", "b", "c"}
    assert persona.spread(qs, 5) == picked  # deterministic
    assert len(persona.spread(qs, 100)) == 15


def test_timelineqa_limit_takes_both_kinds():
    qs = [{"kind": "atomic", "id": i} for i in range(10)] + [{"kind": "multihop", "id": 10 + i} for i in range(10)]
    picked = timelineqa.select(qs, "all", 6)
    assert [q["kind"] for q in picked].count("multihop") == 3 and len(picked) == 6


class _AnyModel:
    """Answers every role's call with something of the right shape."""

    def embed(self, texts):
        return [[0.0] * 4 for _ in texts]

    def encode(self, texts):
        return [{} for _ in texts]

    def sentences_many(self, texts):
        return [self.sentences(t) for t in texts]

    def sentences(self, text):
        return [text]

    def classify(self, query, patterns):
        return ["irrelevant" for _ in patterns]

    def score(self, pairs):
        return [0.5 for _ in pairs]

    def extract(self, items):
        return ["" for _ in items]

    def complete(self, prompt, **kw):
        return "hello"


class _FakeRegistry:
    def __init__(self, *a, **kw):
        self.loaded: list[str] = []

    def get(self, role):
        self.loaded.append(role)
        return _AnyModel()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_cli_bench_models_times_every_role(cli, tmp_path, monkeypatch):
    import models.registry

    monkeypatch.setattr(models.registry, "ModelRegistry", _FakeRegistry)
    code, out, err = cli("bench", "models", "--json", "--results", str(tmp_path))
    assert code == 0, err
    figures = json.loads(out)["figures"]
    roles = {"embedder", "sparse_encoder", "segmenter", "pattern_classifier", "event_classifier", "extractor",
             "planner"}
    assert roles <= set(figures) and figures["all_loaded_rss_mb"] > 0
    assert all(figures[r]["per_s"] > 0 and figures[r]["load_s"] >= 0 for r in roles)
    md = (tmp_path / "models-latest.json").parent.glob("models-*.md")
    assert any("| extractor |" in p.read_text() for p in md)


def test_scale_table_marks_the_one_thread_read_as_having_no_workers():
    from app.bench.scale import table

    row = {"size": 1_000_000, "file_mb": 679.0, "seconds": 16.0, "events_per_s": 62_500.0, "peak_rss_mb": 400.0}
    text = table({"import": {"1000000": {**row, "parallel": True, "worker_peak_rss_mb": 300.0},
                             "one_thread_baseline": {**row, "parallel": False, "worker_peak_rss_mb": 0.0},
                             "speedup_over_one_thread": 1.8}})
    lines = text.splitlines()
    assert lines[2].endswith("| 400 | 300 |") and "as the app does" in lines[2]
    assert lines[3].endswith("| 400 | – |") and "one thread" in lines[3]
    assert "1.8x as fast as on one thread" in text


def test_planner_threads_table_shows_both_machines_side_by_side():
    from app.bench.planner import threads_table

    row = {"fixed_total_s": 77.1, "fixed_median_s": 6.21, "paced_total_s": 45.9, "paced_median_s": 3.28,
           "paced_vs_fixed": 0.595, "one_thread_share": 0.9, "same_plans": 12}
    text = threads_table({"questions": 12, "threads": 2, "idle": {**row, "paced_vs_fixed": 0.99,
                                                                  "one_thread_share": 0.0}, "busy": row})
    lines = text.splitlines()
    assert lines[0].startswith("| machine | 2 threads fixed")
    assert lines[2].startswith("| idle |") and "| 0% |" in lines[2]
    assert lines[3].startswith("| busy | 77.1 s | 6.21 s | 45.9 s | 3.28 s | 0.59 | 90% | 12 of 12 |")
