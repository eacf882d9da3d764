"""RetrievalIndex.refresh: each distinct text is encoded once for the whole index
(engine.retrieval.units), an interrupted or killed refresh keeps its work, and a
refresh waiting for another thread's refresh says so and can be cancelled."""
from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta

import pytest

from engine.retrieval.index import RetrievalIndex
from engine.store import EventStore
from tests.test_operators import BERLIN, DiaryEmbedder, FakeSparse, add, ev

T0 = datetime(2024, 3, 1, 8, 0, tzinfo=BERLIN)


class RecordingSparse(FakeSparse):
    """FakeSparse that keeps every text it was asked to encode."""

    name = "fake-sparse"  # the same encoder as LoggingSparse's, for the index

    def __init__(self):
        super().__init__()
        self.texts: list[str] = []

    def encode(self, texts):
        self.texts += texts
        return super().encode(texts)


def plays(song: str, n: int, start: int = 0):
    """``n`` plays of one song: different events (times), the same document."""
    return [ev("spotify", "music_stream", T0 + timedelta(hours=start + i), 3, f"Muse – {song}",
               f"Listened to {song} by Muse", artist="Muse") for i in range(n)]


@pytest.fixture
def store():
    s = EventStore(":memory:")
    yield s
    s.close()


def weights_by_id(index: RetrievalIndex) -> dict[str, dict[str, float]]:
    return index.term_weights()


def units_of(events) -> set[str]:
    from engine.retrieval.units import event_units
    return {u for e in events for u in event_units(e.source, e.kind, e.title, e.text, e.attributes)[0]}


def test_each_distinct_unit_is_encoded_once(store):
    events = plays("Uprising", 4) + plays("Starlight", 3, start=10) + [
        ev("strava", "workout", T0 + timedelta(days=1), 40, "Run", "Running", activity="running")]
    add(store, events)
    sparse = RecordingSparse()
    index = RetrievalIndex(store, sparse=sparse)
    stats = index.refresh()
    # the plays share "source: spotify | kind: music_stream" and "artist: Muse"; each song
    # adds its title and text; the run its own four
    assert (stats.added, stats.encoded, stats.texts_encoded) == (8, 8, 10)
    assert sorted(sparse.texts) == sorted(units_of(events))
    weights = weights_by_id(index)
    assert set(weights) == {e.id for e in events}
    assert len({tuple(sorted(weights[e.id].items())) for e in events[:4]}) == 1
    # every play is found, each with the same score
    hits = dict(index.sparse_search("uprising", 10))
    assert set(hits) == {e.id for e in events[:4]} and len(set(hits.values())) == 1
    index.close()


def test_plays_of_a_song_differing_only_in_numbers_cost_no_encoding(store):
    """A real export: every play says how long it lasted. The numbers are left to its
    attributes (a question filters by them); the song's words are encoded once for all its plays."""
    def play(n: int, ms: int, song: str = "Uprising"):
        return ev("spotify", "music_stream", T0 + timedelta(hours=n), ms / 60000, f"Muse – {song}",
                  f"Listened to {song} by Muse for {ms // 60000} min {ms // 1000 % 60} s on ios.",
                  artist="Muse", track=song, ms_played=ms, minutes_played=round(ms / 60000, 2), platform="ios")
    add(store, [play(n, 61_000 + 7_919 * n) for n in range(50)] + [play(60, 5_000, "1979")])
    sparse = RecordingSparse()
    index = RetrievalIndex(store, sparse=sparse)
    stats = index.refresh()
    assert (stats.added, stats.encoded) == (51, 51)
    # the title and text are made of the play's attribute values: both songs share them
    assert sorted(sparse.texts) == [
        "artist: Muse", "platform: ios", "source: spotify | kind: music_stream",
        "text: Listened to track by artist on platform.", "title: artist – track", "track: 1979",
        "track: Uprising"]
    hits = dict(index.sparse_search("uprising", 100))
    assert len(hits) == 50 and len(set(hits.values())) == 1
    index.close()


def test_units_encoded_before_are_not_encoded_again(store):
    first = plays("Uprising", 2)
    add(store, first)
    sparse = RecordingSparse()
    index = RetrievalIndex(store, sparse=sparse)
    index.refresh()
    assert len(sparse.texts) == 4
    # a later export: the same song played again, and a new one
    later = plays("Uprising", 3, start=20) + plays("Madness", 1, start=30)
    add(store, later, import_id=2)
    stats = index.refresh()
    assert (stats.added, stats.encoded, stats.texts_encoded) == (4, 4, 2)
    # (the artist is a third of the title's letters: the title is read as "artist – Madness")
    assert sparse.texts[4:] == ["text: Listened to Madness by Muse", "title: artist – Madness"]
    weights = weights_by_id(index)
    assert all(weights[e.id] == weights[first[0].id] for e in later[:3])
    # nothing left: no encoder call
    assert index.refresh().encoded == 0 and len(sparse.texts) == 6
    assert set(dict(index.sparse_search("uprising", 10))) == {e.id for e in first + later[:3]}
    index.close()


