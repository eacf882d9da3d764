"""EXTRACT: add typed attributes to rows.

When at least 70% of the first 50 rows map the requested key to the same existing
attribute (by name, by a known synonym such as "date" -> start or "amount" ->
total, or because the Extractor's answer equals that attribute's value), the
mapping is frozen and applied to every row without model calls. A key naming a
duration or distance in a unit ("duration_hours") is converted from an attribute
in another unit or from the span (:mod:`units`). Otherwise the Extractor protocol
is asked, in batches. Values are converted to the requested
type; a value that cannot be converted becomes null, never a guess.
"""
from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterator
from datetime import date, datetime, timezone
from typing import Any

from dateutil import parser as dateparser

from engine.locale_en import (AND, AT_A_PLACE, CURRENCY_KEY_WORDS, CURRENCY_SYMBOLS, CURRENCY_WORDS,
                              DATE_KEY_WORDS, FOOD_KEY_WORDS, FUNCTION_WORDS, KEY_SYNONYMS, MONEY_KEY_WORDS, MONTH,
                              NO, PRONOUNS, SELF, SPAN_EDGE_WORDS, TITLES, WHERE_WORDS, YES)
from engine.operators.context import OperatorContext, OperatorError
from engine.operators.retrieve import MERGED_TEXTS
from engine.operators.categories import (cuisine_food, guessed, named_category, of_its_vocabulary, the_one_named,
                                        vocabulary_named)
from engine.operators.spans import whole_list, whole_name
from engine.operators.units import in_unit, measure
from engine.plan.nodes import Extract
from engine.plan.rows import Row
from engine.plan.spec import EVENT_ATTRIBUTES, PEOPLE_KEYS
from engine.retrieval.verbalise import key_values, verbalise

log = logging.getLogger(__name__)

SAMPLE = 50
FREEZE_SHARE = 0.7
# Distinct texts per extractor call; cancelling waits for one call at most (~1 s).
BATCH = 256



# Keys that are a part of when an event happened, where no attribute holds them: read
# off its start (local time), never asked of the model. Asked "at what hour do I
# listen to music most", the planner extracted an "hour" the model could not find
# in a play's text, and the answer was "no value".
TIME_PARTS: dict[str, Any] = {
    "hour": lambda dt, kind: dt.hour, "hour_of_day": lambda dt, kind: dt.hour,
    "weekday": lambda dt, kind: dt.isoweekday() if kind == "int" else dt.strftime("%A"),
    "day_of_week": lambda dt, kind: dt.isoweekday() if kind == "int" else dt.strftime("%A"),
    "month": lambda dt, kind: dt.strftime("%B") if kind == "str" else dt.month,
    "year": lambda dt, kind: dt.year,
}


def _norm(key: str) -> str:
    return re.sub(r"[\s\-]+", "_", key.strip().lower())


def _candidates(key: str) -> list[str]:
    k = _norm(key)
    return list(dict.fromkeys((k, *KEY_SYNONYMS.get(k, ()), k.rstrip("s"))))


def _lookup(row: Row, attr: str) -> Any:
    if attr in EVENT_ATTRIBUTES and row.has(attr):
        return row.get(attr)
    if attr in row.raw:
        return row.raw[attr]
    norm = {_norm(k): k for k in row.raw}
    if attr in norm:
        return row.raw[norm[attr]]
    return None


def _has(row: Row, attr: str) -> bool:
    if attr in EVENT_ATTRIBUTES:
        return row.get(attr) not in (None, "")
    return _lookup(row, attr) not in (None, "")


def _name_mapping(row: Row, key: str) -> str | None:
    for attr in _candidates(key):
        if _has(row, attr):
            return attr
    return None


def extractor_text(source: str, kind: str, title: str | None, text: str | None) -> str:
    """What the extractor reads of an event: its prose, verbalised as the index does
    but without the structured attributes. A key an attribute holds is found by name
    or value before the model is asked; the attributes only made the text long (a
    Spotify play is ~250 tokens with them, ~50 without)."""
    return verbalise(key_values(source, kind, title, text, None))


def _with_attributes(row: Row) -> str:
    """The event with its attributes, for the sample that looks for a mapping (an
    answer read from "band: Muse" maps "performer" to band)."""
    return verbalise(key_values(row.get("source") or "", row.get("kind") or "", row.get("title"),
                                row.get("text"), row.raw))


