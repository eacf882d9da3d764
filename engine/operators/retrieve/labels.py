"""What RETRIEVE says of a pattern: the pattern classifier's three labels, and the
labels RETRIEVE's own checks put in their place, each with the reason its notes
show ("relevant, but far from the query: partial").

Code decides by a label's :attr:`~Label.verdict` (keep the pattern's events whole,
drop them, or judge them one by one) or by the label itself, never by its text.
No model, no store: the classifier's words become labels in
:func:`engine.operators.retrieve.labelling.classify`.
"""
from __future__ import annotations

from enum import Enum


class Verdict(Enum):
    """What a label does to the events of its pattern."""
    KEEP = "keep"    # all of them, from the store, whether the search found them or not
    DROP = "drop"    # none of them
    JUDGE = "judge"  # its candidates go to the value patterns, the embedder and the reranker


class Label(Enum):
    """A pattern's label; its value is what RETRIEVE's notes say of the pattern."""

    # the pattern classifier's own
    RELEVANT = "relevant"
    IRRELEVANT = "irrelevant"
    PARTIAL = "partial"
    # the query names a kind of event (:mod:`engine.operators.retrieve.kinds`)
    KIND_NAMED = "relevant: the query names this kind and nothing more"
    OTHER_KIND_NAMED = "irrelevant: the query names another kind"
    ANOTHER_KIND_NAMED = "relevant, but the query names another kind: partial"
    # the embedder doubts the classifier (:mod:`engine.operators.retrieve.labelling`)
    FAR = "relevant, but far from the query: partial"
    SIBLING_NEARER = "relevant, but a sibling is much nearer the query: partial"
    OTHER_VALUE_NAMED = "irrelevant: the query names another value of its key"
    ADDS_NOTHING = "relevant, but no nearer the query than its kind: partial"
    # a whole group looked at more closely (:mod:`engine.operators.retrieve.groups`)
    OUTRANKED = "relevant, but another source's like events are nearer the query: partial"
    SPLITS = "relevant, but its values tell its events apart: partial"
    REVIVED = "irrelevant, but search hits pass the reranker: partial"
    UNCONFIRMED = "relevant, but none of its best events pass the reranker: partial"
    MOSTLY_FAILING = "relevant, but most of a sample of it fails the reranker: partial"

    @property
    def verdict(self) -> Verdict:
        return _VERDICTS.get(self, Verdict.JUDGE)

    @classmethod
    def of_classifier(cls, word: str) -> Label:
        """The label for a word the pattern classifier answers with; ValueError for
        any other (a label of RETRIEVE's own is no answer of the classifier's)."""
        label = _CLASSIFIER_WORDS.get(word)
        if label is None:
            raise ValueError(f"{word!r} is none of {', '.join(map(repr, _CLASSIFIER_WORDS))}")
        return label


_VERDICTS = {Label.RELEVANT: Verdict.KEEP, Label.KIND_NAMED: Verdict.KEEP,
             Label.IRRELEVANT: Verdict.DROP, Label.OTHER_KIND_NAMED: Verdict.DROP,
             Label.OTHER_VALUE_NAMED: Verdict.DROP}
_CLASSIFIER_WORDS = {label.value: label for label in (Label.RELEVANT, Label.IRRELEVANT, Label.PARTIAL)}
