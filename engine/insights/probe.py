"""PROBE over the conversation insights: search each of the plan's queries over the
conversations' summaries (dense, the Embedder) and their summary and key phrases
(sparse, SPLADE), pool the scores per conversation, cut hard by the plan's filters,
and count the values of the top conversations: the answer is a ranked list of
values with counts and the conversations behind each, never free text.

Given candidate answers (the paper's evaluation protocol), each evidence conversation
counts for the candidates it matches: by text where a candidate names one of its
values (a keyword, its topic, its weekday ...), else by embedding, for the candidate
nearest its summary, since a user's or a benchmark's labels are not our taxonomy.
"""
from __future__ import annotations

import logging
import re
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

import orjson

from engine.insights import tables
from engine.insights.job import topic_name_sql
from engine.insights.plan import ProbePlan, plan_question, time_window
from engine.insights.timeslots import MONTHS, WEEKDAYS, day_part
from engine.protocols import Embedder, Planner, SparseEncoder

log = logging.getLogger(__name__)

#: "max" (the paper) or "sum" (its code) of a conversation's scores over the queries;
#: measured with ``hindsight bench aqa --pooling``
POOLING = "max"
#: weight of the sparse score beside the dense cosine
SPARSE_WEIGHT = 0.02
#: evidence conversations counted, at most
TOP_K = 200
#: a conversation is about the plan's topic when its summary is this near the topic
TOPIC_SIMILARITY = 0.30
#: ... or when a query is this near and the topic itself is not far
TOPIC_QUERY_SIMILARITY = 0.40
ANSWER_VALUES = 10
#: in matching a candidate by embedding, the weight of a conversation's own summary
#: against its subtopic's average (1: its own only)
OWN_WEIGHT = 0.5
#: the least blended cosine for an embedding match
EMBED_FLOOR = 0.0


class NoInsights(LookupError):
    """No conversation has insights yet (import chats, then run the insights job)."""


@dataclass
class ConversationTable:
    """The stored insights of every conversation, in memory for one question."""

    ids: list[str]
    titles: list[str]
    summaries: list[str]
    vectors: object  # numpy array (n, d)
    sparse: list[dict[str, float]]
    values: list[dict[str, list[str]]]  # dimension -> this conversation's values
    days: list[date]
    weekdays: list[int]
    hours: list[int]

    @classmethod
    def load(cls, store) -> "ConversationTable":
        import numpy as np

        con = store.reader()
        if not tables.exists(con):
            raise NoInsights("no conversation insights yet: import chats, then run 'hindsight insights update'")
        rows = con.execute(
            f"SELECT i.id, coalesce(i.title, ''), i.summary, i.vector, i.sparse, i.keywords, i.language, "
            f"i.local_date, i.weekday, i.hour, i.month, i.season, {topic_name_sql('i.topic_id')}, "
            f"{topic_name_sql('i.subtopic_id')} FROM conversation_insights i ORDER BY i.local_date, i.id").fetchall()
        if not rows:
            raise NoInsights("no conversation insights yet: import chats, then run 'hindsight insights update'")
        values = []
        for r in rows:
            d: date = r[7]
            values.append({
                "topic": [r[12] or "Other"], "subtopic": [r[13] or "Other"], "keyword": list(orjson.loads(r[5])),
                "month": [r[10]], "weekday": [WEEKDAYS[r[8]]], "hour": [f"{r[9]:02d}:00"],
                "day_part": [day_part(r[9])], "season": [r[11]], "year": [str(d.year)],
                "language": [r[6] or ""], "month_name": [MONTHS[d.month - 1]],
            })
        return cls(ids=[r[0] for r in rows], titles=[r[1] for r in rows], summaries=[r[2] for r in rows],
                   vectors=np.asarray([r[3] for r in rows], dtype=np.float32),
                   sparse=[orjson.loads(r[4]) for r in rows], values=values, days=[r[7] for r in rows],
                   weekdays=[r[8] for r in rows], hours=[r[9] for r in rows])


@dataclass
class AnswerValue:
    value: str
    count: int
    conversation_ids: list[str]


