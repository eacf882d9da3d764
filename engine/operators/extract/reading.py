"""Which parts of a long text the extractor reads.

The extractor reads 256 tokens (words and their pointer markers,
``models.extractor_format.MAX_SOURCE_TOKENS``) and the event's verbalisation cuts
a text to ``engine.retrieval.verbalise.MAX_VALUE_CHARS``: of a booking mail whose
third paragraph names the hotel and the booking number, it read the greeting and
the boilerplate. A text longer than ``READ_CHARS`` is cut into passages: paragraphs
packed together up to that length, a longer paragraph cut at sentence and then word
bounds (:func:`passages_of`). The extractor is asked about the first passage (where
a short mail says everything) and the two nearest the key (:func:`chosen_passages`):
by the vectors the retrieval index keeps of each paragraph where it has them (one
query for all the rows), else by the Embedder. Which answer of them counts is
:mod:`.asking`'s.

Pure functions and one Embedder call; no word lists.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from engine.retrieval.passages import paragraphs, sentence_pieces

#: characters of prose the extractor is given at a time. Its 256 source tokens hold
#: about 360 with a verbalised event's head, but it was trained on texts of one to
#: three sentences: on 300 dev examples set in long mails (``hindsight bench
#: extractor``), 29% exact read in passages of 360 characters, 40% of 240 (asking the
#: first and the two nearest the key; 39% with one nearest)
READ_CHARS = 240
#: passages asked about besides the first: those nearest the key
NEAREST = 2
#: passages of one text compared with the key by the Embedder at most, where the
#: index has no vectors of its paragraphs (a newsletter is one paragraph of 5,000
#: characters: its first passages are what it is about)
EMBEDDED_PASSAGES = 8



def _pieces(text: str, limit: int) -> list[str]:
    """``text`` (one paragraph) in pieces of at most ``limit`` characters: sentences,
    and a sentence longer than that cut between words."""
    out: list[str] = []
    for sentence in sentence_pieces(text):
        while len(sentence) > limit:
            cut = sentence.rfind(" ", 0, limit)
            cut = cut if cut > limit // 2 else limit
            out.append(sentence[:cut].strip())
            sentence = sentence[cut:].strip()
        if sentence:
            out.append(sentence)
    return out


def passages_of(text: str, limit: int = READ_CHARS) -> list[str]:
    """``text`` as passages of at most ``limit`` characters, in order: consecutive
    paragraphs packed together up to the limit, a longer paragraph in pieces of its
    sentences packed the same way. A text that fits is its one passage."""
    if len(text) <= limit:
        return [text]
    out: list[str] = []
    current, joint = "", "\n\n"
    for paragraph in paragraphs(text):
        for piece in [paragraph] if len(paragraph) <= limit else _pieces(paragraph, limit):
            if current and len(current) + len(joint) + len(piece) > limit:
                out.append(current)
                current = ""
            current = f"{current}{joint}{piece}" if current else piece
            joint = " "  # pieces of one paragraph are joined as sentences
        joint = "\n\n"
    if current:
        out.append(current)
    return out or [text[:limit]]


def key_in_words(key: str) -> str:
    """A key as the Embedder reads it: "booking_number" -> "booking number"."""
    return " ".join(re.sub(r"[_\-.]+", " ", key).split())


def passage_holding(passages: Sequence[str], paragraph: str) -> int | None:
    """The index of the passage that holds the start of ``paragraph``."""
    head = paragraph[:60]
    return next((i for i, p in enumerate(passages) if head in p), None)


def nearest_by_paragraph(passages: Sequence[str], later: Sequence[str], cosines: Sequence[float]) -> list[int] | None:
    """The passages holding the ``NEAREST`` parts of the text nearest the key, nearest
    first, from the index's cosines of the text's passages
    (:meth:`engine.retrieval.index.RetrievalIndex.passage_similarities`: the whole
    event first, then each of ``later``, what its later passages hold:
    :func:`engine.retrieval.passages.later_texts`); None when they do not fit."""
    if len(cosines) != len(later) + 1 or not later:
        return None
    order = sorted(range(len(later)), key=lambda i: -cosines[i + 1])
    held = (passage_holding(passages, later[i]) for i in order)
    return list(dict.fromkeys(i for i in held if i is not None))[:NEAREST]


def chosen_passages(passages: Sequence[str], key: str, embedder=None,
                    nearest: Sequence[int] | None = None) -> list[int]:
    """Indexes of the passages of one text the extractor is asked about: the first,
    and the ``NEAREST`` nearest ``key``: ``nearest`` where the caller knows them, else
    by the Embedder over the first ``EMBEDDED_PASSAGES``, else the next ones."""
    if len(passages) <= 1:
        return list(range(len(passages)))
    if nearest is None and embedder is not None:
        considered = passages[1:EMBEDDED_PASSAGES]
        vectors = embedder.embed([key_in_words(key), *considered])
        query = vectors[0]
        cosine = [sum(a * b for a, b in zip(query, v)) for v in vectors[1:]]
        nearest = [1 + i for i in sorted(range(len(considered)), key=lambda i: -cosine[i])]
    if nearest is None:
        nearest = range(1, len(passages))
    return list(dict.fromkeys([0, *list(nearest)[:NEAREST]]))
