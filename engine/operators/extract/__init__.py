"""EXTRACT: add typed attributes to rows.

When at least 70% of the first 50 rows map the requested key to the same existing
attribute (by name, by a known synonym such as "date" -> start or "amount" ->
total, or because the Extractor's answer equals that attribute's value), the
mapping is frozen and applied to every row without model calls. A key naming a
duration or distance in a unit ("duration_hours") is converted from an attribute
in another unit or from the span (:mod:`engine.operators.units`). Otherwise the
Extractor protocol is asked, in batches. Values are converted to the requested
type; a value that cannot be converted becomes null, never a guess.

:mod:`.pipeline` decides for each kind of event how the key is read; :mod:`.keys`
finds the attribute a key names, :mod:`.freezing` the one that holds it for most
of a sample; :mod:`.asking` asks the extractor; :mod:`.values` makes its answer a
value or none, with the people :mod:`.people` finds; :mod:`.parsing` reads numbers
and dates and converts values. The English words it reads keys and answers by are
:mod:`engine.locale_en`'s.

This package reads rows and asks models; it never writes the store.
"""
from __future__ import annotations

from engine.operators.extract.asking import GUESS_LOGPROB, extractor_text
from engine.operators.extract.parsing import coerce, parse_number
from engine.operators.extract.pipeline import extract
from engine.operators.extract.values import answered, people_named

__all__ = ["GUESS_LOGPROB", "answered", "coerce", "extract", "extractor_text", "parse_number", "people_named"]