_AMOUNT = re.compile(r"[-+]?\d[\d.,' ]*")


def parse_number(text: str) -> float | None:
    """"€12.50" -> 12.5, "1.234,50 EUR" -> 1234.5, "1,234.50" -> 1234.5, "-3" -> -3."""
    m = _AMOUNT.search(text.replace("\u2212", "-"))
    if not m:
        return None
    s = m.group(0).strip().replace(" ", "").replace("'", "")
    if "," in s and "." in s:
        # the later separator is the decimal point
        s = s.replace(".", "").replace(",", ".") if s.rfind(",") > s.rfind(".") else s.replace(",", "")
    elif "," in s:
        head, _, tail = s.rpartition(",")
        s = s.replace(",", "") if len(tail) == 3 and head else s.replace(",", ".")
    try:
        return float(s)
    except ValueError:
        return None


def coerce(value: Any, kind: str, row: Row | None = None) -> Any:
    """``value`` as ``kind``; None when it cannot be converted."""
    if value is None or value == "":
        return None
    try:
        if kind == "str":
            if isinstance(value, (date, datetime)):
                return value.isoformat()
            return value if isinstance(value, str) else str(value)
        if kind in ("int", "float"):
            if isinstance(value, bool):
                n: float | None = float(value)
            elif isinstance(value, (int, float)):
                n = float(value)
            else:
                n = parse_number(str(value))
            if n is None:
                return None
            return int(round(n)) if kind == "int" else n
        if kind == "bool":
            if isinstance(value, bool):
                return value
            s = str(value).strip().lower()
            return True if s in YES else False if s in NO else None
        if kind in ("date", "datetime"):
            if isinstance(value, datetime):
                dt = value
            elif isinstance(value, date):
                return value if kind == "date" else datetime(value.year, value.month, value.day)
            else:
                dt = dateparser.parse(str(value))
            if dt.tzinfo is None:
                # a time read from text is local time, as the row's own start is
                ref = row.get("start") if row is not None else None
                dt = dt.replace(tzinfo=ref.tzinfo if isinstance(ref, datetime) else timezone.utc)
            return dt.date() if kind == "date" else dt
    except (ValueError, OverflowError, TypeError) as exc:
        log.debug("cannot read %r as %s: %s", value, kind, exc)
        return None
    raise OperatorError("EXTRACT", f"unknown type {kind!r}")


_ISO_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?")


def _a_date(value: Any) -> bool:
    """Whether ``value`` is a date or time, or text that is one ("1996-01-07")."""
    return isinstance(value, (date, datetime)) or isinstance(value, str) and _DATES.fullmatch(value.strip()) is not None


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return False
    if isinstance(b, datetime):  # the whole answer a date: "1996-01-03 | text" is a date and junk
        m = _ISO_DATE.fullmatch(str(a).strip())
        return m is not None and m.group(1) == b.date().isoformat()
    return str(a).strip().lower() == str(b).strip().lower()


def answered(a: Any, text: str, key: str = "") -> Any:
    """The extractor's answer to a question about ``text``, or None where it is none:
    no letter or digit in it, or a span across the fields of the text it read (asked
    the "show" of "title: 1996-01-03 | text: I watched a tv series ...", the model
    answered "1996-01-03 | text"), or the name of a field (the "place" of "... | text:
    I did hiking on 2005/01/14." was "text"), or function words alone ("I", "did").
    A name comes whole (:mod:`spans`) and without a preposition or conjunction it was
    cut with ("to Bangkok" of "went to Bangkok", "hiking on" of "I did hiking on
    2019/04/02"), people as the whole list they are named in
    (the key asks who: "people", "companion"), and a weekday, currency or cuisine
    the text names wins over the model's guess, or stands in for no answer, as
    does the "Japanese food" it says for the food eaten (:mod:`categories`)."""
    if a is None or isinstance(a, str) and _WORDLESS.match(a.strip("| ")):
        # no answer: a cuisine the text names is one, and the food "Japanese food" it says
        return cuisine_food(the_one_named(text, _norm(key)), text, _norm(key))
    if isinstance(a, str):
        a = a.strip().strip("|").strip()  # "Worry |": the title, and the field's end
        if _WORDLESS.match(a) or _ACROSS_FIELDS.search(a) \
                or a.lower() in {m.group(1).strip().lower() for m in _FIELD_NAME.finditer(text)} \
                or all(w in FUNCTION_WORDS for w in re.findall(r"[^\W\d_]+", a.lower())) and not re.search(r"\d", a):
            return None
        name = _without_edge_words(whole_name(a, text))
        if PEOPLE_KEYS.match(_norm(key)):
            name = _people_only(name)
            if not any(w[:1].isupper() and w.lower() not in PRONOUNS for w in name.split()):
                return None  # who was there is a name: the "people" of a run were "heart", "a 9.7"
            name = whole_list(name, text)
        return cuisine_food(named_category(name, text, _norm(key)), text, _norm(key))
    return a


