"""Conversation insights and PROBE with tiny fake models: the job infers, stores,
resumes and updates incrementally; the taxonomy separates what differs; plans parse
strictly; filters cut; candidates rank by the evidence; the CLI prints the shapes
the issue names."""
from __future__ import annotations

import json
import zlib
from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest

from app.bench.aqa_set import grades, linear_conversation, ndcg, random_ndcg
from engine.ingest import import_paths
from engine.insights import job as insights_job
from engine.insights import views
from engine.insights.plan import GRAMMAR, ProbePlan, ProbePlanError, consistent, parse, prompt, time_window
from engine.insights.probe import Probe
from importers.base import ImportContext

UTC = ZoneInfo("UTC")

# (title, user's opening, local time) - three clearly different subjects
CHATS = [
    ("Pasta sauce", "How do I cook a tomato pasta sauce with basil and garlic?", datetime(2025, 3, 1, 19, 5)),
    ("Risotto", "Recipe for mushroom risotto, how long do I cook the rice?", datetime(2025, 3, 8, 19, 30)),
    ("Bread", "How do I bake sourdough bread, cook it in a dutch oven?", datetime(2025, 3, 15, 20, 0)),
    ("Curry", "Cook a chickpea curry recipe with coconut milk", datetime(2025, 4, 5, 18, 45)),
    ("Soup", "Recipe for a pumpkin soup, cook with ginger", datetime(2025, 11, 2, 19, 10)),
    ("List flatten", "Python code to flatten a nested list", datetime(2025, 3, 3, 10, 0)),
    ("Dict merge", "Python code to merge two dict objects", datetime(2025, 3, 4, 11, 0)),
    ("Pandas join", "Python pandas code to join two DataFrame tables", datetime(2025, 3, 5, 14, 0)),
    ("Regex", "Python code regex to match an email address", datetime(2025, 3, 6, 9, 30)),
    ("Lisbon", "Plan a trip to Lisbon: travel by train, hotel near Alfama", datetime(2025, 5, 10, 11, 0)),
    ("Porto", "Plan a trip to Porto: travel from Lisbon, hotel and wine", datetime(2025, 5, 17, 12, 0)),
    ("Rome", "Plan a trip to Rome: travel in summer, hotel near Trastevere", datetime(2025, 6, 7, 10, 0)),
]


def _export(tmp_path, chats, name="export"):
    convs = []
    for n, (title, opening, local) in enumerate(chats):
        start = local.replace(tzinfo=UTC).timestamp()
        convs.append(linear_conversation(f"c{zlib.crc32(title.encode())}", title, [
            {"role": "user", "content": opening}, {"role": "assistant", "content": f"Here is help with {title}."}],
            start))
    folder = tmp_path / name
    folder.mkdir()
    (folder / "conversations.json").write_text(json.dumps(convs))
    return folder


class Words:
    """Fake Embedder: hashed bag of words, so texts sharing words are near."""

    dimension = 64
    name = "fake-words"

    def embed(self, texts):
        import math

        out = []
        for t in texts:
            v = [0.0] * self.dimension
            for w in _words(t):
                v[zlib.crc32(w.encode()) % self.dimension] += 1.0
            n = math.sqrt(sum(x * x for x in v)) or 1.0
            out.append([x / n for x in v])
        return out

    def close(self):
        pass


class Sparse:
    name = "fake-sparse"

    def encode(self, texts):
        return [{w: 1.0 for w in _words(t)} for t in texts]

    def close(self):
        pass


class Phrases:
    """Fake Keyphraser: every word of four letters or more is a phrase."""

    name = "fake-phrases"
    language = "en"

    def keyphrases(self, texts):
        return [[(w, "NOUN") for w in _words(t) if len(w) >= 4] for t in texts]

    def close(self):
        pass


class Language:
    name = "fake-language"

    def identify(self, texts):
        return ["en" for _ in texts]

    def close(self):
        pass


class Planner:
    """Fake Planner: answers with the JSON it was given, and records the prompts."""

    def __init__(self, answer: dict):
        self.answer = answer
        self.prompts = []

    def complete(self, prompt, *, grammar=None, max_tokens=256, stop=(), temperature=0.0):
        self.prompts.append((prompt, grammar))
        return json.dumps(self.answer)

    def close(self):
        pass


