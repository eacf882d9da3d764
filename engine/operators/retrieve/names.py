"""The names a query gives ("Chloe", "Liberty Bell", "The Sugar Gutiérrezs"), the
query without them, and whether an event says one of them.

A name is a run of capitalised words after a query's first word, or from its first
word where the store's names (:class:`engine.plan.names_given.NameBook`, read by the
caller) hold that word: "Barcelona trip" names Barcelona where a value of the data is
Barcelona, and "Running with friends" names no one. The words around names
(:mod:`engine.locale_en`) are English. Text only: no model, no store.
"""
from __future__ import annotations

import re

from engine.locale_en import AND, BEING_WITH, EDGE_WORDS, KIND_WORDS, NAME_JOINERS, POSSESSIVE, SELF, STOP_WORDS
from engine.operators.retrieve.events import Event
from engine.operators.spans import PARTICLES
from engine.plan.names_given import MAIL_ADDRESS, NameBook
from engine.retrieval.words import stems

_WORD = re.compile(r"[^\W\d_][\w'’.-]*")
_POSSESSIVE = re.compile(POSSESSIVE)
# what a question calls a kind of event and does with it: no more than the patterns judge
_KIND_STEMS = frozenset().union(*(stems(" ".join((kind.replace("_", " "), *nouns, *verbs)))
                                   for kind, (nouns, verbs) in KIND_WORDS.items()))
_BEING_WITH = stems(" ".join(BEING_WITH))
# words that join the capitalised words of one name: "Statue of Liberty", "Leonardo da Vinci"
_NAME_JOINERS = PARTICLES | NAME_JOINERS
_SENTENCE_START = re.compile(r"(^|[.!?:;#\n])\s*$")
# a mail address: a word inside one is part of an identifier, not a name said
_ADDRESS = MAIL_ADDRESS


def _bare(word: str) -> str:
    """``word`` as a name has it: without a possessive "'s" and the stops and
    apostrophes around it ("Chloe." at a sentence's end is Chloe)."""
    return _POSSESSIVE.sub("", word).strip(".'’-")


def names_something(query: str, book: NameBook | None = None) -> bool:
    """Whether ``query`` names someone or something: a capitalised word after its
    first ("songs by The Sugar Gutiérrezs", "Diane Edwards"; "I" aside), or its first
    where ``book`` holds it (see :func:`names`)."""
    return bool(names(query, book))


def names(query: str, book: NameBook | None = None) -> list[tuple[str, ...]]:
    """The names ``query`` gives (see :func:`names_something`): runs of capitalised
    words, each word without a possessive "'s", stop words left out. "trip to Rome,
    Italy" [("Rome",), ("Italy",)], "visited Liberty Bell" [("Liberty", "Bell")],
    "songs by The Sugar Gutiérrezs" [("Sugar", "Gutiérrezs")]. The query's first word
    starts a name only where ``book``, the store's names, holds it as a name of its
    own or the start of one the next words go on with (:meth:`NameBook.holds`): a
    search's query is not a sentence, but its first word is capitalised for other
    reasons too ("Running with friends", "Dinner with Anna" where titles say "Dinner
    with …")."""
    out: list[tuple[str, ...]] = []
    run: list[str] = []
    end = -1
    found = list(_WORD.finditer(query))
    for n, m in enumerate(found):
        w = _bare(m.group())
        name = (bool(w) and w[0].isupper() and w != SELF
                and (n > 0 or (book is not None and book.holds(w, _capitals_after(query, found)))))
        if run and (not name or query[end:m.start()].strip()):
            out.append(tuple(run))
            run = []
        if name and w.lower() not in STOP_WORDS:
            run.append(w)
        end = m.end()
    if run:
        out.append(tuple(run))
    return list(dict.fromkeys(out))


def _capitals_after(query: str, found: list[re.Match]) -> list[str]:
    """The capitalised words right after the query's first, with only spaces between
    them: the rest of a name it may start ("Pizzeria Niemeier visit" ["Niemeier"])."""
    out = []
    for prev, m in zip(found, found[1:]):
        w = _bare(m.group())
        if query[prev.end():m.start()].strip() or not w or not w[0].isupper():
            break
        out.append(w)
    return out


