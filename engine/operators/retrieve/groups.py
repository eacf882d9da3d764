"""Whole kinds of event in or out: one pattern per (source, kind) in the store,
labelled by the classifier and the kind the query names; a relevant group whose
values tell its events apart, or whose shared value lies well below another
source's, is judged as a partial one instead; an irrelevant group whose best
search hits pass the reranker is revived as a partial one.

Decides groups only; their events are judged in
:mod:`engine.operators.retrieve.values`.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from engine.operators.context import OperatorContext
from engine.operators.retrieve.events import Event, Group, fetch_events, ids_where, sample_ids
from engine.operators.retrieve.kinds import with_kinds_named
from engine.operators.retrieve.labelling import (classify, doubt_far_patterns, doubt_weaker_siblings,
                                                 sibling_families, sibling_key)
from engine.operators.retrieve.labels import Label, Verdict
from engine.operators.retrieve.names import names_something
from engine.operators.retrieve.scores import pattern_similarities, score_lists, stored_similarities
from engine.plan.timerange import Span
from engine.retrieval.patterns import (MAX_VALUE_SHARE, Pattern, describe_pattern, group_pattern, value_patterns,
                                       with_item)


@dataclass
class Decisions:
    """What RETRIEVE has decided so far, stage after stage."""
    kept: dict[str, None] = field(default_factory=dict)  # the ids kept, in the order they were
    partial: list[Group] = field(default_factory=list)   # groups whose events are judged one by one
    doubted: set[Group] = field(default_factory=set)     # groups none of whose values is taken whole
    revived: set[Group] = field(default_factory=set)     # irrelevant groups whose search hits pass
    said: list[str] = field(default_factory=list)        # "pattern [label, support]", for the notes
    # the groups kept whole, where only their events in the search's span were read,
    # and how many of their events start outside it (:func:`decide_groups`)
    spanned: list[Pattern] = field(default_factory=list)
    outside: int = 0


def label_groups(ctx: OperatorContext, query: str, groups: list[tuple[str, str, int]]) -> list[Label]:
    """Each group's label: the classifier's, doubted beside a sibling kind of the same
    source ("kind: podcast_stream" beside "kind: music_stream"), then set by the kinds
    the query names (:func:`engine.operators.retrieve.kinds.with_kinds_named`)."""
    patterns = [group_pattern(s, k) for s, k, _ in groups]
    labels = doubt_weaker_siblings(ctx, query, patterns, classify(ctx, query, patterns),
                                   [(("source", s),) for s, _, _ in groups])
    return with_kinds_named(query, groups, labels)


def decide_groups(ctx: OperatorContext, query: str, groups: list[tuple[str, str, int]],
                  labels: list[Label], span: Span | None = None) -> Decisions:
    """The events of the groups kept whole, and the groups judged event by event.
    With the ``span`` of time the FILTER over the search lets through, a group kept
    whole is read only there: twelve years of song plays were read as 730,000 ids
    to keep one month's."""
    found = Decisions(doubted={(s, k) for (s, k, _), label in zip(groups, labels)
                               if label in (Label.SIBLING_NEARER, Label.ANOTHER_KIND_NAMED)})
    ctx.check_cancel()
    surveys = {(source, kind): survey for (source, kind, _), label in zip(groups, labels)
               if label is Label.RELEVANT and (survey := _survey(ctx, query, source, kind)) is not None}
    outranked = _outranked(surveys, ctx.retrieve.sibling_margin) if surveys else set()
    found.doubted |= outranked
    for (source, kind, n), label in zip(groups, labels):
        p = group_pattern(source, kind)
        if (source, kind) in outranked:
            label = Label.OUTRANKED
        elif label is Label.RELEVANT and surveys.get((source, kind)) and surveys[(source, kind)].splits:
            label = Label.SPLITS
        found.said.append(f"{describe_pattern(p)} [{label.value}, {n}]")
        if label.verdict is Verdict.KEEP:
            ids = ids_where(ctx, p, span)
            found.kept.update(dict.fromkeys(ids))
            if span is not None:
                found.spanned.append(p)
                found.outside += n - len(ids)
        elif label.verdict is Verdict.JUDGE:
            found.partial.append((source, kind))
    return found


def best_hits(ctx: OperatorContext, candidate_ids: list[str], groups: set[Group], n: int) -> dict[Group, list[Event]]:
    """Each of ``groups``' best ``n`` search candidates, in search order (none: an empty list)."""
    rank = {i: r for r, i in enumerate(candidate_ids)}
    top: dict[Group, list[Event]] = {g: [] for g in groups}
    for e in sorted(fetch_events(ctx, candidate_ids), key=lambda e: rank[e.id]):
        hits = top.get((e.source, e.kind))
        if hits is not None and len(hits) < n:
            hits.append(e)
    return top