# a word that may start a person's name where no sentence starts: what the segmenter is
# asked about only where the text has one (spaCy reads ~300 texts a second here)
_NAME_INSIDE = re.compile(rf"(?<=[^\W_.!?:|#-] )(?!{SELF}\b)[A-Z\u00C0-\u024F][^\W\d_]+|"
                          rf"\b[A-Z\u00C0-\u024F][^\W\d_]+(?= (?:{AND}|&) {SELF}\b)")
# the fields before an event's text: its source, kind and title ("title: Morning Run" of a
# run merged with a diary day is no one's name)
_FIELDS_BEFORE_TEXT = re.compile(r"^source: [^|]*\|\s*kind: [^|]*\|\s*(?:title: .*?\|\s*(?=text: ))?(?:text: )?",
                                 re.S)


def people_named(text: str, key: str, segmenter) -> str | None:
    """Who ``text`` names, by the Segmenter's named entities, as EXTRACT answers the
    people of a key asking who (:func:`answered`), for where the extractor answered
    none: asked the "companion" of "Tried a new recipe on Monday: shrimp chowder, for
    Mathias Lundblad and me.", it answered "a new". None where the key asks no
    person, no segmenter is given, or the text names nobody the extractor's answer
    could be made of. The small English model's "people" that are none are left out:
    a label ("Guest: ..."), a title in quotes ("Morning Run"), an owner ("Oliver's
    Apple Watch") and what follows a word for where ("on Strava", "Flight to
    Pihtipudas")."""
    if segmenter is None or not PEOPLE_KEYS.match(_norm(key)):
        return None
    for name in persons_in(text, segmenter):
        made = answered(name, text, key)
        if made is not None and not _POSSESSIVE.search(made):
            return made
    return None


def persons_in(text: str, segmenter) -> Iterator[str]:
    """The persons the Segmenter finds in the body of ``text`` (an event as the
    extractor reads it) that can be people, in its order: none that is a label
    ("Guest: ..."), in quotes ("Morning Run"), after a word for where ("on Strava",
    "Flight to Pihtipudas") or a comma after such a place ("Togo" of "to Pihtipudas,
    Togo"), or after another capitalised word ("Kitchen Watkins" of "Seoul Kitchen
    Watkins"). The Segmenter is not asked where the body has no word that may start
    a name inside a sentence."""
    body = _FIELDS_BEFORE_TEXT.sub("", text)
    if not _NAME_INSIDE.search(body):
        return
    left_out_to = -1  # where the last entity left out as a place ends: "Togo" of "to Pihtipudas, Togo"
    for name, label in segmenter.entities(body):
        if label != "PERSON" or "|" in name:
            continue
        at = [m.start() for m in re.finditer(re.escape(name), body)]
        if not at:
            continue
        start = at[-1]
        words_before = body[:start].split()
        before = words_before[-1] if words_before else ""
        if any(body[i - 1:i] in _QUOTES or body[i + len(name):i + len(name) + 1] == ":" for i in at):
            continue
        if before.lower() in WHERE_WORDS or body[left_out_to:start].strip() == "," \
                or before[:1].isupper() and before[-1:].isalpha():  # "Kitchen Watkins" of "Seoul Kitchen Watkins"
            left_out_to = start + len(name)
            continue
        yield name


_QUOTES = frozenset("\"'“‘«")
_POSSESSIVE = re.compile(r"[’']s\b")


