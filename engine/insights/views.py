"""Read-only figures over the conversation insights for the Insights view and the
CLI: topics with counts for a period, conversations per month by topic, a weekday x
hour heat map, top keywords, and the conversations behind any value."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import date

import orjson

from engine.insights import tables
from engine.insights.job import topic_name_sql


@dataclass(frozen=True, slots=True)
class Period:
    since: date | None = None  # inclusive, local dates
    until: date | None = None  # inclusive

    def where(self, alias: str = "i") -> tuple[str, list]:
        parts, params = ["true"], []
        if self.since:
            parts.append(f"{alias}.local_date >= ?"); params.append(self.since)
        if self.until:
            parts.append(f"{alias}.local_date <= ?"); params.append(self.until)
        return " AND ".join(parts), params


def has_insights(store) -> bool:
    con = store.reader()
    return tables.exists(con) and con.execute("SELECT count(*) FROM conversation_insights").fetchone()[0] > 0


def topics(store, period: Period = Period()) -> list[dict]:
    """Topics (by the names the user sees) with their subtopics and counts, largest first."""
    if not has_insights(store):
        return []
    where, params = period.where()
    rows = store.reader().execute(
        f"SELECT {topic_name_sql('i.topic_id')} AS topic, {topic_name_sql('i.subtopic_id')} AS sub, count(*), "
        f"min(i.local_date), max(i.local_date), list(i.id) FROM conversation_insights i WHERE {where} "
        f"GROUP BY ALL", params).fetchall()
    by_topic: dict[str, dict] = {}
    for topic, sub, n, first, last, ids in rows:
        t = by_topic.setdefault(topic, {"topic": topic, "count": 0, "first": first, "last": last,
                                        "subtopics": [], "conversation_ids": []})
        t["count"] += n
        t["first"] = min(t["first"], first)
        t["last"] = max(t["last"], last)
        t["subtopics"].append({"subtopic": sub, "count": n, "conversation_ids": sorted(ids)})
        t["conversation_ids"] += ids
    for t in by_topic.values():
        t["subtopics"].sort(key=lambda s: (-s["count"], s["subtopic"]))
        t["conversation_ids"].sort()
        t["keywords"] = top_keywords(store, period, topic=t["topic"], limit=6)
    return sorted(by_topic.values(), key=lambda t: (-t["count"], t["topic"]))


def per_month(store, period: Period = Period()) -> dict[str, dict[str, int]]:
    """month -> topic -> conversations."""
    if not has_insights(store):
        return {}
    where, params = period.where()
    out: dict[str, dict[str, int]] = {}
    for month, topic, n in store.reader().execute(
            f"SELECT i.month, {topic_name_sql('i.topic_id')}, count(*) FROM conversation_insights i "
            f"WHERE {where} GROUP BY ALL ORDER BY 1", params).fetchall():
        out.setdefault(month, {})[topic] = n
    return out


def heat_map(store, period: Period = Period()) -> list[list[int]]:
    """7 x 24 counts: weekday (Monday first) by local hour."""
    grid = [[0] * 24 for _ in range(7)]
    if not has_insights(store):
        return grid
    where, params = period.where()
    for wd, hour, n in store.reader().execute(
            f"SELECT i.weekday, i.hour, count(*) FROM conversation_insights i WHERE {where} GROUP BY ALL",
            params).fetchall():
        grid[wd][hour] = n
    return grid


def top_keywords(store, period: Period = Period(), *, topic: str | None = None, limit: int = 15) -> list[dict]:
    """Keywords by how many conversations of the period (and topic) have them."""
    if not has_insights(store):
        return []
    where, params = period.where()
    if topic is not None:
        where += f" AND {topic_name_sql('i.topic_id')} = ?"
        params.append(topic)
    counts: Counter[str] = Counter()
    spelling: dict[str, str] = {}
    ids: dict[str, list[str]] = {}
    for cid, kws in store.reader().execute(
            f"SELECT i.id, i.keywords FROM conversation_insights i WHERE {where}", params).fetchall():
        for k in orjson.loads(kws):
            key = k.casefold()
            counts[key] += 1
            spelling.setdefault(key, k)
            ids.setdefault(key, []).append(cid)
    return [{"keyword": spelling[k], "count": n, "conversation_ids": sorted(ids[k])}
            for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]


def conversations(store, ids: list[str]) -> list[dict]:
    """The conversations behind a bar: title, local date, topic, summary."""
    if not ids or not has_insights(store):
        return []
    rows = store.reader().execute(
        f"SELECT i.id, i.title, i.local_date, i.hour, {topic_name_sql('i.topic_id')}, "
        f"{topic_name_sql('i.subtopic_id')}, i.summary, i.keywords, i.language "
        f"FROM conversation_insights i WHERE list_contains(?, i.id) ORDER BY i.local_date, i.id", [ids]).fetchall()
    return [{"id": r[0], "title": r[1], "date": r[2], "hour": r[3], "topic": r[4], "subtopic": r[5],
             "summary": r[6], "keywords": orjson.loads(r[7]), "language": r[8]} for r in rows]


def conversation_ids(store, period: Period = Period(), *, month: str | None = None, topic: str | None = None,
                     weekday: int | None = None, hour: int | None = None) -> list[str]:
    """Ids of the conversations of the period with the given month, topic, weekday and hour."""
    if not has_insights(store):
        return []
    where, params = period.where()
    for column, value in (("i.month", month), (topic_name_sql("i.topic_id"), topic), ("i.weekday", weekday),
                          ("i.hour", hour)):
        if value is not None:
            where += f" AND {column} = ?"
            params.append(value)
    return [r[0] for r in store.reader().execute(
        f"SELECT i.id FROM conversation_insights i WHERE {where} ORDER BY i.local_date, i.id", params).fetchall()]


def overview(store, period: Period = Period()) -> dict:
    """Everything the Insights view draws for a period, in one read."""
    return {"topics": topics(store, period), "per_month": per_month(store, period),
            "heat_map": heat_map(store, period), "keywords": top_keywords(store, period, limit=12),
            "has_insights": has_insights(store)}
