"""Key-value patterns, the unit RETRIEVE's pattern classifier labels.

A pattern is a set of (key, value) items that must all hold, e.g.
``kind: workout | source: strava | sport: running``. RETRIEVE labels patterns in
two levels:

* one **group pattern** per (source, kind) in the store: a whole kind of event is
  relevant to the query ("songs I listened to" -> every Spotify play), irrelevant,
  or partial (only some of its events bear on the query);
* inside a partial group, **value patterns**: the group plus one categorical item
  that splits it (``sport: running`` among workouts, ``direction: sent`` among mail).

The model layer trains the classifier on exactly these texts (``describe_pattern``),
so runtime and training share this module. Pure functions; no I/O.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

Item = tuple[str, str]
Pattern = tuple[Item, ...]  # sorted items, all must hold

# A value that covers more of its group than this says nothing the group does not.
MAX_VALUE_SHARE = 0.95
# A key with more distinct values than this in a group is an identifier or a name
# (tracks, subjects), not a category worth a pattern; the reranker handles those.
MAX_VALUES_PER_KEY = 60


def group_pattern(source: str, kind: str) -> Pattern:
    return (("kind", kind), ("source", source))


def with_item(group: Pattern, item: Item) -> Pattern:
    return tuple(sorted({*group, item}))


def describe_pattern(p: Pattern) -> str:
    return " | ".join(f"{k.replace('_', ' ')}: {v}" for k, v in p)


def value_patterns(group: Pattern, items_per_event: Iterable[set[Item]], *, min_support: int = 2,
                   min_share: float = 0.01, max_patterns: int = 40) -> list[tuple[Pattern, int]]:
    """The categorical items that split a group, most frequent first, as patterns
    (group + item) with their support among ``items_per_event`` (a sample of the
    group's events). Items of the group pattern itself are never repeated."""
    own = {k for k, _ in group}
    events = list(items_per_event)
    n = len(events)
    if not n:
        return []
    counts: Counter = Counter(i for items in events for i in items if i[0] not in own)
    values_per_key: dict[str, int] = defaultdict(int)
    for key, _ in counts:
        values_per_key[key] += 1
    floor = max(min_support, int(min_share * n + 0.999))
    chosen = [(item, c) for item, c in counts.items()
              if c >= floor and c <= MAX_VALUE_SHARE * n and values_per_key[item[0]] <= MAX_VALUES_PER_KEY]
    chosen.sort(key=lambda ic: (-ic[1], ic[0]))
    return [(with_item(group, item), c) for item, c in chosen[:max_patterns]]


def matches(p: Pattern, items: set[Item]) -> bool:
    return all(i in items for i in p)


def pattern_sql(p: Pattern) -> tuple[str, list]:
    """A WHERE clause over the events table selecting the events ``p`` matches.
    Keys go into a JSON path, quoted; values are parameters."""
    where, params = [], []
    for key, value in p:
        if key in ("source", "kind"):
            where.append(f"{key} = ?")
        else:
            path = "$." + ".".join('"' + part.replace('"', '').replace("'", "") + '"' for part in key.split("."))
            # booleans are stored as JSON true/false; pattern values are their text
            where.append(f"json_extract_string(attributes, '{path}') = ?")
        params.append(value)
    return " AND ".join(where), params
