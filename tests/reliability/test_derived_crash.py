"""Crash safety of the jobs that derive tables from imported chats: SIGKILL at seeded
random moments during the chat-tree rebuild and during the insights update.

Both start from a store whose derived rows cover the first half of the conversations,
after which a later export brought the second half and continued some of the first.
The rebuild runs with heads of a new version, so it replaces every tree as well as
adding new ones; the insights update infers the new and continued conversations and
re-clusters all, moving conversations that are already in topics.

Right after the kill a reader must find whole trees and a consistent taxonomy (an old
state or a new one, never half of one), and no conversation without its tree or its
insights: a restart would mend such a gap, so only this check sees it. After a
restart runs the job to its end, the derived tables (and, for insights, the events it
writes its results into) must equal those of a clean run.
``HINDSIGHT_CRASH_TRIALS`` sets the trials (half per job).

The child processes use the fast tests' fake models, slowed a little and with small
write batches, so the job spans many commits for a kill to fall between or into.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb
import pytest

from tests.reliability.contract import TALLY
from tests.reliability.crash import KilledJob, kill_and_restart, run_child

TRIALS = max(1, int(os.environ.get("HINDSIGHT_CRASH_TRIALS", "20")) // 2)
CONVERSATIONS = 48  # the first half imported (and derived) before, the rest since
CONTINUED = frozenset(range(0, CONVERSATIONS // 2, 4))  # of the first half: longer in the later export

CHAT_TREES = """
import time
from engine.chattree import ChatTreeModels, tables
from engine.store import EventStore, store_path
from tests.test_chattree import FakeEmbedder, FakeHeads, FakeSegmenter
# a transaction per tree, a tree per build step, a few ms a text: about fifty commits
# over a second or two, for the kill to fall between or into
tables.WRITE_BATCH = 1
if hasattr(tables, "BUILD_TURNS"):
    tables.BUILD_TURNS = 1

class SlowEmbedder(FakeEmbedder):
    def embed(self, texts):
        time.sleep(0.002 * len(texts))
        return super().embed(texts)

store = EventStore(store_path(data))
print("phase start", flush=True)
said = set()
def progress(done, total):
    if done and "building" not in said:
        said.add("building")
        print("phase building", flush=True)
tables.rebuild(store, ChatTreeModels(FakeSegmenter(), SlowEmbedder(), FakeHeads()), progress=progress)
store.close()
print("phase done", flush=True)
"""

INSIGHTS = """
import time
from engine.insights import job
from engine.store import EventStore, store_path
from tests.test_insights import Language, Phrases, Sparse, Words

class SlowWords(Words):
    def embed(self, texts):
        time.sleep(0.02 * len(texts))
        return super().embed(texts)

real_patch = job._patch_events
def slow_patch(con):  # the taxonomy's transaction, held open longer for a kill to fall into
    print("phase writing the taxonomy", flush=True)
    time.sleep(0.3)
    real_patch(con)
job._patch_events = slow_patch

store = EventStore(store_path(data))
print("phase start", flush=True)
said = set()
def progress(stage, done, total):
    if stage not in said:
        said.add(stage)
        print("phase " + stage, flush=True)
