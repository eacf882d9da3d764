"""The people a store knows by full name, and a first name said alone read as one.

An export often names a person by first name only ("Run with Eddie" on Strava, "dinner
with Eddie" in a diary) where another names them in full: the mail they send and get
("Eddie Gilbert <eddie.gilbert@...>"), the calendar invitations they are on. Where
exactly one full name the store knows starts with a first name said alone, that is
who it is; where two do ("Adrian Kade", "Adrian Lopez") or none, the name stays as
written.

Names only: which attributes hold addressed names is :data:`ADDRESSED`; the store is
read by :func:`known_names`'s one query, and keeping the result is the caller's.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from engine.locale_en import AND

#: Attributes whose values are people as mail and calendars address them: a display
#: name ("Eddie Gilbert"), or names with addresses ("Eddie Gilbert <e@x.org>, ...").
ADDRESSED = ("from_name", "from", "to", "cc", "bcc", "attendees", "organizer", "counterpart")

_WORD = r"[A-Z\u00C0-\u024F][^\W\d_]+(?:-[A-Z\u00C0-\u024F][^\W\d_]+)?"
# a full name: two to four capitalised words ("Hans-Jörg Albers", "Ana de la Vega" is left out)
_FULL = re.compile(rf"^{_WORD}(?: {_WORD}){{1,3}}$")
# a display name before an address: "Eddie Gilbert <eddie@x.org>", '"Gilbert, Eddie" <...>' is none
_BEFORE_ADDRESS = re.compile(r"([^,<>\"]+?)\s*<[^<>@\s]+@[^<>\s]+>")
# the parts of a list of people: "Eddie, Leocadia and Caroline"
_SEPARATORS = re.compile(rf"(\s*,\s*(?:{AND}\s+)?|\s+{AND}\s+|\s*&\s*)")
_ONE_WORD = re.compile(rf"^{_WORD}$")

KNOWN_NAMES_SQL = ("SELECT DISTINCT json_extract_string(attributes, '$.' || k) FROM events, "
                   "(SELECT unnest(?::VARCHAR[]) AS k) WHERE attributes IS NOT NULL "
                   "AND json_extract_string(attributes, '$.' || k) IS NOT NULL")


def names_in(value: str) -> list[str]:
    """The full names an addressed value gives: each display name before an address,
    or the value itself where it is one name."""
    found = [m.group(1).strip(" '\"") for m in _BEFORE_ADDRESS.finditer(value)]
    if not found and "@" not in value:
        found = [part.strip(" '\"") for part in value.strip("[]").split(",")]
    return [n for n in found if _FULL.match(n)]


def known_names(con) -> list[str]:
    """Every full name the events' addressed attributes hold (a DuckDB connection
    ``con`` over the store's ``events``), sorted."""
    names: set[str] = set()
    for (value,) in con.execute(KNOWN_NAMES_SQL, [list(ADDRESSED)]).fetchall():
        names.update(names_in(value))
    return sorted(names)


def by_first_name(full_names: Iterable[str]) -> dict[str, str]:
    """First name (case-folded) -> the one full name that starts with it; first names
    two full names share are left out."""
    seen: dict[str, set[str]] = {}
    for name in full_names:
        seen.setdefault(name.split()[0].casefold(), set()).add(name)
    return {first: next(iter(full)) for first, full in seen.items() if len(full) == 1}


def says_a_lone_name(value: str) -> bool:
    """Whether ``value`` (one person or a list of them) has a name of one word."""
    return any(_ONE_WORD.match(part.strip()) for part in _SEPARATORS.split(value)[::2])


def in_full(value: str, directory: Mapping[str, str]) -> str:
    """``value`` (one person or a list of them) with each name said as a first name
    alone written as the full name ``directory`` knows for it."""
    parts = _SEPARATORS.split(value)
    for i in range(0, len(parts), 2):  # the names; the separators between them are kept
        name = parts[i].strip()
        if _ONE_WORD.match(name) and name.casefold() in directory:
            parts[i] = parts[i].replace(name, directory[name.casefold()])
    return "".join(parts)
