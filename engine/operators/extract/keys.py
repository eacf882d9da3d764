"""Which attribute of an event a requested key names: the key as written by the
planner made comparable ("Start Time" is start_time), the attributes that usually
hold it (:data:`engine.locale_en.KEY_SYNONYMS`), and reading one off a row.

Rows only: no model is asked here, and no value is converted.
"""
from __future__ import annotations

import re
from typing import Any

from engine.locale_en import KEY_SYNONYMS
from engine.plan.rows import Row
from engine.plan.spec import EVENT_ATTRIBUTES


def norm_key(key: str) -> str:
    """``key`` as attributes are named: lower case, its words joined by "_"."""
    return re.sub(r"[\s\-]+", "_", key.strip().lower())


def candidate_attributes(key: str) -> list[str]:
    """The attributes that may hold ``key``, best first: itself, its synonyms, its singular."""
    k = norm_key(key)
    return list(dict.fromkeys((k, *KEY_SYNONYMS.get(k, ()), k.rstrip("s"))))


def lookup(row: Row, attr: str) -> Any:
    """The value of ``attr`` in ``row``: an event attribute, or a raw one by its name as written or normalised."""
    if attr in EVENT_ATTRIBUTES and row.has(attr):
        return row.get(attr)
    if attr in row.raw:
        return row.raw[attr]
    norm = {norm_key(k): k for k in row.raw}
    if attr in norm:
        return row.raw[norm[attr]]
    return None


def holds(row: Row, attr: str) -> bool:
    """Whether ``row`` has a value, not empty, in ``attr``."""
    if attr in EVENT_ATTRIBUTES:
        return row.get(attr) not in (None, "")
    return lookup(row, attr) not in (None, "")


def name_mapping(row: Row, key: str) -> str | None:
    """The first attribute named like ``key`` that ``row`` has a value in; None where none."""
    for attr in candidate_attributes(key):
        if holds(row, attr):
            return attr
    return None