def _without_edge_words(span: str) -> str:
    words = span.split()
    while len(words) > 1 and words[0] in SPAN_EDGE_WORDS:
        words.pop(0)
    while len(words) > 1 and words[-1] in SPAN_EDGE_WORDS:
        words.pop()
    return " ".join(words) if len(words) != len(span.split()) else span


# where a span of people runs on past them: the next sentence ("Jade Canali. Paid"),
# the place they were at ("Heidelinde Taskinen at Trattoria Heras"); a full stop after
# one letter is an initial ("J. Smith")
_PAST_PEOPLE = re.compile(rf"(?<=[^\W\d_]{{2}})\.\s+(?=[A-Z])|\s+(?:{'|'.join(AT_A_PLACE)})\s+(?=[A-Z\d])")


def _people_only(span: str) -> str:
    """``span`` up to where it runs past the people it names (``_PAST_PEOPLE``) and
    without the lower-case words it ends in: a name ends in none ("Larsson loved",
    "Flora and Vincent picked")."""
    for m in _PAST_PEOPLE.finditer(span):
        if (span[:m.start()].split() or [""])[-1] not in TITLES:
            span = span[:m.start()]
            break
    words = span.split()
    while len(words) > 1 and not words[-1][:1].isupper():
        words.pop()
    return " ".join(words)


def extract(node: Extract, rows: list[Row], ctx: OperatorContext) -> list[Row]:
    if len(node.attr_names) != len(node.attr_types):
        raise OperatorError("EXTRACT", "give one type per attribute name")
    if ctx.wanted is not None:
        # the side of a same-day JOIN: a row of no day it pairs on is dropped there anyway
        kept = [r for r in rows if ctx.is_wanted(r)]
        if len(kept) < len(rows):
            ctx.note(f"EXTRACT: {len(kept)} of {len(rows)} events are on the days the JOIN pairs; "
                     "the others were left out")
        rows = kept
    columns: dict[str, list[Any]] = {}
    for key, kind in zip(node.attr_names, node.attr_types):
        ctx.check_cancel()
        columns[key] = _extract_one(key, kind, rows, ctx)
    return [row.with_values(**{k: columns[k][i] for k in columns}) for i, row in enumerate(rows)]