def _words(text):
    import re

    return [w for w in re.findall(r"[a-z]+", text.lower()) if w not in {"the", "to", "a", "for", "with", "how", "do",
                                                                        "i", "here", "is", "help", "and", "in"}]


def _models():
    return insights_job.InsightModels(embedder=Words(), sparse=Sparse(), keyphraser=Phrases(), language=Language())


@pytest.fixture
def chat_store(store, tmp_path):
    import_paths(store, [_export(tmp_path, CHATS)], context=ImportContext(home_tz=UTC))
    return store


def _plan(**kw) -> dict:
    base = {"queries": ["anything"], "group_by": "topic", "year": None, "season": None, "month": None,
            "last": None, "weekdays": [], "day_part": None, "topic": None}
    base.update(kw)
    return base


# ---- the job -------------------------------------------------------------------------
def test_job_infers_every_conversation_and_tells_the_events(chat_store):
    seen = []
    result = insights_job.run(chat_store, _models(), progress=lambda *a: seen.append(a))
    assert (result.conversations, result.inferred) == (12, 12)
    assert seen[-1] == ("discovering topics", 1, 1) and ("inferring", 12, 12) in seen
    found = views.topics(chat_store)
    assert sum(t["count"] for t in found) == 12 and len(found) >= 2
    ev = chat_store.events(kind="chat_conversation", search="Risotto")[0]
    attrs = ev["attributes"]
    assert attrs["topic"] and attrs["subtopic"] and attrs["keywords"]
    assert (attrs["weekday"], attrs["hour"], attrs["month"], attrs["season"]) == ("Saturday", 19, "2025-03", "spring")
    assert attrs["summary"].startswith("Risotto: Recipe for mushroom risotto")
    assert attrs["language"] == "en"
    turns = [t for t in chat_store.events(kind="chat_turn", search="Risotto")
             if t["attributes"]["conversation_id"] == attrs["conversation_id"]]
    assert turns and all(t["attributes"]["topic"] == attrs["topic"] and t["attributes"]["subtopic"] ==
                         attrs["subtopic"] and t["attributes"]["keywords"] == attrs["keywords"] for t in turns)


class Namer:
    """Fake Planner for topic names: numbers the topics it names and their groups, or
    answers with ``answer``; counts its calls."""

    def __init__(self, answer=None):
        self.answer = answer
        self.calls = 0

    def complete(self, prompt, *, grammar=None, max_tokens=256, stop=(), temperature=0.0):
        from engine.insights import naming

        groups = prompt[len(naming.PREFIX):].count("Group ")
        assert prompt.startswith(naming.PREFIX) and grammar == naming.grammar(groups)
        self.calls += 1
        if self.answer is not None:
            return self.answer
        return f"Topic: Subject {self.calls}\n" + "".join(
            f"{g + 1}: Part {g + 1} of {self.calls}\n" for g in range(groups if groups > 1 else 0))

    def close(self):
        pass


def test_the_llm_names_topics_and_subtopics_once_and_key_phrases_stand_in_where_it_cannot(chat_store):
    import dataclasses

    namer = Namer()
    models = dataclasses.replace(_models(), planner=namer)
    insights_job.run(chat_store, models)
    found = views.topics(chat_store)
    assert {t["topic"] for t in found} == {f"Subject {n}" for n in range(1, namer.calls + 1)}
    subs = [s["subtopic"] for t in found for s in t["subtopics"]]
    assert len(set(subs)) == len(subs) and all(s.startswith(("Part", "Subject")) for s in subs)
    ev = chat_store.events(ids=found[0]["conversation_ids"][:1])[0]
    assert ev["attributes"]["topic"] == found[0]["topic"]
    calls = namer.calls
    insights_job.recluster(chat_store, namer)  # the same clusters: the stored answers serve
    assert namer.calls == calls
    # an answer that does not name things (or names them all alike) leaves the key phrase names
    insights_job.recluster(chat_store)
    by_phrases = {t["topic"] for t in views.topics(chat_store)}
    chat_store.write(lambda con: con.execute("DELETE FROM insight_name_answers")).result()
    insights_job.recluster(chat_store, Namer(answer="Topic: Same\n1: Same\n2: Same\n"))
    named = [t["topic"] for t in views.topics(chat_store)]
    assert named[0] == "Same" and set(named[1:]) <= by_phrases