def test_progress_counts_documents_and_says_each_stage(store):
    add(store, plays("Uprising", 5) + plays("Starlight", 5, start=10))
    index = RetrievalIndex(store, sparse=FakeSparse(), embedder=DiaryEmbedder(), encode_batch=1)
    seen = []
    index.refresh(progress=lambda stage, done, total: seen.append((stage, done, total)))
    sparse = [done for stage, done, total in seen if stage == "sparse" and total == 10]
    assert seen[:2] == [("documents", 10, 10), ("sparse", 0, 10)] and sparse[-1] == 10
    # one encoder call at a time: the first song's plays are done before the second's
    assert sparse == sorted(sparse) and any(0 < done < 10 for done in sparse)
    # the embedder reads 4 distinct texts (each song's passage and sentence) for the 10 events
    assert seen[-2:] == [("vectors", 0, 10), ("vectors", 10, 10)]
    index.close()


def test_an_interrupted_refresh_keeps_its_work(store):
    songs = [s for i in range(6) for s in plays(f"Song {chr(65 + i)}", 2, start=10 * i)]
    add(store, songs)
    cancel = threading.Event()

    class CancelledDuringSecondBatch(RecordingSparse):
        def encode(self, texts):
            if len(self.texts) == 2:
                cancel.set()  # the user cancels while this batch is encoded
            return super().encode(texts)

    sparse = CancelledDuringSecondBatch()
    index = RetrievalIndex(store, sparse=sparse, encode_batch=2)
    stats = index.refresh(cancel=cancel)
    assert (stats.added, stats.texts_encoded) == (12, 4)  # both batches kept though cancelled
    resumed = index.refresh()
    assert resumed.added == 0 and stats.encoded + resumed.encoded == 12
    assert len(sparse.texts) == len(set(sparse.texts)) == len(units_of(songs)) == 14
    assert len(weights_by_id(index)) == 12
    index.close()


class GatedSparse(RecordingSparse):
    """Blocks in encode until ``gate`` is set, like a long SPLADE batch."""

    def __init__(self):
        super().__init__()
        self.entered = threading.Event()
        self.gate = threading.Event()

    def encode(self, texts):
        self.entered.set()
        assert self.gate.wait(10)
        return super().encode(texts)


def test_a_second_refresh_waits_for_the_first_and_finds_nothing_to_do(store):
    add(store, plays("Uprising", 3) + plays("Starlight", 2, start=10))
    sparse = GatedSparse()
    index = RetrievalIndex(store, sparse=sparse)
    results = {}
    first = threading.Thread(target=lambda: results.setdefault("first", index.refresh()))
    first.start()
    assert sparse.entered.wait(10)
    second = threading.Thread(target=lambda: results.setdefault("second", index.refresh()))
    second.start()
    second.join(0.3)
    assert second.is_alive(), "the second refresh must wait for the first"
    sparse.gate.set()
    first.join(10)
    second.join(10)
    assert results["first"].encoded == 5 and results["second"].encoded == 0
    assert len(sparse.texts) == 6
    index.close()


def test_a_question_asked_during_a_refresh_says_it_waits_and_why(store):
    from engine.execute import execute
    from engine.operators import Models
    from tests.test_operators import TODAY, FakePatterns

    add(store, plays("Uprising", 3) + plays("Starlight", 2, start=10))
    sparse = GatedSparse()
    index = RetrievalIndex(store, sparse=sparse)
    first = threading.Thread(target=index.refresh)
    first.start()
    assert sparse.entered.wait(10)
    assert index.refreshing()[:3] == ("sparse", 0, 5)
    said: list[str] = []
    results = {}
    question = threading.Thread(target=lambda: results.setdefault("r", execute(
        'RETRIEVE(query="songs")', store, Models(sparse=sparse, patterns=FakePatterns({}, default="relevant")),
        today=TODAY, index=index, progress=lambda p: said.append(getattr(p, "message", str(p))))))
    question.start()
    question.join(0.5)
    assert question.is_alive(), "the question waits for the refresh"
    assert any("waiting for the search index" in s and "encoding new events for search: 0 of 5" in s for s in said)
    sparse.gate.set()
    first.join(10)
    question.join(10)
    assert len(results["r"].rows) == 5
    assert any("waiting for the search index" in n for st in results["r"].nodes for n in st.notes)
    assert index.refreshing() is None
    index.close()


