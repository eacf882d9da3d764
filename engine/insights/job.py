"""The insights job: infer every chat conversation's attributes, then discover the
taxonomy and give each conversation its topic, subtopic and keywords.

Resumable and incremental: rows are stored per batch, each with a key of its input
and of this job's version, so a re-run (after a cancel, a crash or a re-import) does
only the conversations that are new or changed; the taxonomy pass, which needs no
model, then runs over all of them. The results are also merged into the conversation
events' ``attributes`` (``topic``, ``subtopic``, ``keywords``, ``summary``,
``language``, ``weekday``, ``hour``, ``month``, ``season``; a turn gets its
conversation's topic, subtopic and keywords), so the question engine can group by
them like any other attribute.

Every write goes through ``store.write``; progress goes to an injected callback.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import orjson
import pyarrow as pa

from engine.insights import naming, tables
from engine.insights.attributes import count_phrases, summary
from engine.insights.conversations import Conversation, analysed_text, iter_conversations
from engine.insights.taxonomy import discover
from engine.insights.timeslots import local_time
from engine.protocols import Embedder, Keyphraser, LanguageIdentifier, Planner, SparseEncoder

log = logging.getLogger(__name__)

#: Bump when what is inferred per conversation changes: every conversation is redone.
VERSION = "3"
BATCH = 32
#: SPLADE terms kept per conversation (the strongest)
SPARSE_TERMS = 64

Progress = Callable[[str, int, int], None]  # (stage, done, total)


class Cancelled(Exception):
    pass


@dataclass
class JobResult:
    conversations: int = 0
    inferred: int = 0
    topics: int = 0
    subtopics: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class InsightModels:
    embedder: Embedder
    sparse: SparseEncoder
    keyphraser: Keyphraser
    language: LanguageIdentifier
    #: names the topics; without one they are named by their key phrases
    planner: Planner | None = None

    def close(self) -> None:
        """Close the key phrase and language models; the embedder and sparse encoder
        belong to whoever lent them (the model registry)."""
        self.keyphraser.close()
        self.language.close()

    def identity(self) -> str:
        return "|".join(str(getattr(m, "name", type(m).__name__))
                        for m in (self.embedder, self.sparse, self.keyphraser, self.language))


def _key(models: InsightModels) -> str:
    return f"{VERSION}/{models.identity()}"


def pending(store, models: InsightModels) -> tuple[list[str], int]:
    """Ids of the conversations whose stored insights are missing or stale, and how
    many conversations there are in all. Texts are read and let go: only ids are kept."""
    con = store.reader()
    have: dict[str, str] = {}
    if tables.exists(con):
        have = dict(con.execute("SELECT id, content_key FROM conversation_insights").fetchall())
    key = _key(models)
    todo, total = [], 0
    for conv in iter_conversations(con):
        total += 1
        if have.get(conv.id) != conv.content_key(key):
            todo.append(conv.id)
    return todo, total


def infer(batch: list[Conversation], models: InsightModels, key: str) -> list[dict]:
    """The model-made attributes of a batch of conversations."""
    summaries = [summary(c) for c in batch]
    texts = [analysed_text(c) for c in batch]
    # the user's words first, then the replies: a short question alone is too little to tell
    languages = models.language.identify([("\n".join(c.user_text) + "\n" + "\n".join(c.other_text))[:1000].strip()
                                          or t for c, t in zip(batch, texts)])
    found = models.keyphraser.keyphrases(texts)
    reads = getattr(models.keyphraser, "language", "")
    phrases = [count_phrases(f, foreign=bool(reads and lang and lang != reads))
               for f, lang in zip(found, languages)]
    vectors = models.embedder.embed(summaries)
    sparse_in = [s + " " + " ".join(p[0] for p in ph[:10]) for s, ph in zip(summaries, phrases)]
    sparse = models.sparse.encode(sparse_in)
    rows = []
    for conv, summ, ph, lang, vec, sp in zip(batch, summaries, phrases, languages, vectors, sparse):
        t = local_time(conv.start, conv.tz_offset_min)
        top = dict(sorted(sp.items(), key=lambda kv: -kv[1])[:SPARSE_TERMS])
        rows.append({
            "id": conv.id, "content_key": conv.content_key(key), "conversation_id": conv.conversation_id,
            "title": conv.title, "summary": summ, "phrases": orjson.dumps(ph).decode(), "keywords": "[]",
            "language": lang, "local_date": t.day, "weekday": t.weekday, "hour": t.hour, "month": t.month,
            "season": t.season, "vector": [float(v) for v in vec], "sparse": orjson.dumps(top).decode(),
            "topic_id": None, "subtopic_id": None,
        })
    return rows


_COLUMNS = ("id", "content_key", "conversation_id", "title", "summary", "phrases", "keywords", "language",
            "local_date", "weekday", "hour", "month", "season", "vector", "sparse", "topic_id", "subtopic_id")


@contextmanager
def _transaction_with(con, name: str, table: pa.Table) -> Iterator[None]:
    """One transaction in which ``table`` can be read as ``name``: committed when the
    block ends, rolled back if it raises; the name is let go either way."""
    con.register(name, table)
    try:
        con.begin()
        yield
        con.commit()
    except Exception:
        con.rollback()
        raise
    finally:
        con.unregister(name)


def _store_rows(store, rows: list[dict]) -> None:
    table = pa.table({c: [r[c] for r in rows] for c in _COLUMNS})

    def job(con):
        tables.ensure(con)
        with _transaction_with(con, "_insight_rows", table):
            con.execute("DELETE FROM conversation_insights WHERE id IN (SELECT id FROM _insight_rows)")
            con.execute("INSERT INTO conversation_insights SELECT " + ", ".join(
                f"{c}::JSON" if c in ("phrases", "keywords", "sparse") else c for c in _COLUMNS)
                + " FROM _insight_rows")
    store.write(job).result()


def run(store, models: InsightModels, *, progress: Progress | None = None,
        cancelled: Callable[[], bool] = lambda: False, batch: int = BATCH) -> JobResult:
    """Bring the insights of every chat conversation up to date."""
    say = progress or (lambda *_: None)
    result = JobResult()
    t0 = time.monotonic()
    store.write(tables.ensure).result()
    todo, result.conversations = pending(store, models)
    key = _key(models)
    say("inferring", 0, len(todo))
    for at in range(0, len(todo), batch):
        if cancelled():
            raise Cancelled(f"stopped after {at} of {len(todo)} conversations; run again to continue")
        part = list(iter_conversations(store.reader(), ids=todo[at:at + batch]))
        _store_rows(store, infer(part, models, key))
        result.inferred += len(todo[at:at + batch])
        say("inferring", result.inferred, len(todo))
    result.seconds["infer"] = time.monotonic() - t0
    _drop_removed(store)
    t1 = time.monotonic()
    say("discovering topics", 0, 1)
    result.topics, result.subtopics = recluster(store, models.planner)
    say("discovering topics", 1, 1)
    result.seconds["taxonomy"] = time.monotonic() - t1
    result.seconds["total"] = time.monotonic() - t0
    log.info("insights: %d conversations, %d inferred, %d topics, %d subtopics in %.1f s",
             result.conversations, result.inferred, result.topics, result.subtopics, result.seconds["total"])
    return result


def _drop_removed(store) -> None:
    """Insights of conversations whose events were removed (an import was removed)."""
    store.write(lambda con: con.execute(
        "DELETE FROM conversation_insights WHERE id NOT IN "
        "(SELECT id FROM events WHERE kind = 'chat_conversation')")).result()


def recluster(store, planner: Planner | None = None) -> tuple[int, int]:
    """Discover the taxonomy over all stored conversations and write it back: topics
    (named by ``planner`` where there is one), each conversation's topic, subtopic and
    keywords, and the events' attributes."""
    con = store.reader()
    rows = con.execute("SELECT id, vector, phrases, coalesce(nullif(trim(title), ''), summary) "
                       "FROM conversation_insights ORDER BY id").fetchall()
    if not rows:
        return 0, 0
    ids = [r[0] for r in rows]
    vectors = [r[1] for r in rows]
    tax = discover(vectors, [orjson.loads(r[2]) for r in rows])
    if planner is not None:
        answers = dict(con.execute("SELECT key, answer FROM insight_name_answers").fetchall())
        fresh: dict[str, str] = {}
        tax = naming.rename(tax, vectors, [r[3] for r in rows], planner, cached=answers.get,
                            keep=fresh.__setitem__)
        if fresh:
            store.write(lambda c: c.executemany("INSERT OR REPLACE INTO insight_name_answers VALUES (?, ?)",
                                                list(fresh.items()))).result()
    topic_rows = []
    for t, c in enumerate(tax.topics):
        topic_rows.append((t + 1, 1, None, c.name, orjson.dumps(list(c.keywords)).decode(), len(c.members)))
    base = len(tax.topics) + 1
    for s, c in enumerate(tax.subtopics):
        topic_rows.append((base + s, 2, c.parent + 1, c.name, orjson.dumps(list(c.keywords)).decode(),
                           len(c.members)))
    assign = pa.table({
        "id": ids,
        "topic_id": [tax.topic_of[i] + 1 for i in range(len(ids))],
        "subtopic_id": [base + tax.subtopic_of[i] for i in range(len(ids))],
        "keywords": [orjson.dumps(list(k)).decode() for k in tax.keywords],
    })

    def job(con):
        with _transaction_with(con, "_assign", assign):
            con.execute("DELETE FROM insight_topics")
            con.executemany("INSERT INTO insight_topics VALUES (?, ?, ?, ?, ?::JSON, ?)", topic_rows)
            con.execute("UPDATE conversation_insights SET topic_id = a.topic_id, subtopic_id = a.subtopic_id, "
                        "keywords = a.keywords::JSON FROM _assign a WHERE conversation_insights.id = a.id")
            _patch_events(con)
    store.write(job).result()
    return len(tax.topics), len(tax.subtopics)


