"""The EXTRACT operator: for each requested key, each kind of event (source and
kind) is read by the first way that works for it: left empty where a sibling kind
holds the key and it holds none, converted from another unit, read off the event's
start (an hour, a weekday), read from the attribute that holds it (:mod:`.freezing`),
or else asked of the extractor (:mod:`.asking`); every value converted to the
requested type (:mod:`.parsing`).

The order of these ways and the notes that say which was taken are this module's;
how each works is the other modules'.
"""
from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from engine.operators.context import OperatorContext, OperatorError
from engine.operators.extract.asking import ask_extractor
from engine.operators.extract.directory import by_first_name, in_full, known_names, says_a_lone_name
from engine.operators.extract.freezing import FREEZE_SHARE, SAMPLE, frozen_attribute, named_attribute
from engine.operators.extract.keys import candidate_attributes, holds, lookup, norm_key
from engine.operators.extract.parsing import coerce
from engine.operators.extract.reading import READ_CHARS, key_in_words
from engine.operators.extract.values import fits, read_off_a_date
from engine.operators.units import in_unit, measure
from engine.plan.nodes import Extract
from engine.plan.rows import Row
from engine.plan.spec import EVENT_ATTRIBUTES, PEOPLE_KEYS

# Keys that are a part of when an event happened, where no attribute holds them: read
# off its start (local time), never asked of the model. Asked "at what hour do I
# listen to music most", the planner extracted an "hour" the model could not find
# in a play's text, and the answer was "no value".
TIME_PARTS: dict[str, Any] = {
    "hour": lambda dt, kind: dt.hour, "hour_of_day": lambda dt, kind: dt.hour,
    "weekday": lambda dt, kind: dt.isoweekday() if kind == "int" else dt.strftime("%A"),
    "day_of_week": lambda dt, kind: dt.isoweekday() if kind == "int" else dt.strftime("%A"),
    "month": lambda dt, kind: dt.strftime("%B") if kind == "str" else dt.month,
    "year": lambda dt, kind: dt.year,
}


def extract(node: Extract, rows: list[Row], ctx: OperatorContext) -> list[Row]:
    """``rows`` with the attributes ``node`` names, each of its type (None where not found)."""
    if len(node.attr_names) != len(node.attr_types):
        raise OperatorError("EXTRACT", "give one type per attribute name")
    if ctx.wanted is not None:
        # the side of a same-day JOIN: a row of no day it pairs on is dropped there anyway
        kept = [r for r in rows if ctx.is_wanted(r)]
        if len(kept) < len(rows):
            ctx.note(f"EXTRACT: {len(kept)} of {len(rows)} events are on the days the JOIN pairs; "
                     "the others were left out")
        rows = kept
    columns: dict[str, list[Any]] = {}
    for key, kind in zip(node.attr_names, node.attr_types):
        ctx.check_cancel()
        columns[key] = _extract_one(key, kind, rows, ctx)
        if kind == "str" and PEOPLE_KEYS.match(norm_key(key)):
            columns[key] = _in_full(key, columns[key], ctx)
    return [row.with_values(**{k: columns[k][i] for k in columns}) for i, row in enumerate(rows)]


