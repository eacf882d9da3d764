"""Asking the Extractor about events no attribute answers: what it reads of an
event (:func:`extractor_text`), each distinct text asked once and ``BATCH`` at a
time, a merged row asked once per event it was merged from, and the answer kept
that is written in the text, of the vocabulary the key asks for, and no guess
(``GUESS_LOGPROB``).

Each answer is made a value by :mod:`.values`; converting it to the requested type
is :mod:`.pipeline`'s.
"""
from __future__ import annotations

from typing import Any

from engine.operators.categories import guessed, of_its_vocabulary
from engine.operators.context import OperatorContext, OperatorError
from engine.operators.extract.keys import norm_key
from engine.operators.extract.parsing import DATES
from engine.operators.extract.reading import chosen_passages, nearest_by_paragraph, passages_of
from engine.retrieval.passages import later_texts
from engine.operators.extract.values import answered, people_named
from engine.operators.retrieve import MERGED_TEXTS
from engine.plan.rows import Row
from engine.retrieval.verbalise import key_values, verbalise

# Distinct texts per extractor call; cancelling waits for one call at most (~1 s).
BATCH = 256

# A category the text does not name ("italian" for "we had risotto") is the model's
# inference, and below this log probability its guess: asked the cuisine of every
# event RETRIEVE found for "restaurant meal", it answered "italian", "indian" or
# "french" for Netflix episodes of "Before Kitchen" and for "Coming on Sunday? Bring
# dessert." mails, all at -1.09 or below (a cuisine the text names is kept whatever
# its score). On the extractor's dev set (1,500 examples, seed 0), 13 of the 15 wrong
# inferred cuisines were below -0.75 and the one right at -0.43; inferred currencies,
# right or wrong, all above -0.5. The same goes for a member of a vocabulary answered
# for a key that asks for none (:func:`categories.guessed`): asked the "fruit" of a
# TimelineQA shopping list or the "food" of a baking note, it answered "indian" or
# "mexican" at -0.94 to -1.3.
GUESS_LOGPROB = -0.75


def extractor_text(source: str, kind: str, title: str | None, text: str | None) -> str:
    """What the extractor reads of an event: its prose, verbalised as the index does
    but without the structured attributes. A key an attribute holds is found by name
    or value before the model is asked; the attributes only made the text long (a
    Spotify play is ~250 tokens with them, ~50 without)."""
    return verbalise(key_values(source, kind, title, text, None))


def _answered_once(extractor, queries: list[tuple[str, str]],
                   ctx: OperatorContext | None = None) -> list[tuple[str, float]]:
    """The extractor's answer (with its log probability) to each query, asking each
    distinct query once, ``BATCH`` at a time. A year of song plays is 27,840 events
    and 6,629 texts: asked the "genre" of each, the extractor took five minutes (now
    one, and the operator says how far it has got after each call)."""
    distinct = list(dict.fromkeys(queries))
    scored = getattr(extractor, "extract_scored", None)  # a ScoredExtractor
    found: dict[tuple[str, str], tuple[str, float]] = {}
    for n in range(0, len(distinct), BATCH):
        if ctx is not None:
            ctx.check_cancel()
            if n:
                ctx.progress(f"read {n:,} of {len(distinct):,} texts")
        batch = distinct[n:n + BATCH]
        answers = scored(batch) if scored is not None else [(a, 0.0) for a in extractor.extract(batch)]
        if len(answers) != len(batch):
            raise OperatorError("EXTRACT", f"the extractor returned {len(answers)} answers for {len(batch)} texts")
        found.update(zip(batch, answers))
    return [found[q] for q in queries]


