"""The chat trees kept in the store: derived tables this package creates itself
(``CREATE TABLE IF NOT EXISTS``, through the store's single writer), rebuilt from the
imported ``chat_turn`` events.

``chat_tree_turns``: one row per user turn, with its follow-up parent (the node id of
the user turn it follows up, NULL for a root), its label, the rule that placed it and
its stored vector. ``chat_tree_conversations``: per conversation, the hash of the turns
the tree was built from and the heads' version, so a rebuild skips what has not
changed (re-importing the same export does nothing) and redoes what has.

Rows of one conversation are replaced in one transaction: a reader sees the old tree
or the new one, never half of either.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from engine.chattree.analysis import ChatTreeModels
from engine.chattree.conversations import Conversation, conversation_hashes, read_conversation
from engine.chattree.insert import JUDGE_WINDOW, TreeTurn, insert_turn

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS chat_tree_conversations (
    conversation_id VARCHAR PRIMARY KEY,
    source VARCHAR NOT NULL,
    title VARCHAR,
    content_hash VARCHAR NOT NULL,
    heads_version VARCHAR NOT NULL,
    turns INTEGER NOT NULL,
    roots INTEGER NOT NULL,
    built_at TIMESTAMP NOT NULL
);
CREATE TABLE IF NOT EXISTS chat_tree_turns (
    conversation_id VARCHAR NOT NULL,
    node_id VARCHAR NOT NULL,           -- the export's id of the user message
    event_id VARCHAR NOT NULL,
    position INTEGER NOT NULL,          -- order of placement (ancestors first)
    above_node_id VARCHAR,              -- the user turn above it on its export branch
    parent_node_id VARCHAR,             -- the turn it follows up (CRyCHIc); NULL: a root
    label VARCHAR NOT NULL,             -- polite | information | instruction
    implicit_follow_up BOOLEAN NOT NULL,
    reason VARCHAR NOT NULL,            -- which insert rule placed it
    score DOUBLE,                       -- the judge's probability, where it decided
    simplified VARCHAR NOT NULL,
    response_event_id VARCHAR,
    response_count INTEGER NOT NULL,    -- >1: the reply was regenerated
    on_current_path BOOLEAN NOT NULL,
    branch_index INTEGER NOT NULL,      -- edits of this prompt: which one, of how many
    branch_count INTEGER NOT NULL,
    vec FLOAT[] NOT NULL,
    PRIMARY KEY (conversation_id, node_id)
);
"""

ProgressCallback = Callable[[int, int], None]  # conversations done, of total


def ensure_tables(store) -> None:
    store.write(lambda con: con.execute(SCHEMA)).result()


def has_tables(con) -> bool:
    return bool(con.execute("SELECT count(*) FROM information_schema.tables "
                            "WHERE table_name = 'chat_tree_turns'").fetchone()[0])


@dataclass(frozen=True, slots=True)
class RebuildStats:
    conversations: int  # with user turns, in the store
    built: int  # (re)built now
    unchanged: int
    removed: int  # trees of conversations no longer in the store
    turns: int  # user turns placed now
    seconds: float
    cancelled: bool = False

    @property
    def ms_per_turn(self) -> float:
        return self.seconds * 1000 / self.turns if self.turns else 0.0

    def summary(self) -> str:
        if self.cancelled:
            return f"chat trees: stopped after {self.built:,} conversations; the rest are built next time"
        if not self.built and not self.removed:
            return f"chat trees: all {self.conversations:,} conversations up to date"
        return (f"chat trees: {self.built:,} conversations ({self.turns:,} prompts) built in "
                f"{self.seconds:.1f} s, {self.unchanged:,} unchanged")


@dataclass(frozen=True, slots=True)
class BuiltTurn:
    node_id: str
    parent: str | None
    label: str
    implicit: bool
    reason: str
    score: float | None
    simplified: str
    vector: list[float]


def build_conversation(conv: Conversation, models: ChatTreeModels) -> list[BuiltTurn]:
    """Place every user turn of ``conv`` against the user turns above it on its branch;
    each turn's vector is made once and reused by every turn below it."""
    built: dict[str, BuiltTurn] = {}
    above = {t.node_id: t.above for t in conv.turns}
    out: list[BuiltTurn] = []
    for turn in conv.turns:
        history: list[TreeTurn] = []
        node = turn.above
        while node is not None and node in built and len(history) < JUDGE_WINDOW:
            history.append(TreeTurn(node, built[node].vector))
            node = above.get(node)
        history.reverse()
        done = insert_turn(turn.prompt, turn.response, history, models)
        p = done.placement
        b = BuiltTurn(turn.node_id, p.parent, p.label, p.analysis.implicit_follow_up, p.reason, p.score,
                      p.analysis.simplified, done.vector)
        built[turn.node_id] = b
        out.append(b)
    return out