def test_naming_answers_parse_strictly():
    from engine.insights import naming

    assert naming.parse("Topic: Cooking\n1: Baking bread\n2: Italian dishes\n", 2) == \
        naming.Names("Cooking", ("Baking bread", "Italian dishes"))
    rambling = "Topic: Programming\n1: C++ topic breakdown for each group\n"
    assert naming.parse(rambling, 2) == naming.Names("Programming", (None, None))
    assert "Group 1: a | b\nGroup 2: c" in naming.prompt([["a", "b"], ["c"]])


def test_taxonomy_keeps_cooking_coding_and_travel_apart(chat_store):
    insights_job.run(chat_store, _models())
    rows = chat_store.reader().execute(
        "SELECT title, topic_id FROM conversation_insights").fetchall()
    topic = dict(rows)
    assert topic["Pasta sauce"] == topic["Risotto"] == topic["Curry"]
    assert topic["List flatten"] == topic["Pandas join"]
    assert topic["Pasta sauce"] != topic["List flatten"] != topic["Lisbon"]
    names = {t["topic"] for t in views.topics(chat_store)}
    assert any("cook" in n.lower() for n in names) and any("python" in n.lower() for n in names)


def test_rerun_does_nothing_and_a_reimport_adds_only_the_new(chat_store, tmp_path):
    insights_job.run(chat_store, _models())
    assert insights_job.run(chat_store, _models()).inferred == 0
    import_paths(chat_store, [_export(tmp_path, [("Tapas", "Cook tapas recipe with chorizo",
                                                  datetime(2025, 7, 1, 20, 0))], "second")],
                 context=ImportContext(home_tz=UTC))
    again = insights_job.run(chat_store, _models())
    assert (again.conversations, again.inferred) == (13, 1)


def test_a_cancelled_job_keeps_what_it_finished_and_resumes(chat_store):
    calls = []

    def cancelled():
        calls.append(1)
        return len(calls) > 2  # after two batches of 4

    with pytest.raises(insights_job.Cancelled, match="run again"):
        insights_job.run(chat_store, _models(), cancelled=cancelled, batch=4)
    stored = chat_store.reader().execute("SELECT count(*) FROM conversation_insights").fetchone()[0]
    assert stored == 8
    assert insights_job.run(chat_store, _models(), batch=4).inferred == 4


def test_rename_and_merge_topics_survive_reclustering(chat_store):
    insights_job.run(chat_store, _models())
    first, second = views.topics(chat_store)[:2]
    insights_job.rename_topic(chat_store, first["topic"], "Kitchen")
    insights_job.rename_topic(chat_store, second["topic"], "Kitchen")  # a merge
    merged = {t["topic"]: t["count"] for t in views.topics(chat_store)}
    assert merged["Kitchen"] == first["count"] + second["count"]
    insights_job.recluster(chat_store)
    assert {t["topic"]: t["count"] for t in views.topics(chat_store)}["Kitchen"] == merged["Kitchen"]
    ev = chat_store.events(ids=first["conversation_ids"][:1])[0]
    assert ev["attributes"]["topic"] == "Kitchen"
    turns = [t for t in chat_store.events(kind="chat_turn")
             if t["attributes"]["conversation_id"] == ev["attributes"]["conversation_id"]]
    assert turns and all(t["attributes"]["topic"] == "Kitchen" for t in turns)
    with pytest.raises(ValueError, match="no topic named"):
        insights_job.rename_topic(chat_store, "No such topic", "X")


def test_views_heat_map_per_month_and_keywords(chat_store):
    insights_job.run(chat_store, _models())
    grid = views.heat_map(chat_store)
    assert grid[5][19] == 2  # Saturdays at 19: pasta sauce, risotto
    assert sum(map(sum, grid)) == 12
    months = views.per_month(chat_store, views.Period(date(2025, 3, 1), date(2025, 3, 31)))
    assert list(months) == ["2025-03"] and sum(months["2025-03"].values()) == 7
    kws = {k["keyword"] for k in views.top_keywords(chat_store)}
    assert {"code", "cook"} & kws or {"python", "recipe"} & kws


