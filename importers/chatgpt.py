"""ChatGPT data export: ``conversations.json`` (one JSON array of conversations) and
the newer split form ``conversations-000.json``, ``conversations-001.json``, ...

Every conversation keeps its whole ``mapping`` tree: edits and regenerations are
sibling branches, and each message node becomes one ``chat_turn`` event whose
``parent_id`` names the nearest ancestor that is itself an event, so later stages
can rebuild the tree (which turn follows up which). Nodes on the path from the root
to ``current_node`` are marked ``on_current_path``. Each conversation also becomes one
``chat_conversation`` event.

The file is streamed one conversation at a time (ijson), so memory is bounded by the
largest single conversation, not by the export. This module only reads: it never
touches the store, and it never guesses at content it does not know — unknown content
types are reported as issues (and still imported when they carry text).

The tree helpers (:func:`place_turns`) are shared with the Claude importer, whose web
API shape has the same parent/leaf structure.
"""
from __future__ import annotations

import hashlib
import io
import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any

import orjson

from importers._json import iter_array
from importers.base import UTC, Entry, Event, Importer, ImportIssue, offset_minutes

log = logging.getLogger(__name__)

SOURCE = "chatgpt"
#: A turn's text is cut here; the full length is kept in ``content_chars``.
MAX_TEXT_CHARS = 50_000
#: ``raw`` (for 'show source') is cut here.
MAX_RAW_CHARS = 16_000

_NAME = re.compile(r"^conversations(-\d+)?\.json$", re.I)
_WRAPPED = re.compile(rb'^\s*\{\s*"conversations"\s*:')
_BOM = b"\xef\xbb\xbf"

_ROLES = {"user", "assistant", "tool", "system"}
# Content types that are the model's own reasoning: kept, but marked.
_REASONING_TYPES = {"thoughts", "reasoning_recap"}


# ---- shared tree logic --------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TurnPlace:
    """Where one turn sits in its conversation tree, counted over turns only
    (scaffolding nodes that are not events are looked through)."""

    parent_id: str | None  # nearest ancestor that is a turn
    turn_index: int  # turns above it on its branch (0 = first turn)
    branch_index: int  # 1-based position among the alternatives at this point
    branch_count: int  # alternatives at this point (edits/regenerations), itself included
    child_count: int  # turns that follow up this one (>1: a branch point)
    on_current_path: bool


def place_turns(parents: Mapping[str, str | None], children: Mapping[str, list[str]],
                is_turn: Iterable[str], current: str | None,
                locate: str) -> tuple[dict[str, TurnPlace], list[ImportIssue]]:
    """Place every turn of one conversation tree.

    ``parents`` maps each node (in source order) to its parent; ``children`` gives the
    source's order of children where it has one (parent links win when they disagree).
    ``current`` is the active leaf; when it is missing the newest branch (the last
    child at each fork) counts as current, which is what the apps show by default.
    ``locate`` prefixes issue locators. Nodes caught in a parent cycle are reported
    and left out.
    """
    issues: list[ImportIssue] = []
    turns = set(is_turn)
    kids: dict[str | None, list[str]] = {}
    for node, parent in parents.items():
        if parent is not None and parent not in parents:
            issues.append(ImportIssue(f"{locate}, node {node}",
                                      f"parent {parent} is not in the conversation; treated as a root", kept=True))
            parent = None
        if parent == node:
            parent = None
        kids.setdefault(parent, []).append(node)
    for parent, listed in kids.items():
        if parent is None:
            continue
        order = {c: i for i, c in enumerate(children.get(parent) or ())}
        listed.sort(key=lambda c: order.get(c, len(order)))

    # Depth-first from the roots, remembering the nearest turn above.
    turn_parent: dict[str, str | None] = {}
    depth: dict[str, int] = {}
    turn_kids: dict[str | None, list[str]] = {}
    stack: list[tuple[str, str | None, int]] = [(n, None, 0) for n in reversed(kids.get(None, []))]
    seen: set[str] = set()
    while stack:
        node, above, d = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if node in turns:
            turn_parent[node] = above
            depth[node] = d
            turn_kids.setdefault(above, []).append(node)
            above, d = node, d + 1
        for child in reversed(kids.get(node, [])):
            stack.append((child, above, d))
    stuck = [n for n in parents if n not in seen]
    if stuck:
        issues.append(ImportIssue(f"{locate}, node {stuck[0]}",
                                  f"{len(stuck)} node(s) form a parent cycle and were left out: "
                                  + ", ".join(stuck[:5])))

    path: set[str] = set()
    leaf = current
    if current is not None and current not in parents:
        issues.append(ImportIssue(f"{locate}", f"current node {current} is not in the conversation; "
                                               "the newest branch is marked as current instead"))
        leaf = None
    if leaf is None:
        roots = kids.get(None, [])
        leaf = roots[-1] if roots else None
        while leaf is not None and kids.get(leaf):
            leaf = kids[leaf][-1]
    while leaf is not None and leaf not in path:
        path.add(leaf)
        leaf = parents.get(leaf)
        if leaf is not None and leaf not in parents:
            break

    places: dict[str, TurnPlace] = {}
    for above, group in turn_kids.items():
        for i, node in enumerate(group, start=1):
            places[node] = TurnPlace(parent_id=above, turn_index=depth[node], branch_index=i,
                                     branch_count=len(group), child_count=len(turn_kids.get(node, ())),
                                     on_current_path=node in path)
    return places, issues