def without_names(query: str, wanted: list[tuple[str, ...]]) -> str:
    """``query`` without the words of the names it gives (:func:`names`) and the
    words that only joined them: "go get groceries with Chloe" "go get groceries
    with", "talked to Layla" "talked to" (the reranker told talks from meals better
    so than asked "talked"); "" where nothing is left to say what happened ("Chloe",
    "with Ana Ruiz"), or only that they were there ("meeting", "spent time"), or
    only what kind of event it was, which the patterns judge: to
    the reranker "listened to" was far from The Honey Walshs' plays, "mail from"
    from Patrick Perry's mails (persona p5 lost both)."""
    if not wanted:
        return ""
    named = {w.lower() for name in wanted for w in name}
    words = [w for w in query.split() if _bare(w.strip(",.;:!?\"")).lower() not in named]
    while words and words[-1].lower().strip(",") in EDGE_WORDS:
        words.pop()
    rest = " ".join(words).strip(" ,")
    return rest if stems(rest) - _KIND_STEMS - _BEING_WITH else ""


def says_a_name(e: Event, wanted: list[tuple[str, ...]]) -> bool:
    """Whether the event's title, text or attribute values say a word of one of
    ``wanted`` (from :func:`names`): in any case, but an acronym in capitals only
    ("US" is not "us"). One word is enough: a diary says "Dorita" for "time with
    Dorita Cabezas". But not a word of another name: "Statue of Liberty" does not say
    "Liberty Bell", nor "Dorita Smith" "Dorita Cabezas" (see :func:`_in_another_name`).
    Nor a word inside a mail address: every event of a calendar holds the user's own
    ("calendar: sam.whitaker@gmail.com"), which said "Whitaker" for "time with
    Elizabeth Whitaker", and 45 weekly meetings without her passed; where a person is
    meant, their address comes with their name."""
    text = "\n".join([e.title or "", e.text or "", *(str(v) for _, v in e.pairs)])
    text = _ADDRESS.sub(lambda m: " " * len(m.group()), text)  # same length: positions stay
    for name in wanted:
        for w in name:
            for m in re.finditer(rf"(?<!\w){re.escape(w)}(?!\w)", text, 0 if len(w) > 1 and w.isupper() else re.I):
                if not _in_another_name(text, m.start(), m.end(), name):
                    return True
    return False


def _in_another_name(text: str, start: int, end: int, name: tuple[str, ...]) -> bool:
    """Whether the capitalised word at ``text[start:end]`` belongs to another name
    than ``name``: a run of capitalised words (spaces between them, or a joiner such
    as "of" or "da") with a word ``name`` lacks, lacking a word of ``name``. "Chloe
    Brown" says "Chloe"; "Statue of Liberty" does not say "Liberty Bell". The first
    word of a sentence is capitalised anyway and is no part of a name ("Visited
    Liberty Bell today")."""
    if not text[start].isupper():
        return False
    words = list(_WORD.finditer(text))
    at = next((n for n, m in enumerate(words) if m.start() <= start < m.end()), None)
    if at is None:
        return False
    run = {_bare(words[at].group()).lower()}
    for step in (-1, 1):
        n = at
        while 0 <= n + step < len(words):
            a, b = (words[n + step], words[n]) if step < 0 else (words[n], words[n + step])
            if text[a.end():b.start()].strip(" \t"):  # a comma, a bracket, a line's end: the run ends
                break
            n += step
            w = _bare(words[n].group())
            if w.lower() in _NAME_JOINERS or (w.lower() in STOP_WORDS and w.lower() != AND):
                continue  # "Statue of Liberty"; "Lunch With Chloe" in a title's capitals
            if not w or not w[0].isupper() or w in (SELF, AND.title()):
                break
            if not _SENTENCE_START.search(text[:words[n].start()]):
                run.add(w.lower())
    own = {w.lower() for w in name}
    return bool(run - own) and bool(own - run)
