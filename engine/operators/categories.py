"""Categories the text names outright win over the extractor's guess.

For a weekday, a currency or a cuisine, the extractor answers in a closed
vocabulary ("tuesday", "chf", "italian"), and where the text does not make it
obvious it falls back on what it saw most in training: asked the weekday of
"Call with Jean on Thu." it answered "monday", the currency of "701,71 CHF"
"pln", the cuisine of "Argentinian dinner with Francesca" (a cuisine it never
saw) "italian". Asked the cuisine of a football match after which the user ate
out, it answered "italian" too.

:func:`named_category` keeps an answer the text supports, and replaces one it
does not with the only member of the same vocabulary the text does name. An
answer inferred from the text ("we had risotto" -> italian) stays where the text
names no other member.
"""
from __future__ import annotations

import re

_WEEKDAYS = {
    "monday": r"Monday|monday|Mon", "tuesday": r"Tuesday|tuesday|Tues?", "wednesday": r"Wednesday|wednesday|Wed",
    "thursday": r"Thursday|thursday|Thu(?:rs?)?", "friday": r"Friday|friday|Fri",
    "saturday": r"Saturday|saturday|Sat", "sunday": r"Sunday|sunday|Sun",
}
# codes and the symbols that stand for one currency only ("kr" and "$" stand for several;
# "$" is the US dollar unless a code says otherwise)
_CURRENCIES = {
    "eur": r"EUR|€", "usd": r"USD|US\$", "gbp": r"GBP|£", "chf": r"CHF", "sek": r"SEK", "nok": r"NOK", "dkk": r"DKK",
    "jpy": r"JPY|¥", "pln": r"PLN|zł", "czk": r"CZK|Kč", "huf": r"HUF", "cad": r"CAD", "aud": r"AUD",
    "inr": r"INR|₹", "cny": r"CNY|RMB", "krw": r"KRW|₩", "try": r"TRY|₺", "brl": r"BRL|R\$", "mxn": r"MXN",
}
_CUISINES = {c: c.title() for c in """
    afghan african american argentinian armenian australian austrian bavarian belgian brazilian british
    bulgarian burmese cajun cambodian cantonese caribbean chilean chinese colombian creole croatian cuban
    czech danish dutch egyptian english ethiopian filipino finnish french georgian german greek hawaiian
    hungarian indian indonesian iranian irish israeli italian jamaican japanese korean laotian lebanese
    malaysian mediterranean mexican moroccan nepalese nigerian norwegian pakistani persian peruvian polish
    portuguese russian scandinavian scottish sichuan singaporean spanish sri-lankan swedish swiss syrian
    taiwanese thai tibetan turkish ukrainian uzbek venezuelan vietnamese
""".split()}
_CUISINES["sri lankan"] = _CUISINES.pop("sri-lankan").replace("-", " ")

_VOCABULARIES: list[dict[str, re.Pattern]] = [
    {k: re.compile(rf"(?<![\w$]){v}(?!\w)") for k, v in vocab.items()}
    for vocab in (_WEEKDAYS, _CURRENCIES, {k: re.escape(v) for k, v in _CUISINES.items()})
]
# the same by name
_NAMED = dict(zip(("weekday", "currency", "cuisine"), _VOCABULARIES))


# the vocabulary an attribute's name asks for ("cuisine", "meal_cuisine", "weekday")
_KEY_VOCABULARY = [(re.compile(r"week_?day|day_of_(?:the_)?week"), 0), (re.compile(r"currenc"), 1),
                   (re.compile(r"cuisine|(?:type|kind|style)_of_food|food_(?:style|type|kind)"), 2)]


def _vocabulary_of(attr: str) -> dict[str, re.Pattern] | None:
    attr = attr.lower()
    return next((_VOCABULARIES[n] for pattern, n in _KEY_VOCABULARY if pattern.search(attr)), None)


def of_its_vocabulary(answer, attr: str) -> bool:
    """Whether ``answer`` is a member of the vocabulary ``attr`` asks for ("italian"
    for "cuisine"); False where it asks for none."""
    vocab = _vocabulary_of(attr)
    return vocab is not None and isinstance(answer, str) and answer.strip().lower() in vocab


def asks_for_a_category(attr: str) -> bool:
    """Whether ``attr`` asks for a member of a vocabulary ("cuisine", "weekday")."""
    return _vocabulary_of(attr) is not None


def stated(answer, text: str, attr: str) -> bool:
    """Whether ``text`` names ``answer`` as the member of the vocabulary ``attr`` asks
    for ("Italian" in "Italian dinner with Ana" for "cuisine"); False for an answer
    outside that vocabulary or one inferred ("italian" from "we had risotto")."""
    vocab = _vocabulary_of(attr)
    pattern = vocab.get(answer.strip().lower()) if vocab is not None and isinstance(answer, str) else None
    return pattern is not None and pattern.search(text) is not None