def test_cancel_stops_a_refresh_waiting_for_another(store):
    add(store, plays("Uprising", 3))
    sparse = GatedSparse()
    index = RetrievalIndex(store, sparse=sparse)
    first = threading.Thread(target=index.refresh)
    first.start()
    assert sparse.entered.wait(10)
    cancel = threading.Event()
    results = {}
    waiting = threading.Thread(target=lambda: results.setdefault("stats", index.refresh(cancel=cancel)))
    waiting.start()
    time.sleep(0.2)
    t0 = time.monotonic()
    cancel.set()  # the user cancels the question whose RETRIEVE waits for the index
    waiting.join(5)
    assert not waiting.is_alive() and time.monotonic() - t0 < 1.0
    assert results["stats"].encoded == 0 and first.is_alive()
    sparse.gate.set()
    first.join(10)
    assert len(weights_by_id(index)) == 3
    index.close()


def test_sentences_leave_out_headings_bullets_quotes_and_numbers():
    from engine.retrieval.sentences import MAX_SENTENCES, sentences
    assert sentences("# Tuesday, 15 November 2022\n\nWent for a 7.9 km run around Day Park. Mood: good.") == [
        "Went for a run around Day Park.", "Mood: good."]
    assert sentences("I did running on 2008/02/06.") == ["I did running."]
    assert sentences("- Running: 7.9 km, 45 minutes.\n> quoted reply\n* Spent 12,50 € on lunch.") == [
        "Running.", "Spent on lunch."]
    assert sentences("Synced with my iPhone14,2 today.") == ["Synced with my iPhone14,2 today."]  # part of a name
    assert sentences(None, "Run") == ["Run"] and sentences("2024-03-01", None) == []
    assert sentences("Same. Same. Same.") == ["Same."]
    many = " ".join(f"Sentence number {chr(97 + i)}." for i in range(20))
    assert len(sentences(many)) == MAX_SENTENCES


def test_what_a_long_paragraph_says_past_what_the_classifier_reads_is_a_passage_too():
    """The reranker reads about READ_CHARS of a passage: the players a weekly game's
    description lists after its pitch and rules were never read. The sentences past
    that follow as passages of their own, with the event's source, kind and title,
    and the index keeps as many vectors, in the same order."""
    from engine.retrieval.passages import READ_CHARS, later_texts, passages
    from engine.retrieval.units import embedder_passages
    from engine.retrieval.verbalise import key_values

    text = ("Calendar event: Football on Thursday 03 February 2022 at 19:00 until 20:30 at Stevens Park. "
            "Weekly football. Pitch 3, Stevens Park. Bibs: whoever lost last week. "
            "Players: Capucine Cordier, Heidi Good, Daniel Edwards, Kim Hoffman.")
    pairs = key_values("calendar", "calendar_event", "Football", text, {"recurring": True})
    ps = passages(pairs, "calendar", "calendar_event", "Football", text)
    assert "Capucine" not in ps[0][:READ_CHARS]
    assert ps[1:] == ["source: calendar | kind: calendar_event | title: Football | text: "
                      "Players: Capucine Cordier, Heidi Good, Daniel Edwards, Kim Hoffman."]
    assert later_texts("calendar", "calendar_event", "Football", text) == [ps[1].split("text: ", 1)[1]]
    assert len(embedder_passages(pairs, "calendar", "calendar_event", "Football", text)) == len(ps)
    # a sentence that starts just before the estimate of what was read is read again whole: a
    # list of names costs more tokens a character than prose, and its first name was not read
    weekly = ("Calendar event: Team weekly on Monday 01 November 2021 at 10:00 until 11:00. Weekly sync: "
              "status, blockers, plans. Organised by Benito Ramírez. With Oriana Quiroga, Patrick Perry, "
              "Joseph Young, Dorita Cabezas.")
    assert weekly.index("With") < READ_CHARS - len("source: calendar | kind: calendar_event | title: Team weekly"
                                                   " | text: ")
    assert later_texts("calendar", "calendar_event", "Team weekly", weekly) == [
        "With Oriana Quiroga, Patrick Perry, Joseph Young, Dorita Cabezas."]
    # what fits is one passage; one long sentence read mostly is not read twice
    short = "Calendar event: Football on Thursday at Stevens Park."
    assert len(passages(key_values("calendar", "calendar_event", "Football", short, {}),
                        "calendar", "calendar_event", "Football", short)) == 1
    title = "Middle Movie: Season 2: Treat Newspaper Section Authority (Episode 2)"
    watched = f'Watched Middle Movie, Season 2, episode "{title}" on Netflix on Samsung TV (profile Sam) for 19 min.'
    assert later_texts("netflix", "episode_stream", title, watched) == []
    # a long body without full stops is read on from the first word not read, in windows
    body = "Mail from Hotel Adlon to Anna on Your booking " + "and then some more words " * 30 + "booking LH 2034"
    later = later_texts("mail", "mail", "Your booking", body)
    assert len(later) >= 2 and later[-1].endswith("LH 2034") and all(len(t) <= READ_CHARS for t in later)
    # a later paragraph is a passage, as before, and so are its sentences past the first
    diary = "# 2022-05-26\n\nQuiet day.\n\nI watched a movie on TV."
    assert later_texts("journal", "note", "2022-05-26", diary) == ["Quiet day.", "I watched a movie on TV."]


