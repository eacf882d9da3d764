"""The extractor's answer made a value, or None where it is none: cleaned
(:func:`answered`: a name made whole and without the words it was cut with, people
as the list they are named in, a category the text names), stood in for by the
people the Segmenter finds (:func:`people_named`), and checked against the key it
answers (:func:`fits`, :func:`read_off_a_date`) or the attribute it may come from
(:func:`same`).

Judging only: the extractor is asked elsewhere (:mod:`.asking`), and the English
the answers are checked by is :mod:`engine.locale_en`'s.
"""
from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any

from engine.locale_en import (CURRENCY_KEY_WORDS, CURRENCY_WORDS, DATE_KEY_WORDS, FOOD_KEY_WORDS, FUNCTION_WORDS,
                              IDENTIFIER_KEY_WORDS, MONEY_KEY_WORDS, NUMBER_UNITS, PRONOUNS, SPAN_EDGE_WORDS)
from engine.operators.categories import cuisine_food, named_category, the_one_named, vocabulary_named
from engine.operators.extract.keys import norm_key
from engine.operators.extract.parsing import CLOCK_TIMES, DATES, ISO_DATE, NUMBER, PRICES, parse_number
from engine.operators.extract.people import people_only, persons_in
from engine.operators.spans import whole_list, whole_name
from engine.plan.rows import Row
from engine.plan.spec import PEOPLE_KEYS

_WORDLESS = re.compile(r"^[\W_]*$")
_ACROSS_FIELDS = re.compile(r"(^|\s)\|(\s|$)")  # the " | " that joins the verbalised fields
_FIELD_NAME = re.compile(r"(?:^|\|\s)([^|:]{1,40}):\s")  # "text" of "... | text: I did hiking"
_POSSESSIVE = re.compile(r"[’']s\b")


def answered(a: Any, text: str, key: str = "") -> Any:
    """The extractor's answer to a question about ``text``, or None where it is none:
    no letter or digit in it, or a span across the fields of the text it read (asked
    the "show" of "title: 1996-01-03 | text: I watched a tv series ...", the model
    answered "1996-01-03 | text"), or the name of a field (the "place" of "... | text:
    I did hiking on 2005/01/14." was "text"), or function words alone ("I", "did").
    A name comes whole (:mod:`engine.operators.spans`) and without a preposition or conjunction it was
    cut with ("to Bangkok" of "went to Bangkok", "hiking on" of "I did hiking on
    2019/04/02"), people as the whole list they are named in
    (the key asks who: "people", "companion"), and a weekday, currency or cuisine
    the text names wins over the model's guess, or stands in for no answer, as
    does the "Japanese food" it says for the food eaten
    (:mod:`engine.operators.categories`)."""
    if a is None or isinstance(a, str) and _WORDLESS.match(a.strip("| ")):
        # no answer: a cuisine the text names is one, and the food "Japanese food" it says
        return cuisine_food(the_one_named(text, norm_key(key)), text, norm_key(key))
    if isinstance(a, str):
        a = a.strip().strip("|").strip()  # "Worry |": the title, and the field's end
        if _WORDLESS.match(a) or _ACROSS_FIELDS.search(a) \
                or a.lower() in {m.group(1).strip().lower() for m in _FIELD_NAME.finditer(text)} \
                or all(w in FUNCTION_WORDS for w in re.findall(r"[^\W\d_]+", a.lower())) and not re.search(r"\d", a):
            return None
        name = _without_edge_words(whole_name(a, text))
        if PEOPLE_KEYS.match(norm_key(key)):
            name = people_only(name)
            if not any(w[:1].isupper() and w.lower() not in PRONOUNS for w in name.split()):
                return None  # who was there is a name: the "people" of a run were "heart", "a 9.7"
            name = whole_list(name, text)
        return cuisine_food(named_category(name, text, norm_key(key)), text, norm_key(key))
    return a


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
    if segmenter is None or not PEOPLE_KEYS.match(norm_key(key)):
        return None
    for name in persons_in(text, segmenter):
        made = answered(name, text, key)
        if made is not None and not _POSSESSIVE.search(made):
            return made
    return None


def _without_edge_words(span: str) -> str:
    words = span.split()
    while len(words) > 1 and words[0] in SPAN_EDGE_WORDS:
        words.pop(0)
    while len(words) > 1 and words[-1] in SPAN_EDGE_WORDS:
        words.pop()
    return " ".join(words) if len(words) != len(span.split()) else span


