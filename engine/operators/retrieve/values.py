"""Inside each partial group: categorical value patterns (``sport: running`` among
workouts), mined from the group's candidates and a sample of the group, labelled
like the groups were. A relevant value brings all its events from the store (where
most of a sample of them pass the reranker), an irrelevant one drops its candidates
(relevant wins, for recall); the rest of the candidates are left undecided, for the
embedder and the reranker.

Decides values; the candidates it leaves are judged one by one in
:mod:`engine.operators.retrieve.acceptance` and :mod:`engine.operators.retrieve.reranking`.
"""
from __future__ import annotations

from engine.operators.context import OperatorContext
from engine.operators.retrieve.events import Event, Group, fetch_events, ids_where, sample_ids
from engine.operators.retrieve.groups import Decisions, mostly_failing, passing_enough
from engine.operators.retrieve.labelling import value_labels
from engine.operators.retrieve.labels import Label, Verdict
from engine.operators.retrieve.scores import score_lists
from engine.retrieval.patterns import Pattern, describe_pattern, group_pattern, matches, value_patterns


def judge_values(ctx: OperatorContext, query: str, candidate_ids: list[str], whole: set[Group],
                 found: Decisions) -> tuple[list[Event], dict[Group, list[Pattern]]]:
    """The candidates of the partial groups that no value pattern decided, and each
    partial group's irrelevant value patterns; the events of relevant ones go into
    ``found.kept``. A group of ``whole`` has all its candidates judged; a big group its
    best search hits only (the reranker costs ~5 ms a pair)."""
    settings = ctx.retrieve
    rank_of = {i: n for n, i in enumerate(candidate_ids)}
    by_group: dict[Group, list[Event]] = {}
    for e in fetch_events(ctx, candidate_ids):
        by_group.setdefault((e.source, e.kind), []).append(e)
    undecided: list[Event] = []
    irrelevant_of: dict[Group, list[Pattern]] = {}
    for source, kind in found.partial:
        ctx.check_cancel()
        members = _members(ctx, by_group.get((source, kind), []), rank_of, (source, kind) in whole)
        seen = {e.id for e in members}
        hashed = fetch_events(ctx, [i for i in sample_ids(ctx, source, kind, settings.group_sample) if i not in seen])
        sample = members + hashed
        group = group_pattern(source, kind)
        value_pats = value_patterns(group, (e.items for e in sample), max_patterns=settings.max_patterns)
        labels = value_labels(ctx, query, group, [p for p, _ in value_pats])
        if (source, kind) in found.doubted:  # a sibling kind is the one asked about: no value is taken whole
            labels = [Label.SIBLING_NEARER if label.verdict is Verdict.KEEP else label for label in labels]
        relevant = [p for (p, _), label in zip(value_pats, labels) if label.verdict is Verdict.KEEP]
        failing = _mostly_failing(ctx, query, hashed + members, relevant)
        if failing:
            relevant = [p for p in relevant if p not in failing]
            labels = [Label.MOSTLY_FAILING if p in failing else label for (p, _), label in zip(value_pats, labels)]
        # the classifier was wrong about a revived group: its "irrelevant" values drop nothing
        irrelevant = [] if (source, kind) in found.revived else [
            p for (p, _), label in zip(value_pats, labels) if label.verdict is Verdict.DROP]
        # and where its "irrelevant" values' best search hits pass the reranker, so was it
        revived = _revived_values(ctx, query, members, rank_of, [
            p for (p, _), label in zip(value_pats, labels) if label is Label.IRRELEVANT and p in irrelevant])
        if revived:
            irrelevant = [p for p in irrelevant if p not in revived]
            labels = [Label.REVIVED if p in revived else label for (p, _), label in zip(value_pats, labels)]
        if irrelevant and all(any(matches(p, e.items) for p in irrelevant) for e in sample):
            # the group is partial, yet its irrelevant values cover all of it (every
            # calendar event is recurring or not): the labels contradict each other,
            # and the reranker judges the events instead of no event being judged
            found.said.append(f"{describe_pattern(group)}: its irrelevant values cover all of it; "
                              "they drop nothing")
            irrelevant = []
        irrelevant_of[(source, kind)] = irrelevant
        found.said.extend(f"{describe_pattern(p)} [{label.value}, {c}/{len(sample)}]"
                          for (p, c), label in zip(value_pats, labels) if label is not Label.PARTIAL)
        for p in relevant:
            found.kept.update(dict.fromkeys(ids_where(ctx, p)))
        undecided += [e for e in members
                      if e.id not in found.kept and not any(matches(p, e.items) for p in irrelevant)]
    return undecided, irrelevant_of


