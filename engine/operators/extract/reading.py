"""Which parts of a long text the extractor reads.

The extractor reads 256 tokens (words and their pointer markers,
``models.extractor_format.MAX_SOURCE_TOKENS``) and the event's verbalisation cuts
a text to ``engine.retrieval.verbalise.MAX_VALUE_CHARS``: of a booking mail whose
second paragraph names the hotel and the booking number, it read the greeting and
the boilerplate. A text longer than ``READ_CHARS`` is cut into passages at
paragraph, then sentence, then word bounds (:func:`passages_of`); the extractor is
asked about the first (where a short mail says everything, and where the subject's
context is) and, with an Embedder, about the passage nearest the key in its space
(:func:`chosen_passages`). Which answer of them counts is :mod:`.asking`'s.

Pure functions and one Embedder call; no word lists.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

#: characters of prose the extractor is given at a time: the 256 source tokens hold
#: a key, a verbalised event's head ("source: mail | kind: mail | title: ...") and
#: about this much text with its markers
READ_CHARS = 360
#: passages asked about one text at most: the first and the nearest to the key
ASKED_PASSAGES = 2

_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|\n")


def _pieces(text: str, limit: int) -> list[str]:
    """``text`` (one paragraph) in pieces of at most ``limit`` characters: sentences,
    and a sentence longer than that cut between words."""
    out: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        sentence = sentence.strip()
        while len(sentence) > limit:
            cut = sentence.rfind(" ", 0, limit)
            cut = cut if cut > limit // 2 else limit
            out.append(sentence[:cut].strip())
            sentence = sentence[cut:].strip()
        if sentence:
            out.append(sentence)
    return out


def passages_of(text: str, limit: int = READ_CHARS) -> list[str]:
    """``text`` as passages of at most ``limit`` characters, in order: whole paragraphs
    where they fit, consecutive sentences of one paragraph joined up to the limit
    otherwise. A text that fits is its one passage."""
    if len(text) <= limit:
        return [text]
    out: list[str] = []
    for paragraph in _PARAGRAPH.split(text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        if len(paragraph) <= limit:
            out.append(paragraph)
            continue
        current = ""
        for piece in _pieces(paragraph, limit):
            if current and len(current) + 1 + len(piece) > limit:
                out.append(current)
                current = piece
            else:
                current = f"{current} {piece}" if current else piece
        if current:
            out.append(current)
    return out or [text[:limit]]


def key_in_words(key: str) -> str:
    """A key as the Embedder reads it: "booking_number" -> "booking number"."""
    return " ".join(re.sub(r"[_\-.]+", " ", key).split())


def chosen_passages(passages: Sequence[str], key: str, embedder=None) -> list[int]:
    """Indexes of the passages of one text the extractor is asked about: the first,
    and the one nearest ``key`` in the Embedder's space where there is an Embedder
    (without one, the first ``ASKED_PASSAGES``)."""
    if len(passages) <= 1:
        return list(range(len(passages)))
    if embedder is None:
        return list(range(min(ASKED_PASSAGES, len(passages))))
    vectors = embedder.embed([key_in_words(key), *passages[1:]])
    query = vectors[0]
    nearest = max(range(1, len(passages)), key=lambda i: sum(a * b for a, b in zip(query, vectors[i])))
    return [0, nearest]
