"""The aggregative-QA evaluation set behind ``hindsight bench aqa``.

Conversations: the hand-labelled ones of ``aqa_labels.json`` (a real ChatGPT export
and MultiChallenge, both in ``shared/data``), each given a realistic local time over
2024-2025 by a seeded generator whose habits differ per topic (coding on weekday
office hours, trips planned on spring weekends, cooking in the evening ...), then
written as one ChatGPT export that Hindsight imports like a user's own.

Questions: aggregative ones generated from the labels with 0-2 conditions (a time
range, a time slot, a topic) and 4-10 candidate answers whose gold relevance is the
count of matching conversations. Every question is in the ``dev`` part (tuning) or
the frozen ``eval`` part, by a hash of its text.

Scoring follows the WildChat-AQA ``evaluation.py``: the gold ranking grades the
candidates 9, 8, 7 ... (ties share a grade, a candidate no conversation matches is
0) and a predicted ranking gets NDCG@k over those grades.
"""
from __future__ import annotations

import calendar
import copy
import hashlib
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

LABELS = Path(__file__).with_name("aqa_labels.json")
HOME_TZ = "Europe/Amsterdam"
TODAY = date(2026, 1, 15)
FIRST_DAY = date(2024, 1, 1)
SEASON_OF = {12: "winter", 1: "winter", 2: "winter", 3: "spring", 4: "spring", 5: "spring", 6: "summer",
             7: "summer", 8: "summer", 9: "autumn", 10: "autumn", 11: "autumn"}
WEEKDAYS = tuple(calendar.day_name)
MONTHS = tuple(calendar.month_name)[1:]
DAY_PARTS = ("night", "morning", "afternoon", "evening")


class AQADataError(RuntimeError):
    """The shared data the set is built from is missing or not as expected."""


def shared_data() -> Path:
    return Path(__file__).resolve().parents[3] / "shared" / "data"


# ---- habits: when each topic's conversations happen --------------------------------
# weights per weekday (Mon..Sun), per hour band and per month; per year (2024, 2025)
_OFFICE = (1, 1, 1, 1, 1, .15, .1)
_LEISURE = (.3, .3, .3, .35, .6, 1, 1)
_HABITS = {
    "Software development": (_OFFICE, {range(9, 12): 3, range(13, 18): 3, range(20, 23): .6}, None, (.6, .4)),
    "Data science & AI": ((1, 1, 1, 1, .7, .3, .3), {range(10, 17): 1.5, range(19, 24): 2}, {9: 2, 10: 2, 11: 2, 12: 1.5}, (.35, .65)),
    "Work & career": (_OFFICE, {range(7, 12): 3, range(13, 17): 1}, {1: 2.5, 9: 2, 2: 1.5}, (.5, .5)),
    "Writing & learning": ((1, 1, 1, 1, 1, .6, .6), {range(13, 18): 3, range(9, 12): 1}, None, (.5, .5)),
    "Health & food": (_LEISURE, {range(17, 22): 3, range(7, 9): 1}, {1: 3, 2: 2, 3: 1.5}, (.5, .5)),
    "Leisure & home": (_LEISURE, {range(19, 24): 3, range(0, 2): 1, range(14, 18): 1}, {11: 2, 12: 2.5, 1: 2, 2: 1.5}, (.5, .5)),
    "Travel & events": (_LEISURE, {range(10, 13): 2, range(19, 23): 2}, {3: 2.5, 4: 3, 5: 3, 6: 2.5, 7: 1.5}, (.45, .55)),
}


def _pick(rng: random.Random, weights: dict) -> object:
    keys = list(weights)
    return rng.choices(keys, weights=[weights[k] for k in keys])[0]


def local_time_for(topic: str, rng: random.Random) -> datetime:
    weekdays, hours, months, years = _HABITS[topic]
    year = rng.choices((2024, 2025), weights=years)[0]
    month_w = {m: (months or {}).get(m, 1.0) for m in range(1, 13)}
    while True:
        month = _pick(rng, month_w)
        day = date(year, month, rng.randint(1, calendar.monthrange(year, month)[1]))
        if rng.random() < weekdays[day.weekday()]:
            break
    hour_w = {h: 0.15 for h in range(24)}
    for band, w in hours.items():
        for h in band:
            hour_w[h] = w
    hour = _pick(rng, hour_w)
    return datetime(day.year, day.month, day.day, hour, rng.randint(0, 59), rng.randint(0, 59))