def _extract_one(key: str, kind: str, rows: list[Row], ctx: OperatorContext) -> list[Any]:
    """Each kind of event (source and kind) decides on its own whether an attribute
    holds ``key``: a RETRIEVE that brings Amazon orders and a few mails must read
    the orders' ``total`` and ask the model only about the mails."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault((r.get("source") or "", r.get("kind") or ""), []).append(i)
    out: list[Any] = [None] * len(rows)
    ask: list[int] = []
    named = {g: named_attribute(key, [rows[i] for i in members]) for g, members in groups.items()}
    in_units = kind in ("int", "float") and measure(key) is not None  # "duration_hours"
    for (source, kind_), members in groups.items():
        ctx.check_cancel()
        group = [rows[i] for i in members]
        what = f"{source} {kind_}".strip() or "events"
        # "role" of ChatGPT's conversations: its turns hold a role, the conversations have
        # none to hold, and the model would make one up from the text
        holder = next(((k, a) for (s, k), a in named.items()
                       if s == source and k != kind_ and a is not None and a not in EVENT_ATTRIBUTES), None)
        if named[(source, kind_)] is None and holder and not any(holds(r, holder[1]) for r in group):
            ctx.note(f"EXTRACT {key!r} from {what}: {source}'s {holder[0]} events hold it in {holder[1]!r}, "
                     f"these {len(members)} have no such attribute; left empty")
            continue
        measured = [in_unit(r, key) for r in group] if in_units and named[(source, kind_)] is None else []
        if sum(m is not None for m in measured[:SAMPLE]) >= FREEZE_SHARE * min(len(group), SAMPLE) > 0:
            held = Counter(m[1] for m in measured if m is not None)
            ctx.note(f"EXTRACT {key!r} from {what}: converted from "
                     + ", ".join("the span" if h == "span" else repr(h) for h, _ in held.most_common()))
            for i, m in zip(members, measured):
                out[i] = None if m is None else coerce(m[0], kind, rows[i])
            continue
        part = TIME_PARTS.get(norm_key(key)) if named[(source, kind_)] is None else None
        if part is not None:
            ctx.note(f"EXTRACT {key!r} from {what}: read off each event's start")
            for i in members:
                start = rows[i].get("start")
                out[i] = coerce(part(start, kind), kind, rows[i]) if isinstance(start, datetime) else None
            continue
        attr = named[(source, kind_)] or frozen_attribute(key, group, ctx, kind)
        if attr is None:
            ask.extend(members)
            if len(groups) > 1:
                ctx.note(f"EXTRACT {key!r} from {what}: no attribute holds it; asking the extractor "
                         f"({len(members)} events)")
            continue
        ctx.note(f"EXTRACT {key!r} from {what}: frozen mapping to {attr!r}")
        for i in members:
            out[i] = coerce(lookup(rows[i], attr), kind, rows[i])
    if not ask:
        return out
    if ctx.models.extractor is None:
        raise OperatorError("EXTRACT", (
            f"the events have no attribute that holds {key!r} (looked for {', '.join(candidate_attributes(key))}) "
            "and no extraction model is loaded"))
    if len(groups) == 1:
        ctx.note(f"EXTRACT {key!r}: no attribute holds it for {FREEZE_SHARE:.0%} of the sample; "
                 "asked the extractor")
    ask.sort()
    asked = [rows[i] for i in ask]
    answers = ask_extractor(ctx.models.extractor, key, asked, ctx.models.segmenter,
                            numeric=kind in ("int", "float"), ctx=ctx, embedder=ctx.models.embedder,
                            cosines=_paragraph_cosines(key, asked, ctx))
    for i, answer in zip(ask, answers):
        value = coerce(answer, kind, rows[i])
        if kind in ("int", "float") and value is not None and read_off_a_date(value, key, rows[i]):
            value = None
        if kind == "str" and not fits(key, value):
            value = None
        out[i] = value
    return out


def _in_full(key: str, values: list[Any], ctx: OperatorContext) -> list[Any]:
    """People said by first name alone, written in full where the store knows one
    person of that first name (:mod:`.directory`); the directory is read once per
    state of the store (kept in the index's memo, which new events clear)."""
    if not any(isinstance(v, str) and says_a_lone_name(v) for v in values):
        return values
    memo = getattr(ctx.index, "memo", None)
    found = memo.get(_DIRECTORY) if memo is not None else None
    names = found[0] if found is not None else known_names(ctx.store.reader())
    if memo is not None and found is None:
        memo.put(_DIRECTORY, names, [])
    directory = by_first_name(names)
    if not directory:
        return values
    out = [in_full(v, directory) if isinstance(v, str) else v for v in values]
    changed = sum(a != b for a, b in zip(values, out))
    if changed:
        ctx.note(f"EXTRACT {key!r}: {changed} values name someone by first name alone; written as the one "
                 "person of that name your mail and calendar know")
    return out


_DIRECTORY = ("people known by full name",)


def _paragraph_cosines(key: str, rows: list[Row], ctx: OperatorContext) -> dict[str, list[float]]:
    """For each event of ``rows`` whose text is too long to be read at once: the
    cosine of the key with each of its passages, from the vectors the retrieval index
    keeps (:mod:`.reading`); one Embedder call and one query for all of them, where
    embedding each text's passages now took seconds for a few hundred mails."""
    long = [next(iter(r.ids)) for r in rows if len(r.ids) == 1 and len(r.get("text") or "") > READ_CHARS]
    if not long or ctx.models.embedder is None or getattr(ctx.index, "vectors", None) is None:
        return {}
    return ctx.index.passage_similarities(ctx.models.embedder.embed([key_in_words(key)])[0], long)