def _revived_values(ctx: OperatorContext, query: str, members: list[Event], rank_of: dict[str, int],
                    irrelevant: list[Pattern]) -> list[Pattern]:
    """The "irrelevant" values whose best search hits pass the reranker (two, or half
    of those checked): their events are judged one by one, not dropped unseen. The
    classifier called the user's own address irrelevant for "mail I sent to Augusta",
    and every mail sent to her was dropped with it. The best search hits of all
    such values are scored together, a few per value."""
    settings = ctx.retrieve
    if not (irrelevant and ctx.models.reranker is not None and settings.verify_irrelevant):
        return []
    ranked = sorted((e for e in members if e.id in rank_of), key=lambda e: rank_of[e.id])
    per_value = _first_of_each(ranked, irrelevant, settings.verify_irrelevant)
    scores = score_lists(ctx.models.reranker, query, per_value.values())
    if not scores:
        return []
    return [irrelevant[n] for n in sorted(passing_enough(per_value, scores, settings.rerank_threshold))]


def _mostly_failing(ctx: OperatorContext, query: str, sample: list[Event], relevant: list[Pattern]) -> list[Pattern]:
    """The "relevant" values most of whose sampled events (``sample``: the group's
    sample by hash first, then its search hits) fail the reranker: a value taken
    whole is about the query event by event. For "watching Effect Break" the
    classifier called "latest view: true" and "latest view: false" relevant, and
    every Netflix episode came with them."""
    settings = ctx.retrieve
    if not (relevant and ctx.models.reranker is not None and settings.verify_relevant and settings.sample_relevant):
        return []
    per_value = _first_of_each(sample, relevant, settings.verify_relevant)
    checked = {n: events for n, events in per_value.items() if len(events) >= min(4, settings.verify_relevant)}
    scores = score_lists(ctx.models.reranker, query, checked.values())
    if not scores:
        return []
    return [relevant[n] for n in sorted(mostly_failing(checked, scores, settings.rerank_threshold))]


def _first_of_each(events: list[Event], patterns: list[Pattern], n: int) -> dict[int, list[Event]]:
    """The first ``n`` of ``events`` (in their order) each pattern matches, by the
    pattern's index; a pattern that matches none is absent."""
    out: dict[int, list[Event]] = {}
    for e in events:
        for i, p in enumerate(patterns):
            if matches(p, e.items) and len(out.setdefault(i, [])) < n:
                out[i].append(e)
    return {i: es for i, es in out.items() if es}


def _members(ctx: OperatorContext, members: list[Event], rank_of: dict[str, int], whole: bool) -> list[Event]:
    """The candidates of a partial group that are judged. Under a FILTER with a
    window, what the filter can keep first, and of the rest only the best search
    hits, enough to tell "none in April" from "nothing like it at all"; of a big
    group not judged whole, its best search hits."""
    settings = ctx.retrieve
    windowed = ctx.wanted is not None and bool(ctx.window)
    if windowed:
        inside = {e.id for e in members if ctx.is_wanted(e.row())}
        members = sorted(members, key=lambda e: (e.id not in inside, rank_of[e.id]))
        members = members[:len(inside) + settings.rerank_outside_window]
    if not whole and len(members) > settings.rerank_per_group:
        members = members[:settings.rerank_per_group] if windowed else \
            sorted(members, key=lambda e: rank_of[e.id])[:settings.rerank_per_group]
    return members