def snippet(text: str, limit: int = 80) -> str:
    """The first line of ``text``, cut to ``limit`` characters at a word boundary."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[:limit].rsplit(" ", 1)[0] or line[:limit]
    return cut + "…"


def bounded_raw(record: Any) -> str:
    raw = orjson.dumps(record, default=str).decode()
    if len(raw) > MAX_RAW_CHARS:
        raw = raw[:MAX_RAW_CHARS] + f"…[cut, {len(raw)} characters in all]"
    return raw


def bounded_text(text: str) -> tuple[str, bool]:
    if len(text) > MAX_TEXT_CHARS:
        return text[:MAX_TEXT_CHARS] + "…", True
    return text, False


class _SkipBOM(io.RawIOBase):
    """A byte stream with a leading UTF-8 BOM removed (yajl rejects it); works on
    streams that cannot seek, such as the pipeline's counting reader."""

    def __init__(self, raw: IO[bytes]):
        self._raw = raw
        head = raw.read(3)
        self._pending = b"" if head == _BOM else head

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self._pending:
            n = min(len(b), len(self._pending))
            b[:n] = self._pending[:n]
            self._pending = self._pending[n:]
            return n
        data = self._raw.read(len(b))
        n = len(data)
        b[:n] = data
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


def open_json(entry: Entry) -> IO[bytes]:
    return io.BufferedReader(_SkipBOM(entry.open()), buffer_size=1 << 16)


def where_it_broke(issue: ImportIssue, done: int) -> ImportIssue:
    """Name the conversation the parser was in when the JSON broke (1-based)."""
    if issue.locator == "start":
        return issue
    return ImportIssue(f"item {done + 1}", f"{issue.reason}; the {done} conversation(s) before it "
                                           "were imported")


def parse_epoch(value: Any) -> datetime | None:
    """ChatGPT times are float epoch seconds (UTC); some re-exports use ISO text."""
    if value is None or isinstance(value, bool):
        return None
    try:
        if isinstance(value, (int, float)):
            return datetime.fromtimestamp(float(value), UTC)
        if isinstance(value, str) and value.strip():
            text = value.strip()
            try:
                return datetime.fromtimestamp(float(text), UTC)
            except ValueError:
                dt = datetime.fromisoformat(text)
                return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt
    except (ValueError, OverflowError, OSError):
        return None
    return None


# ---- recognition --------------------------------------------------------------------

