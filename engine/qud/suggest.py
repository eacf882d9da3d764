"""The closest questions the store can answer, for a question that got no answer
(#38: an honest refusal offers what it can do instead of a dead end).

The store's kinds of events and their attribute names (never their values) fill the
forms of :mod:`engine.qud.suggest_forms`; each candidate comes with its plan, parsed
and validated like any planner's, so asking it runs that plan and needs no planner.
The candidates nearest the question for the Embedder are offered.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.plan import parse_plan, validate_plan
from engine.qud import suggest_forms as forms

if TYPE_CHECKING:
    from engine.protocols import Embedder

#: How many questions are offered.
OFFERED = 3
#: Attributes of each type a kind offers questions about (the most often present).
KEYS_PER_TYPE = 2
#: An attribute is offered when at least this share of its kind's events have it.
MIN_COVERAGE = 0.3
#: A text attribute "comes up most" only if values repeat: at most this many distinct
#: values per event that has one (ids, titles and free text repeat far less).
MAX_DISTINCT_SHARE = 0.5

KINDS_SQL = ("SELECT source, kind, count(*), max(year(start)) FROM events "
             "GROUP BY source, kind ORDER BY count(*) DESC, source, kind")
#: Attribute names are read off a sample this large (the same sample every time, so
#: another process offers the same questions): a scan of every event's JSON took 44 ms
#: for 3,755 events, seconds at a million.
SAMPLED = 50_000
KEYS_SQL = f"""
WITH s AS (SELECT source, kind, attributes FROM events USING SAMPLE reservoir({SAMPLED} ROWS) REPEATABLE (7)),
     n AS (SELECT source, kind, count(*) AS sampled FROM s GROUP BY source, kind)
SELECT kv.source, kv.kind, k,
       count(*) FILTER (WHERE t = 'VARCHAR') AS texts,
       count(*) FILTER (WHERE t IN ('BIGINT', 'UBIGINT', 'DOUBLE')) AS numbers,
       approx_count_distinct(v) FILTER (WHERE t = 'VARCHAR') AS distinct_texts,
       any_value(n.sampled) AS sampled
FROM (SELECT source, kind, k, json_type(attributes -> k) AS t, attributes ->> k AS v
      FROM (SELECT source, kind, attributes, unnest(json_keys(attributes)) AS k
            FROM s WHERE attributes IS NOT NULL)) AS kv
JOIN n ON n.source = kv.source AND n.kind = kv.kind
GROUP BY kv.source, kv.kind, k
"""


@dataclass(frozen=True, slots=True)
class Suggestion:
    question: str
    plan: str  # a valid plan (printed form) that answers it
    form: str = ""  # the form it filled: no two offered questions share one


@dataclass(frozen=True, slots=True)
class KindProfile:
    source: str
    kind: str
    events: int
    latest_year: int | None
    text_keys: tuple[str, ...]
    number_keys: tuple[str, ...]


def profile(con) -> list[KindProfile]:
    """Each kind of event in the store (a DuckDB connection reading it), with the
    attribute names worth a question, the most often present first."""
    keys: dict[tuple[str, str], list[tuple[str, int, int, int]]] = {}
    sampled: dict[tuple[str, str], int] = {}
    for source, kind, k, texts, numbers, distinct, in_sample in con.execute(KEYS_SQL).fetchall():
        keys.setdefault((source, kind), []).append((k, texts, numbers, distinct or 0))
        sampled[(source, kind)] = in_sample
    out = []
    for source, kind, n, year in con.execute(KINDS_SQL).fetchall():
        found = keys.get((source, kind), [])
        m = sampled.get((source, kind), 0)  # events of this kind in the sample
        text = [k for k, t, _num, d in sorted(found, key=lambda r: (-r[1], r[0]))
                if t >= MIN_COVERAGE * m and 2 <= d <= MAX_DISTINCT_SHARE * t]
        number = [k for k, _t, num, _d in sorted(found, key=lambda r: (-r[2], r[0])) if num >= MIN_COVERAGE * m]
        out.append(KindProfile(source, kind, n, year, tuple(text[:KEYS_PER_TYPE]), tuple(number[:KEYS_PER_TYPE])))
    return out


def _words(name: str) -> str:
    return " ".join(name.replace("_", " ").replace("-", " ").split())


def _name(source: str, kind: str) -> str:
    """A kind as people read it before "event(s)": the source, then the kind's words the
    source's name does not already say ("Calendar", not "Calendar calendar event")."""
    said = set(_words(source).lower().split()) | {"event", "events"}
    rest = [w for w in _words(kind).split() if w.lower() not in said]
    return " ".join([_words(source).capitalize(), *rest]).strip()


def _quoted(text: str) -> str:
    """Text safe inside a plan's double-quoted string."""
    return text.replace("\\", " ").replace('"', " ")


def candidates(profiles: Sequence[KindProfile]) -> list[Suggestion]:
    """Every filled form whose plan parses and validates."""
    out: list[Suggestion] = []
    for p in profiles:
        name = _name(p.source, p.kind)
        slots = {"noun": forms.MANY.format(name=name), "one": forms.ONE.format(name=name), "query": _quoted(name),
                 "source": _quoted(p.source), "kind": _quoted(p.kind), "year": p.latest_year}
        filled = [(q, plan, slots) for q, plan in forms.KIND_FORMS if p.latest_year is not None or "{year}" not in q]
        for key in p.text_keys:
            filled += [(q, plan, {**slots, "attr": _words(key), "key": _quoted(key)}) for q, plan in forms.TEXT_FORMS]
        for key in p.number_keys:
            filled += [(q, plan, {**slots, "attr": _words(key), "key": _quoted(key)}) for q, plan in forms.NUMBER_FORMS]
        for q, plan, s in filled:
            text = plan.format(**s)
            try:
                node = parse_plan(text)
            except ValueError:
                continue
            if not validate_plan(node):
                out.append(Suggestion(q.format(**s), text, q))
    return out


def closest(question: str, offered: Sequence[Suggestion], embedder: "Embedder",
            k: int = OFFERED) -> list[Suggestion]:
    """The ``k`` of ``offered`` nearest ``question`` (cosine of the Embedder's
    normalised vectors), nearest first, each of another form: three totals of three
    attributes offer less than a total, a count and a "most"."""
    if not offered:
        return []
    vectors = embedder.embed([question] + [s.question for s in offered])
    q = vectors[0]
    scored = sorted(range(len(offered)), key=lambda i: -sum(a * b for a, b in zip(q, vectors[i + 1])))
    out: list[Suggestion] = []
    for i in scored:
        if all(offered[i].form != s.form for s in out):
            out.append(offered[i])
    return out[:k]