# ---- the conversations -------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Labelled:
    key: str  # "chatgpt-export:12", "multichallenge:7"
    topic: str
    subtopic: str
    keywords: tuple[str, ...]
    local: datetime  # local wall time (HOME_TZ)

    @property
    def day(self) -> date:
        return self.local.date()


def labelled(seed: int = 7) -> list[Labelled]:
    doc = json.loads(LABELS.read_text(encoding="utf-8"))
    rng = random.Random(seed)
    return [Labelled(f"{c['source']}:{c['index']}", c["topic"], c["subtopic"], tuple(c["keywords"]),
                     local_time_for(c["topic"], rng)) for c in doc["conversations"]]


def _epoch(local: datetime) -> float:
    return local.replace(tzinfo=ZoneInfo(HOME_TZ)).timestamp()


def linear_conversation(cid: str, title: str | None, messages: Sequence[dict], start: float) -> dict:
    mapping = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
    parent = "root"
    for n, m in enumerate(messages):
        nid = f"{cid}-{n}"
        mapping[nid] = {"id": nid, "parent": parent, "children": [], "message": {
            "id": nid, "author": {"role": m["role"], "name": None, "metadata": {}},
            "create_time": start + 40 * n, "update_time": None,
            "content": {"content_type": "text", "parts": [m["content"]]}, "status": "finished_successfully",
            "metadata": {}, "recipient": "all"}}
        mapping[parent]["children"].append(nid)
        parent = nid
    return {"title": title, "create_time": start, "update_time": start + 40 * len(messages), "mapping": mapping,
            "current_node": parent, "id": cid, "conversation_id": cid}


def _shifted(conv: dict, start: float) -> dict:
    """``conv`` with every time moved so that it begins at ``start``."""
    conv = copy.deepcopy(conv)
    delta = start - float(conv.get("create_time") or start)
    conv["create_time"] = start
    if conv.get("update_time"):
        conv["update_time"] = float(conv["update_time"]) + delta
    for node in conv["mapping"].values():
        msg = node.get("message")
        if msg:
            for k in ("create_time", "update_time"):
                if msg.get(k):
                    msg[k] = float(msg[k]) + delta
    return conv


def write_export(items: Sequence[Labelled], folder: Path, data: Path | None = None, copies: int = 1) -> Path:
    """A ChatGPT export (``conversations.json``) of ``items``; with ``copies`` > 1 each
    conversation is repeated under new ids a few weeks apart (a bigger archive for
    timing only)."""
    data = data or shared_data()
    chatgpt_file = data / "chatgpt-export" / "conversations.json"
    mc_file = data / "multichallenge" / "benchmark_questions.jsonl"
    try:
        chatgpt = json.loads(chatgpt_file.read_text(encoding="utf-8"))
        multi = [json.loads(line) for line in mc_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, ValueError) as exc:
        raise AQADataError(f"cannot read the shared chat data ({exc}); it lives in {data}") from exc
    out = []
    for copy_no in range(copies):
        for item in items:
            source, index = item.key.split(":")
            start = _epoch(item.local + timedelta(days=23 * copy_no))
            if source == "chatgpt-export":
                conv = _shifted(chatgpt[int(index)], start)
                if copy_no:
                    conv = json.loads(json.dumps(conv).replace(conv["id"], f"{conv['id']}-{copy_no}"))
            else:
                row = multi[int(index)]
                conv = linear_conversation(f"mc-{row['QUESTION_ID']}-{copy_no}", None, row["CONVERSATION"], start)
            out.append(conv)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "conversations.json"
    path.write_text(json.dumps(out), encoding="utf-8")
    return path


# ---- the questions -----------------------------------------------------------------
@dataclass(frozen=True)
class Question:
    id: str
    text: str
    kind: str  # topic, subtopic, keyword, weekday, season, day_part, month
    conditions: tuple[str, ...]  # "time range", "time slot", "topic"
    candidates: tuple[str, ...]
    gold: dict  # candidate -> count
    # the gold filters, for the oracle ablation
    since: date | None = None
    until: date | None = None  # exclusive
    weekdays: tuple[int, ...] = ()
    day_part: str | None = None
    topic: str | None = None

    @property
    def split(self) -> str:
        return "dev" if int(hashlib.sha256(self.text.encode()).hexdigest(), 16) % 5 < 2 else "eval"