def named_category(answer: str | None, text: str, attr: str = "") -> str | None:
    """``answer``, or the one member of its vocabulary that ``text`` names where the
    text does not name ``answer`` itself (see the module docstring). Asked for a
    member of a vocabulary by ``attr`` ("cuisine"), an answer outside it is the one
    member the text names: the cuisine of a football match and the Italian dinner
    after it was "football". An answer of another vocabulary than the one ``attr``
    asks for is no answer where the text names none of it: asked the cuisine of
    "Had risotto ... Paid 1769 $.", the model answered "usd"."""
    if not isinstance(answer, str):
        return answer
    key = answer.strip().lower()
    asked = _vocabulary_of(attr)
    for vocab in _VOCABULARIES:
        if key not in vocab:
            continue
        if asked is not None and asked is not vocab:
            return _the_one_named(asked, text, None)
        return answer if vocab[key].search(text) else _the_one_named(vocab, text, answer)
    return answer if asked is None else _the_one_named(asked, text, answer)


def the_one_named(text: str, attr: str) -> str | None:
    """The one member of the vocabulary ``attr`` asks for that ``text`` names; None
    where it asks for none, or the text names none or several. Where the model
    answers nothing, this is the answer: asked the "kind of food" of "Malaysian
    dinner with Eric Barłóg at The Northern Table", it answered "" (-1.3)."""
    vocab = _vocabulary_of(attr)
    return None if vocab is None else _the_one_named(vocab, text, None)


def _the_one_named(vocab: dict[str, re.Pattern], text: str, otherwise: str | None) -> str | None:
    """The one member of ``vocab`` that ``text`` names; for none or several,
    ``otherwise``, unless the text writes a symbol that several members share
    ("kr") and ``otherwise`` is none of them: then the first of those (the model
    answered "pln" for "130,82 kr", which is Swedish, Norwegian or Danish crowns,
    never złoty)."""
    named = [k for k, pattern in vocab.items() if pattern.search(text)]
    if len(named) == 1:
        return named[0]
    if otherwise is not None and vocab is _NAMED["currency"] and not named:
        for symbol, members in _SHARED_SYMBOLS:
            if symbol.search(text) and otherwise.strip().lower() not in members:
                return members[0]
    return otherwise


# currency symbols that stand for several currencies, and those: the first is the
# one taken where the text says no more ("$" is the US dollar, as in _CURRENCIES)
_SHARED_SYMBOLS = [(re.compile(r"(?<!\w)kr\.?(?!\w)|\d\s?kr(?!\w)"), ("sek", "nok", "dkk")),
                   (re.compile(r"(?<![A-Za-z])\$"), ("usd", "cad", "aud", "mxn"))]


def vocabulary_named(answer) -> str | None:
    """Which vocabulary ``answer`` is a member of: "weekday", "currency", "cuisine", or None."""
    key = answer.strip().lower() if isinstance(answer, str) else None
    return next((name for name, vocab in _NAMED.items() if key in vocab), None)


def guessed(answer, text: str, attr: str) -> bool:
    """Whether ``answer`` is a member of a vocabulary that ``text`` does not name:
    one ``attr`` asks for (the cuisine of a Netflix episode), or one the model
    answered although ``attr`` asks for none ("indian" as the fruit a shopping list
    names). Asked for none, a span of the text is no guess; asked for a vocabulary,
    an answer outside it is one ("football" as a cuisine)."""
    if asks_for_a_category(attr):
        return not stated(answer, text, attr)
    named = vocabulary_named(answer)
    return named is not None and _NAMED[named][answer.strip().lower()].search(text) is None


# a key that asks what was eaten ("food", "dish", "meal_food"), not its kind
_FOOD_KEY = re.compile(r"(?:^|_)(?:food|foods|dish|dishes|meal|meals)(?:$|_)")
_CUISINE_FOOD = re.compile(r"(?<![\w$])(?P<c>(?:%s)) (?:food|cuisine|dishes)(?!\w)"
                           % "|".join(sorted(map(re.escape, _CUISINES.values()), key=len, reverse=True)))


def cuisine_food(answer, text: str, attr: str):
    """Asked the food of "I ate Japanese food at Moolchand ...", the model answered
    "japanese", or nothing: the food is "Japanese food", as the text writes it. Where
    ``attr`` asks what was eaten (not its kind), and the answer is none or a cuisine,
    the one "<cuisine> food" the text says is the answer; otherwise ``answer``."""
    if not _FOOD_KEY.search(attr.lower()) or _vocabulary_of(attr) is not None:
        return answer
    if answer is not None and (not isinstance(answer, str) or answer.strip().lower() not in _NAMED["cuisine"]):
        return answer
    spans = {m.group(0) for m in _CUISINE_FOOD.finditer(text)
             if answer is None or m.group("c").lower() == answer.strip().lower()}
    return spans.pop() if len(spans) == 1 else answer