def ask_extractor(extractor, key: str, rows: list[Row], segmenter=None, *, numeric: bool = False,
                  ctx: OperatorContext | None = None, embedder=None,
                  cosines: dict[str, list[float]] | None = None) -> list[Any]:
    """The extractor's answers for ``rows``. A row merged from several events (by
    RETRIEVE: a run in Strava and "Run with Ana" in the calendar; by JOIN: a football
    match and the dinner after it) is asked once per event's text, and the first
    answer written in the text it was read from counts, else the first with a word
    in it: asked about the joined text, the model answered "|", and asked the
    cuisine of the football match, "italian". Where the key asks for a vocabulary
    (a cuisine), an answer of it wins over one that is not ("football"), and one the
    text does not name is kept only where the model was sure of it (``GUESS_LOGPROB``).
    An answer without a letter or digit is no answer; where the key asks who, the
    people the Segmenter finds in the text stand in for it (:func:`people_named`).
    For a ``numeric`` key a title that is only a date is left out.

    A text too long to be read at once is asked about in its first passage and the
    two nearest the key (:mod:`.reading`: by ``cosines``, the index's cosines of each
    event's paragraphs with the key, else by ``embedder``); of their answers, one
    written in its passage (not only in the title every passage is read with) wins,
    then one written in what was read, then one of the key's vocabulary, then one
    from a passage nearer the key, then the surer: asked the hotel of a booking mail,
    the model answered "reservation" from its title, surer than of the hotel its third
    paragraph names; asked the performer of a ticket mail, the mail's recipient from
    its first passage ("Mail from Ticket Office to Anna Berg on ...").

    Each distinct text is asked once (:func:`_answered_once`); with ``ctx``,
    cancelling is checked and progress said between calls of the extractor."""
    queries: list[tuple[str, str]] = []
    owner: list[tuple[int, int]] = []  # (row, part of the row) of each query
    read: list[str] = []  # the passage of the row's text each query reads
    nearness: list[int] = []  # how near the key that passage is: 0 the first passage, higher nearer
    for n, r in enumerate(rows):
        text = r.get("text") or ""
        merged = len(r.ids) > 1 and MERGED_TEXTS in text
        parts = [t for t in text.split(MERGED_TEXTS) if t.strip()] if merged else [text]
        titles = r.titles if merged and r.titles and len(r.titles) == len(parts) else None
        for k, part in enumerate(parts):
            # each text with its event's title, where the merged row kept them (the row's
            # source, kind and title are those of its first event); a title that
            # is only a date says no more than the event's start, and asked the duration
            # of a daily note titled "1996-02-16", the model answered the title
            title = titles[k] if titles is not None else r.get("title") if k == 0 else None
            if numeric and isinstance(title, str) and DATES.fullmatch(title.strip()):
                title = None
            passages = passages_of(part)
            nearest = None
            if len(passages) > 1 and not merged and cosines and (stored := cosines.get(next(iter(r.ids)))):
                later = later_texts(r.get("source") or "", r.get("kind") or "", r.get("title"), part)
                nearest = nearest_by_paragraph(passages, later, stored)
            chosen = chosen_passages(passages, key, embedder, nearest)
            for position, j in enumerate(chosen):
                queries.append((extractor_text(r.get("source") or "", r.get("kind") or "", title, passages[j]), key))
                owner.append((n, k))
                read.append(passages[j])
                nearness.append(0 if position == 0 else len(chosen) - position)
    answers = _answered_once(extractor, queries, ctx)
    # the best answer of each part's passages: (answer, written in the passage, written in
    # what was read, of the key's vocabulary, nearness, logprob)
    best: dict[tuple[int, int], tuple[Any, bool, bool, bool, int, float]] = {}
    for (n, k), (a, logprob), (text, _), passage, near in zip(owner, answers, queries, read, nearness):
        a = answered(a, text, key)
        if a is None:
            a = people_named(text, key, segmenter)
        if a is None:
            continue
        if logprob < GUESS_LOGPROB and guessed(a, text, norm_key(key)):
            continue  # a guess: the cuisine of a Netflix episode, "indian" as a fruit
        said = isinstance(a, str)
        found = (a, said and a.lower() in passage.lower(), said and a.lower() in text.lower(),
                 of_its_vocabulary(a, key), near, logprob)
        if (n, k) not in best or found[1:] > best[(n, k)][1:]:
            best[(n, k)] = found
    out: list[Any] = [None] * len(rows)
    written = [False] * len(rows)  # whether out[n] is written in the text it was read from
    for (n, _), (a, _, here, vocabulary, _, _) in sorted(best.items()):
        # ... and of those, one of the vocabulary the key asks for: the football
        # match's "football" is no cuisine, the dinner's "italian" is
        if out[n] is None or (here, vocabulary) > (written[n], of_its_vocabulary(out[n], key)):
            out[n], written[n] = a, here
    return out