def test_sentences_leave_out_who_was_there():
    from engine.retrieval.sentences import sentences
    assert sentences("I went grocery shopping with Jack, Olivia. Dinner with Anna and Tom!") == [
        "I went grocery shopping.", "Dinner!"]
    assert sentences("On 2001/12/30 Layla and I went to Rome, Italy.") == ["I went to Rome, Italy."]
    assert sentences("Coffee with Lázaro at Kaffeehaus Paz") == ["Coffee at Kaffeehaus Paz"]
    # not people: kept
    assert sentences("I went swimming with my dog.") == ["I went swimming with my dog."]
    assert sentences("Rome and Paris are far apart.") == ["Rome and Paris are far apart."]


def test_sentence_vectors_follow_the_store_and_come_back_for_an_older_index(tmp_path):
    from engine.retrieval.vectors import VECTORS_VERSION
    from tests.test_operators import DiaryEmbedder, diary_life

    store = EventStore(str(tmp_path / "hindsight.duckdb"))
    add(store, diary_life())
    index = RetrievalIndex(store, embedder=DiaryEmbedder())
    assert index.refresh().embedded == 5
    run = DiaryEmbedder().embed(["run"])[0]
    near = index.nearest_sentences(run, 0.5)
    by_title = {e["id"]: e["title"] for e in store.events()}
    assert sorted(by_title[i] for i in near) == ["2024-03-01", "2024-03-03", "Run"]
    assert sorted(round(c, 2) for c in near.values()) == [0.71, 1.0, 1.0]
    # 2 of the 4 notes have two sentences; the heading is none
    assert index._db.execute("SELECT count(*) FROM sentence_refs").fetchone()[0] == 7
    store.write(lambda con: con.execute("DELETE FROM events WHERE source = 'strava'")).result()
    assert index.refresh().removed == 1
    assert sorted(by_title[i] for i in index.nearest_sentences(run, 0.5)) == ["2024-03-01", "2024-03-03"]
    # an index written before sentences had vectors is embedded again when opened
    index._db.execute("UPDATE meta SET value = '1' WHERE key = 'vectors_version'")
    index.close()
    again = RetrievalIndex(store, embedder=DiaryEmbedder())
    assert again.refresh().embedded == 4
    assert again._db.execute("SELECT value FROM meta WHERE key = 'vectors_version'").fetchone()[0] == VECTORS_VERSION
    again.close()
    store.close()


def test_stems_hear_a_word_in_its_forms_and_leave_out_stop_words():
    from engine.retrieval.words import stems
    assert stems("running") == stems("Run") == {"run"}
    assert stems("birthdays") == stems("Ana's birthday") - {"ana"} == {"birthday"}
    assert stems("How many times did I go swimming?") == {"swim"}
    assert "pasta" not in stems("chicken parmesan spaghetti")


def test_a_query_vector_goes_to_duckdb_as_one_parameter_with_the_same_values():
    """A list parameter is bound element by element, each element trying to import
    pandas (a search of sys.path where it is missing): 770 tries for 384 floats."""
    import random
    import sys

    import duckdb

    from engine.retrieval.vectors import vector_literal

    rng = random.Random(3)
    vector = [rng.uniform(-1, 1) for _ in range(384)] + [1e-8, -0.0, 3.0]
    con = duckdb.connect()
    as_list = con.execute("SELECT ?::FLOAT[]", [vector]).fetchone()[0]
    tries: list[str] = []

    class Spy:
        def find_spec(self, name, path=None, target=None):
            tries.append(name)
            return None

    sys.meta_path.insert(0, Spy())
    try:
        as_text = con.execute("SELECT ?::DOUBLE[]::FLOAT[]", [vector_literal(vector)]).fetchone()[0]
    finally:
        sys.meta_path.pop(0)
    assert as_text == as_list
    assert tries.count("pandas") <= 2


class LoggingSparse(FakeSparse):
    """Writes each text it encodes to a file before it returns, slowly: a child
    process to be killed halfway uses it."""

    name = "fake-sparse"

    def __init__(self, log: str):
        super().__init__()
        self.log = log

    def encode(self, texts):
        time.sleep(0.05)
        with open(self.log, "a") as f:
            f.writelines(t.replace("\n", " ") + "\n" for t in texts)
        return super().encode(texts)


class LoggingEmbedder(DiaryEmbedder):
    name = "diary"
    def __init__(self, log: str):
        self.log = log

    def embed(self, texts):
        time.sleep(0.05)
        with open(self.log, "a") as f:
            f.writelines(t.replace("\n", " ") + "\n" for t in texts)
        return super().embed(texts)


class RecordingEmbedder(DiaryEmbedder):
    name = "diary"
    def __init__(self):
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts += texts
        return super().embed(texts)