models = job.InsightModels(embedder=SlowWords(), sparse=Sparse(), keyphraser=Phrases(), language=Language())
job.run(store, models, progress=progress, batch=2)  # a transaction per two conversations
store.close()
print("phase done", flush=True)
"""

# ---- a ChatGPT export, made here ---------------------------------------------------------
SUBJECTS = {
    "cooking": ["a tomato pasta sauce", "sourdough bread", "a mushroom risotto", "a chickpea curry"],
    "coding": ["a nested Python list", "two pandas tables", "a regex for email addresses", "a SQL window query"],
    "travel": ["a weekend in Lisbon", "a train trip to Porto", "three days in Rome", "a hike near Sintra"],
    "garden": ["tomato seedlings", "a compost heap", "roses in clay soil", "an apple tree"],
}
FOLLOW_UPS = ["Make it shorter.", "Thanks!", "What about {other}?", "I am vegetarian. Change it for me.",
              "Continue.", "My budget is small. What is cheaper?", "And in winter?", "Explain {thing} step by step."]


def _conversation(n: int, rng: random.Random, continued: bool = False) -> dict:
    """Conversation ``n``: three to six prompts with replies; every third has an edited
    prompt (a sibling branch with its own reply, the edit on the current path);
    ``continued``, one more prompt and reply, as a later export has it."""
    cid = f"6790a1b2-0000-8000-a000-{n:012d}"
    subject = sorted(SUBJECTS)[n % len(SUBJECTS)]
    thing, other = rng.sample(SUBJECTS[subject], 2)
    start = 1_735_689_600.0 + n * 3 * 86_400 + rng.randrange(36_000)
    mapping: dict[str, dict] = {"root": {"id": "root", "message": None, "parent": None, "children": []}}

    def add(parent: str, role: str, text: str, at: float) -> str:
        nid = f"{cid}-{len(mapping)}"
        mapping[nid] = {"id": nid, "parent": parent, "children": [], "message": {
            "id": nid, "author": {"role": role, "name": None, "metadata": {}}, "create_time": at,
            "update_time": None, "content": {"content_type": "text", "parts": [text]},
            "status": "finished_successfully", "metadata": {}, "recipient": "all"}}
        mapping[parent]["children"].append(nid)
        return nid

    prompts = [f"How do I make {thing}? Give me a plan."]
    prompts += [rng.choice(FOLLOW_UPS).format(thing=thing, other=other) for _ in range(rng.randint(2, 5))]
    edited_at = 1 + n % 2 if n % 3 == 0 else None
    parent, at = "root", start
    for i, prompt in enumerate(prompts):
        user = add(parent, "user", prompt, at)
        reply = add(user, "assistant", f"Here is how, about {thing}: first this, then that.", at + 20)
        if i == edited_at:
            edit = add(parent, "user", f"{prompt} Also think of {other}.", at + 30)
            reply = add(edit, "assistant", f"Both {thing} and {other}, then.", at + 50)
        parent, at = reply, at + 600
    if continued:
        parent = add(add(parent, "user", "One more thing: how long does it keep?", at), "assistant",
                     "About a week.", at + 20)
    return {"title": f"{subject.title()} {n}", "create_time": start, "update_time": at, "mapping": mapping,
            "current_node": parent, "id": cid, "conversation_id": cid}


def _write_export(folder: Path, numbers: list[int], continued: frozenset[int] = frozenset()) -> Path:
    rng = random.Random(44)
    convs = [_conversation(n, rng, n in continued) for n in range(CONVERSATIONS)]
    folder.mkdir(parents=True)
    (folder / "conversations.json").write_text(json.dumps([convs[n] for n in numbers]))
    return folder


def _import(store, folder: Path) -> None:
    from engine.ingest import import_paths
    from importers.base import ImportContext

    report = import_paths(store, [folder], context=ImportContext(home_tz=ZoneInfo("Europe/Berlin")))
    assert all(f.status == "imported" for f in report.files), report.to_json()


def _before(folder: Path, derive) -> Path:
    """A data folder holding the first half of the export, ``derive``d, and then a
    later export imported: the second half, and every fourth conversation of the first
    half continued. What a job killed in a trial starts from."""
    from engine.store import EventStore, store_path

    data = folder / "data"
    with EventStore(store_path(data)) as store:
        _import(store, _write_export(folder / "first", range(CONVERSATIONS // 2)))
        derive(store)
        _import(store, _write_export(folder / "second", [*CONTINUED, *range(CONVERSATIONS // 2, CONVERSATIONS)],
                                     CONTINUED))
    return data


def _fresh_copy(before: Path, tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(before, data)
    return data


# ---- reading what a job left ---------------------------------------------------------
def _connect(data: Path) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(str(data / "hindsight.duckdb"), read_only=True)


def _digest(con, sql: str) -> str:
    h = hashlib.sha256()
    for row in con.execute(sql).fetchall():
        h.update(repr(row).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _events(con) -> str:
    return _digest(con, 'SELECT id, source, kind, title, text, start, "end", tz_offset_min, attributes, file, '
                        "locator, raw FROM events ORDER BY id")


def _trees(data: Path) -> dict:
    """What the chat-tree tables hold (``built_at`` left out), and the events."""
    con = _connect(data)
    try:
        return {
            "conversations": _digest(con, "SELECT conversation_id, source, title, content_hash, heads_version, turns, "
                                          "roots FROM chat_tree_conversations ORDER BY conversation_id"),
            "turns": _digest(con, "SELECT * FROM chat_tree_turns ORDER BY conversation_id, node_id"),
            "count": con.execute("SELECT count(*) FROM chat_tree_turns").fetchone()[0],
            "events": _events(con),
        }
    finally:
        con.close()


def _trees_are_whole(data: Path, had_trees: frozenset[str]) -> None:
    """Every conversation's tree has all its rows, and none that had a tree lost it."""
    con = _connect(data)
    try:
        torn = con.execute("""
            SELECT c.conversation_id, c.turns, count(t.node_id) FROM chat_tree_conversations c
            LEFT JOIN chat_tree_turns t USING (conversation_id) GROUP BY ALL HAVING c.turns <> count(t.node_id)
        """).fetchall()
        orphans = con.execute("SELECT count(*) FROM chat_tree_turns WHERE conversation_id NOT IN "
                              "(SELECT conversation_id FROM chat_tree_conversations)").fetchone()[0]
        have = {r[0] for r in con.execute("SELECT conversation_id FROM chat_tree_conversations").fetchall()}
    finally:
        con.close()
    assert not torn, f"half-written trees (conversation, turns it says, rows it has): {torn[:5]}"
    assert not orphans, f"{orphans} tree rows of no conversation"
    lost = had_trees - have
    assert not lost, f"{len(lost)} conversations lost their tree (neither the old nor the new one is there)"


