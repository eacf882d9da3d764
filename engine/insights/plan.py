"""PROBE's first step: the local LLM turns an aggregative question into a few short,
diverse search queries, the dimension to count by, and strict filters, written as
JSON under a GBNF grammar so that every answer parses.

Relative times are not computed by the model: it names them in a small typed form
(``"year": "last"``, ``"season": "spring"``, ``"last": {"count": 6, "unit":
"months"}``) and :func:`time_window` turns them into dates against ``today``. The
JSON is parsed, never evaluated, and made consistent (:func:`consistent`).
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, replace
from datetime import date, timedelta

import orjson

from engine.insights.timeslots import SEASONS, WEEKDAYS
from engine.protocols import Planner

log = logging.getLogger(__name__)

MAX_QUERIES = 10
#: what an answer can count by (attribute names of the conversation insights)
DIMENSIONS = ("topic", "subtopic", "keyword", "month", "weekday", "hour", "day_part", "season", "year", "language")
DAY_PARTS = ("night", "morning", "afternoon", "evening")
#: the units of a "last N ..." window
UNITS = ("days", "weeks", "months", "years")


class ProbePlanError(ValueError):
    """The planner's JSON does not describe a PROBE plan; says which field and why."""


@dataclass(frozen=True, slots=True)
class ProbePlan:
    queries: tuple[str, ...]
    group_by: str = "topic"
    year: int | str | None = None  # 2024, "this", "last"
    season: str | None = None
    month: int | None = None  # 1-12
    last: int | None = None  # the last ``last`` ``last_unit`` up to today
    last_unit: str = "days"
    weekdays: tuple[int, ...] = ()  # 0 = Monday
    day_part: str | None = None
    topic: str | None = None
    # an explicit [since, until) window (instead of the named times above)
    since: date | None = None
    until: date | None = None

    def filters(self, today: date) -> dict:
        """The strict filters as the CLI reports them."""
        since, until = time_window(self, today)
        return {"since": since.isoformat() if since else None, "until": until.isoformat() if until else None,
                "weekdays": [WEEKDAYS[d] for d in self.weekdays], "day_part": self.day_part, "topic": self.topic}


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _alts(values) -> str:
    return " | ".join(_q(_q(v)) for v in values)


GRAMMAR = rf"""
root ::= "{{" ws "\"queries\": [" query ( ", " query ){{0,{MAX_QUERIES - 1}}} "]," ws "\"group_by\": " dim "," ws "\"year\": " year "," ws "\"season\": " season "," ws "\"month\": " month "," ws "\"last\": " last "," ws "\"weekdays\": [" ( weekday ( ", " weekday ){{0,6}} )? "]," ws "\"day_part\": " daypart "," ws "\"topic\": " topic ws "}}"
query ::= "\"" [a-zA-Z0-9] [a-zA-Z0-9 .+#/'-]{{1,48}} "\""
topic ::= "null" | query
dim ::= {_alts(DIMENSIONS)}
year ::= "null" | "\"this\"" | "\"last\"" | [1-2] [0-9] [0-9] [0-9]
season ::= "null" | {_alts(SEASONS)}
month ::= "null" | [1-9] | "1" [0-2]
last ::= "null" | "{{\"count\": " [1-9] [0-9]{{0,3}} ", \"unit\": " unit "}}"
unit ::= {_alts(UNITS)}
weekday ::= {_alts(WEEKDAYS)}
daypart ::= "null" | {_alts(DAY_PARTS)}
ws ::= " "?
"""

INSTRUCTIONS = (
    "You plan answers to aggregative questions about one person's chatbot conversations. Each conversation "
    "has a topic, subtopic, keywords, a local date, weekday, hour, day part (night 0-6, morning 6-12, "
    "afternoon 12-18, evening 18-24), month, season and language.\n"
    "Write JSON: up to 10 short, diverse search queries for the conversations that matter (different words "
    "for the same subject, likely examples of it); group_by, the attribute whose values answer the question; "
    "then only the filters the question states: year (a number, \"this\" or \"last\"), season, month "
    "(1-12), last (a count and a unit: days, weeks, months or years), weekdays, day_part, topic (a subject the conversations must be about). Anything the "
    "question does not state is null or [].\n\n")