def doubt_relevant(ctx: OperatorContext, query: str, groups: list[tuple[str, str, int]], labels: list[Label],
                   candidate_ids: list[str]) -> list[Label]:
    """"Relevant" keeps a whole kind unseen: the reranker checks the kind's best search
    hits (a sample of it where the search found fewer), and a group none of whose
    checked events pass is judged as a partial one, where the embedder agrees that
    none is near the query. The classifier called all of Strava's runs relevant for
    "yoga"; the reranker passed none of them. A sample of a big group is checked too
    (:func:`_samples`): most of it failing makes the group partial."""
    settings = ctx.retrieve
    relevant = {(s, k) for (s, k, _), label in zip(groups, labels) if label is Label.RELEVANT}
    if not (relevant and ctx.models.reranker is not None and settings.verify_relevant):
        return labels
    top = best_hits(ctx, candidate_ids, relevant, settings.verify_relevant)
    for g, events in top.items():
        if len(events) < settings.verify_relevant:
            seen = {e.id for e in events}
            more = [i for i in sample_ids(ctx, *g, settings.verify_relevant) if i not in seen]
            events += fetch_events(ctx, more[:settings.verify_relevant - len(events)])
    sampled = _samples(ctx, groups, relevant, top)
    scores = score_lists(ctx.models.reranker, query, [*top.values(), *sampled.values()])
    if not scores:
        return labels
    checks = [e for es in top.values() for e in es]
    failing = mostly_failing(sampled, scores, settings.rerank_threshold)
    # the embedder must agree: no checked event near the query (one it has no vectors
    # for yet counts as near); not on a name, which it places by spelling
    agree = (settings.revive_similarity is not None and ctx.models.embedder is not None
             and not names_something(query, ctx.names))
    near = stored_similarities(ctx, query, checks) if agree else {}
    doubted = set()
    for g, events in top.items():
        if len(events) < min(4, settings.verify_relevant) or any(
                scores[e.id] >= settings.rerank_threshold for e in events):
            continue
        if agree and any(max(near.get(e.id) or [1.0]) >= settings.revive_similarity for e in events):
            continue
        doubted.add(g)
    return [Label.UNCONFIRMED if (s, k) in doubted and label is Label.RELEVANT
            else Label.MOSTLY_FAILING if (s, k) in failing and label is Label.RELEVANT else label
            for (s, k, _), label in zip(groups, labels)]


def _samples(ctx: OperatorContext, groups: list[tuple[str, str, int]], relevant: set[Group],
             top: dict[Group, list[Event]]) -> dict[Group, list[Event]]:
    """A sample of each relevant group bigger than its checked best hits (by hash, not
    the search's order): a kind kept whole is about the query event by event, so most
    of any of its events pass. The best hits of "watching Effect Break" were that
    show's six episodes, and all of Netflix's 245 episodes were kept with them."""
    n = ctx.retrieve.verify_relevant
    if not ctx.retrieve.sample_relevant:
        return {}
    big = [(s, k) for s, k, size in groups if (s, k) in relevant and size > 2 * n]
    return {g: fetch_events(ctx, sample_ids(ctx, *g, n)) for g in big if len(top.get(g, ())) >= min(4, n)}


def revive_irrelevant(ctx: OperatorContext, query: str, groups: list[tuple[str, str, int]], labels: list[Label],
                      candidate_ids: list[str], found: Decisions) -> None:
    """"Irrelevant" drops a whole kind unseen: the reranker checks the kind's best
    search hits first ("songs by <a name the classifier never saw>" is about plays),
    and a group they pass (:func:`passing_enough`) is judged as a partial one."""
    settings = ctx.retrieve
    irrelevant = [(s, k) for (s, k, _), label in zip(groups, labels) if label is Label.IRRELEVANT]
    if not (irrelevant and ctx.models.reranker is not None and settings.verify_irrelevant and candidate_ids):
        return
    top = {g: hits for g, hits in best_hits(ctx, candidate_ids, set(irrelevant), settings.verify_irrelevant).items()
           if hits}
    checks = [e for es in top.values() for e in es]
    if not checks:
        return
    scores = score_lists(ctx.models.reranker, query, top.values())
    if settings.revive_similarity is not None and not names_something(query, ctx.names):
        # the embedder must agree (an event it has no vectors for yet keeps its score);
        # not on a name, which it places by spelling ("Diane Edwards")
        near = stored_similarities(ctx, query, checks)
        scores = {i: sc if max(near.get(i) or [1.0]) >= settings.revive_similarity else float("-inf")
                  for i, sc in scores.items()}
    found.revived = passing_enough(top, scores, settings.rerank_threshold)
    for g in sorted(found.revived):
        found.partial.append(g)
        found.said.append(f"{describe_pattern(group_pattern(*g))} [{Label.REVIVED.value}]")