def _extract_one(key: str, kind: str, rows: list[Row], ctx: OperatorContext) -> list[Any]:
    """Each kind of event (source and kind) decides on its own whether an attribute
    holds ``key``: a RETRIEVE that brings Amazon orders and a few mails must read
    the orders' ``total`` and ask the model only about the mails."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault((r.get("source") or "", r.get("kind") or ""), []).append(i)
    out: list[Any] = [None] * len(rows)
    ask: list[int] = []
    named = {g: _named_attribute(key, [rows[i] for i in members]) for g, members in groups.items()}
    in_units = kind in ("int", "float") and measure(key) is not None  # "duration_hours"
    for (source, kind_), members in groups.items():
        ctx.check_cancel()
        group = [rows[i] for i in members]
        what = f"{source} {kind_}".strip() or "events"
        # "role" of ChatGPT's conversations: its turns hold a role, the conversations have
        # none to hold, and the model would make one up from the text
        holder = next(((k, a) for (s, k), a in named.items()
                       if s == source and k != kind_ and a is not None and a not in EVENT_ATTRIBUTES), None)
        if named[(source, kind_)] is None and holder and not any(_has(r, holder[1]) for r in group):
            ctx.note(f"EXTRACT {key!r} from {what}: {source}'s {holder[0]} events hold it in {holder[1]!r}, "
                     f"these {len(members)} have no such attribute; left empty")
            continue
        measured = [in_unit(r, key) for r in group] if in_units and named[(source, kind_)] is None else []
        if sum(m is not None for m in measured[:SAMPLE]) >= FREEZE_SHARE * min(len(group), SAMPLE) > 0:
            held = Counter(m[1] for m in measured if m is not None)
            ctx.note(f"EXTRACT {key!r} from {what}: converted from "
                     + ", ".join("the span" if h == "span" else repr(h) for h, _ in held.most_common()))
            for i, m in zip(members, measured):
                out[i] = None if m is None else coerce(m[0], kind, rows[i])
            continue
        part = TIME_PARTS.get(_norm(key)) if named[(source, kind_)] is None else None
        if part is not None:
            ctx.note(f"EXTRACT {key!r} from {what}: read off each event's start")
            for i in members:
                start = rows[i].get("start")
                out[i] = coerce(part(start, kind), kind, rows[i]) if isinstance(start, datetime) else None
            continue
        attr = named[(source, kind_)] or _frozen_attribute(key, group, ctx, kind)
        if attr is None:
            ask.extend(members)
            if len(groups) > 1:
                ctx.note(f"EXTRACT {key!r} from {what}: no attribute holds it; asking the extractor "
                         f"({len(members)} events)")
            continue
        ctx.note(f"EXTRACT {key!r} from {what}: frozen mapping to {attr!r}")
        for i in members:
            out[i] = coerce(_lookup(rows[i], attr), kind, rows[i])
    if not ask:
        return out
    if ctx.models.extractor is None:
        raise OperatorError("EXTRACT", (
            f"the events have no attribute that holds {key!r} (looked for {', '.join(_candidates(key))}) "
            "and no extraction model is loaded"))
    if len(groups) == 1:
        ctx.note(f"EXTRACT {key!r}: no attribute holds it for {FREEZE_SHARE:.0%} of the sample; "
                 "asked the extractor")
    ask.sort()
    answers = _ask(ctx.models.extractor, key, [rows[i] for i in ask], ctx.models.segmenter,
                   numeric=kind in ("int", "float"), ctx=ctx)
    for i, answer in zip(ask, answers):
        value = coerce(answer, kind, rows[i])
        if kind in ("int", "float") and value is not None and _read_off_a_date(value, key, rows[i]):
            value = None
        if kind == "str" and not _fits(key, value):
            value = None
        out[i] = value
    return out


_DATES = re.compile(
    rf"\b\d{{4}}-\d{{1,2}}-\d{{1,2}}\b|\b\d{{1,2}}[./]\d{{1,2}}[./]\d{{2,4}}\b"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+{MONTH}(?:,?\s+\d{{4}})?\b"
    rf"|\b{MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?\b", re.I)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")  # one number: "27, 2023" is two
_CURRENCY = rf"(?:[{re.escape(CURRENCY_SYMBOLS)}]|\b(?:{'|'.join(CURRENCY_WORDS)})\b)"
_PRICES = re.compile(rf"{_CURRENCY}\s?\d[\d.,']*|\d[\d.,']*\s?{_CURRENCY}")


def _key_words(words: tuple[str, ...]) -> re.Pattern:
    """A pattern that finds any of ``words`` anywhere in a key, in any case."""
    return re.compile("|".join(map(re.escape, words)), re.I)


_DATE_KEYS = _key_words(DATE_KEY_WORDS)
_MONEY_KEYS = _key_words(MONEY_KEY_WORDS)
_CURRENCY_KEYS = _key_words(CURRENCY_KEY_WORDS)
_FOOD_KEYS = _key_words(FOOD_KEY_WORDS)


def _fits(key: str, value: Any) -> bool:
    """Whether ``value`` can be the ``key`` of an event: "lots" (of energy), "I
    really" or "running" are no people; names are written like names. A weekday is
    the answer only to a key about time, a currency only to one about money: asked
    the food of "Italian dinner with Ana at Osteria da Hänel on Friday", the model
    answered "Friday". A cuisine answers only a key about food or a kind of thing:
    asked the "fruit" of TimelineQA's diary notes, it answered "chinese"."""
    if not isinstance(value, str):
        return True
    named = vocabulary_named(value)
    if named == "weekday" and not _DATE_KEYS.search(key) or \
            named == "currency" and not _CURRENCY_KEYS.search(key) or \
            named == "cuisine" and not _FOOD_KEYS.search(key):
        return False
    if not PEOPLE_KEYS.search(key):
        return True
    return value != value.lower() and value.split()[0].lower() not in PRONOUNS


