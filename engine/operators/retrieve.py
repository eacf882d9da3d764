"""RETRIEVE, as ReQAP's pipeline, tuned for recall:

1. candidates from full-text search (BM25) and the SparseEncoder over verbalised
   key-value documents (``engine.retrieval.index``);
2. frequent key-value patterns among the candidates, plus one pattern per source;
3. the PatternClassifier labels patterns relevant / irrelevant / partial. Events of
   relevant patterns are kept *from the whole store* (so a relevant source brings
   all its events, not only those the search found), of irrelevant ones dropped;
4. the Reranker classifies the remaining candidates (partial or no pattern);
5. events from different sources whose time spans mostly coincide are merged into one row
   (union of key-value pairs and spans; provenance = both ids).

Each event's label comes from the most specific pattern it matches. This module
reads the store and the index; it never writes the store.
"""
from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from itertools import combinations

import orjson

from engine.operators.context import OperatorContext, OperatorError
from engine.plan.nodes import Retrieve
from engine.plan.rows import Row
from engine.retrieval.index import RetrievalIndex, read_events
from engine.retrieval.verbalise import key_values, pattern_items, verbalise

log = logging.getLogger(__name__)

Pattern = tuple[tuple[str, str], ...]  # sorted (key, value) items, all must hold

_EVENT_SQL = 'SELECT id, source, kind, title, text, start, "end", tz_offset_min, attributes FROM events'


def local(dt: datetime | None, offset_min: int | None) -> datetime | None:
    """A stored naive-UTC time as an aware datetime in the event's local offset."""
    if dt is None:
        return None
    return dt.replace(tzinfo=timezone.utc).astimezone(timezone(timedelta(minutes=offset_min or 0)))


class _Event:
    __slots__ = ("id", "source", "kind", "title", "text", "start", "end", "attributes", "pairs", "items")

    def __init__(self, r: tuple):
        self.id, self.source, self.kind, self.title, self.text = r[0], r[1], r[2], r[3], r[4]
        self.start = local(r[5], r[7])
        self.end = local(r[6], r[7])
        self.attributes = orjson.loads(r[8]) if r[8] else {}
        self.pairs = key_values(self.source, self.kind, self.title, self.text, self.attributes)
        self.items = pattern_items(self.pairs)

    def row(self) -> Row:
        return Row({"source": self.source, "kind": self.kind, "title": self.title or "",
                    "text": self.text or "", "start": self.start, "end": self.end},
                   (self.id,), self.attributes)


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


def _pattern_sql(p: Pattern) -> tuple[str, list]:
    where, params = [], []
    for key, value in p:
        if key in ("source", "kind"):
            where.append(f"{key} = ?")
        else:
            path = "$." + ".".join('"' + part.replace('"', '') + '"' for part in key.split("."))
            where.append(f"json_extract_string(attributes, '{path}') = ?")
        params.append(value)
    return " AND ".join(where), params


def mine_patterns(events: list[_Event], *, min_fraction: float, max_patterns: int) -> list[tuple[Pattern, int]]:
    """Frequent single and paired key-value items among ``events`` plus one pattern
    per source; (pattern, support) most frequent first."""
    n = len(events)
    if not n:
        return []
    min_support = max(2, math.ceil(min_fraction * n)) if n > 2 else 1
    singles = Counter(item for e in events for item in e.items)
    frequent = {item for item, c in singles.items() if c >= min_support}
    pairs: Counter = Counter()
    for e in events:
        for a, b in combinations(sorted(e.items & frequent), 2):
            if a[0] != b[0]:
                pairs[(a, b)] += 1
    found: dict[Pattern, int] = {}
    for item in frequent:
        found[(item,)] = singles[item]
    for (a, b), c in pairs.items():
        # a pair that holds wherever one of its items holds adds nothing
        if c >= min_support and c < min(singles[a], singles[b]):
            found[(a, b)] = c
    ranked = sorted(found.items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))[:max_patterns]
    chosen = dict(ranked)
    for source, c in Counter(e.source for e in events).items():
        chosen.setdefault((("source", source),), c)
    return sorted(chosen.items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))


def describe_pattern(p: Pattern) -> str:
    return " | ".join(f"{k.replace('_', ' ')}: {v}" for k, v in p)


_TIE_ORDER = {"relevant": 0, "partial": 1, "irrelevant": 2}


def _decide(items: set, labelled: list[tuple[Pattern, int, str]]) -> str | None:
    """The label of the most specific pattern the event matches (more items first,
    then smaller support; on a tie relevant, then partial wins, for recall)."""
    best: tuple | None = None
    for p, support, label in labelled:
        if all(i in items for i in p):
            rank = (-len(p), support, _TIE_ORDER.get(label, 3))
            if best is None or rank < best[0]:
                best = (rank, label)
    return best[1] if best else None


