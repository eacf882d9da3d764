"""Events kept because a sentence of theirs is as near the query as the nearest
events' sentences are, without the reranker (the reranker, trained here in minutes,
passed no diary day that says "Went for a 7.9 km run" for "running").

Reads the index's sentence vectors and the embedder; decides only which events of
the partial groups it keeps.
"""
from __future__ import annotations

import math

from engine.operators.context import OperatorContext
from engine.operators.retrieve.events import Group, fetch_events
from engine.operators.retrieve.names import names_something
from engine.retrieval.patterns import Pattern, matches
from engine.retrieval.words import contradicts, stems


def accepted_by_embedder(ctx: OperatorContext, query: str, partial_groups: list[Group], doubted: set[Group],
                         irrelevant_of: dict[Group, list[Pattern]], kept: dict[str, None]) -> list[str]:
    """Events of the partial groups whose nearest sentence is within
    ``accept_similarity`` of the query and within ``accept_band`` of the nearest
    event's: kept without the reranker, whether the search found them or not.

    The band makes the bar the query's own: the sentences of the events a query is
    about sit together at the top, and how high depends on the query ("running" and
    "I did running." 0.63, "watched a documentary" and "I watched a documentary on TV
    today." 0.74, while "I watched a movie on TV today." is 0.47). Not in a group whose
    sibling kind is the one asked about, nor among values the classifier called
    irrelevant.

    Not for a query that names someone or something: the embedder places a name it
    never saw by its spelling, so "songs by The Sugar Gutiérrezs" came within 0.05 of
    plays by The Sugar Arévalos and mail from Alicia Miles within 0.56 of "Diane
    Edwards" (the persona benchmark's name queries lost precision, none gained
    recall); names are the value patterns' and the reranker's to match. A query of three
    content words or more is about something specific: an event must say the share
    ``accept_words`` of them (rounded down; crudely stemmed), for a near sentence alone
    let "I prepare pasta for lunch." (0.53) through for "chicken parmesan spaghetti",
    whose diary day scored 0.60. One- and two-word queries are left to the embedder:
    "restaurants" has no word in common with a reservation mail that is one (0.49)."""
    settings = ctx.retrieve
    if (settings.accept_similarity is None or ctx.models.embedder is None
            or getattr(ctx.index, "vectors", None) is None or not partial_groups):
        return []
    if names_something(query, ctx.names):
        ctx.note("no sentence acceptance: the query names someone or something")
        return []
    near = ctx.index.nearest_sentences(ctx.models.embedder.embed([query])[0], settings.accept_similarity)
    eligible = set(partial_groups) - doubted
    events = {e.id: e for e in fetch_events(ctx, [i for i in near if i not in kept])
              if (e.source, e.kind) in eligible
              and not any(matches(p, e.items) for p in irrelevant_of.get((e.source, e.kind), ()))}
    events = {i: e for i, e in events.items() if not contradicts(query, e.said)}
    if not events:
        return []
    wanted = stems(query)
    need = math.floor((settings.accept_words or 0) * len(wanted))
    if need:
        events = {i: e for i, e in events.items() if len(wanted & stems(e.said)) >= need}
        if not events:
            return []
    top = max(near[i] for i in events)
    bar = max(settings.accept_similarity, top - settings.accept_band)
    accepted = sorted((i for i in events if near[i] >= bar), key=lambda i: -near[i])
    ctx.note(f"{len(accepted)} event{'s' if len(accepted) != 1 else ''} kept without the reranker: "
             f"a sentence within cosine {bar:.2f} of the query (the nearest: {top:.2f})")
    return accepted
