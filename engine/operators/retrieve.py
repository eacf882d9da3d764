"""RETRIEVE, as ReQAP's pipeline, tuned for recall:

1. candidates from full-text search (BM25) and the SparseEncoder over verbalised
   key-value documents (``engine.retrieval.index``);
2. the PatternClassifier labels one pattern per (source, kind) in the store
   (``engine.retrieval.patterns``): a relevant group is kept *whole, from the store*
   (every Spotify play for "songs I listened to", not only those the search found),
   an irrelevant one dropped unless its best search hits pass the reranker and (but
   for a query naming someone) are near the query for the Embedder. The Embedder
   checks the classifier's "relevant" against siblings: a kind far below another
   kind of the same source ("music_stream" beside "podcast_stream" for "podcast
   episode"), a group whose values it tells apart
   ("activity: yoga" well above "activity: running" for "yoga class"), or a group
   whose shared value lies well below another source's ("activity: Run" on every
   Strava workout) is judged as a partial group instead;
3. inside each partial group, categorical value patterns (``sport: running`` among
   workouts) mined from the group's candidates and a sample of the group are
   labelled the same way: relevant ones bring all their events from the store,
   irrelevant ones drop their candidates (relevant wins, for recall); a relevant
   value pattern far from the query in the Embedder's space is only partial;
4. with sentence vectors in the index (:mod:`engine.retrieval.vectors`), an event of
   a partial group with a sentence as near the query as the nearest events' are
   (cosine >= ``accept_similarity`` and within ``accept_band`` of the nearest) is kept
   without the reranker, whether the search found it or not: the reranker, trained
   here in minutes, passed no diary day that says "Went for a 7.9 km run" for "running".
   Not when the query names someone or something (an embedder knows names by spelling);
5. the Reranker classifies the candidates no pattern decided; with an Embedder, the
   passage that made a candidate pass must also be near the query in its space (the pretrained
   embedder generalises where the reranker, trained here on synthetic lives, does
   not: it scored a calendar's football games 0.67 for "Amazon purchase"). When the
   index keeps its passages' vectors (:mod:`engine.retrieval.vectors`), a candidate
   none of whose passages is that near is never reranked: it could not pass. For a
   query that names someone or something, a candidate that passes must say a word of
   one of the names (the reranker passed "I went grocery shopping with Jack." for
   "go to the grocery store with Chloe"), and pass the reranker for the query without
   its names too, where that says more than the kind of event (given "Chloe", it
   passed her dates for "go get groceries with Chloe"). What is kept by a sentence or
   by the reranker names no other meal than the query (:func:`~engine.retrieval.words.contradicts`:
   a dinner is no lunch). With ``rerank_window`` set, a RETRIEVE
   right under a FILTER that reads only times has the part of a big group the filter
   can keep judged whole (October 2005's diary days, not the best search hits of
   every year); so has, with ``day_window``, the RETRIEVE on the right of a same-day
   JOIN the days of the left side's rows (the meals of the days a tower was visited);
6. events from different sources whose time spans mostly coincide are merged into one row
   (union of key-value pairs and spans; provenance = both ids).

This module reads the store and the index; it never writes the store.
"""
from __future__ import annotations

import logging
import math
import re
import weakref
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

import orjson

from engine.operators.context import OperatorContext, OperatorError
from engine.operators.spans import PARTICLES
from engine.plan import expr as X
from engine.plan.nodes import Retrieve
from engine.plan.rows import Row, order_numbers, spans_whole_days
from engine.retrieval.index import RetrievalIndex, read_events
from engine.retrieval.patterns import (MAX_VALUE_SHARE, Pattern, describe_pattern, group_pattern, matches,
                                       pattern_sql, value_patterns, with_item)
from engine.retrieval.passages import SIMILARITY_CHARS, passages
from engine.retrieval.verbalise import key_values, pattern_items
from engine.locale_en import KIND_WORDS, STOP_WORDS as STOP
from engine.retrieval.words import contradicts, said_words, stems

log = logging.getLogger(__name__)

_EVENT_SQL = 'SELECT id, source, kind, title, text, start, "end", tz_offset_min, attributes FROM events'


def local(dt: datetime | None, offset_min: int | None) -> datetime | None:
    """A stored naive-UTC time as an aware datetime in the event's local offset."""
    if dt is None:
        return None
    tz = _OFFSETS.get(offset_min)
    if tz is None:  # one timezone object per offset (making one per event was half the cost)
        tz = _OFFSETS[offset_min] = timezone(timedelta(minutes=offset_min or 0))
    return dt.replace(tzinfo=timezone.utc).astimezone(tz)


_OFFSETS: dict[int | None, timezone] = {}


MERGED_TEXTS = " | "  # joins the texts of events merged into one row


def score_events(reranker, query: str, events: list["_Event"]) -> list[float]:
    """The reranker's score for each event: the best of its passages."""
    return [score for score, _ in best_passages(reranker, query, events)]


def best_passages(reranker, query: str, events: list["_Event"]) -> list[tuple[float, str]]:
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


# The reranker reads 64 tokens of a passage with its query; the embedder reads about
# as much (SIMILARITY_CHARS, 256 characters) instead of its 256 tokens, four times faster.


def similarities(embedder, query: str, passages: list[str]) -> list[float]:
    """Each passage's cosine with the query in the embedder's space (its first
    ``SIMILARITY_CHARS`` characters: what the reranker read of it)."""
    vectors = embedder.embed([query, *(p[:SIMILARITY_CHARS] for p in passages)])
    q = vectors[0]
    return [sum(a * b for a, b in zip(q, v)) for v in vectors[1:]]


