"""A second frozen evaluation part for ``hindsight bench aqa``: ``--split fresh``.

The generated questions of :mod:`app.bench.aqa_set` share a handful of templates, and
the planner's rules were made while their dev part was read, so their eval part
measures wording the system has met. These questions were written by hand on
2026-11-29, in a user's own words, before any change of that session, and were
not run before they were frozen. They are for measuring only: no rule, prompt
example or training item may come from them, and their plans are not printed.

Each entry is the question and its gold filters; the candidates are drawn by a
seeded generator from the labelled values (as the generated questions' are), and
the gold relevance of a candidate is the count of labelled conversations that
match the filters and carry it. A question whose top count is under 2 or tied is
left out, as the generated set does.
"""
from __future__ import annotations

import calendar
import hashlib
import random
from collections.abc import Sequence
from datetime import date, timedelta

from app.bench.aqa_set import DAY_PARTS, MONTHS, TODAY, WEEKDAYS, Labelled, Question, _gold

SD, WC, DS, LH, WL, TE, HF = ("Software development", "Work & career", "Data science & AI", "Leisure & home",
                              "Writing & learning", "Travel & events", "Health & food")
WEEKEND = (5, 6)
WORKDAYS = (0, 1, 2, 3, 4)


def _year(y: int) -> dict:
    return {"since": date(y, 1, 1), "until": date(y + 1, 1, 1)}


def _months(y: int, first: int, last: int) -> dict:
    end = date(y + 1, 1, 1) if last == 12 else date(y, last + 1, 1)
    return {"since": date(y, first, 1), "until": end}


def _last_months(n: int) -> dict:
    m = TODAY.month - n
    y = TODAY.year + (m - 1) // 12
    m = (m - 1) % 12 + 1
    day = min(TODAY.day, calendar.monthrange(y, m)[1])
    return {"since": date(y, m, day), "until": TODAY + timedelta(days=1)}


# (text, kind, conditions, filters)
FRESH: tuple[tuple[str, str, tuple[str, ...], dict], ...] = (
    # topics
    ("What have I mostly been using ChatGPT for?", "topic", (), {}),
    ("What kind of stuff did I ask the AI about in 2025?", "topic", ("time range",), _year(2025)),
    ("Over the summer of 2025, what was my main chatbot topic?", "topic", ("time range",), _months(2025, 6, 8)),
    ("Between January and April 2024, what did I ask ChatGPT about the most?", "topic", ("time range",),
     _months(2024, 1, 4)),
    ("What was I asking chatbots about in December 2024?", "topic", ("time range",), _months(2024, 12, 12)),
    ("During the past year, what subject took up most of my chatbot conversations?", "topic", ("time range",),
     _last_months(12)),
    ("On Saturdays and Sundays, what do I talk to ChatGPT about?", "topic", ("time slot",), {"weekdays": WEEKEND}),
    ("Late at night, what do I tend to ask the assistant about?", "topic", ("time slot",), {"day_part": "night"}),
    ("In the afternoons, which area do my chatbot questions fall into?", "topic", ("time slot",),
     {"day_part": "afternoon"}),
    ("What did I chat about on Friday evenings?", "topic", ("time slot",), {"weekdays": (4,), "day_part": "evening"}),
    ("Which topic dominated my weekday mornings in 2025?", "topic", ("time range", "time slot"),
     {**_year(2025), "weekdays": WORKDAYS, "day_part": "morning"}),
    ("In autumn 2024, what was the most common theme of my chats?", "topic", ("time range",), _months(2024, 9, 11)),
    ("What did I mostly ask about on weekends in 2024?", "topic", ("time range", "time slot"),
     {**_year(2024), "weekdays": WEEKEND}),
    ("In the last three months, what did I use the chatbot for most?", "topic", ("time range",), _last_months(3)),
    ("Which topic did I bring up most from April to June 2025?", "topic", ("time range",), _months(2025, 4, 6)),
    ("Which area did my Tuesday chats mostly cover?", "topic", ("time slot",), {"weekdays": (1,)}),
    # subtopics
    ("Within my coding chats, what did I focus on most?", "subtopic", ("topic",), {"topic": SD}),
    ("What sort of career help did I ask for most?", "subtopic", ("topic",), {"topic": WC}),
    ("When I asked about data and AI, what was it mostly about?", "subtopic", ("topic",), {"topic": DS}),
    ("What part of my leisure and home chats came up most often?", "subtopic", ("topic",), {"topic": LH}),
    ("In 2025, what kind of software questions did I ask most?", "subtopic", ("topic", "time range"),
     {"topic": SD, **_year(2025)}),
    ("Which specific subject did I ask about most overall?", "subtopic", (), {}),
    ("Which narrower subject came up most on weekday mornings?", "subtopic", ("time slot",),
     {"weekdays": WORKDAYS, "day_part": "morning"}),
    ("Among my travel and events chats, what was the most common theme?", "subtopic", ("topic",), {"topic": TE}),
    ("What was the most frequent subtopic in the second half of 2024?", "subtopic", ("time range",),
     _months(2024, 7, 12)),
    ("For writing and learning, which subject did I ask about most in 2024?", "subtopic", ("topic", "time range"),
     {"topic": WL, **_year(2024)}),
    ("In my health and food chats, what came up most?", "subtopic", ("topic",), {"topic": HF}),
    ("Which subtopic did I chat about most in the evenings of 2025?", "subtopic", ("time range", "time slot"),
     {**_year(2025), "day_part": "evening"}),
    # keywords
    ("Which framework or tool did I ask about most in my programming chats?", "keyword", ("topic",), {"topic": SD}),
    ("Which named thing kept appearing in my work and career chats?", "keyword", ("topic",), {"topic": WC}),
    ("Which tool or method came up most in my data science and AI chats?", "keyword", ("topic",), {"topic": DS}),
    ("What product or tool did I mention most in 2025?", "keyword", ("time range",), _year(2025)),
    ("Which technology did I ask about most on weekdays?", "keyword", ("time slot",), {"weekdays": WORKDAYS}),
    ("What thing did I ask about most often overall?", "keyword", (), {}),
    ("Which tool did I ask about most in the first half of 2025?", "keyword", ("time range",), _months(2025, 1, 6)),
    # time values
    ("Which day of the week am I most active with ChatGPT?", "weekday", (), {}),
    ("What day do I usually ask about travel and events?", "weekday", ("topic",), {"topic": TE}),
    ("When during the day do I ask my software development questions?", "day_part", ("topic",), {"topic": SD}),
    ("What time of day do I talk about health and food with the chatbot?", "day_part", ("topic",), {"topic": HF}),
    ("Which month in 2024 did I use ChatGPT the most?", "month", ("time range",), _year(2024)),
    ("Which season do my leisure and home chats peak in?", "season", ("topic",), {"topic": LH}),
    ("In what month of 2025 did I ask most about work and careers?", "month", ("topic", "time range"),
     {"topic": WC, **_year(2025)}),
    ("Which weekday do I ask about data science and AI most?", "weekday", ("topic",), {"topic": DS}),
    ("What part of the day do I use the chatbot most on weekdays?", "day_part", ("time slot",),
     {"weekdays": WORKDAYS}),
    ("In which season did I chat about travel and events most?", "season", ("topic",), {"topic": TE}),
    ("Which month saw the most chatbot conversations?", "month", (), {}),
    ("Which day of the week did I ask writing and learning questions most in 2025?", "weekday",
     ("topic", "time range"), {"topic": WL, **_year(2025)}),
    ("At what time do I usually ask about my work and career?", "day_part", ("topic",), {"topic": WC}),
    ("Which season had the most software development chats?", "season", ("topic",), {"topic": SD}),
    ("On which weekday did I chat with the assistant most in the past 6 months?", "weekday", ("time range",),
     _last_months(6)),
    ("Which month of 2025 had the most data science and AI chats?", "month", ("topic", "time range"),
     {"topic": DS, **_year(2025)}),
    ("What season do I use the chatbot most in, on weekends?", "season", ("time slot",), {"weekdays": WEEKEND}),
)