_CHILD = """
import sys
from engine.retrieval.index import RetrievalIndex
from engine.store import EventStore
from tests.test_index_refresh import LoggingEmbedder, LoggingSparse
store = EventStore(sys.argv[1])
index = RetrievalIndex(store, sparse=LoggingSparse(sys.argv[2]), embedder=LoggingEmbedder(sys.argv[3]), encode_batch=2)
index.vectors.batch = 2
index.refresh()
print("finished")
"""


@pytest.mark.parametrize("stage", ["sparse", "vectors"])
def test_a_refresh_killed_halfway_loses_no_finished_work(tmp_path, stage):
    """kill -9 while the encoders work; the next refresh encodes only what was not
    stored, and the index ends up whole."""
    import os
    import signal
    import subprocess
    import sys

    path = str(tmp_path / "hindsight.duckdb")
    store = EventStore(path)
    songs = [s for i in range(26) for s in plays(f"Song {chr(65 + i)}", 2, start=10 * i)]
    add(store, songs)
    store.close()
    logs = {"sparse": tmp_path / "sparse.log", "vectors": tmp_path / "vectors.log"}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, path, str(logs["sparse"]), str(logs["vectors"])],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and child.poll() is None:
        if logs[stage].exists() and len(logs[stage].read_text().splitlines()) >= 10:
            break
        time.sleep(0.02)
    assert child.poll() is None, f"the refresh ended before it was killed: {child.communicate()}"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()

    store = EventStore(path)
    sparse, embedder = RecordingSparse(), RecordingEmbedder()
    index = RetrievalIndex(store, sparse=sparse, embedder=embedder)
    units_done = {r[0] for r in index._db.execute(
        "SELECT text FROM units JOIN units_done ON units.unit = units_done.id").fetchall()}
    texts_done = {r[0] for r in index._db.execute(
        "SELECT text FROM texts SEMI JOIN text_vectors USING (h)").fetchall()}
    assert (units_done if stage == "sparse" else texts_done), "the killed refresh stored nothing it finished"
    stats = index.refresh()
    assert not set(sparse.texts) & units_done and not set(embedder.texts) & texts_done
    assert len(sparse.texts) == len(set(sparse.texts)) and len(embedder.texts) == len(set(embedder.texts))
    assert set(sparse.texts) | units_done == units_of(songs)
    all_texts = {r[0] for r in index._db.execute("SELECT text FROM texts").fetchall()}
    assert set(embedder.texts) | texts_done == all_texts
    assert len(weights_by_id(index)) == len(songs)
    if stage == "sparse":  # nothing was embedded before the kill
        assert stats.embedded == len(songs)
    assert len(index.passage_similarities(DiaryEmbedder().embed(["run"])[0], [e.id for e in songs])) == len(songs)
    index.close()
    store.close()


def test_the_encoders_read_numbers_only_where_they_are_attribute_values():
    from engine.retrieval.units import event_units, without_numbers

    assert without_numbers("Listened to 1979 by Smashing Pumpkins from Mellon Collie Vol. 2 for 3 min 12 s.",
                           ["Mellon Collie Vol. 2", "1979"]) == \
        "Listened to 1979 by Smashing Pumpkins from Mellon Collie Vol. 2."
    assert without_numbers("Song 12 and Song 13 for 4 min", ["Song 12"]) == "Song 12 and Song"
    units, passages = event_units("mail", "mail", "Invoice 4411", "Hi,\n\nYour order 112-33 ships on 2024-03-01.",
                                  {"from": "shop@example.com", "message_id": "<a1@x>", "size": 2048})
    # numbers and record identifiers are left to full-text search and SQL
    assert units == ["source: mail | kind: mail", "title: Invoice", "text: Hi,", "text: Your order ships.",
                     "from: shop@example.com"]
    assert passages == ["source: mail | kind: mail | title: Invoice | text: Hi,\n\nYour order ships.",
                        "source: mail | kind: mail | title: Invoice | text: Your order ships."]


