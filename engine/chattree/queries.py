"""Reading the chat trees back: conversations (searchable across all their text),
one conversation's turns, and its forest of topics. The shells (CLI, Chats tab) only
format what these return."""
from __future__ import annotations

from dataclasses import dataclass, field

from engine.chattree.conversations import CHAT_SOURCES
from engine.chattree.tables import has_tables


@dataclass(frozen=True, slots=True)
class ConversationRow:
    conversation_id: str
    source: str
    title: str
    start: object  # UTC, naive (the store's)
    prompts: int  # user turns with a place in the tree
    topics: int  # roots


@dataclass(slots=True)
class TurnNode:
    conversation_id: str
    node_id: str
    event_id: str
    parent_node_id: str | None
    above_node_id: str | None
    label: str
    implicit_follow_up: bool
    reason: str
    score: float | None
    snippet: str  # the prompt's first words
    start: object
    response_event_id: str | None
    response_count: int
    on_current_path: bool
    branch_index: int
    branch_count: int
    position: int
    children: list["TurnNode"] = field(default_factory=list)

    def to_json(self) -> dict:
        """The shape of ``hindsight chats turns --json``."""
        return {"conversation_id": self.conversation_id, "node_id": self.node_id,
                "parent_node_id": self.parent_node_id, "label": self.label,
                "implicit_follow_up": self.implicit_follow_up}


def conversations(con, search: str | None = None, limit: int | None = None) -> list[ConversationRow]:
    """Imported conversations, newest first; ``search`` matches any of their text."""
    if not has_tables(con):
        return []
    params: list = list(CHAT_SOURCES)
    where = ""
    if search and search.strip():
        where = """AND c.conversation_id IN (
            SELECT json_extract_string(attributes, '$.conversation_id') FROM events
            WHERE kind IN ('chat_turn', 'chat_conversation') AND (title ILIKE ? OR text ILIKE ?))"""
        params += [f"%{search.strip()}%"] * 2
    sql = f"""
        SELECT c.conversation_id, c.source, coalesce(nullif(c.title, ''), 'Untitled conversation'),
               e.start, c.turns, c.roots
        FROM chat_tree_conversations c
        LEFT JOIN (SELECT json_extract_string(attributes, '$.conversation_id') AS cid, min(start) AS start
                   FROM events WHERE kind = 'chat_conversation' AND source IN ({', '.join('?' * len(CHAT_SOURCES))}) GROUP BY cid) e
          ON e.cid = c.conversation_id
        WHERE c.turns > 0 {where}
        ORDER BY e.start DESC NULLS LAST, c.conversation_id
    """
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return [ConversationRow(*r) for r in con.execute(sql, params).fetchall()]


def turns(con, conversation_id: str | None = None) -> list[TurnNode]:
    """User turns in placement order (a conversation's ancestors before descendants);
    all conversations' when ``conversation_id`` is None."""
    if not has_tables(con):
        return []
    where, params = "", []
    if conversation_id is not None:
        where, params = "WHERE t.conversation_id = ?", [conversation_id]
    rows = con.execute(f"""
        SELECT t.conversation_id, t.node_id, t.event_id, t.parent_node_id, t.above_node_id, t.label,
               t.implicit_follow_up, t.reason, t.score, e.title, e.start, t.response_event_id, t.response_count,
               t.on_current_path, t.branch_index, t.branch_count, t.position
        FROM chat_tree_turns t LEFT JOIN events e ON e.id = t.event_id
        {where}
        ORDER BY t.conversation_id, t.position
    """, params).fetchall()
    out = []
    for r in rows:
        title = r[9] or ""
        snippet = title.split(": ", 1)[1] if ": " in title else title  # "You: …"
        out.append(TurnNode(*r[:9], snippet, *r[10:]))
    return out


def forest(nodes: list[TurnNode]) -> list[TurnNode]:
    """The roots (topics) of one conversation, each with its follow-ups as children,
    in placement order. Children lists are filled in place."""
    by_id = {n.node_id: n for n in nodes}
    for n in nodes:
        n.children = []
    roots = []
    for n in nodes:
        parent = by_id.get(n.parent_node_id) if n.parent_node_id else None
        (parent.children if parent is not None else roots).append(n)
    return roots


def branch(nodes: list[TurnNode], node_id: str) -> list[TurnNode]:
    """"Show this branch": the topic ``node_id`` belongs to, from its root down to it
    and every follow-up below it, in placement order."""
    by_id = {n.node_id: n for n in nodes}
    if node_id not in by_id:
        return []
    keep = set()
    node = by_id[node_id]
    while node is not None and node.node_id not in keep:
        keep.add(node.node_id)
        node = by_id.get(node.parent_node_id) if node.parent_node_id else None
    below = [node_id]
    while below:
        nid = below.pop()
        for n in nodes:
            if n.parent_node_id == nid and n.node_id not in keep:
                keep.add(n.node_id)
                below.append(n.node_id)
    return [n for n in nodes if n.node_id in keep]
