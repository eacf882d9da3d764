"""Whether an attribute holds the requested key for most of a kind of event, so
that the mapping is frozen and applied to every event without model calls: by name
(or a synonym) in at least ``FREEZE_SHARE`` of the first ``SAMPLE`` events, else
because the extractor's answers about that sample equal the attribute's values.

It asks the extractor about the sample only; what to do with the mapping is
:mod:`.pipeline`'s.
"""
from __future__ import annotations

from collections import Counter

from engine.operators.context import OperatorContext
from engine.operators.extract.keys import lookup, name_mapping
from engine.operators.extract.values import answered, fits, is_a_date, same
from engine.plan.rows import Row
from engine.plan.spec import EVENT_ATTRIBUTES
from engine.retrieval.verbalise import key_values, verbalise

SAMPLE = 50
FREEZE_SHARE = 0.7


def _with_attributes(row: Row) -> str:
    """The event with its attributes, for the sample that looks for a mapping (an
    answer read from "band: Muse" maps "performer" to band)."""
    return verbalise(key_values(row.get("source") or "", row.get("kind") or "", row.get("title"),
                                row.get("text"), row.raw))


def _majority(found: list[str | None]) -> str | None:
    """The attribute found for at least 70% of a sample (``found`` holds one entry
    per sampled row, None where nothing was found)."""
    counts = Counter(m for m in found if m is not None)
    if counts:
        attr, n = counts.most_common(1)[0]
        if n >= FREEZE_SHARE * len(found):
            return attr
    return None


def named_attribute(key: str, sample_from: list[Row]) -> str | None:
    """The attribute named like ``key`` (or a synonym) in at least 70% of the first rows."""
    return _majority([name_mapping(r, key) for r in sample_from[:SAMPLE]])


def frozen_attribute(key: str, sample_from: list[Row], ctx: OperatorContext, kind: str = "str") -> str | None:
    """For rows where no attribute is named like ``key`` often enough (see
    :func:`named_attribute`): the attribute that holds ``key`` in at least 70% of
    the first rows, by name or because the extractor's answers equal its values,
    and whose values can be of ``kind`` (asked the "duration" of "I spent 45 minutes
    on news today.", the model answered the diary day's date, and every duration
    was 1996: no date is a number); None when there is none."""
    sample = sample_from[:SAMPLE]
    per_row = [name_mapping(r, key) for r in sample]
    unasked = [i for i, m in enumerate(per_row) if m is None]
    extractor = ctx.models.extractor
    need = next(m for m in range(len(sample) + 1) if m >= FREEZE_SHARE * len(sample))
    while unasked and extractor is not None:
        # Ask the model about the sample, and see which attribute its answers equal -
        # only until the majority is decided: first as many rows as, all missed, leave
        # no attribute able to reach it (16 of 50 diary notes, where the whole sample
        # was asked before, and then every note again), then as many as it still needs.
        best = max(Counter(m for m in per_row if m is not None).values(), default=0)
        slack = best + len(unasked) - need
        if slack < 0 or best >= need:
            break
        size = max(slack + 1, need - best) if best else slack + 1
        chunk, unasked = unasked[:size], unasked[size:]
        texts = [_with_attributes(sample[i]) for i in chunk]
        answers = extractor.extract([(t, key) for t in texts])
        for i, ans in zip(chunk, map(answered, answers, texts)):
            if not fits(key, ans):
                continue
            r = sample[i]
            for attr in (*EVENT_ATTRIBUTES, *r.raw):
                held = lookup(r, attr)
                if same(ans, held) and not (kind in ("int", "float") and is_a_date(held)):
                    per_row[i] = attr
                    break
    return _majority(per_row)
