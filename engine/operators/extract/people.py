"""Who a text names: which of the Segmenter's persons can be people, and where a
span the extractor answered runs on past the people it names.

Text only: the Segmenter is passed in, nothing is asked of the extractor, and the
words around names (where-words, titles) are :mod:`engine.locale_en`'s. Making a
person an answer is :func:`engine.operators.extract.values.people_named`'s work.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from engine.locale_en import AND, AT_A_PLACE, SELF, TITLES, WHERE_WORDS

# a word that may start a person's name where no sentence starts: what the segmenter is
# asked about only where the text has one (spaCy reads ~300 texts a second here)
_NAME_INSIDE = re.compile(rf"(?<=[^\W_.!?:|#-] )(?!{SELF}\b)[A-Z\u00C0-\u024F][^\W\d_]+|"
                          rf"\b[A-Z\u00C0-\u024F][^\W\d_]+(?= (?:{AND}|&) {SELF}\b)")
# the fields before an event's text: its source, kind and title ("title: Morning Run" of a
# run merged with a diary day is no one's name)
_FIELDS_BEFORE_TEXT = re.compile(r"^source: [^|]*\|\s*kind: [^|]*\|\s*(?:title: .*?\|\s*(?=text: ))?(?:text: )?",
                                 re.S)
_QUOTES = frozenset("\"'“‘«")


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


# where a span of people runs on past them: the next sentence ("Jade Canali. Paid"),
# the place they were at ("Heidelinde Taskinen at Trattoria Heras"); a full stop after
# one letter is an initial ("J. Smith")
_PAST_PEOPLE = re.compile(rf"(?<=[^\W\d_]{{2}})\.\s+(?=[A-Z])|\s+(?:{'|'.join(AT_A_PLACE)})\s+(?=[A-Z\d])")


def people_only(span: str) -> str:
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
