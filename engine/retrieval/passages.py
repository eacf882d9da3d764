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

from engine.retrieval.verbalise import key_values, verbalise

_PARAGRAPH = re.compile(r"\n\s*\n")
#: passages read of one event at most (the first and up to 11 later paragraphs)
MAX_PASSAGES = 12
#: what of a passage the Embedder reads: about the 64 tokens the reranker reads of it
SIMILARITY_CHARS = 256


def passages(pairs: list[tuple[str, Any]], source: str, kind: str, title: str | None,
             text: str | None) -> list[str]:
    """What RETRIEVE's event classifier reads of one event: the verbalised event
    (``pairs`` from :func:`key_values`) and, for a text of several paragraphs (a diary
    day, a long mail), each later paragraph with the event's source, kind and title.
    The classifier sees 64 tokens; the third paragraph of a day's note ("I watched
    a movie on TV") was never read."""
    first = verbalise(pairs)
    paragraphs = [p.strip() for p in _PARAGRAPH.split(text or "") if p.strip()]
    if len(paragraphs) < 2:
        return [first]
    head = key_values(source, kind, title, None, None)
    return [first, *(verbalise([*head, ("text", p)]) for p in paragraphs[1:MAX_PASSAGES])]