def is_a_date(value: Any) -> bool:
    """Whether ``value`` is a date or time, or text that is one ("1996-01-07")."""
    return isinstance(value, (date, datetime)) or isinstance(value, str) and DATES.fullmatch(value.strip()) is not None


def same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return False
    if isinstance(b, datetime):  # the whole answer a date: "1996-01-03 | text" is a date and junk
        m = ISO_DATE.fullmatch(str(a).strip())
        return m is not None and m.group(1) == b.date().isoformat()
    return str(a).strip().lower() == str(b).strip().lower()


def _key_words(words: tuple[str, ...]) -> re.Pattern:
    """A pattern that finds any of ``words`` anywhere in a key, in any case."""
    return re.compile("|".join(map(re.escape, words)), re.I)


_DATE_KEYS = _key_words(DATE_KEY_WORDS)
_MONEY_KEYS = _key_words(MONEY_KEY_WORDS)
_CURRENCY_KEYS = _key_words(CURRENCY_KEY_WORDS)
_FOOD_KEYS = _key_words(FOOD_KEY_WORDS)
_IDENTIFIER_KEYS = _key_words(IDENTIFIER_KEY_WORDS)
_DIGIT = re.compile(r"\d")


def fits(key: str, value: Any) -> bool:
    """Whether ``value`` can be the ``key`` of an event: "lots" (of energy), "I
    really" or "running" are no people; names are written like names. A weekday is
    the answer only to a key about time, a currency only to one about money: asked
    the food of "Italian dinner with Ana at Osteria da Hänel on Friday", the model
    answered "Friday". A cuisine answers only a key about food or a kind of thing:
    asked the "fruit" of TimelineQA's diary notes, it answered "chinese". An
    identifier (a key for an order, flight, booking or seat number) has a digit and is
    no date: asked the flight number of a trip's mails, it answered "Buenos Aires"."""
    if not isinstance(value, str):
        return True
    if _IDENTIFIER_KEYS.search(key) and (not _DIGIT.search(value) or is_a_date(value)):
        return False
    named = vocabulary_named(value)
    if named == "weekday" and not _DATE_KEYS.search(key) or \
            named == "currency" and not _CURRENCY_KEYS.search(key) or \
            named == "cuisine" and not _FOOD_KEYS.search(key):
        return False
    if not PEOPLE_KEYS.search(key):
        return True
    return value != value.lower() and value.split()[0].lower() not in PRONOUNS


def read_off_a_date(value: float, key: str, row: Row) -> bool:
    """Whether the model's number for a key that is no date or time occurs in the
    row's text only inside dates and times of day: asked the "total" of a diary day
    titled "Tuesday, 27 June 2023", it answered 27, and the Amazon spend grew by 27;
    asked the "amount" paid for a calendar's "Haircut ... at 10:00 until 10:40", it
    answered 10. Likewise a number for a key that is no amount of money, read off a
    price: asked the "distance_km" of swim goggles bought for 43.99 GBP, it answered
    43.99, and "how many km did I swim" grew by 204; and a number for a key about
    money read off a measure in another unit: asked the "amount" of song plays
    ("... for 3 min 49 s"), it answered their minutes, and a year's Spotify cost
    came out 39,966."""
    text = f"{row.get('title') or ''}\n{row.get('text') or ''}"
    money = _MONEY_KEYS.search(key)
    return (not _DATE_KEYS.search(key) and _only_inside(value, text, _DATES_AND_TIMES)) or (
        not money and _only_inside(value, text, PRICES)) or bool(
        money and _only_inside(value, text, _OTHER_MEASURES))


_DATES_AND_TIMES = re.compile(f"{DATES.pattern}|{CLOCK_TIMES.pattern}", re.I)
# a number with a unit that is no currency: "3 min", "49 s", "7.9 km"
_OTHER_MEASURES = re.compile(
    r"\d+(?:[.,]\d+)?\s?(?:" + "|".join(map(re.escape, sorted(
        {u for u in NUMBER_UNITS if u.upper() not in {c.upper() for c in CURRENCY_WORDS}}, key=len, reverse=True)))
    + r")\b", re.I)


def _only_inside(value: float, text: str, spans: re.Pattern) -> bool:
    """Whether ``value`` is a number of ``text`` only inside the ``spans``."""
    everywhere = {parse_number(m.group(0)) for m in NUMBER.finditer(text)}
    outside = {parse_number(m.group(0)) for m in NUMBER.finditer(spans.sub(" ; ", text))}
    return value in everywhere and value not in outside