def _keyword_candidates(items: Sequence[Labelled], rng: random.Random, topic: str | None) -> list[str]:
    counts: dict[str, int] = {}
    for c in items:
        if not topic or c.topic == topic:
            for k in c.keywords:
                counts[k] = counts.get(k, 0) + 1
    common = [k for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if n >= 2][:6]
    others = sorted({k for c in items for k in c.keywords} - set(common))
    return common + rng.sample(others, 10 - len(common) if len(common) < 6 else 3)


def fresh_questions(items: Sequence[Labelled], seed: int = 2029) -> list[Question]:
    rng = random.Random(seed)
    topics = sorted({c.topic for c in items})
    subtopics = sorted({c.subtopic for c in items})
    out = []
    for text, kind, conditions, f in FRESH:
        if kind == "topic":
            cands = rng.sample(topics, rng.randint(5, 7))
        elif kind == "subtopic":
            own = sorted({c.subtopic for c in items if c.topic == f.get("topic")}) if f.get("topic") else []
            rest = [s for s in subtopics if s not in own]
            cands = own + rng.sample(rest, max(0, 8 - len(own)))
        elif kind == "keyword":
            cands = _keyword_candidates(items, rng, f.get("topic"))
        else:
            cands = list({"weekday": WEEKDAYS, "day_part": DAY_PARTS, "month": MONTHS,
                          "season": ("winter", "spring", "summer", "autumn")}[kind])
            if kind == "month":
                cands = rng.sample(cands, 8)
        cands = list(dict.fromkeys(cands))[:10]
        rng.shuffle(cands)
        gold = _gold(items, kind, cands, since=f.get("since"), until=f.get("until"),
                     weekdays=f.get("weekdays", ()), part=f.get("day_part"), topic=f.get("topic"))
        ranked = sorted(gold.values(), reverse=True)
        if ranked[0] < 2 or ranked[0] == ranked[1]:
            continue
        out.append(Question(hashlib.sha256(text.encode()).hexdigest()[:10], text, kind, conditions, tuple(cands),
                            gold, f.get("since"), f.get("until"), tuple(f.get("weekdays", ())), f.get("day_part"),
                            f.get("topic")))
    return out