def _read_off_a_date(value: float, key: str, row: Row) -> bool:
    """Whether the model's number for a key that is no date occurs in the row's text
    only inside dates: asked the "total" of a diary day titled "Tuesday, 27 June
    2023", it answered 27, and the Amazon spend grew by 27. Likewise a number for a
    key that is no amount of money, read off a price: asked the "distance_km" of
    swim goggles bought for 43.99 GBP, it answered 43.99, and "how many km did I
    swim" grew by 204."""
    text = f"{row.get('title') or ''}\n{row.get('text') or ''}"
    return (not _DATE_KEYS.search(key) and _only_inside(value, text, _DATES)) or (
        not _MONEY_KEYS.search(key) and _only_inside(value, text, _PRICES))


def _only_inside(value: float, text: str, spans: re.Pattern) -> bool:
    """Whether ``value`` is a number of ``text`` only inside the ``spans``."""
    everywhere = {parse_number(m.group(0)) for m in _NUMBER.finditer(text)}
    outside = {parse_number(m.group(0)) for m in _NUMBER.finditer(spans.sub(" ; ", text))}
    return value in everywhere and value not in outside


def _majority(found: list[str | None]) -> str | None:
    """The attribute found for at least 70% of a sample (``found`` holds one entry
    per sampled row, None where nothing was found)."""
    counts = Counter(m for m in found if m is not None)
    if counts:
        attr, n = counts.most_common(1)[0]
        if n >= FREEZE_SHARE * len(found):
            return attr
    return None


def _named_attribute(key: str, sample_from: list[Row]) -> str | None:
    """The attribute named like ``key`` (or a synonym) in at least 70% of the first rows."""
    return _majority([_name_mapping(r, key) for r in sample_from[:SAMPLE]])


def _frozen_attribute(key: str, sample_from: list[Row], ctx: OperatorContext, kind: str = "str") -> str | None:
    """For rows where no attribute is named like ``key`` often enough (see
    :func:`_named_attribute`): the attribute that holds ``key`` in at least 70% of
    the first rows, by name or because the extractor's answers equal its values,
    and whose values can be of ``kind`` (asked the "duration" of "I spent 45 minutes
    on news today.", the model answered the diary day's date, and every duration
    was 1996: no date is a number); None when there is none."""
    sample = sample_from[:SAMPLE]
    per_row = [_name_mapping(r, key) for r in sample]
    unasked = [i for i, m in enumerate(per_row) if m is None]
    extractor = ctx.models.extractor
    need = next(m for m in range(len(sample) + 1) if m >= FREEZE_SHARE * len(sample))
    while unasked and extractor is not None:
        # Ask the model about the sample, and see which attribute its answers equal -
        # only until the majority is decided: first as many rows as, all missed, leave
        # no attribute able to reach it (16 of 50 diary notes, where the whole sample
        # was asked before, and then every note again), then as many as it still needs.
        best = max(Counter(m for m in per_row if m is not None).values(), default=0)
        slack = best + len(unasked) - need
        if slack < 0 or best >= need:
            break
        size = max(slack + 1, need - best) if best else slack + 1
        chunk, unasked = unasked[:size], unasked[size:]
        texts = [_with_attributes(sample[i]) for i in chunk]
        answers = extractor.extract([(t, key) for t in texts])
        for i, ans in zip(chunk, map(answered, answers, texts)):
            if not _fits(key, ans):
                continue
            r = sample[i]
            for attr in (*EVENT_ATTRIBUTES, *r.raw):
                held = _lookup(r, attr)
                if _same(ans, held) and not (kind in ("int", "float") and _a_date(held)):
                    per_row[i] = attr
                    break
    return _majority(per_row)


_WORDLESS = re.compile(r"^[\W_]*$")
_ACROSS_FIELDS = re.compile(r"(^|\s)\|(\s|$)")  # the " | " that joins the verbalised fields
_FIELD_NAME = re.compile(r"(?:^|\|\s)([^|:]{1,40}):\s")  # "text" of "... | text: I did hiking"


# A category the text does not name ("italian" for "we had risotto") is the model's
# inference, and below this log probability its guess: asked the cuisine of every
# event RETRIEVE found for "restaurant meal", it answered "italian", "indian" or
# "french" for Netflix episodes of "Before Kitchen" and for "Coming on Sunday? Bring
# dessert." mails, all at -1.09 or below (a cuisine the text names is kept whatever
# its score). On the extractor's dev set (1,500 examples, seed 0), 13 of the 15 wrong
# inferred cuisines were below -0.75 and the one right at -0.43; inferred currencies,
# right or wrong, all above -0.5. The same goes for a member of a vocabulary answered
# for a key that asks for none (:func:`categories.guessed`): asked the "fruit" of a
# TimelineQA shopping list or the "food" of a baking note, it answered "indian" or
# "mexican" at -0.94 to -1.3.
GUESS_LOGPROB = -0.75


