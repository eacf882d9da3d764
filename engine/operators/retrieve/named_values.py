"""All the events of a value the query names, not only those the search found:
for "songs by Louise Cooper" the search's best hits span every year, and of the 83
plays of July 2024 the reranker saw and passed 6. A value of a judged candidate
("artist: Louise Cooper", "restaurant: Pizzeria Niemeier") that says every word of a
name the query gives (:func:`engine.operators.retrieve.names.names`) is that named
thing; when the reranker passed most of its candidates, every event of the store
with that value is kept, in the span the FILTER over the search reads, and a
candidate it passed that gives another value of that key is not ("artist: Lisa
Stone" for "songs by The Stone Randolphs").

Only for a query that says nothing but names and kinds of event
(:func:`~engine.operators.retrieve.names.without_names` is empty): "lunch with
Chloe" asks for lunches, not for every event Chloe is in. Nothing kept names another
meal than the query (a dinner at the café is no lunch there).

Reads the store; decides which events of named values are kept.
"""
from __future__ import annotations

import re
from collections import defaultdict

from engine.operators.context import OperatorContext
from engine.operators.retrieve.events import Event, fetch_events, ids_where
from engine.operators.retrieve.names import names, without_names
from engine.plan.timerange import Span
from engine.retrieval.patterns import describe_pattern, group_pattern, with_item
from engine.retrieval.words import contradicts

_WORD = re.compile(r"\w+")


def named_value_events(ctx: OperatorContext, query: str, judged: list[Event], passed: set[str],
                       span: Span | None) -> tuple[list[str], set[str]]:
    """The ids of every event whose value a name of ``query`` is (see the module),
    where the reranker passed at least two of the ``judged`` candidates with that
    value and at least half of them; ``passed``: the ids it passed. And the ids of
    ``passed`` that give another value of the same key and say no name whole:
    "artist: Lisa Stone" is not "The Stone Randolphs", though the reranker passed her
    songs for them; a mail to someone that says their name is theirs, though the
    mails "from" them were the ones named."""
    given = names(query, ctx.names) if ctx.retrieve.require_names else []
    wanted = [{w.lower() for w in name} for name in given]
    if not wanted or not judged or without_names(query, given):
        return [], set()
    with_value: dict[tuple[str, str, str, str], list[Event]] = defaultdict(list)
    naming: set[str] = set()  # the judged events that say every word of a name
    for e in judged:
        for key, value in e.items:
            if any(name <= _words(value) for name in wanted):
                with_value[(e.source, e.kind, key, value)].append(e)
                naming.add(e.id)
        if any(name <= _words(e.said) for name in wanted):
            naming.add(e.id)
    out: dict[str, None] = {}
    named: dict[tuple[str, str, str], set[str]] = defaultdict(set)  # (source, kind, key): the values named
    for (source, kind, key, value), events in sorted(with_value.items()):
        ok = sum(e.id in passed for e in events)
        if ok < 2 or 2 * ok < len(events):
            continue
        named[(source, kind, key)].add(value)
        p = with_item(group_pattern(source, kind), (key, value))
        ids = [e.id for e in fetch_events(ctx, ids_where(ctx, p, span)) if not contradicts(query, e.said)]
        more = [i for i in ids if i not in passed and i not in out]
        if more:
            ctx.note(f"{describe_pattern(p)}: the value the query names; its {len(more)} events the search "
                     "did not bring are kept too")
        out.update(dict.fromkeys(ids))
    # they say no name whole, and a value of theirs is another value of a named key
    other = {e.id for e in judged if e.id in passed and e.id not in naming and any(
        v not in named[(e.source, e.kind, k)] for k, v in e.items if (e.source, e.kind, k) in named)}
    if other:
        ctx.note(f"{len(other)} of those passed dropped: they give another value of the key the query's name is "
                 "a value of")
    return list(out), other


def _words(text: str) -> set[str]:
    """The words of ``text``, in lower case."""
    return {w.lower() for w in _WORD.findall(text)}
