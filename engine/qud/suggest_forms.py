"""The questions Hindsight offers when it cannot answer one: forms filled from the
store's own sources, kinds and attribute names (never from its values), each with
the plan that answers it. Data only; :mod:`engine.qud.suggest` fills and ranks them.

``{noun}`` is a kind's events ("Spotify music stream events"), ``{query}`` what
RETRIEVE is asked for them, ``{source}``/``{kind}`` the store's exact names (the
FILTER keeps only that kind), ``{attr}`` an attribute name as people read it and
``{key}`` as stored, ``{year}`` the kind's latest year.
"""
from __future__ import annotations

_KIND = 'FILTER(l=RETRIEVE(query="{query}"), filter=lambda e: e.source == "{source}" and e.kind == "{kind}")'

#: Every kind in the store.
KIND_FORMS: tuple[tuple[str, str], ...] = (
    ("How many {noun} do I have?", "APPLY(l=" + _KIND + ", fct=len)"),
    ("How many {noun} are from {year}?",
     'APPLY(l=FILTER(l=' + _KIND + ', filter=lambda e: year(e.start) == {year}), fct=len)'),
    ("When was my most recent {one}?", 'MAX(l=' + _KIND + ', attr_name="start")'),
)

#: A text attribute that repeats (an artist, a sender, a category).
TEXT_FORMS: tuple[tuple[str, str], ...] = (
    ("Which {attr} comes up most in my {noun}?",
     'ARGMAX(l=GROUP_BY(l=EXTRACT(l=' + _KIND + ', attr_names=["{key}"], attr_types=[str]), attr_names=["{key}"]), '
     'arg_attr_name="{key}", val_attr_name="count")'),
)

#: A numeric attribute (an amount, a distance, a duration).
NUMBER_FORMS: tuple[tuple[str, str], ...] = (
    ("What is the total {attr} of my {noun}?",
     'SUM(l=EXTRACT(l=' + _KIND + ', attr_names=["{key}"], attr_types=[float]), attr_name="{key}")'),
)

#: "{one}": one event of a kind.
ONE = "{name} event"
#: "{noun}": the events of a kind.
MANY = "{name} events"
