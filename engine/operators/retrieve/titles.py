"""The titles of the user's own data a query names: "weekly team meeting" names the
calendar series "Team weekly", whatever case the query is written in. A title that
recurs (a series, a mail subject, a place returned to) and whose every word of
substance the query says is a name the store itself gives, where
:mod:`.names` only sees the capitalised words of a query.

What the reranker passes for such a query must say every word of one of those
titles (:func:`says_a_title`): it passed haircuts, dinners and "Meeting notes" mails
for "weekly team meeting", and a count of the 49 meetings came out 135.

Reads the store's titles (memoised in the index's memo, which new or removed events
clear); no word lists, no model.
"""
from __future__ import annotations

from engine.operators.context import OperatorContext
from engine.operators.retrieve.events import Event
from engine.retrieval.words import stems

#: a title names a thing when at least this many events have it
MIN_EVENTS = 2
#: and it has at least this many words of substance (one word is a kind: "Dinner")
MIN_WORDS = 2
_MEMO_KEY = ("titles of at least", MIN_EVENTS, "events")


Title = tuple[str, frozenset[str]]  # a title as the store writes it, and its stems


def recurring_titles(ctx: OperatorContext) -> list[Title]:
    """Every title at least :data:`MIN_EVENTS` events of the store have, with
    :data:`MIN_WORDS` stems or more, one per set of stems; memoised until the events
    change."""
    found = ctx.index.memo.get(_MEMO_KEY) if ctx.index is not None else None
    if found is not None:
        return found[0]
    rows = ctx.store.reader().execute(
        "SELECT title FROM events WHERE title IS NOT NULL GROUP BY title HAVING count(*) >= ? ORDER BY title",
        [MIN_EVENTS]).fetchall()
    by_stems: dict[frozenset[str], str] = {}
    for (title,) in rows:
        by_stems.setdefault(frozenset(stems(title)), title)
    out = [(t, w) for w, t in by_stems.items() if len(w) >= MIN_WORDS]
    if ctx.index is not None:
        ctx.index.memo.put(_MEMO_KEY, out, [])
    return out


def titles_named(ctx: OperatorContext, query: str) -> list[Title]:
    """The recurring titles (:func:`recurring_titles`) whose every stem ``query``
    says; a title whose words another named title's include is left out for that
    one ("team weekly" and "team weekly planning" both said: the longer)."""
    said = stems(query)
    named = [(t, w) for t, w in recurring_titles(ctx) if w <= said]
    return [(t, w) for t, w in named if not any(w < o for _, o in named)]


def says_a_title(e: Event, titles: list[Title]) -> bool:
    """Whether the event's title and text say every stem of one of ``titles``."""
    said = stems(e.said)
    return any(w <= said for _, w in titles)
