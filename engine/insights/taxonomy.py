"""A taxonomy discovered over the user's own conversations: their summary vectors are
clustered into topics (spherical k-means, numpy only), each topic's conversations
again into subtopics, and every cluster is named by the key phrases that set its
conversations apart from the rest (class-based TF-IDF over the phrases the
conversations contain). The same phrase statistics pick each conversation's
keywords. Deterministic: the same conversations give the same taxonomy.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

#: keywords kept per conversation
KEYWORDS = 6
#: a phrase in more than this share of all conversations says nothing about any one
COMMON_SHARE = 0.25
MAX_TOPICS = 14
MAX_SUBTOPICS = 6
#: a topic smaller than this is not split into subtopics
MIN_SPLIT = 6
#: a foreign phrase counts when texts in the model's language have it at least this
#: share as often as foreign texts do
FOREIGN_SHARE = 0.25


@dataclass(frozen=True, slots=True)
class Cluster:
    members: tuple[int, ...]  # indices into the conversations
    name: str
    keywords: tuple[str, ...]
    parent: int | None = None  # index of the topic a subtopic belongs to


@dataclass(frozen=True, slots=True)
class Taxonomy:
    topics: tuple[Cluster, ...]
    subtopics: tuple[Cluster, ...]
    topic_of: tuple[int, ...]  # per conversation
    subtopic_of: tuple[int, ...]
    keywords: tuple[tuple[str, ...], ...]  # per conversation


def kmeans(vectors, k: int, *, seed: int = 0, iterations: int = 40, restarts: int = 3):
    """Spherical k-means (cosine) with k-means++ seeding; returns (labels, centroids)
    of the restart with the highest total similarity."""
    import numpy as np

    x = np.asarray(vectors, dtype=np.float32)
    n = len(x)
    k = max(1, min(k, n))
    rng = np.random.default_rng(seed)
    best = None
    for _ in range(restarts):
        centres = [x[rng.integers(n)]]
        for _c in range(1, k):
            d = 1.0 - np.max(x @ np.array(centres).T, axis=1)
            d = np.clip(d, 0, None) ** 2
            total = d.sum()
            centres.append(x[rng.choice(n, p=d / total)] if total > 0 else x[rng.integers(n)])
        c = np.array(centres)
        labels = np.zeros(n, dtype=np.int64)
        for _it in range(iterations):
            sims = x @ c.T
            new = sims.argmax(axis=1)
            if _it and np.array_equal(new, labels):
                break
            labels = new
            for j in range(k):
                m = x[labels == j]
                if len(m):
                    v = m.sum(axis=0)
                    c[j] = v / max(float(np.linalg.norm(v)), 1e-12)
                else:  # an empty cluster takes the point its centre explains worst
                    worst = int(np.argmin(sims[np.arange(n), labels]))
                    c[j] = x[worst]
                    labels[worst] = j
        score = float((x @ c.T)[np.arange(n), labels].sum())
        if best is None or score > best[0]:
            best = (score, labels.copy(), c.copy())
    return best[1], best[2]


def _cluster_count(n: int, cap: int) -> int:
    return max(1, min(cap, round(math.sqrt(n / 2))))


def _phrase_sets(phrases: Sequence[Sequence[Sequence]]) -> list[dict[str, tuple[str, int]]]:
    """Per conversation: casefolded phrase -> (spelling, count). A phrase marked
    foreign (found in a language the key phrase model does not read) counts only
    where conversations in the model's language have it about as often (a name like
    Django, not a word of the other language); all count when no conversation is
    in the model's language."""
    native = [conv for conv in phrases if not any(len(p) >= 4 for p in conv)]
    foreign = [conv for conv in phrases if any(len(p) >= 4 for p in conv)]
    share_native = Counter(k for conv in native for k in {str(p[0]).casefold() for p in conv})
    share_foreign = Counter(k for conv in foreign for k in {str(p[0]).casefold() for p in conv})

    def trusted(key: str) -> bool:
        if not native:
            return True
        return share_native[key] / len(native) >= FOREIGN_SHARE * share_foreign[key] / max(len(foreign), 1)

    out = []
    for conv in phrases:
        out.append({str(p[0]).casefold(): (str(p[0]), int(p[2])) for p in conv
                    if len(p) < 4 or trusted(str(p[0]).casefold())})
    return out