EXAMPLES: tuple[tuple[str, str], ...] = (
    ("What did I ask chatbots about most this spring?",
     '{"queries": ["questions", "help with a task", "explain a concept", "advice", "how to"], "group_by": "topic", '
     '"year": "this", "season": "spring", "month": null, "last": null, "weekdays": [], "day_part": null, '
     '"topic": null}'),
    ("Which programming language kept coming up in my coding chats?",
     '{"queries": ["programming language", "code example", "python script", "javascript function", '
     '"compile error", "java class"], "group_by": "keyword", "year": null, "season": null, "month": null, '
     '"last": null, "weekdays": [], "day_part": null, "topic": "programming"}'),
    ("On which weekday do I talk about recipes most?",
     '{"queries": ["recipe", "cooking dinner", "bake a cake", "ingredients", "how to cook"], "group_by": '
     '"weekday", "year": null, "season": null, "month": null, "last": null, "weekdays": [], "day_part": '
     'null, "topic": "cooking"}'),
    ("Which subtopic of travel did I ask about most on weekend evenings last year?",
     '{"queries": ["travel plans", "trip itinerary", "flights and hotels", "visit a city", "vacation"], '
     '"group_by": "subtopic", "year": "last", "season": null, "month": null, "last": null, "weekdays": '
     '["Saturday", "Sunday"], "day_part": "evening", "topic": "travel"}'),
    ("In which month of 2024 did I use ChatGPT most for health questions?",
     '{"queries": ["health", "symptoms", "doctor", "exercise and fitness", "diet"], "group_by": "month", '
     '"year": 2024, "season": null, "month": null, "last": null, "weekdays": [], "day_part": null, '
     '"topic": "health"}'),
    ("What topics did I bring up in the past 30 days in the morning?",
     '{"queries": ["questions", "explain", "help me", "ideas", "how do I"], "group_by": "topic", "year": null, '
     '"season": null, "month": null, "last": {"count": 30, "unit": "days"}, "weekdays": [], "day_part": "morning", "topic": null}'),
    ("What did I chat about most over the past two weeks?",
     '{"queries": ["questions", "help me with", "explain", "ideas", "how do I"], "group_by": "topic", "year": null, '
     '"season": null, "month": null, "last": {"count": 2, "unit": "weeks"}, "weekdays": [], "day_part": null, '
     '"topic": null}'),
    ("Which tools did I ask about in March?",
     '{"queries": ["software tool", "app", "library", "command line", "install"], "group_by": "keyword", '
     '"year": null, "season": null, "month": 3, "last": null, "weekdays": [], "day_part": null, '
     '"topic": null}'),
)


def prefix() -> str:
    """The stable part of every prompt (the planner keeps its KV cache)."""
    return INSTRUCTIONS + "".join(f"Q: {q}\nJSON: {a}\n\n" for q, a in EXAMPLES)


def prompt(question: str) -> str:
    question = re.sub(r"\s+", " ", question).strip()
    return prefix() + f"Q: {question}\nJSON: "


def parse(text: str) -> ProbePlan:
    """A :class:`ProbePlan` from the planner's JSON; :class:`ProbePlanError` names what is wrong."""
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ProbePlanError(f"the planner's answer is not JSON ({exc}): {text[:200]!r}") from None
    if not isinstance(data, dict):
        raise ProbePlanError("the planner's answer is not a JSON object")
    queries = data.get("queries")
    if not isinstance(queries, list) or not queries or not all(isinstance(q, str) and q.strip() for q in queries):
        raise ProbePlanError("'queries' must be a non-empty list of texts")
    seen, unique = set(), []
    for q in queries:
        if q.strip().casefold() not in seen:
            seen.add(q.strip().casefold())
            unique.append(q.strip())
    group_by = data.get("group_by")
    if group_by not in DIMENSIONS:
        raise ProbePlanError(f"'group_by' must be one of {', '.join(DIMENSIONS)}, not {group_by!r}")
    year = data.get("year")
    if year is not None and year not in ("this", "last") and not (isinstance(year, int) and 1900 < year < 2200):
        raise ProbePlanError(f"'year' must be a year, \"this\" or \"last\", not {year!r}")
    season = data.get("season")
    if season is not None and season not in SEASONS:
        raise ProbePlanError(f"'season' must be one of {', '.join(SEASONS)}, not {season!r}")
    month = data.get("month")
    if month is not None and not (isinstance(month, int) and 1 <= month <= 12):
        raise ProbePlanError(f"'month' must be 1-12, not {month!r}")
    last = data.get("last")
    if last is not None and not (isinstance(last, dict) and isinstance(last.get("count"), int)
                                 and last["count"] > 0 and last.get("unit") in UNITS):
        raise ProbePlanError(f"'last' must be a positive count and a unit ({', '.join(UNITS)}), not {last!r}")
    weekdays = data.get("weekdays") or []
    if not isinstance(weekdays, list) or any(d not in WEEKDAYS for d in weekdays):
        raise ProbePlanError(f"'weekdays' must list weekday names, not {weekdays!r}")
    day_part = data.get("day_part")
    if day_part is not None and day_part not in DAY_PARTS:
        raise ProbePlanError(f"'day_part' must be one of {', '.join(DAY_PARTS)}, not {day_part!r}")
    topic = data.get("topic")
    if topic is not None and not (isinstance(topic, str) and topic.strip()):
        raise ProbePlanError("'topic' must be a text or null")
    return consistent(ProbePlan(
        queries=tuple(unique[:MAX_QUERIES]), group_by=group_by, year=year, season=season, month=month,
        last=last["count"] if last else None, last_unit=last["unit"] if last else "days",
        weekdays=tuple(sorted({WEEKDAYS.index(d) for d in weekdays})), day_part=day_part,
        topic=topic.strip() if topic else None))