@dataclass
class ProbeAnswer:
    question: str
    plan: ProbePlan
    answer: list[AnswerValue]
    ranking: list[str] | None
    evidence: list[str]
    filters: dict
    timings: dict[str, float] = field(default_factory=dict)
    note: str = ""

    def to_json(self) -> dict:
        out = {"question": self.question,
               "answer": [{"value": v.value, "count": v.count, "conversation_ids": v.conversation_ids}
                          for v in self.answer]}
        if self.ranking is not None:
            out["ranking"] = self.ranking
        out.update({"queries": list(self.plan.queries), "filters": self.filters,
                    "timings": {k: round(v, 3) for k, v in self.timings.items()}})
        return out


def _sparse_dot(q: dict[str, float], d: dict[str, float]) -> float:
    if len(q) > len(d):
        q, d = d, q
    return sum(w * d.get(t, 0.0) for t, w in q.items())


def scores(table: ConversationTable, queries: Sequence[str], embedder: Embedder, sparse: SparseEncoder | None,
           pooling: str = POOLING, sparse_weight: float = SPARSE_WEIGHT):
    """Each conversation's relevance to the queries, pooled over them."""
    import numpy as np

    qv = np.asarray(embedder.embed(list(queries)), dtype=np.float32)
    per_query = qv @ table.vectors.T  # (queries, conversations)
    if sparse is not None and sparse_weight:
        for qi, qs in enumerate(sparse.encode(list(queries))):
            per_query[qi] += sparse_weight * np.array([_sparse_dot(qs, d) for d in table.sparse], dtype=np.float32)
    if pooling == "sum":
        return per_query.sum(axis=0)
    if pooling == "max":
        return per_query.max(axis=0)
    raise ValueError(f"pooling must be 'max' or 'sum', not {pooling!r}")


def passes(table: ConversationTable, plan: ProbePlan, today: date, topic_near=None):
    """A boolean mask: the conversations the plan's filters keep."""
    import numpy as np

    since, until = time_window(plan, today)
    keep = np.ones(len(table.ids), dtype=bool)
    for i, d in enumerate(table.days):
        if since and d < since or until and d >= until:
            keep[i] = False
        elif plan.weekdays and table.weekdays[i] not in plan.weekdays:
            keep[i] = False
        elif plan.day_part and day_part(table.hours[i]) != plan.day_part:
            keep[i] = False
    if topic_near is not None:
        keep &= topic_near
    return keep


def about_topic(table: ConversationTable, topic: str, embedder: Embedder, queries: Sequence[str] = ()):
    """Conversations about ``topic``: their summary is near it, or their topic,
    subtopic or a keyword names it."""
    import numpy as np

    tv = np.asarray(embedder.embed([topic]), dtype=np.float32)[0]
    near = table.vectors @ tv >= TOPIC_SIMILARITY
    named = np.array([_matches_text(topic, v["topic"] + v["subtopic"] + v["keyword"]) for v in table.values])
    return near | named


def _words(text: str) -> str:
    return " " + re.sub(r"[^\w+#]+", " ", text.casefold()).strip() + " "


def _matches_text(label: str, values: Sequence[str]) -> bool:
    """Does ``label`` name one of ``values``, as whole words either way round?"""
    lw = _words(label)
    if len(lw.strip()) < 2:
        return False
    for v in values:
        vw = _words(v)
        if len(vw.strip()) >= 2 and (lw in vw or vw in lw):
            return True
    return False


