"""What RETRIEVE's event classifier and the Embedder read of one event: its
passages. Pure functions; no I/O.

Kept apart from :mod:`engine.retrieval.verbalise` on purpose: the classifiers'
build key hashes that module (``models.training.retrieval_data.corpus_version``),
and their training corpus does not use passages, so a change here must not make
every installation retrain them.
"""
from __future__ import annotations

import re
from typing import Any

from engine.locale_en import AND, NUMBER_PREPOSITIONS, NUMBER_UNITS, SELF, WITH
from engine.retrieval.verbalise import key_values, verbalise

_PARAGRAPH = re.compile(r"\n\s*\n")
#: passages read of one event at most (the first and up to 11 later paragraphs)
MAX_PASSAGES = 12
#: what of a passage the Embedder reads: about the 64 tokens the reranker reads of it
SIMILARITY_CHARS = 256


def paragraphs(text: str | None) -> list[str]:
    """The paragraphs of ``text`` (split at blank lines), stripped, none empty."""
    return [p.strip() for p in _PARAGRAPH.split(text or "") if p.strip()]


def sentence_pieces(text: str) -> list[str]:
    """``text`` cut at line ends and sentence ends, pieces stripped, none empty."""
    return [s.strip() for line in _LINE.split(text) for s in _SENTENCE_END.split(line) if s.strip()]


def passages(pairs: list[tuple[str, Any]], source: str, kind: str, title: str | None,
             text: str | None) -> list[str]:
    """What RETRIEVE's event classifier reads of one event: the verbalised event
    (``pairs`` from :func:`key_values`) and, for a text of several paragraphs (a diary
    day, a long mail), each later paragraph with the event's source, kind and title.
    The classifier sees 64 tokens; the third paragraph of a day's note ("I watched
    a movie on TV") was never read."""
    first = verbalise(pairs)
    parts = paragraphs(text)
    if len(parts) < 2:
        return [first]
    head = key_values(source, kind, title, None, None)
    return [first, *(verbalise([*head, ("text", p)]) for p in parts[1:MAX_PASSAGES])]


#: sentences of one event's text the Embedder reads at most (in the index: a long
#: mail's later sentences are rarely what a question is about)
MAX_SENTENCES = 8
_LINE = re.compile(r"\n+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_MARKUP = re.compile(r"^\s*(?:#+\s.*|>.*)$")  # a markdown heading (a diary day's date) or a quoted line
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
# A number with what says which number it is: "on 2008/02/06", "7.9 km", "for 42
# minutes", "12,50 €". Numbers say nothing of what a sentence is about, and to the
# Embedder they are noise: "running" is 0.39 from "I did running on 2008/02/06." and
# 0.63 from "I did running." (all-MiniLM-L6-v2).
_NUMBER = re.compile(
    rf"(?:\b(?:{'|'.join(NUMBER_PREPOSITIONS)})\s+)?[$€£]?(?<![\w.,])\d(?:[\d/.:,'-]*\d)?"
    rf"(?:\s*(?:(?:{'|'.join(NUMBER_UNITS)})\b|[%€$£]))?",
    re.IGNORECASE)
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([.,;:!?])")
_REPEATED_PUNCT = re.compile(r"[,;:](?:\s*[,;:])*(?=[.!?])|([,;:])(?:\s*[,;:])+")
_EMPTY_BRACKETS = re.compile(r"\(\s*\)|\[\s*\]")


def _name(word: str) -> bool:
    w = word.strip(",.;:!?")
    return bool(w) and w[0].isupper() and w[0].isalpha() and w != SELF


def without_companions(sentence: str) -> str:
    """``sentence`` without who was there: "with Jack, Olivia" and "Layla and I" name
    people, and a sentence is no nearer any question that uses sentence vectors for
    saying so (a question naming someone is left to the reranker and the names): for
    "grocery shopping", "I went grocery shopping." is 0.73 and "I went grocery shopping
    with Jack, Olivia." 0.47 (all-MiniLM-L6-v2)."""
    words = sentence.split()
    # "Layla and I ...", "Jack, Olivia and I ..." -> "I ..."
    n = 0
    while n < len(words) and _name(words[n]):
        n += 1
    if 0 < n and n + 1 < len(words) and words[n] == AND and words[n + 1] == SELF:
        words = words[n + 1:]
    out: list[str] = []
    i = 0
    while i < len(words):
        if words[i].lower() == WITH and i + 1 < len(words) and _name(words[i + 1]):
            j = i + 1
            while j < len(words) and (_name(words[j]) or (words[j] == AND and j + 1 < len(words)
                                                          and _name(words[j + 1]))):
                j += 1
            tail = words[j - 1][len(words[j - 1].rstrip(".;:!?")):]  # the sentence's end stays
            if out and tail:
                out[-1] += tail
            i = j
            continue
        out.append(words[i])
        i += 1
    return " ".join(out)


def sentences(text: str | None, title: str | None = None) -> list[str]:
    """The sentences of an event's text as the Embedder compares them with a question,
    one by one: without markdown headings, bullets, quoted lines, numbers and
    companions (:func:`without_companions`), each cut
    to ``SIMILARITY_CHARS``; at most ``MAX_SENTENCES``, each once. An event without text
    has its title as its one sentence.

    A question is about one thing a day's note says ("Went for a run around Day Park."),
    and beside the note's other sentences, its date and its numbers that thing is a
    small part of the whole: the sentence alone is near the question, the whole note
    is not."""
    out: list[str] = []
    for line in _LINE.split(text or title or ""):
        if _MARKUP.match(line):
            continue
        for part in _SENTENCE_END.split(_BULLET.sub("", line)):
            s = without_companions(_EMPTY_BRACKETS.sub("", _NUMBER.sub("", part)))
            s = _REPEATED_PUNCT.sub(r"\1", _SPACE_BEFORE_PUNCT.sub(r"\1", " ".join(s.split())))
            s = s.strip(" ,;:-–")[:SIMILARITY_CHARS]
            if re.search(r"[^\W\d_]{2}", s) and s not in out:
                out.append(s)
                if len(out) == MAX_SENTENCES:
                    return out
    return out
