"""Labels for patterns: the pattern classifier's, turned into :class:`Label` at the
boundary, then checked against the embedder, which doubts a relevant pattern far
from the query or far below a sibling (another value of the same key).

Reads the models; not the store, and keeps no events.
"""
from __future__ import annotations

from engine.operators.context import OperatorContext, OperatorError
from engine.operators.retrieve.labels import Label
from engine.operators.retrieve.scores import pattern_similarities
from engine.retrieval.patterns import Pattern, describe_pattern
from engine.retrieval.words import stems


def classify(ctx: OperatorContext, query: str, patterns: list[Pattern]) -> list[Label]:
    """The pattern classifier's label of each pattern; partial for all without one."""
    if not patterns:
        return []
    if ctx.models.patterns is None:
        return [Label.PARTIAL] * len(patterns)
    words = ctx.models.patterns.classify(query, [describe_pattern(p) for p in patterns])
    if len(words) != len(patterns):
        raise OperatorError("RETRIEVE", f"the pattern classifier returned {len(words)} labels "
                                        f"for {len(patterns)} patterns")
    try:
        return [Label.of_classifier(w) for w in words]
    except ValueError as exc:
        raise OperatorError("RETRIEVE", f"the pattern classifier returned an unknown label: {exc}") from None


def doubt_far_patterns(ctx: OperatorContext, query: str, patterns: list[Pattern],
                       labels: list[Label]) -> list[Label]:
    """A value pattern the classifier calls relevant, though the embedder finds it far
    from the query, is not taken whole: its candidates go to the reranker like a
    partial pattern's. (The classifier, trained on synthetic lives, called podcast
    shows such as "show: Jane Talks" relevant for "running", at cosine 0.12, and
    three podcast plays were counted as runs.) Only value patterns are doubted: a
    whole kind ("kind: calendar_event") says too little for the embedder to judge."""
    if ctx.models.embedder is None:
        return labels
    doubt = [i for i, label in enumerate(labels) if label is Label.RELEVANT]
    if not doubt:
        return labels
    near = pattern_similarities(ctx, query, [describe_pattern(patterns[i]) for i in doubt])
    out = list(labels)
    for i, sim in zip(doubt, near):
        if sim < ctx.retrieve.min_similarity:
            out[i] = Label.FAR
    return out


def sibling_key(p: Pattern, fixed: Pattern) -> tuple[str, Pattern] | None:
    """The key in which ``p`` differs from ``fixed`` (its group, or for a group
    pattern its source alone), with ``fixed``; None if it adds more than one item."""
    extra = [item for item in p if item not in fixed]
    return (extra[0][0], fixed) if len(extra) == 1 else None


def sibling_families(ctx: OperatorContext, query: str, patterns: list[Pattern], labels: list[Label],
                     fixed: list[Pattern]) -> tuple[list[list[int]], dict[int, float]]:
    """The families of sibling patterns (the same ``fixed`` items, other values of one
    key) that hold a relevant pattern, and the embedder cosine of each member."""
    if ctx.models.embedder is None or ctx.retrieve.sibling_margin is None or Label.RELEVANT not in labels:
        return [], {}
    families: dict[tuple[str, Pattern], list[int]] = {}
    for i, (p, f) in enumerate(zip(patterns, fixed)):
        key = sibling_key(p, f)
        if key is not None:
            families.setdefault(key, []).append(i)
    # a category has a few values; a key with many (conversation titles) names things,
    # and their cosines spread without saying which kind of thing is asked about
    found = [ix for ix in families.values()
             if 1 < len(ix) <= ctx.retrieve.max_siblings and any(labels[i] is Label.RELEVANT for i in ix)]
    ask = sorted({i for ix in found for i in ix})
    if not ask:
        return [], {}
    return found, dict(zip(ask, pattern_similarities(ctx, query, [describe_pattern(patterns[i]) for i in ask])))


def doubt_weaker_siblings(ctx: OperatorContext, query: str, patterns: list[Pattern], labels: list[Label],
                          fixed: list[Pattern]) -> list[Label]:
    """A pattern the classifier calls relevant is only partial when a sibling (the
    same ``fixed`` items, another value of the same key) is much nearer the query in
    the embedder's space. The classifier called "activity: running", "activity:
    swimming" and "activity: yoga" all relevant for "yoga class" (cosines 0.38,
    0.40, 0.72), and Spotify's music plays as well as its podcast plays relevant for
    "podcast episode" (0.18, 0.47): the yoga count took in every workout."""
    families, sims = sibling_families(ctx, query, patterns, labels, fixed)
    out = list(labels)
    said = stems(query)
    for ix in families:
        best = max(sims[i] for i in ix)
        named = {i for i in ix if _value_said(patterns[i], fixed[i], said)}
        for i in ix:
            if sims[i] >= best - ctx.retrieve.sibling_margin:
                continue
            if named and i not in named:
                # the query says one value of the key and not this one: "swimming" is
                # not asked of the runs, however the classifier labels them ("activity:
                # running" relevant for "swimming", and a 7.7 km run was summed in)
                out[i] = Label.OTHER_VALUE_NAMED
            elif labels[i] is Label.RELEVANT:
                out[i] = Label.SIBLING_NEARER
    return out


def _value_said(p: Pattern, fixed: Pattern, said: set[str]) -> bool:
    """Whether the query says every word of the value in which ``p`` differs from ``fixed``."""
    extra = [v for k, v in p if (k, v) not in fixed]
    words = stems(str(extra[0]).replace("_", " ")) if len(extra) == 1 else set()
    return bool(words) and words <= said


def value_labels(ctx: OperatorContext, query: str, group: Pattern, pats: list[Pattern]) -> list[Label]:
    """The labels of a group's value patterns: the classifier's, doubted where far
    from the query, no nearer it than the group itself, or far below a sibling."""
    labels = doubt_far_patterns(ctx, query, pats, classify(ctx, query, pats))
    labels = _doubt_values_adding_nothing(ctx, query, group, pats, labels)
    return doubt_weaker_siblings(ctx, query, pats, labels, [group] * len(pats))


def _doubt_values_adding_nothing(ctx: OperatorContext, query: str, group: Pattern, pats: list[Pattern],
                                 labels: list[Label]) -> list[Label]:
    """A value pattern is taken whole for its value: one the classifier calls
    relevant that the embedder finds no nearer the query than its group without the
    value is judged event by event instead. For "yoga" in a life without yoga, the
    classifier called Apple Health's "activity: swimming" and "activity: cycling"
    relevant (cosines 0.42 and 0.41, the bare "kind: workout" 0.46), and 305 swims
    and rides were counted as yoga; for "bike ride" cycling is 0.60 against 0.26."""
    doubt = [i for i, label in enumerate(labels) if label is Label.RELEVANT]
    if ctx.models.embedder is None or not doubt:
        return labels
    sims = pattern_similarities(ctx, query, [describe_pattern(group)] + [describe_pattern(pats[i]) for i in doubt])
    out = list(labels)
    for i, sim in zip(doubt, sims[1:]):
        if sim <= sims[0]:
            out[i] = Label.ADDS_NOTHING
    return out