def _answered_once(extractor, queries: list[tuple[str, str]],
                   ctx: OperatorContext | None = None) -> list[tuple[str, float]]:
    """The extractor's answer (with its log probability) to each query, asking each
    distinct query once, ``BATCH`` at a time. A year of song plays is 27,840 events
    and 6,629 texts: asked the "genre" of each, the extractor took five minutes (now
    one, and the operator says how far it has got after each call)."""
    distinct = list(dict.fromkeys(queries))
    scored = getattr(extractor, "extract_scored", None)  # a ScoredExtractor
    found: dict[tuple[str, str], tuple[str, float]] = {}
    for n in range(0, len(distinct), BATCH):
        if ctx is not None:
            ctx.check_cancel()
            if n:
                ctx.progress(f"read {n:,} of {len(distinct):,} texts")
        batch = distinct[n:n + BATCH]
        answers = scored(batch) if scored is not None else [(a, 0.0) for a in extractor.extract(batch)]
        if len(answers) != len(batch):
            raise OperatorError("EXTRACT", f"the extractor returned {len(answers)} answers for {len(batch)} texts")
        found.update(zip(batch, answers))
    return [found[q] for q in queries]


def _ask(extractor, key: str, rows: list[Row], segmenter=None, *, numeric: bool = False,
         ctx: OperatorContext | None = None) -> list[Any]:
    """The extractor's answers for ``rows``. A row merged from several events (by
    RETRIEVE: a run in Strava and "Run with Ana" in the calendar; by JOIN: a football
    match and the dinner after it) is asked once per event's text, and the first
    answer written in the text it was read from counts, else the first with a word
    in it: asked about the joined text, the model answered "|", and asked the
    cuisine of the football match, "italian". Where the key asks for a vocabulary
    (a cuisine), an answer of it wins over one that is not ("football"), and one the
    text does not name is kept only where the model was sure of it (``GUESS_LOGPROB``).
    An answer without a letter or digit is no answer; where the key asks who, the
    people the Segmenter finds in the text stand in for it (:func:`people_named`).
    For a ``numeric`` key a title that is only a date is left out.

    Each distinct text is asked once (:func:`_answered_once`); with ``ctx``,
    cancelling is checked and progress said between calls of the extractor."""
    queries: list[tuple[str, str]] = []
    owner: list[int] = []
    for n, r in enumerate(rows):
        text = r.get("text") or ""
        merged = len(r.ids) > 1 and MERGED_TEXTS in text
        parts = [t for t in text.split(MERGED_TEXTS) if t.strip()] if merged else [text]
        for k, part in enumerate(parts):
            # the row's source, kind and title are those of its first event; a title that
            # is only a date says no more than the event's start, and asked the duration
            # of a daily note titled "1996-02-16", the model answered the title
            title = r.get("title") if k == 0 else None
            if numeric and isinstance(title, str) and _DATES.fullmatch(title.strip()):
                title = None
            queries.append((extractor_text(r.get("source") or "", r.get("kind") or "", title, part), key))
            owner.append(n)
    answers = _answered_once(extractor, queries, ctx)
    out: list[Any] = [None] * len(rows)
    written = [False] * len(rows)  # whether out[n] is written in the text it was read from
    for n, (a, logprob), (text, _) in zip(owner, answers, queries):
        a = answered(a, text, key)
        if a is None and out[n] is None:
            a = people_named(text, key, segmenter)
        if a is None:
            continue
        if logprob < GUESS_LOGPROB and guessed(a, text, _norm(key)):
            continue  # a guess: the cuisine of a Netflix episode, "indian" as a fruit
        here = isinstance(a, str) and a.lower() in text.lower()
        # ... and of those, one of the vocabulary the key asks for: the football
        # match's "football" is no cuisine, the dinner's "italian" is
        if out[n] is None or (here, of_its_vocabulary(a, key)) > (written[n], of_its_vocabulary(out[n], key)):
            out[n], written[n] = a, here
    return out
