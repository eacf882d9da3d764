"""What the Embedder compares with a question sentence by sentence: an event's
sentences, without what says nothing of what a sentence is about (numbers, who was
there, markup). Pure functions; no I/O.

Apart from :mod:`engine.retrieval.passages`, which cuts what the event classifier
reads: these say only what the index embeds sentence by sentence.
"""
from __future__ import annotations

import re

from engine.locale_en import AND, NUMBER_PREPOSITIONS, NUMBER_UNITS, SELF, WITH
from engine.retrieval.passages import LINE_BREAKS, SENTENCE_BREAKS

#: what of a passage the Embedder reads: about the 64 tokens the reranker reads of it
SIMILARITY_CHARS = 256
#: sentences of one event's text the Embedder reads at most (in the index: a long
#: mail's later sentences are rarely what a question is about)
MAX_SENTENCES = 8
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
    for line in LINE_BREAKS.split(text or title or ""):
        if _MARKUP.match(line):
            continue
        for part in SENTENCE_BREAKS.split(_BULLET.sub("", line)):
            s = without_companions(_EMPTY_BRACKETS.sub("", _NUMBER.sub("", part)))
            s = _REPEATED_PUNCT.sub(r"\1", _SPACE_BEFORE_PUNCT.sub(r"\1", " ".join(s.split())))
            s = s.strip(" ,;:-–")[:SIMILARITY_CHARS]
            if re.search(r"[^\W\d_]{2}", s) and s not in out:
                out.append(s)
                if len(out) == MAX_SENTENCES:
                    return out
    return out