_MERGE = "UPDATE events SET attributes = json_merge_patch(coalesce(events.attributes, '{}'::JSON), p.patch) FROM "


def _patch_events(con) -> None:
    """Merge the insights into the conversation events' attributes, and their topic,
    subtopic and keywords into their turns' (inside the caller's transaction): topic
    and subtopic by the names the user sees."""
    con.execute(_MERGE + f"""(
            SELECT i.id, json_object(
                'topic', {topic_name_sql('i.topic_id')}, 'subtopic', {topic_name_sql('i.subtopic_id')},
                'keywords', i.keywords, 'summary', i.summary, 'language', i.language,
                'weekday', dayname(i.local_date), 'hour', i.hour, 'month', i.month, 'season', i.season) AS patch
            FROM conversation_insights i
        ) p
        WHERE events.id = p.id""")
    # each turn carries its conversation's topic, subtopic and keywords (copied from the
    # conversation event just patched), so that a plan counting the questions the user
    # asked by topic groups by them, as it would the conversations
    con.execute(_MERGE + """(
            SELECT c.source, c.attributes->>'conversation_id' AS conversation_id, json_object(
                'topic', c.attributes->'topic', 'subtopic', c.attributes->'subtopic',
                'keywords', c.attributes->'keywords') AS patch
            FROM events c JOIN conversation_insights i ON c.id = i.id
            WHERE c.attributes->>'conversation_id' IS NOT NULL
        ) p
        WHERE events.kind = 'chat_turn' AND events.source = p.source
          AND (events.attributes->>'conversation_id') = p.conversation_id""")


