"""Events that say the same thing but for their date and numbers (a weekly
meeting's instances, a recurring appointment) are judged alike: where the reranker
passes a few of them and fails most, the few pass on its noise, not on what they
say. For "trip" it passed 14 of a life's 114 "Team weekly" meetings, the ones in
July, at 0.49-0.52 against a threshold of 0.5, and 6 trips were counted as 31.

Text only: what an event says with its dates, weekdays and numbers left out.
"""
from __future__ import annotations

import re
from collections import defaultdict

from engine.locale_en import MONTH, WEEKDAY_NAMES
from engine.operators.retrieve.events import Event

#: a shape this many judged events share is judged by their majority
MIN_ALIKE = 3
_DATE_WORDS = re.compile(rf"\b(?:{MONTH}|{'|'.join(WEEKDAY_NAMES)})\b|\d+", re.I)


def shape(e: Event) -> str:
    """What ``e`` says, its dates, weekdays and numbers left out, in lower case."""
    return " ".join(_DATE_WORDS.sub(" ", f"{e.title or ''}\n{e.text or ''}".lower()).split())


def passed_against_their_like(judged: list[Event], passed: set[str]) -> set[str]:
    """The ids of ``passed`` whose shape (:func:`shape`) at least :data:`MIN_ALIKE`
    of the ``judged`` events share, fewer than half of which passed."""
    by_shape: dict[str, list[Event]] = defaultdict(list)
    for e in judged:
        by_shape[shape(e)].append(e)
    out: set[str] = set()
    for events in by_shape.values():
        ok = [e.id for e in events if e.id in passed]
        if ok and len(events) >= MIN_ALIKE and 2 * len(ok) < len(events):
            out.update(ok)
    return out
