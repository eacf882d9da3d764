"""What the index's encoders read of an event, cut into texts that many events
share, so that each distinct text is encoded once for the whole index. Pure
functions; no I/O.

A Spotify export of 43,060 plays of 123 songs has 43,060 different documents: each
says how long the song played ("for 3 min 12 s", "ms played: 192000"). Encoded
whole, each document cost a SPLADE and an Embedder pass (112 events/s). But the
words that make a play findable are its attribute values (the song, the artist,
the platform), and those repeat; the numbers make no event nearer to any query in
either model's space (see :func:`engine.retrieval.sentences.sentences`: "running" is
0.39 from "I did running on 2008/02/06." and 0.63 from "I did running."). So:

* the **neural view** of an event leaves out numeric attributes and the numbers
  of its title and text that are not part of one of its attribute values (a song
  called "1979" keeps its name; "for 3 min 12 s" goes). A question about those
  numbers filters the event's attributes; full-text search reads the whole document;
* the **sparse units** of an event are its neural view one key-value pair at a
  time (source and kind together), a long text one paragraph at a time. SPLADE
  pools a text's term weights by their maximum over its tokens; an event's weights
  are the maximum over its units (:meth:`engine.retrieval.index.RetrievalIndex.sparse_search`).
  A play's units are its song's, its platform's, its reasons': a few hundred
  distinct texts for the 43,060 plays. And a mail's third paragraph, which a
  64-token document never reached, is read;
* a title or text **made of the event's own attribute values** ("Listened to Down by
  Rosario Rusticucci from the album Situation on iOS 16.5", values making up at least
  ``TEMPLATE_SHARE`` of its letters; a sentence only if some words are its own) is read as its template, each value replaced by
  its key ("Listened to track by artist from the album album on platform"): the values
  are units of their own, so the sparse weights lose no word, and every play of every
  song shares one title unit, one text unit and one sentence instead of one each per
  song (on a generated year of one persona, 63% of the distinct texts were plays').
  A sentence that names no one is also what the Embedder should compare with a
  question that names no one (see :mod:`engine.operators.retrieve.acceptance`);
* the **embedder passages** of an event are :func:`engine.retrieval.passages.passages`
  (what the reranker reads), each in its neural view; the first one says the event
  in words (source, kind, title, text) and leaves out its attributes where it has
  a title or a text, as a play's title and text already name its song, artist and
  platform. Byte-identical passages and sentences are embedded once.

Every text is identified by :func:`text_key`, a stable 64-bit hash of its bytes.
"""
from __future__ import annotations

import hashlib
import re
from typing import Any

import orjson

from engine.retrieval.passages import MAX_PASSAGES, paragraphs, passages
from engine.retrieval.sentences import _NUMBER, sentences
from engine.retrieval.verbalise import _NOT_PATTERN_KEYS, key_values, verbalise

#: paragraphs of a text read as units of their own (beyond them the encoder reads
#: nothing): each costs a SPLADE pass, and a mail's later paragraphs are rarely what
#: a question is about
MAX_SPARSE_PARAGRAPHS = 4
#: shortest attribute value kept whole inside a title or text
_MIN_VALUE_CHARS = 2
#: the share of a title's or text's letters its attribute values must make up for it
#: to be read as a template (:func:`as_template`)
TEMPLATE_SHARE = 1 / 3
_LETTER = re.compile(r"[^\W\d_]")
_SPACES = re.compile(r"[ \t]+")
_SPACE_BEFORE_PUNCT = re.compile(r"[ \t]+([.,;:!?])")