def merge_overlapping(rows: list[Row], min_overlap: float) -> list[Row]:
    """Merge rows from different sources whose spans overlap by at least
    ``min_overlap`` of the longer one, i.e. records of the same happening (point
    events: the same instant)."""
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
    groups: dict[int, list[int]] = {}
    for i in order:
        groups.setdefault(find(i), []).append(i)
    out = []
    for members in groups.values():
        if len(members) == 1:
            out.append(rows[members[0]])
            continue
        first = rows[members[0]]
        values = dict(first.values)
        raw: dict = {}
        for m in reversed(members):
            raw.update(rows[m].raw)
        values["start"] = min(rows[m].get("start") for m in members)
        values["end"] = max((rows[m].get("end") or rows[m].get("start")) for m in members)
        values["text"] = " | ".join(t for t in (rows[m].get("text") for m in members) if t)
        values["sources"] = sorted({rows[m].get("source") for m in members})
        out.append(Row(values, frozenset().union(*(rows[m].ids for m in members)), raw))
    out.sort(key=lambda r: (r.get("start"), min(r.ids)))
    return out


def retrieve(node: Retrieve, ctx: OperatorContext) -> list[Row]:
    settings = ctx.retrieve
    query = node.query
    if ctx.index is None:
        ctx.index = RetrievalIndex(ctx.store, sparse=ctx.models.sparse)
    ctx.index.refresh(cancel=ctx.cancel)
    ctx.check_cancel()
    try:
        fts = ctx.index.fts_search(query, settings.fts_candidates)
    except Exception as exc:  # duckdb.Error or the fallback's errors: say which step failed
        raise OperatorError("RETRIEVE", f"full-text search for {query!r} failed: {exc}") from exc
    sparse = ctx.index.sparse_search(query, settings.sparse_candidates)
    if ctx.models.sparse is None:
        ctx.note("no sparse encoder: candidates from full-text search only")
    candidate_ids = list(dict.fromkeys([i for i, _ in fts] + [i for i, _ in sparse]))
    candidates = fetch_events(ctx, candidate_ids)
    ctx.note(f"{len(candidates)} candidates ({len(fts)} full-text, {len(sparse)} sparse, "
             f"{ctx.index.fts_backend})")
    if not candidates:
        return []

    patterns = mine_patterns(candidates, min_fraction=settings.min_support_fraction,
                             max_patterns=settings.max_patterns)
    if ctx.models.patterns is not None:
        labels = ctx.models.patterns.classify(query, [describe_pattern(p) for p, _ in patterns])
        if len(labels) != len(patterns):
            raise OperatorError("RETRIEVE", f"the pattern classifier returned {len(labels)} labels "
                                            f"for {len(patterns)} patterns")
    else:
        labels = ["partial"] * len(patterns)
        ctx.note("no pattern classifier: every candidate goes to the reranker")
    labelled = [(p, s, lab) for (p, s), lab in zip(patterns, labels)]
    ctx.check_cancel()

    # Relevant patterns select from the whole store, for recall.
    by_id = {e.id: e for e in candidates}
    for p, _, label in labelled:
        if label != "relevant":
            continue
        where, params = _pattern_sql(p)
        extra = [r[0] for r in ctx.store.reader().execute(
            f"SELECT id FROM events WHERE {where}", params).fetchall() if r[0] not in by_id]
        for e in fetch_events(ctx, extra):
            by_id[e.id] = e

    candidate_set = set(candidate_ids)
    kept: list[_Event] = []
    undecided: list[_Event] = []
    for e in by_id.values():
        label = _decide(e.items, labelled)
        if label == "relevant":
            kept.append(e)
        elif label == "irrelevant":
            continue
        elif e.id in candidate_set:
            undecided.append(e)
    if undecided:
        if ctx.models.reranker is None:
            ctx.note(f"no reranker: kept all {len(undecided)} undecided candidates")
            kept.extend(undecided)
        else:
            for i in range(0, len(undecided), settings.rerank_batch):
                ctx.check_cancel()
                batch = undecided[i:i + settings.rerank_batch]
                scores = ctx.models.reranker.score([(query, verbalise(e.pairs)) for e in batch])
                kept.extend(e for e, s in zip(batch, scores) if s >= settings.rerank_threshold)
    rows = [e.row() for e in kept]
    merged = merge_overlapping(rows, settings.merge_min_overlap)
    if len(merged) < len(rows):
        ctx.note(f"merged {len(rows) - len(merged)} events that overlap an event of another source")
    ctx.note("patterns: " + "; ".join(f"{describe_pattern(p)} [{lab}, {s}]" for p, s, lab in labelled[:12]))
    return merged
