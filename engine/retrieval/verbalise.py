"""Events as text, the way RETRIEVE's index, pattern classifier and reranker see
them: every key-value pair as ``key: value`` joined by `` | ``.

Also the key-value pairs used as patterns. Pure functions; no I/O.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_VALUE_CHARS = 400
MAX_PATTERN_VALUE_CHARS = 60
# Attributes that identify one record, never a kind of event: useless as patterns.
_NOT_PATTERN_KEYS = {"uri", "id", "url", "ms_played", "minutes_played", "message_id", "uid", "thread_id",
                     "node_id", "parent_id", "conversation_id", "order_id", "asin", "activity_id", "file", "date"}


class JoinedList(str):
    """A list of scalars shown as one text ("a, b"); not a value the store holds as
    such, so never a pattern item (SQL could not select by it)."""

    __slots__ = ()


def _flatten(prefix: str, value: Any, out: list[tuple[str, Any]]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, (list, tuple)):
        if value and all(not isinstance(v, (Mapping, list, tuple)) for v in value):
            out.append((prefix, JoinedList(", ".join(str(v) for v in value))))
        else:
            for i, v in enumerate(value):
                _flatten(f"{prefix}.{i}", v, out)
    elif value is not None and value != "":
        out.append((prefix, value))


def key_values(source: str, kind: str, title: str | None, text: str | None,
               attributes: Mapping[str, Any] | None) -> list[tuple[str, Any]]:
    pairs: list[tuple[str, Any]] = [("source", source), ("kind", kind)]
    if title:
        pairs.append(("title", title))
    if text:
        pairs.append(("text", text))
    _flatten("", attributes or {}, pairs)
    return pairs


def verbalise(pairs: list[tuple[str, Any]]) -> str:
    parts = []
    for k, v in pairs:
        s = ("true" if v else "false") if isinstance(v, bool) else str(v)
        parts.append(f"{k.replace('_', ' ')}: {s[:MAX_VALUE_CHARS]}")
    return " | ".join(parts)


def pattern_items(pairs: list[tuple[str, Any]]) -> set[tuple[str, str]]:
    """The (key, value) pairs an event contributes to pattern mining: categorical
    values only (strings and booleans of modest length), no titles, texts or ids."""
    items = set()
    for k, v in pairs:
        if (k in ("title", "text") or k.rsplit(".", 1)[-1] in _NOT_PATTERN_KEYS or isinstance(v, JoinedList)
                or any(part.isdigit() for part in k.split("."))):  # list elements: no SQL path
            continue
        if isinstance(v, bool):
            items.add((k, "true" if v else "false"))
        elif isinstance(v, str) and 0 < len(v) <= MAX_PATTERN_VALUE_CHARS:
            items.add((k, v))
    return items