def _stored_similarities(ctx: OperatorContext, query: str, events: list["_Event"]) -> dict[str, list[float]]:
    """The cosine of each passage of ``events`` with the query, from the vectors the
    index keeps (:mod:`engine.retrieval.vectors`); events it has none for are absent."""
    if ctx.models.embedder is None or getattr(ctx.index, "vectors", None) is None or not events:
        return {}
    query_vector = ctx.models.embedder.embed([query])[0]
    return ctx.index.passage_similarities(query_vector, [e.id for e in events])


def _passed_similarities(ctx: OperatorContext, query: str, passed: list[tuple["_Event", str]],
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


class _Event:
    __slots__ = ("id", "source", "kind", "title", "text", "start", "end", "attributes", "_pairs", "_items")

    def __init__(self, r: tuple):
        self.id, self.source, self.kind, self.title, self.text = r[0], r[1], r[2], r[3], r[4]
        self.start = local(r[5], r[7])
        self.end = local(r[6], r[7])
        self.attributes = orjson.loads(r[8]) if r[8] else {}
        self._pairs = self._items = None

    @property
    def pairs(self) -> list:
        if self._pairs is None:  # most kept events never need their pairs: computed on use
            self._pairs = key_values(self.source, self.kind, self.title, self.text, self.attributes)
        return self._pairs

    @property
    def items(self) -> set:
        if self._items is None:
            self._items = pattern_items(self.pairs)
        return self._items

    def passages(self) -> list[str]:
        """What the event classifier reads (:func:`engine.retrieval.passages.passages`)."""
        return passages(self.pairs, self.source, self.kind, self.title, self.text)

    def row(self) -> Row:
        return Row({"source": self.source, "kind": self.kind, "title": self.title or "",
                    "text": self.text or "", "start": self.start, "end": self.end},
                   (self.id,), self.attributes)


def _revived(top: dict[tuple[str, str], list["_Event"]], scores: dict[str, float],
             threshold: float) -> set[tuple[str, str]]:
    """The "irrelevant" groups whose checked search hits say otherwise: two of them pass
    the reranker, or half of them. One song in eight ("Buy Mention – Above" for
    "Amazon purchase") is the reranker's noise, and judging every search hit of the
    group let it into a sum of prices; a lone concert that is the group's only hit
    still counts."""
    out = set()
    for group, events in top.items():
        passed = sum(scores[e.id] >= threshold for e in events)
        if passed >= 2 or (passed and 2 * passed >= len(events)):
            out.add(group)
    return out


def fetch_events(ctx: OperatorContext, ids: Iterable[str]) -> list[_Event]:
    ids = list(ids)
    out: list[_Event] = []
    for i in range(0, len(ids), 5000):
        ctx.check_cancel()
        seen: set[str] = set()
        for r in read_events(ctx.store, ids[i:i + 5000], _EVENT_SQL):
            if r[0] not in seen:  # one row per id
                seen.add(r[0])
                out.append(_Event(r))
    return out


KIND_NAMED = "relevant: the query names this kind and nothing more"
OTHER_KIND_NAMED = "irrelevant: the query names another kind"


def _names_the_kind(query: str, source: str, kind: str) -> bool:
    """The query says every word of the kind, or a word a question calls it by
    (:data:`KIND_WORDS`: "song" for a music stream), and no word but those, the
    source's and what one does with such events: "calendar event", "workout",
    "journal note", "played a song". The classifier called the calendar's events
    partial for "calendar event", and a count of them kept 139 of 437; for "played a
    song" it called Spotify's plays partial, the reranker passed none of them, and
    "How many times did I play a song in May 2022?" had no answer. The source and
    what one does with its events name the kind too: "watched Netflix" (where the
    podcast "Author Weekly", named like a Netflix show, had come along: 352 for 245)."""
    said, words = said_words(query), stems(kind.replace("_", " "))
    nouns, verbs = _KIND_NOUNS.get(kind, set()), said_words(" ".join(KIND_WORDS.get(kind, ((), ()))[1]))
    own = stems(source.replace("_", " "))
    if said & own and said & verbs and said <= verbs | own:
        return True
    if not (words and words <= said) and not (said & nouns):
        return False
    return said <= words | nouns | verbs | own


_KIND_NOUNS = {k: said_words(" ".join(nouns)) for k, (nouns, _) in KIND_WORDS.items()}


def _says_a_word_of_the_kind(query: str, kind: str) -> bool:
    """The query says a word of ``kind`` or one a question calls it by ("chat" of
    "chat_conversation")."""
    return bool(said_words(query) & (stems(kind.replace("_", " ")) | _KIND_NOUNS.get(kind, set())))


def _half_names_the_kind(query: str, kind: str) -> bool:
    """The query says a word a question calls ``kind`` by, and another such word
    that is not its: "podcast episode" of Netflix's episodes."""
    said, own = said_words(query), _KIND_NOUNS.get(kind, set())
    return bool(said & own) and any(said & (n - own) for n in _KIND_NOUNS.values())


def _of_the_kind_named(query: str, rows: list[Row], ctx: OperatorContext) -> list[Row]:
    """``rows`` without the other kinds of a source when the query names one of its
    kinds by a word the others lack: for "ChatGPT conversation" the conversations
    and not their 754 turns (a count of conversations came out 920, not 166), for
    "podcast episode" the podcast plays and not the songs. Kinds the query names
    none of, or several of, stay."""
    said = stems(query)
    kinds: dict[str, set[str]] = {}
    for r in rows:
        kinds.setdefault(r.get("source") or "", set()).add(r.get("kind") or "")
    dropped: set[tuple[str, str]] = set()
    for source, present in kinds.items():
        words = {k: stems(k.replace("_", " ")) for k in present}
        named = [k for k in present if (words[k] - set().union(*(words[o] for o in present if o != k))) & said]
        if len(present) > 1 and len(named) == 1:
            dropped |= {(source, k) for k in present if k != named[0]}
    if not dropped:
        return rows
    kept = [r for r in rows if (r.get("source") or "", r.get("kind") or "") not in dropped]
    ctx.note(f"kept the kind of event the query names: dropped {len(rows) - len(kept)} "
             + ", ".join(sorted(f"{s} {k}" for s, k in dropped)))
    return kept


def merge_overlapping(rows: list[Row], min_overlap: float) -> list[Row]:
    """Merge rows from different sources whose spans overlap by at least
    ``min_overlap`` of the longer one, i.e. records of the same happening (point
    events: the same instant). A row of whole days (a diary's note of the day) is
    merged into the one timed happening of its day(s) that the search found, if
    there is exactly one, and the merged row keeps that happening's span: the
    football game in the calendar and the note "Football this evening" are one game
    at 19:00. Every rule merges rows of different sources only: the rows of a single
    source come back as they are, sorted (27,840 song plays took 0.26 s to find that)."""
    if len({r.get("source") for r in rows}) <= 1:
        return sorted(rows, key=_in_time_order)
    order = sorted(range(len(rows)), key=lambda i: (rows[i].get("start"), i))
    parent = list(range(len(rows)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    active: list[int] = []
    for i in order:
        r = rows[i]
        s, e = r.get("start"), r.get("end") or r.get("start")
        active = [j for j in active if (rows[j].get("end") or rows[j].get("start")) >= s]
        for j in active:
            o = rows[j]
            if o.get("source") == r.get("source"):
                continue
            os_, oe = o.get("start"), o.get("end") or o.get("start")
            longer = max(e - s, oe - os_)
            shared = min(e, oe) - max(s, os_)
            if longer <= timedelta(0):
                ok = s == os_
            else:
                # share of the longer span: a game and the workout recorded during it
                # merge, a three-minute song played during the game does not
                ok = shared / longer >= min_overlap
            if ok:
                parent[find(i)] = find(j)
        active.append(i)
    _merge_days_into_their_happening(rows, find, parent)
    _merge_orders(rows, find, parent)
    groups: dict[int, list[int]] = {}
    for i in order:
        groups.setdefault(find(i), []).append(i)
    out = []
    for members in groups.values():
        if len(members) == 1:
            out.append(rows[members[0]])
            continue
        timed = [m for m in members if not spans_whole_days(rows[m])] or members
        values = dict(rows[timed[0]].values)
        raw: dict = {}
        for m in reversed(members):
            raw.update(rows[m].raw)
        values["start"] = min(rows[m].get("start") for m in timed)
        values["end"] = max((rows[m].get("end") or rows[m].get("start")) for m in timed)
        values["text"] = MERGED_TEXTS.join(t for t in (rows[m].get("text") for m in members) if t)
        values["sources"] = sorted({rows[m].get("source") for m in members})
        out.append(Row(values, frozenset().union(*(rows[m].ids for m in members)), raw))
    out.sort(key=_in_time_order)
    return out


def _in_time_order(row: Row) -> tuple:
    """The order of RETRIEVE's rows: by start, then by their first event id."""
    return row.get("start"), min(row.ids)


def _merge_orders(rows: list[Row], find, parent: list[int]) -> None:
    """Rows of different sources that give the same order number are one order: the
    Amazon purchase and its confirmation mail, minutes or days apart (the demo's
    Amazon spending counted several orders twice)."""
    first: dict[str, int] = {}
    for i, r in enumerate(rows):
        for order in order_numbers(r):
            j = first.setdefault(order, i)
            if j != i and rows[j].get("source") != r.get("source"):
                parent[find(i)] = find(j)


def _merge_days_into_their_happening(rows: list[Row], find, parent: list[int]) -> None:
    """Each group of whole-day rows joins the one group of timed rows from other
    sources that starts within its days, where there is exactly one."""
    groups: dict[int, list[int]] = {}
    for i in range(len(rows)):
        groups.setdefault(find(i), []).append(i)
    timed_by_day: dict[date, list[int]] = {}
    days: list[int] = []
    for root, members in groups.items():
        if all(spans_whole_days(rows[m]) for m in members):
            days.append(root)
        elif isinstance(start := min(rows[m].get("start") for m in members), datetime):
            timed_by_day.setdefault(start.date(), []).append(root)
    for root in days:
        members = groups[root]
        sources = {rows[m].get("source") for m in members}
        first, last = rows[members[0]].get("start"), rows[members[0]].get("end")
        on_its_days = [t for d in range((last - first).days + 1)
                       for t in timed_by_day.get((first + timedelta(days=d)).date(), ())]
        found = [t for t in on_its_days if first <= min(rows[m].get("start") for m in groups[t]) < last
                 and not sources & {rows[m].get("source") for m in groups[t]}]
        if len(found) == 1:
            parent[root] = found[0]


def _groups(ctx: OperatorContext) -> list[tuple[str, str, int]]:
    return [(r[0], r[1], r[2]) for r in ctx.store.reader().execute(
        "SELECT source, kind, count(*) FROM events GROUP BY source, kind ORDER BY 3 DESC, 1, 2").fetchall()]


def _ids_where(ctx: OperatorContext, p: Pattern) -> list[str]:
    where, params = pattern_sql(p)
    return [r[0] for r in ctx.store.reader().execute(f"SELECT id FROM events WHERE {where}", params).fetchall()]


def _ids_in_window(ctx: OperatorContext, source: str, kind: str) -> list[str] | None:
    """The ids of the group's events that pass the FILTER over this RETRIEVE, when
    that condition reads nothing but the events' times ("in October 2005"); else None."""
    fn = ctx.wanted
    if fn is None or not X.attributes_read(fn.body, fn.params[0]) <= {"start", "end"}:
        return None
    rows = ctx.store.reader().execute(
        'SELECT id, start, "end", tz_offset_min FROM events WHERE source = ? AND kind = ?', [source, kind]).fetchall()
    return [i for i, start, end, tz in rows
            if ctx.is_wanted(Row({"start": local(start, tz), "end": local(end, tz)}, (i,)))]


def _sample(ctx: OperatorContext, source: str, kind: str, n: int) -> list[str]:
    """A deterministic sample of a group's event ids (by hash, so not the oldest)."""
    return [r[0] for r in ctx.store.reader().execute(
        "SELECT id FROM events WHERE source = ? AND kind = ? ORDER BY hash(id), id LIMIT ?",
        [source, kind, n]).fetchall()]


def _classify(ctx: OperatorContext, query: str, patterns: list[Pattern]) -> list[str]:
    if not patterns:
        return []
    if ctx.models.patterns is None:
        return ["partial"] * len(patterns)
    labels = ctx.models.patterns.classify(query, [describe_pattern(p) for p in patterns])
    if len(labels) != len(patterns):
        raise OperatorError("RETRIEVE", f"the pattern classifier returned {len(labels)} labels "
                                        f"for {len(patterns)} patterns")
    return list(labels)


DOUBTED = "relevant, but far from the query: partial"


def _doubt_far_patterns(ctx: OperatorContext, query: str, patterns: list[Pattern], labels: list[str]) -> list[str]:
    """A value pattern the classifier calls relevant, though the embedder finds it far
    from the query, is not taken whole: its candidates go to the reranker like a
    partial pattern's. (The classifier, trained on synthetic lives, called podcast
    shows such as "show: Jane Talks" relevant for "running", at cosine 0.12, and
    three podcast plays were counted as runs.) Only value patterns are doubted: a
    whole kind ("kind: calendar_event") says too little for the embedder to judge."""
    if ctx.models.embedder is None:
        return labels
    doubt = [i for i, label in enumerate(labels) if label == "relevant"]
    if not doubt:
        return labels
    near = _pattern_similarities(ctx, query, [describe_pattern(patterns[i]) for i in doubt])
    out = list(labels)
    for i, sim in zip(doubt, near):
        if sim < ctx.retrieve.min_similarity:
            out[i] = DOUBTED
    return out


SIBLING_DOUBTED = "relevant, but a sibling is much nearer the query: partial"
SIBLING_NAMED = "irrelevant: the query names another value of its key"


def _pattern_similarities(ctx: OperatorContext, query: str, texts: list[str]) -> list[float]:
    """Cosines of pattern descriptions with the query; descriptions' vectors are kept
    per embedder (a store has a few hundred patterns, asked about again and again)."""
    embedder = ctx.models.embedder
    try:
        cache = _PATTERN_VECTORS.setdefault(embedder, {})
    except TypeError:  # an embedder that cannot be weakly referenced: no cache
        cache = {}
    texts = [t[:SIMILARITY_CHARS] for t in texts]  # what ``similarities`` reads of a text
    missing = [t for t in dict.fromkeys(texts) if t not in cache]
    vectors = embedder.embed([query, *missing])
    cache.update(zip(missing, vectors[1:]))
    q = vectors[0]
    return [sum(a * b for a, b in zip(q, cache[t])) for t in texts]


_PATTERN_VECTORS: "weakref.WeakKeyDictionary[object, dict[str, list[float]]]" = weakref.WeakKeyDictionary()


def _sibling_key(p: Pattern, fixed: Pattern) -> tuple[str, Pattern] | None:
    """The key in which ``p`` differs from ``fixed`` (its group, or for a group
    pattern its source alone), with ``fixed``; None if it adds more than one item."""
    extra = [item for item in p if item not in fixed]
    return (extra[0][0], fixed) if len(extra) == 1 else None


def _sibling_families(ctx: OperatorContext, query: str, patterns: list[Pattern], labels: list[str],
                      fixed: list[Pattern]) -> tuple[list[list[int]], dict[int, float]]:
    """The families of sibling patterns (the same ``fixed`` items, other values of one
    key) that hold a relevant pattern, and the embedder cosine of each member."""
    if ctx.models.embedder is None or ctx.retrieve.sibling_margin is None or "relevant" not in labels:
        return [], {}
    families: dict[tuple[str, Pattern], list[int]] = {}
    for i, (p, f) in enumerate(zip(patterns, fixed)):
        key = _sibling_key(p, f)
        if key is not None:
            families.setdefault(key, []).append(i)
    # a category has a few values; a key with many (conversation titles) names things,
    # and their cosines spread without saying which kind of thing is asked about
    found = [ix for ix in families.values()
             if 1 < len(ix) <= ctx.retrieve.max_siblings and any(labels[i] == "relevant" for i in ix)]
    ask = sorted({i for ix in found for i in ix})
    if not ask:
        return [], {}
    return found, dict(zip(ask, _pattern_similarities(ctx, query, [describe_pattern(patterns[i]) for i in ask])))


def _doubt_weaker_siblings(ctx: OperatorContext, query: str, patterns: list[Pattern], labels: list[str],
                           fixed: list[Pattern]) -> list[str]:
    """A pattern the classifier calls relevant is only partial when a sibling (the
    same ``fixed`` items, another value of the same key) is much nearer the query in
    the embedder's space. The classifier called "activity: running", "activity:
    swimming" and "activity: yoga" all relevant for "yoga class" (cosines 0.38,
    0.40, 0.72), and Spotify's music plays as well as its podcast plays relevant for
    "podcast episode" (0.18, 0.47): the yoga count took in every workout."""
    families, sims = _sibling_families(ctx, query, patterns, labels, fixed)
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
                out[i] = SIBLING_NAMED
            elif labels[i] == "relevant":
                out[i] = SIBLING_DOUBTED
    return out


def _value_said(p: Pattern, fixed: Pattern, said: set[str]) -> bool:
    """Whether the query says every word of the value in which ``p`` differs from ``fixed``."""
    extra = [v for k, v in p if (k, v) not in fixed]
    words = stems(str(extra[0]).replace("_", " ")) if len(extra) == 1 else set()
    return bool(words) and words <= said


def _value_labels(ctx: OperatorContext, query: str, group: Pattern,
                  value_pats: list[tuple[Pattern, int]]) -> list[str]:
    pats = [p for p, _ in value_pats]
    labels = _doubt_far_patterns(ctx, query, pats, _classify(ctx, query, pats))
    return _doubt_weaker_siblings(ctx, query, pats, labels, [group] * len(pats))


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
    sample = fetch_events(ctx, _sample(ctx, source, kind, settings.group_sample))
    value_pats = value_patterns(group, (e.items for e in sample), max_patterns=settings.max_patterns)
    pats = [p for p, _ in value_pats]
    labels = _doubt_far_patterns(ctx, query, pats, _classify(ctx, query, pats))
    families, sims = _sibling_families(ctx, query, pats, labels, [group] * len(pats))
    splits, best = False, {}
    for ix in families:
        top = max((sims[i] for i in ix if labels[i] == "relevant"), default=None)
        if top is None:
            continue
        best[_sibling_key(pats[ix[0]], group)[0]] = top
        splits = splits or any(sims[i] < top - settings.sibling_margin for i in ix)
    shared = universal_items(group, (e.items for e in sample))
    cos = _pattern_similarities(ctx, query, [describe_pattern(with_item(group, item)) for item in shared]) \
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


def _outranked(surveys: dict[tuple[str, str], _Survey], margin: float) -> set[tuple[str, str]]:
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


_WORD = re.compile(r"[^\W\d_][\w'’.-]*")


def names_something(query: str) -> bool:
    """Whether ``query`` names someone or something: a capitalised word after its
    first ("songs by The Sugar Gutiérrezs", "Diane Edwards"; "I" aside; see :func:`names`)."""
    return bool(names(query))


def names(query: str) -> list[tuple[str, ...]]:
    """The names ``query`` gives (see :func:`names_something`): runs of capitalised
    words, each word without a possessive "'s", stop words left out. "trip to Rome,
    Italy" [("Rome",), ("Italy",)], "visited Liberty Bell" [("Liberty", "Bell")],
    "songs by The Sugar Gutiérrezs" [("Sugar", "Gutiérrezs")]."""
    out: list[tuple[str, ...]] = []
    run: list[str] = []
    end = -1
    for n, m in enumerate(_WORD.finditer(query)):
        w = re.sub(r"['’]s$", "", m.group()).strip(".'’-")
        name = n > 0 and bool(w) and w[0].isupper() and w != "I"
        if run and (not name or query[end:m.start()].strip()):
            out.append(tuple(run))
            run = []
        if name and w.lower() not in STOP:
            run.append(w)
        end = m.end()
    if run:
        out.append(tuple(run))
    return list(dict.fromkeys(out))


_KIND_STEMS = frozenset().union(*(stems(" ".join((kind.replace("_", " "), *nouns, *verbs)))
                                   for kind, (nouns, verbs) in KIND_WORDS.items()))
# ... and words that say only that someone was there: "meeting Benito Ramírez" is any
# time with him (the embedder put his coffees far from "meeting"; 3 of 56 were lost)
_BEING_WITH = stems("meet meeting met see seeing saw seen visit visited hang hanging spend spending spent "
                    "together company")
_EDGE_WORDS = frozenset("and the a an".split())


def _without_names(query: str, wanted: list[tuple[str, ...]]) -> str:
    """``query`` without the words of the names it gives (:func:`names`) and the
    words that only joined them: "go get groceries with Chloe" "go get groceries
    with", "talked to Layla" "talked to" (the reranker told talks from meals better
    so than asked "talked"); "" where nothing is left to say what happened ("Chloe",
    "with Ana Ruiz"), or only that they were there ("meeting", "spent time"), or
    only what kind of event it was, which the patterns judge: to
    the reranker "listened to" was far from The Honey Walshs' plays, "mail from"
    from Patrick Perry's mails (persona p5 lost both)."""
    if not wanted:
        return ""
    named = {w.lower() for name in wanted for w in name}
    words = [w for w in query.split()
             if re.sub(r"['’]s$", "", w.strip(",.;:!?\"")).strip(".'’-").lower() not in named]
    while words and words[-1].lower().strip(",") in _EDGE_WORDS:
        words.pop()
    rest = " ".join(words).strip(" ,")
    return rest if stems(rest) - _KIND_STEMS - _BEING_WITH else ""


def says_a_name(e: "_Event", wanted: list[tuple[str, ...]]) -> bool:
    """Whether the event's title, text or attribute values say a word of one of
    ``wanted`` (from :func:`names`): in any case, but an acronym in capitals only
    ("US" is not "us"). One word is enough: a diary says "Dorita" for "time with
    Dorita Cabezas". But not a word of another name: "Statue of Liberty" does not say
    "Liberty Bell", nor "Dorita Smith" "Dorita Cabezas" (see :func:`_in_another_name`)."""
    text = "\n".join([e.title or "", e.text or "", *(str(v) for _, v in e.pairs)])
    for name in wanted:
        for w in name:
            for m in re.finditer(rf"(?<!\w){re.escape(w)}(?!\w)", text, 0 if len(w) > 1 and w.isupper() else re.I):
                if not _in_another_name(text, m.start(), m.end(), name):
                    return True
    return False


# words that join the capitalised words of one name: "Statue of Liberty", "Leonardo da Vinci"
_NAME_JOINERS = PARTICLES | {"of"}
_SENTENCE_START = re.compile(r"(^|[.!?:;#\n])\s*$")


def _in_another_name(text: str, start: int, end: int, name: tuple[str, ...]) -> bool:
    """Whether the capitalised word at ``text[start:end]`` belongs to another name
    than ``name``: a run of capitalised words (spaces between them, or a joiner such
    as "of" or "da") with a word ``name`` lacks, lacking a word of ``name``. "Chloe
    Brown" says "Chloe"; "Statue of Liberty" does not say "Liberty Bell". The first
    word of a sentence is capitalised anyway and is no part of a name ("Visited
    Liberty Bell today")."""
    if not text[start].isupper():
        return False
    words = list(_WORD.finditer(text))
    at = next((n for n, m in enumerate(words) if m.start() <= start < m.end()), None)
    if at is None:
        return False
    # the word as names() has it: "Chloe." at a sentence's end is Chloe
    run = {re.sub(r"['’]s$", "", words[at].group()).strip(".'’-").lower()}
    for step in (-1, 1):
        n = at
        while 0 <= n + step < len(words):
            a, b = (words[n + step], words[n]) if step < 0 else (words[n], words[n + step])
            if text[a.end():b.start()].strip(" \t"):  # a comma, a bracket, a line's end: the run ends
                break
            n += step
            w = re.sub(r"['’]s$", "", words[n].group()).strip(".'’-")
            if w.lower() in _NAME_JOINERS or (w.lower() in STOP and w.lower() != "and"):
                continue  # "Statue of Liberty"; "Lunch With Chloe" in a title's capitals
            if not w or not w[0].isupper() or w in ("I", "And"):
                break
            if not _SENTENCE_START.search(text[:words[n].start()]):
                run.add(w.lower())
    own = {w.lower() for w in name}
    return bool(run - own) and bool(own - run)


def _accepted_by_embedder(ctx: OperatorContext, query: str, partial_groups: list[tuple[str, str]],
                         doubted: set[tuple[str, str]], irrelevant_of: dict[tuple[str, str], list[Pattern]],
                         kept: dict[str, None]) -> list[str]:
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
    if names_something(query):
        ctx.note("no sentence acceptance: the query names someone or something")
        return []
    near = ctx.index.nearest_sentences(ctx.models.embedder.embed([query])[0], settings.accept_similarity)
    eligible = set(partial_groups) - doubted
    events = {e.id: e for e in fetch_events(ctx, [i for i in near if i not in kept])
              if (e.source, e.kind) in eligible
              and not any(matches(p, e.items) for p in irrelevant_of.get((e.source, e.kind), ()))}
    events = {i: e for i, e in events.items() if not contradicts(query, f"{e.title or ''} {e.text or ''}")}
    if not events:
        return []
    wanted = stems(query)
    need = math.floor((settings.accept_words or 0) * len(wanted))
    if need:
        events = {i: e for i, e in events.items() if len(wanted & stems(f"{e.title or ''} {e.text or ''}")) >= need}
        if not events:
            return []
    top = max(near[i] for i in events)
    bar = max(settings.accept_similarity, top - settings.accept_band)
    accepted = sorted((i for i in events if near[i] >= bar), key=lambda i: -near[i])
    ctx.note(f"{len(accepted)} event{'s' if len(accepted) != 1 else ''} kept without the reranker: "
             f"a sentence within cosine {bar:.2f} of the query (the nearest: {top:.2f})")
    return accepted


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


def retrieve(node: Retrieve, ctx: OperatorContext) -> list[Row]:
    """Group patterns first (a whole kind of event is in or out), value patterns
    inside the partial groups, the reranker for the search candidates no pattern
    decides; see the module docstring. A search made before over the same documents
    with the same inputs is answered from the index's memo."""
    if ctx.index is None:
        ctx.index = RetrievalIndex(ctx.store, sparse=ctx.models.sparse, embedder=ctx.models.embedder)
    ctx.index.refresh(cancel=ctx.cancel, waiting=lambda stage, done, total, seconds: _say_waiting(
        ctx, stage, done, total, seconds))  # new or removed events clear the memo
    ctx.check_cancel()
    # the inputs the result depends on: the query, the settings, and the condition it
    # judges a window of events by, where it does (the models are the engine's own)
    windowed = ctx.wanted is not None and bool(ctx.window)
    key = (node.query, ctx.retrieve, repr(ctx.wanted) if windowed else None,
           ctx.window if windowed else 0, id(ctx.models))
    found = ctx.index.memo.get(key)
    if found is not None:
        rows, notes = found
        ctx.notes.extend(notes)
        ctx.note(f"the same search as an earlier question's: its {len(rows)} rows reused")
        return list(rows)
    start = len(ctx.notes)
    rows = _retrieve(node, ctx)
    ctx.index.memo.put(key, rows, ctx.notes[start:], keep=ctx.models)
    return rows


def _retrieve(node: Retrieve, ctx: OperatorContext) -> list[Row]:
    settings = ctx.retrieve
    query = node.query
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

    # 1. one pattern per (source, kind): whole kinds in or out
    groups = _groups(ctx)
    group_pats = [group_pattern(s, k) for s, k, _ in groups]
    group_labels = _classify(ctx, query, group_pats)
    # siblings: the kinds of one source ("kind: podcast_stream" beside "kind: music_stream")
    group_labels = _doubt_weaker_siblings(ctx, query, group_pats, group_labels,
                                          [(("source", s),) for s, _, _ in groups])
    # a query that says a kind of event and nothing more asks for all of it, and not
    # for a kind it says only part of ("podcast episode": not Netflix's episodes)
    named = [_names_the_kind(query, s, k) for s, k, _ in groups]
    # ... nor for another source when it names the kind's source too: for "ChatGPT
    # conversation" a calendar's "Just chatting" evenings came within the embedder's
    # reach of the query, and 2023's 192 conversations were counted as 233
    sourced = {s for (s, _, _), n in zip(groups, named) if n and stems(s.replace("_", " ")) & said_words(query)}
    # ... nor for the other kinds of the source of the kind it names, where it says no
    # word of theirs: "listened to a song" is not about Spotify's podcasts, which the
    # classifier called relevant (a count of May's songs came out 333, not 326); "chat"
    # is about a chat log's conversations as much as its turns
    naming = {s for (s, _, _), n in zip(groups, named) if n}
    group_labels = [KIND_NAMED if n else OTHER_KIND_NAMED if (sourced and s not in sourced) or (
                    s in naming and not _says_a_word_of_the_kind(query, k)) or (
                    any(named) and _half_names_the_kind(query, k)) else lab
                    for (s, k, _), lab, n in zip(groups, group_labels, named)]
    doubted_groups = {(s, k) for (s, k, _), lab in zip(groups, group_labels) if lab == SIBLING_DOUBTED}
    ctx.check_cancel()
    kept_ids: dict[str, None] = {}
    decided: list[str] = []
    partial_groups: list[tuple[str, str]] = []
    surveys = {(source, kind): survey for (source, kind, _), label in zip(groups, group_labels)
               if label == "relevant" and (survey := _survey(ctx, query, source, kind)) is not None}
    outranked = _outranked(surveys, settings.sibling_margin) if surveys else set()
    doubted_groups |= outranked
    for (source, kind, n), p, label in zip(groups, group_pats, group_labels):
        if (source, kind) in outranked:
            label = "relevant, but another source's like events are nearer the query: partial"
        elif label == "relevant" and surveys.get((source, kind)) and surveys[(source, kind)].splits:
            label = "relevant, but its values tell its events apart: partial"
        decided.append(f"{describe_pattern(p)} [{label}, {n}]")
        if label in ("relevant", KIND_NAMED):
            kept_ids.update(dict.fromkeys(_ids_where(ctx, p)))
        elif label not in ("irrelevant", OTHER_KIND_NAMED, SIBLING_NAMED):
            partial_groups.append((source, kind))
    # "irrelevant" drops a whole kind unseen: let the reranker check the kind's best
    # search hits first ("songs by <a name the classifier never saw>" is about plays)
    irrelevant = [(s, k) for (s, k, _), lab in zip(groups, group_labels) if lab == "irrelevant"]
    revived: set[tuple[str, str]] = set()
    if irrelevant and ctx.models.reranker is not None and settings.verify_irrelevant and candidate_ids:
        rank = {i: n for n, i in enumerate(candidate_ids)}
        top: dict[tuple[str, str], list[_Event]] = {}
        for e in sorted(fetch_events(ctx, candidate_ids), key=lambda e: rank[e.id]):
            g = (e.source, e.kind)
            if g in irrelevant and len(top.setdefault(g, [])) < settings.verify_irrelevant:
                top[g].append(e)
        checks = [e for es in top.values() for e in es]
        if checks:
            scores = dict(zip((e.id for e in checks), score_events(ctx.models.reranker, query, checks)))
            if settings.revive_similarity is not None and not names_something(query):
                # the embedder must agree (an event it has no vectors for yet keeps its score);
                # not on a name, which it places by spelling ("Diane Edwards")
                near = _stored_similarities(ctx, query, checks)
                scores = {i: sc if max(near.get(i) or [1.0]) >= settings.revive_similarity else float("-inf")
                          for i, sc in scores.items()}
            revived = _revived(top, scores, settings.rerank_threshold)
            for g in sorted(revived):
                partial_groups.append(g)
                decided.append(f"{describe_pattern(group_pattern(*g))} [irrelevant, but search hits pass "
                               f"the reranker: partial]")
    # a small partial group is judged whole: search misses paraphrases ("lunch at
    # Golden Dragon" for "restaurants"), and judging a few hundred events is cheap.
    # So is a big group's part that a FILTER over this RETRIEVE can keep: the 47 diary
    # days of October 2005, not the best 300 search hits of 27 years
    sizes = {(s, k): n for s, k, n in groups}
    whole = [g for g in partial_groups if sizes[g] <= settings.rerank_whole_group] \
        if ctx.models.reranker is not None else []  # without a judge, a whole group would all be kept
    windowed = ctx.wanted is not None and bool(ctx.window)
    in_window: dict[tuple[str, str], list[str]] = {}
    if windowed and ctx.models.reranker is not None:
        for g in partial_groups:
            if g not in whole and (ids := _ids_in_window(ctx, *g)) is not None \
                    and len(ids) <= ctx.window:
                in_window[g] = ids
                ctx.note(f"{describe_pattern(group_pattern(*g))}: the {len(ids)} events the filter can keep "
                         "are judged whole")
    whole_set = set(whole) | set(in_window)
    if whole_set:
        known = set(candidate_ids)
        for source, kind in [*whole, *in_window]:
            ids = in_window[(source, kind)] if (source, kind) in in_window else \
                _ids_where(ctx, group_pattern(source, kind))
            candidate_ids += [i for i in ids if i not in known]
            known.update(ids)

    # 2. inside partial groups: value patterns mined from the group's candidates and a sample
    candidates = fetch_events(ctx, candidate_ids)
    rank_of = {i: n for n, i in enumerate(candidate_ids)}
    by_group: dict[tuple[str, str], list[_Event]] = {}
    for e in candidates:
        by_group.setdefault((e.source, e.kind), []).append(e)
    undecided: list[_Event] = []
    irrelevant_of: dict[tuple[str, str], list[Pattern]] = {}
    for source, kind in partial_groups:
        ctx.check_cancel()
        group = group_pattern(source, kind)
        members = by_group.get((source, kind), [])
        if windowed:
            # what the filter can keep first; of the rest only the best search hits, enough
            # to tell "none in April" from "nothing like it at all"
            inside = {e.id for e in members if ctx.is_wanted(e.row())}
            members = sorted(members, key=lambda e: (e.id not in inside, rank_of[e.id]))
            members = members[:len(inside) + settings.rerank_outside_window]
        if (source, kind) not in whole_set and len(members) > settings.rerank_per_group:
            # a big group: its best search hits only (the reranker costs ~5 ms a pair)
            members = members[:settings.rerank_per_group] if windowed else \
                sorted(members, key=lambda e: rank_of[e.id])[:settings.rerank_per_group]
        seen = {e.id for e in members}
        sample = members + fetch_events(ctx, [i for i in _sample(ctx, source, kind, settings.group_sample)
                                              if i not in seen])
        value_pats = value_patterns(group, (e.items for e in sample), max_patterns=settings.max_patterns)
        labels = _value_labels(ctx, query, group, value_pats)
        if (source, kind) in doubted_groups:  # a sibling kind is the one asked about: no value is taken whole
            labels = [SIBLING_DOUBTED if lab == "relevant" else lab for lab in labels]
        relevant = [p for (p, _), lab in zip(value_pats, labels) if lab == "relevant"]
        # the classifier was wrong about a revived group: its "irrelevant" values drop nothing
        irrelevant = [] if (source, kind) in revived else [
            p for (p, _), lab in zip(value_pats, labels) if lab in ("irrelevant", SIBLING_NAMED)]
        irrelevant_of[(source, kind)] = irrelevant
        decided.extend(f"{describe_pattern(p)} [{lab}, {c}/{len(sample)}]"
                       for (p, c), lab in zip(value_pats, labels) if lab != "partial")
        for p in relevant:
            kept_ids.update(dict.fromkeys(_ids_where(ctx, p)))
        for e in members:
            if e.id in kept_ids or any(matches(p, e.items) for p in irrelevant):
                continue
            undecided.append(e)

    # 3. what is as near the query as the nearest events are, sentence by sentence, is kept
    accepted = _accepted_by_embedder(ctx, query, partial_groups, doubted_groups, irrelevant_of, kept_ids)
    if accepted:
        kept_ids.update(dict.fromkeys(accepted))
        undecided = [e for e in undecided if e.id not in kept_ids]

    # 4. the reranker decides the candidates no pattern did
    if undecided:
        if ctx.models.reranker is None:
            ctx.note(f"no reranker: kept all {len(undecided)} undecided candidates")
            kept_ids.update(dict.fromkeys(e.id for e in undecided))
        else:
            stored = _stored_similarities(ctx, query, undecided)
            far = {e.id for e in undecided if e.id in stored and max(stored[e.id]) < settings.min_similarity}
            if far:  # none of their passages could pass the embedder's check below
                undecided = [e for e in undecided if e.id not in far]
                ctx.note(f"{len(far)} candidates not reranked: no passage within cosine {settings.min_similarity} "
                         "of the query")
            passed: list[tuple[_Event, str]] = []  # with the passage that made it pass
            for i in range(0, len(undecided), settings.rerank_batch):
                ctx.check_cancel()
                batch = undecided[i:i + settings.rerank_batch]
                best = best_passages(ctx.models.reranker, query, batch)
                passed.extend((e, text) for e, (s, text) in zip(batch, best) if s >= settings.rerank_threshold)
            ctx.note(f"reranked {len(undecided)} candidates, {len(passed)} passed")
            wanted = names(query) if settings.require_names else []
            if wanted and passed:
                named = [(e, text) for e, text in passed if says_a_name(e, wanted)]
                if len(named) < len(passed):
                    ctx.note(f"{len(passed) - len(named)} of them dropped: they name none of "
                             + ", ".join(f"'{' '.join(n)}'" for n in wanted))
                passed = named
            rest = _without_names(query, wanted)
            if rest and passed and settings.rest_threshold is not None:
                ctx.check_cancel()
                scores = best_passages(ctx.models.reranker, rest, [e for e, _ in passed])
                near = similarities(ctx.models.embedder, rest, [t for _, t in scores]) \
                    if ctx.models.embedder is not None else [1.0] * len(scores)
                kept_rest = [p for p, (s, _), sim in zip(passed, scores, near)
                             if s >= settings.rest_threshold and sim >= settings.min_similarity]
                if len(kept_rest) < len(passed):
                    ctx.note(f"{len(passed) - len(kept_rest)} of them dropped: below {settings.rest_threshold} "
                             f"(or cosine {settings.min_similarity}) for “{rest}”, the query without its names")
                passed = kept_rest
            said = [(e, text) for e, text in passed if not contradicts(query, f"{e.title or ''} {e.text or ''}")]
            if len(said) < len(passed):
                ctx.note(f"{len(passed) - len(said)} of them dropped: they name another meal than the query")
                passed = said
            if ctx.models.embedder is not None and passed:
                near = _passed_similarities(ctx, query, passed, stored)
                kept = [p for p, sim in zip(passed, near) if sim >= settings.min_similarity]
                if len(kept) < len(passed):
                    ctx.note(f"{len(passed) - len(kept)} of them dropped: further from the query than "
                             f"{settings.min_similarity} (embedder cosine)")
                passed = kept
            kept_ids.update(dict.fromkeys(e.id for e, _ in passed))
    rows = _of_the_kind_named(query, [e.row() for e in fetch_events(ctx, list(kept_ids))], ctx)
    merged = merge_overlapping(rows, settings.merge_min_overlap)
    if len(merged) < len(rows):
        ctx.note(f"merged {len(rows) - len(merged)} events that overlap an event of another source")
    ctx.note("patterns: " + "; ".join(decided[:16]) + (f"; … {len(decided) - 16} more" if len(decided) > 16 else ""))
    return merged