def recognize(entry: Entry) -> float:
    head = entry.head
    if head.startswith(_BOM):
        head = head[3:]
    body = head.lstrip()
    named = bool(_NAME.match(entry.basename))
    shaped = body[:1] in (b"[", b"{")
    has_tree = b'"mapping"' in head or b'"current_node"' in head
    has_times = b'"create_time"' in head or b'"update_time"' in head
    if shaped and has_tree:
        return 0.95 if named else 0.9
    if b'"chat_messages"' in head or b'"sender"' in head:
        return 0.0  # Claude's conversations.json
    if named:
        if not body:
            return 0.6
        if head.startswith((b"\xff\xfe", b"\xfe\xff")):
            return 0.6  # UTF-16: claim it so the user hears why it cannot be read
        if shaped and has_times:
            return 0.75
        # a conversations.json whose first KiB is all one long title or message
        return 0.55 if shaped else 0.0
    return 0.0


# ---- content ------------------------------------------------------------------------

def _attachment_names(message: Mapping) -> dict[str, str]:
    names: dict[str, str] = {}
    meta = message.get("metadata")
    if isinstance(meta, Mapping):
        for att in meta.get("attachments") or ():
            if isinstance(att, Mapping) and att.get("id") and att.get("name"):
                names[str(att["id"])] = str(att["name"])
    return names


def _asset_id(pointer: Any) -> str:
    # "file-service://file-AbC" or "sediment://file_00ab..." → the attachment id
    return str(pointer).rsplit("://", 1)[-1] if pointer else ""


def _part_text(part: Any, names: dict[str, str], unknown: list[str]) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, Mapping):
        return "" if part is None else str(part)
    kind = part.get("content_type") or ""
    if kind == "image_asset_pointer":
        name = names.get(_asset_id(part.get("asset_pointer")))
        meta = part.get("metadata")
        dalle = meta.get("dalle") if isinstance(meta, Mapping) else None
        if isinstance(dalle, Mapping) and dalle.get("prompt"):
            return f"[generated image: {dalle['prompt']}]"
        return f"[image: {name}]" if name else "[image]"
    if kind == "audio_transcription":
        return str(part.get("text") or "")
    if kind in ("audio_asset_pointer", "real_time_user_audio_video_asset_pointer"):
        return "[audio]"
    if isinstance(part.get("text"), str):
        unknown.append(kind or "untyped part")
        return part["text"]
    unknown.append(kind or "untyped part")
    return f"[{kind}]" if kind else ""


def content_text(message: Mapping) -> tuple[str, str, list[str]]:
    """``(content_type, text, unknown)`` of one message; ``unknown`` names content or
    part types this importer does not know (their text, if any, is still taken)."""
    content = message.get("content")
    if not isinstance(content, Mapping):
        return "", "", ["missing content"]
    ctype = str(content.get("content_type") or "")
    unknown: list[str] = []
    names = _attachment_names(message)

    def field(name: str) -> str:
        value = content.get(name)
        return value if isinstance(value, str) else ""

    if ctype in ("text", "multimodal_text"):
        parts = content.get("parts")
        pieces = [_part_text(p, names, unknown) for p in parts] if isinstance(parts, list) else []
        text = "\n".join(p for p in pieces if p)
    elif ctype in ("code", "execution_output"):
        text = field("text")
    elif ctype == "tether_browsing_display":
        text = "\n".join(p for p in (field("summary"), field("result")) if p)
    elif ctype in ("tether_quote", "sonic_webpage"):
        head = " – ".join(p for p in (field("title"), field("url")) if p)
        text = "\n".join(p for p in (head, field("text")) if p)
    elif ctype == "system_error":
        text = ": ".join(p for p in (field("name"), field("text")) if p)
    elif ctype == "thoughts":
        pieces = []
        for t in content.get("thoughts") or ():
            if isinstance(t, Mapping):
                pieces.extend(str(t[k]) for k in ("summary", "content") if t.get(k))
        text = "\n".join(pieces)
    elif ctype == "reasoning_recap":
        text = field("content")
    elif ctype == "user_editable_context":
        text = "\n".join(p for p in (field("user_profile"), field("user_instructions")) if p)
    elif ctype == "model_editable_context":
        text = field("model_set_context")
    else:
        unknown.append(ctype or "no content_type")
        pieces = [field(k) for k in ("text", "result", "content", "summary")]
        parts = content.get("parts")
        if isinstance(parts, list):
            pieces.extend(_part_text(p, names, []) for p in parts)
        text = "\n".join(p for p in pieces if p)
    return ctype, text, unknown