def _write_conversation(con, conv: Conversation, built: list[BuiltTurn], version: str) -> None:
    by_node = {t.node_id: t for t in conv.turns}
    rows = []
    for position, b in enumerate(built):
        t = by_node[b.node_id]
        rows.append((conv.conversation_id, b.node_id, t.event_id, position, t.above, b.parent, b.label, b.implicit,
                     b.reason, b.score, b.simplified[:2000], t.response_event_id, t.response_count,
                     t.on_current_path, t.branch_index, t.branch_count, b.vector))
    roots = sum(1 for b in built if b.parent is None)
    con.begin()
    try:
        con.execute("DELETE FROM chat_tree_turns WHERE conversation_id = ?", [conv.conversation_id])
        con.execute("DELETE FROM chat_tree_conversations WHERE conversation_id = ?", [conv.conversation_id])
        if rows:
            con.executemany("INSERT INTO chat_tree_turns VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            rows)
        con.execute("INSERT INTO chat_tree_conversations VALUES (?, ?, ?, ?, ?, ?, ?, now()::TIMESTAMP)",
                    [conv.conversation_id, conv.source, conv.title, conv.content_hash, version, len(rows), roots])
        con.commit()
    except Exception:
        con.rollback()
        raise


def _plan(store, version: str, force: bool):
    ensure_tables(store)
    con = store.reader()
    hashes = conversation_hashes(con)
    stored = dict(((cid, (h, v)) for cid, h, v in con.execute(
        "SELECT conversation_id, content_hash, heads_version FROM chat_tree_conversations").fetchall()))
    gone = [cid for cid in stored if cid not in hashes]
    todo = sorted(cid for cid, (_src, digest) in hashes.items() if force or stored.get(cid) != (digest, version))
    return hashes, stored, gone, todo


def pending(store, version: str) -> int:
    """How many conversations a rebuild with heads ``version`` would (re)build or drop:
    0 means the trees are up to date and no model needs loading."""
    _hashes, _stored, gone, todo = _plan(store, version, False)
    return len(gone) + len(todo)


def rebuild(store, models: ChatTreeModels, *, progress: ProgressCallback | None = None,
            cancel: threading.Event | None = None, force: bool = False) -> RebuildStats:
    """Bring every imported conversation's tree up to date. Conversations whose turns
    and heads are unchanged are skipped (``force`` rebuilds them too); trees of removed
    conversations are dropped. Cancelling keeps every conversation finished so far."""
    t0 = time.perf_counter()
    hashes, stored, gone, todo = _plan(store, models.heads.version, force)
    version = models.heads.version
    con = store.reader()
    if gone:
        def drop(c) -> None:
            c.execute("DELETE FROM chat_tree_turns WHERE list_contains(?, conversation_id)", [gone])
            c.execute("DELETE FROM chat_tree_conversations WHERE list_contains(?, conversation_id)", [gone])
        store.write(drop).result()
    say = progress or (lambda done, total: None)
    turns = built_n = 0
    say(0, len(todo))
    pending = None
    for i, cid in enumerate(todo):
        if cancel is not None and cancel.is_set():
            break
        conv = read_conversation(con, cid, hashes[cid][1])
        built = build_conversation(conv, models)
        if pending is not None:
            pending.result()  # one write in flight: the next conversation is built meanwhile
        pending = store.write(lambda c, conv=conv, built=built: _write_conversation(c, conv, built, version))
        turns += len(built)
        built_n += 1
        say(i + 1, len(todo))
    if pending is not None:
        pending.result()
    cancelled = bool(cancel is not None and cancel.is_set() and built_n < len(todo))
    stats = RebuildStats(conversations=len(hashes), built=built_n, unchanged=len(hashes) - len(todo),
                         removed=len(gone), turns=turns, seconds=time.perf_counter() - t0, cancelled=cancelled)
    log.info("%s", stats.summary())
    return stats