def _insights(data: Path) -> dict:
    con = _connect(data)
    try:
        return {
            "rows": _digest(con, "SELECT * FROM conversation_insights ORDER BY id"),
            "count": con.execute("SELECT count(*) FROM conversation_insights").fetchone()[0],
            "topics": _digest(con, "SELECT * FROM insight_topics ORDER BY id"),
            "names": _digest(con, "SELECT * FROM insight_topic_names ORDER BY auto_name"),
            "events": _events(con),
        }
    finally:
        con.close()


def _insight_keys(data: Path) -> dict[str, str]:
    """conversation event id -> the key of the input and models its insights were made from"""
    con = _connect(data)
    try:
        return dict(con.execute("SELECT id, content_key FROM conversation_insights").fetchall())
    finally:
        con.close()


def _taxonomy_is_consistent(data: Path, had_insights: dict[str, str]) -> None:
    """No conversation that had insights lost them; each conversation's topic and
    subtopic exist, the subtopic under the topic, and its event shows that topic's
    name (one transaction writes all three)."""
    from engine.insights.job import topic_name_sql

    lost = had_insights.keys() - _insight_keys(data).keys()
    assert not lost, f"{len(lost)} conversations lost their insights (neither the old nor the new ones are there)"

    con = _connect(data)
    try:
        dangling = con.execute("""
            SELECT count(*) FROM conversation_insights i
            LEFT JOIN insight_topics t ON t.id = i.topic_id AND t.level = 1
            LEFT JOIN insight_topics s ON s.id = i.subtopic_id AND s.level = 2
            WHERE i.topic_id IS NOT NULL
              AND (t.id IS NULL OR s.id IS NULL OR s.parent_id IS DISTINCT FROM i.topic_id)
        """).fetchone()[0]
        told = con.execute(f"""
            SELECT count(*) FROM conversation_insights i JOIN events e ON e.id = i.id
            WHERE i.topic_id IS NOT NULL
              AND json_extract_string(e.attributes, '$.topic') IS DISTINCT FROM {topic_name_sql('i.topic_id')}
        """).fetchone()[0]
        strays = con.execute("SELECT count(*) FROM conversation_insights WHERE id NOT IN "
                             "(SELECT id FROM events WHERE kind = 'chat_conversation')").fetchone()[0]
    finally:
        con.close()
    assert (dangling, told, strays) == (0, 0, 0), \
        f"taxonomy after a kill: {dangling} conversations in a missing topic or subtopic, {told} events showing " \
        f"another topic than their insights, {strays} insights of no conversation"


# ---- the starting points and the clean runs ----------------------------------------------
@pytest.fixture(scope="module")
def trees_before(tmp_path_factory) -> tuple[Path, frozenset[str]]:
    """Trees of the first half built by heads "fake-0"; the rebuild's heads are "fake-1"."""
    from engine.chattree import ChatTreeModels, tables
    from tests.test_chattree import FakeEmbedder, FakeHeads, FakeSegmenter

    class OlderHeads(FakeHeads):
        version = "fake-0"

    data = _before(tmp_path_factory.mktemp("trees-before"),
                   lambda store: tables.rebuild(store, ChatTreeModels(FakeSegmenter(), FakeEmbedder(), OlderHeads())))
    con = _connect(data)
    try:
        had = frozenset(r[0] for r in con.execute("SELECT conversation_id FROM chat_tree_conversations").fetchall())
    finally:
        con.close()
    assert len(had) == CONVERSATIONS // 2
    return data, had