def rank_candidates(table: ConversationTable, evidence: Sequence[int], candidates: Sequence[str],
                    embedder: Embedder, *, own_weight: float | None = None,
                    floor: float | None = None) -> tuple[list[str], dict[str, list[str]]]:
    """Candidates ordered by how many evidence conversations match each, and those
    conversations' ids per candidate.

    A conversation matches the candidates its values name (text match); failing
    that, the candidate nearest it, where a conversation's nearness blends its own
    summary's (``own_weight``) with its subtopic's average, so the user's own
    taxonomy carries a label to every conversation of a cluster; below ``floor`` it
    matches none."""
    import numpy as np

    own_weight = OWN_WEIGHT if own_weight is None else own_weight
    floor = EMBED_FLOOR if floor is None else floor
    if not candidates:
        return [], {}
    cv = np.asarray(embedder.embed(list(candidates)), dtype=np.float32)
    sims_all = table.vectors @ cv.T  # (conversations, candidates)
    if own_weight < 1.0:
        groups: dict[str, list[int]] = defaultdict(list)
        for i, v in enumerate(table.values):
            groups[v["subtopic"][0]].append(i)
        cluster = np.zeros_like(sims_all)
        for members in groups.values():
            cluster[members] = sims_all[members].mean(axis=0)
        sims_all = own_weight * sims_all + (1.0 - own_weight) * cluster
    counts = np.zeros(len(candidates))
    soft = np.zeros(len(candidates))
    behind: dict[str, list[str]] = {c: [] for c in candidates}
    for i in evidence:
        vals = table.values[i]
        every = [x for vs in vals.values() for x in vs] + [table.titles[i], table.summaries[i]]
        hits = [j for j, c in enumerate(candidates) if _matches_text(c, every)]
        if not hits:
            best = int(np.argmax(sims_all[i]))
            hits = [best] if sims_all[i, best] >= floor else []
        for j in hits:
            counts[j] += 1
            behind[candidates[j]].append(table.ids[i])
        soft += sims_all[i]
    order = sorted(range(len(candidates)), key=lambda j: (-counts[j], -soft[j], j))
    return [candidates[j] for j in order], behind


def group_values(table: ConversationTable, evidence: Sequence[int], dimension: str,
                 limit: int = ANSWER_VALUES) -> list[AnswerValue]:
    counts: Counter[str] = Counter()
    behind: dict[str, list[str]] = defaultdict(list)
    for i in evidence:
        for v in table.values[i].get(dimension, []):
            if v:
                counts[v] += 1
                behind[v].append(table.ids[i])
    return [AnswerValue(v, n, behind[v]) for v, n in
            sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]


class Probe:
    """Answers aggregative questions over the stored conversation insights."""

    def __init__(self, store, planner: Planner, embedder: Embedder, sparse: SparseEncoder | None = None, *,
                 pooling: str = POOLING, top_k: int = TOP_K):
        self.store = store
        self.planner = planner
        self.embedder = embedder
        self.sparse = sparse
        self.pooling = pooling
        self.top_k = top_k
        self._table: ConversationTable | None = None

    def warm_up(self, state_dir=None) -> None:
        """Evaluate the planner's stable prompt prefix now (kept on disk in
        ``state_dir``), so the first question pays only for its own tokens."""
        from engine.insights.plan import prefix

        preload = getattr(self.planner, "preload", None)
        if preload is not None:
            preload(prefix(), state_dir)

    def refresh(self) -> None:
        """Forget the loaded insights (after the insights job ran)."""
        self._table = None

    def table(self) -> ConversationTable:
        if self._table is None:
            self._table = ConversationTable.load(self.store)
        return self._table

    def ask(self, question: str, *, today: date | None = None, candidates: Sequence[str] = (),
            plan: ProbePlan | None = None) -> ProbeAnswer:
        import numpy as np

        today = today or date.today()
        t0 = time.monotonic()
        table = self.table()
        t_load = time.monotonic()
        if plan is None:
            plan = plan_question(self.planner, question)
        t_plan = time.monotonic()
        rel = scores(table, plan.queries, self.embedder, self.sparse, self.pooling)
        near = about_topic(table, plan.topic, self.embedder, plan.queries) if plan.topic else None
        keep = passes(table, plan, today, near)
        kept = np.flatnonzero(keep)
        evidence = kept[np.argsort(-rel[kept], kind="stable")][:self.top_k].tolist()
        t_search = time.monotonic()
        answer = group_values(table, evidence, plan.group_by)
        ranking = None
        if candidates:
            ranking, _behind = rank_candidates(table, evidence, list(candidates), self.embedder)
        t_end = time.monotonic()
        note = "" if evidence else "no conversation passes the question's filters"
        return ProbeAnswer(question=question, plan=plan, answer=answer, ranking=ranking,
                           evidence=[table.ids[i] for i in evidence], filters=plan.filters(today),
                           timings={"load_s": t_load - t0, "plan_s": t_plan - t_load, "search_s": t_search - t_plan,
                                    "count_s": t_end - t_search, "total_s": t_end - t0}, note=note)
