"""Training and dev pairs for RETRIEVE's two cross-encoders, built as ReQAP does.

* Event classifier: (query, event text) -> 1 if the event answers the query. Hard
  negatives are events of the same kind that differ in the queried entity or
  category (another artist, another activity), easy ones come from other kinds.
* Pattern classifier: (query, key-value pattern) -> relevant / irrelevant /
  partial. A pattern such as ``source: spotify | kind: music_stream`` is relevant
  when every event it matches bears on the query, partial when only some do (a
  superset, such as ``kind: workout`` for a question about running), irrelevant
  otherwise.

Event texts reuse ``extract_data``'s templates, so entity and template splits are
the same. This module must not import torch or any model library.
"""
from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from models.training import extract_data as ed
from models.training.entities import EntitySource, Split

GENERATOR_VERSION = "rerank-2"
PATTERN_LABELS = ("relevant", "irrelevant", "partial")

# kind -> (source, event kind) as our importers write them
SOURCES = {
    "music": ("spotify", "music_stream"), "podcast": ("spotify", "podcast_stream"),
    "netflix": ("netflix", "viewing"), "workout": ("strava", "workout"),
    "purchase": ("amazon", "purchase"), "restaurant": ("mail", "message"),
    "calendar": ("calendar", "calendar_event"), "travel": ("mail", "booking"),
}


@dataclass(frozen=True, slots=True)
class Pair:
    query: str
    text: str
    label: int  # event: 0/1; pattern: index into PATTERN_LABELS


def _event(rng: random.Random, renderer: "ed.EventRenderer", kind: str, split: Split):
    choices = [i for i in range(len(ed.TEMPLATES[kind])) if split == "dev" or (kind, i) not in ed.DEV_TEMPLATES]
    return renderer.render(kind, ed.TEMPLATES[kind][rng.choice(choices)])


# Query families: (event kind, attribute the query is about or None, query templates)
_EVENT_QUERIES = [
    ("music", "artist", ["How often did I listen to {v}?", "songs by {v}", "When did I last play {v}?",
                         "how many minutes of {v} did I stream", "{v} tracks I listened to"]),
    ("music", None, ["How much music did I listen to?", "Which songs did I play on Spotify?",
                     "my most played tracks"]),
    ("podcast", "show", ["How many episodes of {v} did I hear?", "When did I listen to {v}?"]),
    ("netflix", "show", ["Did I watch {v}?", "How many episodes of {v} did I watch?", "when did I watch {v}"]),
    ("netflix", None, ["What did I watch on Netflix?", "How many shows did I stream?"]),
    ("workout", "activity", ["How far did I go {v} last year?", "How many {v} sessions did I do?",
                             "my {v} workouts", "When did I last go {v}?"]),
    ("workout", None, ["How many workouts did I do?", "total exercise time this year"]),
    ("purchase", "store", ["How much did I spend at {v}?", "orders from {v}", "What did I buy from {v}?"]),
    ("purchase", None, ["How much did I spend online?", "list my purchases"]),
    ("restaurant", "cuisine", ["How often did I eat {v} food?", "{v} restaurants I went to",
                               "When did I last have {v}?"]),
    ("restaurant", "person", ["When did I have dinner with {v}?", "meals with {v}"]),
    ("calendar", "attendee", ["When did I meet {v}?", "meetings with {v}", "How often did I see {v}?"]),
    ("travel", "city", ["When did I travel to {v}?", "trips to {v}", "Did I go to {v}?"]),
]


def event_pairs(seed: int, split: Split, *, negatives: int = 3) -> Iterator[Pair]:
    """Endless (query, event text, 0/1) pairs: one positive, then ``negatives``
    negatives, about half of them hard (same kind, other value)."""
    rng = random.Random(f"{seed}:{split}:events")
    renderer = ed.EventRenderer(rng, EntitySource(seed, split))
    kinds = sorted(ed.TEMPLATES)
    while True:
        kind, attr, templates = rng.choice(_EVENT_QUERIES)
        for _ in range(20):
            text, attrs = _event(rng, renderer, kind, split)
            if attr is None or attr in attrs:
                break
        else:
            continue
        value = attrs[attr][0] if attr else ""
        query = rng.choice(templates).format(v=value)
        yield Pair(query, text, 1)
        for n in range(negatives):
            if n % 2 == 0:  # hard: same kind, the queried attribute differs
                neg_text, neg_attrs = _event(rng, renderer, kind, split)
                if attr is None or attr not in neg_attrs or neg_attrs[attr][0] == value:
                    continue
            else:
                neg_text, _ = _event(rng, renderer, rng.choice([k for k in kinds if k != kind]), split)
            yield Pair(query, neg_text, 0)


def _kv(pairs: list[tuple[str, str]]) -> str:
    return " | ".join(f"{k}: {v}" for k, v in pairs)


def pattern_pairs(seed: int, split: Split) -> Iterator[Pair]:
    """Endless (query, pattern, label) triples covering all three labels."""
    rng = random.Random(f"{seed}:{split}:patterns")
    renderer = ed.EventRenderer(rng, EntitySource(seed, split))
    while True:
        kind, attr, templates = rng.choice(_EVENT_QUERIES)
        for _ in range(20):
            _, attrs = _event(rng, renderer, kind, split)
            if attr is None or attr in attrs:
                break
        else:
            continue
        value = attrs[attr][0] if attr else ""
        query = rng.choice(templates).format(v=value)
        source, ev_kind = SOURCES[kind]
        others = [k for k in SOURCES if SOURCES[k] != (source, ev_kind)]
        o_source, o_kind = SOURCES[rng.choice(others)]
        categorical = attr in ("activity", "cuisine")
        # Relevant: the pattern picks exactly the events the query is about.
        if attr is None:
            relevant = [_kv([("source", source), ("kind", ev_kind)]), _kv([("kind", ev_kind)])]
            partial = [_kv([("source", source)])] if source in ("spotify", "mail") else []
        elif categorical:
            relevant = [_kv([(attr, value)]), _kv([("kind", ev_kind), (attr, value)])]
            partial = [_kv([("kind", ev_kind)]), _kv([("source", source)])]
        else:
            relevant = [_kv([("source", source), ("kind", ev_kind)]), _kv([("kind", ev_kind)])]
            partial = [_kv([("source", source)])] if source in ("spotify", "mail") else []
        irrelevant = [_kv([("source", o_source), ("kind", o_kind)]), _kv([("kind", o_kind)]),
                      _kv([("source", o_source)])]
        if categorical:
            wrong = rng.choice([c for c in (ed.ACTIVITIES if attr == "activity" else ed.CUISINES) if c != value])
            irrelevant.append(_kv([(attr, wrong)]))
        yield Pair(query, rng.choice(relevant), 0)
        yield Pair(query, rng.choice(irrelevant), 1)
        if partial:
            yield Pair(query, rng.choice(partial), 2)
