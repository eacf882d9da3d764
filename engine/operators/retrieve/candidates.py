"""Which events RETRIEVE looks at: the search's candidates (full-text search and the
sparse encoder over the verbalised events, :mod:`engine.retrieval.index`), and the
whole of a partial group where judging all of it is cheap (a small group) or is
what a FILTER over this RETRIEVE can keep (the 47 diary days of October 2005, not
the best 300 search hits of 27 years).

Finds ids; judges nothing.
"""
from __future__ import annotations

from engine.operators.context import OperatorContext, OperatorError
from engine.operators.retrieve.events import Group, ids_in_window, ids_where
from engine.retrieval.patterns import describe_pattern, group_pattern


def search_candidates(ctx: OperatorContext, query: str) -> list[str]:
    """The ids the full-text and the sparse search find for ``query``, the full-text
    search's first, each once."""
    settings = ctx.retrieve
    try:
        fts = ctx.index.fts_search(query, settings.fts_candidates)
    except Exception as exc:  # duckdb.Error or the fallback's errors: say which step failed
        raise OperatorError("RETRIEVE", f"full-text search for {query!r} failed: {exc}") from exc
    sparse = ctx.index.sparse_search(query, settings.sparse_candidates)
    if ctx.models.sparse is None:
        ctx.note("no sparse encoder: candidates from full-text search only")
    if ctx.models.patterns is None:
        ctx.note("no pattern classifier: every candidate goes to the reranker")
    candidate_ids = list(dict.fromkeys([i for i, _ in fts] + [i for i, _ in sparse]))
    ctx.note(f"{len(candidate_ids)} candidates ({len(fts)} full-text, {len(sparse)} sparse, "
             f"{ctx.index.fts_backend})")
    return candidate_ids


def whole_groups(ctx: OperatorContext, partial: list[Group], sizes: dict[Group, int],
                 candidate_ids: list[str]) -> tuple[list[str], set[Group]]:
    """The candidates with every event of the partial groups judged whole, and those
    groups: a small group (search misses paraphrases, "lunch at Golden Dragon" for
    "restaurants", and judging a few hundred events is cheap), and a big group's part
    that the FILTER over this RETRIEVE can keep. Without a reranker to judge them, no
    group is taken whole: all of it would be kept."""
    if ctx.models.reranker is None:
        return candidate_ids, set()
    whole = [g for g in partial if sizes[g] <= ctx.retrieve.rerank_whole_group]
    in_window: dict[Group, list[str]] = {}
    if ctx.wanted is not None and bool(ctx.window):
        for g in partial:
            if g not in whole and (ids := ids_in_window(ctx, *g)) is not None and len(ids) <= ctx.window:
                in_window[g] = ids
                ctx.note(f"{describe_pattern(group_pattern(*g))}: the {len(ids)} events the filter can keep "
                         "are judged whole")
    out, known = list(candidate_ids), set(candidate_ids)
    for g in [*whole, *in_window]:
        ids = in_window[g] if g in in_window else ids_where(ctx, group_pattern(*g))
        out += [i for i in ids if i not in known]
        known.update(ids)
    return out, set(whole) | set(in_window)
