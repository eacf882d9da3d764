"""How near the query the models put an event or a pattern: the reranker's score
of an event's passages, and the embedder's cosine of a passage or a pattern
description with the query, from the index's stored vectors where it has them.

Numbers only: what passes is decided where they are read.
"""
from __future__ import annotations

from engine.operators.context import OperatorContext
from engine.operators.retrieve.events import Event
from engine.operators.retrieve.memo import pattern_vectors
from engine.retrieval.sentences import SIMILARITY_CHARS

# The reranker reads 64 tokens of a passage with its query; the embedder reads about
# as much (SIMILARITY_CHARS, 256 characters) instead of its 256 tokens, four times faster.


def score_events(reranker, query: str, events: list[Event]) -> list[float]:
    """The reranker's score for each event: the best of its passages."""
    return [score for score, _ in best_passages(reranker, query, events)]


def score_lists(reranker, query: str, lists) -> dict[str, float]:
    """The reranker's score of each distinct event of several lists of events (an
    event in two lists is scored once), by id."""
    events = list({e.id: e for es in lists for e in es}.values())
    return dict(zip((e.id for e in events), score_events(reranker, query, events))) if events else {}


def best_passages(reranker, query: str, events: list[Event]) -> list[tuple[float, str]]:
    """Each event's best passage for the reranker, with its score."""
    pairs, owner = [], []
    for n, e in enumerate(events):
        for text in e.passages():
            pairs.append((query, text))
            owner.append(n)
    best: list[tuple[float, str]] = [(float("-inf"), "")] * len(events)
    for n, (_, text), sc in zip(owner, pairs, reranker.score(pairs) if pairs else []):
        if sc > best[n][0]:
            best[n] = (sc, text)
    return best


def similarities(embedder, query: str, passages: list[str]) -> list[float]:
    """Each passage's cosine with the query in the embedder's space (its first
    ``SIMILARITY_CHARS`` characters: what the reranker read of it)."""
    vectors = embedder.embed([query, *(p[:SIMILARITY_CHARS] for p in passages)])
    q = vectors[0]
    return [sum(a * b for a, b in zip(q, v)) for v in vectors[1:]]


def stored_similarities(ctx: OperatorContext, query: str, events: list[Event]) -> dict[str, list[float]]:
    """The cosine of each passage of ``events`` with the query, from the vectors the
    index keeps (:mod:`engine.retrieval.vectors`); events it has none for are absent."""
    if ctx.models.embedder is None or getattr(ctx.index, "vectors", None) is None or not events:
        return {}
    query_vector = ctx.models.embedder.embed([query])[0]
    return ctx.index.passage_similarities(query_vector, [e.id for e in events])


def passed_similarities(ctx: OperatorContext, query: str, passed: list[tuple[Event, str]],
                        stored: dict[str, list[float]]) -> list[float]:
    """The cosine of each passing passage with the query: stored where the index
    has it, embedded now otherwise."""
    out: list[float | None] = []
    for e, text in passed:
        sims = stored.get(e.id)
        options = e.passages() if sims is not None else []
        out.append(sims[options.index(text)] if sims is not None and len(sims) == len(options)
                   and text in options else None)
    missing = [i for i, sim in enumerate(out) if sim is None]
    if missing:
        for i, sim in zip(missing, similarities(ctx.models.embedder, query, [passed[i][1] for i in missing])):
            out[i] = sim
    return out  # type: ignore[return-value]


def pattern_similarities(ctx: OperatorContext, query: str, texts: list[str]) -> list[float]:
    """Cosines of pattern descriptions with the query; descriptions' vectors are kept
    per embedder (:func:`engine.operators.retrieve.memo.pattern_vectors`)."""
    embedder = ctx.models.embedder
    cache = pattern_vectors(embedder)
    texts = [t[:SIMILARITY_CHARS] for t in texts]  # what ``similarities`` reads of a text
    missing = [t for t in dict.fromkeys(texts) if t not in cache]
    vectors = embedder.embed([query, *missing])
    cache.update(zip(missing, vectors[1:]))
    q = vectors[0]
    return [sum(a * b for a, b in zip(q, cache[t])) for t in texts]
