"""The reranker's turn: the candidates no pattern decided pass when the reranker
scores a passage of theirs high enough and the checks after it agree. The
embedder must find that passage near the query (the pretrained embedder
generalises where the reranker, trained here on synthetic lives, does not: it
scored a calendar's football games 0.67 for "Amazon purchase"); for a query that
names someone or something, the event must say a word of one of the names and pass
for the query without them; and it names no other meal than the query.

Reads the models and the index's vectors; decides only which candidates pass.
"""
from __future__ import annotations

from engine.operators.context import OperatorContext
from engine.operators.retrieve.alike import passed_against_their_like
from engine.operators.retrieve.events import Event
from engine.operators.retrieve.names import names, says_a_name, without_names
from engine.operators.retrieve.scores import best_passages, passed_similarities, similarities, stored_similarities
from engine.operators.retrieve.titles import Title, says_a_title, titles_named
from engine.retrieval.words import contradicts

Passed = list[tuple[Event, str]]  # each passing event with the passage that made it pass


def rerank(ctx: OperatorContext, query: str, undecided: list[Event]) -> list[str]:
    """The ids of the ``undecided`` candidates that pass; all of them without a reranker."""
    if ctx.models.reranker is None:
        ctx.note(f"no reranker: kept all {len(undecided)} undecided candidates")
        return [e.id for e in undecided]
    stored = stored_similarities(ctx, query, undecided)
    passed = _judged_alike(ctx, undecided, _passing(ctx, query, _near_enough_to_pass(ctx, undecided, stored)))
    wanted = names(query, ctx.names) if ctx.retrieve.require_names else []
    if wanted and passed:
        passed = _saying_a_name(ctx, passed, wanted)
    titles = titles_named(ctx, query) if ctx.retrieve.require_names and passed else []
    if titles:
        passed = _saying_a_title(ctx, passed, titles)
    rest = without_names(query, wanted)
    if rest and passed and ctx.retrieve.rest_threshold is not None:
        passed = _passing_without_the_names(ctx, rest, passed)
    passed = _naming_no_other_meal(ctx, query, passed)
    if ctx.models.embedder is not None and passed:
        passed = _near_the_query(ctx, query, passed, stored)
    return [e.id for e, _ in passed]


def _near_enough_to_pass(ctx: OperatorContext, undecided: list[Event],
                         stored: dict[str, list[float]]) -> list[Event]:
    """``undecided`` without the candidates none of whose stored passages is near
    enough the query to pass the embedder's check after the reranker: they are
    never reranked."""
    floor = ctx.retrieve.min_similarity
    far = {e.id for e in undecided if e.id in stored and max(stored[e.id]) < floor}
    if not far:
        return undecided
    ctx.note(f"{len(far)} candidates not reranked: no passage within cosine {floor} of the query")
    return [e for e in undecided if e.id not in far]


def _passing(ctx: OperatorContext, query: str, undecided: list[Event]) -> Passed:
    """The candidates whose best passage the reranker scores at its threshold or above."""
    settings = ctx.retrieve
    passed: Passed = []
    for i in range(0, len(undecided), settings.rerank_batch):
        ctx.check_cancel()
        batch = undecided[i:i + settings.rerank_batch]
        best = best_passages(ctx.models.reranker, query, batch)
        passed.extend((e, text) for e, (s, text) in zip(batch, best) if s >= settings.rerank_threshold)
    ctx.note(f"reranked {len(undecided)} candidates, {len(passed)} passed")
    return passed


def _judged_alike(ctx: OperatorContext, judged: list[Event], passed: Passed) -> Passed:
    """Those not failed by most of the ``judged`` events that say the same but for
    their dates and numbers (:mod:`.alike`), counting those too far from the query to
    be reranked as failed: a weekly meeting is not a trip in July only."""
    against = passed_against_their_like(judged, {e.id for e, _ in passed})
    if against:
        ctx.note(f"{len(against)} of them dropped: most events that say the same but for their dates "
                 "and numbers failed")
    return [(e, text) for e, text in passed if e.id not in against]


def _saying_a_name(ctx: OperatorContext, passed: Passed, wanted: list[tuple[str, ...]]) -> Passed:
    """Those that say a word of one of the query's names: the reranker passed "I went
    grocery shopping with Jack." for "go to the grocery store with Chloe"."""
    named = [(e, text) for e, text in passed if says_a_name(e, wanted)]
    if len(named) < len(passed):
        ctx.note(f"{len(passed) - len(named)} of them dropped: they name none of "
                 + ", ".join(f"'{' '.join(n)}'" for n in wanted))
    return named


def _saying_a_title(ctx: OperatorContext, passed: Passed, titles: list[Title]) -> Passed:
    """Those that say every word of one of the store's recurring titles the query
    names (:mod:`.titles`): the reranker passed haircuts and "Meeting notes" mails
    for "weekly team meeting", the calendar's "Team weekly"."""
    said = [(e, text) for e, text in passed if says_a_title(e, titles)]
    if len(said) < len(passed):
        ctx.note(f"{len(passed) - len(said)} of them dropped: they say none of the titles the query names: "
                 + ", ".join(f"'{t}'" for t, _ in titles))
    return said


def _passing_without_the_names(ctx: OperatorContext, rest: str, passed: Passed) -> Passed:
    """Those that pass for the query without its names too (``rest``), where that
    says more than the kind of event: given "Chloe", the reranker passed her dates
    for "go get groceries with Chloe"."""
    settings = ctx.retrieve
    ctx.check_cancel()
    scores = best_passages(ctx.models.reranker, rest, [e for e, _ in passed])
    near = similarities(ctx.models.embedder, rest, [t for _, t in scores]) \
        if ctx.models.embedder is not None else [1.0] * len(scores)
    sure = settings.rest_sure
    kept = [p for p, (s, _), sim in zip(passed, scores, near)
            if s >= settings.rest_threshold and (sim >= settings.min_similarity or (sure is not None and s >= sure))]
    if len(kept) < len(passed):
        unless = f", unless above {sure}" if sure is not None else ""
        ctx.note(f"{len(passed) - len(kept)} of them dropped: below {settings.rest_threshold} "
                 f"(or cosine {settings.min_similarity}{unless}) for “{rest}”, the query without its names")
    return kept


def _naming_no_other_meal(ctx: OperatorContext, query: str, passed: Passed) -> Passed:
    """Those that name no other meal than the query (a dinner is no lunch)."""
    said = [(e, text) for e, text in passed if not contradicts(query, e.said)]
    if len(said) < len(passed):
        ctx.note(f"{len(passed) - len(said)} of them dropped: they name another meal than the query")
    return said


def _near_the_query(ctx: OperatorContext, query: str, passed: Passed, stored: dict[str, list[float]]) -> Passed:
    """Those whose passing passage the embedder puts near the query."""
    floor = ctx.retrieve.min_similarity
    near = passed_similarities(ctx, query, passed, stored)
    kept = [p for p, sim in zip(passed, near) if sim >= floor]
    if len(kept) < len(passed):
        ctx.note(f"{len(passed) - len(kept)} of them dropped: further from the query than "
                 f"{floor} (embedder cosine)")
    return kept