def test_a_title_or_text_made_of_attribute_values_is_read_as_its_template():
    from engine.retrieval.units import as_template, event_texts
    from engine.retrieval.verbalise import key_values

    def texts(track: str, artist: str, album: str):
        attrs = {"track": track, "artist": artist, "album": album, "platform": "iOS 16.5 (iPhone14,2)",
                 "ms_played": 192000}
        title, text = f"{artist} – {track}", f"Listened to {track} by {artist} from the album {album} for 3 min 12 s."
        return event_texts(key_values("spotify", "music_stream", title, text, attrs), "spotify", "music_stream",
                           title, text)

    units, passages, said = texts("Down", "Rosario Rusticucci", "Situation")
    other_units, other_passages, other_said = texts("Inside", "Peter Nelson", "Trade")
    # the values are units of their own, so no word is lost to the sparse weights
    assert {"track: Down", "artist: Rosario Rusticucci", "album: Situation"} <= set(units)
    assert "title: artist – track" in units
    assert "text: Listened to track by artist from the album album." in units
    # two songs share their title and text units and their one sentence
    assert set(units) & set(other_units) >= {"title: artist – track",
                                             "text: Listened to track by artist from the album album."}
    assert said == other_said == ("Listened to track by artist from the album album.",)
    # the passage the Embedder compares with a question still names the song
    assert "Rosario Rusticucci" in passages[0] and "Down" in passages[0]

    # a text its values make less than a third of is read as it is
    assert as_template("Dinner with Anna at Luigi in town", [("location", "Luigi")]) is None
    assert as_template("Dinner at Luigi Rossi", [("location", "Luigi Rossi")]) == "Dinner at location"
    # a sentence that would be nothing but a key is read as it is
    assert as_template("Trip to Rome", [("subject", "Trip to Rome")]) == "subject"
    assert as_template("Trip to Rome", [("subject", "Trip to Rome")], own_words=True) is None
    _, _, said = event_texts(key_values("mail", "mail", "Trip to Rome", None, {"subject": "Trip to Rome"}),
                             "mail", "mail", "Trip to Rome", None)
    assert said == ("Trip to Rome",)
    # only whole words: "Art" is no value inside "Artemis"; a key is never matched by a later value
    assert as_template("Artemis by Art", [("artist", "Art"), ("track", "Artemis")]) == "track by artist"
    assert as_template("album by The Album", [("album", "The Album"), ("track", "album")]) == "track by album"
    assert as_template("Went to Rome", [("start_city", "Went to Rome")]) == "start city"


def test_the_refresh_memo_keeps_keys_not_texts_and_nothing_for_the_collector_to_walk(store, monkeypatch):
    """A refresh remembers, per distinct neural view, only the keys of what the view
    is made of: as texts, 100,000 views held ~200 MB of Python's arenas resident
    after the refresh; and were its entries lists, each full collection would walk
    them all while every thread, the GUI's too, waits. A play whose view was met
    before still gets every reference the first one got."""
    import gc

    memos: list[dict] = []
    real = RetrievalIndex._write_documents

    def spying(self, rows, memo, bags):
        memos.append(memo)
        return real(self, rows, memo, bags)

    monkeypatch.setattr(RetrievalIndex, "_write_documents", spying)
    names = ["Uprising", "Madness", "Starlight", "Hysteria", "Resistance", "Supremacy", "Psycho", "Dead Inside",
             "Revolt", "Aftermath", "Mercy", "Reapers", "Drones", "Knights", "Citizen", "Falling", "Bliss",
             "Plug In", "Showbiz", "Sunburn", "Muscle", "Unintended", "Cave", "Overdue", "Hate This", "Exo",
             "Animals", "Explorers", "Survival", "Undisclosed"]
    songs = [p for n, name in enumerate(names) for p in plays(name, 3, start=10 * n)]
    add(store, songs)
    index = RetrievalIndex(store, sparse=FakeSparse(), embedder=DiaryEmbedder())
    assert index.refresh().added == 90
    memo = memos[0]
    assert len(memo) == 30  # three plays of a song: one view
    gc.collect()  # the collector stops tracking a tuple of ints, an inner one first
    gc.collect()
    assert not [v for v in memo.values() if gc.is_tracked(v)]
    assert all(isinstance(k, int) for k in memo)
    assert not [x for v in memo.values() for x in (v[0], *v[1], *v[2]) if not isinstance(x, int)]
    refs = dict(index._db.execute("SELECT id, count(*) FROM passage_refs GROUP BY id").fetchall())
    sentence_refs = dict(index._db.execute("SELECT id, count(*) FROM sentence_refs GROUP BY id").fetchall())
    bags = dict(index._db.execute("SELECT id, bag FROM doc_bags").fetchall())
    for n in range(30):
        first, *again = [e.id for e in songs[3 * n:3 * n + 3]]
        assert refs[first] >= 1
        assert [refs[i] for i in again] == [refs[first]] * 2
        assert [sentence_refs.get(i) for i in again] == [sentence_refs.get(first)] * 2
        assert [bags[i] for i in again] == [bags[first]] * 2
    index.close()


def test_the_embedder_batches_texts_of_about_one_length():
    from models.runtime.encoders import length_batches

    batches = length_batches([40, 8, 9, 41, 10, 100, 7], 2)
    assert sorted(i for b in batches for i in b) == list(range(7))
    assert batches == [[6, 1], [2, 4], [0, 3], [5]]
    assert length_batches([5] * 5, 16) == [[0, 1, 2, 3, 4]]
    assert length_batches([], 16) == []
    # a chat prompt's short sentences share a run when padding them costs less than a run
    assert length_batches([8, 11, 60], 16) == [[0, 1], [2]]
    assert length_batches([30] * 8 + [40], 16) == [list(range(8)), [8]]  # 80 tokens of padding: a run of its own


