"""Conversations as the insights job reads them from the store: each
``chat_conversation`` event with the text of its turns (the ChatGPT and Claude
importers link turns to their conversation by ``conversation_id``).

Only reads. The order of turns is the store's (their time); a turn's text is what
follows the importer's lead ``... in the conversation "title": ``.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

import duckdb
import orjson

#: A conversation's text beyond this is not read (the opening carries its subject,
#: and spaCy's time grows with the text).
MAX_TEXT_CHARS = 2500


@dataclass(slots=True)
class Conversation:
    id: str  # the chat_conversation event's id
    source: str
    conversation_id: str
    title: str
    start: datetime  # naive UTC, as stored
    tz_offset_min: int | None
    user_text: list[str] = field(default_factory=list)  # the user's turns, in order
    other_text: list[str] = field(default_factory=list)  # the assistant's
    turns: int = 0

    def content_key(self, version: str) -> str:
        h = hashlib.sha256()
        for part in (version, self.id, self.title, str(self.turns), *self.user_text, *self.other_text):
            h.update(part.encode("utf-8", "replace"))
            h.update(b"\x1f")
        return h.hexdigest()[:24]


def _body(text: str) -> str:
    """The turn's own words, without the importer's lead sentence."""
    i = text.find('in the conversation "')
    if i < 0:
        return text
    j = text.find('": ', i)
    return text[j + 3:] if j >= 0 else text


def iter_conversations(con: duckdb.DuckDBPyConnection, *, ids: list[str] | None = None,
                       chunk: int = 200) -> Iterator[Conversation]:
    """Every chat conversation in the store (or those of ``ids``) with its turns' text,
    ``chunk`` conversations per query."""
    where = "kind = 'chat_conversation'"
    rows = con.execute(
        f"SELECT id, source, json_extract_string(attributes, '$.conversation_id'), coalesce(title, ''), "
        f"start, tz_offset_min FROM events WHERE {where} ORDER BY start, id").fetchall()
    if ids is not None:
        wanted = set(ids)
        rows = [r for r in rows if r[0] in wanted]
    for at in range(0, len(rows), chunk):
        part = rows[at:at + chunk]
        convs = {(r[1], r[2]): Conversation(id=r[0], source=r[1], conversation_id=r[2] or "", title=r[3],
                                             start=r[4], tz_offset_min=r[5]) for r in part}
        keys = [f"{s}\x1f{c}" for s, c in convs]
        turns = con.execute(
            "SELECT source, json_extract_string(attributes, '$.conversation_id') AS cid, "
            "json_extract_string(attributes, '$.role') AS role, text, "
            "coalesce(json_extract(attributes, '$.on_current_path')::BOOLEAN, true) AS current "
            "FROM events WHERE kind = 'chat_turn' "
            "AND list_contains(?, source || chr(31) || json_extract_string(attributes, '$.conversation_id')) "
            "ORDER BY start, id", [keys]).fetchall()
        for source, cid, role, text, current in turns:
            conv = convs.get((source, cid))
            if conv is None or not current:
                continue  # an edited-away branch says what the user no longer asked
            conv.turns += 1
            body = _body(text or "").strip()
            if not body:
                continue
            (conv.user_text if role == "user" else conv.other_text).append(body)
        yield from convs.values()


def analysed_text(conv: Conversation, limit: int = MAX_TEXT_CHARS) -> str:
    """What the key phrases are found in: the user's turns first (they say what the
    conversation is about), then the replies, cut at ``limit`` characters."""
    parts, size = [], 0
    for text in [conv.title, *conv.user_text, *conv.other_text]:
        if size >= limit:
            break
        piece = text[:limit - size]
        parts.append(piece)
        size += len(piece) + 1
    return "\n".join(parts)


def attributes_json(value: object) -> str:
    return orjson.dumps(value).decode()