_RANGES = (  # text, since, until (exclusive)
    ("in 2024", date(2024, 1, 1), date(2025, 1, 1)),
    ("last year", date(2025, 1, 1), date(2026, 1, 1)),
    ("in the spring of 2025", date(2025, 3, 1), date(2025, 6, 1)),
    ("in the summer of 2024", date(2024, 6, 1), date(2024, 9, 1)),
    ("in autumn 2025", date(2025, 9, 1), date(2025, 12, 1)),
    ("in the first half of 2024", date(2024, 1, 1), date(2024, 7, 1)),
    ("in March 2025", date(2025, 3, 1), date(2025, 4, 1)),
    ("in January 2024", date(2024, 1, 1), date(2024, 2, 1)),
    ("in the last 6 months", TODAY - timedelta(days=182), TODAY + timedelta(days=1)),
)
_SLOTS = (  # text, weekdays, day part
    ("on weekends", (5, 6), None),
    ("on weekdays", (0, 1, 2, 3, 4), None),
    ("in the evening", (), "evening"),
    ("in the morning", (), "morning"),
    ("on weekend evenings", (5, 6), "evening"),
    ("on Mondays", (0,), None),
)


def _part(hour: int) -> str:
    return DAY_PARTS[hour // 6]


def _keep(c: Labelled, since, until, weekdays, part, topic) -> bool:
    if since and c.day < since or until and c.day >= until:
        return False
    if weekdays and c.day.weekday() not in weekdays:
        return False
    if part and _part(c.local.hour) != part:
        return False
    return not topic or c.topic == topic


def _value(c: Labelled, kind: str) -> tuple[str, ...]:
    return {"topic": (c.topic,), "subtopic": (c.subtopic,), "keyword": c.keywords,
            "weekday": (WEEKDAYS[c.day.weekday()],), "season": (SEASON_OF[c.day.month],),
            "day_part": (_part(c.local.hour),), "month": (MONTHS[c.day.month - 1],)}[kind]


def _gold(items, kind, candidates, **cond) -> dict:
    counts = {c: 0 for c in candidates}
    folded = {c.casefold(): c for c in candidates}
    for item in items:
        if _keep(item, **cond):
            for v in _value(item, kind):
                if v.casefold() in folded:
                    counts[folded[v.casefold()]] += 1
    return counts


def _topic_phrase(topic: str) -> str:
    return topic.lower().replace("&", "and")


def questions(items: Sequence[Labelled], seed: int = 11) -> list[Question]:
    """The aggregative questions over ``items``; each has a clear winner (the top
    count is at least 2 and beats the runner-up)."""
    rng = random.Random(seed)
    topics = sorted({c.topic for c in items})
    subtopics = sorted({c.subtopic for c in items})
    sub_of = {t: sorted({c.subtopic for c in items if c.topic == t}) for t in topics}
    out: list[Question] = []
    seen: set[str] = set()

    def add(text, kind, conditions, candidates, since=None, until=None, weekdays=(), part=None, topic=None):
        cands = list(dict.fromkeys(candidates))
        rng.shuffle(cands)
        gold = _gold(items, kind, cands, since=since, until=until, weekdays=weekdays, part=part, topic=topic)
        ranked = sorted(gold.values(), reverse=True)
        if text in seen or not 4 <= len(cands) <= 10 or ranked[0] < 2 or ranked[0] == ranked[1]:
            return
        seen.add(text)
        out.append(Question(hashlib.sha256(text.encode()).hexdigest()[:10], text, kind, tuple(conditions),
                            tuple(cands), gold, since, until, tuple(weekdays), part, topic))

    def topic_cands(k):
        return rng.sample(topics, k)

    # topics, with no condition, a time range, a time slot, or both
    add("Which topic did I ask chatbots about most?", "topic", (), topics)
    for text, since, until in _RANGES:
        add(f"Which topic did I ask chatbots about most {text}?", "topic", ("time range",),
            topic_cands(rng.randint(5, 7)), since=since, until=until)
        add(f"What did I talk to ChatGPT about most {text}?", "topic", ("time range",),
            topic_cands(rng.randint(4, 7)), since=since, until=until)
    for text, wds, part in _SLOTS:
        add(f"What do I mostly chat with the assistant about {text}?", "topic", ("time slot",),
            topic_cands(rng.randint(5, 7)), weekdays=wds, part=part)
    for (rt, since, until), (st, wds, part) in zip(_RANGES, _SLOTS * 2):
        add(f"Which topic came up most {st} {rt}?", "topic", ("time range", "time slot"),
            topic_cands(rng.randint(4, 7)), since=since, until=until, weekdays=wds, part=part)
    # subtopics: of one topic, overall, in a time range
    for t in topics:
        distract = [s for s in subtopics if s not in sub_of[t]]
        cands = sub_of[t] + rng.sample(distract, max(0, 5 - len(sub_of[t])))
        add(f"Within {_topic_phrase(t)}, which subject did I ask about most?", "subtopic", ("topic",),
            cands[:10], topic=t)
        for text, since, until in rng.sample(_RANGES, 2):
            add(f"Which part of {_topic_phrase(t)} did I ask about most {text}?", "subtopic",
                ("topic", "time range"), cands[:10], since=since, until=until, topic=t)
    for n in range(6):
        add(f"Which subtopic did I ask about most{'' if n == 0 else ' ' + _RANGES[n][0]}?", "subtopic",
            () if n == 0 else ("time range",), rng.sample(subtopics, 8),
            since=None if n == 0 else _RANGES[n][1], until=None if n == 0 else _RANGES[n][2])
    for text, wds, part in _SLOTS:
        add(f"Which subtopic do I ask about most {text}?", "subtopic", ("time slot",), rng.sample(subtopics, 9),
            weekdays=wds, part=part)
    # keywords, within a topic
    for t in topics:
        kw_counts: dict[str, int] = {}
        for c in items:
            if c.topic == t:
                for k in c.keywords:
                    kw_counts[k] = kw_counts.get(k, 0) + 1
        common = [k for k, n in sorted(kw_counts.items(), key=lambda kv: -kv[1]) if n >= 2][:6]
        others = [k for c in items if c.topic != t for k in c.keywords]
        if len(common) >= 2:
            cands = common + rng.sample(sorted(set(others) - set(common)), 2)
            add(f"Which tool or subject kept coming up in my {_topic_phrase(t)} chats?", "keyword", ("topic",),
                cands, topic=t)
    all_kw: dict[str, int] = {}
    for c in items:
        for k in c.keywords:
            all_kw[k] = all_kw.get(k, 0) + 1
    top_kw = [k for k, n in sorted(all_kw.items(), key=lambda kv: -kv[1]) if n >= 3]
    for text, since, until in _RANGES[:5]:
        add(f"Which technology or thing did I ask about most {text}?", "keyword", ("time range",),
            rng.sample(top_kw, min(8, len(top_kw))), since=since, until=until)
    # time values, about a topic
    for t in topics:
        ph = _topic_phrase(t)
        add(f"On which weekday do I chat about {ph} most?", "weekday", ("topic",), WEEKDAYS, topic=t)
        add(f"In which season did I ask about {ph} most?", "season", ("topic",),
            ("winter", "spring", "summer", "autumn"), topic=t)
        add(f"At what time of day do I usually ask about {ph}?", "day_part", ("topic",), DAY_PARTS, topic=t)
        add(f"In which month of 2025 did I ask most about {ph}?", "month", ("topic", "time range"),
            rng.sample(MONTHS, 8), since=date(2025, 1, 1), until=date(2026, 1, 1), topic=t)
    add("On which weekday do I use chatbots most?", "weekday", (), WEEKDAYS)
    add("At what time of day do I chat with ChatGPT most on weekends?", "day_part", ("time slot",), DAY_PARTS,
        weekdays=(5, 6))
    add("In which season do I use ChatGPT most?", "season", (), ("winter", "spring", "summer", "autumn"))
    return out


# ---- scoring -----------------------------------------------------------------------
def grades(gold: dict) -> dict:
    """The paper's graded relevance: the gold ranking's candidates get 9, 8, 7 ...
    (equal counts share a grade), a candidate with no conversation 0."""
    levels = sorted({n for n in gold.values() if n > 0}, reverse=True)
    return {c: (max(0, 9 - levels.index(n)) if n > 0 else 0) for c, n in gold.items()}


def ndcg(ranking: Sequence[str], gold: dict, k: int) -> float:
    g = grades(gold)
    dcg = sum(g.get(c, 0) / math.log2(i + 2) for i, c in enumerate(ranking[:k]))
    ideal = sorted(g.values(), reverse=True)
    idcg = sum(v / math.log2(i + 2) for i, v in enumerate(ideal[:k]))
    return dcg / idcg if idcg else 0.0


def random_ndcg(candidates: Sequence[str], gold: dict, k: int, trials: int = 200, seed: int = 0) -> float:
    rng = random.Random(seed)
    total = 0.0
    for _ in range(trials):
        order = list(candidates)
        rng.shuffle(order)
        total += ndcg(order, gold, k)
    return total / trials