def _speaker(role: str, author_name: str, recipient: str, ctype: str, model: str) -> tuple[str, str]:
    """(short label for titles, the sentence's lead-in)."""
    bot = f"ChatGPT ({model})" if model else "ChatGPT"
    if ctype in _REASONING_TYPES:
        return "ChatGPT (thinking)", f"{bot} reasoned"
    if role == "user":
        if ctype == "user_editable_context":
            return "Your custom instructions", "Your custom instructions for ChatGPT said"
        return "You", "You asked ChatGPT"
    if role == "assistant":
        if recipient and recipient != "all":
            return f"ChatGPT → {recipient}", f"{bot} called the {recipient} tool"
        return "ChatGPT", f"{bot} answered"
    if role == "tool":
        name = author_name or "a"
        return f"Tool {author_name}".strip(), f"The {name} tool returned"
    if role == "system":
        return "System", "A system message said"
    return role or "Unknown", f"A message from {role or 'an unknown author'} said"


# ---- reading ------------------------------------------------------------------------

def _conversation_stream(entry: Entry) -> Iterator[tuple[int, Any] | ImportIssue]:
    head = entry.head
    body = head[3:] if head.startswith(_BOM) else head
    first = body.lstrip()[:1]
    if first == b"[":
        prefix = "item"
    elif first == b"{":
        # {"conversations": [...]} from some re-exporters, else one conversation object
        prefix = "conversations.item" if _WRAPPED.match(body) else ""
    elif head.startswith((b"\xff\xfe", b"\xfe\xff")):
        yield ImportIssue("start", "the file is UTF-16 encoded; ChatGPT and Claude exports are UTF-8 "
                                   "(was it re-saved by an editor?) - save it as UTF-8 and import again")
        return
    else:
        what = "empty" if not body.strip() else f"starts with {body.lstrip()[:20]!r}"
        yield ImportIssue("start", f"not a JSON array of ChatGPT conversations: the file is {what}")
        return
    with open_json(entry) as f:
        yield from iter_array(f, prefix)


def read(entry: Entry) -> Iterator[Event | ImportIssue]:
    zone = entry.context.home_tz
    done = 0
    for item in _conversation_stream(entry):
        if isinstance(item, ImportIssue):
            yield where_it_broke(item, done)
            return
        index, conv = item
        done = index + 1
        try:
            yield from _read_conversation(index, conv, zone)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            # A shape no check above foresaw: lose this conversation, not the file.
            log.debug("conversation %d failed", index + 1, exc_info=True)
            yield ImportIssue(f"item {index + 1}", f"could not read this conversation: "
                                                   f"{type(exc).__name__}: {exc}")


def _conversation_id(conv: Mapping) -> str:
    cid = conv.get("conversation_id") or conv.get("id")
    if isinstance(cid, str) and cid:
        return cid
    basis = orjson.dumps([conv.get("create_time"), conv.get("title")], default=str)
    return "anon-" + hashlib.blake2b(basis, digest_size=8).hexdigest()