def passing_enough(top: dict, scores: dict[str, float], threshold: float) -> set:
    """The "irrelevant" groups (or values) whose checked search hits say otherwise: two
    of them pass the reranker, or half of them. One song in eight ("Buy Mention – Above" for
    "Amazon purchase") is the reranker's noise, and judging every search hit of the
    group let it into a sum of prices; a lone concert that is the group's only hit
    still counts."""
    out = set()
    for group, events in top.items():
        passed = sum(scores[e.id] >= threshold for e in events)
        if passed >= 2 or (passed and 2 * passed >= len(events)):
            out.add(group)
    return out


def mostly_failing(checked: dict, scores: dict[str, float], threshold: float) -> set:
    """The "relevant" groups (or values) fewer than half of whose sampled events pass
    the reranker: what is kept whole should be about the query event by event."""
    return {group for group, events in checked.items()
            if 2 * sum(scores[e.id] >= threshold for e in events) < len(events)}


@dataclass
class _Survey:
    """What a relevant group's sample says about its values for one query."""
    splits: bool                                   # its values tell its events apart
    best: dict[str, float]                         # key -> cosine of its nearest relevant value
    universal: list[tuple[str, float]]             # (key, cosine) of values nearly all its events share


def _survey(ctx: OperatorContext, query: str, source: str, kind: str) -> _Survey | None:
    """A group the classifier calls relevant is better judged as a partial one when its
    value patterns tell its events apart, a relevant value standing well above a
    sibling in the embedder's space ("activity: yoga" at 0.72, "activity: running" at
    0.38 for "yoga class"). A key whose values the classifier labels differently but
    the embedder cannot tell apart ("skipped: false" and "skipped: true" for "songs I
    listened to") splits nothing. The survey also keeps, for the comparison across
    sources, the cosine of each key's best relevant value and of the values nearly
    every event of the group shares (Strava's "activity: Run")."""
    settings = ctx.retrieve
    if (not settings.split_relevant_groups or settings.sibling_margin is None or ctx.models.patterns is None
            or ctx.models.embedder is None):
        return None
    group = group_pattern(source, kind)
    sample = fetch_events(ctx, sample_ids(ctx, source, kind, settings.group_sample))
    value_pats = value_patterns(group, (e.items for e in sample), max_patterns=settings.max_patterns)
    pats = [p for p, _ in value_pats]
    labels = doubt_far_patterns(ctx, query, pats, classify(ctx, query, pats))
    families, sims = sibling_families(ctx, query, pats, labels, [group] * len(pats))
    splits, best = False, {}
    for ix in families:
        top = max((sims[i] for i in ix if labels[i] is Label.RELEVANT), default=None)
        if top is None:
            continue
        best[sibling_key(pats[ix[0]], group)[0]] = top
        splits = splits or any(sims[i] < top - settings.sibling_margin for i in ix)
    shared = universal_items(group, (e.items for e in sample))
    cos = pattern_similarities(ctx, query, [describe_pattern(with_item(group, item)) for item in shared]) \
        if shared else []
    return _Survey(splits, best, [(k, c) for (k, _), c in zip(shared, cos)])


def universal_items(group: Pattern, items_per_event: Iterable[set]) -> list[tuple[str, str]]:
    """The items (key, value) that more than ``MAX_VALUE_SHARE`` of a group's sampled
    events share, one value per key: what the group is, beyond its kind and source
    (``value_patterns`` leaves them out, since they split nothing)."""
    own = {k for k, _ in group}
    events = list(items_per_event)
    counts: Counter = Counter(i for items in events for i in items if i[0] not in own)
    keys = Counter(k for k, _ in counts)
    return sorted(item for item, c in counts.items() if c > MAX_VALUE_SHARE * len(events) and keys[item[0]] == 1
                  and not item[1].replace(".", "", 1).isdigit()) if events else []


def _outranked(surveys: dict[Group, _Survey], margin: float) -> set[Group]:
    """Relevant groups of one kind from other sources whose shared value lies well
    below another group's best relevant value of the same key: for "yoga class",
    Strava's workouts ("activity: Run", 0.3) beside Apple Health's "activity: yoga" (0.72)."""
    out = set()
    for g, survey in surveys.items():
        for key, cos in survey.universal:
            rivals = [other.best[key] for h, other in surveys.items()
                      if h != g and h[1] == g[1] and key in other.best]
            if rivals and cos < max(rivals) - margin:
                out.add(g)
    return out