def _distinctive(members: Sequence[int], sets: list[dict], background: Sequence[int], n_best: int,
                 avoid: set[str] = frozenset()) -> list[str]:
    """Phrases most typical of ``members`` against ``background`` (which contains
    them): share of members that have it x log of how rare it is in the background."""
    inside: Counter[str] = Counter()
    spelling: dict[str, Counter[str]] = {}
    for i in members:
        for key, (spell, _count) in sets[i].items():
            inside[key] += 1
            spelling.setdefault(key, Counter())[spell] += 1
    outside: Counter[str] = Counter()
    for i in background:
        for key in sets[i]:
            outside[key] += 1
    total = max(len(background), 1)
    scored = []
    for key, df in inside.items():
        if key in avoid or outside[key] > COMMON_SHARE * total and total >= 20:
            continue
        score = (df / len(members)) * math.log(1 + total / outside[key])
        if df < 2 and len(members) >= 4:
            score *= 0.5  # one conversation's phrase is a poor name for a group
        scored.append((-score, key))
    scored.sort()
    return [spelling[k].most_common(1)[0][0] for _s, k in scored[:n_best]]


def _name(words: Sequence[str], taken: set[str]) -> str:
    kept: list[str] = []
    for w in words:  # "screen" after "5120x1440 screen" adds nothing
        if not any(w.casefold() in k.casefold() or k.casefold() in w.casefold() for k in kept):
            kept.append(w)
    words = kept
    for n in (2, 3, 1):
        name = " & ".join(words[:n]) if words else "Other"
        if name.casefold() not in taken:
            return name
    i = 2
    while f"{words[0] if words else 'Other'} ({i})".casefold() in taken:
        i += 1
    return f"{words[0] if words else 'Other'} ({i})"


def conversation_keywords(sets: list[dict], n_best: int = KEYWORDS) -> list[tuple[str, ...]]:
    """Each conversation's phrases weighted by count x inverse document frequency."""
    n = len(sets)
    df: Counter[str] = Counter(k for s in sets for k in s)
    out = []
    for s in sets:
        scored = []
        for key, (spell, count) in s.items():
            if df[key] > COMMON_SHARE * n and n >= 20:
                continue
            scored.append((-(1 + math.log(count)) * math.log(1 + n / df[key]), key, spell))
        scored.sort()
        out.append(tuple(sp for _s, _k, sp in scored[:n_best]))
    return out


def discover(vectors, phrases: Sequence[Sequence[Sequence]], *, max_topics: int = MAX_TOPICS,
             max_subtopics: int = MAX_SUBTOPICS, seed: int = 0) -> Taxonomy:
    """Topics and subtopics over conversations given their summary vectors and their
    ``[[phrase, label, count], ...]`` lists (same order)."""
    import numpy as np

    n = len(phrases)
    if n == 0:
        return Taxonomy((), (), (), (), ())
    x = np.asarray(vectors, dtype=np.float32)
    sets = _phrase_sets(phrases)
    everyone = list(range(n))
    labels, _c = kmeans(x, _cluster_count(n, max_topics), seed=seed)
    topics: list[Cluster] = []
    subtopics: list[Cluster] = []
    topic_of = [0] * n
    subtopic_of = [0] * n
    taken: set[str] = set()
    order = sorted(set(labels.tolist()), key=lambda j: (-(labels == j).sum(), j))
    for t, j in enumerate(order):
        members = [i for i in everyone if labels[i] == j]
        words = _distinctive(members, sets, everyone, 6)
        name = _name(words, taken)
        taken.add(name.casefold())
        topics.append(Cluster(tuple(members), name, tuple(words)))
        for i in members:
            topic_of[i] = t
        # subtopics: the topic's conversations clustered again, named against the topic
        if len(members) >= MIN_SPLIT:
            sub_labels, _sc = kmeans(x[members], _cluster_count(len(members), max_subtopics), seed=seed)
        else:
            sub_labels = np.zeros(len(members), dtype=np.int64)
        sub_taken: set[str] = {name.casefold()}
        avoid = {w.casefold() for w in words[:1]}
        sub_order = sorted(set(sub_labels.tolist()), key=lambda s: (-(sub_labels == s).sum(), s))
        for s in sub_order:
            sub_members = [members[i] for i in range(len(members)) if sub_labels[i] == s]
            sub_words = _distinctive(sub_members, sets, members, 6, avoid) if len(sub_order) > 1 else words
            sub_name = _name(sub_words, sub_taken | taken) if len(sub_order) > 1 else name
            sub_taken.add(sub_name.casefold())
            for i in sub_members:
                subtopic_of[i] = len(subtopics)
            subtopics.append(Cluster(tuple(sub_members), sub_name, tuple(sub_words), parent=t))
    return Taxonomy(tuple(topics), tuple(subtopics), tuple(topic_of), tuple(subtopic_of),
                    tuple(conversation_keywords(sets)))