def text_key(text: str) -> int:
    """A stable signed 64-bit key of ``text`` (Python's ``hash`` changes per process)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)


_DIGIT = re.compile(r"\d")
_SKIPPED_KEYS = frozenset(_NOT_PATTERN_KEYS)


def _skipped(key: str) -> bool:
    return (key.rsplit(".", 1)[-1] if "." in key else key) in _SKIPPED_KEYS


def without_numbers(text: str, keep: list[str]) -> str:
    """``text`` without its numbers (and their units: "for 3 min"), except inside the
    strings of ``keep`` (the event's own attribute values, longest first)."""
    if not _DIGIT.search(text):
        return text
    kept = [value for value in keep if value in text]
    # each kept value stands aside as a character no number pattern matches
    for n, value in enumerate(kept):
        text = text.replace(value, chr(_ASIDE + n))
    s = _NUMBER.sub("", text)
    for n, value in enumerate(kept):
        s = s.replace(chr(_ASIDE + n), value)
    return _SPACE_BEFORE_PUNCT.sub(r"\1", _SPACES.sub(" ", s)).strip()


_ASIDE = 0xF0000  # a private-use plane: never in a title or text


def neural_pairs(pairs: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``pairs`` (:func:`engine.retrieval.verbalise.key_values`) as the encoders read
    them: numeric values and the attributes that identify one record (a message id,
    a date: :data:`engine.retrieval.verbalise._NOT_PATTERN_KEYS`; full-text search
    finds those) left out, and the numbers of titles and texts that are not attribute
    values."""
    out: list[tuple[str, Any]] = []
    keep: list[str] | None = None
    for k, v in pairs:
        if v.__class__ is int or v.__class__ is float or _skipped(k):
            continue
        if (k == "title" or k == "text") and v.__class__ is str and _DIGIT.search(v):
            if keep is None:
                keep = _kept_values(pairs)
            v = without_numbers(v, keep)
            if not _LETTER.search(v):
                continue
        out.append((k, v))
    return out


def _kept_values(pairs: list[tuple[str, Any]]) -> list[str]:
    """The attribute values with a digit that a title or text may say, longest first."""
    return sorted({v for k, v in pairs if v.__class__ is str and k != "title" and k != "text"
                   and len(v) >= _MIN_VALUE_CHARS and _DIGIT.search(v) and not _skipped(k)},
                  key=len, reverse=True)


#: "key: value" of each pair lately seen: the same platform, artist and reason come
#: in thousands of events (a dict lookup instead of formatting them again)
_UNIT_MEMO: dict[tuple[str, Any], str] = {}


def _unit(k: str, v: Any) -> str:
    try:
        return _UNIT_MEMO[(k, v)]
    except KeyError:
        pass
    except TypeError:  # an unhashable value
        return verbalise([(k, v)])
    if len(_UNIT_MEMO) > 200_000:
        _UNIT_MEMO.clear()
    u = _UNIT_MEMO[(k, v)] = verbalise([(k, v)])
    return u


def _letters(text: str) -> int:
    return sum(1 for c in text if c.isalpha())


def _whole_word_at(text: str, start: int, end: int) -> bool:
    return (start == 0 or not text[start - 1].isalnum()) and (end == len(text) or not text[end].isalnum())


def as_template(text: str, values: list[tuple[str, str]], *, own_words: bool = False) -> str | None:
    """``text`` with each of ``values`` ((key, value), longest value first) it says
    as a whole word replaced by the key's last part in words ("track", "start
    time"), when those values make up at least ``TEMPLATE_SHARE`` of its letters
    (and, with ``own_words``, not all of them); None otherwise."""
    total = _letters(text)
    if not total:
        return None
    covered = 0
    names: list[str] = []
    for key, value in values:
        start = text.find(value)
        while start >= 0:
            end = start + len(value)
            if _whole_word_at(text, start, end):
                covered += _letters(value)
                # the key stands aside as one private character until every value is
                # replaced, so that a later, shorter value cannot match inside it
                text = text[:start] + chr(_ASIDE + len(names)) + text[end:]
                names.append(key.rsplit(".", 1)[-1].replace("_", " "))
                start = text.find(value, start + 1)
            else:
                start = text.find(value, start + 1)
    if covered < TEMPLATE_SHARE * total or (own_words and covered == total):
        return None
    for n, name in enumerate(names):
        text = text.replace(chr(_ASIDE + n), name)
    return text


def _template_values(view: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    """The values of ``view`` a title or text may be made of, longest first."""
    return sorted(((k, v) for k, v in view if v.__class__ is str and k != "source" and k != "kind"
                   and k != "title" and k != "text" and len(v) >= _MIN_VALUE_CHARS and any(c.isalnum() for c in v)),
                  key=lambda kv: len(kv[1]), reverse=True)


def read_as_templates(view: list[tuple[str, Any]], *, own_words: bool = False) -> list[tuple[str, Any]]:
    """``view`` with its title and text each read as its template (:func:`as_template`)
    where it is one. ``own_words``: only a template with words of its own (a sentence
    that is nothing but "subject" would be near no question)."""
    if not any(k == "title" or k == "text" for k, _ in view):
        return view
    values = _template_values(view)
    if not values:
        return view
    out = []
    for k, v in view:
        if (k == "title" or k == "text") and v.__class__ is str:
            v = as_template(v, values, own_words=own_words) or v
        out.append((k, v))
    return out


def sparse_units(pairs: list[tuple[str, Any]], view: list[tuple[str, Any]] | None = None) -> list[str]:
    """The texts SPLADE reads of one event (its weights are their maximum): source
    and kind as one, then each other pair of its neural view, its text one paragraph
    at a time (at most ``MAX_SPARSE_PARAGRAPHS``); a title or text made of the event's
    attribute values as its template (:func:`read_as_templates`). Each text once.
    ``view``: the pairs' :func:`neural_pairs`, where the caller has them."""
    view = read_as_templates(neural_pairs(pairs) if view is None else view)
    head = [(k, v) for k, v in view if k == "source" or k == "kind"]
    units = [_unit(*head[0]) if len(head) == 1 else verbalise(head)] if head else []
    for k, v in view:
        if k == "source" or k == "kind":
            continue
        if k == "text" and "\n" in v:
            units += [verbalise([(k, p)]) for p in (paragraphs(v) or [v])[:MAX_SPARSE_PARAGRAPHS]]
        elif k == "text" or k == "title":
            units.append(verbalise([(k, v)]))
        else:
            units.append(_unit(k, v))
    return list(dict.fromkeys(u for u in units if u))


def embedder_passages(pairs: list[tuple[str, Any]], source: str, kind: str, title: str | None,
                      text: str | None, view: list[tuple[str, Any]] | None = None) -> list[str]:
    """What the Embedder reads of one event in place of each of its
    :func:`engine.retrieval.passages.passages` (as many, in the same order): each in
    its neural view, the first without attributes where the event has a title or a
    text."""
    view = neural_pairs(pairs) if view is None else view
    said = [(k, v) for k, v in view if k == "source" or k == "kind" or k == "title" or k == "text"]
    first = verbalise(said if (title or text) else view)
    rest = passages(pairs, source, kind, title, text)[1:MAX_PASSAGES] if text else []
    keep = _kept_values(pairs)
    return [first, *(without_numbers(p, keep) for p in rest)]


def view_key(view: list[tuple[str, Any]]) -> int | None:
    """A stable 64-bit key of a neural view (:func:`neural_pairs`), as :func:`text_key`
    keys texts; None for a view with a value JSON cannot say."""
    try:
        data = orjson.dumps(view)
    except TypeError:
        return None
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little", signed=True)


def event_texts(pairs: list[tuple[str, Any]], source: str, kind: str, title: str | None, text: str | None,
                view: list[tuple[str, Any]] | None = None) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(sparse units, embedder passages, sentences) of one event, all functions of its
    neural view (``view``, or :func:`neural_pairs` of ``pairs``): a caller that
    meets the same view again (the thousandth play of a song) may keep what it made
    of them by :func:`view_key`. The sentences are
    :func:`engine.retrieval.sentences.sentences` of the view's text and title, each
    read as its template where it is one (:func:`read_as_templates`)."""
    view = neural_pairs(pairs) if view is None else view
    said = dict(kv for kv in read_as_templates(view, own_words=True) if kv[0] == "title" or kv[0] == "text")
    return (tuple(sparse_units(pairs, view)), tuple(embedder_passages(pairs, source, kind, title, text, view)),
            tuple(sentences(said.get("text"), said.get("title"))))


def event_units(source: str, kind: str, title: str | None, text: str | None,
                attributes: dict | None) -> tuple[list[str], list[str]]:
    """(sparse units, embedder passages) of one event."""
    pairs = key_values(source, kind, title, text, attributes or {})
    view = neural_pairs(pairs)
    return sparse_units(pairs, view), embedder_passages(pairs, source, kind, title, text, view)