@pytest.fixture(scope="module")
def trees_clean(trees_before, tmp_path_factory) -> tuple[dict, float]:
    """The tables of a rebuild that was not killed, and how long it took."""
    before, had = trees_before
    data = _fresh_copy(before, tmp_path_factory.mktemp("trees-clean"))
    events_before = _trees(data)["events"]
    seconds = run_child(KilledJob("chat-tree rebuild", CHAT_TREES, lambda d: None), data, before)[2]
    reference = _trees(data)
    _trees_are_whole(data, had)
    con = _connect(data)
    try:
        convs, versions = con.execute("SELECT count(*), list(DISTINCT heads_version) FROM chat_tree_conversations"
                                      ).fetchone()
    finally:
        con.close()
    assert (convs, versions) == (CONVERSATIONS, ["fake-1"]), "the clean rebuild did not build every tree anew"
    assert reference["count"] > 3 * CONVERSATIONS and reference["events"] == events_before
    return reference, seconds


@pytest.fixture(scope="module")
def insights_before(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """Insights of the first half made by the fake models the update uses too: only the
    conversations imported or continued since are inferred again."""
    from engine.insights import job
    from tests.test_insights import _models

    data = _before(tmp_path_factory.mktemp("insights-before"), lambda store: job.run(store, _models()))
    had = _insight_keys(data)
    assert len(had) == CONVERSATIONS // 2
    return data, had


@pytest.fixture(scope="module")
def insights_clean(insights_before, tmp_path_factory) -> tuple[dict, float]:
    """The tables and events of an update that was not killed, and how long it took."""
    before, had = insights_before
    data = _fresh_copy(before, tmp_path_factory.mktemp("insights-clean"))
    seconds = run_child(KilledJob("insight update", INSIGHTS, lambda d: None), data, before)[2]
    reference = _insights(data)
    _taxonomy_is_consistent(data, had)
    now = _insight_keys(data)
    redone = sum(1 for cid, key in now.items() if had.get(cid) != key)
    assert redone == CONVERSATIONS // 2 + len(CONTINUED), f"{redone} conversations inferred anew"
    con = _connect(data)
    try:
        unassigned = con.execute("SELECT count(*) FROM conversation_insights WHERE topic_id IS NULL").fetchone()[0]
        keys = con.execute("SELECT count(DISTINCT content_key) FROM conversation_insights").fetchone()[0]
    finally:
        con.close()
    assert (reference["count"], keys, unassigned) == (CONVERSATIONS, CONVERSATIONS, 0)
    return reference, seconds


# ---- the trials -----------------------------------------------------------------------
def _slice(trial: int, seconds: float) -> dict[str, float]:
    """Trial ``trial`` kills within its own slice of the clean run's time: ten trials
    cover the whole job, its short last transaction included, not what ten draws
    over all of it happen to hit."""
    return {"after": seconds * trial / TRIALS, "span": seconds / TRIALS}


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(TRIALS))
def test_kill_during_chat_tree_rebuild_leaves_whole_trees_and_a_restart_the_clean_ones(
        seed, trees_before, trees_clean, tmp_path):
    before, had = trees_before
    reference, seconds = trees_clean

    def check(data: Path) -> None:
        _trees_are_whole(data, had)
        found = _trees(data)
        assert found["events"] == reference["events"], "the rebuild changed the events"
        assert found == reference, "the trees after a crash and a restart differ from a clean rebuild"

    job = KilledJob("chat-tree rebuild", CHAT_TREES, check, at_kill=lambda data: _trees_are_whole(data, had))
    landed = kill_and_restart(job, _fresh_copy(before, tmp_path), before, 2000 + seed, **_slice(seed, seconds),
                              restart_here=False)  # the job patches module constants
    TALLY[("kill -9", "chat-tree rebuild")][landed] += 1


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(TRIALS))
def test_kill_during_insight_update_leaves_a_consistent_taxonomy_and_a_restart_the_clean_one(
        seed, insights_before, insights_clean, tmp_path):
    before, had = insights_before
    reference, seconds = insights_clean

    def check(data: Path) -> None:
        _taxonomy_is_consistent(data, had)
        assert _insights(data) == reference, "the insights after a crash and a restart differ from a clean run"

    job = KilledJob("insight update", INSIGHTS, check, at_kill=lambda data: _taxonomy_is_consistent(data, had))
    landed = kill_and_restart(job, _fresh_copy(before, tmp_path), before, 3000 + seed, **_slice(seed, seconds),
                              restart_here=False)  # the job patches module state
    TALLY[("kill -9", "insight update")][landed] += 1
