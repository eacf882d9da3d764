"""What RETRIEVE remembers between searches: a whole search's rows and notes (in
the index's memo, which new or removed events clear), and the embedder's vectors of
pattern descriptions (a store has a few hundred patterns, asked about again and
again).

Keys and storage only: what to compute is the other modules' business.
"""
from __future__ import annotations

import weakref

from engine.operators.context import OperatorContext
from engine.operators.retrieve.names import names
from engine.plan.nodes import Retrieve
from engine.plan.timerange import Span, start_span
from engine.plan.rows import Row


def search_span(ctx: OperatorContext) -> Span | None:
    """The span of time the condition over the search lets events start in, if it
    bounds one (:func:`engine.plan.timerange.start_span`)."""
    return None if ctx.wanted is None else start_span(ctx.wanted, ctx.eval_context)


def search_key(node: Retrieve, ctx: OperatorContext, span: Span | None) -> tuple:
    """The inputs a search's result depends on: the query, the settings, the
    condition it judges a window of events by, where it does, and the ``span`` of
    time it reads (:func:`search_span`; the models are the engine's own), and the names
its query gives (the store's names decide whether its first word is one)."""
    windowed = ctx.wanted is not None and bool(ctx.window)
    return (node.query, ctx.retrieve, repr(ctx.wanted) if windowed else None,
            ctx.window if windowed else 0, span, id(ctx.models), tuple(names(node.query, ctx.names)))


def recall(ctx: OperatorContext, key: tuple) -> list[Row] | None:
    """The rows of an earlier search with ``key``, its notes added to this one's; or None."""
    found = ctx.index.memo.get(key)
    if found is None:
        return None
    rows, notes = found
    ctx.notes.extend(notes)
    ctx.note(f"the same search as an earlier question's: its {len(rows)} rows reused")
    return list(rows)


def remember(ctx: OperatorContext, key: tuple, rows: list[Row], notes: list[str]) -> None:
    ctx.index.memo.put(key, rows, notes, keep=ctx.models)


def pattern_vectors(embedder) -> dict[str, list[float]]:
    """The vectors ``embedder`` made of pattern descriptions, by description; a
    fresh dict each time for an embedder that cannot be weakly referenced."""
    try:
        return _PATTERN_VECTORS.setdefault(embedder, {})
    except TypeError:  # an embedder that cannot be weakly referenced: no cache
        return {}


_PATTERN_VECTORS: weakref.WeakKeyDictionary[object, dict[str, list[float]]] = weakref.WeakKeyDictionary()