# ---- plans ---------------------------------------------------------------------------
def test_plan_parses_strictly_and_names_the_bad_field():
    p = parse(json.dumps(_plan(queries=["pasta", "Pasta", "risotto"], group_by="weekday", year="last",
                               weekdays=["Sunday", "Saturday"], topic="cooking")))
    assert p.queries == ("pasta", "risotto") and p.weekdays == (5, 6) and p.topic == "cooking"
    for bad, field in ((_plan(group_by="colour"), "group_by"), (_plan(month=13), "month"),
                       (_plan(queries=[]), "queries"), (_plan(weekdays=["Caturday"]), "weekdays")):
        with pytest.raises(ProbePlanError, match=field):
            parse(json.dumps(bad))
    with pytest.raises(ProbePlanError, match="not JSON"):
        parse("print('hi')")
    with pytest.raises(ProbePlanError, match="last"):
        parse(json.dumps(_plan(last={"count": 6, "unit": "fortnights"})))
    assert parse(json.dumps(_plan(last={"count": 6, "unit": "months"}))).last == 6


@pytest.mark.parametrize("fields, made", [
    # a filter fixing the counted attribute leaves one value: it goes
    ({"group_by": "season", "season": "summer"}, {"season": None}),
    ({"group_by": "month", "month": 5, "year": 2025}, {"month": None, "year": 2025}),
    ({"group_by": "day_part", "day_part": "evening"}, {"day_part": None}),
    ({"group_by": "weekday", "weekdays": ["Friday"]}, {"weekdays": ()}),
    ({"group_by": "year", "year": "last"}, {"year": None}),
    ({"group_by": "topic", "topic": "travel"}, {"group_by": "subtopic", "topic": "travel"}),
    ({"month": 1, "season": "winter"}, {"month": 1, "season": None}),  # the narrower window stands
    # filters that leave several values stay
    ({"group_by": "hour", "day_part": "evening"}, {"group_by": "hour", "day_part": "evening"}),
    ({"group_by": "weekday", "weekdays": ["Saturday", "Sunday"]}, {"weekdays": (5, 6)}),
    ({"group_by": "subtopic", "topic": "travel", "season": "summer"}, {"topic": "travel", "season": "summer"}),
])
def test_a_plan_is_made_consistent_from_its_fields(fields, made):
    plan = parse(json.dumps(_plan(**fields)))
    assert {k: getattr(plan, k) for k in made} == made


@pytest.mark.parametrize("fields, today, window", [
    ({"year": "this", "season": "spring"}, date(2026, 4, 2), (date(2026, 3, 1), date(2026, 6, 1))),
    ({"season": "summer"}, date(2026, 4, 2), (date(2025, 6, 1), date(2025, 9, 1))),
    ({"year": 2024, "season": "winter"}, date(2026, 4, 2), (date(2023, 12, 1), date(2024, 3, 1))),
    ({"year": "last"}, date(2026, 4, 2), (date(2025, 1, 1), date(2026, 1, 1))),
    ({"month": 11}, date(2026, 4, 2), (date(2025, 11, 1), date(2025, 12, 1))),
    ({"month": 12, "year": 2025}, date(2026, 4, 2), (date(2025, 12, 1), date(2026, 1, 1))),
    ({"last": 30}, date(2026, 4, 2), (date(2026, 3, 4), date(2026, 4, 3))),
    ({"last": 2, "last_unit": "weeks"}, date(2026, 4, 2), (date(2026, 3, 20), date(2026, 4, 3))),
    ({"last": 6, "last_unit": "months"}, date(2026, 4, 2), (date(2025, 10, 3), date(2026, 4, 3))),
    ({"last": 1, "last_unit": "years"}, date(2026, 4, 2), (date(2025, 4, 3), date(2026, 4, 3))),
    ({"month": 1, "season": "winter", "year": 2024}, date(2026, 4, 2), (date(2024, 1, 1), date(2024, 2, 1))),
    ({"season": "winter", "year": 2024}, date(2026, 4, 2), (date(2023, 12, 1), date(2024, 3, 1))),
    # a last-N window and a calendar one: both hold; where they cannot, the calendar one
    ({"last": 2, "last_unit": "months", "year": "this"}, date(2026, 1, 20), (date(2026, 1, 1), date(2026, 1, 21))),
    ({"last": 3, "last_unit": "months", "year": 2025}, date(2026, 11, 29), (date(2025, 1, 1), date(2026, 1, 1))),
    ({}, date(2026, 4, 2), (None, None)),
])
def test_time_window(fields, today, window):
    assert time_window(consistent(ProbePlan(queries=("x",), **fields)), today) == window