def test_a_refresh_of_an_unchanged_store_reads_nothing(store):
    """Every question refreshes the index; at a million events finding that nothing
    was added or removed took 0.33 s. While the store is as the last whole refresh
    left it, a refresh returns at once; an import or a removal is still seen."""
    add(store, plays("Uprising", 3))
    index = RetrievalIndex(store, sparse=RecordingSparse())
    assert index.refresh().added == 3
    looked: list[int] = []
    real = index._add_documents
    index._add_documents = lambda cancel, report: (looked.append(1), real(cancel, report))[1]
    assert index.refresh().added == 0 and looked == []
    add(store, plays("Madness", 2, start=10), import_id=2)
    assert index.refresh().added == 2 and looked == [1]
    assert index.refresh().added == 0 and looked == [1]
    store.write(lambda con: con.execute("DELETE FROM events WHERE import_id = 2")).result()
    assert index.refresh().removed == 2 and looked == [1, 1]
    # a refresh cancelled halfway is not taken for a whole one
    add(store, plays("Starlight", 2, start=20), import_id=3)
    cancel = threading.Event()
    cancel.set()
    index.refresh(cancel=cancel)
    assert index.refresh().added == 2
    index.close()


def test_full_text_search_scores_as_the_fts_extensions_own_bm25(store):
    """fts_search scores only the postings of the query's terms; its hits, order and
    scores are those of the extension's match_bm25 called on every document."""
    events = (plays("Uprising", 5) + plays("Starlight", 3, start=10) + plays("Madness", 2, start=20)
              + [ev("strava", "workout", T0 + timedelta(days=d), 40, f"Run {d}", "Running by the river",
                    activity="running") for d in range(1, 6)]
              + [ev("mail", "mail", T0 + timedelta(days=d, hours=3), 1, f"Your order {d} has shipped",
                    "Dear customer, your Amazon order of running shoes has shipped.", sender="Amazon")
                 for d in range(1, 4)])
    add(store, events)
    index = RetrievalIndex(store, sparse=FakeSparse())
    index.refresh()
    if index.fts_backend != "duckdb-fts":
        pytest.skip("the DuckDB fts extension is not installed here")
    index.fts_search("warm up", 1)  # builds the FTS index
    # the extension's BM25 over the distinct documents, each document's score its events'
    own = ("SELECT e.id, score FROM (SELECT dh, fts_main_doc_texts.match_bm25(dh, ?) AS score FROM doc_texts) "
           "JOIN docs e USING (dh) WHERE score IS NOT NULL ORDER BY score DESC, e.id LIMIT ?")
    for query in ["Muse", "running shoes", "order shipped", "songs I listened to", "Starlight by Muse", "the",
                  "nothing like it"]:
        for limit in (3, 100):
            expected = index._db.execute(own, [query, limit]).fetchall()
            got = index.fts_search(query, limit)
            assert [i for i, _ in got] == [i for i, _ in expected], query
            assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-9), query
    assert index.fts_search("Muse", 100)  # the test above compared something


def test_the_index_builds_with_a_bigger_buffer_pool_than_it_searches_with(store):
    from engine.retrieval import index as ix

    add(store, plays("Uprising", 3))
    index = RetrievalIndex(store, sparse=FakeSparse())

    def limit() -> int:
        return index._db.execute("SELECT current_setting('memory_limit')").fetchone()[0]

    searching = limit()
    seen: list = []
    index.refresh(progress=lambda stage, done, total: seen.append(limit()))
    assert seen and all(s != searching for s in seen)  # built with INDEX_MEMORY_LIMIT
    assert limit() == searching  # and searched with SEARCH_MEMORY_LIMIT again
    index.fts_search("Uprising", 5)  # builds the FTS index, then shrinks again
    assert limit() == searching
    assert ix.SEARCH_MEMORY_LIMIT != ix.INDEX_MEMORY_LIMIT


