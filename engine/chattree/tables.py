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

import pyarrow as pa

from engine.chattree.analysis import ChatTreeModels, analyse_prompts
from engine.chattree.conversations import Conversation, conversation_hashes, read_conversation
from engine.chattree.insert import JUDGE_WINDOW, TreeTurn, place, turn_vectors
from engine.store import transaction

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
    score DOUBLE,                       -- the parent chooser's probability, where it decided
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

_COLUMNS = ("conversation_id", "node_id", "event_id", "position", "above_node_id", "parent_node_id", "label",
            "implicit_follow_up", "reason", "score", "simplified", "response_event_id", "response_count",
            "on_current_path", "branch_index", "branch_count", "vec")
_ARROW = pa.schema([("conversation_id", pa.string()), ("node_id", pa.string()), ("event_id", pa.string()),
                    ("position", pa.int32()), ("above_node_id", pa.string()), ("parent_node_id", pa.string()),
                    ("label", pa.string()), ("implicit_follow_up", pa.bool_()), ("reason", pa.string()),
                    ("score", pa.float64()), ("simplified", pa.string()), ("response_event_id", pa.string()),
                    ("response_count", pa.int32()), ("on_current_path", pa.bool_()), ("branch_index", pa.int32()),
                    ("branch_count", pa.int32()), ("vec", pa.list_(pa.float32()))])

#: Trees written together, in one transaction: at most this many conversations, or
#: what was built in this many seconds (so a cancel loses little).
WRITE_BATCH = 50
WRITE_EVERY_S = 2.0
#: Conversations are analysed together until they hold this many user turns: a few
#: model calls for all of them instead of several per turn.
BUILD_TURNS = 64

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
    return build_conversations([conv], models)[0]


def build_conversations(convs: list[Conversation], models: ChatTreeModels) -> list[list[BuiltTurn]]:
    """Place every user turn of each conversation against the user turns above it on
    its branch. The prompts' analyses and the turns' vectors depend on no other turn,
    so those of all ``convs`` are made first, a few model calls for them all; placing
    then only compares stored vectors."""
    flat = [t for conv in convs for t in conv.turns]
    analysed = analyse_prompts([t.prompt for t in flat], models)
    vectors = iter(turn_vectors([(a, t.response) for a, t in zip(analysed, flat)], models))
    analyses = iter(analysed)
    out: list[list[BuiltTurn]] = []
    for conv in convs:
        built: dict[str, BuiltTurn] = {}
        above = {t.node_id: t.above for t in conv.turns}
        mine: list[BuiltTurn] = []
        for turn in conv.turns:
            history: list[TreeTurn] = []
            node = turn.above
            while node is not None and node in built and len(history) < JUDGE_WINDOW:
                history.append(TreeTurn(node, built[node].vector, built[node].parent))
                node = above.get(node)
            history.reverse()
            p = place(next(analyses), history, models)
            b = BuiltTurn(turn.node_id, p.parent, p.label, p.analysis.implicit_follow_up, p.reason, p.score,
                          p.analysis.simplified, next(vectors))
            built[turn.node_id] = b
            mine.append(b)
        out.append(mine)
    return out


def _rows(conv: Conversation, built: list[BuiltTurn]) -> list[dict]:
    by_node = {t.node_id: t for t in conv.turns}
    rows = []
    for position, b in enumerate(built):
        t = by_node[b.node_id]
        rows.append(dict(zip(_COLUMNS, (
            conv.conversation_id, b.node_id, t.event_id, position, t.above, b.parent, b.label, b.implicit,
            b.reason, b.score, b.simplified[:2000], t.response_event_id, t.response_count, t.on_current_path,
            t.branch_index, t.branch_count, b.vector))))
    return rows


def _write_conversations(con, done: list[tuple[Conversation, list[BuiltTurn]]], version: str) -> None:
    """Replace the trees of ``done`` in one transaction (one Arrow batch: a statement
    per row took ~0.3 s a conversation)."""
    rows = [r for conv, built in done for r in _rows(conv, built)]
    ids = [conv.conversation_id for conv, _ in done]
    heads = [(conv.conversation_id, conv.source, conv.title, conv.content_hash, version, len(built),
              sum(1 for b in built if b.parent is None)) for conv, built in done]
    with transaction(con):
        con.execute("DELETE FROM chat_tree_turns WHERE list_contains(?, conversation_id)", [ids])
        con.execute("DELETE FROM chat_tree_conversations WHERE list_contains(?, conversation_id)", [ids])
        if rows:
            con.register("_chat_tree_rows", pa.Table.from_pylist(rows, schema=_ARROW))
            try:
                con.execute("INSERT INTO chat_tree_turns SELECT * FROM _chat_tree_rows")
            finally:
                con.unregister("_chat_tree_rows")
        con.executemany("INSERT INTO chat_tree_conversations VALUES (?, ?, ?, ?, ?, ?, ?, now()::TIMESTAMP)", heads)


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
        def drop(c) -> None:  # both tables in one transaction: no tree claims turns it lost
            with transaction(c):
                c.execute("DELETE FROM chat_tree_turns WHERE list_contains(?, conversation_id)", [gone])
                c.execute("DELETE FROM chat_tree_conversations WHERE list_contains(?, conversation_id)", [gone])
        store.write(drop).result()
    say = progress or (lambda done, total: None)
    turns = built_n = 0
    say(0, len(todo))
    pending = None
    batch: list[tuple[Conversation, list[BuiltTurn]]] = []
    flushed = time.perf_counter()

    def flush() -> None:
        nonlocal pending, batch, flushed
        if pending is not None:
            pending.result()  # one write in flight: the next conversations are built meanwhile
        done, batch, flushed = batch, [], time.perf_counter()
        pending = store.write(lambda c: _write_conversations(c, done, version)) if done else None

    i = 0
    while i < len(todo):
        if cancel is not None and cancel.is_set():
            break
        group: list[Conversation] = []
        while i < len(todo) and (not group or sum(len(c.turns) for c in group) < BUILD_TURNS):
            group.append(read_conversation(con, todo[i], hashes[todo[i]][1]))
            i += 1
        for conv, built in zip(group, build_conversations(group, models)):
            batch.append((conv, built))
            turns += len(built)
            built_n += 1
        if len(batch) >= WRITE_BATCH or time.perf_counter() - flushed > WRITE_EVERY_S:
            flush()
        say(i, len(todo))
    flush()
    if pending is not None:
        pending.result()
    cancelled = bool(cancel is not None and cancel.is_set() and built_n < len(todo))
    stats = RebuildStats(conversations=len(hashes), built=built_n, unchanged=len(hashes) - len(todo),
                         removed=len(gone), turns=turns, seconds=time.perf_counter() - t0, cancelled=cancelled)
    log.info("%s", stats.summary())
    return stats