def test_grammar_is_accepted_by_llama_cpp_and_prompt_ends_with_the_question():
    llama_cpp = pytest.importorskip("llama_cpp")
    assert llama_cpp.LlamaGrammar.from_string(GRAMMAR, verbose=False) is not None
    assert prompt("What  did I ask\nmost?").endswith("Q: What did I ask most?\nJSON: ")


# ---- PROBE ---------------------------------------------------------------------------
def test_probe_counts_values_and_ranks_candidates(chat_store):
    insights_job.run(chat_store, _models())
    planner = Planner(_plan(queries=["cook recipe", "bake bread"], group_by="weekday", year=2025,
                            weekdays=["Saturday", "Sunday"]))
    probe = Probe(chat_store, planner, Words(), Sparse(), top_k=50)
    ans = probe.ask("On which weekend day did I cook in 2025?", today=date(2026, 1, 10),
                    candidates=["python code", "cook recipe", "travel trip"])
    assert planner.prompts[0][1] == GRAMMAR
    assert ans.filters["since"] == "2025-01-01" and ans.filters["weekdays"] == ["Saturday", "Sunday"]
    titles = {r[0]: r[1] for r in chat_store.reader().execute("SELECT id, title FROM conversation_insights").fetchall()}
    assert {titles[i] for i in ans.evidence} == {"Pasta sauce", "Risotto", "Bread", "Curry", "Soup", "Lisbon", "Porto",
                                                 "Rome"}
    assert [(v.value, v.count) for v in ans.answer] == [("Saturday", 7), ("Sunday", 1)]
    assert sum(v.count for v in ans.answer) == len(ans.evidence)
    assert ans.ranking[0] == "cook recipe" and ans.ranking[-1] == "python code"
    out = ans.to_json()
    assert list(out) == ["question", "answer", "ranking", "queries", "filters", "timings"]
    assert set(out["answer"][0]) == {"value", "count", "conversation_ids"}


def test_probe_topic_filter_and_pooling(chat_store):
    insights_job.run(chat_store, _models())
    plan = ProbePlan(queries=("python code",), group_by="month", topic="python code")
    for pooling in ("max", "sum"):
        ans = Probe(chat_store, None, Words(), Sparse(), pooling=pooling).ask("When did I write Python?", plan=plan,
                                                                             today=date(2026, 1, 1))
        assert [(v.value, v.count) for v in ans.answer] == [("2025-03", 4)]
    with pytest.raises(ValueError, match="pooling"):
        Probe(chat_store, None, Words(), Sparse(), pooling="mean").ask("x", plan=plan)


# ---- scoring -------------------------------------------------------------------------
def test_ndcg_grades_as_the_paper():
    gold = {"a": 10, "b": 5, "c": 5, "d": 0}
    assert grades(gold) == {"a": 9, "b": 8, "c": 8, "d": 0}
    assert ndcg(["a", "b", "c", "d"], gold, 3) == pytest.approx(1.0)
    assert ndcg(["d", "c", "b", "a"], gold, 1) == 0.0
    assert 0.3 < random_ndcg(list(gold), gold, 1) < 0.9



def test_the_hand_written_frozen_questions_have_clear_gold_and_differ_from_the_generated_ones():
    from app.bench.aqa_fresh import fresh_questions
    from app.bench.aqa_set import labelled, questions

    items = labelled()
    fresh = fresh_questions(items)
    assert len(fresh) >= 40
    generated = {q.text for q in questions(items)}
    for q in fresh:
        assert q.text not in generated
        assert 4 <= len(q.candidates) <= 10 and set(q.gold) == set(q.candidates)
        top, second = sorted(q.gold.values(), reverse=True)[:2]
        assert top >= 2 and top > second, q.text
        assert not q.since or q.since < q.until