def _read_conversation(index: int, conv: Any, zone) -> Iterator[Event | ImportIssue]:
    loc = f"item {index + 1}"
    if not isinstance(conv, Mapping):
        yield ImportIssue(loc, f"expected a conversation object, found {type(conv).__name__}")
        return
    mapping = conv.get("mapping")
    cid = _conversation_id(conv)
    loc = f"conversation {cid} (item {index + 1})"
    if not isinstance(mapping, Mapping):
        yield ImportIssue(loc, "the conversation has no 'mapping' of messages")
        return
    title = conv.get("title") if isinstance(conv.get("title"), str) else ""
    shown_title = title.strip() or "Untitled conversation"
    default_model = conv.get("default_model_slug") if isinstance(conv.get("default_model_slug"), str) else ""

    # Parent links and messages, in source order.
    parents: dict[str, str | None] = {}
    children: dict[str, list[str]] = {}
    messages: dict[str, Mapping] = {}
    for key, node in mapping.items():
        if not isinstance(node, Mapping):
            yield ImportIssue(f"{loc}, node {key}", f"expected a node object, found {type(node).__name__}")
            continue
        nid = str(node.get("id") or key)
        parent = node.get("parent")
        parents[nid] = str(parent) if isinstance(parent, str) and parent else None
        kids = node.get("children")
        children[nid] = [str(k) for k in kids if isinstance(k, str)] if isinstance(kids, list) else []
        if isinstance(node.get("message"), Mapping):
            messages[nid] = node["message"]
        elif node.get("message") is not None:
            yield ImportIssue(f"{loc}, node {nid}", "the node's message is not an object")

    # Which nodes carry content (the others are scaffolding: root, empty system prompt).
    contents: dict[str, tuple[str, str, list[str]]] = {}
    for nid, message in messages.items():
        ctype, text, unknown = content_text(message)
        if unknown:
            yield ImportIssue(f"{loc}, node {nid}",
                              f"unknown content type {', '.join(sorted(set(unknown)))!r}"
                              + ("; imported the text it carries" if text.strip() else "; it has no text to import"),
                              kept=bool(text.strip()))
        if text.strip():
            contents[nid] = (ctype, text, unknown)

    current = conv.get("current_node") if isinstance(conv.get("current_node"), str) else None
    places, tree_issues = place_turns(parents, children, contents, current, loc)
    yield from tree_issues

    conv_start = parse_epoch(conv.get("create_time"))
    conv_end = parse_epoch(conv.get("update_time"))
    times: dict[str, datetime | None] = {}
    bad_times: list[str] = []

    def time_of(nid: str) -> datetime | None:
        # A message without create_time takes its parent's time, else the conversation's.
        chain: list[str] = []
        node: str | None = nid
        found: datetime | None = None
        while node is not None and node not in chain:
            if node in times:
                found = times[node]
                break
            chain.append(node)
            message = messages.get(node)
            found = parse_epoch(message.get("create_time")) if message is not None else None
            if found is None and message is not None and message.get("create_time") is not None:
                bad_times.append(node)
            if found is not None:
                break
            node = parents.get(node)
        found = found or conv_start
        for n in chain:
            times[n] = found
        return found

    if conv_start is None:
        stamps = [t for t in (time_of(n) for n in contents) if t is not None]
        conv_start = min(stamps) if stamps else conv_end
    if conv_start is None:
        yield ImportIssue(loc, "the conversation and its messages have no usable timestamps")
        return

    for nid in contents:
        time_of(nid)
    for nid in bad_times:
        yield ImportIssue(f"{loc}, node {nid}", f"create_time {messages[nid].get('create_time')!r} is not "
                                                "a time; used the parent's time instead", kept=True)
    counts = {"user": 0, "assistant": 0}
    models: dict[str, int] = {}
    first_prompt, first_depth = "", -1
    turns_emitted = 0
    for nid in parents:  # source order
        place = places.get(nid)
        if place is None:
            continue
        message = messages[nid]
        ctype, text, unknown = contents[nid]
        author = message.get("author") if isinstance(message.get("author"), Mapping) else {}
        role = str(author.get("role") or "").lower()
        author_name = author.get("name") if isinstance(author.get("name"), str) else ""
        meta = message.get("metadata") if isinstance(message.get("metadata"), Mapping) else {}
        model = meta.get("model_slug") if isinstance(meta.get("model_slug"), str) else ""
        if role == "assistant":
            model = model or default_model
        recipient = message.get("recipient") if isinstance(message.get("recipient"), str) else ""
        start = time_of(nid) or conv_start
        end = parse_epoch(message.get("update_time"))
        if end is not None and end < start:
            end = None
        body, cut = bounded_text(text.strip())
        label, lead = _speaker(role, author_name or "", recipient, ctype, model)
        attrs: dict[str, Any] = {
            "conversation_id": cid, "conversation_title": title, "node_id": nid,
            "parent_id": place.parent_id, "role": role if role in _ROLES else (role or "unknown"),
            "author_name": author_name or "", "model": model, "content_type": ctype,
            "turn_index": place.turn_index, "on_current_path": place.on_current_path,
            "branch_index": place.branch_index, "branch_count": place.branch_count,
            "sibling_count": place.branch_count - 1, "child_count": place.child_count,
            "hidden": bool(meta.get("is_visually_hidden_from_conversation")),
            "recipient": recipient, "status": message.get("status") if isinstance(message.get("status"), str) else "",
            "content_chars": len(text),
        }
        if ctype in _REASONING_TYPES:
            attrs["reasoning"] = True
        if ctype == "code" and isinstance(message["content"].get("language"), str):
            attrs["language"] = message["content"]["language"]
        mid = message.get("id")
        if isinstance(mid, str) and mid and mid != nid:
            attrs["message_id"] = mid
        names = list(_attachment_names(message).values())
        if names:
            attrs["attachments"] = names
        if cut:
            attrs["text_truncated"] = True
        if unknown:
            attrs["unknown_content"] = sorted(set(unknown))
        if role in counts:
            counts[role] += 1
        if (role == "user" and place.on_current_path and ctype != "user_editable_context"
                and (first_depth < 0 or place.turn_index < first_depth)):
            first_prompt, first_depth = text, place.turn_index
        if model:
            models[model] = models.get(model, 0) + 1
        turns_emitted += 1
        yield Event(
            source=SOURCE, kind="chat_turn", start=start, end=end,
            title=f"{label}: {snippet(text)}",
            text=f'{lead} in the conversation "{shown_title}": {body}',
            attributes=attrs, tz_offset_min=offset_minutes(start, zone),
            key=f"{cid}/{nid}", locator=f"{loc}, node {nid}",
            raw=bounded_raw({"conversation_id": cid, "node": mapping.get(nid, {"id": nid, "message": message})}),
        )

    if conv_end is not None and conv_end < conv_start:
        conv_end = None
    main_model = default_model or (max(models, key=models.get) if models else "")
    attrs = {
        "conversation_id": cid, "conversation_title": title, "message_count": turns_emitted,
        "user_message_count": counts["user"], "assistant_message_count": counts["assistant"],
        "node_count": len(parents),
        "branch_points": sum(1 for p in places.values() if p.child_count > 1)
        + (1 if sum(1 for p in places.values() if p.parent_id is None) > 1 else 0),
        "model": main_model, "models": sorted(models),
        "is_archived": bool(conv.get("is_archived")), "is_starred": bool(conv.get("is_starred")),
        "gizmo_id": conv.get("gizmo_id") if isinstance(conv.get("gizmo_id"), str) else "",
    }
    if isinstance(conv.get("conversation_origin"), str):
        attrs["conversation_origin"] = conv["conversation_origin"]
    text = (f'ChatGPT conversation "{shown_title}" with {turns_emitted} messages '
            f'({counts["user"]} from you, {counts["assistant"]} from ChatGPT)')
    if main_model:
        text += f", model {main_model}"
    text += "."
    if first_prompt:
        text += f" It began with: {snippet(first_prompt, 300)}"
    summary = {k: v for k, v in conv.items() if k != "mapping"}
    summary["mapping"] = f"{len(mapping)} nodes"
    yield Event(
        source=SOURCE, kind="chat_conversation", start=conv_start, end=conv_end,
        title=shown_title, text=text, attributes=attrs,
        tz_offset_min=offset_minutes(conv_start, zone), key=f"conversation/{cid}",
        locator=loc, raw=bounded_raw(summary),
    )


IMPORTERS = (
    Importer(
        name="chatgpt", title="ChatGPT conversations", version="1", source=SOURCE,
        recognize=recognize, read=read,
        description="conversations.json or conversations-NNN.json from a ChatGPT data export",
        ignores=("chat.html", "user.json", "message_feedback.json", "model_comparisons.json",
                 "shared_conversations.json", "conversations.json.index", "export_manifest.json",
                 "group_chats.json", "sora.json", "file-*", "file_*"),
    ),
)