def topic_name_sql(column: str) -> str:
    """SQL for the name the user sees of the topic whose id is in ``column``: their
    own name if they renamed (or merged) it, else the inferred one."""
    return (f"(SELECT coalesce(n.name, t.auto_name) FROM insight_topics t "
            f"LEFT JOIN insight_topic_names n ON n.auto_name = t.auto_name WHERE t.id = {column})")


def rename_topic(store, current: str, new: str) -> int:
    """Give the topic (or subtopic) now shown as ``current`` the name ``new``; naming
    it like another topic merges the two. Returns how many clusters were renamed."""
    new = new.strip()
    if not new:
        raise ValueError("a topic needs a name")

    def job(con):
        tables.ensure(con)
        autos = [r[0] for r in con.execute(
            "SELECT t.auto_name FROM insight_topics t LEFT JOIN insight_topic_names n ON n.auto_name = t.auto_name "
            "WHERE lower(coalesce(n.name, t.auto_name)) = lower(?)", [current]).fetchall()]
        if not autos:
            raise KeyError(current)
        con.begin()
        try:
            for auto in autos:
                con.execute("INSERT OR REPLACE INTO insight_topic_names VALUES (?, ?)", [auto, new])
            _patch_events(con)
            con.commit()
        except Exception:
            con.rollback()
            raise
        return len(autos)
    try:
        return store.write(job).result()
    except KeyError:
        raise ValueError(f"no topic named {current!r}") from None