# ---- CLI -----------------------------------------------------------------------------
def test_cli_topics_json_and_clear_errors(cli, data_dir, tmp_path):
    from engine.store import EventStore, store_path

    code, _out, err = cli("insights", "topics", "--json")
    assert code == 1 and "no data yet" in err
    with EventStore(store_path(data_dir)) as s:
        import_paths(s, [_export(tmp_path, CHATS)], context=ImportContext(home_tz=UTC))
        insights_job.run(s, _models())
    code, out, _err = cli("insights", "topics", "--since", "2025-03-01", "--until", "2025-03-31", "--json")
    assert code == 0
    data = json.loads(out)
    assert sum(t["count"] for t in data["topics"]) == 7
    assert {"topic", "count", "subtopics", "keywords", "conversation_ids"} <= set(data["topics"][0])
    code, _out, err = cli("insights", "topics", "--since", "March")
    assert code == 1 and "--since" in err
    code, _out, err = cli("insights", "ask", "which topic", "most", "--json")
    assert code == 1 and "quotes" in err


# ---- the Insights pane -----------------------------------------------------------------
@pytest.mark.gui
def test_insights_pane_charts_click_through_and_ask(qtbot, chat_store):
    from app.gui.insights import InsightsPane
    from app.gui.workers import JobRunner

    insights_job.run(chat_store, _models())
    runner = JobRunner()
    planner = Planner(_plan(queries=["cook recipe"], group_by="weekday", weekdays=["Saturday", "Sunday"]))
    pane = InsightsPane(chat_store, None, runner, probe_factory=lambda: Probe(chat_store, planner, Words(), Sparse()),
                        today=lambda: date(2026, 1, 10))
    qtbot.addWidget(pane)
    pane.show()
    pane.refresh()
    qtbot.waitUntil(lambda: pane.status.text().startswith("12 conversations"), timeout=10_000)
    assert sum(count for _l, count, _ids in pane.topics.bars) == 12
    assert sum(map(sum, pane.heat.grid)) == 12 and pane.months.months[0] == "2025-03"
    label, count, _ids = pane.topics.bars[0]
    pane.topics.click_bar(0)
    qtbot.waitUntil(lambda: pane.table.rowCount() == count, timeout=10_000)
    assert pane.list_title.text().startswith(f"{label}: {count} conversations")
    pane.question.setText("On which Saturdays did I cook?")
    pane.ask()
    qtbot.waitUntil(lambda: bool(pane.answer.bars), timeout=10_000)
    assert pane.answer.bars[0][:2] == ("Saturday", 7)
    assert "weekdays Saturday" in pane.answer_note.text()
    pane.answer.click_bar(0)
    qtbot.waitUntil(lambda: pane.table.rowCount() == 7, timeout=10_000)
    pane.months.segment_clicked.emit("2025-03", pane.months.topics[0])
    qtbot.waitUntil(lambda: pane.list_title.text().startswith("2025-03 · "), timeout=10_000)
    runner.wait()


def test_key_phrases_are_words_and_foreign_ones_count_where_an_english_text_has_them():
    from engine.insights.attributes import count_phrases
    from engine.insights.taxonomy import conversation_keywords, _phrase_sets

    found = [("Django", "ORG"), ("django", "NOUN"), ("--filter=\"name=$", "NOUN"), ("het", "NOUN"),
             ("CI/CD", "NOUN"), ("Django", "PROPN"), ("@api.route('/x", "NOUN")]
    assert count_phrases(found) == [["Django", "ORG", 3], ["CI/CD", "NOUN", 1], ["het", "NOUN", 1]]
    dutch = count_phrases(found, foreign=True)
    assert dutch[0] == ["Django", "ORG", 3, 1]
    english = count_phrases([("Django", "ORG"), ("views", "NOUN"), ("het", "PROPN")])
    others = [count_phrases([("Django", "ORG")])] + [count_phrases([("urls", "NOUN")])] * 3
    assert set(_phrase_sets([dutch, english, *others])[0]) == {"django"}  # het: 1 of 5 English texts
    assert conversation_keywords(_phrase_sets([dutch]))[0]  # nobody reads English here: all count
