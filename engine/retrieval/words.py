"""Content words of a query or an event, crudely stemmed: enough to hear "running"
in "Run" and "birthdays" in "Ana's birthday", not a linguist's stemmer.

Used where a decision must rest on the words a text shares with a query (RETRIEVE's
sentence acceptance) and by the classifiers' training data (hard negatives that share
the query's words). The words themselves are :mod:`engine.locale_en`'s; this module
holds none."""
from __future__ import annotations

import re
from functools import lru_cache

from engine.locale_en import KIND_WORDS, MEALS, SHORT_STOP_WORDS, STEM_SUFFIXES, STOP_WORDS, VOWELS

_WORD = re.compile(r"[a-z]{3,}")


def stem(word: str) -> str:
    """A crude stem: suffixes off, a doubled last consonant halved."""
    for suffix in STEM_SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[:-len(suffix)]
            break
    if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in VOWELS:
        word = word[:-1]
    return word


def stems(text: str) -> set[str]:
    """The stems of ``text``'s words of three letters or more, stop words left out."""
    return {stem(w) for w in _WORD.findall(text.lower()) if w not in STOP_WORDS}


#: Words of which a text says one where it does not say another: a dinner is no
#: lunch. The meals (:data:`engine.locale_en.MEALS`), as stems.
EXCLUSIVE: tuple[frozenset[str], ...] = tuple(frozenset(stem(w) for w in ws) for ws in MEALS)


def contradicts(query: str, text: str) -> bool:
    """Whether ``text`` says another of the :data:`EXCLUSIVE` words than the one
    ``query`` says, and not that one: "I prepare fish and chips for dinner." for
    "lunch with fish and chips" (the embedder put it at 0.79 of the query)."""
    asked = _exclusive_asked(query)
    if asked is None:
        return False
    said = stems(text)
    return not asked & said and any(ws & said for ws in EXCLUSIVE if ws is not asked)


@lru_cache(maxsize=64)
def _exclusive_asked(query: str) -> frozenset[str] | None:
    """The one :data:`EXCLUSIVE` set ``query`` says a word of, or None: asked once a
    query, not once an event."""
    asked = [ws for ws in EXCLUSIVE if ws & stems(query)]
    return asked[0] if len(asked) == 1 else None


def said_words(text: str) -> set[str]:
    """The stems of ``text`` (:func:`stems`) and its two-letter words but the
    commonest: "TV episode" says "tv", which a kind of event is called by."""
    return stems(text) | {w for w in re.findall(r"\b[a-z]{2}\b", text.lower()) if w not in SHORT_STOP_WORDS}


# KIND_WORDS is read from here too (the retrieval benchmark's tests)
__all__ = ["EXCLUSIVE", "KIND_WORDS", "contradicts", "said_words", "stem", "stems"]
