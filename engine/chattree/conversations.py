"""Imported conversations (ChatGPT, Claude) read back from the store as the user
turns that tree building places.

An importer keeps every message node of the export's ``mapping`` as a ``chat_turn``
event whose ``parent_id`` is the nearest turn above it; edits and regenerations are
sibling branches there. A user turn's history is the user turns on its own branch
above it, as the person saw the chat when they wrote it; its response is the assistant
reply below it (the one on the export's current path where it was regenerated).

This module reads only; it never writes the store.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import orjson

CHAT_SOURCES = ("chatgpt", "claude")
#: Content types of user nodes that are not prompts (ChatGPT's custom instructions).
NOT_PROMPTS = {"user_editable_context"}


@dataclass(slots=True)
class UserTurn:
    event_id: str
    node_id: str
    prompt: str
    start: object
    turn_index: int
    above: str | None  # the node id of the user turn above it on its branch
    on_current_path: bool
    branch_index: int
    branch_count: int
    response: str = ""
    response_event_id: str | None = None
    response_count: int = 0  # replies to this prompt: more than one where it was regenerated
    on_current_path_reply: bool = False


@dataclass(slots=True)
class Conversation:
    conversation_id: str
    source: str
    title: str
    content_hash: str
    turns: list[UserTurn] = field(default_factory=list)  # ancestors before descendants


def turn_body(text: str, title: str) -> str:
    """The message itself: the importers prefix the turn's text with who said it in
    which conversation (``You asked ChatGPT in the conversation "T": ``)."""
    shown = title.strip() or "Untitled conversation"
    marker = f' in the conversation "{shown}": '
    at = text.find(marker)
    return text[at + len(marker):] if at >= 0 else text


def conversation_hashes(con) -> dict[str, tuple[str, str]]:
    """conversation id -> (source, a hash of its turns' ids and texts): what changes
    when a re-import brings new or edited turns."""
    rows = con.execute(f"""
        SELECT json_extract_string(attributes, '$.conversation_id') AS cid, any_value(source),
               md5(string_agg(id || ':' || md5(coalesce(text, '')), ',' ORDER BY id))
        FROM events WHERE kind = 'chat_turn' AND source IN ({', '.join('?' * len(CHAT_SOURCES))})
        GROUP BY cid HAVING cid IS NOT NULL AND cid <> ''
    """, list(CHAT_SOURCES)).fetchall()
    return {cid: (source, digest) for cid, source, digest in rows}


def read_conversation(con, conversation_id: str, content_hash: str = "") -> Conversation:
    rows = con.execute("""
        SELECT id, source, text, start, attributes FROM events
        WHERE kind = 'chat_turn' AND json_extract_string(attributes, '$.conversation_id') = ?
        ORDER BY start, id
    """, [conversation_id]).fetchall()
    conv = Conversation(conversation_id, rows[0][1] if rows else "", "", content_hash)
    nodes: dict[str, dict] = {}
    order: list[str] = []
    for event_id, source, text, start, attrs in rows:
        a = orjson.loads(attrs) if isinstance(attrs, (str, bytes)) else (attrs or {})
        nid = str(a.get("node_id") or event_id)
        conv.title = conv.title or str(a.get("conversation_title") or "")
        nodes[nid] = {"event_id": event_id, "text": text or "", "start": start, "a": a}
        order.append(nid)

    def is_prompt(nid: str) -> bool:
        a = nodes[nid]["a"]
        return (a.get("role") == "user" and not a.get("hidden") and a.get("content_type") not in NOT_PROMPTS
                and bool(turn_body(nodes[nid]["text"], conv.title).strip()))

    def user_above(nid: str) -> str | None:
        seen: set[str] = set()
        node = nodes[nid]["a"].get("parent_id")
        while node is not None and node in nodes and node not in seen:
            if is_prompt(node):
                return node
            seen.add(node)
            node = nodes[node]["a"].get("parent_id")
        return None

    turns: dict[str, UserTurn] = {}
    for nid in order:
        if is_prompt(nid):
            n, a = nodes[nid], nodes[nid]["a"]
            turns[nid] = UserTurn(event_id=n["event_id"], node_id=nid, prompt=turn_body(n["text"], conv.title),
                                  start=n["start"], turn_index=int(a.get("turn_index") or 0), above=user_above(nid),
                                  on_current_path=bool(a.get("on_current_path")),
                                  branch_index=int(a.get("branch_index") or 1),
                                  branch_count=int(a.get("branch_count") or 1))
    for nid in order:  # each prompt's reply: the first assistant node below it, current path first
        n, a = nodes[nid], nodes[nid]["a"]
        if a.get("role") != "assistant":
            continue
        owner = user_above(nid)
        if owner is None or owner not in turns:
            continue
        t = turns[owner]
        t.response_count += 1 if nodes.get(a.get("parent_id") or "", {}).get("a", {}).get("role") == "user" else 0
        if t.response_event_id is None or (a.get("on_current_path") and not t.on_current_path_reply):
            t.response = turn_body(n["text"], conv.title)
            t.response_event_id = n["event_id"]
            t.on_current_path_reply = bool(a.get("on_current_path"))
    # ancestors first: a turn's history is placed before it
    conv.turns = sorted(turns.values(), key=lambda t: (t.turn_index, str(t.start), t.node_id))
    return conv


def read_conversations(con, ids: list[str], hashes: dict[str, tuple[str, str]]) -> Iterator[Conversation]:
    for cid in ids:
        yield read_conversation(con, cid, hashes.get(cid, ("", ""))[1])
