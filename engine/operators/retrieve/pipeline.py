"""RETRIEVE's stages in their order (see :mod:`engine.operators.retrieve`): search,
whole groups, values inside the partial groups, sentences, the reranker, then one
row per happening. Each stage is its module's; this one only passes what one
decided on to the next, and answers a search made before from the index's memo.
"""
from __future__ import annotations

from engine.operators.context import OperatorContext
from engine.operators.retrieve.acceptance import accepted_by_embedder
from engine.operators.retrieve.candidates import search_candidates, whole_groups
from engine.operators.retrieve.events import fetch_events, group_sizes, ids_starting_within, ids_where
from engine.operators.retrieve.groups import (Decisions, decide_groups, doubt_relevant, label_groups,
                                             revive_irrelevant)
from engine.operators.retrieve.kinds import of_the_kind_named, only_the_kinds_named
from engine.operators.retrieve.labels import Label
from engine.operators.retrieve.memo import recall, remember, search_key, search_span
from engine.operators.retrieve.mentions import notes_stating
from engine.operators.retrieve.merging import merge_into, merge_overlapping
from engine.operators.retrieve.named_values import named_value_events
from engine.operators.retrieve.reranking import rerank
from engine.operators.retrieve.values import judge_values
from engine.plan.nodes import Retrieve
from engine.plan.rows import Row
from engine.plan.timerange import Span
from engine.retrieval.index import RetrievalIndex

#: pattern decisions a search's notes list before "… n more"
_NOTED_PATTERNS = 16


def retrieve(node: Retrieve, ctx: OperatorContext) -> list[Row]:
    """Group patterns first (a whole kind of event is in or out), value patterns
    inside the partial groups, the reranker for the search candidates no pattern
    decides; see the package's docstring. A search made before over the same
    documents with the same inputs is answered from the index's memo."""
    if ctx.index is None:
        ctx.index = RetrievalIndex(ctx.store, sparse=ctx.models.sparse, embedder=ctx.models.embedder)
    ctx.index.refresh(cancel=ctx.cancel, waiting=lambda stage, done, total, seconds: _say_waiting(
        ctx, stage, done, total, seconds))  # new or removed events clear the memo
    ctx.check_cancel()
    span = search_span(ctx)
    key = search_key(node, ctx, span)
    rows = recall(ctx, key)
    if rows is not None:
        return rows
    start = len(ctx.notes)
    rows = _retrieve(node.query, ctx, span)
    remember(ctx, key, rows, ctx.notes[start:])
    return rows


def _retrieve(query: str, ctx: OperatorContext, span: Span | None) -> list[Row]:
    candidate_ids = search_candidates(ctx, query)
    # 1. one pattern per (source, kind): whole kinds in or out
    groups = group_sizes(ctx)
    labels = doubt_relevant(ctx, query, groups, label_groups(ctx, query, groups), candidate_ids)
    found = decide_groups(ctx, query, groups, labels, span)
    revive_irrelevant(ctx, query, groups, labels, candidate_ids, found)
    candidate_ids, whole = whole_groups(ctx, found.partial, {(s, k): n for s, k, n in groups}, candidate_ids)
    # 2. inside partial groups: value patterns mined from the group's candidates and a sample
    undecided, irrelevant_of = judge_values(ctx, query, candidate_ids, whole, found)
    # 3. what is as near the query as the nearest events are, sentence by sentence, is kept
    accepted = accepted_by_embedder(ctx, query, found.partial, found.doubted, irrelevant_of, found.kept)
    if accepted:
        found.kept.update(dict.fromkeys(accepted))
        undecided = [e for e in undecided if e.id not in found.kept]
    # 4. the reranker decides the candidates no pattern did
    if undecided:
        passed = rerank(ctx, query, undecided)
        found.kept.update(dict.fromkeys(passed))
        # 5. every event of a value the query names, where the reranker passed its candidates
        named, other = named_value_events(ctx, query, undecided, set(passed), span)
        found.kept.update(dict.fromkeys(named))
        for i in other:
            found.kept.pop(i, None)
    rows = of_the_kind_named(query, [e.row() for e in fetch_events(ctx, _in_the_span(ctx, found, span))], ctx)
    rows = only_the_kinds_named(rows, {(s, k) for (s, k, _), label in zip(groups, labels)
                                       if label is Label.KIND_NAMED}, ctx)
    merged = merge_overlapping(rows, ctx.retrieve.merge_min_overlap)
    if len(merged) < len(rows):
        ctx.note(f"merged {len(rows) - len(merged)} events that overlap an event of another source")
    # 7. a day's note that states a happening's measure is that happening's too
    for n, notes in notes_stating(ctx, merged).items():
        merged[n] = merge_into(merged[n], notes)
    more = len(found.said) - _NOTED_PATTERNS
    ctx.note("patterns: " + "; ".join(found.said[:_NOTED_PATTERNS]) + (f"; … {more} more" if more > 0 else ""))
    return merged


def _in_the_span(ctx: OperatorContext, found: Decisions, span: Span | None) -> list[str]:
    """Of the events kept, those whose start lies in ``span``, the time the FILTER
    over this RETRIEVE lets through (:func:`engine.plan.timerange.start_span`); the
    FILTER still decides which of them pass. Twelve years of song plays were made
    into rows to count one month's. (The groups kept whole were read in the span
    already: :func:`engine.operators.retrieve.groups.decide_groups`.)"""
    kept = list(found.kept)
    if span is None:
        return kept
    inside = ids_starting_within(ctx, kept, span) if kept else []
    if not inside:
        # all of them: the FILTER then counts none ("0 times in 2025"), where a
        # search that found nothing would say there is nothing like it at all
        return list(dict.fromkeys([i for p in found.spanned for i in ids_where(ctx, p)] + kept))
    total = len(kept) + found.outside
    if len(inside) < total:
        ctx.note(f"{total - len(inside):,} of the {total:,} events kept start outside the time the "
                 "filter over this search lets through; not read")
    return inside


def _say_waiting(ctx: OperatorContext, stage: str, done: int, total: int, seconds: float) -> None:
    """A question whose search waits for an index refresh already running says so,
    how far that refresh is and, once it has a pace, about how long it will take."""
    what = {"documents": "reading new events", "sparse": "encoding new events for search",
            "vectors": "embedding new texts"}.get(stage, stage)
    left = ""
    if total and 0 < done < total and seconds > 1:
        left = f", about {max(1, round((total - done) * seconds / done))} s left"
    message = (f"waiting for the search index, which is being brought up to date ({what}: "
               f"{done:,} of {total:,}{left})")
    ctx.progress(message)
    ctx.note(message)
