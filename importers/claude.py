"""Claude data export: ``conversations.json`` from the ``data-…-batch-0000`` folder or
zip (a JSON array of ``{uuid, name, created_at, updated_at, account, chat_messages}``),
and the same objects as Claude's web API returns them (with ``parent_message_uuid``
and ``current_leaf_message_uuid``).

Each message becomes one ``chat_turn`` event with the same attribute names as the
ChatGPT importer, so questions and the tree rebuilding work across both; each
conversation becomes one ``chat_conversation`` event. The export is linear (a
message's parent is the one before it) unless ``parent_message_uuid`` says otherwise.

``projects.json`` (project descriptions and uploaded knowledge documents) and
``users.json`` (the account) are listed as deliberately ignored: they hold no dated
activity of the user's own. This module only reads; it streams one conversation at a
time and never touches the store.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

import orjson

from importers._json import iter_array
from importers.base import UTC, Entry, Event, Importer, ImportIssue, offset_minutes
from importers.chatgpt import bounded_raw, bounded_text, open_json, place_turns, snippet, where_it_broke

log = logging.getLogger(__name__)

SOURCE = "claude"
ROOT_SENTINEL = "00000000-0000-4000-8000-000000000000"
#: Text taken from an attachment's extracted content.
MAX_ATTACHMENT_CHARS = 2_000

_NAME = re.compile(r"^conversations\.json$", re.I)
_BOM = b"\xef\xbb\xbf"
_ROLE = {"human": "user", "assistant": "assistant", "user": "user"}


def recognize(entry: Entry) -> float:
    head = entry.head
    if head.startswith(_BOM):
        head = head[3:]
    body = head.lstrip()
    named = bool(_NAME.match(entry.basename))
    if body[:1] not in (b"[", b"{"):
        return 0.5 if named and not body else 0.0
    if b'"mapping"' in head or b'"current_node"' in head:
        return 0.0  # ChatGPT's conversations.json
    if b'"chat_messages"' in head:
        return 0.95 if named else 0.9
    if b'"sender"' in head and b'"uuid"' in head:
        return 0.85
    if named and b'"uuid"' in head and b'"created_at"' in head:
        # the first KiB may be all one long name or summary
        return 0.7
    return 0.0


def parse_iso(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        dt = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt


def _block_text(block: Mapping, unknown: list[str]) -> tuple[str, str]:
    """(block type, readable text) of one content block."""
    kind = str(block.get("type") or "")
    if kind == "text":
        return kind, str(block.get("text") or "")
    if kind == "thinking":
        thought = block.get("thinking") or block.get("text") or ""
        return kind, f"[Claude's thinking: {thought}]" if thought else ""
    if kind == "tool_use":
        name = block.get("name") or "a tool"
        args = block.get("input")
        shown = orjson.dumps(args, default=str).decode() if args not in (None, {}, "") else ""
        return kind, f"[used {name}{': ' + snippet(shown, 500) if shown else ''}]"
    if kind == "tool_result":
        name = block.get("name") or "the tool"
        pieces: list[str] = []
        content = block.get("content")
        if isinstance(content, str):
            pieces.append(content)
        elif isinstance(content, list):
            for item in content:
                if isinstance(item, Mapping):
                    pieces.extend(str(item[k]) for k in ("title", "text") if isinstance(item.get(k), str) and item[k])
        error = " (failed)" if block.get("is_error") else ""
        joined = snippet(" ".join(pieces), 1_000)
        return kind, f"[result from {name}{error}{': ' + joined if joined else ''}]"
    unknown.append(kind or "untyped block")
    text = block.get("text")
    return kind, text if isinstance(text, str) else ""


def _message_text(message: Mapping) -> tuple[str, list[str], list[str], list[str]]:
    """(text, block types, tool names, unknown block types)."""
    unknown: list[str] = []
    types: list[str] = []
    tools: list[str] = []
    pieces: list[str] = []
    content = message.get("content")
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, Mapping):
                unknown.append(type(block).__name__)
                continue
            kind, text = _block_text(block, unknown)
            types.append(kind)
            if kind in ("tool_use", "tool_result") and isinstance(block.get("name"), str):
                tools.append(block["name"])
            if text.strip():
                pieces.append(text.strip())
    elif content is not None:
        unknown.append("content that is not a list")
    has_text_block = any(t == "text" for t in types)
    plain = message.get("text")
    if isinstance(plain, str) and plain.strip() and not has_text_block:
        # older exports carry only "text"; newer ones repeat the text blocks there
        pieces.append(plain.strip())
    return "\n\n".join(pieces), types, tools, unknown


def _attachments(message: Mapping) -> tuple[list[dict], str]:
    found: list[dict] = []
    texts: list[str] = []
    for att in message.get("attachments") or ():
        if not isinstance(att, Mapping):
            continue
        name = str(att.get("file_name") or "unnamed attachment")
        info: dict[str, Any] = {"name": name}
        if isinstance(att.get("file_size"), (int, float)) and not isinstance(att.get("file_size"), bool):
            info["size"] = int(att["file_size"])
        if isinstance(att.get("file_type"), str) and att["file_type"]:
            info["type"] = att["file_type"]
        found.append(info)
        extracted = att.get("extracted_content")
        if isinstance(extracted, str) and extracted.strip():
            body = extracted.strip()
            if len(body) > MAX_ATTACHMENT_CHARS:
                body = body[:MAX_ATTACHMENT_CHARS] + f"… [{len(extracted)} characters in all]"
            texts.append(f"[attachment {name}: {body}]")
    for f in message.get("files") or message.get("files_v2") or ():
        if isinstance(f, Mapping) and f.get("file_name"):
            name = str(f["file_name"])
            if not any(a["name"] == name for a in found):
                found.append({"name": name})
                texts.append(f"[file {name}]")
    return found, "\n".join(texts)


def read(entry: Entry) -> Iterator[Event | ImportIssue]:
    zone = entry.context.home_tz
    head = entry.head[3:] if entry.head.startswith(_BOM) else entry.head
    first = head.lstrip()[:1]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        yield ImportIssue("start", "the file is UTF-16 encoded; Claude exports are UTF-8 "
                                   "(was it re-saved by an editor?) - save it as UTF-8 and import again")
        return
    if first not in (b"[", b"{"):
        what = "empty" if not head.strip() else f"starts with {head.lstrip()[:20]!r}"
        yield ImportIssue("start", f"not a JSON array of Claude conversations: the file is {what}")
        return
    prefix = "item" if first == b"[" else ""  # one conversation object from the web API
    done = 0
    with open_json(entry) as f:
        for item in iter_array(f, prefix):
            if isinstance(item, ImportIssue):
                yield where_it_broke(item, done)
                return
            index, conv = item
            done = index + 1
            try:
                yield from _read_conversation(index, conv, zone)
            except (TypeError, ValueError, KeyError, AttributeError) as exc:
                log.debug("conversation %d failed", index + 1, exc_info=True)
                yield ImportIssue(f"item {index + 1}", f"could not read this conversation: "
                                                       f"{type(exc).__name__}: {exc}")


def _read_conversation(index: int, conv: Any, zone) -> Iterator[Event | ImportIssue]:
    loc = f"item {index + 1}"
    if not isinstance(conv, Mapping):
        yield ImportIssue(loc, f"expected a conversation object, found {type(conv).__name__}")
        return
    cid = conv.get("uuid") if isinstance(conv.get("uuid"), str) and conv.get("uuid") else ""
    if cid:
        loc = f"conversation {cid} (item {index + 1})"
    raw_messages = conv.get("chat_messages")
    if not isinstance(raw_messages, list):
        yield ImportIssue(loc, "the conversation has no 'chat_messages' list")
        return
    if not cid:
        yield ImportIssue(loc, "the conversation has no uuid; its messages are keyed by content", kept=True)
    title = conv.get("name") if isinstance(conv.get("name"), str) else ""
    shown_title = title.strip() or "Untitled conversation"
    conv_model = conv.get("model") if isinstance(conv.get("model"), str) else ""
    conv_start = parse_iso(conv.get("created_at"))
    conv_end = parse_iso(conv.get("updated_at"))

    messages: dict[str, Mapping] = {}
    parents: dict[str, str | None] = {}
    previous: str | None = None
    for n, message in enumerate(raw_messages, start=1):
        if not isinstance(message, Mapping):
            yield ImportIssue(f"{loc}, message {n}", f"expected a message object, found {type(message).__name__}")
            continue
        mid = message.get("uuid") if isinstance(message.get("uuid"), str) and message.get("uuid") else f"#{n}"
        if mid in messages:
            yield ImportIssue(f"{loc}, message {mid}", "the same message uuid appears twice; kept the first")
            continue
        if "parent_message_uuid" in message:
            parent = message.get("parent_message_uuid")
            parents[mid] = None if not isinstance(parent, str) or parent in ("", ROOT_SENTINEL) else parent
        else:
            parents[mid] = previous
        messages[mid] = message
        previous = mid

    texts: dict[str, tuple[str, list[str], list[str], list[dict]]] = {}
    for mid, message in messages.items():
        text, types, tools, unknown = _message_text(message)
        found, att_text = _attachments(message)
        if unknown:
            yield ImportIssue(f"{loc}, message {mid}",
                              f"unknown content block type {', '.join(sorted(set(unknown)))!r}"
                              + ("; imported the text it carries" if text.strip() else ""))
        full = "\n\n".join(p for p in (text, att_text) if p)
        if full.strip():
            texts[mid] = (full, types, tools, found)

    current = conv.get("current_leaf_message_uuid")
    current = current if isinstance(current, str) and current else None
    if current is None and not any("parent_message_uuid" in m for m in messages.values()):
        current = previous  # a linear export: the last message is the leaf
    places, tree_issues = place_turns(parents, {}, texts, current, loc)
    yield from tree_issues

    if conv_start is None:
        stamps = [t for t in (parse_iso(m.get("created_at")) for m in messages.values()) if t]
        conv_start = min(stamps) if stamps else conv_end
    if conv_start is None:
        yield ImportIssue(loc, "the conversation and its messages have no usable timestamps")
        return

    times: dict[str, datetime] = {}
    counts = {"user": 0, "assistant": 0}
    first_prompt, first_depth = "", -1
    emitted = 0
    for mid, message in messages.items():
        own = parse_iso(message.get("created_at"))
        if own is None and message.get("created_at") is not None:
            yield ImportIssue(f"{loc}, message {mid}", f"created_at {message.get('created_at')!r} is not an "
                                                       "ISO time; used the previous message's time instead", kept=True)
        parent = parents.get(mid)
        # no created_at: the parent's time, else the conversation's
        times[mid] = own or (times.get(parent) if parent else None) or conv_start
        place = places.get(mid)
        if place is None:
            continue
        text, types, tools, found = texts[mid]
        sender = str(message.get("sender") or "").lower()
        role = _ROLE.get(sender, sender or "unknown")
        start = times[mid]
        end = parse_iso(message.get("updated_at"))
        if end is not None and end < start:
            end = None
        body, cut = bounded_text(text)
        if role == "user":
            label, lead = "You", "You asked Claude"
        elif role == "assistant":
            label, lead = "Claude", "Claude answered"
        else:
            label, lead = role.title(), f"A message from {role} said"
        attrs: dict[str, Any] = {
            "conversation_id": cid, "conversation_title": title, "node_id": mid,
            "parent_id": place.parent_id, "role": role, "author_name": "",
            "model": conv_model if role == "assistant" else "",
            "content_type": "+".join(dict.fromkeys(types)) if types else "text",
            "turn_index": place.turn_index, "on_current_path": place.on_current_path,
            "branch_index": place.branch_index, "branch_count": place.branch_count,
            "sibling_count": place.branch_count - 1, "child_count": place.child_count,
            "hidden": False, "recipient": "", "status": str(message.get("stop_reason") or ""),
            "content_chars": len(text),
        }
        if "thinking" in types:
            attrs["reasoning"] = True
        if tools:
            attrs["tools"] = sorted(set(tools))
        if found:
            attrs["attachments"] = [a["name"] for a in found]
            attrs["attachment_sizes"] = [a.get("size") for a in found]
        if cut:
            attrs["text_truncated"] = True
        if role in counts:
            counts[role] += 1
        if role == "user" and place.on_current_path and (first_depth < 0 or place.turn_index < first_depth):
            first_prompt, first_depth = text, place.turn_index
        emitted += 1
        yield Event(
            source=SOURCE, kind="chat_turn", start=start, end=end,
            title=f"{label}: {snippet(text)}",
            text=f'{lead} in the conversation "{shown_title}": {body}',
            attributes=attrs, tz_offset_min=offset_minutes(start, zone),
            key=f"{cid}/{mid}" if cid else "", locator=f"{loc}, message {mid}",
            raw=bounded_raw(message),
        )

    if conv_end is not None and conv_end < conv_start:
        conv_end = None
    account = conv.get("account")
    attrs = {
        "conversation_id": cid, "conversation_title": title, "message_count": emitted,
        "user_message_count": counts["user"], "assistant_message_count": counts["assistant"],
        "model": conv_model, "is_starred": bool(conv.get("is_starred")),
        "account_id": account.get("uuid", "") if isinstance(account, Mapping) else "",
    }
    if isinstance(conv.get("project_uuid"), str):
        attrs["project_id"] = conv["project_uuid"]
    text = (f'Claude conversation "{shown_title}" with {emitted} messages '
            f'({counts["user"]} from you, {counts["assistant"]} from Claude).')
    if isinstance(conv.get("summary"), str) and conv["summary"].strip():
        text += f" Summary: {snippet(conv['summary'], 500)}"
    if first_prompt:
        text += f" It began with: {snippet(first_prompt, 300)}"
    summary = {k: v for k, v in conv.items() if k != "chat_messages"}
    summary["chat_messages"] = f"{len(raw_messages)} messages"
    yield Event(
        source=SOURCE, kind="chat_conversation", start=conv_start, end=conv_end,
        title=shown_title, text=text, attributes=attrs,
        tz_offset_min=offset_minutes(conv_start, zone),
        key=f"conversation/{cid}" if cid else "", locator=loc, raw=bounded_raw(summary),
    )


IMPORTERS = (
    Importer(
        name="claude", title="Claude conversations", version="1", source=SOURCE,
        recognize=recognize, read=read,
        description="conversations.json from a Claude data export (data-…-batch-0000)",
        ignores=("users.json", "projects.json"),
    ),
)
