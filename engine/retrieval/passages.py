"""What RETRIEVE's event classifier and the Embedder read of one event: its
passages. Pure functions; no I/O.

Kept apart from :mod:`engine.retrieval.verbalise` on purpose: the classifiers'
build key hashes that module (``models.training.retrieval_data.corpus_version``),
and their training corpus does not use passages, so a change here must not make
every installation retrain them. What the Embedder compares sentence by sentence
is another matter, and lives in :mod:`engine.retrieval.sentences`.
"""
from __future__ import annotations

import re
from typing import Any

from engine.retrieval.verbalise import key_values, verbalise

_PARAGRAPH = re.compile(r"\n\s*\n")
#: passages read of one event at most (the first and up to 11 later paragraphs)
MAX_PASSAGES = 12
LINE_BREAKS = re.compile(r"\n+")
SENTENCE_BREAKS = re.compile(r"(?<=[.!?])\s+(?=\S)")


def paragraphs(text: str | None) -> list[str]:
    """The paragraphs of ``text`` (split at blank lines), stripped, none empty."""
    return [p.strip() for p in _PARAGRAPH.split(text or "") if p.strip()]


def sentence_pieces(text: str) -> list[str]:
    """``text`` cut at line ends and sentence ends, pieces stripped, none empty."""
    return [s.strip() for line in LINE_BREAKS.split(text) for s in SENTENCE_BREAKS.split(line) if s.strip()]


def passages(pairs: list[tuple[str, Any]], source: str, kind: str, title: str | None,
             text: str | None) -> list[str]:
    """What RETRIEVE's event classifier reads of one event: the verbalised event
    (``pairs`` from :func:`key_values`) and, for a text of several paragraphs (a diary
    day, a long mail), each later paragraph with the event's source, kind and title.
    The classifier sees 64 tokens; the third paragraph of a day's note ("I watched
    a movie on TV") was never read. Nor was what a long paragraph says past them:
    the players a weekly game's description lists after its pitch and rules, a
    mail's booking after its greeting. So each paragraph's sentences beyond what
    its passage lets the classifier read follow it as passages of their own, with
    the same source, kind and title (:data:`READ_CHARS`)."""
    head = key_values(source, kind, title, None, None)
    return [verbalise(pairs), *(verbalise([*head, ("text", t)]) for t in later_texts(source, kind, title, text))]


def later_texts(source: str, kind: str, title: str | None, text: str | None) -> list[str]:
    """The part of ``text`` each of the event's :func:`passages` after the first
    holds, in their order: a later paragraph, or sentences of a paragraph past what
    the passage before let the classifier read."""
    parts = paragraphs(text)
    if not parts:
        return []
    lead = len(verbalise([*key_values(source, kind, title, None, None), ("text", "")]))  # "source: … text: "
    room = max(READ_CHARS - lead, MIN_ROOM)
    out = _beyond(parts[0], READ_CHARS - lead, room)
    for p in parts[1:]:
        if len(out) >= MAX_PASSAGES - 1:
            break
        out += [p, *_beyond(p, room, room)]
    return out[:MAX_PASSAGES - 1]


#: what the event classifier reads of a passage, in characters: about the 64 tokens it
#: reads with a short query ("time with Capucine Cordier" left 226 characters of a
#: calendar entry, "trips" 245)
READ_CHARS = 220
#: the least text a later passage holds beside its source, kind and title
MIN_ROOM = 80


def _beyond(paragraph: str, read: int, room: int) -> list[str]:
    """The sentences of ``paragraph`` that end past its first ``read`` characters
    (what its passage let the classifier read), joined into windows of at most
    ``room`` characters; a longer sentence is cut between words. A sentence read in
    part is read again whole where it fits a window: ``read`` is an estimate in
    characters of 64 tokens, and a list of names costs more tokens a character than
    prose (of "… Organised by Benito Ramírez. With Oriana Quiroga, Patrick Perry,
    Joseph Young.", which starts 7 characters before the estimate, the classifier
    scored the meeting 0.03-0.13 for time with any of the three, and 0.99 with the
    sentence on its own). Of one read mostly, the rest is read only where it is long
    (a mail body without a full stop), from the first word not read; so is the rest
    of one too long for a window."""
    if len(paragraph) <= read:
        return []
    out: list[str] = []
    window, at = "", 0
    for piece in sentence_pieces(paragraph):
        found = paragraph.find(piece, at)
        start = found if found >= 0 else at
        at = start + len(piece)
        if at <= read:
            continue
        mostly = 2 * (read - start) >= at - start
        if start < read and mostly and at - read < room:  # the rest is short ("for 42 min.")
            continue
        if start < read and (mostly or at - start > room):
            cut = paragraph.find(" ", read, at)
            if cut < 0:
                continue
            piece = paragraph[cut + 1:at]
        for chunk in _chunks(piece, room):
            if window and len(window) + 1 + len(chunk) > room:
                out.append(window)
                window = chunk
            else:
                window = f"{window} {chunk}" if window else chunk
    return [*out, window] if window else out


def _chunks(sentence: str, room: int) -> list[str]:
    """``sentence`` cut between words into pieces of at most ``room`` characters
    (a word longer than that is a piece of its own)."""
    out: list[str] = []
    for word in sentence.split():
        if out and len(out[-1]) + 1 + len(word) <= room:
            out[-1] += f" {word}"
        else:
            out.append(word)
    return out