def test_an_index_an_older_version_wrote_is_kept_in_this_layout(tmp_path):
    """Older versions kept each event's whole document in docs(id, doc), with a primary
    key on docs and on sparse_done (69 MB of the file each at a million events).
    Opening such an index stores each distinct document once, drops the keys, keeps
    every row, encodes nothing again, and searches as before."""
    import duckdb

    with EventStore(tmp_path / "hindsight.duckdb") as store:
        add(store, plays("Uprising", 3) + plays("Starlight", 2, start=10))
        sparse = RecordingSparse()
        index = RetrievalIndex(store, sparse=sparse)
        index.refresh()
        before = (index.fts_search("uprising", 10), index.sparse_search("uprising", 10), index.documents(
            [i for i, _ in index.fts_search("muse", 10)]))
        encoded = len(sparse.texts)  # the units, and the query "uprising"
        index.close()
        con = duckdb.connect(str(tmp_path / "hindsight.retrieval.duckdb"))
        con.execute("CREATE TABLE old_docs (id VARCHAR PRIMARY KEY, doc VARCHAR NOT NULL)")
        con.execute("INSERT INTO old_docs SELECT d.id, t.doc FROM docs d JOIN doc_texts t USING (dh)")
        con.execute("CREATE TABLE old_done (id VARCHAR PRIMARY KEY)")
        con.execute("INSERT INTO old_done SELECT * FROM sparse_done")
        con.execute("DROP SCHEMA fts_main_doc_texts CASCADE")
        for table in ("docs", "doc_texts", "sparse_done"):
            con.execute(f"DROP TABLE {table}")
        con.execute("ALTER TABLE old_docs RENAME TO docs")
        con.execute("ALTER TABLE old_done RENAME TO sparse_done")
        keys = "SELECT table_name FROM duckdb_constraints() WHERE constraint_type = 'PRIMARY KEY' ORDER BY 1"
        assert [r[0] for r in con.execute(keys).fetchall()] == ["docs", "meta", "sparse_done"]
        con.close()

        again = RetrievalIndex(store, sparse=sparse)
        assert [r[0] for r in again._db.execute(keys).fetchall()] == ["meta"]
        assert again._db.execute("SELECT count(*), count(DISTINCT dh) FROM docs").fetchone() == (5, 2)
        assert again._db.execute("SELECT count(*) FROM doc_texts").fetchone()[0] == 2
        stats = again.refresh()
        assert (stats.added, stats.encoded, len(sparse.texts)) == (0, 0, encoded)
        assert (again.fts_search("uprising", 10), again.sparse_search("uprising", 10), again.documents(
            [i for i, _ in again.fts_search("muse", 10)])) == before
        again.close()


def test_each_distinct_document_is_stored_once_and_removed_with_its_last_event(store):
    songs = plays("Uprising", 3) + plays("Starlight", 2, start=10)
    add(store, songs)
    index = RetrievalIndex(store, sparse=FakeSparse())
    index.refresh()
    assert index._db.execute("SELECT count(*) FROM doc_texts").fetchone()[0] == 2
    assert [i for i, _ in index.fts_search("starlight", 10)] == sorted(e.id for e in songs[3:])
    assert len(index.fts_search("muse", 4)) == 4  # the limit counts events, not documents
    store.write(lambda con: con.execute("DELETE FROM events WHERE title LIKE '%Starlight'")).result()
    assert index.refresh().removed == 2
    assert index._db.execute("SELECT count(*) FROM doc_texts").fetchone()[0] == 1
    assert index.fts_search("starlight", 10) == []
    index.close()


def test_a_large_build_opens_the_index_again_and_searches_on(tmp_path, monkeypatch):
    """After a build that wrote many rows the index file is closed and opened again, so
    that DuckDB gives back the memory the build used; searches go on over the new
    connection, the embedder's vectors included."""
    import engine.retrieval.index as index_module

    monkeypatch.setattr(index_module, "REOPEN_AFTER_ROWS", 4)
    with EventStore(tmp_path / "hindsight.duckdb") as store:
        songs = [p for n in range(5) for p in plays(f"Song {n}", 1, start=n)]
        add(store, songs)
        index = RetrievalIndex(store, sparse=FakeSparse(), embedder=DiaryEmbedder())
        first = index._db
        assert index.refresh().added == 5
        reopened = index._db
        assert reopened is not first and index.vectors._db is reopened
        assert len(index.sparse_search("muse", 10)) == 5
        # building the full-text index over the five documents opens it again
        assert [i for i, _ in index.fts_search("song 3", 1)] == [songs[3].id]
        assert index._db is not reopened and index.vectors._db is index._db
        ids = [i for i, _ in index.fts_search("muse", 10)]
        assert len(index.passage_similarities(DiaryEmbedder().embed(["Song"])[0], ids)) == 5
        # a refresh of one event keeps the connection
        add(store, plays("Madness", 1, start=30), import_id=2)
        now = index._db
        assert index.refresh().added == 1 and index._db is now
        assert len(index.fts_search("madness", 10)) == 1
        index.close()


def test_a_large_refresh_has_the_store_give_back_what_it_cached_and_a_small_one_not(tmp_path, monkeypatch):
    """A refresh reads every new event from the store; after one that wrote
    REOPEN_AFTER_ROWS rows or more the store's buffer pool gives them back
    (EventStore.release_cache), and a question's search does not ask it to."""
    import engine.retrieval.index as index_module

    monkeypatch.setattr(index_module, "REOPEN_AFTER_ROWS", 4)
    with EventStore(tmp_path / "hindsight.duckdb") as store:
        released: list[int] = []
        real = store.release_cache
        monkeypatch.setattr(store, "release_cache", lambda: (released.append(1), real()))
        add(store, [p for n in range(5) for p in plays(f"Song {n}", 1, start=n)])
        index = RetrievalIndex(store, sparse=FakeSparse())
        assert index.refresh().added == 5 and released == [1]
        assert len(index.fts_search("muse", 10)) == 5  # builds the FTS index: no store read
        add(store, plays("Madness", 1, start=30), import_id=2)
        assert index.refresh().added == 1 and released == [1]  # one event: below the threshold
        index.close()