def consistent(plan: ProbePlan) -> ProbePlan:
    """The plan without filters that leave its count a single value.

    A question that counts by an attribute asks which of its values comes first, so
    a filter fixing that attribute (a season filter on a count by season, one
    weekday on a count by weekday, a topic on a count by topic) leaves one value and
    answers nothing: the filter is dropped, and a count by topic within one topic
    counts its subtopics. A month is a narrower window than a season: with both,
    the month stands. Read off the plan's fields alone, never the question's words."""
    changes: dict = {}
    if plan.group_by == "season" and plan.season:
        changes["season"] = None
    if plan.group_by == "month" and plan.month:
        changes["month"] = None
    if plan.group_by == "day_part" and plan.day_part:  # (the hours within a day part are a question)
        changes["day_part"] = None
    if plan.group_by == "weekday" and len(plan.weekdays) == 1:
        changes["weekdays"] = ()
    if plan.group_by == "year" and plan.year is not None:
        changes["year"] = None
    if plan.group_by == "topic" and plan.topic:
        changes["group_by"] = "subtopic"
    if plan.month and plan.season and "month" not in changes:
        changes["season"] = None
    if not changes:
        return plan
    log.info("PROBE plan made consistent: %s", changes)
    return replace(plan, **changes)


def plan_question(planner: Planner, question: str, *, max_tokens: int = 220) -> ProbePlan:
    """Ask the planner for the PROBE plan of ``question``."""
    text = planner.complete(prompt(question), grammar=GRAMMAR, max_tokens=max_tokens, stop=("\n",))
    return parse(text.strip())


def _season_range(year: int, season: str) -> tuple[date, date]:
    """[start, end) of ``season`` in ``year``; the winter of a year begins in the December before."""
    i = SEASONS.index(season)
    if i == 0:
        return date(year - 1, 12, 1), date(year, 3, 1)
    start = date(year, 3 * i, 1)
    end = date(year, 3 * i + 3, 1) if i < 3 else date(year, 12, 1)
    return start, end


def time_window(plan: ProbePlan, today: date) -> tuple[date | None, date | None]:
    """The plan's [since, until) dates against ``today``: a named season or month in a
    year ("this" or unsaid: the latest one that has begun by today), or the last N
    days, weeks, months or years up to today. With both a last-N window and a
    calendar one, the answer lies in both; where they do not meet, the calendar
    window stands (the last-N window then was a misreading: "the first 3 months of 2025")."""
    if plan.since or plan.until:
        return plan.since, plan.until
    calendar = _calendar_window(plan, today)
    if not plan.last:
        return calendar
    from dateutil.relativedelta import relativedelta

    start = today - relativedelta(**{plan.last_unit: plan.last}) + timedelta(days=1)
    end = today + timedelta(days=1)
    if calendar == (None, None):
        return start, end
    since, until = max(start, calendar[0]), min(end, calendar[1])
    return (since, until) if since < until else calendar


def _calendar_window(plan: ProbePlan, today: date) -> tuple[date | None, date | None]:
    year = plan.year
    if year == "this":
        year = today.year
    elif year == "last":
        year = today.year - 1
    if plan.season:
        y = year if isinstance(year, int) else today.year
        start, end = _season_range(y, plan.season)
        if year is None and start > today:  # "in the spring", said in winter: the last one
            start, end = _season_range(y - 1, plan.season)
        return start, end
    if plan.month:
        y = year if isinstance(year, int) else today.year
        if year is None and date(y, plan.month, 1) > today:
            y -= 1
        start = date(y, plan.month, 1)
        return start, (date(y + 1, 1, 1) if plan.month == 12 else date(y, plan.month + 1, 1))
    if isinstance(year, int):
        return date(year, 1, 1), date(year + 1, 1, 1)
    return None, None
